"""Bit-exact golden model of the sum-together (ST) multiplier and processing element (PE).

Everything here is vectorised numpy over arrays of raw 16-bit operands, and is the single
definition that the RTL is tested against. Operands are unsigned 16-bit bit patterns
(``0 <= a < 2**16``); sub-words are read out of them as signed two's-complement values. Bits of an
operand that belong to no sub-word of the configuration are ignored.
"""

import numpy as np

from .precision import OPERAND_WIDTH, Precision

__all__ = [
    "pack_activations",
    "pack_weights",
    "pe_accumulate",
    "signed_field",
    "st_dot",
    "st_product",
    "wrap_signed",
]


def signed_field(word, lsb, width):
    """Return bits ``[lsb + width - 1 : lsb]`` of ``word`` as signed integers (int64 array)."""
    field = (np.asarray(word, dtype=np.int64) >> lsb) & ((1 << width) - 1)
    return field - ((field >> (width - 1)) << width)


def wrap_signed(value, width):
    """Return ``value`` reduced to a ``width``-bit two's-complement integer (int64 array)."""
    if not 1 <= width <= 63:
        raise ValueError(f"Width must be between 1 and 63 bits, not {width!r}")
    value = np.asarray(value, dtype=np.int64)
    return ((value + (1 << (width - 1))) & ((1 << width) - 1)) - (1 << (width - 1))


def _check_operands(a, b):
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    for name, operand in (("a", a), ("b", b)):
        if operand.size and (operand.min() < 0 or operand.max() >= 1 << OPERAND_WIDTH):
            raise ValueError(f"Operand {name} must hold unsigned {OPERAND_WIDTH}-bit words")
    return a, b


def st_product(a, b, precision):
    """Return the ST result for operand words ``a`` (activations) and ``b`` (weights).

    Parameters
    ----------
    a, b : array_like of int
        Raw 16-bit operand words; broadcast against each other.
    precision : Precision or str
        The configuration (see :mod:`hls_ref.precision`).

    Returns
    -------
    numpy.ndarray of int64
        The sum of the signed sub-word products, exact.
    """
    precision = Precision.parse(precision)
    a, b = _check_operands(a, b)
    result = np.zeros(np.broadcast(a, b).shape, dtype=np.int64)
    for (a_lsb, a_width), (b_lsb, b_width) in precision.pairs():
        result += signed_field(a, a_lsb, a_width) * signed_field(b, b_lsb, b_width)
    return result


def _pack(values, precision, width, slot_of_lane, kind):
    precision = Precision.parse(precision)
    values = np.asarray(values)
    if values.ndim == 0:
        raise ValueError(f"{kind} must have a channel axis (the last one)")
    if not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"{kind} must be integers, not {values.dtype}")
    values = values.astype(np.int64)
    low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if values.size and (values.min() < low or values.max() > high):
        raise ValueError(
            f"{kind} must be signed {width}-bit values in [{low}, {high}] for "
            f"{precision.label}; found [{values.min()}, {values.max()}]")
    lanes = precision.lanes
    channels = values.shape[-1]
    groups = -(-channels // lanes)
    padded = np.zeros((*values.shape[:-1], groups * lanes), dtype=np.int64)
    padded[..., :channels] = values
    padded = padded.reshape((*values.shape[:-1], groups, lanes))
    words = np.zeros((*values.shape[:-1], groups), dtype=np.int64)
    for lane in range(lanes):
        field = padded[..., lane] & ((1 << width) - 1)
        words |= field << (slot_of_lane(lane) * precision.slot_bits)
    return words.astype(np.uint16)


def pack_activations(values, precision):
    """Pack signed activations into ST ``A`` operands, along the last (channel) axis.

    Channel ``g * lanes + k`` goes into slot ``k`` (bits ``[k*s + act_bits - 1 : k*s]``) of
    operand ``g``; a last, partial group is zero-filled. The result has
    ``ceil(channels / lanes)`` operands on the last axis, as ``uint16``.

    Raises
    ------
    ValueError
        If a value does not fit the configuration's activation width.
    """
    precision = Precision.parse(precision)
    return _pack(values, precision, precision.act_bits, lambda k: k, "Activations")


def pack_weights(values, precision):
    """Pack signed weights into ST ``B`` operands, along the last (channel) axis.

    Channel ``g * lanes + k`` goes into slot ``lanes - 1 - k`` of operand ``g`` (the crossed
    pairing), in the low ``weight_bits`` bits of the slot; a partial group is zero-filled.

    Raises
    ------
    ValueError
        If a value does not fit the configuration's weight width.
    """
    precision = Precision.parse(precision)
    return _pack(values, precision, precision.weight_bits,
                 lambda k: precision.lanes - 1 - k, "Weights")


def st_dot(x, w, precision):
    """Return the dot product of ``x`` and ``w`` along the last axis, computed as the hardware
    does: pack both into ST operands, then sum the ST results of every operand pair."""
    return st_product(pack_activations(x, precision), pack_weights(w, precision),
                      precision).sum(axis=-1)


def pe_accumulate(products, clear, acc_width=32):
    """Return the accumulator value after each product of a PE input sequence.

    Parameters
    ----------
    products : array_like of int
        ST results, one per PE input transfer, in order.
    clear : array_like of bool
        Per transfer: start a new sum from this product (``acc := product``) instead of adding
        it to the running sum (``acc := acc + product``).
    acc_width : int
        Accumulator width in bits. The accumulator wraps modulo ``2**acc_width`` (two's
        complement); the compiler is responsible for proving that real layers never wrap.

    Returns
    -------
    numpy.ndarray of int64
        The accumulator after each transfer, as a signed ``acc_width``-bit value.
    """
    products = np.asarray(products, dtype=np.int64).ravel()
    clear = np.asarray(clear, dtype=bool).ravel()
    if products.shape != clear.shape:
        raise ValueError("products and clear must have the same length")
    running = np.cumsum(products)
    # Index of the transfer that started each one's segment (-1: none yet, the reset value 0
    # is the base); the running sum just before it is subtracted over the whole segment.
    start = np.maximum.accumulate(np.where(clear, np.arange(len(clear)), -1))
    offset = np.where(start >= 0, (running - products)[np.maximum(start, 0)], 0)
    return wrap_signed(running - offset, acc_width)
