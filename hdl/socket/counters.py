"""The performance counters of a list: cycles busy, MAC cycles, bytes read and written.

All four are 64 bits, cleared when a list starts and counting while it runs. A read beat counts
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
        A list starts: every counter becomes 0.
    running : ``In(1)``
        A list runs: the counters count.
    read_beat : ``In(1)``
        A read beat is accepted this cycle (8 bytes).
    write_beat : ``In(1)``, ``write_strobes`` : ``In(8)``
        A write beat is accepted this cycle, with these byte strobes.
    mac : ``In(1)``
        The PE array issues useful MACs this cycle.
    cycles, mac_cycles, bytes_read, bytes_written : ``Out(64)``
    """

    def __init__(self):
        super().__init__({
            "clear": In(1),
            "running": In(1),
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
        counters = (self.cycles, self.mac_cycles, self.bytes_read, self.bytes_written)
        with m.If(self.clear):
            m.d.sync += [c.eq(0) for c in counters]
        with m.Elif(self.running):
            m.d.sync += [
                self.cycles.eq(self.cycles + 1),
                self.mac_cycles.eq(self.mac_cycles + self.mac),
                self.bytes_read.eq(self.bytes_read + Mux(read_beat, BEAT_BYTES, 0)),
                self.bytes_written.eq(self.bytes_written + written),
            ]
        return m
