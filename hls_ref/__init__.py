"""Bit-exact golden models: the single arithmetic definition every RTL test compares against."""

from .precision import OPERAND_WIDTH, Precision
from .st import (
    pack_activations,
    pack_weights,
    pe_accumulate,
    signed_field,
    st_dot,
    st_product,
    wrap_signed,
)

__all__ = [
    "OPERAND_WIDTH",
    "Precision",
    "pack_activations",
    "pack_weights",
    "pe_accumulate",
    "signed_field",
    "st_dot",
    "st_product",
    "wrap_signed",
]
