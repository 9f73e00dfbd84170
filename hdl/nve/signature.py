"""Running 64-bit signatures of wide records, one record per cycle, for the lockstep test.

The lockstep test compares every retire record of the RTL with the simulator's. Reading a
1,000-bit record into Python every cycle costs the simulation far more than the design does,
so the trace logic also folds each record into a running signature, which the testbench reads
once per run and compares with :func:`signature` of the simulator's records; only a run whose
signatures differ is run again record by record to find the first difference.

A record of ``n`` 32-bit chunks ``c_k`` (the last zero-padded) becomes
``s = sum(c_k * M_k) mod 2^64`` with odd 32-bit constants ``M_k``, and the signature
``h = h * P + s mod 2^64`` (from 0). Any difference confined to one chunk changes ``s`` (each
product is exact and an odd multiplier is invertible); differences in several chunks cancel
only for patterns as unlikely as a 2^-60 collision. Products and sums of whole vectors are
what event-driven simulators (Icarus) evaluate cheaply, as long as no result is wider than 64
bits (Icarus takes a slow path beyond): a CRC's parity trees over single bits, or 64 x 64-bit
products, cost them far more than the design itself.
"""

from amaranth.hdl import Signal

__all__ = ["SIGNATURE_BITS", "signature", "signature_step"]

SIGNATURE_BITS = 64
_MASK = (1 << SIGNATURE_BITS) - 1
#: The multiplier of the running signature (odd).
PRIME = 0x9E3779B97F4A7C15


def _multiplier(k):
    """An odd 32-bit constant for chunk ``k`` (the top half of splitmix64 of ``k``)."""
    z = (k + 1) * PRIME & _MASK
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _MASK
    return ((z ^ (z >> 31)) >> _CHUNK_BITS) | 1


_CHUNK_BITS = 32
_CHUNK_MASK = (1 << _CHUNK_BITS) - 1


def _chunks(bits):
    return (bits + _CHUNK_BITS - 1) // _CHUNK_BITS


def signature(records, bits, start=0):
    """The running signature after ``records`` (ints of ``bits`` bits) from ``start``."""
    multipliers = [_multiplier(k) for k in range(_chunks(bits))]
    h = start
    for value in records:
        s = 0
        for k, multiplier in enumerate(multipliers):
            s += (value >> (_CHUNK_BITS * k) & _CHUNK_MASK) * multiplier
        h = (h * PRIME + s) & _MASK
    return h


def signature_step(m, h, data):
    """The signature after one more record ``data`` (an Amaranth value) from ``h`` (a
    ``SIGNATURE_BITS``-bit value), as an expression; ``m`` takes the intermediate signals.
    Every product is 32 x 32 bits (``h * P`` too, from the halves)."""
    bits = len(data)
    terms = []
    for k in range(_chunks(bits)):
        chunk = data[_CHUNK_BITS * k:_CHUNK_BITS * (k + 1)]
        product = Signal(SIGNATURE_BITS, name=f"signed_chunk{k}")
        m.d.comb += product.eq(chunk * _multiplier(k))
        terms.append(product)
    # a balanced tree of 64-bit sums (a chain would re-evaluate every later sum for each
    # product that changes)
    while len(terms) > 1:
        pairs = []
        for a, b in zip(terms[::2], terms[1::2]):
            total = Signal(SIGNATURE_BITS)
            m.d.comb += total.eq(a + b)
            pairs.append(total)
        terms = pairs + terms[len(pairs) * 2:]
    total = terms[0]
    h_lo, h_hi = h[:_CHUNK_BITS], h[_CHUNK_BITS:]
    p_lo, p_hi = PRIME & _CHUNK_MASK, PRIME >> _CHUNK_BITS
    low, cross = Signal(SIGNATURE_BITS), Signal(_CHUNK_BITS)
    m.d.comb += [low.eq(h_lo * p_lo), cross.eq(h_lo * p_hi + h_hi * p_lo)]
    return low + (cross << _CHUNK_BITS) + total
