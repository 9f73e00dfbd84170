"""Requantization primitives against exact big-integer definitions."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hls_ref.quant import (
    INT32_MAX,
    INT32_MIN,
    activation_range,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    scale_by_double,
    scale_by_double_integer,
)
from hls_ref.softmax import exp_on_negative_values

int32 = st.integers(INT32_MIN, INT32_MAX)


def _round_half_away(q):
    """Exact rounding of a Fraction, ties away from zero."""
    magnitude = math.floor(abs(q) + Fraction(1, 2))
    return magnitude if q >= 0 else -magnitude


@given(st.floats(min_value=2.0 ** -31, max_value=2.0 ** 30, allow_nan=False))
def test_quantize_multiplier_is_a_q31_significand_within_half_an_lsb(real):
    multiplier, shift = quantize_multiplier(real)
    assert (1 << 30) <= multiplier < (1 << 31)
    error = abs(Fraction(multiplier) * Fraction(2) ** (shift - 31) - Fraction(real))
    assert error <= Fraction(2) ** (shift - 32)


def test_quantize_multiplier_edge_cases():
    assert quantize_multiplier(0.0) == (0, 0)
    # the significand rounds up to 2**31: renormalised to 2**30 with the next shift
    assert quantize_multiplier(1.0 - 2.0 ** -40) == (1 << 30, 1)
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(2.0 ** -33) == (0, 0)        # flushed to zero
    with pytest.raises(ValueError, match="non-negative"):
        quantize_multiplier(-0.5)


@given(int32, int32)
def test_saturating_rounding_doubling_high_mul(a, b):
    got = int(saturating_rounding_doubling_high_mul(a, b))
    if a == b == INT32_MIN:
        assert got == INT32_MAX
    else:
        # round(a*b / 2**31), ties toward plus infinity
        assert got == (a * b + (1 << 30)) >> 31


@given(int32, st.integers(0, 31))
def test_rounding_divide_by_pot_rounds_half_away_from_zero(x, exponent):
    assert int(rounding_divide_by_pot(x, exponent)) == _round_half_away(Fraction(x, 1 << exponent))


@given(st.integers(-(1 << 24), 1 << 24), st.floats(2.0 ** -31, 2.0 ** 6))
def test_multiply_by_quantized_multiplier_is_the_two_step_rounding(x, real):
    multiplier, shift = quantize_multiplier(real)
    wrapped = ((x << max(shift, 0)) + (1 << 31)) % (1 << 32) - (1 << 31)
    high = (wrapped * multiplier + (1 << 30)) >> 31
    expected = _round_half_away(Fraction(high, 1 << max(-shift, 0)))
    assert int(multiply_by_quantized_multiplier(x, multiplier, shift)) == expected


def test_multiply_by_quantized_multiplier_broadcasts_per_channel():
    acc = np.array([[100, -100], [7, -7]])
    pairs = [quantize_multiplier(r) for r in (0.25, 0.5)]
    got = multiply_by_quantized_multiplier(acc, [m for m, _ in pairs], [s for _, s in pairs])
    # -7 * 0.5: the high multiply (shift 0) rounds the tie toward plus infinity
    assert got.tolist() == [[25, -50], [2, -3]]


@settings(max_examples=500)
@given(int32, st.floats(2.0 ** -30, 2.0 ** 8))
def test_double_scaling_integer_algorithm_equals_the_float_one(x, scale):
    expected = _round_half_away(Fraction(float(x) * scale))   # IEEE product, exact rounding
    assert int(scale_by_double(x, scale)) == expected
    assert int(scale_by_double_integer(x, scale)) == expected


def test_double_scaling_ties_and_product_rounding():
    xs = np.array([5, -5, 3, -3, 1, -1, 0, INT32_MAX, INT32_MIN])
    assert scale_by_double(xs, 0.5).tolist() == [3, -3, 2, -2, 1, -1, 0, 1 << 30, -(1 << 30)]
    # a scale whose IEEE product with x rounds across a half
    scale = 0.1
    xs = np.arange(-100000, 100000, 7)
    assert np.array_equal(scale_by_double(xs, scale), scale_by_double_integer(xs, scale))


@pytest.mark.parametrize("bits", [4, 8, 16])
def test_activation_range(bits):
    top = (1 << (bits - 1)) - 1
    assert activation_range("none", 0.1, 3, bits) == (-top - 1, top)
    assert activation_range("relu", 0.1, 3, bits) == (3, top)
    assert activation_range("relu6", 0.1, 3, bits) == (3, min(top, 63))
    assert activation_range("relu_n1_to_1", 0.1, 3, bits) == (max(-top - 1, -7), min(top, 13))


def test_activation_range_divides_in_float32_and_rounds_ties_away():
    assert activation_range("relu6", 4.0, 0) == (0, 2)          # 6 / 4 = 1.5 -> 2
    assert activation_range("relu6", 0.8, 0) == (0, 8)          # float32: 7.5 -> 8
    assert activation_range("relu_n1_to_1", 0.8, 0) == (-1, 1)  # -1.25, 1.25
    assert activation_range("relu_n1_to_1", 2 / 3, 0) == (-2, 2)  # -1.5 -> -2


def test_fixed_point_exp_tracks_exp():
    raw = -np.arange(0, 32 << 26, 1 << 20, dtype=np.int64)          # Q5: 0 .. -32
    got = exp_on_negative_values(raw) / 2.0 ** 31
    # a sanity bound (the series approximation); exactness is checked against LiteRT
    assert np.max(np.abs(got - np.exp(raw / 2.0 ** 26))) < 5e-7
