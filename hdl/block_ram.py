"""A simple dual-port RAM for banked PLMs: one write port, one registered read port, and no
logic for a read and a write of the same word in one cycle.

A synchronous read port of ``lib.memory`` promises the old word when the write port writes the
word it reads in the same cycle. The ECP5's DP16KD does not keep that promise between its two
ports, so Yosys builds it from fabric: a copy of the write data and address, a comparator and
a multiplexer after every output bit, the multiplexer on the path from the block RAM's
clock-to-output delay (5.8 ns) to whatever takes the word. The accelerators' PLMs never need
it: a loader writes one bank while the core reads the other, and a bank is written again only
after the command reading it has finished. :class:`DualPortRAM` states that to synthesis: the
memory is read asynchronously into a register and carries Yosys's ``no_rw_check`` attribute,
so the register becomes the block RAM's own synchronous read and the collision is left undefined.
Simulation is unchanged: the register takes the old word, as the synchronous port would.
"""

from amaranth.hdl import Module, Shape, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import Out

from .params import address_bits, check_int

__all__ = ["DualPortRAM"]


class DualPortRAM(wiring.Component):
    """``depth`` words of ``shape``, written through ``wr`` and read through ``rd``.

    Members
    -------
    wr : ``Out(memory.WritePort.Signature(addr_width, shape, granularity))``
        ``wr.en`` has one bit per ``granularity`` bits of the word (one bit without it); the
        word is written at the clock edge.
    rd : ``Out(memory.ReadPort.Signature(addr_width, shape))``
        The word at ``rd.addr`` one cycle later, when ``rd.en`` was 1; ``rd.data`` holds its
        value while ``rd.en`` is 0.

    A read of the word ``wr`` writes in the same cycle returns an undefined word on an FPGA:
    the user guarantees that no such read is used (the conv2d core's reads while idle are not).
    """

    def __init__(self, *, shape, depth, granularity=None):
        self._shape = Shape.cast(shape)
        self._depth = check_int("depth", depth, minimum=1)
        self._granularity = granularity
        addr_width = address_bits(depth)
        super().__init__({
            "wr": Out(memory.WritePort.Signature(addr_width=addr_width, shape=self._shape,
                                                 granularity=granularity)),
            "rd": Out(memory.ReadPort.Signature(addr_width=addr_width, shape=self._shape)),
        })

    @property
    def depth(self):
        """Words the RAM holds."""
        return self._depth

    def elaborate(self, platform):
        m = Module()
        m.submodules.storage = storage = memory.Memory(
            shape=self._shape, depth=self._depth, init=[], attrs={"no_rw_check": 1})
        write = storage.write_port(granularity=self._granularity)
        read = storage.read_port(domain="comb")
        word = Signal(self._shape, name="word", reset_less=True)
        m.d.comb += [
            write.addr.eq(self.wr.addr),
            write.data.eq(self.wr.data),
            write.en.eq(self.wr.en),
            read.addr.eq(self.rd.addr),
            self.rd.data.eq(word),
        ]
        with m.If(self.rd.en):
            m.d.sync += word.eq(read.data)
        return m
