"""The golden model of the ST multiplier and PE, and the packing helpers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hls_ref import (
    Precision,
    pack_activations,
    pack_weights,
    pe_accumulate,
    signed_field,
    st_dot,
    st_product,
    wrap_signed,
)

# Seed 002, Fig. 2.14, written out by hand: (code, [(A msb, A lsb, B msb, B lsb), ...]).
FIG_2_14 = {
    "a16w16": (0b000, [(15, 0, 15, 0)]),
    "a16w8": (0b100, [(15, 0, 7, 0)]),
    "a8w8": (0b010, [(15, 8, 7, 0), (7, 0, 15, 8)]),
    "a8w4": (0b011, [(15, 8, 3, 0), (7, 0, 11, 8)]),
    "a4w4": (0b001, [(15, 12, 3, 0), (11, 8, 7, 4), (7, 4, 11, 8), (3, 0, 15, 12)]),
}


@pytest.mark.parametrize("label", list(FIG_2_14))
def test_configuration_table_matches_seed(label):
    code, slices = FIG_2_14[label]
    precision = Precision.parse(label)
    assert precision.value == code
    pairs = {((a_lsb, a_msb - a_lsb + 1), (b_lsb, b_msb - b_lsb + 1))
             for a_msb, a_lsb, b_msb, b_lsb in slices}
    assert set(precision.pairs()) == pairs


def test_parse_accepts_labels_geometries_and_codes():
    assert Precision.parse("A8W4") is Precision.A8W4
    assert Precision.parse("8x4") is Precision.A8W4
    assert Precision.parse(0b011) is Precision.A8W4
    for bad in ("a2w2", 5, True, None):
        with pytest.raises(ValueError, match=r"^Unknown precision .*; expected one of "):
            Precision.parse(bad)


def test_product_bits_hold_the_extremes():
    for p in Precision:
        a_min, w_min = -(1 << (p.act_bits - 1)), -(1 << (p.weight_bits - 1))
        largest = p.lanes * a_min * w_min
        smallest = p.lanes * a_min * (-w_min - 1)
        assert largest == (1 << (p.product_bits - 2))  # exactly the top positive power of two
        assert -(1 << (p.product_bits - 1)) <= smallest


def test_st_product_on_fig_2_14_examples():
    # 8x8: A = [0x80 | 0x7F], B = [0x02 | 0xFF] -> A[15:8]*B[7:0] + A[7:0]*B[15:8]
    assert st_product(0x807F, 0x02FF, "a8w8") == (-128) * (-1) + 127 * 2
    # 4x4: A = 0x1234, B = 0x5678 -> 1*(-8) + 2*7 + 3*6 + 4*5 (nibble 8 is -8)
    assert st_product(0x1234, 0x5678, "a4w4") == 1 * -8 + 2 * 7 + 3 * 6 + 4 * 5
    # 8x4 uses only the low nibble of each weight byte.
    assert st_product(0x7F80, 0xA9F7, "a8w4") == 127 * 7 + (-128) * (-7)
    assert st_product(0x8000, 0x8000, "a16w16") == 1 << 30
    assert st_product(0x8000, 0xFF80, "a16w8") == (-32768) * (-128)


def test_st_product_rejects_wide_operands():
    with pytest.raises(ValueError, match=r"^Operand a must hold unsigned 16-bit words$"):
        st_product(1 << 16, 0, "a8w8")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(Precision)), st.integers(1, 40), st.data())
def test_packed_dot_product_equals_integer_dot_product(precision, channels, data):
    a_range = (-(1 << (precision.act_bits - 1)), (1 << (precision.act_bits - 1)) - 1)
    w_range = (-(1 << (precision.weight_bits - 1)), (1 << (precision.weight_bits - 1)) - 1)
    x = np.array(data.draw(st.lists(st.integers(*a_range), min_size=channels,
                                    max_size=channels)))
    w = np.array(data.draw(st.lists(st.integers(*w_range), min_size=channels,
                                    max_size=channels)))
    assert st_dot(x, w, precision) == int(np.dot(x, w))
    assert pack_activations(x, precision).shape == (-(-channels // precision.lanes),)


def test_packing_places_channels_crossed():
    # Digest section 5.5: 4-bit inputs fill LL first, weights fill HH first.
    assert pack_activations(np.array([1, 2, 3]), "a4w4")[0] == 0x0321
    assert pack_weights(np.array([1, 2, 3]), "a4w4")[0] == 0x1230
    assert pack_activations(np.array([-1, 5]), "a8w8")[0] == 0x05FF
    assert pack_weights(np.array([-1, 5]), "a8w8")[0] == 0xFF05
    assert pack_weights(np.array([-1, 5]), "a8w4")[0] == 0x0F05


def test_packing_rejects_out_of_range_values():
    with pytest.raises(ValueError, match=r"^Activations must be signed 4-bit values in "
                                         r"\[-8, 7\] for a4w4; found \[-9, 3\]$"):
        pack_activations(np.array([-9, 3]), "a4w4")
    with pytest.raises(ValueError, match=r"^Weights must be integers, not float64$"):
        pack_weights(np.array([0.5]), "a8w8")


def test_pe_accumulate_segments_and_wraps():
    assert list(pe_accumulate([5, 6, 7, 8], [1, 0, 1, 0])) == [5, 11, 7, 15]
    # Before the first clear the accumulator starts from its reset value 0.
    assert list(pe_accumulate([5, 6], [0, 0])) == [5, 11]
    assert list(pe_accumulate([1 << 30] * 2, [1, 0], 32)) == [1 << 30, -(1 << 31)]
    assert pe_accumulate([127, 1], [1, 0], 8)[-1] == -128


def test_signed_field_and_wrap():
    assert signed_field(0xF0, 4, 4) == -1
    assert signed_field(0x70, 4, 4) == 7
    assert wrap_signed(1 << 31, 32) == -(1 << 31)
    with pytest.raises(ValueError, match=r"^Width must be between 1 and 63 bits, not 64$"):
        wrap_signed(0, 64)
