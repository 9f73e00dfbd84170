"""Pack and unpack ``data.Layout`` values as plain integers.

cocotb sees a struct-typed port of an Amaranth design as one flat bit vector. These helpers use
the same layout objects as the RTL, so a test cannot disagree with the hardware about where a
field sits.
"""

import enum

from amaranth.hdl import Shape
from amaranth.lib import data

__all__ = ["pack", "unpack"]


def _leaf_shape(shape):
    return Shape.cast(shape)


def pack(shape, value):
    """Return the bits of ``value`` laid out as ``shape``, as a non-negative integer.

    ``value`` is a dict for a :class:`data.StructLayout` (missing fields are 0), a sequence for
    a :class:`data.ArrayLayout`, an :class:`enum.Enum` member or an int otherwise. Integers out
    of range for their field raise :class:`ValueError`.
    """
    if isinstance(shape, data.StructLayout):
        value = dict(value)
        unknown = set(value) - {name for name, _ in shape}
        if unknown:
            raise ValueError(f"Unknown fields {sorted(unknown)}")
        word = 0
        for name, field in shape:
            word |= pack(field.shape, value.get(name, 0)) << field.offset
        return word
    if isinstance(shape, data.ArrayLayout):
        items = list(value)
        if len(items) != shape.length:
            raise ValueError(f"Expected {shape.length} elements, not {len(items)}")
        width = Shape.cast(shape.elem_shape).width
        return sum(pack(shape.elem_shape, item) << (i * width) for i, item in enumerate(items))
    leaf = _leaf_shape(shape)
    if isinstance(value, enum.Enum):
        value = value.value
    value = int(value)
    low = -(1 << (leaf.width - 1)) if leaf.signed else 0
    high = (1 << (leaf.width - 1 if leaf.signed else leaf.width)) - 1
    if leaf.width == 0:
        low = high = 0
    if not low <= value <= high:
        raise ValueError(f"Value {value} does not fit {leaf}")
    return value & ((1 << leaf.width) - 1)


def unpack(shape, word):
    """Return ``word`` read as ``shape``: dicts, lists and ints (signed where the shape is)."""
    word = int(word)
    if isinstance(shape, data.StructLayout):
        return {name: unpack(field.shape, word >> field.offset) for name, field in shape}
    if isinstance(shape, data.ArrayLayout):
        width = Shape.cast(shape.elem_shape).width
        return [unpack(shape.elem_shape, word >> (i * width)) for i in range(shape.length)]
    leaf = _leaf_shape(shape)
    word &= (1 << leaf.width) - 1
    if leaf.signed and leaf.width and word >> (leaf.width - 1):
        word -= 1 << leaf.width
    return word
