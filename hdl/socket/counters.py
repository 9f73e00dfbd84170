"""The performance counters of a list: cycles busy, MAC cycles, bytes read and written.

All four are 64 bits, cleared when a list starts and counting while it runs. What the registers
show is their value taken at the list's end (``capture``): a list that runs does not change
them, so the processor reads one list's counters while the next one runs. A read beat counts
8 bytes; a write beat counts its strobed bytes. The write strobes are registered, then their
count, before it is added: the strobes come from the DMA writer's FIFO head through its burst
logic, and neither the count nor the 64-bit adder should follow that (or each other) in the
same cycle. The count therefore reaches its counter two cycles after its beat; a list's end is
later still.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..dma import BEAT_BYTES

__all__ = ["PerformanceCounters"]


class PerformanceCounters(wiring.Component):
    """The ``CYCLES``, ``MAC_CYCLES``, ``BYTES_READ`` and ``BYTES_WRITTEN`` counters.

    Members
    -------
    clear : ``In(1)``
        A list starts: every running count becomes 0.
    running : ``In(1)``
        A list runs: the running counts count.
    capture : ``In(1)``
        The list ends this cycle (``running`` still high): the outputs take the running
        counts, this cycle's included.
    read_beat : ``In(1)``
        A read beat is accepted this cycle (8 bytes).
    write_beat : ``In(1)``, ``write_strobes`` : ``In(8)``
        A write beat is accepted this cycle, with these byte strobes.
    mac : ``In(1)``
        The PE array issues useful MACs this cycle.
    cycles, mac_cycles, bytes_read, bytes_written : ``Out(64)``
        The counts of the last list that ended (cycles, cycles, bytes, bytes); 0 after reset.
    """

    def __init__(self):
        super().__init__({
            "clear": In(1),
            "running": In(1),
            "capture": In(1),
            "read_beat": In(1),
            "write_beat": In(1),
            "write_strobes": In(BEAT_BYTES),
            "mac": In(1),
            "cycles": Out(64),
            "mac_cycles": Out(64),
            "bytes_read": Out(64),
            "bytes_written": Out(64),
        })

    def elaborate(self, platform):
        m = Module()
        read_beat = Signal()
        write_beat = Signal()
        strobes = Signal.like(self.write_strobes)
        m.d.sync += [read_beat.eq(self.read_beat), write_beat.eq(self.write_beat),
                     strobes.eq(self.write_strobes)]
        written = Signal(4)
        m.d.sync += written.eq(Mux(write_beat, sum(strobes[k] for k in range(BEAT_BYTES)), 0))
        shown = (self.cycles, self.mac_cycles, self.bytes_read, self.bytes_written)
        counts = [Signal(64, name=f"{o.name}_running") for o in shown]
        steps = (1, self.mac, Mux(read_beat, BEAT_BYTES, 0), written)
        following = [Signal(64, name=f"{o.name}_next") for o in shown]
        for count, step, nxt in zip(counts, steps, following, strict=True):
            m.d.comb += nxt.eq(Mux(self.running, count + step, count))
        with m.If(self.clear):
            m.d.sync += [c.eq(0) for c in counts]
        with m.Else():
            m.d.sync += [c.eq(n) for c, n in zip(counts, following, strict=True)]
        with m.If(self.capture):
            m.d.sync += [o.eq(n) for o, n in zip(shown, following, strict=True)]
        return m
