"""Packing structured payloads for cocotb, from the RTL's own layouts."""

import pytest
from amaranth.hdl import signed, unsigned
from amaranth.lib import data

from hls_ref import Precision
from sim.layouts import pack, unpack

LAYOUT = data.StructLayout({
    "a": unsigned(4),
    "p": Precision,
    "s": signed(6),
    "v": data.ArrayLayout(signed(3), 2),
})


def test_round_trip():
    value = {"a": 9, "p": Precision.A8W4, "s": -17, "v": [-4, 3]}
    word = pack(LAYOUT, value)
    assert word == 9 | (0b011 << 4) | ((-17 & 0x3F) << 7) | ((-4 & 7) << 13) | (3 << 16)
    assert unpack(LAYOUT, word) == {**value, "p": Precision.A8W4.value}


@pytest.mark.parametrize(("value", "message"), [
    ({"a": 16}, r"^Value 16 does not fit unsigned\(4\)$"),
    ({"s": -33}, r"^Value -33 does not fit signed\(6\)$"),
    ({"x": 1}, r"^Unknown fields \['x'\]$"),
    ({"v": [1]}, r"^Expected 2 elements, not 1$"),
])
def test_rejects_bad_values(value, message):
    with pytest.raises(ValueError, match=message):
        pack(LAYOUT, value)
