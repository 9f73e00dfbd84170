"""Clock-domain crossings of an accelerator's bus ports: the accelerator in a clock domain of its
own (``SocConfig.accel_clock_hz``), the processor, interconnect and memory in ``sync``.

::

    accelerator.bus (AXI4 manager, accel) -> AxiManagerCrossing -> interconnect (sync)
        AW, W, AR: accel -> sync          B, R: sync -> accel
    processor bridge (AXI4-Lite manager, sync) -> AxiLiteCrossing -> accelerator.csr (accel)
        AW, W, AR: sync -> accel          B, R: accel -> sync
    accelerator.irq (a level) -> two-flip-flop synchroniser -> sync

Every channel is one :class:`amaranth.lib.fifo.AsyncFIFO` (Gray-coded pointers, two-stage
synchronisers) holding the channel's payload: the sender's ``valid``/``ready`` become the FIFO's
``w_en``/``w_rdy``, the receiver's its ``r_rdy``/``r_en``. A channel's beats keep their order,
and AXI's ordering rules hold per channel, so the crossing is transparent to both sides but for
latency (about three cycles of the receiving clock per channel). ``valid`` never waits for
``ready`` on either side (``r_rdy`` depends on the FIFO's pointers only).

Both domains must be reset together (a board's PLL lock, synchronised into each): a FIFO is
emptied by its write domain's reset.

The interrupt is a level (``CTRL.irq_enable & (STATUS.done | STATUS.error)``): the processor
clears it by a register write. The write response and the cleared level leave the accelerator
on the same edge and each crosses through one ``accel`` register and two ``sync`` flip-flops,
but the two synchronisers resolve independently: the interrupt may still read high for about
one ``sync`` cycle after the write response has arrived. Firmware that returns from its
handler at once must therefore tolerate one spurious entry (it finds ``STATUS`` clear); the
firmware here polls ``mip`` and makes further register accesses before it waits again.

Ref: Clifford E. Cummings, "Simulation and Synthesis Techniques for Asynchronous FIFO Design",
SNUG 2002; AMBA AXI and ACE Protocol Specification (ARM IHI 0022), A3.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from ..axi import AXI4LiteSignature, AXI4Signature

__all__ = ["AxiLiteCrossing", "AxiManagerCrossing", "IrqCrossing"]

#: AXI4 channels: (valid/ready prefix, payload member suffixes, direction: True = manager to
#: subordinate).
_AXI4_CHANNELS = (
    ("aw", ("awid", "awaddr", "awlen", "awsize", "awburst", "awcache", "awprot"), True),
    ("w", ("wdata", "wstrb", "wlast"), True),
    ("ar", ("arid", "araddr", "arlen", "arsize", "arburst", "arcache", "arprot"), True),
    ("b", ("bid", "bresp"), False),
    ("r", ("rid", "rdata", "rresp", "rlast"), False),
)
_AXI4_LITE_CHANNELS = (
    ("aw", ("awaddr", "awprot"), True),
    ("w", ("wdata", "wstrb"), True),
    ("ar", ("araddr", "arprot"), True),
    ("b", ("bresp",), False),
    ("r", ("rdata", "rresp"), False),
)
#: FIFO depth of each channel, entries: the data channels deep enough to stream a burst at the
#: slower side's full rate across the synchronisers' round trip.
_DEPTHS = {"aw": 4, "w": 8, "ar": 4, "b": 4, "r": 8}


def _cross(m, channels, manager, subordinate, manager_domain, subordinate_domain, depths):
    """One AsyncFIFO per channel between the ``manager`` interface (in ``manager_domain``) and
    the ``subordinate`` interface (``subordinate_domain``)."""
    for prefix, fields, forward in channels:
        source, sink = (manager, subordinate) if forward else (subordinate, manager)
        w_domain, r_domain = ((manager_domain, subordinate_domain) if forward
                              else (subordinate_domain, manager_domain))
        payload = Cat(getattr(source, name) for name in fields)
        fifo = AsyncFIFO(width=len(payload), depth=depths[prefix], w_domain=w_domain,
                         r_domain=r_domain)
        m.submodules[f"{prefix}_fifo"] = fifo
        m.d.comb += [
            fifo.w_data.eq(payload),
            fifo.w_en.eq(getattr(source, f"{prefix}valid")),
            getattr(source, f"{prefix}ready").eq(fifo.w_rdy),
            Cat(getattr(sink, name) for name in fields).eq(fifo.r_data),
            getattr(sink, f"{prefix}valid").eq(fifo.r_rdy),
            fifo.r_en.eq(getattr(sink, f"{prefix}ready")),
        ]


class AxiManagerCrossing(wiring.Component):
    """An AXI4 manager port crossing from ``manager_domain`` (where the manager runs) to
    ``subordinate_domain`` (see the module docstring).

    Parameters
    ----------
    signature : hdl.axi.AXI4Signature
        The port's widths.
    manager_domain, subordinate_domain : str
        The clock domains of the two sides.

    Members
    -------
    manager : ``In(signature)``
        For the manager (in ``manager_domain``).
    subordinate : ``Out(signature)``
        To the subordinate (in ``subordinate_domain``).
    """

    def __init__(self, signature, *, manager_domain="accel", subordinate_domain="sync",
                 depths=None):
        if not isinstance(signature, AXI4Signature):
            raise TypeError(f"signature must be an AXI4Signature, not {signature!r}")
        self._domains = (manager_domain, subordinate_domain)
        self._depths = {**_DEPTHS, **(depths or {})}
        super().__init__({"manager": In(signature), "subordinate": Out(signature)})

    def elaborate(self, platform):
        m = Module()
        _cross(m, _AXI4_CHANNELS, self.manager, self.subordinate, *self._domains, self._depths)
        return m


class AxiLiteCrossing(wiring.Component):
    """An AXI4-Lite port crossing from the manager's ``manager_domain`` to the subordinate's
    ``subordinate_domain`` (the accelerator's registers: ``sync`` to ``accel``).

    Members
    -------
    manager : ``In(signature)``, subordinate : ``Out(signature)``
        As :class:`AxiManagerCrossing` has them.
    """

    def __init__(self, signature, *, manager_domain="sync", subordinate_domain="accel"):
        if not isinstance(signature, AXI4LiteSignature):
            raise TypeError(f"signature must be an AXI4LiteSignature, not {signature!r}")
        self._domains = (manager_domain, subordinate_domain)
        # one register access at a time (the processor's bridge): two entries suffice
        self._depths = dict.fromkeys(_DEPTHS, 2)
        super().__init__({"manager": In(signature), "subordinate": Out(signature)})

    def elaborate(self, platform):
        m = Module()
        _cross(m, _AXI4_LITE_CHANNELS, self.manager, self.subordinate, *self._domains,
               self._depths)
        return m


class IrqCrossing(wiring.Component):
    """A level-sensitive interrupt from ``from_domain`` into ``to_domain``: registered in
    ``from_domain`` (the accelerator's line is a combination of registers, which may glitch),
    then two flip-flops of ``to_domain`` (reset value 0).

    Members
    -------
    i : ``In(1)``
        In ``from_domain``: a level, not a pulse.
    o : ``Out(1)``
        In ``to_domain``: ``i`` one cycle of ``from_domain`` and two of ``to_domain`` later.
    """

    def __init__(self, *, from_domain="accel", to_domain="sync"):
        self._domains = (from_domain, to_domain)
        super().__init__({"i": In(1), "o": Out(1)})

    def elaborate(self, platform):
        m = Module()
        from_domain, to_domain = self._domains
        level = Signal()
        m.d[from_domain] += level.eq(self.i)
        m.submodules.sync = FFSynchronizer(level, self.o, o_domain=to_domain, stages=2)
        return m
