"""An AXI4 interconnect: several managers share one subordinate (the external memory).

Read and write address channels are each arbitrated round robin, one request per cycle at
full rate: the chosen request is registered onto the subordinate port, with the manager's index
added above its ID (``sub.arid = {index, arid}``), so responses go back by their ID whatever
order the subordinate answers in. Write data follow the order in which write requests were
granted (AXI4 has no write-data ID): each grant queues the manager's index, and the data
multiplexer passes that manager's beats up to ``wlast``. A grant queues its index when the
request is placed on the subordinate port, before the subordinate accepts it, so a subordinate
that waits for write data before accepting the address cannot deadlock. At most ``depth``
granted write bursts wait for their data; past that, write requests wait.

Ref: AMBA AXI and ACE Protocol Specification (ARM IHI 0022), A3 (handshakes, dependencies),
A5 (transaction IDs, ordering).
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..axi import AXI4Signature
from ..params import check_int

__all__ = ["AxiInterconnect"]

_AR = ("addr", "len", "size", "burst", "cache", "prot")


def _round_robin(m, valids, last, name):
    """The index of the first set bit of ``valids`` after ``last`` (wrapping) and whether
    there is one."""
    count = len(valids)
    pick = Signal(range(max(count, 2)), name=f"{name}_pick")
    any_valid = Signal(name=f"{name}_any")
    m.d.comb += any_valid.eq(Cat(valids).any())
    with m.Switch(last):
        for previous in range(count):
            with m.Case(previous):
                # the last assignment wins: go through the candidates from the lowest
                # priority (``previous`` itself) to the highest (``previous + 1``)
                for step in reversed(range(1, count + 1)):
                    index = (previous + step) % count
                    with m.If(valids[index]):
                        m.d.comb += pick.eq(index)
    return pick, any_valid


class AxiInterconnect(wiring.Component):
    """``managers`` AXI4 managers onto one AXI4 subordinate (see the module docstring).

    Parameters
    ----------
    managers : int
        Number of manager ports (1 to 16).
    addr_width, data_width : int
        Address and data widths, bits (the same on every port).
    id_width : int
        ID width of the manager ports; the subordinate port's is wider by
        ``ceil_log2(managers)`` bits (at least one).
    depth : int
        Granted write bursts that may wait for their data.

    Members
    -------
    managers : ``In(AXI4Signature(...)).array(managers)``
        Manager ports (flattened as ``managers__<k>__<signal>``).
    sub : ``Out(AXI4Signature(...))``
        The subordinate port.
    """

    def __init__(self, *, managers, addr_width=32, data_width=64, id_width=1, depth=4):
        self._count = check_int("managers", managers, minimum=1, maximum=16)
        self._depth = check_int("depth", depth, minimum=1, maximum=64)
        self._index_bits = max(1, ceil_log2(managers))
        self._id_width = id_width
        manager = AXI4Signature(addr_width=addr_width, data_width=data_width, id_width=id_width)
        sub = self.sub_signature(managers=managers, addr_width=addr_width,
                                 data_width=data_width, id_width=id_width)
        super().__init__({"managers": In(manager).array(managers), "sub": Out(sub)})

    @staticmethod
    def sub_signature(*, managers, addr_width=32, data_width=64, id_width=1):
        """The subordinate port's signature for these parameters (the managers' ID widened
        by their index's bits), without building an interconnect."""
        return AXI4Signature(addr_width=addr_width, data_width=data_width,
                             id_width=id_width + max(1, ceil_log2(managers)))

    @property
    def depth(self):
        return self._depth

    def _address_channel(self, m, ch, on_grant=None, can_grant=1):
        """Arbitrate channel ``ch`` ("ar" or "aw") into a register on the subordinate port;
        returns (granted strobe, granted index)."""
        managers, sub = self.managers, self.sub
        valids = [getattr(mgr, f"{ch}valid") for mgr in managers]
        last = Signal(range(max(self._count, 2)), name=f"{ch}_last")
        pick, any_valid = _round_robin(m, valids, last, ch)
        sub_valid, sub_ready = getattr(sub, f"{ch}valid"), getattr(sub, f"{ch}ready")
        grant = Signal(name=f"{ch}_grant")
        free = ~sub_valid | sub_ready
        m.d.comb += grant.eq(free & any_valid & can_grant)
        with m.If(free):
            m.d.sync += sub_valid.eq(grant)
        with m.If(grant):
            m.d.sync += last.eq(pick)
            with m.Switch(pick):
                for k, mgr in enumerate(managers):
                    with m.Case(k):
                        m.d.comb += getattr(mgr, f"{ch}ready").eq(1)
                        m.d.sync += getattr(sub, f"{ch}id").eq(
                            Cat(getattr(mgr, f"{ch}id"), Const(k, self._index_bits)))
                        for field in _AR:
                            m.d.sync += getattr(sub, f"{ch}{field}").eq(
                                getattr(mgr, f"{ch}{field}"))
        return grant, pick

    def _responses(self, m, ch, fields):
        """Route channel ``ch`` ("r" or "b") back to the manager its ID names."""
        managers, sub = self.managers, self.sub
        sub_id = getattr(sub, f"{ch}id")
        index = sub_id[self._id_width:]
        ready = 0
        for k, mgr in enumerate(managers):
            mine = index == k
            m.d.comb += [
                getattr(mgr, f"{ch}valid").eq(getattr(sub, f"{ch}valid") & mine),
                getattr(mgr, f"{ch}id").eq(sub_id[:self._id_width]),
            ]
            for field in fields:
                m.d.comb += getattr(mgr, f"{ch}{field}").eq(getattr(sub, f"{ch}{field}"))
            ready = ready | (getattr(mgr, f"{ch}ready") & mine)
        # ready depends on valid (allowed): an ID is meaningful only while valid
        m.d.comb += getattr(sub, f"{ch}ready").eq(getattr(sub, f"{ch}valid") & ready)

    def elaborate(self, platform):
        m = Module()
        managers, sub = self.managers, self.sub

        self._address_channel(m, "ar")
        self._responses(m, "r", ("data", "resp", "last"))

        # write data order: the manager index of each granted write burst
        m.submodules.w_order = order = SyncFIFO(width=self._index_bits, depth=self._depth)
        aw_grant, aw_pick = self._address_channel(m, "aw", can_grant=order.w_rdy)
        m.d.comb += [order.w_en.eq(aw_grant), order.w_data.eq(aw_pick)]
        with m.If(order.r_rdy):
            with m.Switch(order.r_data):
                for k, mgr in enumerate(managers):
                    with m.Case(k):
                        m.d.comb += [
                            sub.wvalid.eq(mgr.wvalid),
                            sub.wdata.eq(mgr.wdata),
                            sub.wstrb.eq(mgr.wstrb),
                            sub.wlast.eq(mgr.wlast),
                            mgr.wready.eq(sub.wready),
                        ]
        m.d.comb += order.r_en.eq(sub.wvalid & sub.wready & sub.wlast)
        self._responses(m, "b", ("resp",))
        return m
