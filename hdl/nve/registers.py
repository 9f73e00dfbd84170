"""The weight register ``rw`` and the image shift register ``ri`` (``docs/nve.md``).

Both are written by the instruction in X at the end of its cycle, from the read latches as
they are in that cycle, so a ``mac`` in X reads the values of the instructions before it
(one-cycle register latency). ``clear`` (a new run) sets every entry to 0.

The write is carried out a cycle late: the registers keep the value before the last executed
instruction, its operation and the latches as they were, and the value the ISA defines is
applied to them combinationally. The latches come straight from the local buffer's block RAMs
(their output is slow, about 5.8 ns on the ECP5), so they end at a register here instead of
running through the shifts' multiplexers; the multipliers, which register their operands,
take the applied value.
"""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .isa import IregOpcode, WregOpcode, as_config

__all__ = ["ImageRegister", "WeightRegister"]


class WeightRegister(wiring.Component):
    """``rw[0 .. rw_depth-1]``, int16: ``set.w`` loads the coefficients of latch A
    (coefficient k from bits 16k+15:16k), ``sh.w`` shifts down (``rw[k] <- rw[k+1]``, the top
    entry becomes 0).

    Members
    -------
    en, clear : ``In(1)``
    x_op : ``In(WregOpcode)``
    latch_a : ``In(word_bits)``
    rw : ``Out(ArrayLayout(signed(16), rw_depth))``
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        super().__init__({
            "en": In(1), "clear": In(1),
            "x_op": In(WregOpcode),
            "latch_a": In(config.word_bits),
            "rw": Out(data.ArrayLayout(signed(16), config.rw_depth)),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self._config.rw_depth
        kept = Signal.like(self.rw)  # before the last operation
        op = Signal(WregOpcode)
        latch_a = Signal.like(self.latch_a)
        _defer(m, self, (kept, self.rw), op, ((latch_a, self.latch_a),))
        coefficients = data.ArrayLayout(signed(16), depth)(latch_a)
        for k in range(depth):
            m.d.comb += self.rw[k].eq(_applied(op, kept[k], {
                WregOpcode.SET: coefficients[k],
                WregOpcode.SH: kept[k + 1] if k + 1 < depth else 0}))
        return m


class ImageRegister(wiring.Component):
    """``ri[0 .. lanes + ri_extra - 1]``, int8 (``docs/nve.md``): ``set.i`` loads latch A into
    ``ri[0..7]`` and latch B into ``ri[8..15]``; ``setsh.i`` shifts ``ri[0..15]`` ++ latch B
    down by one; ``sh.i`` shifts down (the top entry becomes 0); ``seth.i`` loads latch B into
    ``ri[8..15]``.

    Members
    -------
    en, clear : ``In(1)``
    x_op : ``In(IregOpcode)``
    latch_a, latch_b : ``In(word_bits)``
    ri : ``Out(ArrayLayout(signed(8), ri_size))``
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        super().__init__({
            "en": In(1), "clear": In(1),
            "x_op": In(IregOpcode),
            "latch_a": In(config.word_bits), "latch_b": In(config.word_bits),
            "ri": Out(data.ArrayLayout(signed(8), config.ri_size)),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        n, lanes, size = config.pixels_per_word, config.lanes, config.ri_size
        ri = self.ri
        kept = Signal.like(ri)  # before the last operation
        op = Signal(IregOpcode)
        latch_a, latch_b = Signal.like(self.latch_a), Signal.like(self.latch_b)
        _defer(m, self, (kept, ri), op, ((latch_a, self.latch_a), (latch_b, self.latch_b)))
        a = data.ArrayLayout(signed(8), n)(latch_a)
        b = data.ArrayLayout(signed(8), n)(latch_b)
        for k in range(size):
            cases = {IregOpcode.SH: kept[k + 1] if k + 1 < size else 0}
            if k < 2 * n:
                cases[IregOpcode.SET] = a[k] if k < n else b[k - n]
            if k < lanes - 1:
                cases[IregOpcode.SETSH] = kept[k + 1]
            elif k < lanes - 1 + n:
                cases[IregOpcode.SETSH] = b[k - (lanes - 1)]
            if n <= k < 2 * n:
                cases[IregOpcode.SETH] = b[k - n]
            m.d.comb += ri[k].eq(_applied(op, kept[k], cases))
        return m


def _applied(op, kept, cases):
    """The entry after operation ``op``: ``cases`` maps an opcode to the entry's new value;
    other operations keep ``kept``. (A ``Mux`` chain, not a ``Switch``: Icarus does not
    evaluate a combinational process before one of its inputs first changes.)"""
    value = kept
    for opcode, new in cases.items():
        value = Mux(op == opcode, new, value)
    return value


def _defer(m, unit, value, op, latches):
    """The registers of a deferred write: ``value`` is ``(kept, applied)``; in every enabled
    cycle ``kept`` takes the applied value, ``op`` the operation in X and each ``(register,
    latch)`` pair the latch; ``clear`` zeroes ``kept`` and makes ``op`` a ``NOP``."""
    kept, applied = value
    with m.If(unit.clear):
        m.d.sync += [kept.eq(0), op.eq(op.shape().NOP)]
    with m.Elif(unit.en):
        m.d.sync += [kept.eq(applied), op.eq(unit.x_op)]
        m.d.sync += [register.eq(latch) for register, latch in latches]
