"""On-chip memories of the SoC: the firmware RAM (one port for instruction fetch, one for
data) and the boot ROM."""

from amaranth.hdl import Module, Signal
from amaranth.lib import memory, wiring
from amaranth.utils import exact_log2

from ..params import check_int
from .vendor import amaranth_soc

__all__ = ["FirmwareRam", "name_ram_buses", "ram_buses"]


def ram_buses(size):
    """The members of a firmware RAM of ``size`` bytes: ``ibus`` and ``dbus``, 32-bit Wishbone
    with byte granularity (word addresses)."""
    sig = wishbone.Signature(addr_width=exact_log2(size) - 2, data_width=32, granularity=8)
    return {"ibus": wiring.In(sig), "dbus": wiring.In(sig)}


def name_ram_buses(ram, size):
    """Give both buses of ``ram`` (a component with :func:`ram_buses`' members) the memory map
    of one ``size``-byte resource named ``ram``."""
    for bus in (ram.ibus, ram.dbus):
        bus.memory_map = amaranth_soc.memory.MemoryMap(addr_width=exact_log2(size), data_width=8)
        bus.memory_map.add_resource(ram, name=("ram",), size=size)
        bus.memory_map.freeze()

wishbone = amaranth_soc.wishbone


class FirmwareRam(wiring.Component):
    """A 32-bit RAM with two Wishbone ports: ``ibus`` reads (instruction fetch), ``dbus``
    reads and writes bytes. Each access is acknowledged one cycle after it starts.

    Parameters
    ----------
    size : int
        Bytes (a power of two).
    init : sequence of int
        Initial 32-bit words.

    Members
    -------
    ibus, dbus : ``In(wishbone.Signature(addr_width=log2(size) - 2, data_width=32,
    granularity=8))``
    """

    def __init__(self, *, size, init=()):
        check_int("size", size, minimum=8)
        self._size = size
        self._init = tuple(init)
        super().__init__(ram_buses(size))
        name_ram_buses(self, size)

    @property
    def size(self):
        return self._size

    def elaborate(self, platform):
        m = Module()
        m.submodules.storage = storage = memory.Memory(shape=32, depth=self._size // 4,
                                                       init=self._init)
        fetch = storage.read_port()
        load = storage.read_port()
        store = storage.write_port(granularity=8)
        for bus, port in ((self.ibus, fetch), (self.dbus, load)):
            ack = Signal(name=f"{'i' if port is fetch else 'd'}_ack")
            m.d.sync += ack.eq(bus.cyc & bus.stb & ~ack)
            m.d.comb += [port.addr.eq(bus.adr), bus.dat_r.eq(port.data), bus.ack.eq(ack)]
        m.d.comb += [
            store.addr.eq(self.dbus.adr), store.data.eq(self.dbus.dat_w),
            store.en.eq(self.dbus.sel & (self.dbus.cyc & self.dbus.stb & self.dbus.we
                                         & ~self.dbus.ack).replicate(4)),
        ]
        return m
