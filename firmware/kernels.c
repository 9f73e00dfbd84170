/* The processor's layers (see kernels.h). Each mirrors a golden model of hls_ref/ line by
   line where rounding matters; the loops read the operands straight from external memory,
   a 32-bit word at a time where four channels are contiguous and word-aligned. */
#include "kernels.h"

#include "soc.h"


/* ---- requantization arithmetic (hls_ref/quant.py) ---- */

/* round(double(x) * scale) with integer operations only (hls_ref.quant.
   scale_by_double_integer): the exact product of |x| and the scale's 53-bit significand,
   rounded to 53 significant bits (ties to even: the IEEE product), then to an integer (ties
   away from zero). For a positive normal scale; about 15 times faster than soft float. */
int32_t scale_by_double(int32_t x, double scale) {
    union {
        double value;
        uint64_t bits;
    } u = {scale};
    uint64_t significand = (u.bits & ((1ull << 52) - 1)) | (1ull << 52);
    int exponent = (int)(u.bits >> 52 & 0x7FF) - 1075;
    uint32_t magnitude_x = x < 0 ? (uint32_t)(-(int64_t)x) : (uint32_t)x;
    /* the product in 96 bits: hi:lo */
    uint64_t p0 = (uint64_t)magnitude_x * (uint32_t)significand;
    uint64_t p1 = (uint64_t)magnitude_x * (uint32_t)(significand >> 32);
    uint64_t lo = p0 + (p1 << 32);
    uint32_t hi = (uint32_t)(p1 >> 32) + (lo < p0);
    int bits = hi ? 96 - __builtin_clz(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
    uint64_t kept = lo;
    if (bits > 53) {
        int drop = bits - 53;                       /* 1 to 31 */
        kept = lo >> drop | (uint64_t)hi << (64 - drop);
        uint64_t rest = lo & ((1ull << drop) - 1), half = 1ull << (drop - 1);
        kept += rest > half || (rest == half && (kept & 1));
        exponent += drop;
    }
    int64_t magnitude;
    if (exponent >= 0) {
        /* an integer part of 2^31 or more saturates (the output clamp is far below) */
        magnitude = exponent > 30 || kept > ((uint64_t)INT32_MAX_ >> exponent)
                        ? INT32_MAX_ : (int64_t)(kept << exponent);
    } else {
        int fraction_bits = -exponent;
        uint64_t whole = fraction_bits >= 64 ? 0 : kept >> fraction_bits;
        uint64_t first_dropped = fraction_bits > 64 ? 0 : kept >> (fraction_bits - 1) & 1;
        magnitude = (int64_t)(whole + first_dropped);
    }
    if (magnitude > INT32_MAX_) magnitude = INT32_MAX_;
    return (int32_t)(x < 0 ? -magnitude : magnitude);
}

static inline int32_t clamp(int32_t x, int32_t lo, int32_t hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

/* ---- quantization blocks (docs/formats.md section 3) ---- */

#define QBLOCK_CHANNELS 256
#define QBLOCK_BYTES (8 * (1 + 2 * QBLOCK_CHANNELS))

qblock_t qblock_open(const void *base) {
    const uint8_t *b = base;
    uint32_t lo = *(const volatile uint32_t *)b;
    uint32_t hi = *(const volatile uint32_t *)(b + 4);
    qblock_t q = {b, (int16_t)(lo & 0xFFFF), (int16_t)(lo >> 16), (int16_t)(hi & 0xFFFF),
                  (int)(hi >> 16 & 1)};
    return q;
}

static inline const uint8_t *qblock_channel(const qblock_t *q, uint32_t channel) {
    return q->base + (channel / QBLOCK_CHANNELS) * QBLOCK_BYTES
           + 8 + 16 * (channel % QBLOCK_CHANNELS);
}

int32_t qblock_bias(const qblock_t *q, uint32_t channel) {
    return *(const int32_t *)qblock_channel(q, channel);
}

int32_t qblock_apply(const qblock_t *q, uint32_t channel, int32_t acc) {
    const uint8_t *entry = qblock_channel(q, channel);
    int32_t scaled;
    if (q->double_mode) {
        scaled = scale_by_double(acc, *(const double *)(entry + 8));
    } else {
        int32_t multiplier = *(const int32_t *)(entry + 4);
        int shift = *(const int8_t *)(entry + 8);
        scaled = multiply_by_quantized_multiplier(acc, multiplier, shift);
    }
    int64_t v = (int64_t)scaled + q->zero_point;     /* cannot wrap */
    return v < q->act_min ? q->act_min : v > q->act_max ? q->act_max : (int32_t)v;
}

/* ---- tensors ---- */

#define TENSOR(p, prefix)                                                                  \
    ((tensor_t){(int8_t *)dram((p)->prefix##_addr), (p)->prefix##_h, (p)->prefix##_w,       \
                (p)->prefix##_c, (p)->prefix##_cs, (p)->prefix##_rs})

static inline int8_t *at(const tensor_t *t, uint32_t h, uint32_t w) {
    return t->base + h * t->rs + w * t->cs;
}

/* Four int8 values of a word, sign-extended. */
#define B0(v) ((int32_t)((int8_t)(v)))
#define B1(v) ((int32_t)((int8_t)((v) >> 8)))
#define B2(v) ((int32_t)((int8_t)((v) >> 16)))
#define B3(v) ((int32_t)((int8_t)((v) >> 24)))

/* ---- per-channel requantization parameters, read once per layer ---- */


/* one channel's parameters together: a cache line serves two channels */
typedef struct {
    int32_t bias, multiplier, shift, reserved;
} channel_params_t;

static channel_params_t channel_params[MAX_CHANNELS];

/* The bias, multiplier and shift of the first `channels` channels of a fixed-point block. */
static const channel_params_t *load_channel_params(const qblock_t *q, uint32_t channels) {
    for (uint32_t c = 0; c < channels; ++c) {
        const int32_t *entry = (const int32_t *)qblock_channel(q, c);
        channel_params[c].bias = entry[0];
        channel_params[c].multiplier = entry[1];
        channel_params[c].shift = (int8_t)entry[2];
    }
    return channel_params;
}

static inline int32_t requant(const qblock_t *q, const channel_params_t *cp, uint32_t c,
                              int32_t acc) {
    int32_t v = multiply_by_quantized_multiplier(acc, cp[c].multiplier, cp[c].shift);
    return clamp(v + q->zero_point, q->act_min, q->act_max);
}

static inline uint32_t pack4(int32_t a, int32_t b, int32_t c, int32_t d) {
    return (uint32_t)(uint8_t)a | (uint32_t)(uint8_t)b << 8 | (uint32_t)(uint8_t)c << 16
           | (uint32_t)(uint8_t)d << 24;
}

/* ---- depthwise convolution (hls_ref.layers.depthwise_conv2d, depth multiplier 1) ----
   acc[c] = sum over the window of x_raw * w + folded bias (padded positions hold the input
   zero point), as the accelerators compute it (docs/formats.md section 5). */


/* scratch space on chip, used by one layer at a time */
static union {
    int8_t w_local[MAX_CHANNELS * 9];
    int32_t pool_acc[MAX_CHANNELS];
    int8_t fc_x[FC_MAX_INPUTS];
    int32_t exps[SOFTMAX_MAX];
} scratch __attribute__((aligned(4)));
#define w_local scratch.w_local

/* a border pixel's padded window */
static int8_t dw_padded[MAX_CHANNELS * 9] __attribute__((aligned(4)));

/* One output pixel whose window lies inside the input: four channels per word, their sums
   in registers (a function of its own, so that its loop keeps its values in registers). */
static __attribute__((noinline)) void dw_window(const int8_t *x0, uint32_t cs, uint32_t rs,
                                                const int8_t *wt, uint32_t channels,
                                                uint32_t kh, uint32_t kw, const qblock_t *q,
                                                const channel_params_t *cp, int8_t *y) {
    for (uint32_t c = 0; c < channels; c += 4) {
        int32_t a0 = cp[c].bias, a1 = cp[c + 1].bias, a2 = cp[c + 2].bias, a3 = cp[c + 3].bias;
        const int8_t *w = wt + c;
        const int8_t *row = x0 + c;
        for (uint32_t i = 0; i < kh; ++i, row += rs) {
            const int8_t *x = row;
            for (uint32_t j = 0; j < kw; ++j, x += cs, w += channels) {
                uint32_t xv = *(const uint32_t *)x, wv = *(const uint32_t *)w;
                a0 += B0(xv) * B0(wv);
                a1 += B1(xv) * B1(wv);
                a2 += B2(xv) * B2(wv);
                a3 += B3(xv) * B3(wv);
            }
        }
        *(uint32_t *)(y + c) = pack4(requant(q, cp, c, a0), requant(q, cp, c + 1, a1),
                                     requant(q, cp, c + 2, a2), requant(q, cp, c + 3, a3));
    }
}

void depthwise_layer(const ConvParams *params) {
    /* an on-chip copy: the loops would read the fields from external memory again and
       again (byte stores may alias them) */
    const ConvParams copy = *params, *p = &copy;
    tensor_t in = TENSOR(p, in), out = TENSOR(p, out);
    const int8_t *weights = dram(p->weights);
    qblock_t q = qblock_open(dram(p->qblock));
    uint32_t channels = out.c, taps = p->kernel_h * p->kernel_w;
    const channel_params_t *cp = load_channel_params(&q, channels);
    /* the weights are read for every output pixel: keep them on chip when they fit */
    const int8_t *wt = weights;
    if (taps * channels <= sizeof w_local) {
        for (uint32_t i = 0; i < taps * channels; i += 4)
            *(uint32_t *)&w_local[i] = *(const uint32_t *)&weights[i];
        wt = w_local;
    }
    int32_t pad = p->pad_value;
    int words = channels % 4 == 0 && in.cs % 4 == 0 && in.rs % 4 == 0 && out.cs % 4 == 0;
    for (uint32_t oh = 0; oh < out.h; ++oh) {
        int32_t ih0 = (int32_t)(oh * p->stride_h) - (int32_t)p->pad_top;
        for (uint32_t ow = 0; ow < out.w; ++ow) {
            int32_t iw0 = (int32_t)(ow * p->stride_w) - (int32_t)p->pad_left;
            int8_t *y = at(&out, oh, ow);
            int interior = ih0 >= 0 && iw0 >= 0 && ih0 + (int32_t)p->kernel_h <= (int32_t)in.h
                           && iw0 + (int32_t)p->kernel_w <= (int32_t)in.w;
            if (words && interior) {
                dw_window(at(&in, (uint32_t)ih0, (uint32_t)iw0), in.cs, in.rs, wt, channels,
                          p->kernel_h, p->kernel_w, &q, cp, y);
                continue;
            }
            if (words && p->kernel_h * p->kernel_w * channels <= sizeof dw_padded) {
                /* at a border: the window with its padding (the input zero point), on chip */
                uint32_t pad4 = (uint32_t)(uint8_t)pad * 0x01010101u;
                uint32_t *dst = (uint32_t *)dw_padded;
                for (uint32_t i = 0; i < p->kernel_h; ++i) {
                    int32_t ih = ih0 + (int32_t)i;
                    for (uint32_t j = 0; j < p->kernel_w; ++j) {
                        int32_t iw = iw0 + (int32_t)j;
                        int inside = ih >= 0 && iw >= 0 && ih < (int32_t)in.h && iw < (int32_t)in.w;
                        const uint32_t *src = inside ? (const uint32_t *)at(&in, ih, iw) : 0;
                        for (uint32_t c = 0; c < channels / 4; ++c) *dst++ = src ? src[c] : pad4;
                    }
                }
                dw_window(dw_padded, channels, p->kernel_w * channels, wt, channels, p->kernel_h,
                          p->kernel_w, &q, cp, y);
                continue;
            }
            /* one channel at a time (channel counts that are not a multiple of four) */
            for (uint32_t c = 0; c < channels; ++c) {
                int32_t acc = cp[c].bias;
                for (uint32_t i = 0; i < p->kernel_h; ++i) {
                    int32_t ih = ih0 + (int32_t)i;
                    for (uint32_t j = 0; j < p->kernel_w; ++j) {
                        int32_t iw = iw0 + (int32_t)j;
                        int inside = ih >= 0 && iw >= 0 && ih < (int32_t)in.h && iw < (int32_t)in.w;
                        acc += (inside ? at(&in, ih, iw)[c] : pad) * wt[(i * p->kernel_w + j) * channels + c];
                    }
                }
                y[c] = (int8_t)requant(&q, cp, c, acc);
            }
        }
    }
}

/* ---- 2D convolution (hls_ref.layers.conv2d): for processor-only builds ---- */

void conv2d_layer(const ConvParams *params) {
    /* an on-chip copy: the loops would read the fields from external memory again and
       again (byte stores may alias them) */
    const ConvParams copy = *params, *p = &copy;
    tensor_t in = TENSOR(p, in), out = TENSOR(p, out);
    const int8_t *weights = dram(p->weights);
    qblock_t q = qblock_open(dram(p->qblock));
    uint32_t cin = in.c, taps = p->kernel_h * p->kernel_w;
    int words = cin % 4 == 0 && in.cs % 4 == 0 && in.rs % 4 == 0;
    int32_t pad = p->pad_value;
    for (uint32_t oh = 0; oh < out.h; ++oh)
        for (uint32_t ow = 0; ow < out.w; ++ow) {
            int8_t *y = at(&out, oh, ow);
            for (uint32_t o = 0; o < out.c; ++o) {
                int32_t acc = qblock_bias(&q, o);
                const int8_t *wo = weights + o * taps * cin;
                for (uint32_t i = 0; i < p->kernel_h; ++i) {
                    int32_t ih = (int32_t)(oh * p->stride_h + i) - (int32_t)p->pad_top;
                    for (uint32_t j = 0; j < p->kernel_w; ++j) {
                        int32_t iw = (int32_t)(ow * p->stride_w + j) - (int32_t)p->pad_left;
                        const int8_t *w = wo + (i * p->kernel_w + j) * cin;
                        if (ih < 0 || iw < 0 || ih >= (int32_t)in.h || iw >= (int32_t)in.w) {
                            for (uint32_t c = 0; c < cin; ++c) acc += pad * w[c];
                        } else if (words) {
                            const uint32_t *x4 = (const uint32_t *)at(&in, ih, iw);
                            const uint32_t *w4 = (const uint32_t *)w;
                            for (uint32_t c = 0; c < cin / 4; ++c) {
                                uint32_t xv = x4[c], wv = w4[c];
                                acc += B0(xv) * B0(wv) + B1(xv) * B1(wv) + B2(xv) * B2(wv)
                                       + B3(xv) * B3(wv);
                            }
                        } else {
                            const int8_t *x = at(&in, ih, iw);
                            for (uint32_t c = 0; c < cin; ++c) acc += x[c] * w[c];
                        }
                    }
                }
                y[o] = (int8_t)qblock_apply(&q, o, acc);
            }
        }
}

/* ---- fully connected (hls_ref.layers.fully_connected), one row ---- */

void fc_layer(const FcParams *params) {
    /* an on-chip copy: the loops would read the fields from external memory again and
       again (byte stores may alias them) */
    const FcParams copy = *params, *p = &copy;
    tensor_t in = TENSOR(p, in), out = TENSOR(p, out);
    qblock_t q = qblock_open(dram(p->qblock));
    int8_t *x = scratch.fc_x;
    uint32_t n = p->in_features;
    /* the input in logical (h, w, c) order, on chip: every output neuron reads all of it */
    uint32_t k = 0;
    for (uint32_t h = 0; h < in.h; ++h)
        for (uint32_t w = 0; w < in.w; ++w) {
            const int8_t *px = at(&in, h, w);
            for (uint32_t c = 0; c < in.c; ++c) x[k++] = px[c];
        }
    for (; k % 4; ++k) x[k] = 0;
    const uint32_t *x4 = (const uint32_t *)x;
    for (uint32_t o = 0; o < p->out_features; ++o) {
        const uint32_t *w4 = (const uint32_t *)dram(p->weights + o * p->in_stride);
        int32_t acc = qblock_bias(&q, o);
        for (uint32_t i = 0; i < (n + 3) / 4; ++i) {
            uint32_t xv = x4[i], wv = w4[i];   /* weights beyond n are zero */
            acc += B0(xv) * B0(wv) + B1(xv) * B1(wv) + B2(xv) * B2(wv) + B3(xv) * B3(wv);
        }
        uint32_t oh = o / (out.w * out.c), rest = o % (out.w * out.c);
        at(&out, oh, rest / out.c)[rest % out.c] = (int8_t)qblock_apply(&q, o, acc);
    }
}

/* ---- add (hls_ref.layers.add) ----
   Each input's rescaled value depends on its int8 value only: 256-entry tables, computed
   once per layer with the same arithmetic, leave one multiplication per element. */

static int32_t add_table_a[256], add_table_b[256];

static void add_table(int32_t *table, int32_t zero_point, int left_shift, int32_t multiplier,
                      int32_t shift) {
    for (int32_t x = -128; x < 128; ++x)
        table[x + 128] =
            multiply_by_quantized_multiplier((x - zero_point) << left_shift, multiplier, shift);
}

static inline int32_t add_one(const AddParams *p, int32_t a, int32_t b) {
    int32_t total = add_table_a[a + 128] + add_table_b[b + 128];
    int32_t v = multiply_by_quantized_multiplier(total, p->out_multiplier, p->out_shift)
                + p->out_zero_point;
    return clamp(v, p->act_min, p->act_max);
}

void add_layer(const AddParams *params) {
    /* an on-chip copy: the loops would read the fields from external memory again and
       again (byte stores may alias them) */
    const AddParams copy = *params, *p = &copy;
    tensor_t a = TENSOR(p, a), b = TENSOR(p, b), out = TENSOR(p, out);
    int ls = (int)p->left_shift;
    add_table(add_table_a, p->a_zero_point, ls, p->a_multiplier, p->a_shift);
    add_table(add_table_b, p->b_zero_point, ls, p->b_multiplier, p->b_shift);
    int words = out.c % 4 == 0 && a.cs % 4 == 0 && b.cs % 4 == 0 && out.cs % 4 == 0
                && a.rs % 4 == 0 && b.rs % 4 == 0 && out.rs % 4 == 0;
    for (uint32_t h = 0; h < out.h; ++h)
        for (uint32_t w = 0; w < out.w; ++w) {
            const int8_t *xa = at(&a, h, w), *xb = at(&b, h, w);
            int8_t *y = at(&out, h, w);
            if (words) {
                for (uint32_t c = 0; c < out.c; c += 4) {
                    uint32_t va = *(const uint32_t *)(xa + c), vb = *(const uint32_t *)(xb + c);
                    *(uint32_t *)(y + c) = pack4(add_one(p, B0(va), B0(vb)), add_one(p, B1(va), B1(vb)),
                                                 add_one(p, B2(va), B2(vb)), add_one(p, B3(va), B3(vb)));
                }
            } else {
                for (uint32_t c = 0; c < out.c; ++c) y[c] = (int8_t)add_one(p, xa[c], xb[c]);
            }
        }
}

/* ---- pooling (hls_ref.layers.avg_pool2d, max_pool2d) ----
   For each output pixel the window's pixels are read in order, each one's channels a word at
   a time where they are word-aligned, into per-channel sums (or maxima) on chip. */

#define pool_acc scratch.pool_acc

static void pool(const PoolParams *params, int average) {
    const PoolParams copy = *params, *p = &copy;   /* on chip, as in the other layers */
    tensor_t in = TENSOR(p, in), out = TENSOR(p, out);
    uint32_t channels = out.c;
    int words = channels % 4 == 0 && in.cs % 4 == 0 && in.rs % 4 == 0;
    for (uint32_t oh = 0; oh < out.h; ++oh)
        for (uint32_t ow = 0; ow < out.w; ++ow) {
            int32_t h0 = (int32_t)(oh * p->stride_h) - (int32_t)p->pad_top;
            int32_t w0 = (int32_t)(ow * p->stride_w) - (int32_t)p->pad_left;
            int32_t count = 0;
            for (uint32_t c = 0; c < channels; ++c) pool_acc[c] = average ? 0 : -128;
            for (int32_t i = h0; i < h0 + (int32_t)p->filter_h; ++i)
                for (int32_t j = w0; j < w0 + (int32_t)p->filter_w; ++j) {
                    if (i < 0 || j < 0 || i >= (int32_t)in.h || j >= (int32_t)in.w) continue;
                    const int8_t *x = at(&in, i, j);
                    ++count;
                    for (uint32_t c = 0; c < channels; c += words ? 4 : 1) {
                        int32_t v[4];
                        int n = words ? 4 : 1;
                        if (words) {
                            uint32_t xv = *(const uint32_t *)(x + c);
                            v[0] = B0(xv), v[1] = B1(xv), v[2] = B2(xv), v[3] = B3(xv);
                        } else {
                            v[0] = x[c];
                        }
                        for (int k = 0; k < n; ++k) {
                            if (average) pool_acc[c + k] += v[k];
                            else if (v[k] > pool_acc[c + k]) pool_acc[c + k] = v[k];
                        }
                    }
                }
            int8_t *y = at(&out, oh, ow);
            int32_t half = count / 2;
            for (uint32_t c = 0; c < channels; ++c) {
                int32_t total = pool_acc[c], v = total;
                if (average)  /* ties away from zero, with C's division */
                    v = total > 0 ? (total + half) / count : (total - half) / count;
                y[c] = (int8_t)clamp(v, p->act_min, p->act_max);
            }
        }
}

void avgpool_layer(const PoolParams *p) { pool(p, 1); }
void maxpool_layer(const PoolParams *p) { pool(p, 0); }

/* ---- softmax (hls_ref/softmax.py: gemmlowp fixed point) ---- */

#define SCALED_DIFF_INTEGER_BITS 5
#define ACCUMULATION_INTEGER_BITS 12

static int32_t saturating_shift_left(int32_t x, int exponent) {
    int32_t threshold = (int32_t)((1u << (31 - exponent)) - 1u);
    if (x > threshold) return INT32_MAX_;
    if (x < -threshold) return INT32_MIN_;
    return (int32_t)((uint32_t)x << exponent);
}

static int32_t exp_quarter_interval(int32_t a) {
    const int32_t constant_term = 1895147668, one_third = 715827883;
    int32_t x = a + (1 << 28);
    int32_t x2 = srdhm(x, x), x3 = srdhm(x2, x), x4 = srdhm(x2, x2);
    int32_t x4_over_4 = rounding_divide_by_pot(x4, 2);
    int32_t poly = rounding_divide_by_pot(srdhm(x4_over_4 + x3, one_third) + x2, 1);
    return constant_term + srdhm(constant_term, x + poly);
}

static int32_t exp_on_negative_values(int32_t a) {
    static const int32_t barrel[7][2] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084},
                                         {1, 290630308},   {2, 39332535},    {3, 720401},
                                         {4, 242}};
    const int fraction_bits = 31 - SCALED_DIFF_INTEGER_BITS;
    const int32_t quarter = 1 << (fraction_bits - 2);
    int32_t mod_quarter_minus_quarter = (a & (quarter - 1)) - quarter;
    int32_t result = exp_quarter_interval(
        saturating_shift_left(mod_quarter_minus_quarter, SCALED_DIFF_INTEGER_BITS));
    int32_t remainder = mod_quarter_minus_quarter - a;
    for (int k = 0; k < 7; ++k)
        if ((remainder >> (fraction_bits + barrel[k][0])) & 1) result = srdhm(result, barrel[k][1]);
    return a == 0 ? INT32_MAX_ : result;
}

static int32_t one_over_one_plus_x(int32_t a) {
    int64_t total = (int64_t)a + INT32_MAX_;
    int32_t half_denominator = (int32_t)(total >= 0 ? (total + 1) >> 1 : -((-(total - 1)) >> 1));
    int32_t x = 1515870810 + srdhm(half_denominator, -1010580540);
    for (int i = 0; i < 3; ++i) {
        int32_t one_minus = (1 << 29) - srdhm(half_denominator, x);
        x = x + saturating_shift_left(srdhm(x, one_minus), 2);
    }
    return saturating_shift_left(x >> 1, 2);
}

static int8_t softmax_row[SOFTMAX_MAX];

void softmax_layer(const SoftmaxParams *params) {
    /* an on-chip copy: the loops would read the fields from external memory again and
       again (byte stores may alias them) */
    const SoftmaxParams copy = *params, *p = &copy;
    tensor_t in = TENSOR(p, in), out = TENSOR(p, out);
    int32_t *exps = scratch.exps;
    /* exp_table: the exponential of a difference -k from the row maximum at entry k */
    const volatile int32_t *table = p->exp_table ? dram(p->exp_table) : 0;
    int32_t qmin = -(1 << (p->out_bits - 1)), qmax = (1 << (p->out_bits - 1)) - 1;
    for (uint32_t h = 0; h < in.h; ++h)
        for (uint32_t w = 0; w < in.w; ++w) {
            const int8_t *far = at(&in, h, w);
            int8_t *y = at(&out, h, w);
            /* the row on chip: one read of each input from external memory */
            int8_t *x = softmax_row;
            int32_t max = -128;
            for (uint32_t c = 0; c < in.c; ++c) {
                x[c] = far[c];
                if (x[c] > max) max = x[c];
            }
            int32_t total = 0;
            for (uint32_t c = 0; c < in.c; ++c) {
                int32_t diff = x[c] - max;
                if (diff >= p->diff_min) {
                    if (table) {
                        exps[c] = table[-diff];
                    } else {
                        int32_t scaled =
                            srdhm((int32_t)((uint32_t)diff << p->left_shift), p->multiplier);
                        exps[c] = exp_on_negative_values(scaled);
                    }
                    total += rounding_divide_by_pot(exps[c], ACCUMULATION_INTEGER_BITS);
                }
            }
            /* reciprocal of the Q12 sum (hls_ref.softmax.reciprocal) */
            int headroom_plus_one = __builtin_clz((uint32_t)total);
            int bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom_plus_one;
            int32_t shifted_minus_one =
                (int32_t)(((uint32_t)total << headroom_plus_one) - (1u << 31));
            int32_t scale = one_over_one_plus_x(shifted_minus_one);
            for (uint32_t c = 0; c < in.c; ++c) {
                int32_t diff = x[c] - max;
                int32_t v = qmin;
                if (diff >= p->diff_min) {
                    int exponent = bits_over_unit + 31 - (int)p->out_bits;
                    /* a non-negative value below 2^31 divided by 2^32 or more rounds to 0 */
                    int32_t unsat =
                        exponent > 31 ? 0 : rounding_divide_by_pot(srdhm(scale, exps[c]), exponent);
                    v = clamp(unsat + qmin, qmin, qmax);
                }
                y[c] = (int8_t)v;
            }
        }
}

/* ---- copy: the same elements in another layout (a reshape) ---- */

void copy_layer(const CopyParams *params) {
    /* an on-chip copy: the loops would read the fields from external memory again and
       again (byte stores may alias them) */
    const CopyParams copy = *params, *p = &copy;
    tensor_t in = TENSOR(p, in), out = TENSOR(p, out);
    uint32_t n = in.h * in.w * in.c;
    for (uint32_t k = 0; k < n; ++k) {
        uint32_t ih = k / (in.w * in.c), ir = k % (in.w * in.c);
        uint32_t oh = k / (out.w * out.c), orr = k % (out.w * out.c);
        at(&out, oh, orr / out.c)[orr % out.c] = at(&in, ih, ir / in.c)[ir % in.c];
    }
}
