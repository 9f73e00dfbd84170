"""AXI4 and AXI4-Lite interface signatures (AMBA AXI and ACE specification, IHI 0022).

Members are flat and named as the specification's signals without their leading ``A``
(``awaddr``, ``wdata``, ``rresp`` ...), so a port ``mem`` of a component appears in Verilog
as ``mem__awaddr`` and cocotbext-axi binds it with
``AxiBus.from_prefix(dut, "mem", bus_separator="__")``. Directions are those of the manager
(master); a subordinate uses ``In(signature)``, which flips them.

Only what Tessera's cores use is modelled: incrementing bursts, no locks, no QoS or regions,
``*prot`` and ``*cache`` tied by the manager.
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hls_ref.dma import BOUNDARY_BYTES

from .params import check_int

__all__ = [
    "BOUNDARY_BYTES",
    "BURST_INCR",
    "MAX_BURST_BEATS",
    "RESP_DECERR",
    "RESP_OKAY",
    "RESP_SLVERR",
    "AXI4LiteSignature",
    "AXI4Signature",
]

#: ``xRESP`` values.
RESP_OKAY, RESP_EXOKAY, RESP_SLVERR, RESP_DECERR = 0, 1, 2, 3
#: ``xBURST`` value of an incrementing burst.
BURST_INCR = 1
#: Longest incrementing burst, in beats.
MAX_BURST_BEATS = 256


class AXI4Signature(wiring.Signature):
    """An AXI4 manager port: five channels, incrementing bursts.

    Parameters
    ----------
    addr_width : int
        Byte-address width, in bits.
    data_width : int
        Data bus width, in bits (a power of two, 8 to 1024).
    id_width : int
        Transaction ID width, in bits.
    """

    def __init__(self, *, addr_width=32, data_width=64, id_width=1):
        self._addr_width = check_int("addr_width", addr_width, minimum=12, maximum=64)
        check_int("data_width", data_width, minimum=8, maximum=1024)
        if data_width & (data_width - 1):
            raise ValueError(f"data_width must be a power of two, not {data_width}")
        self._data_width = data_width
        self._id_width = check_int("id_width", id_width, minimum=1, maximum=32)
        members = {}
        for ch in ("aw", "ar"):
            members.update({
                f"{ch}id": Out(id_width), f"{ch}addr": Out(addr_width), f"{ch}len": Out(8),
                f"{ch}size": Out(3), f"{ch}burst": Out(2), f"{ch}cache": Out(4),
                f"{ch}prot": Out(3), f"{ch}valid": Out(1), f"{ch}ready": In(1),
            })
        members.update({
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wlast": Out(1),
            "wvalid": Out(1), "wready": In(1),
            "bid": In(id_width), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "rid": In(id_width), "rdata": In(data_width), "rresp": In(2), "rlast": In(1),
            "rvalid": In(1), "rready": Out(1),
        })
        super().__init__(members)

    @property
    def addr_width(self):
        return self._addr_width

    @property
    def data_width(self):
        return self._data_width

    @property
    def id_width(self):
        return self._id_width

    def __eq__(self, other):
        return (type(other) is type(self) and other.addr_width == self.addr_width
                and other.data_width == self.data_width and other.id_width == self.id_width)

    def __hash__(self):
        return hash((type(self), self._addr_width, self._data_width, self._id_width))

    def __repr__(self):
        return (f"AXI4Signature(addr_width={self._addr_width}, "
                f"data_width={self._data_width}, id_width={self._id_width})")


class AXI4LiteSignature(wiring.Signature):
    """An AXI4-Lite manager port (a subordinate register bank uses ``In(...)``).

    Parameters
    ----------
    addr_width : int
        Byte-address width, in bits.
    data_width : int
        32 or 64.
    """

    def __init__(self, *, addr_width=12, data_width=32):
        self._addr_width = check_int("addr_width", addr_width, minimum=2, maximum=64)
        if data_width not in (32, 64):
            raise ValueError(f"data_width must be 32 or 64, not {data_width!r}")
        self._data_width = data_width
        super().__init__({
            "awaddr": Out(addr_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1),
            "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
            "rdata": In(data_width), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
        })

    @property
    def addr_width(self):
        return self._addr_width

    @property
    def data_width(self):
        return self._data_width

    def __eq__(self, other):
        return (type(other) is type(self) and other.addr_width == self.addr_width
                and other.data_width == self.data_width)

    def __hash__(self):
        return hash((type(self), self._addr_width, self._data_width))

    def __repr__(self):
        return (f"AXI4LiteSignature(addr_width={self._addr_width}, "
                f"data_width={self._data_width})")
