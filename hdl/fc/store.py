"""The FC store: accumulator PLM rows -> the FC requantizer -> packed, lane-aligned beats.

Ref: ``docs/accelerator.md`` (FC commands): output row ``b`` (one per input vector) is one DMA
segment of ``out_seg`` elements of ``out_bits`` bits, the ``out_c`` results and then zeros,
zero-filled to a whole byte. Element ``n < out_c`` of row ``b`` is the sum of PE ``n % pes``
in accumulator row ``(n // pes) * 2**batch_bits + b`` (:class:`hdl.fc.core.FCCore`).

The store runs behind the core: an element is decided only once the core has written its
row (``rows_ready``), so a command's outputs are requantized while its later blocks compute
and only the last block's remain when the core finishes. One element per cycle: each is
decided two cycles before it is selected (the decision
addresses the accumulator PLM, whose data comes from a register), goes through
:class:`hdl.fc.requant.DoubleRequantizer` without stalling -- an element is decided only
against a credit for the FIFO behind the requantizer -- and the packer places it at its bit
position in the beat, lane-aligned to the byte address the DMA writer writes it to: a row
starts at byte lane ``lane`` (``out_addr % 8``), the next one ``row_step`` lanes further
(the row stride in bytes, modulo 8); a beat leaves when it is full or its row ends.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..params import check_int
from .requant import LATENCY, DoubleRequantizer

__all__ = ["FCStore", "fc_store_config_layout", "fc_store_quant_layout"]

_FIFO_DEPTH = LATENCY + 8
_ELEMENT = data.StructLayout({"value": signed(16), "row_last": 1, "last": 1})


def fc_store_config_layout(max_batch):
    """One command's store: its accumulator bank, ``batch`` rows of ``out_seg`` elements
    (``out_c`` results), the width code ``out_bits`` (0: 4, 1: 8, 2: 16 bits), the first
    row's byte ``lane`` and the ``row_step`` between rows (bytes, modulo 8)."""
    return data.StructLayout({
        "acc_bank": unsigned(1),
        "batch": range(max_batch + 1),
        "out_c": unsigned(16),
        "out_seg": unsigned(16),
        "out_bits": unsigned(2),
        "lane": unsigned(3),
        "row_step": unsigned(3),
    })


def fc_store_quant_layout():
    """The requantization of one command: the scale's IEEE bits, the output zero point and
    the final clamp (activation, ReLU and output width folded in)."""
    return data.StructLayout({"scale": unsigned(64), "zero_point": signed(16),
                              "low": signed(16), "high": signed(16)})


class FCStore(wiring.Component):
    """Requantizes and packs one FC command's outputs (see the module docstring).

    Parameters
    ----------
    pes : int
        Sums per accumulator row.
    max_batch : int
        Rows per output block in the accumulator PLM: ``2**batch_bits``.
    acc_addr_width : int
        Accumulator PLM row address width, with the bank bit.

    Members
    -------
    start : ``In(1)``
        Pulse: store ``cfg`` with ``q`` (both held until ``busy`` falls).
    cfg : ``In(fc_store_config_layout(max_batch))``
    q : ``In(fc_store_quant_layout())``
    acc_rd : ``Out(memory.ReadPort.Signature)``
        The accumulator PLM; its data 2 cycles after the address.
    beats : ``Out(stream.Signature(64))``
        Lane-aligned beats for the DMA writer.
    rows_ready : ``In(acc_addr_width)``
        Accumulator rows of ``cfg.acc_bank`` below this address hold the command's final
        sums (the core writes them in address order): an element is decided only once its
        row is below it, so the store runs while the core computes the later blocks.
    busy : ``Out(1)``
        From ``start`` until the last beat is accepted.
    """

    def __init__(self, *, pes=4, max_batch=8, acc_addr_width=10):
        self._pes = check_int("pes", pes, minimum=1)
        self._max_batch = check_int("max_batch", max_batch, minimum=1)
        self._batch_bits = max(1, (max_batch - 1).bit_length())
        self._acc_addr_width = check_int("acc_addr_width", acc_addr_width, minimum=2)
        super().__init__({
            "start": In(1),
            "cfg": In(fc_store_config_layout(max_batch)),
            "q": In(fc_store_quant_layout()),
            "acc_rd": Out(memory.ReadPort.Signature(
                addr_width=acc_addr_width, shape=data.ArrayLayout(signed(32), pes))),
            "beats": Out(stream.Signature(64)),
            "rows_ready": In(acc_addr_width),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        pes = self._pes

        # --- deciding elements: (b, n) in row-major order, against credits ----------------
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=_ELEMENT.size, depth=_FIFO_DEPTH)
        deciding = Signal()
        credits = Signal(range(_FIFO_DEPTH + 1), init=_FIFO_DEPTH)
        b = Signal(range(self._max_batch + 1))
        n = Signal(16)
        block = Signal(8)
        lane = Signal(range(pes))
        b_last = Signal()
        n_last = Signal()
        filler = Signal()                # n >= out_c
        row = Cat(Cat(b, Const(0, self._batch_bits))[:self._batch_bits], block,
                  Const(0, 16))[:self._acc_addr_width - 1]
        # (the filler reads no row: its block may lie beyond the command's)
        decide = deciding & (credits != 0) & (filler | (row < self.rows_ready))
        popped = fifo.r_en & fifo.r_rdy
        m.d.sync += credits.eq(credits - decide + popped)
        with m.If(self.start):
            m.d.sync += [deciding.eq(1), b.eq(0), n.eq(0), block.eq(0), lane.eq(0),
                         b_last.eq(cfg.batch == 1), n_last.eq(cfg.out_seg == 1),
                         filler.eq(0)]
        with m.If(decide):
            with m.If(n_last):
                m.d.sync += [n.eq(0), block.eq(0), lane.eq(0), n_last.eq(cfg.out_seg == 1),
                             filler.eq(0), b.eq(b + 1), b_last.eq(b + 2 == cfg.batch)]
                with m.If(b_last):
                    m.d.sync += deciding.eq(0)
            with m.Else():
                m.d.sync += [n.eq(n + 1), n_last.eq(n + 2 == cfg.out_seg),
                             filler.eq(n + 1 >= cfg.out_c)]
                with m.If(lane == pes - 1):
                    m.d.sync += [lane.eq(0), block.eq(block + 1)]
                with m.Else():
                    m.d.sync += lane.eq(lane + 1)
        m.d.comb += [self.acc_rd.addr.eq(Cat(row, cfg.acc_bank)), self.acc_rd.en.eq(1)]

        # the decision's fields meet the row two cycles later
        fields = data.StructLayout({"valid": 1, "lane": range(pes), "zero": 1,
                                    "row_last": 1, "last": 1})
        now = Signal(fields)
        m.d.comb += [now.valid.eq(decide), now.lane.eq(lane), now.zero.eq(filler),
                     now.row_last.eq(n_last), now.last.eq(n_last & b_last)]
        later = now
        for k in range(2):
            nxt = Signal(fields, name=f"decided{k + 1}")
            m.d.sync += nxt.eq(later)
            later = nxt
        m.submodules.requant = requant = DoubleRequantizer(user_width=3)
        chosen = Signal(signed(32))
        m.d.comb += chosen.eq(Mux(later.zero, 0, self.acc_rd.data[later.lane]))
        m.d.comb += [
            requant.scale.eq(self.q.scale), requant.zero_point.eq(self.q.zero_point),
            requant.low.eq(self.q.low), requant.high.eq(self.q.high),
            requant.i.valid.eq(later.valid), requant.i.payload.acc.eq(chosen),
            requant.i.payload.user.eq(Cat(later.zero, later.row_last, later.last)),
            requant.o.ready.eq(1),
        ]
        # (the filler bypasses the arithmetic: a zero element, whatever the zero point)
        result = requant.o.payload
        element = data.View(_ELEMENT, fifo.w_data)
        m.d.comb += [element.value.eq(Mux(result.user[0], 0, result.value)),
                     element.row_last.eq(result.user[1]), element.last.eq(result.user[2]),
                     fifo.w_en.eq(requant.o.valid)]

        # --- the packer ---------------------------------------------------------------------
        head = data.View(_ELEMENT, fifo.r_data)
        out = self.beats
        pos = Signal(5)                  # nibble position in the beat being filled
        beat = Signal(64)
        seg_lane = Signal(3)             # byte lane of the current row's first byte
        width = Signal(3)                # nibbles per element
        m.d.comb += width.eq(Mux(cfg.out_bits == 0, 1, Mux(cfg.out_bits == 1, 2, 4)))
        with m.If(self.start):
            m.d.sync += [pos.eq(cfg.lane << 1), seg_lane.eq(cfg.lane), beat.eq(0)]
        can = ~out.valid | out.ready
        m.d.comb += fifo.r_en.eq(can)
        with m.If(out.valid & out.ready):
            m.d.sync += out.valid.eq(0)
        mask = Mux(cfg.out_bits == 0, 0xF, Mux(cfg.out_bits == 1, 0xFF, 0xFFFF))
        placed = (head.value.as_unsigned() & mask) << (pos[:4] << 2)
        merged = beat | placed[:64]
        new_pos = pos + width
        emit = (new_pos == 16) | head.row_last
        next_lane = (seg_lane + cfg.row_step)[:3]
        with m.If(fifo.r_rdy & can):
            with m.If(emit):
                m.d.sync += [out.payload.eq(merged), out.valid.eq(1), beat.eq(0),
                             pos.eq(Mux(head.row_last, next_lane << 1, 0))]
                with m.If(head.row_last):
                    m.d.sync += seg_lane.eq(next_lane)
            with m.Else():
                m.d.sync += [beat.eq(merged), pos.eq(new_pos)]

        last_out = Signal()              # the beat in ``out`` is the command's last
        with m.If(fifo.r_rdy & can & emit):
            m.d.sync += last_out.eq(head.last)
        active = Signal()
        with m.If(self.start):
            m.d.sync += active.eq(1)
        with m.Elif(out.valid & out.ready & last_out):
            m.d.sync += active.eq(0)
        m.d.comb += self.busy.eq(active)
        return m
