"""The weight register ``rw`` and the image shift register ``ri`` (``docs/nve.md``).

Both are written by the instruction in X at the end of its cycle, from the read latches as
they are in that cycle, so a ``mac`` in X reads the values of the instructions before it
(one-cycle register latency). ``clear`` (a new run) sets every entry to 0.
"""

from amaranth.hdl import Module, signed
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
        with m.If(self.clear):
            m.d.sync += self.rw.eq(0)
        with m.Elif(self.en):
            with m.Switch(self.x_op):
                with m.Case(WregOpcode.SET):
                    m.d.sync += self.rw.eq(self.latch_a)
                with m.Case(WregOpcode.SH):
                    m.d.sync += [self.rw[k].eq(self.rw[k + 1]) for k in range(depth - 1)]
                    m.d.sync += self.rw[depth - 1].eq(0)
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
        a = data.ArrayLayout(signed(8), n)(self.latch_a)
        b = data.ArrayLayout(signed(8), n)(self.latch_b)
        with m.If(self.clear):
            m.d.sync += ri.eq(0)
        with m.Elif(self.en):
            with m.Switch(self.x_op):
                with m.Case(IregOpcode.SET):
                    m.d.sync += [ri[k].eq(a[k]) for k in range(n)]
                    m.d.sync += [ri[n + k].eq(b[k]) for k in range(n)]
                with m.Case(IregOpcode.SETSH):
                    m.d.sync += [ri[k].eq(ri[k + 1]) for k in range(lanes - 1)]
                    m.d.sync += [ri[lanes - 1 + k].eq(b[k]) for k in range(n)]
                with m.Case(IregOpcode.SH):
                    m.d.sync += [ri[k].eq(ri[k + 1]) for k in range(size - 1)]
                    m.d.sync += ri[size - 1].eq(0)
                with m.Case(IregOpcode.SETH):
                    m.d.sync += [ri[n + k].eq(b[k]) for k in range(n)]
        return m
