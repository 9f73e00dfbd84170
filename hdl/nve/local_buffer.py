"""The true dual-port local buffer and its two read latches.

Each port does one read or one write per instruction, one cycle after the instruction issues
(stage M): the address computed in X is registered, then the block RAM is accessed. A ``rd``
at cycle t is sampled at the end of t+1, so its word leaves the block RAM in t+2 for a ``set``
then, and the port's read latch (``docs/nve.md``) keeps it until the next ``rd`` of the port
lands (the RAM's output in the cycle a read lands, a held copy afterwards: the RAM reads in
every enabled cycle, its clock enable being the pipeline's). A write at t lands at
the end of t+1, so a ``rd`` at t+2 (sampled at the end of t+3) sees it. Reads and writes of a
port share its address, so each port maps onto one port of a true dual-port RAM.

MEMA writes the input-stream word the instruction took in X; MEMB writes ``ro`` as it is in M
(the result of an ``act`` at least one cycle older, ``docs/nve.md``: act -> MEMB ``wr`` 1).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..dp16kd import dp16kd, dp16kd_port
from ..target import is_ecp5
from .isa import MemOpcode, as_config

__all__ = ["LocalBuffer"]


class LocalBuffer(wiring.Component):
    """``local_words`` x 64-bit true dual-port buffer, accessed in M.

    Parameters
    ----------
    config : NveConfig
        ``local_words``, ``word_bits``.

    Members
    -------
    en : ``In(1)``
        Advance (the M registers and the block RAM's ports are enabled by it).
    kill : ``In(1)``
        Drop the writes of the instruction in M (it faulted).
    x_op : ``In(ArrayLayout(MemOpcode, 2))``
        MEMA and MEMB operations of the instruction in X (``NOP`` when it does not execute).
    x_address : ``In(ArrayLayout(addr_bits, 2))``
        Their word addresses.
    x_data : ``In(word_bits)``
        The input-stream word a MEMA ``wr`` in X writes.
    m_ro : ``In(word_bits)``
        ``ro`` in M, which a MEMB ``wr`` writes.
    latch : ``Out(ArrayLayout(word_bits, 2))``
        The read latches of ports A and B.
    m_op, m_address, m_data : ``Out(...)``
        The accesses in M (what a write stores: ``m_data[0]`` and ``m_ro``), for the trace.
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        a, w = config.addr_bits, config.word_bits
        super().__init__({
            "en": In(1), "kill": In(1),
            "x_op": In(data.ArrayLayout(MemOpcode, 2)),
            "x_address": In(data.ArrayLayout(a, 2)),
            "x_data": In(w),
            "m_ro": In(w),
            "latch": Out(data.ArrayLayout(w, 2)),
            "m_op": Out(data.ArrayLayout(MemOpcode, 2)),
            "m_address": Out(data.ArrayLayout(a, 2)),
            "m_data": Out(w),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        with m.If(self.en):
            m.d.sync += [self.m_op.eq(self.x_op), self.m_address.eq(self.x_address),
                         self.m_data.eq(self.x_data)]
        if is_ecp5(platform):
            ports = self._ecp5_blocks(m)
        else:
            m.submodules.words = words = memory.Memory(
                shape=config.word_bits, depth=config.local_words, init=[])
            ports = [(words.read_port(), words.write_port()) for _ in range(2)]
        for port, data_in in ((0, self.m_data), (1, self.m_ro)):
            read, write = ports[port]
            op = self.m_op[port]
            # The block RAM port reads in every enabled cycle (its clock enable is `en`, as
            # the true dual-port mapping wants); the latch keeps the word of the last `rd`:
            # the RAM's output in the cycle a read lands, the held copy otherwise.
            landed = Signal(name=f"landed{port}")
            held = Signal(config.word_bits, name=f"held{port}")
            with m.If(self.en):
                m.d.sync += landed.eq(op == MemOpcode.RD)
            latch = Mux(landed, read.data, held)
            with m.If(self.en):
                m.d.sync += held.eq(latch)
            m.d.comb += [
                read.addr.eq(self.m_address[port]),
                read.en.eq(self.en),
                write.addr.eq(self.m_address[port]),
                write.data.eq(data_in),
                write.en.eq(self.en & (op == MemOpcode.WR) & ~self.kill),
                self.latch[port].eq(latch),
            ]
        return m

    def _ecp5_blocks(self, m):
        """The buffer as DP16KD blocks in their 2048 x 9 mode, one per byte of the word, both
        ports used (Yosys maps a memory with two read and two write ports to flip-flops: it
        cannot tell that the two ports never read a word the other writes in that cycle,
        which the block leaves undefined and the NVE's rules forbid). Returns one
        ``(read, write)`` pair of port-like objects per port."""
        class _Port:
            def __init__(self, name, width, address_bits):
                self.addr = Signal(address_bits, name=f"{name}_addr")
                self.data = Signal(width, name=f"{name}_data")
                self.en = Signal(name=f"{name}_en")

        bits, blocks = self._config.addr_bits, self._config.word_bits // 8
        ports = [(_Port(f"read{p}", self._config.word_bits, bits),
                  _Port(f"write{p}", self._config.word_bits, bits)) for p in range(2)]
        for k in range(blocks):
            pins = {}
            for p, name in ((0, "A"), (1, "B")):
                read, write = ports[p]
                port, connect = dp16kd_port(
                    name, width=9, address=read.addr, data_in=write.data[8 * k:8 * k + 8],
                    data_out=read.data[8 * k:8 * k + 8], clock_enable=read.en,
                    write_enable=write.en)
                pins[name] = port
                m.d.comb += connect
            m.submodules[f"block{k}"] = dp16kd(width=9, port_a=pins["A"], port_b=pins["B"])
        return ports
