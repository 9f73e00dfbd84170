"""The 16-lane vector MAC: one multiplier per lane, the accumulators and the hand-off register.

A VMAC operation issued in X reads ``rw[0]`` and ``ri[0..15]`` as they are in X; the lanes'
multipliers register them (end of X) and their products (end of X+1, stage M), one DSP block
per lane with its own registers on the ECP5 (:class:`hdl.dsp.PipelinedMultiplier`), and the
accumulate stage (W, X+2) applies the operation in issue order:

* ``mac``: ``acc[j] += rw[0] * ri[j]``; ``mach``: ``acc[j] += (rw[0] * ri[j]) << 16``;
* ``setrb``: the hand-off register takes ``acc`` and ``acc[j] <- rw[0]`` (the bias, carried
  with the operation).

The hand-off register is written at the end of X+2, so an ``act`` in X+3 or later sees it and
one in X+1 or X+2 sees the one before: the three-cycle hand-off of ``docs/nve.md`` is this
pipeline, and no ``setrb`` waits anywhere (any rate is allowed). Everything moves only when
``en`` is high, so a stall keeps the latencies in issued instructions.
"""

from amaranth.hdl import Module, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..dsp import PipelinedMultiplier
from .isa import VmacOpcode, as_config

__all__ = ["Vmac"]

ACC_BITS = 32
WEIGHT_BITS = 16


class Vmac(wiring.Component):
    """``lanes`` multiply-accumulate lanes sharing ``rw[0]``.

    Members
    -------
    en, clear : ``In(1)``
        Advance; clear (a new run) empties the pipeline and zeroes the accumulators and the
        hand-off register.
    x_op : ``In(VmacOpcode)``
        The operation of the instruction in X (``NOP`` when it does not execute).
    rw0 : ``In(signed(16))``
        ``rw[0]`` in X.
    ri : ``In(ArrayLayout(signed(8), lanes))``
        ``ri[0 .. lanes-1]`` in X.
    acc : ``Out(ArrayLayout(signed(32), lanes))``
        The accumulators (after the operation in W, from the next cycle).
    handoff : ``Out(ArrayLayout(signed(32), lanes))``
        The hand-off register.
    w_handoff : ``Out(1)``
        A ``setrb`` writes the hand-off register at the end of this (enabled) cycle.
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        lanes = config.lanes
        super().__init__({
            "en": In(1), "clear": In(1),
            "x_op": In(VmacOpcode),
            "rw0": In(signed(WEIGHT_BITS)),
            "ri": In(data.ArrayLayout(signed(8), lanes)),
            "acc": Out(data.ArrayLayout(signed(ACC_BITS), lanes)),
            "handoff": Out(data.ArrayLayout(signed(ACC_BITS), lanes)),
            "w_handoff": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = self._config.lanes
        m_op, w_op = Signal(VmacOpcode), Signal(VmacOpcode)
        m_bias, w_bias = Signal(signed(WEIGHT_BITS)), Signal(signed(WEIGHT_BITS))
        with m.If(self.clear):
            m.d.sync += [m_op.eq(VmacOpcode.NOP), w_op.eq(VmacOpcode.NOP)]
        with m.Elif(self.en):
            m.d.sync += [m_op.eq(self.x_op), w_op.eq(m_op), m_bias.eq(self.rw0),
                         w_bias.eq(m_bias)]
        m.d.comb += self.w_handoff.eq(self.en & (w_op == VmacOpcode.SETRB))

        for j in range(lanes):
            multiplier = PipelinedMultiplier(WEIGHT_BITS)
            m.submodules[f"lane{j}"] = multiplier
            m.d.comb += [multiplier.x.eq(self.rw0), multiplier.y.eq(self.ri[j]),
                         multiplier.enable.eq(self.en)]
            product = multiplier.product  # 16 x 8 bits: 24 significant bits, sign-extended
            acc = self.acc[j]
            with m.If(self.clear):
                m.d.sync += [acc.eq(0), self.handoff[j].eq(0)]
            with m.Elif(self.en):
                with m.Switch(w_op):
                    with m.Case(VmacOpcode.MAC):
                        m.d.sync += acc.eq(acc + product)
                    with m.Case(VmacOpcode.MACH):
                        m.d.sync += acc.eq(acc + (product << 16))
                    with m.Case(VmacOpcode.SETRB):
                        m.d.sync += [self.handoff[j].eq(acc), acc.eq(w_bias)]
        return m
