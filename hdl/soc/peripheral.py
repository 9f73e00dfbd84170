"""Register banks of the SoC's own peripherals, built with ``amaranth_soc.csr`` from the
register tables of :mod:`hls_ref.soc_map` (one source for the RTL and the firmware's header)."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, connect, flipped
from amaranth.utils import ceil_log2

from .vendor import amaranth_soc

__all__ = ["CsrPeripheral"]

csr = amaranth_soc.csr
_ACTIONS = {"r": csr.action.R, "w": csr.action.W, "rw": csr.action.RW}


class CsrPeripheral(wiring.Component):
    """A peripheral whose registers are ``table`` (:class:`hls_ref.soc_map.Reg` entries), on an
    8-bit CSR bus (byte addresses: the Wishbone-to-CSR bridge splits each word access into
    bytes; a register wider than a byte is read atomically when its lowest byte is read, and
    written when its highest byte is).

    ``inits`` gives the reset values of read-write registers, by name.

    Subclasses add their own ports through ``members`` and wire the registers' field ports
    (``self.reg(name)``: ``r_data`` of readable fields, ``w_data``/``w_stb`` of writable ones,
    ``data`` of read-write ones) in :meth:`elaborate_registers`.
    """

    def __init__(self, table, members, *, inits=None):
        top = max(r.offset + (r.width + 7) // 8 for r in table)
        self._addr_width = max(2, ceil_log2(top))
        builder = csr.Builder(addr_width=self._addr_width, data_width=8)
        self._regs = {}
        for r in table:
            extra = {"init": inits[r.name]} if inits and r.name in inits else {}
            field = csr.Field(_ACTIONS[r.access], r.width, **extra)
            self._regs[r.name] = builder.add(r.name, csr.Register({"value": field},
                                                                  access=r.access),
                                             offset=r.offset)
        self._bridge = csr.Bridge(builder.as_memory_map())
        super().__init__({"bus": In(csr.Signature(addr_width=self._addr_width, data_width=8)),
                          **members})
        self.bus.memory_map = self._bridge.bus.memory_map

    def reg(self, name):
        """The field action of register ``name``."""
        return self._regs[name].f.value

    def elaborate_registers(self, m):
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        m.submodules.bridge = self._bridge
        connect(m, flipped(self.bus), self._bridge.bus)
        self.elaborate_registers(m)
        return m
