"""The store unit: accumulator PLM -> requantizer -> packed, lane-aligned output beats.

For every output pixel of the tile (row-major) the unit reads the pixel's ``pes`` sums from
the accumulator PLM and sends ``out_seg`` elements through the requantizer: the ``out_c``
results, then zeros (the layout's channel filler). The packer places each ``out_bits``-bit
element at its bit position in a 64-bit beat, lane-aligned to the byte address the DMA writer
will write it to (``docs/accelerator.md``): each DMA segment starts at its own byte lane, a
beat leaves when it is full or its segment ends, and rows of half-byte pixels are zero-filled
to a whole byte. Segments are those of :func:`hls_ref.socket.store_request` (the pixels of a
row, or rows, merge into one segment when they are contiguous in memory).

One element per cycle enters the requantizer, across pixels too. Each element is decided two
cycles before it is selected: the decision addresses the accumulator PLM at the element's
pixel, the read data is registered, and the element is taken from that register. For timing,
the PLM's slow clock-to-output reaches only a register, and nothing waits on a combinational
ready chain: the requantizer never stalls (elements are decided only against credits for the
FIFO behind it), and the DMA writer's ready reaches only that FIFO's read side.
"""

from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .params import address_bits, check_int
from .replica import Replicas
from .requant import Requantizer

__all__ = ["StoreUnit", "store_config_layout", "store_quant_layout"]

_DIM = 16
_ACC = 32



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

#: Elements in flight: the two cycles from decision to selection, the element register, the
#: requantizer's stages, and room for the packer to fall behind by a beat.
_FIFO_DEPTH = 18


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
    acc_latency : int
        Cycles from an ``acc_rd`` address to its data: 1 (a block RAM's read port; the unit
        registers the data before it selects an element) or 2 (the data already comes from a
        register, which the unit then selects from directly). The latency of the unit is the
        same either way.

    Members
    -------
    start : ``In(1)``
        Pulse: store the tile described by ``cfg`` and ``q`` (held until ``idle``).
    cfg : ``In(store_config_layout())``
    q : ``In(...)``
        ``zero_point``, ``low``, ``high`` (the final clamp) and per-PE ``multiplier``, ``shift``.
    acc_rd : ``In(ReadPort.Signature)``
        The accumulator PLM, bank bit on top of the row address; ``en`` is always 1 (the unit
        relies on the read data following the address, ``acc_latency`` cycles later).
    beats : ``Out(stream.Signature(64))``
        Lane-aligned beats for the DMA writer.
    busy : ``Out(1)``
        From ``start`` until the last beat has been accepted.
    """

    def __init__(self, *, pes=16, acc_rows=512, requant_stages=None, acc_latency=1):
        self._pes = check_int("pes", pes, minimum=1)
        self._acc_rows = check_int("acc_rows", acc_rows, minimum=1)
        self._acc_latency = check_int("acc_latency", acc_latency, minimum=1, maximum=2)
        self._requant = ({} if requant_stages is None else {"stages": requant_stages})
        super().__init__({
            "start": In(1),
            "cfg": In(store_config_layout()),
            "q": In(store_quant_layout(pes)),
            "acc_rd": In(memory.ReadPort.Signature(
                addr_width=address_bits(acc_rows) + 1, shape=data.ArrayLayout(signed(_ACC), pes))),
            "beats": Out(stream.Signature(unsigned(64))),
            "busy": Out(1),
        })

    @property
    def acc_latency(self):
        """Cycles from an accumulator PLM read address to its data (1 or 2)."""
        return self._acc_latency

    def elaborate(self, platform):
        m = Module()
        cfg, q = self.cfg, self.q
        row_bits = address_bits(self._acc_rows)
        m.submodules.requant = rq = Requantizer(user_width=_FLAGS.size, **self._requant)

        # --- element source: pixel after pixel, out_seg elements each ------------------------
        # The decision stage walks (pixel, k) and addresses the accumulator PLM at the decided
        # element's pixel in the same cycle; the read data is registered every cycle (no
        # enable: a wide register with an enable is a high-fan-out load), so two cycles later
        # the register holds that pixel's sums and the element is selected from it. Elements
        # are decided only against credits for the FIFO behind the requantizer, so the
        # requantizer never stalls and the DMA writer's ready reaches no further than the FIFO.
        pixel = Signal(row_bits)                 # accumulator row of the decided element
        col = Signal(_DIM)
        out_row = Signal(_DIM)
        k = Signal(_DIM)
        have = Signal()                          # elements are left to decide
        busy = Signal()
        seg_lane = Signal(3)                     # lane of the current pixel's segment
        row_lane = Signal(3)                     # lane of the current row's first segment
        m.d.comb += self.busy.eq(busy)

        depth = _FIFO_DEPTH
        credits = Signal(range(depth + 1), init=depth)
        # ``credits != 0``, kept as a register of its own: ``issue`` then is the AND of two
        # flip-flops, not the end of a comparison, in front of everything that steps with it
        # (a compare of the counter in front of ``issue`` headed the unit's longest path).
        # After this cycle credits stay nonzero when one is returned, when two or more are
        # left, or when one is left and none is taken.
        credits_ok = Signal(init=1)
        issue = Signal()                         # an element is decided this cycle
        popped = Signal()                        # the packer takes an element from the FIFO
        m.d.comb += issue.eq(have & credits_ok)
        m.d.sync += [credits.eq(credits - issue + popped),
                     credits_ok.eq(popped | (credits >= 2) | ((credits == 1) & ~have))]

        # Whether k, col and out_row are at their last values is a register of each, kept up
        # to date as they step (cfg holds still until done): a comparison in front of the
        # flags was the head of a long path to seg_lane. An index stepping from v is at its
        # last value next when v == n - 2, or, wrapping to 0, when n == 1.
        loops = {"k": (k, cfg.out_seg), "col": (col, cfg.out_w), "row": (out_row, cfg.out_h)}
        at_last = {name: Signal(name=f"{name}_at_last") for name in loops}
        last_k, last_col, last_row = at_last["k"], at_last["col"], at_last["row"]
        last_pixel = last_row & last_col
        steps = {"k": issue, "col": issue & last_k, "row": issue & last_k & last_col}
        for name, (index, count) in loops.items():
            with m.If(self.start & ~busy):
                m.d.sync += at_last[name].eq(count == 1)
            with m.Elif(steps[name]):
                m.d.sync += at_last[name].eq(Mux(at_last[name], count == 1,
                                                 index == count - 2))
        m.d.comb += [
            self.acc_rd.addr.eq(pixel | (cfg.acc_bank << row_bits)),
            self.acc_rd.en.eq(1),
        ]
        with m.If(self.start & ~busy):
            m.d.sync += [busy.eq(1), have.eq(1), pixel.eq(0), col.eq(0), out_row.eq(0),
                         k.eq(0), row_lane.eq(cfg.lane), seg_lane.eq(cfg.lane)]

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

        # Two cycles from decision to selection: the PLM read, then the sums register. Only
        # the low bits of k select a PE: k >= pes implies k >= out_c (out_c <= pes), so such
        # an element is a zero filler whatever it selects.
        sel_bits = address_bits(self._pes)
        if self._acc_latency == 1:
            sums = Signal.like(self.acc_rd.data, reset_less=True)
            m.d.sync += sums.eq(self.acc_rd.data)
        else:
            sums = self.acc_rd.data
        # the decided element's valid and flags wait two cycles; its PE select one, then its
        # second register is the copies below
        valid_d1, valid_d2 = Signal(name="valid_d1"), Signal(name="valid_d2")
        flags_d1, flags_d2 = Signal(_FLAGS, name="flags_d1"), Signal(_FLAGS, name="flags_d2")
        sel_d1 = Signal(sel_bits)
        m.d.sync += [valid_d1.eq(issue), valid_d2.eq(valid_d1), flags_d1.eq(flags),
                     flags_d2.eq(flags_d1), sel_d1.eq(k[:sel_bits])]
        selected, sel_flags = valid_d2, flags_d2
        # The PE select drives a ``pes``-to-1 multiplexer per selected bit (70 of them): its
        # second register is one copy per byte of the selection, so no select flip-flop drives
        # more than a byte's multiplexers.
        selections = [(sums, "acc", _ACC), (q.multiplier, "multiplier", 31),
                      (q.shift, "shift", 8)]
        slices = [(source, field, lo, min(lo + 8, width))
                  for source, field, width in selections for lo in range(0, width, 8)]
        m.submodules.sel_copies = sel_copies = Replicas(sel_bits, len(slices))
        m.d.comb += [sel_copies.d.eq(sel_d1), sel_copies.enable.eq(1)]

        # the element register: the requantizer's operands
        element_valid = Signal()
        element = Signal(rq.input_layout, reset_less=True)
        m.d.sync += element_valid.eq(selected)
        with m.If(selected):
            m.d.sync += [
                element.zero_point.eq(q.zero_point),
                element.low.eq(q.low),
                element.high.eq(q.high),
                element.user.eq(sel_flags),
            ]
            for copy, (source, field, lo, hi) in enumerate(slices):
                picked = source[sel_copies.q[copy]]
                m.d.sync += getattr(element, field)[lo:hi].eq(Value.cast(picked)[lo:hi])
        m.d.comb += [
            rq.i.valid.eq(element_valid),
            rq.i.payload.eq(element),
            rq.o.ready.eq(1),
        ]
        # The lane of the segment after this element, and whether this element moves to it,
        # are decided from registers alone (the loop flags, the lanes and cfg), so that
        # ``issue`` meets them only in front of seg_lane's flip-flops. The last pixel moves
        # too; nothing reads seg_lane after it until the next start sets it.
        seg_step = last_k & (last_col | cfg.pixel_segments)
        seg_next = Mux(last_col, next_row_lane, (seg_lane + cfg.pixel_step)[:3])
        with m.If(issue & seg_step):
            m.d.sync += seg_lane.eq(seg_next)
        with m.If(issue):
            m.d.sync += k.eq(k + 1)
            with m.If(last_k):
                m.d.sync += [k.eq(0), pixel.eq(pixel + 1), col.eq(col + 1)]
                with m.If(last_col):
                    m.d.sync += [col.eq(0), out_row.eq(out_row + 1),
                                 row_lane.eq(next_row_lane)]
                with m.If(last_pixel):
                    m.d.sync += have.eq(0)

        # requantized elements wait here for the packer; credits guarantee the room
        m.submodules.results = results = SyncFIFOBuffered(
            width=16 + _FLAGS.size, depth=depth)
        m.d.comb += [
            results.w_en.eq(rq.o.valid),
            results.w_data.eq(Cat(rq.o.payload.value, rq.o.payload.user)),
        ]

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
        # The element width, its mask and the positions from which an element fills the beat
        # are registered at the start (``cfg`` holds still): whether the beat is full then
        # is a comparison of ``pos`` with a register, not an addition and a comparison after
        # the configuration's decode, in front of the 64-bit beat registers' enables.
        width = Signal(5)
        mask = Signal(16)
        full_from = Signal(7)                    # pos + width >= 64 from here on
        full_aligned_from = Signal(7)            # likewise, rounded up to a byte
        widths = Array([4, 8, 16, 16])
        with m.If(self.start & ~busy):
            m.d.sync += [buf.eq(0), pos.eq(cfg.lane * 8),
                         width.eq(widths[cfg.out_bits]),
                         mask.eq(Array([0xF, 0xFF, 0xFFFF, 0xFFFF])[cfg.out_bits]),
                         full_from.eq(64 - widths[cfg.out_bits]),
                         full_aligned_from.eq(57 - widths[cfg.out_bits])]

        packed = Signal(16)
        out_flags = Signal(_FLAGS)
        value = results.r_data[:16]
        m.d.comb += out_flags.eq(results.r_data[16:])
        m.d.comb += packed.eq(Mux(out_flags.zero, 0, value & mask))
        merged = Signal(64)
        m.d.comb += merged.eq(buf | (packed << pos)[:64])
        after = Signal(8)
        m.d.comb += after.eq(pos + width)
        with m.If(out_flags.align):
            m.d.comb += after.eq((pos + width + 7) & ~7)
        full = Signal()                          # after >= 64
        m.d.comb += full.eq(Mux(out_flags.align, pos >= full_aligned_from, pos >= full_from))
        m.d.comb += [
            results.r_en.eq(~out_valid | self.beats.ready),
            popped.eq(results.r_en & results.r_rdy),
        ]
        with m.If(popped):
            with m.If(out_flags.flush | full):
                m.d.sync += [out_valid.eq(1), out_data.eq(merged), buf.eq(0),
                             pos.eq(Mux(out_flags.flush, out_flags.lane * 8, 0)),
                             ended.eq(out_flags.last)]
            with m.Else():
                m.d.sync += [buf.eq(merged), pos.eq(after)]
        return m
