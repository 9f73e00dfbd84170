"""The store unit: accumulator PLM -> requantizers -> packed, lane-aligned output beats.

For every output pixel of the tile (row-major) the unit reads the pixel's ``pes`` sums from
the accumulator PLM and sends ``out_seg`` elements through the requantizers: the ``out_c``
results, then zeros (the layout's channel filler). The packer places each ``out_bits``-bit
element at its bit position in a 64-bit beat, lane-aligned to the byte address the DMA writer
will write it to (``docs/accelerator.md``): each DMA segment starts at its own byte lane, a
beat leaves when it is full or its segment ends, and rows of half-byte pixels are zero-filled
to a whole byte. Segments are those of :func:`hls_ref.socket.store_request` (the pixels of a
row, or rows, merge into one segment when they are contiguous in memory).

The unit has ``elements`` requantizers side by side. A *group* of up to ``elements``
consecutive elements of one pixel -- at most 64 bits of output, so four at 16 bits -- enters
them per cycle, across pixels too: a pixel takes ``ceil(out_seg / group)`` cycles. Each group
is decided two cycles before it is selected: the decision addresses the accumulator PLM at
the group's pixel, the read data is registered, and the group is taken from that register.
For timing, the PLM's slow clock-to-output reaches only a register, and nothing waits on a
combinational ready chain: the requantizers never stall (groups are decided only against
credits for the FIFO behind them), and the DMA writer's ready reaches only that FIFO's read
side. The group's results are placed side by side (their bits contiguous, as in memory) on
their way into the FIFO; the packer adds a group to the beat per cycle, carrying what does not
fit into the next beat. A group that ends a segment and does not fit sends two beats, the
second one cycle later.
"""

from amaranth.hdl import Array, Cat, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from hls_ref.config import STORE_ELEMENTS, store_group

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


#: A group's segment flags: ``align`` (a row of half-byte pixels ends: round up to a byte),
#: ``flush`` (a segment ends: the beat leaves), ``lane`` (the next segment's byte lane),
#: ``last`` (the tile's last group).
_FLAGS = data.StructLayout({"align": 1, "flush": 1, "lane": 3, "last": 1})

#: Groups in flight: the two cycles from decision to selection, the element register, the
#: requantizer's stages, and room for the packer to fall behind by a beat.
_FIFO_DEPTH = 18

#: A FIFO entry: the group's ``bits`` (its elements side by side from bit 0, zero above),
#: their number ``nbits`` and, for the packer's comparisons with its position, the positions
#: from which the group fills the beat (``full_from``; ``aligned_from`` when it ends a row of
#: half-byte pixels) and overflows it (``over_from``), and the flags.
_ENTRY = data.StructLayout({
    "bits": unsigned(64),
    "nbits": unsigned(7),
    "full_from": unsigned(7),
    "aligned_from": unsigned(7),
    "over_from": unsigned(7),
    "flags": _FLAGS,
})


class StoreUnit(wiring.Component):
    """Requantizes and packs one output tile (see the module docstring).

    Parameters
    ----------
    pes : int
        Sums per accumulator row.
    acc_rows : int
        Accumulator PLM bank size, rows.
    requant_stages : int
        Pipeline stages of the requantizers.
    acc_latency : int
        Cycles from an ``acc_rd`` address to its data: 1 (a block RAM's read port; the unit
        registers the data before it selects an element) or 2 (the data already comes from a
        register, which the unit then selects from directly). The latency of the unit is the
        same either way.
    elements : int
        Requantizers, one of :data:`hls_ref.config.STORE_ELEMENTS`: elements requantized per
        cycle (see :func:`hls_ref.config.store_group`). Each requantizer takes four DSP blocks.

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

    def __init__(self, *, pes=16, acc_rows=512, requant_stages=None, acc_latency=1,
                 elements=1):
        self._pes = check_int("pes", pes, minimum=1)
        self._acc_rows = check_int("acc_rows", acc_rows, minimum=1)
        self._acc_latency = check_int("acc_latency", acc_latency, minimum=1, maximum=2)
        if elements not in STORE_ELEMENTS:
            raise ValueError(f"elements must be one of {STORE_ELEMENTS}, not {elements!r}")
        self._elements = elements
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

    @property
    def elements(self):
        """Requantizers (elements requantized per cycle, at most 64 bits' worth)."""
        return self._elements

    def elaborate(self, platform):
        m = Module()
        cfg, q = self.cfg, self.q
        lanes = self._elements
        row_bits = address_bits(self._acc_rows)
        count_bits = lanes.bit_length()          # a group's element count, 1 to ``lanes``
        # lane 0 carries the group's flags and count; every lane whether it is a blank (a
        # channel filler, or beyond the group's count: a zero)
        user = data.StructLayout({"blank": 1, "flags": _FLAGS, "count": count_bits})
        requants = [Requantizer(user_width=user.size if j == 0 else 1, **self._requant)
                    for j in range(lanes)]
        for j, rq in enumerate(requants):
            m.submodules[f"requant{j}" if lanes > 1 else "requant"] = rq

        # --- group source: pixel after pixel, out_seg elements each, a group per cycle ------
        # The decision stage walks (pixel, k) and addresses the accumulator PLM at the decided
        # group's pixel in the same cycle; the read data is registered every cycle (no
        # enable: a wide register with an enable is a high-fan-out load), so two cycles later
        # the register holds that pixel's sums and the group is selected from it. Groups are
        # decided only against credits for the FIFO behind the requantizers, so they never
        # stall and the DMA writer's ready reaches no further than the FIFO.
        pixel = Signal(row_bits)                 # accumulator row of the decided group
        col = Signal(_DIM)
        out_row = Signal(_DIM)
        k = Signal(_DIM)                         # the group's first element in its pixel
        left = Signal(_DIM)                      # out_seg - k: elements left in the pixel
        have = Signal()                          # groups are left to decide
        busy = Signal()
        seg_lane = Signal(3)                     # lane of the current pixel's segment
        row_lane = Signal(3)                     # lane of the current row's first segment
        m.d.comb += self.busy.eq(busy)

        # the group size of the command (registered at the start; cfg holds still)
        widths = Array([4, 8, 16, 16])
        group = Signal(range(lanes + 1))

        depth = _FIFO_DEPTH
        credits = Signal(range(depth + 1), init=depth)
        # ``credits != 0``, kept as a register of its own: ``issue`` then is the AND of two
        # flip-flops, not the end of a comparison, in front of everything that steps with it
        # (a compare of the counter in front of ``issue`` headed the unit's longest path).
        # After this cycle credits stay nonzero when one is returned, when two or more are
        # left, or when one is left and none is taken.
        credits_ok = Signal(init=1)
        issue = Signal()                         # a group is decided this cycle
        popped = Signal()                        # the packer takes a group from the FIFO
        m.d.comb += issue.eq(have & credits_ok)
        m.d.sync += [credits.eq(credits - issue + popped),
                     credits_ok.eq(popped | (credits >= 2) | ((credits == 1) & ~have))]

        # Whether k, col and out_row are at their last values is a register of each, kept up
        # to date as they step (cfg holds still until done): a comparison in front of the
        # flags was the head of a long path to seg_lane. An index stepping from v is at its
        # last value next when v == n - 2, or, wrapping to 0, when n == 1; the group of k is
        # the pixel's last when no more than a group is left.
        last_k, last_col, last_row = (Signal(name=f"{name}_at_last")
                                      for name in ("k", "col", "row"))
        last_pixel = last_row & last_col
        one_group = cfg.out_seg <= group
        with m.If(self.start & ~busy):
            start_group = Array([store_group(lanes, w) for w in (4, 8, 16, 16)])[cfg.out_bits]
            m.d.sync += [group.eq(start_group), last_k.eq(cfg.out_seg <= start_group),
                         last_col.eq(cfg.out_w == 1), last_row.eq(cfg.out_h == 1)]
        with m.Elif(issue):
            m.d.sync += last_k.eq(Mux(last_k, one_group, left <= 2 * group))
            with m.If(last_k):
                m.d.sync += last_col.eq(Mux(last_col, cfg.out_w == 1, col == cfg.out_w - 2))
                with m.If(last_col):
                    m.d.sync += last_row.eq(Mux(last_row, cfg.out_h == 1,
                                                out_row == cfg.out_h - 2))
        m.d.comb += [
            self.acc_rd.addr.eq(pixel | (cfg.acc_bank << row_bits)),
            self.acc_rd.en.eq(1),
        ]
        with m.If(self.start & ~busy):
            m.d.sync += [busy.eq(1), have.eq(1), pixel.eq(0), col.eq(0), out_row.eq(0),
                         k.eq(0), left.eq(cfg.out_seg), row_lane.eq(cfg.lane),
                         seg_lane.eq(cfg.lane)]

        next_row_lane = (row_lane + cfg.row_step)[:3]
        flags = Signal(_FLAGS)
        # where the next segment starts, when this group ends one
        m.d.comb += [
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
        count = Signal(count_bits)
        m.d.comb += count.eq(Mux(last_k, left, group))
        blanks = Signal(lanes)                   # channel fillers and elements beyond count
        m.d.comb += blanks.eq(Cat((k + j >= cfg.out_c) | (count <= j) for j in range(lanes)))

        # Two cycles from decision to selection: the PLM read, then the sums register. Only
        # the low bits of k + j select a PE: k + j >= pes implies k + j >= out_c (out_c <=
        # pes), so such an element is a blank whatever it selects.
        sel_bits = address_bits(self._pes)
        if self._acc_latency == 1:
            sums = Signal.like(self.acc_rd.data, reset_less=True)
            m.d.sync += sums.eq(self.acc_rd.data)
        else:
            sums = self.acc_rd.data
        # the decided group's valid, flags and count wait two cycles; its PE selects one,
        # then their second registers are the copies below
        head = data.StructLayout({"flags": _FLAGS, "count": count_bits, "blanks": lanes})
        valid_d1, valid_d2 = Signal(name="valid_d1"), Signal(name="valid_d2")
        head_d1, head_d2 = Signal(head, name="head_d1"), Signal(head, name="head_d2")
        sel_d1 = [Signal(sel_bits, name=f"sel{j}_d1") for j in range(lanes)]
        m.d.sync += [valid_d1.eq(issue), valid_d2.eq(valid_d1),
                     head_d1.eq(Cat(flags, count, blanks)), head_d2.eq(head_d1)]
        m.d.sync += [sel.eq((k + j)[:sel_bits]) for j, sel in enumerate(sel_d1)]
        selected = valid_d2
        # Each PE select drives a ``pes``-to-1 multiplexer per selected bit (70 of them): its
        # second register is one copy per byte of the selection, so no select flip-flop drives
        # more than a byte's multiplexers.
        selections = [(sums, "acc", _ACC), (q.multiplier, "multiplier", 31),
                      (q.shift, "shift", 8)]
        slices = [(source, field, lo, min(lo + 8, width))
                  for source, field, width in selections for lo in range(0, width, 8)]

        # the element registers: the requantizers' operands
        element_valid = Signal()
        m.d.sync += element_valid.eq(selected)
        for j, rq in enumerate(requants):
            m.submodules[f"sel_copies{j}" if lanes > 1 else "sel_copies"] = copies = \
                Replicas(sel_bits, len(slices))
            m.d.comb += [copies.d.eq(sel_d1[j]), copies.enable.eq(1)]
            element = Signal(rq.input_layout, name=f"element{j}", reset_less=True)
            lane_user = (Cat(head_d2.blanks[j], head_d2.flags, head_d2.count) if j == 0
                         else head_d2.blanks[j])
            with m.If(selected):
                m.d.sync += [
                    element.zero_point.eq(q.zero_point),
                    element.low.eq(q.low),
                    element.high.eq(q.high),
                    element.user.eq(lane_user),
                ]
                for copy, (source, field, lo, hi) in enumerate(slices):
                    picked = source[copies.q[copy]]
                    m.d.sync += getattr(element, field)[lo:hi].eq(Value.cast(picked)[lo:hi])
            m.d.comb += [
                rq.i.valid.eq(element_valid),
                rq.i.payload.eq(element),
                rq.o.ready.eq(1),
            ]
        # The lane of the segment after this group, and whether this group moves to it,
        # are decided from registers alone (the loop flags, the lanes and cfg), so that
        # ``issue`` meets them only in front of seg_lane's flip-flops. The last pixel moves
        # too; nothing reads seg_lane after it until the next start sets it.
        seg_step = last_k & (last_col | cfg.pixel_segments)
        seg_next = Mux(last_col, next_row_lane, (seg_lane + cfg.pixel_step)[:3])
        with m.If(issue & seg_step):
            m.d.sync += seg_lane.eq(seg_next)
        with m.If(issue):
            m.d.sync += [k.eq(k + group), left.eq(left - group)]
            with m.If(last_k):
                m.d.sync += [k.eq(0), left.eq(cfg.out_seg), pixel.eq(pixel + 1),
                             col.eq(col + 1)]
                with m.If(last_col):
                    m.d.sync += [col.eq(0), out_row.eq(out_row + 1),
                                 row_lane.eq(next_row_lane)]
                with m.If(last_pixel):
                    m.d.sync += have.eq(0)

        # The element width and its mask, registered at the start (``cfg`` holds still).
        width_code = Signal(2)                   # out_bits, 3 read as 16 bits
        width = Signal(5)
        mask = Signal(16)
        with m.If(self.start & ~busy):
            m.d.sync += [width_code.eq(Mux(cfg.out_bits == 3, 2, cfg.out_bits)),
                         width.eq(widths[cfg.out_bits]),
                         mask.eq(Array([0xF, 0xFF, 0xFFFF, 0xFFFF])[cfg.out_bits])]

        # requantized groups wait here for the packer, their elements side by side (bit
        # ``j * width`` on); credits guarantee the room
        out_user = Signal(user)
        m.d.comb += out_user.eq(requants[0].o.payload.user)
        values = [Mux(rq.o.payload.user[0], 0, rq.o.payload.value & mask) for rq in requants]
        entry = Signal(_ENTRY)
        nbits = Signal(7)
        m.d.comb += nbits.eq(out_user.count << (width_code + 2))
        with m.Switch(width_code):
            for code, bits in enumerate((4, 8, 16)):
                with m.Case(code):
                    n = store_group(lanes, bits)
                    m.d.comb += entry.bits.eq(Cat(v[:bits] for v in values[:n]))
        m.d.comb += [
            entry.nbits.eq(nbits),
            entry.full_from.eq(Mux(nbits >= 64, 0, 64 - nbits)),
            entry.aligned_from.eq(Mux(nbits >= 57, 0, 57 - nbits)),
            entry.over_from.eq(65 - nbits),
            entry.flags.eq(out_user.flags),
        ]
        m.submodules.results = results = SyncFIFOBuffered(width=_ENTRY.size, depth=depth)
        m.d.comb += [results.w_en.eq(requants[0].o.valid), results.w_data.eq(entry)]

        # --- packer ---------------------------------------------------------------------------
        # A group enters the beat at ``pos`` (a multiple of 4 bits); what passes bit 64 stays
        # for the next beat. Whether the beat is full or overflows is a comparison of ``pos``
        # with a register of the FIFO entry, not an addition and a comparison, in front of
        # the 64-bit beat registers' enables.
        buf = Signal(64)
        pos = Signal(6)                          # next free bit of ``buf``
        tail = Signal()                          # buf holds a segment's end: its own beat
        tail_lane = Signal(3)
        tail_last = Signal()
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

        head_entry = Signal(_ENTRY)
        m.d.comb += head_entry.eq(results.r_data)
        out_flags = head_entry.flags
        merged = Signal(128)
        m.d.comb += merged.eq(buf | (head_entry.bits << Cat(0, 0, pos[2:])))
        after = Signal(7)
        m.d.comb += after.eq(pos + head_entry.nbits)
        with m.If(out_flags.align):
            m.d.comb += after.eq((pos + head_entry.nbits + 7) & ~7)
        full = Signal()                          # after >= 64
        m.d.comb += full.eq(Mux(out_flags.align, pos >= head_entry.aligned_from,
                                pos >= head_entry.full_from))
        over = Signal()                          # after > 64: bits for the next beat
        m.d.comb += over.eq(pos >= head_entry.over_from)
        free = Signal()                          # out_data is free for a beat
        m.d.comb += [
            free.eq(~out_valid | self.beats.ready),
            results.r_en.eq(free & ~tail),
            popped.eq(results.r_en & results.r_rdy),
        ]
        with m.If(tail & free):
            m.d.sync += [out_valid.eq(1), out_data.eq(buf), buf.eq(0), pos.eq(tail_lane * 8),
                         ended.eq(tail_last), tail.eq(0)]
        with m.If(popped):
            with m.If(out_flags.flush | full):
                m.d.sync += [out_valid.eq(1), out_data.eq(merged[:64]), buf.eq(merged[64:]),
                             pos.eq(after[:6])]
                with m.If(out_flags.flush):
                    with m.If(over):
                        m.d.sync += [tail.eq(1), tail_lane.eq(out_flags.lane),
                                     tail_last.eq(out_flags.last)]
                    with m.Else():
                        m.d.sync += [buf.eq(0), pos.eq(out_flags.lane * 8),
                                     ended.eq(out_flags.last)]
            with m.Else():
                m.d.sync += [buf.eq(merged[:64]), pos.eq(after)]
        return m
