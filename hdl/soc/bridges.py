"""Bridges from the processor's Wishbone data bus to AXI: external memory (AXI4, 64-bit) and
the accelerators' registers (AXI4-Lite, 32-bit).

Both serve one Wishbone access at a time (classic cycles: the processor waits for each), so
they need no buffering: a write presents its address and data together and waits for the
write response, a read presents its address and waits for the data. An AXI error response
(SLVERR, DECERR) ends the access with Wishbone ``err`` (the processor takes a bus-error
exception) instead of ``ack``.

Ref: AMBA AXI and ACE Protocol Specification (ARM IHI 0022), A3; Wishbone B4, 3.1 and 3.2.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..axi import BURST_INCR, RESP_OKAY, AXI4LiteSignature, AXI4Signature
from ..params import check_int
from .vendor import amaranth_soc

__all__ = ["WishboneToAxi", "WishboneToAxiLite"]

wishbone = amaranth_soc.wishbone
_WORD_BYTES = 4


def _wishbone_port(addr_width):
    """A 32-bit, byte-granular Wishbone subordinate port with ``err``, as Minerva drives it."""
    return In(wishbone.Signature(addr_width=addr_width, data_width=32, granularity=8,
                                 features=("err",)))


def _transfer(m, wb, axi, read_data):
    """One Wishbone access as one AXI transfer on ``axi`` (AXI4 or AXI4-Lite names): a write
    offers its address and data at once and waits for the response, a read its address, then
    waits for the data (``read_data``, the word of the read beat)."""
    address_sent = Signal()
    data_sent = Signal()
    with m.FSM():
        with m.State("Idle"):
            with m.If(wb.cyc & wb.stb):
                with m.If(wb.we):
                    m.d.sync += [address_sent.eq(0), data_sent.eq(0)]
                    m.next = "Write"
                with m.Else():
                    m.next = "Read-Address"
        with m.State("Write"):
            m.d.comb += [axi.awvalid.eq(~address_sent), axi.wvalid.eq(~data_sent)]
            with m.If(axi.awready):
                m.d.sync += address_sent.eq(1)
            with m.If(axi.wready):
                m.d.sync += data_sent.eq(1)
            with m.If((address_sent | axi.awready) & (data_sent | axi.wready)):
                m.next = "Write-Response"
        with m.State("Write-Response"):
            m.d.comb += axi.bready.eq(1)
            with m.If(axi.bvalid):
                m.d.comb += [wb.ack.eq(axi.bresp == RESP_OKAY), wb.err.eq(axi.bresp != RESP_OKAY)]
                m.next = "Idle"
        with m.State("Read-Address"):
            m.d.comb += axi.arvalid.eq(1)
            with m.If(axi.arready):
                m.next = "Read-Data"
        with m.State("Read-Data"):
            m.d.comb += [axi.rready.eq(1), wb.dat_r.eq(read_data)]
            with m.If(axi.rvalid):
                m.d.comb += [wb.ack.eq(axi.rresp == RESP_OKAY), wb.err.eq(axi.rresp != RESP_OKAY)]
                m.next = "Idle"


class WishboneToAxi(wiring.Component):
    """Processor accesses to external memory: each Wishbone access becomes a single-beat AXI4
    transfer of 4 bytes (``xSIZE`` 2) on a 64-bit bus, in the beat's half the address selects.

    Parameters
    ----------
    size : int
        Bytes of the window the Wishbone port covers (a power of two); Wishbone byte address
        ``a`` of the window is AXI address ``a``.
    id_width : int
        AXI ID width (every transfer uses ID 0).

    Members
    -------
    wb : ``In(wishbone.Signature(addr_width=log2(size) - 2, data_width=32, granularity=8,
    features={"err"}))``
    axi : ``Out(AXI4Signature(addr_width=32, data_width=64, id_width=id_width))``
    """

    def __init__(self, *, size, id_width=1):
        check_int("size", size, minimum=8, maximum=1 << 32)
        addr_width = exact_log2(size) - exact_log2(_WORD_BYTES)
        self._size = size
        super().__init__({
            "wb": _wishbone_port(addr_width),
            "axi": Out(AXI4Signature(addr_width=32, data_width=64, id_width=id_width)),
        })
        self.wb.memory_map = amaranth_soc.memory.MemoryMap(addr_width=exact_log2(size),
                                                           data_width=8)
        self.wb.memory_map.add_resource(self, name=("dram",), size=size)
        self.wb.memory_map.freeze()

    @property
    def size(self):
        return self._size

    def elaborate(self, platform):
        m = Module()
        wb, axi = self.wb, self.axi
        upper = Signal()                 # the word is the upper half of its 64-bit beat
        m.d.comb += [
            axi.awaddr.eq(Cat(Signal(2), wb.adr)), axi.araddr.eq(Cat(Signal(2), wb.adr)),
            axi.awlen.eq(0), axi.arlen.eq(0), axi.awsize.eq(2), axi.arsize.eq(2),
            axi.awburst.eq(BURST_INCR), axi.arburst.eq(BURST_INCR),
            axi.wdata.eq(Cat(wb.dat_w, wb.dat_w)), axi.wlast.eq(1),
            axi.wstrb.eq(Cat(wb.sel & ~wb.adr[0].replicate(4), wb.sel & wb.adr[0].replicate(4))),
            upper.eq(wb.adr[0]),
        ]
        _transfer(m, wb, axi, axi.rdata.word_select(upper, 32))
        return m


class WishboneToAxiLite(wiring.Component):
    """Processor accesses to an accelerator's registers: each Wishbone access becomes one
    AXI4-Lite transfer (32-bit registers; byte selects become write strobes).

    Parameters
    ----------
    addr_width : int
        Byte-address width of the AXI4-Lite port (the register window is ``2**addr_width``
        bytes).

    Members
    -------
    wb : ``In(wishbone.Signature(addr_width=addr_width - 2, data_width=32, granularity=8,
    features={"err"}))``
    axil : ``Out(AXI4LiteSignature(addr_width=addr_width, data_width=32))``
    """

    def __init__(self, *, addr_width):
        check_int("addr_width", addr_width, minimum=3, maximum=32)
        self._addr_width = addr_width
        super().__init__({
            "wb": _wishbone_port(addr_width - exact_log2(_WORD_BYTES)),
            "axil": Out(AXI4LiteSignature(addr_width=addr_width, data_width=32)),
        })
        self.wb.memory_map = amaranth_soc.memory.MemoryMap(addr_width=addr_width, data_width=8)
        self.wb.memory_map.add_resource(self, name=("registers",), size=1 << addr_width)
        self.wb.memory_map.freeze()

    @property
    def addr_width(self):
        return self._addr_width

    def elaborate(self, platform):
        m = Module()
        wb, axil = self.wb, self.axil
        m.d.comb += [
            axil.awaddr.eq(Cat(Signal(2), wb.adr)), axil.araddr.eq(Cat(Signal(2), wb.adr)),
            axil.wdata.eq(wb.dat_w), axil.wstrb.eq(wb.sel),
        ]
        _transfer(m, wb, axil, axil.rdata)
        return m
