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
* the datapaths (:data:`DATAPATHS`: :class:`hdl.conv_datapath.ConvDatapath`,
  :class:`hdl.fc.datapath.FCDatapath`, :class:`hdl.perchannel.datapath.PerChannelDatapath`), each
  implementing :class:`hdl.socket.signature.DatapathSignature`.

With several datapaths, each descriptor goes to the datapath of its ``op`` (an ``op`` that no
datapath runs goes to the first, which refuses it with ``BAD_OP``). Only one datapath holds
commands at a time: a descriptor for another one waits until the active datapath has retired
everything and its reads are over, so the DMA, the stores and the retire order are never
shared. With one datapath the dispatch logic is constant and vanishes.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.config import DEFAULT_CONFIG, AcceleratorConfig
from hls_ref.descriptor import DESCRIPTOR_BEATS, DESCRIPTOR_BYTES, Op
from hls_ref.registers import register_map

from .axi import AXI4LiteSignature, AXI4Signature
from .conv_datapath import ConvDatapath
from .csr import DATA_WIDTH, CsrBank
from .dma import BEAT_BYTES, Dma
from .fc.datapath import FCDatapath
from .perchannel.datapath import PerChannelDatapath
from .register_slice import RegisterSlice
from .socket.counters import PerformanceCounters
from .socket.reads import ReadTracker
from .socket.sequencer import ListSequencer
from .socket.signature import ADDR_WIDTH, TAG_DESC, TAG_WIDTH, descriptor_layout

__all__ = ["DATAPATHS", "Accelerator", "accelerator"]


def _select(values, index):
    """``values[index]`` as a chain of two-way multiplexers (Yosys writes an ``Array`` index
    as an ``always @*`` case, which Icarus leaves X until an input changes)."""
    values = list(values)
    choice = values[-1]
    for k in reversed(range(len(values) - 1)):
        choice = Mux(index == k, values[k], choice)
    return choice


def _conv(config, *, pe_stages, requant_stages):
    return ConvDatapath(config, pe_stages=pe_stages, requant_stages=requant_stages)


def _fc(config, *, pe_stages, requant_stages):
    return FCDatapath(config, pe_stages=pe_stages)


def _perchannel(config, *, pe_stages, requant_stages):
    return PerChannelDatapath(config, pe_stages=pe_stages, requant_stages=requant_stages)


#: How each datapath is built: ``op -> factory(config, pe_stages=, requant_stages=)``.
DATAPATHS = {Op.CONV2D: _conv, Op.FC: _fc, Op.DEPTHWISE: _perchannel}


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
    datapaths : dict or None
        ``op -> factory`` of the datapaths (:data:`DATAPATHS` if None; tests put stand-ins
        here).

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
                 max_burst=16, max_outstanding=4, datapaths=None):
        if not isinstance(config, AcceleratorConfig):
            raise TypeError(f"config must be an AcceleratorConfig, not {config!r}")
        # built here, so that a build the RTL cannot implement is refused at construction
        factories = DATAPATHS if datapaths is None else datapaths
        missing = [op.name for op in config.ops if op not in factories]
        if missing:
            raise ValueError(f"config asks for datapaths the RTL does not have: "
                             f"{', '.join(missing)}")
        self._datapaths = [factories[op](config, pe_stages=pe_stages,
                                         requant_stages=requant_stages)
                           for op in config.ops]
        self._config = config
        self._max_burst = max_burst
        self._max_outstanding = max_outstanding
        self._regmap = register_map(config)
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
        dps = self._datapaths
        for op, dp in zip(self._config.ops, dps, strict=True):
            m.submodules[f"datapath_{op.name.lower()}"] = dp

        def port(reg, field):
            return csr.field_port(reg, field)

        def any_of(name):
            return Cat(getattr(dp, name) for dp in dps).any()

        # --- which datapath: ``chosen`` by the fetched descriptor's op, ``active`` the one
        # holding commands (see the module docstring) ----------------------------------------
        desc_raw = Signal(DESCRIPTOR_BEATS * 8 * BEAT_BYTES)
        desc = data.View(descriptor_layout(), desc_raw)
        chosen = Signal(range(len(dps)))
        active = Signal(range(len(dps)))
        # (a plain expression: Icarus leaves a conditionally assigned signal undefined until
        # an input changes, see ``hdl.dma``)
        choice = 0
        for k, op in reversed(list(enumerate(self._config.ops))):
            choice = Mux(desc.op == op, k, choice)
        m.d.comb += chosen.eq(choice)

        def of_active(name):
            return _select((getattr(dp, name) for dp in dps), active)

        # --- registers ------------------------------------------------------------------------
        # the counters and TILES as the list left them, taken at its end (``finish``: no
        # command retires then), so they are read while the next list runs
        finish = Signal()
        tiles = Signal(32)
        m.d.comb += finish.eq(seq.done_set | seq.error_set)
        with m.If(finish):
            m.d.sync += tiles.eq(seq.progress + seq.retire)
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
            port("TILES", "value").eq(tiles),
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
            counters.capture.eq(finish),
            counters.read_beat.eq(dma.rd_data.valid & dma.rd_data.ready),
            counters.write_beat.eq(bus.wvalid & bus.wready),
            counters.write_strobes.eq(bus.wstrb),
            counters.mac.eq(any_of("mac")),
        ]

        # --- reads: the sequencer's fetches and the active datapath's loads -------------------
        # (never at the same time: a descriptor is fetched only while no load is in flight)
        fetch = seq.fetch
        fetch_request = Signal.like(dma.rd_req.payload)
        m.d.comb += [
            fetch_request.addr.eq(fetch.payload),
            fetch_request.seg_bytes.eq(DESCRIPTOR_BYTES),
            fetch_request.inner_count.eq(1),
            fetch_request.outer_count.eq(1),
            fetch_request.tag.eq(TAG_DESC),
            dma.rd_req.valid.eq(fetch.valid | Cat(dp.rd_req.valid for dp in dps).any()),
            dma.rd_req.payload.eq(Mux(fetch.valid, fetch_request,
                                      _select((dp.rd_req.payload for dp in dps), active))),
            fetch.ready.eq(dma.rd_req.ready),
            *[dp.rd_req.ready.eq(dma.rd_req.ready & ~fetch.valid) for dp in dps],
            dma.rd_done.ready.eq(1),
            reads.issued.eq(dma.rd_req.valid & dma.rd_req.ready),
            reads.done.eq(dma.rd_done.valid),
            reads.error.eq(dma.rd_done.valid & dma.rd_done.payload.err),
            reads.clear.eq(seq.read_error_clear),
        ]
        # Read beats pass a register slice: the DMA's beat fields (decoded from its in-flight
        # FIFO) and the loaders' ready both end there. The active datapath's fields of each
        # beat are formed before it (``rd_peek`` -> ``rd_fields``).
        fields_width = max(len(dp.rd_fields) for dp in dps)
        m.submodules.rd_slice = rd_slice = RegisterSlice(data.StructLayout({
            "beat": dma.rd_data.payload.shape(),
            "fields": fields_width,
        }))
        m.d.comb += [
            *[dp.rd_peek.eq(dma.rd_data.payload) for dp in dps],
            rd_slice.i.valid.eq(dma.rd_data.valid),
            rd_slice.i.payload.beat.eq(dma.rd_data.payload),
            rd_slice.i.payload.fields.eq(_select((dp.rd_fields for dp in dps), active)),
            dma.rd_data.ready.eq(rd_slice.i.ready),
        ]
        beats = rd_slice.o
        beat = beats.payload.beat
        is_desc = beat.tag == TAG_DESC
        with m.If(beats.valid & is_desc):
            m.d.sync += desc_raw.eq(Cat(desc_raw[8 * BEAT_BYTES:], beat.data))
        for k, dp in enumerate(dps):
            m.d.comb += [
                dp.rd_beats.valid.eq(beats.valid & ~is_desc & (active == k)),
                dp.rd_beats.payload.beat.eq(beat),
                dp.rd_beats.payload.fields.eq(beats.payload.fields),
            ]
        m.d.comb += beats.ready.eq(is_desc | _select((dp.rd_beats.ready for dp in dps), active))
        # a completion may overtake its last beats (held in the slice, or in a datapath):
        # reads are over when all have drained
        rd_idle = reads.idle & ~beats.valid
        reads_idle = rd_idle & ~any_of("reads_busy")
        m.d.comb += [
            *[dp.rd_idle.eq(rd_idle) for dp in dps],
            *[dp.rd_error.eq(reads.failed) for dp in dps],
            seq.reads_idle.eq(reads_idle),
            seq.read_error.eq(reads.failed),
        ]

        # --- dispatch, and what the datapaths report ----------------------------------------
        # a descriptor for another datapath than the active one waits until it has drained
        switching = chosen != active
        may_go = ~switching | (~of_active("busy") & reads_idle)
        with m.If(seq.dispatch.valid & may_go):
            m.d.sync += active.eq(chosen)
        m.d.comb += [
            seq.desc_bits.eq(desc_raw),
            *[dp.desc.valid.eq(seq.dispatch.valid & may_go & (chosen == k))
              for k, dp in enumerate(dps)],
            *[dp.desc.payload.eq(seq.dispatch.payload) for dp in dps],
            seq.dispatch.ready.eq(_select((dp.desc.ready for dp in dps), chosen) & may_go),
            seq.verdict.eq(_select((dp.verdict for dp in dps), chosen)),
            seq.write_error.eq(any_of("write_error")),
            seq.error_index.eq(of_active("error_index")),
            seq.pipeline_busy.eq(any_of("busy")),
            seq.retire.eq(any_of("retire")),
            *[dp.stop.eq(seq.stop) for dp in dps],
            *[dp.abort.eq(seq.abort) for dp in dps],
        ]

        # --- stores: the active datapath's, on the DMA writer --------------------------------
        m.d.comb += [
            dma.wr_req.valid.eq(Cat(dp.wr_req.valid for dp in dps).any()),
            dma.wr_req.payload.eq(_select((dp.wr_req.payload for dp in dps), active)),
            dma.wr_data.valid.eq(Cat(dp.wr_data.valid for dp in dps).any()),
            dma.wr_data.payload.eq(_select((dp.wr_data.payload for dp in dps), active)),
            dma.wr_done.ready.eq(_select((dp.wr_done.ready for dp in dps), active)),
        ]
        for k, dp in enumerate(dps):
            m.d.comb += [
                dp.wr_req.ready.eq(dma.wr_req.ready & (active == k)),
                dp.wr_data.ready.eq(dma.wr_data.ready & (active == k)),
                dp.wr_done.valid.eq(dma.wr_done.valid & (active == k)),
                dp.wr_done.payload.eq(dma.wr_done.payload),
            ]
        return m


def accelerator(config=None, **params):
    """:class:`Accelerator` from plain data (``config`` as :meth:`AcceleratorConfig.as_dict`),
    for the Verilog generator and the testbenches."""
    config = DEFAULT_CONFIG if config is None else AcceleratorConfig(**config)
    return Accelerator(config, **params)
