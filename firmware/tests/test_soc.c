/* Unit test on the processor: the SoC's registers, external memory at every access width,
   the bus monitor and the accelerators' identification. Prints PASS and exits 0, or prints
   the failed check and exits with its line number. */
#include "soc.h"

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            uart_puts("FAIL line ");                                                       \
            uart_put_udec(__LINE__);                                                       \
            uart_puts(": " #cond "\n");                                                    \
            return __LINE__;                                                               \
        }                                                                                  \
    } while (0)

int main(void) {
    CHECK(sysctrl_read(SYSCTRL_ID) == SOC_ID);
    CHECK(sysctrl_read(SYSCTRL_ACCELS) == ACCELS);
    CHECK(sysctrl_read(SYSCTRL_DRAM_BYTES) == DRAM_BYTES);
    uint64_t t0 = cycles();
    uint64_t t1 = cycles();
    CHECK(t1 > t0);

    /* external memory: words, halves, bytes; the bus monitor counts them */
    volatile uint32_t *w = dram(0x8000);
    volatile uint16_t *h = dram(0x8000);
    volatile uint8_t *b = dram(0x8000);
    uint64_t read0 = sysctrl_read64(SYSCTRL_BUS_READ);
    uint64_t written0 = sysctrl_read64(SYSCTRL_BUS_WRITTEN);
    w[0] = 0x11223344u;
    w[1] = 0x55667788u;
    b[1] = 0xAA;
    h[3] = 0xBBCC;
    CHECK(w[0] == 0x1122AA44u);
    CHECK(w[1] == 0xBBCC7788u);
    CHECK(b[7] == 0xBB && h[1] == 0x1122);
    uint64_t read1 = sysctrl_read64(SYSCTRL_BUS_READ);
    uint64_t written1 = sysctrl_read64(SYSCTRL_BUS_WRITTEN);
    CHECK(written1 - written0 == 4 + 4 + 1 + 2);
    CHECK(read1 - read0 == 8 * 4);             /* every load is one 8-byte beat */

    /* multiply and divide (RV32M) */
    volatile int32_t x = -123456, y = 789;
    CHECK(x * y == -97406784);
    CHECK(x / y == -156 && x % y == -372);
    volatile int64_t p = (int64_t)x * 100000;
    CHECK(p == -12345600000ll);

    /* the accelerators answer with their identification and datapaths */
    for (unsigned k = 0; k < ACCELS; ++k) {
        CHECK(accel_read(k, ACC_ID) == 0x54455353u);
        CHECK(accel_read(k, ACC_DATAPATHS) == (sysctrl_read(SYSCTRL_DATAPATHS) >> (8 * k) & 0xffu));
    }
    progress(42);
    uart_puts("PASS\n");
    return 0;
}
