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

With ``read_latency`` 2 the word passes a second register. On the ECP5 that register is the
block RAM's own output register (``REGMODE`` ``OUTREG``, instantiated through
:mod:`hdl.dp16kd`: Yosys's mapping never uses it): the block's clock-to-output delay from
its array (5.8 ns) then ends inside the block, and the wire from the block to whatever takes
the word starts from the output register's much shorter one. Elsewhere it is a fabric register.
"""

from amaranth.hdl import Module, Shape, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import Out

from .dp16kd import DATA_WIDTHS, dp16kd, dp16kd_port, mode_for_depth
from .params import address_bits, check_int
from .target import is_ecp5

__all__ = ["DualPortRAM"]


class DualPortRAM(wiring.Component):
    """``depth`` words of ``shape``, written through ``wr`` and read through ``rd``.

    Members
    -------
    wr : ``Out(memory.WritePort.Signature(addr_width, shape, granularity))``
        ``wr.en`` has one bit per ``granularity`` bits of the word (one bit without it); the
        word is written at the clock edge.
    rd : ``Out(memory.ReadPort.Signature(addr_width, shape))``
        The word at ``rd.addr`` ``read_latency`` cycles later, when ``rd.en`` was 1: the RAM
        reads when ``rd.en`` is 1 and holds its read word while it is 0; with ``read_latency``
        2 that word passes a register that loads every cycle.

    A read of the word ``wr`` writes in the same cycle returns an undefined word on an FPGA:
    the user guarantees that no such read is used (the conv2d core's reads while idle are not).
    """

    def __init__(self, *, shape, depth, granularity=None, read_latency=1):
        self._shape = Shape.cast(shape)
        self._depth = check_int("depth", depth, minimum=1)
        self._granularity = granularity
        self._read_latency = check_int("read_latency", read_latency, minimum=1, maximum=2)
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

    @property
    def read_latency(self):
        """Cycles from a read address to its word (1 or 2)."""
        return self._read_latency

    def elaborate(self, platform):
        m = Module()
        if (self._read_latency == 2 and is_ecp5(platform)
                and self._depth <= DATA_WIDTHS[1]):
            self._ecp5_blocks(m)
            return m
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
        ]
        with m.If(self.rd.en):
            m.d.sync += word.eq(read.data)
        if self._read_latency == 2:
            output = Signal(self._shape, name="word_out", reset_less=True)
            m.d.sync += output.eq(word)
            word = output
        m.d.comb += self.rd.data.eq(word)
        return m

    def _ecp5_blocks(self, m):
        """DP16KD blocks side by side, each holding ``bits`` bits of every word in the mode
        whose depth holds the RAM, with port A writing and port B reading through its output
        register. A block never spans two write lanes (``granularity``), so one write enable
        serves all of a block."""
        width = self._shape.width
        lane = self._granularity or width
        bits = mode_for_depth(self._depth)
        wr_en, rd = self.wr.en, self.rd
        for start in range(0, width, lane):
            for low in range(start, min(start + lane, width), bits):
                high = min(low + bits, start + lane, width)
                port_a, _ = dp16kd_port(
                    "A", width=bits, address=self.wr.addr, data_in=self.wr.data[low:high],
                    data_out=Signal(0), clock_enable=1,
                    write_enable=wr_en[start // lane] if self._granularity else wr_en)
                port_b, connect = dp16kd_port(
                    "B", width=bits, address=rd.addr, data_in=Signal(0),
                    data_out=rd.data[low:high], clock_enable=rd.en, write_enable=0)
                m.submodules[f"bits{low}"] = dp16kd(width=bits, port_a=port_a, port_b=port_b,
                                                   output_register_b=True)
                m.d.comb += connect
