"""A stream register slice: cuts the combinational paths of a stream in both directions.

``o``'s valid and payload and ``i``'s ready all come straight from registers, so a long
combinational path on either side (for example, a FIFO head decoded into beat fields, or a
consumer's ready computed from its own state) ends at the slice instead of running through it.
A second ("skid") register catches the transfer that arrives in the cycle ``o`` stalls, so
the slice passes one transfer per cycle and adds one cycle of latency.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegisterSlice"]


class RegisterSlice(wiring.Component):
    """One-cycle stream register with full throughput.

    Parameters
    ----------
    shape : ShapeLike
        Payload shape.

    Members
    -------
    i : ``In(stream.Signature(shape))``
    o : ``Out(stream.Signature(shape))``
    """

    def __init__(self, shape):
        super().__init__({
            "i": In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        skid = Signal.like(self.i.payload)
        skid_valid = Signal()
        # ready while the skid register is empty: a transfer taken now can always be held
        m.d.comb += self.i.ready.eq(~skid_valid)
        taken = self.i.valid & self.i.ready
        # The skid register copies the input whenever it is empty, so that its enable is its
        # own flag, not the input's valid (often the end of a long path on the producer's side):
        # a transfer it must keep is in it at the edge that sets ``skid_valid``.
        with m.If(~skid_valid):
            m.d.sync += skid.eq(self.i.payload)
        with m.If(~self.o.valid | self.o.ready):
            # the output register is free this cycle: fill it from the skid register first
            with m.If(skid_valid):
                m.d.sync += [self.o.payload.eq(skid), self.o.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(taken)]
        with m.Elif(taken):
            m.d.sync += skid_valid.eq(1)
        return m
