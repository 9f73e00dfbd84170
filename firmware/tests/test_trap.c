/* Unit test on the processor: a load from an address no window decodes ends with a bus
   error at once (no hang); the trap handler reports it and exits with 0xE000 + mcause. */
#include "soc.h"

int main(void) {
    uart_puts("reading 0x30000000\n");
    volatile uint32_t *nowhere = (volatile uint32_t *)0x30000000u;
    return (int)*nowhere;
}
