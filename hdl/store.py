"""The store unit: accumulator PLM -> requantizer -> packed, lane-aligned output beats.

For every output pixel of the tile (row-major) the unit reads the pixel's ``pes`` sums from
the accumulator PLM and sends ``out_seg`` elements through the requantizer: the ``out_c``
results, then zeros (the layout's channel filler). The packer places each ``out_bits``-bit
element at its bit position in a 64-bit beat, lane-aligned to the byte address the DMA writer
will write it to (``docs/accelerator.md``): each DMA segment starts at its own byte lane, a
beat leaves when it is full or its segment ends, and rows of half-byte pixels are zero-filled
to a whole byte. Segments are those of :func:`hls_ref.socket.store_request` (the pixels of a
row, or rows, merge into one segment when they are contiguous in memory).

One element per cycle enters the requantizer, across pixels too (the next pixel's sums are
read while the current one is being sent).
"""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from .params import check_int
from .requant import Requantizer

__all__ = ["StoreUnit", "store_config_layout", "store_quant_layout"]

_DIM = 16
_ACC = 32


def _bits(count):
    return max(1, (count - 1).bit_length())


def store_config_layout():
    """One command's store geometry, from its descriptor.

    ``out_bits`` is the width code (0: 4, 1: 8, 2: 16 bits); ``lane`` the byte lane of the
    first segment; ``row_step`` and ``pixel_step`` the row and pixel strides in bytes modulo 8
    (lanes of the following segments); ``pixel_segments``: every pixel is a DMA segment;
    ``row_segments``: every row is one (else the whole tile is); ``row_align``: rows end on a
    byte (contiguous pixels narrower than a byte)."""
    return data.StructLayout({
        "acc_bank": unsigned(1),
        "out_h": unsigned(_DIM),
        "out_w": unsigned(_DIM),
        "out_c": unsigned(_DIM),
        "out_seg": unsigned(_DIM),
        "out_bits": unsigned(2),
        "lane": unsigned(3),
        "row_step": unsigned(3),
        "pixel_step": unsigned(3),
        "pixel_segments": unsigned(1),
        "row_segments": unsigned(1),
        "row_align": unsigned(1),
    })


def store_quant_layout(pes):
    """The requantization parameters of one output tile: the output ``zero_point``, the final
    clamp ``low``/``high`` and per-PE ``multiplier`` and ``shift``."""
    return data.StructLayout({
        "zero_point": signed(16),
        "low": signed(16),
        "high": signed(16),
        "multiplier": data.ArrayLayout(unsigned(31), pes),
        "shift": data.ArrayLayout(signed(8), pes),
    })


_FLAGS = data.StructLayout({"zero": 1, "align": 1, "flush": 1, "lane": 3, "last": 1})


class StoreUnit(wiring.Component):
    """Requantizes and packs one output tile (see the module docstring).

    Parameters
    ----------
    pes : int
        Sums per accumulator row.
    acc_rows : int
        Accumulator PLM bank size, rows.
    requant_stages : int
        Pipeline stages of the requantizer.

    Members
    -------
    start : ``In(1)``
        Pulse: store the tile described by ``cfg`` and ``q`` (held until ``idle``).
    cfg : ``In(store_config_layout())``
    q : ``In(...)``
        ``zero_point``, ``low``, ``high`` (the final clamp) and per-PE ``multiplier``, ``shift``.
    acc_rd : ``In(ReadPort.Signature)``
        The accumulator PLM, bank bit on top of the row address.
    beats : ``Out(stream.Signature(64))``
        Lane-aligned beats for the DMA writer.
    busy : ``Out(1)``
        From ``start`` until the last beat has been accepted.
    """

    def __init__(self, *, pes=16, acc_rows=512, requant_stages=None):
        self._pes = check_int("pes", pes, minimum=1)
        self._acc_rows = check_int("acc_rows", acc_rows, minimum=1)
        self._requant = ({} if requant_stages is None else {"stages": requant_stages})
        super().__init__({
            "start": In(1),
            "cfg": In(store_config_layout()),
            "q": In(store_quant_layout(pes)),
            "acc_rd": In(memory.ReadPort.Signature(
                addr_width=_bits(acc_rows) + 1, shape=data.ArrayLayout(signed(_ACC), pes))),
            "beats": Out(stream.Signature(unsigned(64))),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, q = self.cfg, self.q
        row_bits = _bits(self._acc_rows)
        m.submodules.requant = rq = Requantizer(user_width=_FLAGS.size, **self._requant)

        # --- element source: pixel after pixel, out_seg elements each ------------------------
        pixel = Signal(2 * _DIM)                 # pixel being sent
        pixels = Signal(2 * _DIM)
        m.d.comb += pixels.eq(cfg.out_h * cfg.out_w)
        col = Signal(_DIM)
        k = Signal(_DIM)
        row = Signal.like(self.acc_rd.data)      # the sums of ``pixel``
        have = Signal()                          # ``row`` holds a pixel still to send
        reading = Signal()                       # the first read is in flight
        busy = Signal()
        seg_lane = Signal(3)                     # lane of the current pixel's segment
        row_lane = Signal(3)                     # lane of the current row's first segment
        m.d.comb += self.busy.eq(busy)

        fetch = Signal()                         # read the next pixel's sums this cycle
        fetch_addr = Signal(2 * _DIM)
        m.d.comb += [
            self.acc_rd.addr.eq(fetch_addr[:row_bits] | (cfg.acc_bank << row_bits)),
            self.acc_rd.en.eq(fetch),
        ]
        with m.If(self.start & ~busy):
            m.d.sync += [busy.eq(1), reading.eq(1), pixel.eq(0), col.eq(0), k.eq(0),
                         row_lane.eq(cfg.lane), seg_lane.eq(cfg.lane)]
            m.d.comb += [fetch.eq(1), fetch_addr.eq(0)]
        with m.If(reading):
            # sums of pixel 0 arrive; read pixel 1 behind them
            m.d.sync += [reading.eq(0), have.eq(1), row.eq(self.acc_rd.data)]
            m.d.comb += [fetch.eq(1), fetch_addr.eq(1)]

        last_k = k == cfg.out_seg - 1
        last_col = col == cfg.out_w - 1
        last_pixel = pixel == pixels - 1
        next_row_lane = (row_lane + cfg.row_step)[:3]
        flags = Signal(_FLAGS)
        # where the next segment starts, when this element ends one
        m.d.comb += [
            flags.zero.eq(k >= cfg.out_c),
            flags.align.eq(last_k & last_col & cfg.row_align),
            flags.last.eq(last_k & last_pixel),
        ]
        with m.If(last_k):
            with m.If(last_pixel):
                m.d.comb += flags.flush.eq(1)
            with m.Elif(cfg.pixel_segments & ~last_col):
                m.d.comb += [flags.flush.eq(1), flags.lane.eq(seg_lane + cfg.pixel_step)]
            with m.Elif(last_col & (cfg.pixel_segments | cfg.row_segments)):
                m.d.comb += [flags.flush.eq(1), flags.lane.eq(next_row_lane)]

        acc = Signal(signed(_ACC))
        mult = Signal(31)
        shift = Signal(signed(8))
        with m.Switch(k):
            for pe in range(self._pes):
                with m.Case(pe):
                    m.d.comb += [acc.eq(row[pe]), mult.eq(q.multiplier[pe]),
                                 shift.eq(q.shift[pe])]
        m.d.comb += [
            rq.i.valid.eq(have),
            rq.i.payload.acc.eq(acc),
            rq.i.payload.multiplier.eq(mult),
            rq.i.payload.shift.eq(shift),
            rq.i.payload.zero_point.eq(q.zero_point),
            rq.i.payload.low.eq(q.low),
            rq.i.payload.high.eq(q.high),
            rq.i.payload.user.eq(flags),
        ]
        with m.If(rq.i.valid & rq.i.ready):
            m.d.sync += k.eq(k + 1)
            with m.If(last_k):
                m.d.sync += [k.eq(0), pixel.eq(pixel + 1), col.eq(col + 1)]
                with m.If(flags.flush):
                    m.d.sync += seg_lane.eq(flags.lane)
                with m.If(last_col):
                    m.d.sync += [col.eq(0), row_lane.eq(next_row_lane),
                                 seg_lane.eq(next_row_lane)]
                with m.If(last_pixel):
                    m.d.sync += have.eq(0)
                with m.Else():
                    # sums of pixel + 1 were read behind this pixel's; read pixel + 2
                    m.d.sync += row.eq(self.acc_rd.data)
                    m.d.comb += [fetch.eq(1), fetch_addr.eq(pixel + 2)]

        # --- packer ---------------------------------------------------------------------------
        buf = Signal(64)
        pos = Signal(7)                          # next free bit of ``buf``
        out_valid = Signal()
        out_data = Signal(64)
        ended = Signal()                         # the tile's last beat is in ``out_data``
        m.d.comb += [self.beats.valid.eq(out_valid), self.beats.payload.eq(out_data)]
        with m.If(self.beats.valid & self.beats.ready):
            m.d.sync += out_valid.eq(0)
            with m.If(ended):
                m.d.sync += [busy.eq(0), ended.eq(0)]
        with m.If(self.start & ~busy):
            m.d.sync += [buf.eq(0), pos.eq(cfg.lane * 8)]

        width = Signal(5)
        m.d.comb += width.eq(Mux(cfg.out_bits == 0, 4, Mux(cfg.out_bits == 1, 8, 16)))
        element = Signal(16)
        out_flags = Signal(_FLAGS)
        m.d.comb += out_flags.eq(rq.o.payload.user)
        mask = Mux(cfg.out_bits == 0, 0xF, Mux(cfg.out_bits == 1, 0xFF, 0xFFFF))
        m.d.comb += element.eq(Mux(out_flags.zero, 0, rq.o.payload.value.as_unsigned() & mask))
        merged = Signal(64)
        m.d.comb += merged.eq(buf | (element << pos)[:64])
        after = Signal(8)
        m.d.comb += after.eq(pos + width)
        with m.If(out_flags.align):
            m.d.comb += after.eq((pos + width + 7) & ~7)
        m.d.comb += rq.o.ready.eq(~out_valid | self.beats.ready)
        with m.If(rq.o.valid & rq.o.ready):
            with m.If(out_flags.flush | (after >= 64)):
                m.d.sync += [out_valid.eq(1), out_data.eq(merged), buf.eq(0),
                             pos.eq(Mux(out_flags.flush, out_flags.lane * 8, 0)),
                             ended.eq(out_flags.last)]
            with m.Else():
                m.d.sync += [buf.eq(merged), pos.eq(after)]
        return m
