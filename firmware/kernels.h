/* Layers the processor runs, with TFLite's integer arithmetic: bit-exact with the golden
   models of hls_ref/ (quant.py, layers.py, softmax.py). Tensors are int8 in the layout of
   docs/formats.md section 1; quantization blocks as in its section 3. */
#ifndef TESSERA_KERNELS_H
#define TESSERA_KERNELS_H

#include <stdint.h>

#include "image_format.h"

/* An int8 HWC tensor: element (h, w, c) at base[h * rs + w * cs + c]. */
typedef struct {
    int8_t *base;
    uint32_t h, w, c, cs, rs;
} tensor_t;

#define INT32_MIN_ (-2147483647 - 1)
#define INT32_MAX_ 2147483647

/* gemmlowp's SaturatingRoundingDoublingHighMul (inline: the layers' inner loops call it). */
static inline int32_t srdhm(int32_t a, int32_t b) {
    if (a == INT32_MIN_ && b == INT32_MIN_) return INT32_MAX_;
    int64_t product = (int64_t)a * b;
    int64_t nudge = product >= 0 ? (1 << 30) : (1 - (1 << 30));
    int64_t total = product + nudge;
    /* C's truncating division, as gemmlowp */
    int64_t quotient = total >= 0 ? total >> 31 : -((-total) >> 31);
    return (int32_t)quotient;
}

/* gemmlowp's RoundingDivideByPOT: x / 2^exponent, ties away from zero (exponent 0..31). */
static inline int32_t rounding_divide_by_pot(int32_t x, int exponent) {
    int32_t mask = (int32_t)((1u << exponent) - 1u);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0);
    return (x >> exponent) + (remainder > threshold);
}

/* TFLite's MultiplyByQuantizedMultiplier. */
static inline int32_t multiply_by_quantized_multiplier(int32_t x, int32_t multiplier, int shift) {
    int left = shift > 0 ? shift : 0;
    int right = shift > 0 ? 0 : -shift;
    /* a left shift wraps in int32, as in TFLite's C++ */
    return rounding_divide_by_pot(srdhm((int32_t)((uint32_t)x << left), multiplier), right);
}
/* round(double(x) * scale), ties away from zero (LiteRT's FullyConnected). */
int32_t scale_by_double(int32_t x, double scale);

/* A quantization block (docs/formats.md section 3); blocks of more than 256 channels are
   stored as consecutive blocks of 256. */
typedef struct {
    const uint8_t *base;
    int32_t zero_point, act_min, act_max;
    int double_mode;
} qblock_t;

qblock_t qblock_open(const void *base);
int32_t qblock_bias(const qblock_t *q, uint32_t channel);
/* The requantized output of accumulator acc of the channel (scaled, offset, clamped). */
int32_t qblock_apply(const qblock_t *q, uint32_t channel, int32_t acc);

/* The processor layers; each takes its parameter block (image_format.h) with bus addresses. */
void conv2d_layer(const ConvParams *p);
void depthwise_layer(const ConvParams *p);
void fc_layer(const FcParams *p);
void add_layer(const AddParams *p);
void avgpool_layer(const PoolParams *p);
void maxpool_layer(const PoolParams *p);
void softmax_layer(const SoftmaxParams *p);
void copy_layer(const CopyParams *p);

#endif
