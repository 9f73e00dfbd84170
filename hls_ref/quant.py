"""Requantization arithmetic with TFLite's semantics, vectorised over numpy arrays.

Two ways to scale an int32 accumulator by a real factor, both exactly as TFLite's reference
kernels (LiteRT 2.3, the runtime the project checks against) compute them:

* fixed point (Conv2D, DepthwiseConv2D, Add): the factor is a Q31 significand and a shift,
  ``m = multiplier * 2**(shift - 31)`` (:func:`quantize_multiplier`), applied by
  :func:`multiply_by_quantized_multiplier`: gemmlowp's saturating rounding doubling high
  multiply (ties toward plus infinity), then a rounding right shift (ties away from zero).
  Two roundings: the result can differ by one from the exactly rounded product.
* double precision (FullyConnected): ``round(double(acc) * scale)`` with the product rounded to
  a double first and ``round`` taking ties away from zero (:func:`scale_by_double`);
  :func:`scale_by_double_integer` computes the same with integer operations only, which is
  how hardware implements it.

All functions take and return numpy integer arrays (int64 internally, so intermediates never
overflow) and model int32 wrap-around where TFLite's C++ wraps.
"""

import math

import numpy as np

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "activation_range",
    "multiply_by_quantized_multiplier",
    "quantize_multiplier",
    "rounding_divide_by_pot",
    "saturating_rounding_doubling_high_mul",
    "scale_by_double",
    "scale_by_double_integer",
]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def _wrap32(x):
    return ((np.asarray(x, np.int64) + (1 << 31)) & 0xFFFF_FFFF) - (1 << 31)


def _round_half_away(x):
    """C's ``std::round``: halves away from zero (Python's ``round`` rounds to even)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def quantize_multiplier(real):
    """(multiplier, shift) of a non-negative real multiplier, as TFLite's ``QuantizeMultiplier``.

    ``real = multiplier * 2**(shift - 31)`` with ``multiplier`` in ``[2**30, 2**31)``; zero
    maps to ``(0, 0)``, and multipliers below ``2**-32`` flush to zero. ``real`` is a Python
    float (a double, as in TFLite).
    """
    if real < 0:
        raise ValueError(f"multiplier must be non-negative, not {real}")
    if real == 0.0:
        return 0, 0
    significand, shift = math.frexp(real)
    q = _round_half_away(significand * (1 << 31))
    if q == 1 << 31:
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def saturating_rounding_doubling_high_mul(a, b):
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int32 values: ``round(a*b / 2**31)``.

    A nudge of ``2**30`` (``1 - 2**30`` for negative products), then C's truncating division:
    together, ties round toward plus infinity; ``INT32_MIN * INT32_MIN`` saturates.
    """
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    product = a * b
    nudge = np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    total = product + nudge
    # C integer division truncates toward zero.
    quotient = np.where(total >= 0, total >> 31, -((-total) >> 31))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, quotient)


def rounding_divide_by_pot(x, exponent):
    """gemmlowp's ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded half away from zero."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, multiplier, shift):
    """TFLite's ``MultiplyByQuantizedMultiplier(int32 x, int32 multiplier, int shift)``.

    A positive ``shift`` multiplies ``x`` by ``2**shift`` first (wrapping in int32 as the C++
    does); a negative one becomes a rounding right shift after the high multiply.
    ``multiplier`` and ``shift`` broadcast against ``x`` (per-channel requantization).
    """
    x = np.asarray(x, np.int64)
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    high = saturating_rounding_doubling_high_mul(_wrap32(x << left), multiplier)
    return rounding_divide_by_pot(high, right)


def scale_by_double(x, scale):
    """``round(double(x) * scale)``, ties away from zero, as C's ``std::round`` (int64 result).

    ``scale`` is a float64 (array); the product is IEEE-rounded once, as in the C++.
    """
    product = np.asarray(x, np.int64).astype(np.float64) * np.asarray(scale, np.float64)
    whole = np.trunc(product)
    # product - whole is exact (Sterbenz), so the tie test is exact too.
    away = np.abs(product - whole) >= 0.5
    return (whole + np.sign(product) * away).astype(np.int64)


def _double_parts(value):
    """(significand, exponent) of a positive double: ``value = significand * 2**exponent`` with
    a 53-bit integer significand."""
    fraction, exponent = math.frexp(value)
    return int(fraction * (1 << 53)), exponent - 53


def scale_by_double_integer(x, scale, *, limit=None):
    """:func:`scale_by_double` with integer operations only (the hardware's algorithm).

    1. exact product of ``x`` and the 53-bit significand of ``scale`` (at most 84 bits);
    2. round it to 53 significant bits, ties to even (the IEEE double product);
    3. round the scaled value to an integer, ties away from zero.
    ``scale`` must be a positive normal double; results are exact for |x| < 2**31. With
    ``limit``, magnitudes above it become ``limit`` (a saturating result, for scales so large
    that the exact one would not fit).
    """
    x = np.asarray(x, np.int64)
    scales = np.broadcast_to(np.asarray(scale, np.float64), x.shape)
    out = np.empty(x.shape, np.int64)
    for index in np.ndindex(x.shape):
        significand, exponent = _double_parts(float(scales[index]))
        product = abs(int(x[index])) * significand
        drop = max(product.bit_length() - 53, 0)
        if drop:
            kept, rest = product >> drop, product & ((1 << drop) - 1)
            half = 1 << (drop - 1)
            kept += rest > half or (rest == half and kept & 1)
            product, exponent = kept, exponent + drop
        if exponent >= 0:
            magnitude = product << exponent
        else:
            fraction_bits = -exponent
            magnitude = product >> fraction_bits
            magnitude += (product >> (fraction_bits - 1)) & 1
        if limit is not None:
            magnitude = min(magnitude, limit)
        out[index] = -magnitude if x[index] < 0 else magnitude
    return out


def activation_range(activation, scale, zero_point, bits=8):
    """(min, max) quantized output clamp for a fused activation, as TFLite computes it.

    ``activation`` is one of ``"none"``, ``"relu"``, ``"relu6"``, ``"relu_n1_to_1"``; the
    bound ``b`` quantizes as ``zero_point + round(b / scale)`` with the division in float32.
    ``bits`` is the signed output width (4, 8 or 16).
    """
    qmin, qmax = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def quantize(value):
        return zero_point + _round_half_away(float(np.float32(value) / np.float32(scale)))

    if activation == "none":
        return qmin, qmax
    if activation == "relu":
        return max(qmin, quantize(0.0)), qmax
    if activation == "relu6":
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    if activation == "relu_n1_to_1":
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    raise ValueError(f"unknown activation {activation!r}")
