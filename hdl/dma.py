"""AXI4 DMA engines: strided reads and writes of 64-bit external memory.

Ref: AMBA AXI and ACE Protocol Specification (ARM IHI 0022): A3.2 (handshakes: a ``VALID``
once asserted stays asserted until its handshake and never waits for ``READY``), A3.4
(incrementing bursts of at most 256 beats that never cross a 4 KiB boundary) and the ordering of
transactions that share one ID (responses return in issue order; every burst here uses ID 0).

A **request** describes a two-dimensional gather (reader) or scatter (writer) of byte segments::

    for o in range(outer_count):
        for i in range(inner_count):
            seg_bytes bytes at (addr + o * outer_stride + i * inner_stride) % 2**addr_width

External memory is a sequence of 64-bit little-endian beats (``docs/formats.md``): byte ``8k +
j`` is bits ``[8j, 8j + 8)`` of beat ``k``. A segment of ``n`` bytes at ``a`` covers the beats
``a // 8`` to ``(a + n - 1) // 8``; data moves lane-aligned, never shifted: byte ``j`` of a beat
is memory byte ``8 * beat + j``, and the ``lo``/``hi`` lane bounds say which bytes belong to the
segment. Each segment is cut into bursts by :func:`split_bursts`.

Both engines share one front end: a segment generator walks the request (one segment per
cycle) and a burst splitter cuts segments into bursts (one burst per cycle). A FIFO of
``max_outstanding`` entries remembers each issued burst's beat count and lane bounds until its
data (reader) or write response (writer) has passed, so addresses run ahead of data.

The reference model of requests, beats and bursts is :mod:`hls_ref.dma` (re-exported here).
"""

from amaranth.hdl import Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hls_ref.dma import (
    BEAT_BYTES,
    COUNT_WIDTH,
    SEG_BYTES_WIDTH,
    STRIDE_WIDTH,
    DmaRequest,
    segment_beats,
    split_bursts,
)

from .axi import BOUNDARY_BYTES, BURST_INCR, MAX_BURST_BEATS, AXI4Signature
from .params import check_int
from .register_slice import RegisterSlice

__all__ = [
    "BEAT_BYTES",
    "COUNT_WIDTH",
    "SEG_BYTES_WIDTH",
    "STRIDE_WIDTH",
    "Dma",
    "DmaReader",
    "DmaRequest",
    "DmaWriter",
    "dma_done_layout",
    "dma_read_data_layout",
    "dma_request_layout",
    "segment_beats",
    "split_bursts",
]

_DATA_WIDTH = 8 * BEAT_BYTES
_LANE_BITS = 3                                   # log2(BEAT_BYTES)
_PAGE_BEATS = BOUNDARY_BYTES // BEAT_BYTES       # beats between two 4 KiB boundaries
#: Most beats one segment can cover: 65535 bytes starting at lane 7.
_MAX_SEGMENT_BEATS = (BEAT_BYTES - 1 + (1 << SEG_BYTES_WIDTH) - 2) // BEAT_BYTES + 1
#: ``*cache`` of every burst: normal, non-cacheable, bufferable.
_AXCACHE = 0b0011
#: ``*prot`` of every burst: unprivileged, secure, data.
_AXPROT = 0b000


# --- Layouts ---------------------------------------------------------------------------------

def dma_request_layout(addr_width=32, tag_width=0):
    """Return the layout of a DMA request.

    Parameters
    ----------
    addr_width : int
        Byte-address width of the bus, in bits.
    tag_width : int
        Width of ``tag``, in bits (0 for the writer).

    Returns
    -------
    StructLayout
        ``addr`` (``addr_width``: byte address of the first segment), ``seg_bytes`` (16: bytes
        per segment), ``inner_count`` (16), ``inner_stride`` (32, bytes, unsigned),
        ``outer_count`` (16), ``outer_stride`` (32, bytes, unsigned), ``tag`` (``tag_width``).
    """
    return data.StructLayout({
        "addr": unsigned(addr_width),
        "seg_bytes": unsigned(SEG_BYTES_WIDTH),
        "inner_count": unsigned(COUNT_WIDTH),
        "inner_stride": unsigned(STRIDE_WIDTH),
        "outer_count": unsigned(COUNT_WIDTH),
        "outer_stride": unsigned(STRIDE_WIDTH),
        "tag": unsigned(tag_width),
    })


def dma_read_data_layout(tag_width=0):
    """Return the layout of a beat that the reader delivers.

    Returns
    -------
    StructLayout
        ``data`` (64: the memory beat, lane-aligned), ``lo`` (3: first byte lane of the beat that
        belongs to the segment), ``hi`` (4: one past the last lane that belongs, 1 to 8),
        ``seg_last`` (last beat of a segment), ``last`` (last beat of the request), ``err`` (the
        beat's ``RRESP`` was SLVERR or DECERR), ``tag`` (``tag_width``: the request's tag).
    """
    return data.StructLayout({
        "data": unsigned(_DATA_WIDTH),
        "lo": unsigned(_LANE_BITS),
        "hi": unsigned(_LANE_BITS + 1),
        "seg_last": unsigned(1),
        "last": unsigned(1),
        "err": unsigned(1),
        "tag": unsigned(tag_width),
    })


def dma_done_layout(tag_width=None):
    """Return the layout of a request completion: ``err`` (1: some response of the request was
    SLVERR or DECERR) and, unless ``tag_width`` is None (the writer), ``tag`` (``tag_width``
    bits)."""
    fields = {"err": unsigned(1)}
    if tag_width is not None:
        fields["tag"] = unsigned(tag_width)
    return data.StructLayout(fields)


# --- Shared front end: request -> segments -> bursts -----------------------------------------
#
# Combinational signals below are plain expressions, never assigned under ``m.If``: Icarus
# Verilog 11 does not run an ``always @*`` block at time 0, so a conditionally assigned
# combinational signal stays X until one of its inputs changes, and an X on a FIFO's ``r_en``
# corrupts the FIFO's level.

def _segment_layout(addr_width, tag_width, max_burst):
    return data.StructLayout({
        "beat": unsigned(addr_width - _LANE_BITS),         # first beat
        "beats_m1": unsigned((_MAX_SEGMENT_BEATS - 1).bit_length()),   # beats - 1
        "cap": range(max_burst + 1),                       # longest first burst
        "lo": unsigned(_LANE_BITS),
        "hi": unsigned(_LANE_BITS + 1),
        "last": unsigned(1),                               # last segment of the request
        "empty": unsigned(1),                              # marks an empty request; no data
        "tag": unsigned(tag_width),
    })


def _burst_cap(beat, max_burst):
    """Return the longest burst that may start at beat address ``beat``:
    ``min(max_burst, beats to the next 4 KiB boundary)``.

    ``max_burst`` is a power of two dividing the 512 beats of a page, so the boundary limits a
    burst only where the beat's offset in the page has all bits from ``log2(max_burst)`` up set;
    then the burst ends at the boundary, ``max_burst - (offset % max_burst)`` beats away."""
    shift = exact_log2(max_burst)
    offset = beat[:exact_log2(_PAGE_BEATS)]
    return Mux(offset[shift:].all(), max_burst - offset[:shift], max_burst)


def _next_burst_cap(beat, max_burst):
    """Return :func:`_burst_cap` of the beat that follows a burst of ``_burst_cap(beat)``
    beats from ``beat``, without adding: that burst ended at the 4 KiB boundary (next cap
    ``max_burst``) or was ``max_burst`` long, which keeps the offset's low bits."""
    shift = exact_log2(max_burst)
    offset = beat[:exact_log2(_PAGE_BEATS)]
    high = offset[shift:]
    return Mux(high == (1 << len(high)) - 2, max_burst - offset[:shift], max_burst)


def _burst_layout(addr_width, tag_width):
    return data.StructLayout({
        "beat": unsigned(addr_width - _LANE_BITS),
        "len": unsigned(8),                                # beats - 1, as AxLEN
        "lo": unsigned(_LANE_BITS),                        # lanes of the first beat
        "hi": unsigned(_LANE_BITS + 1),                    # lanes of the last beat
        "seg_last": unsigned(1),                           # last burst of a segment
        "last": unsigned(1),                               # last burst of the request
        "empty": unsigned(1),
        "tag": unsigned(tag_width),
    })


class _SegmentGenerator(wiring.Component):
    """Walks a request's segments, one per cycle, including the first segment of a new request
    in the cycle that accepts it. An empty request becomes one ``empty`` segment."""

    def __init__(self, *, addr_width, tag_width, max_burst):
        self._addr_width = addr_width
        self._tag_width = tag_width
        self._max_burst = max_burst
        super().__init__({
            "req": In(stream.Signature(dma_request_layout(addr_width, tag_width))),
            "segs": Out(stream.Signature(_segment_layout(addr_width, tag_width, max_burst))),
        })

    def elaborate(self, platform):
        m = Module()
        req = self.req.payload
        out = self.segs.payload

        busy = Signal()
        # State of a request in progress: the next segment and the row it belongs to.
        seg_addr = Signal(self._addr_width)
        row_addr = Signal(self._addr_width)
        inner_left = Signal(COUNT_WIDTH)       # segments of the row after the next one
        outer_left = Signal(COUNT_WIDTH)       # rows after the next segment's row
        seg_bytes = Signal(SEG_BYTES_WIDTH)
        inner_last = Signal(COUNT_WIDTH)       # inner_count - 1
        inner_stride = Signal(STRIDE_WIDTH)
        outer_stride = Signal(STRIDE_WIDTH)
        tag = Signal(self._tag_width)

        # The segment of this cycle, from the state or from a new request.
        cur_addr = Signal(self._addr_width)
        cur_row = Signal(self._addr_width)
        cur_inner_left = Signal(COUNT_WIDTH)
        cur_outer_left = Signal(COUNT_WIDTH)
        cur_bytes = Signal(SEG_BYTES_WIDTH)
        cur_inner_last = Signal(COUNT_WIDTH)
        cur_inner_stride = Signal(STRIDE_WIDTH)
        cur_outer_stride = Signal(STRIDE_WIDTH)
        cur_tag = Signal(self._tag_width)
        m.d.comb += [
            cur_addr.eq(Mux(busy, seg_addr, req.addr)),
            cur_row.eq(Mux(busy, row_addr, req.addr)),
            cur_inner_left.eq(Mux(busy, inner_left, req.inner_count - 1)),
            cur_outer_left.eq(Mux(busy, outer_left, req.outer_count - 1)),
            cur_bytes.eq(Mux(busy, seg_bytes, req.seg_bytes)),
            cur_inner_last.eq(Mux(busy, inner_last, req.inner_count - 1)),
            cur_inner_stride.eq(Mux(busy, inner_stride, req.inner_stride)),
            cur_outer_stride.eq(Mux(busy, outer_stride, req.outer_stride)),
            cur_tag.eq(Mux(busy, tag, req.tag)),
        ]

        empty = Signal()
        row_end = Signal()                     # the row's last segment
        last_row = Signal()
        final = Signal()                       # the request's last segment
        end = Signal(_LANE_BITS + SEG_BYTES_WIDTH + 1)    # last byte, from the first beat
        next_row = Signal(self._addr_width)
        m.d.comb += [
            empty.eq(~busy & ((req.seg_bytes == 0) | (req.inner_count == 0)
                              | (req.outer_count == 0))),
            # From the counts themselves for a new request, not from `count - 1`: shorter paths.
            row_end.eq(Mux(busy, inner_left == 0, req.inner_count == 1)),
            last_row.eq(Mux(busy, outer_left == 0, req.outer_count == 1)),
            final.eq(row_end & last_row),
            end.eq(cur_addr[:_LANE_BITS] + cur_bytes - 1),
            next_row.eq(cur_row + cur_outer_stride),
        ]

        can_out = ~self.segs.valid | self.segs.ready
        m.d.comb += self.req.ready.eq(can_out & ~busy)
        with m.If(can_out & (busy | self.req.valid)):
            m.d.sync += [
                self.segs.valid.eq(1),
                out.beat.eq(cur_addr[_LANE_BITS:]),
                out.beats_m1.eq(end[_LANE_BITS:]),
                out.cap.eq(_burst_cap(cur_addr[_LANE_BITS:], self._max_burst)),
                out.lo.eq(cur_addr[:_LANE_BITS]),
                out.hi.eq(end[:_LANE_BITS] + 1),
                out.last.eq(final | empty),
                out.empty.eq(empty),
                out.tag.eq(cur_tag),
                busy.eq(~final & ~empty),
                seg_bytes.eq(cur_bytes),
                inner_last.eq(cur_inner_last),
                inner_stride.eq(cur_inner_stride),
                outer_stride.eq(cur_outer_stride),
                tag.eq(cur_tag),
            ]
            with m.If(~row_end):
                m.d.sync += [
                    seg_addr.eq(cur_addr + cur_inner_stride),
                    row_addr.eq(cur_row),
                    inner_left.eq(cur_inner_left - 1),
                    outer_left.eq(cur_outer_left),
                ]
            with m.Else():
                m.d.sync += [
                    seg_addr.eq(next_row),
                    row_addr.eq(next_row),
                    inner_left.eq(cur_inner_last),
                    outer_left.eq(cur_outer_left - 1),
                ]
        with m.Elif(self.segs.ready):
            m.d.sync += self.segs.valid.eq(0)
        return m


class _BurstSplitter(wiring.Component):
    """Cuts segments into bursts as :func:`split_bursts` does, one burst per cycle, including
    the first burst of a segment in the cycle that accepts it."""

    def __init__(self, *, addr_width, tag_width, max_burst):
        self._addr_width = addr_width
        self._tag_width = tag_width
        self._max_burst = max_burst
        super().__init__({
            "segs": In(stream.Signature(_segment_layout(addr_width, tag_width, max_burst))),
            "bursts": Out(stream.Signature(_burst_layout(addr_width, tag_width))),
        })

    def elaborate(self, platform):
        m = Module()
        seg = self.segs.payload
        out = self.bursts.payload
        beat_width = self._addr_width - _LANE_BITS
        left_width = len(seg.beats_m1)

        busy = Signal()
        beat = Signal(beat_width)
        left_m1 = Signal(left_width)               # beats of the segment still to issue - 1
        cap = Signal(range(self._max_burst + 1))   # longest next burst
        hi = Signal(_LANE_BITS + 1)
        last = Signal()
        tag = Signal(self._tag_width)

        # The burst of this cycle: the rest of the held segment or the start of a new one. A
        # non-final burst is always `cap` long, so the next state does not wait for `final`.
        cur_beat = Signal(beat_width)
        cur_left_m1 = Signal(left_width)
        cur_cap = Signal(range(self._max_burst + 1))
        cur_lo = Signal(_LANE_BITS)
        cur_hi = Signal(_LANE_BITS + 1)
        cur_last = Signal()
        cur_tag = Signal(self._tag_width)
        final = Signal()                               # the segment's last burst
        empty = Signal()
        m.d.comb += [
            cur_beat.eq(Mux(busy, beat, seg.beat)),
            cur_left_m1.eq(Mux(busy, left_m1, seg.beats_m1)),
            cur_cap.eq(Mux(busy, cap, seg.cap)),
            cur_lo.eq(Mux(busy, 0, seg.lo)),
            cur_hi.eq(Mux(busy, hi, seg.hi)),
            cur_last.eq(Mux(busy, last, seg.last)),
            cur_tag.eq(Mux(busy, tag, seg.tag)),
            final.eq(cur_left_m1 < cur_cap),
            empty.eq(~busy & seg.empty),
        ]

        can_out = ~self.bursts.valid | self.bursts.ready
        m.d.comb += self.segs.ready.eq(can_out & ~busy)
        with m.If(can_out & (busy | self.segs.valid)):
            m.d.sync += [
                self.bursts.valid.eq(1),
                out.beat.eq(cur_beat),
                out.len.eq(Mux(final, cur_left_m1, cur_cap - 1)),
                out.lo.eq(cur_lo),
                out.hi.eq(Mux(final, cur_hi, BEAT_BYTES)),
                out.seg_last.eq(final),
                out.last.eq(empty | (final & cur_last)),
                out.empty.eq(empty),
                out.tag.eq(cur_tag),
                busy.eq(~final & ~empty),
                beat.eq(cur_beat + cur_cap),
                left_m1.eq(cur_left_m1 - cur_cap),
                cap.eq(_next_burst_cap(cur_beat, self._max_burst)),
                hi.eq(cur_hi),
                last.eq(cur_last),
                tag.eq(cur_tag),
            ]
        with m.Elif(self.bursts.ready):
            m.d.sync += self.bursts.valid.eq(0)
        return m


def _lane_mask(m, lo, hi, *, name):
    """Return a signal whose bit ``j`` is set for the byte lanes ``lo <= j < hi``."""
    mask = Signal(BEAT_BYTES, name=name)
    for lane in range(BEAT_BYTES):
        m.d.comb += mask[lane].eq((lo <= lane) & (hi > lane))
    return mask


def _is_error(resp):
    # SLVERR (0b10) and DECERR (0b11); OKAY and EXOKAY are successes.
    return resp[1]


def _connect_through_slice(m, source, sink):
    """Segments reach the burst splitter through a register slice: the splitter's ready comes
    from the AXI address channel, and without the slice it would enable the segment
    generator's state (a few hundred flip-flops) in the same cycle. One cycle of latency per
    request, none per burst."""
    m.submodules.seg_slice = seg_slice = RegisterSlice(source.payload.shape())
    wiring.connect(m, generator=source, slice=seg_slice.i)
    wiring.connect(m, slice=seg_slice.o, splitter=sink)


class _DmaParameters:
    """Validated parameters shared by the reader, the writer and the combined engine."""

    def _init_parameters(self, addr_width, max_burst, max_outstanding, tag_width):
        self._addr_width = check_int("addr_width", addr_width, minimum=12, maximum=64)
        check_int("max_burst", max_burst, minimum=1, maximum=MAX_BURST_BEATS)
        if max_burst & (max_burst - 1):
            raise ValueError(f"max_burst must be a power of two, not {max_burst}")
        self._max_burst = max_burst
        self._max_outstanding = check_int("max_outstanding", max_outstanding,
                                          minimum=1, maximum=256)
        self._tag_width = check_int("tag_width", tag_width, minimum=0, maximum=32)

    @property
    def addr_width(self):
        """Byte-address width of the bus, in bits."""
        return self._addr_width

    @property
    def max_burst(self):
        """Longest burst, in beats."""
        return self._max_burst

    @property
    def max_outstanding(self):
        """Most bursts in flight per direction."""
        return self._max_outstanding

    def _bus_signature(self):
        return AXI4Signature(addr_width=self._addr_width, data_width=_DATA_WIDTH)


# --- Reader ----------------------------------------------------------------------------------

def _read_burst_layout(tag_width):
    return data.StructLayout({
        "len": unsigned(8), "lo": unsigned(_LANE_BITS), "hi": unsigned(_LANE_BITS + 1),
        "seg_last": unsigned(1), "last": unsigned(1), "empty": unsigned(1),
        "tag": unsigned(tag_width),
    })


class DmaReader(_DmaParameters, wiring.Component):
    """Reads the segments of each request from an AXI4 subordinate and streams their beats.

    Segments are issued in order as incrementing bursts (``ARSIZE`` 8 bytes, ``ARID`` 0), cut as
    :func:`split_bursts` says. Address generation runs ahead of the data by up to
    ``max_outstanding`` bursts, so a long contiguous read streams one beat per cycle when the
    memory does, and segments of one beat each issue one burst per cycle. ``RREADY`` follows
    ``data.ready``: back-pressure stalls the R channel, no data is buffered or dropped.

    Parameters
    ----------
    addr_width : int
        Byte-address width of the bus, in bits (12 to 64).
    max_burst : int
        Longest burst, in beats: a power of two, 1 to 256.
    max_outstanding : int
        Most bursts whose address has been issued and whose data has not been delivered.
    tag_width : int
        Width of the request tag, in bits (0 to 32).

    Members
    -------
    req : ``In(stream.Signature(dma_request_layout(addr_width, tag_width)))``
        Requests, accepted one at a time as the previous one's last segment is issued.
    data : ``Out(stream.Signature(dma_read_data_layout(tag_width)))``
        Every beat of every segment, in order: ``data``, ``lo``, ``hi``, ``seg_last``, ``last``,
        ``err``, ``tag``.
    done : ``Out(stream.Signature(dma_done_layout(tag_width)))``
        One transfer per request, after its last beat was accepted on ``data`` (for an empty
        request, after the previous requests' completions). ``err`` is set if any beat had
        ``err``. Two completions are buffered; then ``data`` waits for ``done.ready``.
    bus : ``Out(AXI4Signature(addr_width=addr_width, data_width=64))``
        The AR and R channels; the write-channel outputs are constant 0.
    """

    def __init__(self, *, addr_width=32, max_burst=16, max_outstanding=4, tag_width=0):
        self._init_parameters(addr_width, max_burst, max_outstanding, tag_width)
        super().__init__({
            "req": In(stream.Signature(self.request_layout)),
            "data": Out(stream.Signature(dma_read_data_layout(tag_width))),
            "done": Out(stream.Signature(dma_done_layout(tag_width))),
            "bus": Out(self._bus_signature()),
        })

    @property
    def tag_width(self):
        """Width of the request tag, in bits."""
        return self._tag_width

    @property
    def request_layout(self):
        """Layout of a request."""
        return dma_request_layout(self._addr_width, self._tag_width)

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        m.submodules.segments = segments = _SegmentGenerator(
            addr_width=self._addr_width, tag_width=self._tag_width, max_burst=self._max_burst)
        m.submodules.splitter = splitter = _BurstSplitter(
            addr_width=self._addr_width, tag_width=self._tag_width, max_burst=self._max_burst)
        wiring.connect(m, request=wiring.flipped(self.req), segments=segments.req)
        _connect_through_slice(m, segments.segs, splitter.segs)

        # Bursts in flight, from AR to the last beat of R; an empty request's marker passes
        # through too, so its completion keeps its place.
        layout = _read_burst_layout(self._tag_width)
        # (its head is a register: the head's fields decide the beat's fields, the ready and
        # the FIFO's own read in one cycle, which would otherwise start at a LUT-RAM read)
        m.submodules.in_flight = in_flight = SyncFIFOBuffered(width=layout.size,
                                                              depth=self._max_outstanding)
        m.submodules.completions = completions = SyncFIFO(
            width=dma_done_layout(self._tag_width).size, depth=2)

        # Address channel.
        burst = splitter.bursts.payload
        issue = data.View(layout, in_flight.w_data)
        m.d.comb += [
            bus.arid.eq(0),
            bus.araddr.eq(burst.beat << _LANE_BITS),
            bus.arlen.eq(burst.len),
            bus.arsize.eq(_LANE_BITS),
            bus.arburst.eq(BURST_INCR),
            bus.arcache.eq(_AXCACHE),
            bus.arprot.eq(_AXPROT),
            bus.arvalid.eq(splitter.bursts.valid & ~burst.empty & in_flight.w_rdy),
            splitter.bursts.ready.eq(in_flight.w_rdy & (burst.empty | bus.arready)),
            in_flight.w_en.eq(splitter.bursts.valid & splitter.bursts.ready),
            issue.len.eq(burst.len),
            issue.lo.eq(burst.lo),
            issue.hi.eq(burst.hi),
            issue.seg_last.eq(burst.seg_last),
            issue.last.eq(burst.last),
            issue.empty.eq(burst.empty),
            issue.tag.eq(burst.tag),
        ]

        # Data channel.
        head = data.View(layout, in_flight.r_data)
        count = Signal(8)                   # beats of the head burst already delivered
        err = Signal()                      # an error so far in the current request
        burst_end = Signal()
        request_end = Signal()
        deliver = Signal()                  # the head burst may deliver its next beat
        accept = Signal()                   # a beat is delivered
        skip = Signal()                     # an empty request's marker is retired
        beat_err = _is_error(bus.rresp)
        finish = data.View(dma_done_layout(self._tag_width), completions.w_data)
        out = self.data.payload
        m.d.comb += [
            burst_end.eq(count == head.len),
            request_end.eq(burst_end & head.last),
            deliver.eq(in_flight.r_rdy & ~head.empty & (~request_end | completions.w_rdy)),
            self.data.valid.eq(bus.rvalid & deliver),
            bus.rready.eq(self.data.ready & deliver),
            out.data.eq(bus.rdata),
            out.lo.eq(Mux(count == 0, head.lo, 0)),
            out.hi.eq(Mux(burst_end, head.hi, BEAT_BYTES)),
            out.seg_last.eq(burst_end & head.seg_last),
            out.last.eq(request_end),
            out.err.eq(beat_err),
            out.tag.eq(head.tag),
            finish.tag.eq(head.tag),
            accept.eq(self.data.valid & self.data.ready),
            skip.eq(in_flight.r_rdy & head.empty & completions.w_rdy),
            in_flight.r_en.eq((accept & burst_end) | skip),
            completions.w_en.eq((accept & request_end) | skip),
            finish.err.eq(~head.empty & (err | beat_err)),
        ]
        with m.If(accept):
            m.d.sync += count.eq(Mux(burst_end, 0, count + 1))
            m.d.sync += err.eq(Mux(request_end, 0, err | beat_err))

        m.d.comb += [
            self.done.valid.eq(completions.r_rdy),
            self.done.payload.eq(completions.r_data),
            completions.r_en.eq(self.done.ready),
        ]
        return m


# --- Writer ----------------------------------------------------------------------------------

_WRITE_BURST_LAYOUT = data.StructLayout({
    "len": unsigned(8), "lo": unsigned(_LANE_BITS), "hi": unsigned(_LANE_BITS + 1),
})
_RESPONSE_LAYOUT = data.StructLayout({"last": unsigned(1), "empty": unsigned(1)})


class DmaWriter(_DmaParameters, wiring.Component):
    """Writes streamed beats into the segments of each request on an AXI4 subordinate.

    Segments are cut into bursts exactly as by :class:`DmaReader` (``AWSIZE`` 8 bytes, ``AWID``
    0). ``WSTRB`` comes from the segment geometry: the lanes of a segment's first and last beat
    outside the segment are not written. ``WLAST`` marks the last beat of every burst.
    Addresses may run ahead of data by up to ``max_outstanding`` bursts. A burst's W beats do not
    wait for its AW handshake (AXI forbids a manager to wait for ``AWREADY`` before asserting
    ``WVALID``): they may be sent as soon as its ``AWVALID`` is, never earlier.

    Parameters
    ----------
    addr_width, max_burst : int
        As for :class:`DmaReader`.
    max_outstanding : int
        Most bursts whose address has been issued and whose write response has not arrived.

    Members
    -------
    req : ``In(stream.Signature(dma_request_layout(addr_width)))``
        Requests (``tag`` is 0 bits wide).
    data : ``In(stream.Signature(unsigned(64)))``
        Lane-aligned beats: exactly one per beat each segment covers (as
        :func:`segment_beats`), in order. Lanes outside a segment are ignored.
    done : ``Out(stream.Signature(dma_done_layout()))``
        One transfer per request, after all its write responses arrived (for an empty request,
        after the previous requests' completions). ``err`` is set if any ``BRESP`` was SLVERR or
        DECERR. Two completions are buffered; then ``BREADY`` waits for ``done.ready``.
    bus : ``Out(AXI4Signature(addr_width=addr_width, data_width=64))``
        The AW, W and B channels; the read-channel outputs are constant 0.
    """

    def __init__(self, *, addr_width=32, max_burst=16, max_outstanding=4):
        self._init_parameters(addr_width, max_burst, max_outstanding, 0)
        super().__init__({
            "req": In(stream.Signature(self.request_layout)),
            "data": In(stream.Signature(unsigned(_DATA_WIDTH))),
            "done": Out(stream.Signature(dma_done_layout())),
            "bus": Out(self._bus_signature()),
        })

    @property
    def request_layout(self):
        """Layout of a request."""
        return dma_request_layout(self._addr_width)

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        m.submodules.segments = segments = _SegmentGenerator(
            addr_width=self._addr_width, tag_width=0, max_burst=self._max_burst)
        m.submodules.splitter = splitter = _BurstSplitter(
            addr_width=self._addr_width, tag_width=0, max_burst=self._max_burst)
        wiring.connect(m, request=wiring.flipped(self.req), segments=segments.req)
        _connect_through_slice(m, segments.segs, splitter.segs)

        # Bursts whose data is still to be sent, and bursts (plus empty-request markers) whose
        # response is still to come. The second never holds fewer entries than the first.
        # (their heads are registers, as the reader's in-flight FIFO's)
        m.submodules.to_send = to_send = SyncFIFOBuffered(width=_WRITE_BURST_LAYOUT.size,
                                                          depth=self._max_outstanding)
        m.submodules.to_answer = to_answer = SyncFIFOBuffered(width=_RESPONSE_LAYOUT.size,
                                                              depth=self._max_outstanding)
        m.submodules.completions = completions = SyncFIFO(width=dma_done_layout().size,
                                                          depth=2)

        # Address channel: a burst enters the AW register and both FIFOs at once, so that its
        # data can go out while its address waits for AWREADY.
        burst = splitter.bursts.payload
        aw_valid = Signal()
        aw_beat = Signal(self._addr_width - _LANE_BITS)
        aw_len = Signal(8)
        room = Signal()
        issue = Signal()
        send = data.View(_WRITE_BURST_LAYOUT, to_send.w_data)
        answer = data.View(_RESPONSE_LAYOUT, to_answer.w_data)
        m.d.comb += [
            room.eq(to_send.w_rdy & to_answer.w_rdy),
            bus.awid.eq(0),
            bus.awaddr.eq(aw_beat << _LANE_BITS),
            bus.awlen.eq(aw_len),
            bus.awsize.eq(_LANE_BITS),
            bus.awburst.eq(BURST_INCR),
            bus.awcache.eq(_AXCACHE),
            bus.awprot.eq(_AXPROT),
            bus.awvalid.eq(aw_valid),
            splitter.bursts.ready.eq(room & (burst.empty | ~aw_valid | bus.awready)),
            issue.eq(splitter.bursts.valid & splitter.bursts.ready),
            to_send.w_en.eq(issue & ~burst.empty),
            to_answer.w_en.eq(issue),
            send.len.eq(burst.len),
            send.lo.eq(burst.lo),
            send.hi.eq(burst.hi),
            answer.last.eq(burst.last),
            answer.empty.eq(burst.empty),
        ]
        with m.If(issue & ~burst.empty):
            m.d.sync += [aw_valid.eq(1), aw_beat.eq(burst.beat), aw_len.eq(burst.len)]
        with m.Elif(bus.awready):
            m.d.sync += aw_valid.eq(0)

        # Data channel.
        head = data.View(_WRITE_BURST_LAYOUT, to_send.r_data)
        count = Signal(8)
        burst_end = Signal()
        m.d.comb += burst_end.eq(count == head.len)
        strobe = _lane_mask(m, Mux(count == 0, head.lo, 0),
                            Mux(burst_end, head.hi, BEAT_BYTES), name="strobe")
        m.d.comb += [
            bus.wdata.eq(self.data.payload),
            bus.wstrb.eq(strobe),
            bus.wlast.eq(burst_end),
            bus.wvalid.eq(self.data.valid & to_send.r_rdy),
            self.data.ready.eq(bus.wready & to_send.r_rdy),
        ]
        m.d.comb += to_send.r_en.eq(bus.wvalid & bus.wready & burst_end)
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += count.eq(Mux(burst_end, 0, count + 1))

        # Response channel.
        pending = data.View(_RESPONSE_LAYOUT, to_answer.r_data)
        err = Signal()
        resp_err = _is_error(bus.bresp)
        finish = data.View(dma_done_layout(), completions.w_data)
        accept = Signal()                   # a response is taken
        skip = Signal()                     # an empty request's marker is retired
        m.d.comb += [
            bus.bready.eq(to_answer.r_rdy & ~pending.empty
                          & (~pending.last | completions.w_rdy)),
            accept.eq(bus.bvalid & bus.bready),
            skip.eq(to_answer.r_rdy & pending.empty & completions.w_rdy),
            to_answer.r_en.eq(accept | skip),
            completions.w_en.eq((accept & pending.last) | skip),
            finish.err.eq(~pending.empty & (err | resp_err)),
        ]
        with m.If(accept):
            m.d.sync += err.eq(Mux(pending.last, 0, err | resp_err))

        m.d.comb += [
            self.done.valid.eq(completions.r_rdy),
            self.done.payload.eq(completions.r_data),
            completions.r_en.eq(self.done.ready),
        ]
        return m


# --- Reader and writer on one port -----------------------------------------------------------

def _is_read_member(name):
    return name.startswith(("ar", "r"))


class Dma(_DmaParameters, wiring.Component):
    """A :class:`DmaReader` and a :class:`DmaWriter` sharing one AXI4 manager port: the reader
    owns AR and R, the writer AW, W and B. The two directions are independent; the order of a
    read and a write to the same bytes is not defined.

    Parameters
    ----------
    addr_width, max_burst, max_outstanding, tag_width
        As for :class:`DmaReader` (``max_outstanding`` applies to each direction; the tag to
        reads only).

    Members
    -------
    rd_req, rd_data, rd_done
        The reader's ``req``, ``data`` and ``done``.
    wr_req, wr_data, wr_done
        The writer's ``req``, ``data`` and ``done``.
    bus : ``Out(AXI4Signature(addr_width=addr_width, data_width=64))``
        The shared manager port.
    """

    def __init__(self, *, addr_width=32, max_burst=16, max_outstanding=4, tag_width=0):
        self._init_parameters(addr_width, max_burst, max_outstanding, tag_width)
        super().__init__({
            "rd_req": In(stream.Signature(dma_request_layout(addr_width, tag_width))),
            "rd_data": Out(stream.Signature(dma_read_data_layout(tag_width))),
            "rd_done": Out(stream.Signature(dma_done_layout(tag_width))),
            "wr_req": In(stream.Signature(dma_request_layout(addr_width))),
            "wr_data": In(stream.Signature(unsigned(_DATA_WIDTH))),
            "wr_done": Out(stream.Signature(dma_done_layout())),
            "bus": Out(self._bus_signature()),
        })

    @property
    def tag_width(self):
        """Width of the read-request tag, in bits."""
        return self._tag_width

    def elaborate(self, platform):
        m = Module()
        params = {"addr_width": self._addr_width, "max_burst": self._max_burst,
                  "max_outstanding": self._max_outstanding}
        m.submodules.reader = reader = DmaReader(**params, tag_width=self._tag_width)
        m.submodules.writer = writer = DmaWriter(**params)
        wiring.connect(m, rd_req=wiring.flipped(self.rd_req), reader=reader.req)
        wiring.connect(m, rd_data=wiring.flipped(self.rd_data), reader=reader.data)
        wiring.connect(m, rd_done=wiring.flipped(self.rd_done), reader=reader.done)
        wiring.connect(m, wr_req=wiring.flipped(self.wr_req), writer=writer.req)
        wiring.connect(m, wr_data=wiring.flipped(self.wr_data), writer=writer.data)
        wiring.connect(m, wr_done=wiring.flipped(self.wr_done), writer=writer.done)
        for name, member in self.bus.signature.members.items():
            engine = reader if _is_read_member(name) else writer
            ours, theirs = getattr(self.bus, name), getattr(engine.bus, name)
            if member.flow == Out:
                m.d.comb += ours.eq(theirs)
            else:
                m.d.comb += theirs.eq(ours)
        return m
