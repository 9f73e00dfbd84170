"""NVE arithmetic: the one definition of how an accumulator becomes an output pixel.

The Neuro Vector Engine (seed 003) multiplies int8 pixels by int16 weights into int32
accumulators and activates through a 1024-entry lookup table indexed by 10 bits of the
accumulator. The seed never says which 10 bits; Tessera defines it here, and the instruction-set
simulator, the golden layer model, the code generator and (later) the RTL all import it:

* accumulators wrap at 32 bits (two's complement), like the hardware adders;
* the LUT index takes a programmable right shift ``shift`` (0 ... 31) of the accumulator,
  rounded half up (``(acc + 2**(shift-1)) >> shift``, computed without overflow), saturated to
  the signed 10-bit range -512 ... 511 and offset by 512, so index 0 is the most negative;
* a LUT entry is an int8 output pixel;
* a partial sum leaves through ``act.ps`` as four int8 digits per lane
  (:func:`partial_digits`) and comes back through ``mac`` / ``mach`` with the weights 1 and
  256 (:func:`partial_value`), so one output map can be split across programs exactly.
"""

import numpy as np

from ..st import wrap_signed

__all__ = [
    "ACC_BITS",
    "LUT_ENTRIES",
    "MAX_SHIFT",
    "PARTIAL_DIGITS",
    "PARTIAL_ROUNDING",
    "activate",
    "identity_lut",
    "lut_index",
    "partial_digits",
    "partial_value",
    "relu_lut",
    "tanh_lut",
    "wrap_acc",
]

ACC_BITS = 32
LUT_ENTRIES = 1024
MAX_SHIFT = 31
_INDEX_MIN = -(LUT_ENTRIES // 2)
_INDEX_MAX = LUT_ENTRIES // 2 - 1


def wrap_acc(x):
    """``x`` (integers within int64) wrapped to int32, as an int64 numpy array."""
    return wrap_signed(x, ACC_BITS)


def _check_shift(shift):
    if not 0 <= int(shift) <= MAX_SHIFT:
        raise ValueError(f"activation shift must be 0 ... {MAX_SHIFT}, not {shift}")
    return int(shift)


def lut_index(acc, shift):
    """LUT indices 0 ... 1023 of int32 accumulators ``acc`` for a right shift ``shift``.

    ``clamp(round_half_up(acc / 2**shift), -512, 511) + 512``; int64 intermediates, so the
    rounding constant never overflows.
    """
    shift = _check_shift(shift)
    acc = wrap_acc(acc)
    rounded = (acc + ((1 << shift) >> 1)) >> shift
    return (np.clip(rounded, _INDEX_MIN, _INDEX_MAX) - _INDEX_MIN).astype(np.int64)


def _check_lut(lut):
    lut = np.asarray(lut)
    if lut.shape != (LUT_ENTRIES,):
        raise ValueError(f"an activation LUT has {LUT_ENTRIES} entries, not shape {lut.shape}")
    if lut.min() < -128 or lut.max() > 127:
        raise ValueError("activation LUT entries are int8 (-128 ... 127)")
    return lut.astype(np.int8)


def activate(acc, shift, lut):
    """int8 outputs of accumulators ``acc``: ``lut[lut_index(acc, shift)]``."""
    return _check_lut(lut)[lut_index(acc, shift)]


def _index_values():
    """The signed value each LUT index stands for (-512 ... 511)."""
    return np.arange(LUT_ENTRIES, dtype=np.int64) + _INDEX_MIN


def identity_lut():
    """The LUT that passes the shifted accumulator through, saturated to int8."""
    return np.clip(_index_values(), -128, 127).astype(np.int8)


def relu_lut():
    """ReLU on the shifted accumulator, saturated to 0 ... 127."""
    return np.clip(_index_values(), 0, 127).astype(np.int8)


def tanh_lut(input_scale=1 / 64, output_scale=127):
    """A tanh LUT: entry ``i`` is ``round(output_scale * tanh(input_scale * (i - 512)))``.

    ``input_scale`` is the real value of one index step; ``output_scale`` the int8 value of 1.0.
    """
    x = _index_values() * float(input_scale)
    return np.clip(np.rint(output_scale * np.tanh(x)), -128, 127).astype(np.int8)


#: Digits of a partial sum (int32 = 4 int8 digits).
PARTIAL_DIGITS = 4
#: ``PARTIAL_ROUNDING[k]``: the constant added before digit ``k``'s shift,
#: ``sum(128 * 256**i for i < k)``.
PARTIAL_ROUNDING = tuple(sum(128 << (8 * i) for i in range(k)) for k in range(PARTIAL_DIGITS))


def partial_digits(acc):
    """The int8 digits ``[4, ...]`` of int32 accumulators ``acc``:
    ``s_k = wrap8((acc + PARTIAL_ROUNDING[k]) >> 8k)`` (arithmetic shift, int64 sum), the
    balanced base-256 digits for which ``acc == s_0 + 256 s_1 + 2**16 s_2 + 2**24 s_3``
    modulo ``2**32`` (:func:`partial_value`). The hardware needs only an adder and a byte
    select per lane (no LUT, no saturation)."""
    acc = wrap_acc(acc)
    return np.stack([wrap_signed((acc + r) >> (8 * k), 8)
                     for k, r in enumerate(PARTIAL_ROUNDING)]).astype(np.int8)


def partial_value(digits):
    """The int32 values (int64 array) of partial-sum digits ``[4, ...]``:
    ``wrap32(sum s_k * 256**k)``, what a reload of them adds to the accumulators."""
    d = np.asarray(digits, dtype=np.int64)
    return wrap_acc(sum(d[k] << (8 * k) for k in range(PARTIAL_DIGITS)))
