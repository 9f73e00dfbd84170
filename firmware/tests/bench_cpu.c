/* Micro-benchmark of the processor: cycles per loop iteration of loads from external memory
   and from the on-chip RAM, and of arithmetic. Prints one line per case. */
#include "kernels.h"
#include "soc.h"

static int8_t local[1024];

#define N 256

static void report(const char *what, uint64_t cycles) {
    uart_puts(what);
    uart_putc(' ');
    uart_put_udec(cycles);
    uart_putc('\n');
}

int main(void) {
    volatile int8_t *far = dram(0x8000);
    volatile int8_t *near = local;
    int32_t sum = 0;
    uint64_t t;
    t = cycles();
    for (int i = 0; i < N; ++i) sum += far[i];
    report("dram_byte_load_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) sum += near[i];
    report("ram_byte_load_loop", cycles() - t);
    t = cycles();
    for (volatile int i = 0; i < N; ++i) {
    }
    report("empty_volatile_loop", cycles() - t);
    volatile int32_t a = 12345, b = 678;
    t = cycles();
    for (int i = 0; i < N; ++i) sum += a * b;
    report("mul_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) sum += (int32_t)(((int64_t)a * b) >> 31);
    report("mul64_loop", cycles() - t);
    t = cycles();
    report("nothing", cycles() - t);
    volatile uint32_t *words = dram(0x10000);
    uint32_t a1 = 0, b2 = 0;
    t = cycles();
    for (int i = 0; i < N; ++i) {
        a1 += words[i];
        b2 += a1;
    }
    report("checksum_loop", cycles() - t);
    sum += (int32_t)(a1 ^ b2);
    int32_t acc[4] = {0};
    int8_t wloc[64];
    for (int i = 0; i < 64; ++i) wloc[i] = (int8_t)i;
    t = cycles();
    for (int i = 0; i < N; ++i) {
        uint32_t xv = words[i], wv = *(uint32_t *)&wloc[(i & 15) * 4];
        acc[0] += (int8_t)xv * (int8_t)wv;
        acc[1] += (int8_t)(xv >> 8) * (int8_t)(wv >> 8);
        acc[2] += (int8_t)(xv >> 16) * (int8_t)(wv >> 16);
        acc[3] += (int8_t)(xv >> 24) * (int8_t)(wv >> 24);
    }
    report("mac4_loop", cycles() - t);
    uint32_t r0 = 1, r1 = 2, r2 = 3, r3 = 5;
    t = cycles();
    for (int i = 0; i < N; ++i) {
        r0 = r0 * r1 + 1;
        r1 = r1 * r2 + 3;
        r2 = r2 * r3 + 5;
        r3 = r3 * r0 + 7;
    }
    report("mul4_registers_loop", cycles() - t);
    sum += (int32_t)(r0 + r1 + r2 + r3);
    t = cycles();
    uint32_t s4 = 0;
    for (int i = 0; i < N; ++i) {
        s4 += (uint32_t)wloc[i & 63] + (uint32_t)wloc[(i + 1) & 63] + (uint32_t)wloc[(i + 2) & 63]
              + (uint32_t)wloc[(i + 3) & 63];
    }
    report("ram_lbu4_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) {
        s4 += (uint32_t)local[i & 63] + (uint32_t)local[(i + 1) & 63] + (uint32_t)local[(i + 2) & 63]
              + (uint32_t)local[(i + 3) & 63];
    }
    report("bss_lbu4_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) s4 += (uint32_t)wloc[i & 63];
    report("stack_lbu1_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) {
        uint32_t xv = words[i];
        s4 += (xv >> 3) ^ (xv << 5) ^ (xv >> 11) ^ (xv << 13);
    }
    report("dram_lw_alu_loop", cycles() - t);
    volatile int32_t mult = 1234567890, sh = -7;
    t = cycles();
    for (int i = 0; i < N; ++i) s4 += (uint32_t)multiply_by_quantized_multiplier(i * 1000, mult, sh);
    report("mbqm_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) s4 += (uint32_t)srdhm(i * 1000, mult);
    report("srdhm_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) s4 += sysctrl_read(SYSCTRL_BUS_READ);
    report("sysctrl_read_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) progress(i);
    report("sysctrl_write_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) s4 += accel_read(0, ACC_TILES);
    report("accel_read_loop", cycles() - t);
    t = cycles();
    for (int i = 0; i < N; ++i) s4 += (uint32_t)cycles();
    report("cycles_read_loop", cycles() - t);
    sum += (int32_t)s4;
    sum += acc[0] + acc[1] + acc[2] + acc[3];
    return sum == 12345 ? 1 : 0;
}
