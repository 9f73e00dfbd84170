"""The accelerator: the socket (registers, list sequencer, DMA, counters) and its datapaths.

The host starts a descriptor list through the registers (``docs/accelerator.md``); the
accelerator then runs it without help. This top level only wires stream-connected parts:

* :class:`hdl.csr.CsrBank` -- the AXI4-Lite register bank of the register map;
* :class:`hdl.socket.sequencer.ListSequencer` -- fetches each descriptor, hands it to the
  datapath, ends the list with its status;
* :class:`hdl.dma.Dma` -- the AXI4 manager: the sequencer's descriptor fetches and the
  datapath's loads on its reader (the beats through a :class:`hdl.register_slice.RegisterSlice`,
  routed by tag), the datapath's stores on its writer;
* :class:`hdl.socket.reads.ReadTracker` -- reads in flight and error responses;
* :class:`hdl.socket.counters.PerformanceCounters`;
* the datapath (:class:`hdl.conv_datapath.ConvDatapath`), which implements
  :class:`hdl.socket.signature.DatapathSignature`.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.config import DEFAULT_CONFIG, AcceleratorConfig
from hls_ref.descriptor import DESCRIPTOR_BEATS, DESCRIPTOR_BYTES
from hls_ref.registers import register_map

from .axi import AXI4LiteSignature, AXI4Signature
from .conv_datapath import ConvDatapath
from .csr import DATA_WIDTH, CsrBank
from .dma import BEAT_BYTES, Dma
from .register_slice import RegisterSlice
from .socket.counters import PerformanceCounters
from .socket.reads import ReadTracker
from .socket.sequencer import ListSequencer
from .socket.signature import ADDR_WIDTH, TAG_DESC, TAG_WIDTH

__all__ = ["Accelerator", "accelerator"]


class Accelerator(wiring.Component):
    """The accelerator of one build (see the module docstring).

    Parameters
    ----------
    config : AcceleratorConfig
        The build: PEs, PLM banks, limits, precisions (``hls_ref.config``). The register
        map's constants and the hardware checks come from it.
    pe_stages : int
        Pipeline stages of the ST multipliers (4: the ECP5 timing needs every boundary, the
        DSP products registered once more in the fabric included).
    requant_stages : int or None
        Pipeline stages of the requantizer (its default if None).
    max_burst, max_outstanding : int
        DMA burst length (beats) and bursts in flight per direction.

    Members
    -------
    csr : ``In(AXI4LiteSignature(addr_width=12, data_width=32))``
        Registers (``hls_ref.registers``).
    bus : ``Out(AXI4Signature(addr_width=32, data_width=64))``
        External memory.
    irq : ``Out(1)``
        ``CTRL.irq_enable & (STATUS.done | STATUS.error)``.
    """

    def __init__(self, config=DEFAULT_CONFIG, *, pe_stages=4, requant_stages=None,
                 max_burst=16, max_outstanding=4):
        if not isinstance(config, AcceleratorConfig):
            raise TypeError(f"config must be an AcceleratorConfig, not {config!r}")
        # built here, so that a build the RTL cannot implement is refused at construction
        self._datapath = ConvDatapath(config, pe_stages=pe_stages,
                                      requant_stages=requant_stages)
        self._config = config
        self._max_burst = max_burst
        self._max_outstanding = max_outstanding
        self._regmap = register_map(config, "conv2d")
        super().__init__({
            "csr": In(AXI4LiteSignature(addr_width=self._regmap.addr_width,
                                        data_width=DATA_WIDTH)),
            "bus": Out(AXI4Signature(addr_width=ADDR_WIDTH, data_width=8 * BEAT_BYTES)),
            "irq": Out(1),
        })

    @property
    def config(self):
        return self._config

    @property
    def regmap(self):
        return self._regmap

    def elaborate(self, platform):
        m = Module()
        m.submodules.csr = csr = CsrBank(self._regmap)
        wiring.connect(m, wiring.flipped(self.csr), csr.bus)
        m.submodules.dma = dma = Dma(addr_width=ADDR_WIDTH, max_burst=self._max_burst,
                                     max_outstanding=self._max_outstanding,
                                     tag_width=TAG_WIDTH)
        wiring.connect(m, wiring.flipped(self.bus), dma.bus)
        m.submodules.sequencer = seq = ListSequencer()
        m.submodules.reads = reads = ReadTracker()
        m.submodules.counters = counters = PerformanceCounters()
        m.submodules.datapath = dp = self._datapath

        def port(reg, field):
            return csr.field_port(reg, field)

        # --- registers ------------------------------------------------------------------------
        m.d.comb += [
            seq.start.eq(port("CTRL", "start")),
            seq.desc_addr.eq(port("DESC_ADDR", "value")),
            seq.desc_count.eq(port("DESC_COUNT", "value")),
            port("STATUS", "busy").eq(seq.running),
            csr.set_port("STATUS", "done").eq(seq.done_set),
            csr.set_port("STATUS", "error").eq(seq.error_set),
            port("STATUS", "code").eq(seq.code),
            port("ERR_INDEX", "value").eq(seq.index),
            port("PROGRESS", "value").eq(seq.progress),
            port("TILES", "value").eq(seq.progress),
            self.irq.eq(port("CTRL", "irq_enable")
                        & (port("STATUS", "done") | port("STATUS", "error"))),
        ]
        for name, counter in (("CYCLES", counters.cycles), ("MAC_CYCLES", counters.mac_cycles),
                              ("BYTES_READ", counters.bytes_read),
                              ("BYTES_WRITTEN", counters.bytes_written)):
            m.d.comb += [port(f"{name}_LO", "value").eq(counter[:32]),
                         port(f"{name}_HI", "value").eq(counter[32:])]
        bus = dma.bus
        m.d.comb += [
            counters.clear.eq(seq.started),
            counters.running.eq(seq.running),
            counters.read_beat.eq(dma.rd_data.valid & dma.rd_data.ready),
            counters.write_beat.eq(bus.wvalid & bus.wready),
            counters.write_strobes.eq(bus.wstrb),
            counters.mac.eq(dp.mac),
        ]

        # --- reads: the sequencer's fetches and the datapath's loads --------------------------
        # (never at the same time: a descriptor is fetched only while no load is in flight)
        fetch = seq.fetch
        fetch_request = Signal.like(dma.rd_req.payload)
        m.d.comb += [
            fetch_request.addr.eq(fetch.payload),
            fetch_request.seg_bytes.eq(DESCRIPTOR_BYTES),
            fetch_request.inner_count.eq(1),
            fetch_request.outer_count.eq(1),
            fetch_request.tag.eq(TAG_DESC),
            dma.rd_req.valid.eq(fetch.valid | dp.rd_req.valid),
            dma.rd_req.payload.eq(Mux(fetch.valid, fetch_request, dp.rd_req.payload)),
            fetch.ready.eq(dma.rd_req.ready),
            dp.rd_req.ready.eq(dma.rd_req.ready & ~fetch.valid),
            dma.rd_done.ready.eq(1),
            reads.issued.eq(dma.rd_req.valid & dma.rd_req.ready),
            reads.done.eq(dma.rd_done.valid),
            reads.error.eq(dma.rd_done.valid & dma.rd_done.payload.err),
            reads.clear.eq(seq.read_error_clear),
        ]
        # Read beats pass a register slice: the DMA's beat fields (decoded from its in-flight
        # FIFO) and the loaders' ready both end there. The datapath's fields of each beat are
        # formed before it (``rd_peek`` -> ``rd_fields``).
        m.submodules.rd_slice = rd_slice = RegisterSlice(data.StructLayout({
            "beat": dma.rd_data.payload.shape(),
            "fields": len(dp.rd_fields),
        }))
        m.d.comb += [
            dp.rd_peek.eq(dma.rd_data.payload),
            rd_slice.i.valid.eq(dma.rd_data.valid),
            rd_slice.i.payload.beat.eq(dma.rd_data.payload),
            rd_slice.i.payload.fields.eq(dp.rd_fields),
            dma.rd_data.ready.eq(rd_slice.i.ready),
        ]
        beats = rd_slice.o
        beat = beats.payload.beat
        is_desc = beat.tag == TAG_DESC
        desc_raw = Signal(DESCRIPTOR_BEATS * 8 * BEAT_BYTES)
        with m.If(beats.valid & is_desc):
            m.d.sync += desc_raw.eq(Cat(desc_raw[8 * BEAT_BYTES:], beat.data))
        m.d.comb += [
            dp.rd_beats.valid.eq(beats.valid & ~is_desc),
            dp.rd_beats.payload.eq(beats.payload),
            beats.ready.eq(is_desc | dp.rd_beats.ready),
        ]
        # a completion may overtake its last beats (held in the slice, or in the datapath):
        # reads are over when all have drained
        rd_idle = reads.idle & ~beats.valid
        m.d.comb += [
            dp.rd_idle.eq(rd_idle),
            dp.rd_error.eq(reads.failed),
            seq.reads_idle.eq(rd_idle & ~dp.reads_busy),
            seq.read_error.eq(reads.failed),
        ]

        # --- the datapath ---------------------------------------------------------------------
        m.d.comb += [
            seq.desc_bits.eq(desc_raw),
            dp.desc.valid.eq(seq.dispatch.valid),
            dp.desc.payload.eq(seq.dispatch.payload),
            seq.dispatch.ready.eq(dp.desc.ready),
            seq.verdict.eq(dp.verdict),
            seq.write_error.eq(dp.write_error),
            seq.error_index.eq(dp.error_index),
            seq.pipeline_busy.eq(dp.busy),
            seq.retire.eq(dp.retire),
            dp.stop.eq(seq.stop),
            dp.abort.eq(seq.abort),
        ]
        wiring.connect(m, dp.wr_req, dma.wr_req)
        wiring.connect(m, dp.wr_data, dma.wr_data)
        wiring.connect(m, dma.wr_done, dp.wr_done)
        return m


def accelerator(config=None, **params):
    """:class:`Accelerator` from plain data (``config`` as :meth:`AcceleratorConfig.as_dict`),
    for the Verilog generator and the testbenches."""
    config = DEFAULT_CONFIG if config is None else AcceleratorConfig(**config)
    return Accelerator(config, **params)
