"""Quantized softmax with TFLite's reference-kernel arithmetic (gemmlowp fixed point).

The host runs softmax (it is one small vector per inference), so this model defines the host
code's arithmetic. Fixed-point values are int32 raw words with a stated number of integer bits:
``Q(i)`` means ``raw / 2**(31 - i)``. Input differences from the row maximum are rescaled to
``Q5``, exponentiated to ``Q0`` (:func:`exp_on_negative_values`), summed in ``Q12``, and the
sum's reciprocal (Newton-Raphson, :func:`reciprocal`) scales each exponential to the output's
``1/256`` steps.
"""

import math
from dataclasses import dataclass

import numpy as np

from .quant import (
    INT32_MAX,
    INT32_MIN,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
)

__all__ = ["EXP_TABLE_ENTRIES", "SoftmaxParams", "exp_on_negative_values", "exp_table",
           "reciprocal", "softmax", "softmax_params"]

SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12


def _mul(a, b):
    """Fixed-point product: Q(i) x Q(j) -> Q(i+j)."""
    return saturating_rounding_doubling_high_mul(a, b)


def _saturating_shift_left(x, exponent):
    """gemmlowp's ``SaturatingRoundingMultiplyByPOT`` for a positive exponent."""
    threshold = (1 << (31 - exponent)) - 1
    shifted = np.asarray(x, np.int64) << exponent
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))


def _exp_quarter_interval(a):
    """exp(a) for Q0 ``a`` in [-1/4, 0): a 4th-order Taylor series around -1/8, result Q0."""
    constant_term = 1895147668            # exp(-1/8) in Q0
    one_third = 715827883                  # 1/3 in Q0
    x = a + (1 << 28)                      # a + 1/8
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(_mul(x4_over_4 + x3, one_third) + x2, 1)
    return constant_term + _mul(constant_term, x + poly)


# exp(-2**k) in Q0 for the bits of the input above the quarter, k = -2 .. 4.
_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
           (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a):
    """exp(a) for Q5 raw values ``a <= 0``; the result is Q0 (``exp(0)`` saturates to 1)."""
    a = np.asarray(a, np.int64)
    fraction_bits = 31 - SCALED_DIFF_INTEGER_BITS
    quarter = 1 << (fraction_bits - 2)
    mod_quarter_minus_quarter = (a & (quarter - 1)) - quarter
    result = _exp_quarter_interval(_saturating_shift_left(mod_quarter_minus_quarter,
                                                          SCALED_DIFF_INTEGER_BITS))
    remainder = mod_quarter_minus_quarter - a
    for exponent, multiplier in _BARREL:
        bit = (remainder >> (fraction_bits + exponent)) & 1
        result = np.where(bit != 0, _mul(result, multiplier), result)
    return np.where(a == 0, INT32_MAX, result)


def _one_over_one_plus_x(a):
    """1 / (1 + a) for Q0 ``a`` in [0, 1), returned as Q0 of half the value's reciprocal x2."""
    total = a + INT32_MAX
    # gemmlowp's RoundingHalfSum: (sum + sign) / 2, truncating toward zero.
    half_denominator = np.where(total >= 0, (total + 1) >> 1, -((-(total - 1)) >> 1))
    x = 1515870810 + _mul(half_denominator, -1010580540)       # 48/17 - 32/17 * d, Q2
    for _ in range(3):
        one_minus = (1 << 29) - _mul(half_denominator, x)         # Q2
        x = x + _saturating_shift_left(_mul(x, one_minus), 2)    # Q4 -> Q2
    return _saturating_shift_left(x >> 1, 2)                     # x / 2, Q2 -> Q0


def reciprocal(x, integer_bits):
    """Reciprocal of a positive Q(integer_bits) value: (Q0 scale, bits over unit)."""
    x = int(x)
    headroom_plus_one = 32 - x.bit_length()
    bits_over_unit = integer_bits - headroom_plus_one
    shifted_minus_one = ((x << headroom_plus_one) & 0xFFFF_FFFF) - (1 << 31)
    return int(_one_over_one_plus_x(np.int64(shifted_minus_one))), bits_over_unit


@dataclass(frozen=True)
class SoftmaxParams:
    """Input rescaling of a quantized softmax: Q31 multiplier, left shift, and the cut-off
    below which a difference from the row maximum outputs the minimum."""

    multiplier: int
    left_shift: int
    diff_min: int


def softmax_params(beta, input_scale):
    """TFLite's ``PreprocessSoftmaxScaling`` and ``CalculateInputRadius`` for int8 inputs."""
    real = min(float(beta) * float(input_scale) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)),
               (1 << 31) - 1.0)
    multiplier, left_shift = quantize_multiplier(real)
    radius = (((1 << SCALED_DIFF_INTEGER_BITS) - 1)
              * (1 << (31 - SCALED_DIFF_INTEGER_BITS)) / (1 << left_shift))
    return SoftmaxParams(multiplier, left_shift, -math.floor(radius))


#: Entries of :func:`exp_table`: every difference of two int8 values from their row's maximum.
EXP_TABLE_ENTRIES = 256


def exp_table(params):
    """The exponentials :func:`softmax` computes for int8 inputs, tabulated: entry ``k`` (int64,
    0 to ``EXP_TABLE_ENTRIES - 1``) is the ``Q0`` exponential of a difference of ``-k`` from
    the row maximum, 0 where ``-k`` is below ``params.diff_min`` (softmax does not use it)."""
    diff = -np.arange(EXP_TABLE_ENTRIES, dtype=np.int64)
    live = diff >= params.diff_min
    table = np.zeros(EXP_TABLE_ENTRIES, np.int64)
    scaled = saturating_rounding_doubling_high_mul(diff[live] << params.left_shift,
                                                   params.multiplier)
    table[live] = exp_on_negative_values(scaled)
    return table


def softmax(x, params, out_bits=8):
    """Softmax of int rows ``x`` (last axis) to signed ``out_bits`` outputs of scale 2**-out_bits
    and zero point -2**(out_bits-1)."""
    x = np.asarray(x, np.int64)
    out = np.empty_like(x)
    qmin, qmax = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        diff = row - row.max()
        live = diff >= params.diff_min
        scaled = saturating_rounding_doubling_high_mul(diff << params.left_shift,
                                                       params.multiplier)
        exps = exp_on_negative_values(scaled)
        total = int(np.sum(np.where(live, rounding_divide_by_pot(
            exps, ACCUMULATION_INTEGER_BITS), 0)))
        scale, bits_over_unit = reciprocal(total, ACCUMULATION_INTEGER_BITS)
        unsat = rounding_divide_by_pot(_mul(scale, exps), bits_over_unit + 31 - out_bits)
        out[index] = np.where(live, np.clip(unsat + qmin, qmin, qmax), qmin)
    return out
