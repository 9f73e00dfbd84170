/* Timing test on the processor: cycles of loops whose instructions share a funct3 with the
   divisions (andi, srli, lbu) and of a division loop; printed for tests/test_firmware.py,
   which bounds them (the packaged Minerva started its divider on all of them). */
#include "soc.h"

static volatile int8_t local[64];

int main(void) {
    uint32_t s = 0;
    uint64_t t = cycles();
    for (int i = 0; i < 512; ++i) s += (uint32_t)local[i & 63] >> 1;
    uint64_t plain = cycles() - t;
    volatile uint32_t n = 1000003, d = 7;
    t = cycles();
    for (int i = 0; i < 16; ++i) s += n / d;
    uint64_t divide = cycles() - t;
    uart_puts("loop ");
    uart_put_udec(plain);
    uart_puts(" divide ");
    uart_put_udec(divide);
    uart_putc('\n');
    return s == 1 ? 1 : 0;
}
