/* Unit test on the processor: the firmware's TFLite arithmetic (kernels.c) against vectors
   from the golden models (hls_ref.quant, hls_ref.softmax), generated into vectors.h by
   tests/test_firmware.py. Prints PASS and exits 0, or prints the first mismatch and exits
   with a code naming the function. */
#include "kernels.h"
#include "soc.h"
#include "vectors.h"

static int fail(const char *what, uint32_t index, int32_t got, int32_t want) {
    uart_puts("FAIL ");
    uart_puts(what);
    uart_puts(" case ");
    uart_put_udec(index);
    uart_puts(": got ");
    uart_put_dec(got);
    uart_puts(", expected ");
    uart_put_dec(want);
    uart_putc('\n');
    return 1;
}

int main(void) {
    for (uint32_t i = 0; i < SRDHM_CASES; ++i) {
        int32_t got = srdhm(srdhm_cases[i][0], srdhm_cases[i][1]);
        if (got != srdhm_cases[i][2]) return 0x10 + fail("srdhm", i, got, srdhm_cases[i][2]);
    }
    for (uint32_t i = 0; i < RDIVPOT_CASES; ++i) {
        int32_t got = rounding_divide_by_pot(rdivpot_cases[i][0], rdivpot_cases[i][1]);
        if (got != rdivpot_cases[i][2])
            return 0x20 + fail("rounding_divide_by_pot", i, got, rdivpot_cases[i][2]);
    }
    for (uint32_t i = 0; i < MBQM_CASES; ++i) {
        int32_t got = multiply_by_quantized_multiplier(mbqm_cases[i][0], mbqm_cases[i][1],
                                                       mbqm_cases[i][2]);
        if (got != mbqm_cases[i][3])
            return 0x30 + fail("multiply_by_quantized_multiplier", i, got, mbqm_cases[i][3]);
    }
    for (uint32_t i = 0; i < DOUBLE_CASES; ++i) {
        union {
            uint64_t bits;
            double value;
        } scale = {(uint64_t)double_cases[i].scale_hi << 32 | double_cases[i].scale_lo};
        int32_t got = scale_by_double(double_cases[i].x, scale.value);
        if (got != double_cases[i].want)
            return 0x40 + fail("scale_by_double", i, got, double_cases[i].want);
    }
    /* softmax rows through the layer kernel, in external memory: the exponentials computed,
       then looked up in the table (hls_ref.softmax.exp_table) */
    int8_t *in = dram(SOFTMAX_IN), *out = dram(SOFTMAX_OUT);
    int32_t *table = dram(SOFTMAX_TABLE);
    for (uint32_t k = 0; k < 256; ++k) table[k] = softmax_table[0][k];
    for (uint32_t r = 0; r < SOFTMAX_ROWS; ++r)
        for (uint32_t c = 0; c < SOFTMAX_WIDTH; ++c) in[r * SOFTMAX_STRIDE + c] = softmax_in[r][c];
    for (uint32_t use_table = 0; use_table < 2; ++use_table) {
        SoftmaxParams p = {SOFTMAX_IN, 1, SOFTMAX_ROWS, SOFTMAX_WIDTH, SOFTMAX_STRIDE,
                           SOFTMAX_STRIDE, SOFTMAX_OUT, 1, SOFTMAX_ROWS, SOFTMAX_WIDTH,
                           SOFTMAX_STRIDE, SOFTMAX_STRIDE, SOFTMAX_MULTIPLIER, SOFTMAX_LEFT_SHIFT,
                           SOFTMAX_DIFF_MIN, 8, use_table ? SOFTMAX_TABLE : 0u, 0};
        for (uint32_t r = 0; r < SOFTMAX_ROWS; ++r)
            for (uint32_t c = 0; c < SOFTMAX_WIDTH; ++c) out[r * SOFTMAX_STRIDE + c] = 0x55;
        softmax_layer(&p);
        for (uint32_t r = 0; r < SOFTMAX_ROWS; ++r)
            for (uint32_t c = 0; c < SOFTMAX_WIDTH; ++c)
                if (out[r * SOFTMAX_STRIDE + c] != softmax_want[r][c])
                    return 0x50 + 0x10 * use_table
                           + fail("softmax", r * SOFTMAX_WIDTH + c, out[r * SOFTMAX_STRIDE + c],
                                  softmax_want[r][c]);
    }
    uart_puts("PASS\n");
    return 0;
}
