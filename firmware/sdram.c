#include "sdram.h"

#if MEMCTRL_BYTES
#include "soc.h"

/* the init sequence's delays, in loop iterations (a few cycles each: longer than needed) */
void cdelay(int i) {
    while (i-- > 0) __asm__ volatile("nop");
}

uint32_t sdram_init(void) {
    /* the sequence runs with the controller's command interface in software control */
    sdram_dfii_control_write(0);
    init_sequence();
    sdram_dfii_control_write(DFII_CONTROL_SEL);
    /* the controller's user port (the SoC's memory port) waits for this */
    ddrctrl_init_done_write(1);
    /* a few words across the memory: a write and a read back of each */
    uint32_t ok = 1;
    for (uint32_t a = 0; a < DRAM_BYTES; a += DRAM_BYTES / 16) {
        volatile uint32_t *word = (volatile uint32_t *)dram(a);
        *word = a ^ 0x5A5AA5A5u;
    }
    for (uint32_t a = 0; a < DRAM_BYTES; a += DRAM_BYTES / 16) {
        if (*(volatile uint32_t *)dram(a) != (a ^ 0x5A5AA5A5u)) ok = 0;
    }
    ddrctrl_init_error_write(!ok);
    return ok;
}
#endif
