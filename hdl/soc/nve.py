"""The NVE as a peripheral of the SoC (``SocConfig.nve``): one Wishbone window at ``NVE_BASE``
(:mod:`hls_ref.soc_map`).

::

    window + 0x0000: Wishbone->AXI4-Lite -> the NVE's register port (registers, LUT)
    window + 0x1000: the stream port (NVE_PORT) -> the NVE's input stream
                                                <- the NVE's output stream

The processor drives the NVE through registers alone: the settings, ``CTRL`` and the LUT as
``docs/nve.md`` describes them, the instruction and data words through the stream port's
``IN_LO`` / ``IN_HI``, the output words through ``OUT_LO`` / ``OUT_HI`` (``firmware/nve.c``).
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, connect, flipped
from amaranth.utils import exact_log2

from hls_ref.nve.isa import NveConfig
from hls_ref.soc_map import NVE_PORT, NVE_PORT_OFFSET, NVE_WINDOW, reg

from ..nve.core import output_layout
from ..nve.host import ADDR_WIDTH
from ..nve.top import Nve
from .bridges import WishboneToAxiLite
from .vendor import amaranth_soc

__all__ = ["NvePeripheral", "NveStreamPort"]

wishbone = amaranth_soc.wishbone
_FEATURES = ("err",)


def _port(addr_width):
    return In(wishbone.Signature(addr_width=addr_width, data_width=32, granularity=8,
                                 features=_FEATURES))


class NveStreamPort(wiring.Component):
    """The registers of :data:`hls_ref.soc_map.NVE_PORT` between the processor and the NVE's
    streams. Every access is acknowledged the cycle after it starts and moves a whole word (byte
    selects are not looked at); an unmapped offset reads 0 and writes nothing.

    Parameters
    ----------
    word_bits : int
        The NVE's word (64: two 32-bit halves).

    Members
    -------
    wb : ``In(wishbone.Signature(addr_width=10, data_width=32, granularity=8,
    features={"err"}))``
    i_stream : ``Out(stream.Signature(word_bits))``
        To the NVE's input: one word per ``IN_HI`` write (held until the NVE takes it).
    o_stream : ``In(stream.Signature(StructLayout({"data": word_bits, "last": 1})))``
        From the NVE's output: a word leaves when ``OUT_HI`` is read.
    """

    def __init__(self, *, word_bits=64):
        if word_bits != 64:
            raise ValueError(f"the stream port moves 64-bit words, not {word_bits}-bit ones")
        addr_width = exact_log2(NVE_PORT_OFFSET)
        super().__init__({
            "wb": _port(addr_width - 2),
            "i_stream": Out(stream.Signature(word_bits)),
            "o_stream": In(stream.Signature(output_layout(NveConfig(word_bits=word_bits)))),
        })
        self.wb.memory_map = amaranth_soc.memory.MemoryMap(addr_width=addr_width, data_width=8)
        self.wb.memory_map.add_resource(self, name=("stream_port",), size=NVE_PORT_OFFSET)
        self.wb.memory_map.freeze()

    def elaborate(self, platform):
        m = Module()
        wb, i_stream, o_stream = self.wb, self.i_stream, self.o_stream
        word = {r.name: r.offset >> 2 for r in NVE_PORT}
        access = wb.cyc & wb.stb & ~wb.ack
        m.d.sync += wb.ack.eq(access)
        at = {name: access & (wb.adr == offset) for name, offset in word.items()}

        low = Signal(32)
        with m.If(i_stream.valid & i_stream.ready):
            m.d.sync += i_stream.valid.eq(0)
        with m.If(wb.we):
            with m.If(at["IN_LO"]):
                m.d.sync += low.eq(wb.dat_w)
            # (a word written while the register is full is dropped: STATUS.in_ready says)
            with m.If(at["IN_HI"] & ~i_stream.valid):
                m.d.sync += [i_stream.payload.eq(Cat(low, wb.dat_w)), i_stream.valid.eq(1)]
            with m.If(at["CLEAR"] & wb.dat_w[0]):
                m.d.sync += i_stream.valid.eq(0)

        data = o_stream.payload.data
        status = Cat(~i_stream.valid, o_stream.valid, o_stream.valid & o_stream.payload.last)
        assert len(status) == reg(NVE_PORT, "STATUS").width
        m.d.comb += o_stream.ready.eq(at["OUT_HI"] & ~wb.we)
        with m.If(~wb.we):
            with m.Switch(wb.adr):
                with m.Case(word["OUT_LO"]):
                    m.d.sync += wb.dat_r.eq(_when(o_stream.valid, data[:32]))
                with m.Case(word["OUT_HI"]):
                    m.d.sync += wb.dat_r.eq(_when(o_stream.valid, data[32:]))
                with m.Case(word["STATUS"]):
                    m.d.sync += wb.dat_r.eq(status)
                with m.Default():
                    m.d.sync += wb.dat_r.eq(0)
        return m


def _when(valid, value):
    """``value`` where ``valid``, else 0."""
    return value & valid.replicate(len(value))


class NvePeripheral(wiring.Component):
    """The NVE and its two ports behind one Wishbone window of ``NVE_WINDOW`` bytes (see the
    module docstring).

    Parameters
    ----------
    config : NveConfig
        The NVE's sizes.

    Members
    -------
    wb : ``In(wishbone.Signature(addr_width=11, data_width=32, granularity=8,
    features={"err"}))``
        The window (a register write the NVE refuses, ``SLVERR``, ends with ``err``).
    irq : ``Out(1)``
        The NVE's ``STATUS.done``.
    """

    def __init__(self, config):
        if not isinstance(config, NveConfig):
            raise TypeError(f"config must be an NveConfig, not {config!r}")
        self._config = config
        self._bridge = WishboneToAxiLite(addr_width=ADDR_WIDTH)
        self._port = NveStreamPort(word_bits=config.word_bits)
        self._decoder = wishbone.Decoder(addr_width=exact_log2(NVE_WINDOW) - 2, data_width=32,
                                         granularity=8, features=_FEATURES)
        self._decoder.add(self._bridge.wb, name="registers", addr=0)
        self._decoder.add(self._port.wb, name="stream_port", addr=NVE_PORT_OFFSET)
        super().__init__({"wb": _port(exact_log2(NVE_WINDOW) - 2), "irq": Out(1)})
        self.wb.memory_map = self._decoder.bus.memory_map

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = self._decoder
        m.submodules.bridge = bridge = self._bridge
        m.submodules.port = port = self._port
        m.submodules.nve = nve = Nve(config=self._config)
        connect(m, flipped(self.wb), decoder.bus)
        connect(m, bridge.axil, nve.bus)
        connect(m, port.i_stream, nve.i_stream)
        connect(m, nve.o_stream, port.o_stream)
        m.d.comb += self.irq.eq(nve.irq)
        return m
