"""Reads in flight and their error responses, for the list sequencer and the datapaths.

A descriptor is complete, and a command's loads are over, only when every read request
issued has completed (the DMA reports one completion per request, possibly before the last
beats have left its register slices); an error response to any of them is remembered until the
sequencer clears it (when a list starts, and when a failing descriptor ends one).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ReadTracker"]


class ReadTracker(wiring.Component):
    """Counts read requests in flight and keeps a sticky error flag.

    Parameters
    ----------
    depth : int
        Most requests in flight at once (the counter's range).

    Members
    -------
    issued, done : ``In(1)``
        A request is issued / completes this cycle.
    error : ``In(1)``
        The completing request got an error response.
    clear : ``In(1)``
        Forget the error (wins over an error in the same cycle).
    idle : ``Out(1)``
        No request is in flight.
    failed : ``Out(1)``
        An error response since the last ``clear``.
    """

    def __init__(self, *, depth=7):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, not {depth!r}")
        self._depth = depth
        super().__init__({
            "issued": In(1),
            "done": In(1),
            "error": In(1),
            "clear": In(1),
            "idle": Out(1),
            "failed": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        pending = Signal(range(self._depth + 1))
        m.d.sync += pending.eq(pending + self.issued - self.done)
        m.d.comb += self.idle.eq(pending == 0)
        with m.If(self.error):
            m.d.sync += self.failed.eq(1)
        with m.If(self.clear):
            m.d.sync += self.failed.eq(0)
        return m
