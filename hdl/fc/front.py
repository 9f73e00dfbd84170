"""The FC datapath's front end: checks an FC descriptor, requests its loads, hands it to the
core while its weights stream, and lets go of it once every load has completed.

Ref: ``hls_ref.descriptor.check_fc`` (the checks, in that order) and ``docs/accelerator.md``
(FC commands). For one descriptor:

1. **checks** -- the field checks are registered as the descriptor arrives, the two products
   they need (``in_h * vector_beats`` for the input PLM, ``blocks * steps`` for the weight
   rows) come from one pipelined multiplier, the late checks are registered, and the first
   failing rule's code refuses the descriptor;
2. **loads** -- once the operand bank (input PLM, bias memory, quantization registers) is
   free, three DMA requests back to back: the input vectors, the quantization block (when the
   command starts a sum or requantizes), the weight stream (whose rows are announced to
   :class:`hdl.fc.weights.WeightRows` at the same time);
3. **hand-off** -- when the input and the block have arrived, the command goes to the core
   (``cmd``), to compute while its weights stream; in ``drain`` mode if one of those beats had
   an error response or the block is bad (its rows must still be consumed; nothing is
   computed, as ``hls_ref.socket`` counts no MAC cycle for it);
4. **verdict** -- when all three requests have completed: refused with ``AXI_READ`` (any error
   response), ``BAD_QBLOCK``, or 0 after a failed store; otherwise accepted.

The command handed to the core is ``held`` (its tag shown) until the verdict, and a refused
one is remembered as ``failed`` until the list ends: the store stage stores a command only
once it is accepted, and drops a refused one.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.config import FC_MAX_OUTPUTS
from hls_ref.descriptor import ErrorCode, Op
from hls_ref.precision import Precision

from ..dma import BEAT_BYTES, dma_request_layout
from ..dsp import PipelinedMultiplier
from ..socket.signature import ADDR_WIDTH, TAG_WIDTH, dispatch_layout, verdict_layout
from .core import fc_core_command_layout
from .store import fc_store_config_layout
from .weights import rows_command_layout

__all__ = ["TAG_INPUT", "TAG_QUANT", "TAG_WEIGHTS", "FCFrontEnd", "fc_command_layout"]

TAG_INPUT, TAG_WEIGHTS, TAG_QUANT = 1, 2, 3
#: Low bits of a command's list index that name it between the stages (few are in flight).
TAG_BITS = 4
_MUL_WIDTH = 18


def fc_command_layout(max_batch):
    """A command on its way from the front end through the core to the store stage."""
    return data.StructLayout({
        "index": unsigned(32),
        "core": fc_core_command_layout(max_batch),
        "q_flag": unsigned(1),
        "relu": unsigned(1),
        "store": fc_store_config_layout(max_batch),
        "store_req": dma_request_layout(ADDR_WIDTH),
    })


class FCFrontEnd(wiring.Component):
    """The front end of the FC datapath (see the module docstring).

    Parameters
    ----------
    fc : FCConfig
        The datapath's build (``hls_ref.config.FCConfig``).

    Members
    -------
    desc : ``In(stream.Signature(dispatch_layout()))``, verdict : ``Out(verdict_layout())``
        As in :class:`hdl.socket.signature.DatapathSignature`.
    rd_req : ``Out(stream.Signature(dma_request_layout(32, TAG_WIDTH)))``
    rd_idle, rd_error, stop, abort : ``In(1)``
        As in the datapath signature.
    bank : ``Out(1)``
        The operand bank the loads fill.
    bank_busy : ``In(2)``
        Operand banks a command still uses.
    load_start : ``Out(1)``
        Pulse: the loads of ``bank`` begin (the loaders restart).
    out_c : ``Out(16)``
        The loading command's outputs (for the quantization loader's check).
    x_done, q_done : ``In(1)``
        Pulses: the input / the quantization block has arrived.
    x_err, q_err, q_bad : ``In(1)``
        An error response in the input / the block, or a bad block (the loaders' flags).
    rows_cmd : ``Out(stream.Signature(rows_command_layout()))``
        The weight stream's rows, announced with its request.
    cmd : ``Out(stream.Signature(fc_command_layout(max_batch)))``
        The command handed to the core.
    held, failed : ``Out(1)``; held_tag, failed_tag : ``Out(TAG_BITS)``
        The command in the core awaiting its verdict; the refused one.
    """

    def __init__(self, fc):
        self._fc = fc
        super().__init__({
            "desc": In(stream.Signature(dispatch_layout())),
            "verdict": Out(verdict_layout()),
            "rd_req": Out(stream.Signature(dma_request_layout(ADDR_WIDTH, TAG_WIDTH))),
            "rd_idle": In(1),
            "rd_error": In(1),
            "stop": In(1),
            "abort": In(1),
            "bank": Out(1),
            "bank_busy": In(2),
            "load_start": Out(1),
            "out_c": Out(16),
            "x_done": In(1),
            "q_done": In(1),
            "x_err": In(1),
            "q_err": In(1),
            "q_bad": In(1),
            "rows_cmd": Out(stream.Signature(rows_command_layout())),
            "cmd": Out(stream.Signature(fc_command_layout(fc.max_batch))),
            "held": Out(1),
            "held_tag": Out(TAG_BITS),
            "failed": Out(1),
            "failed_tag": Out(TAG_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        fc = self._fc
        pes, units = fc.pes, fc.st_units
        d = self.desc.payload.desc
        index = self.desc.payload.index

        # --- precision-derived shifts -------------------------------------------------------
        prec = d.precision
        lane_shift = Mux(prec == Precision.A4W4.value, 2,
                         Mux((prec == Precision.A8W8.value) | (prec == Precision.A8W4.value),
                             1, 0))                       # log2(lanes)
        narrow = (prec == Precision.A8W4.value) | (prec == Precision.A16W8.value)
        supported = Const(sum(1 << p.value for p in fc.precisions), 8)
        unit_shift = units.bit_length() - 1              # log2(st_units)
        pes_shift = pes.bit_length() - 1                 # log2(pes)
        wide_row_shift = (pes * units // 4).bit_length() - 1

        a_shift = Signal(3)              # log2(act_bits)
        o_shift = Signal(3)              # log2(out_bits)
        beat_shift = Signal(3)           # log2(elements per beat) = 6 - a_shift
        vector_beats = Signal(16)
        steps = Signal(16)
        blocks = Signal(9)
        row_shift = Signal(4)            # log2(beats of a weight row)
        x_rows = Signal(36)              # in_h * vector_beats
        rows = Signal(36)                # blocks * steps
        early = Signal(6)
        late = Signal(4)

        early_checks = [
            (ErrorCode.BAD_OP, d.op != Op.FC),
            (ErrorCode.BAD_PRECISION, ~supported.bit_select(prec, 1)),
            (ErrorCode.BAD_OUT_WIDTH, d.out_width == 3),
            (ErrorCode.ZERO_DIM, (d.in_h == 0) | (d.in_c == 0) | (d.out_c == 0)
             | (d.out_seg == 0)),
            (ErrorCode.TOO_MANY_CHANNELS, d.out_c > FC_MAX_OUTPUTS),
        ]
        stride_bits = Signal(36)
        out_stride_bits = Signal(36)
        acc_valid = Signal()             # the FC accumulators hold partial sums of
        acc_batch = Signal(16)           # (acc_batch, acc_out)
        acc_out = Signal(16)
        layout_bad = (
            (d.in_addr[:3] != 0) | (stride_bits[:6] != 0) | (d.in_c > d.in_row_stride)
            | (d.w_addr[:3] != 0) | (d.q_addr[:3] != 0)
            | (d.out_c > d.out_seg) | (d.out_seg > d.out_row_stride)
            | (out_stride_bits[:3] != 0) | ((d.out_width == 2) & d.out_addr[0])
            | ((d.out_width == 2) & (d.out_seg > 0x7FFF)))
        late_checks = [
            (ErrorCode.INPUT_TOO_LARGE, x_rows > fc.plm_in_words // 4),
            (ErrorCode.OUTPUT_TOO_LARGE, d.in_h > fc.max_batch),
            (ErrorCode.BAD_LAYOUT, layout_bad),
            (ErrorCode.ACC_STATE, d.acc_flag & ~(acc_valid & (acc_batch == d.in_h)
                                                 & (acc_out == d.out_c))),
        ]

        def first_code(checks, failed):
            code = Const(0, 8)
            for n in reversed(range(len(checks))):
                code = Mux(failed[n], checks[n][0], code)
            return code

        # one pipelined multiplier for both products (operands and product registered)
        m.submodules.multiplier = multiplier = PipelinedMultiplier(_MUL_WIDTH, is_signed=False)
        mul_step = Signal()
        mul_phase = Signal(2)
        m.d.comb += [multiplier.x.eq(Mux(mul_step, blocks, d.in_h)),
                     multiplier.y.eq(Mux(mul_step, steps, vector_beats)),
                     multiplier.enable.eq(1)]

        req_valid = Signal()
        req = Signal(self.rd_req.payload.shape())
        m.d.comb += [self.rd_req.valid.eq(req_valid), self.rd_req.payload.eq(req)]
        with m.If(req_valid & self.rd_req.ready):
            m.d.sync += req_valid.eq(0)
        rows_valid = Signal()
        m.d.comb += self.rows_cmd.valid.eq(rows_valid)
        with m.If(rows_valid & self.rows_cmd.ready):
            m.d.sync += rows_valid.eq(0)

        bank = Signal()
        m.d.comb += self.bank.eq(bank)
        record = Signal(fc_command_layout(fc.max_batch), reset_less=True)
        load_q = Signal()
        x_loaded = Signal()
        q_loaded = Signal()
        x_bad = Signal()                 # an error response in the input or the block
        with m.If(self.x_done):
            m.d.sync += x_loaded.eq(1)
        with m.If(self.q_done):
            m.d.sync += q_loaded.eq(1)
        m.d.comb += self.out_c.eq(d.out_c)
        cmd_valid = Signal()
        m.d.comb += [self.cmd.valid.eq(cmd_valid), self.cmd.payload.eq(record)]
        with m.If(cmd_valid & self.cmd.ready):
            m.d.sync += cmd_valid.eq(0)

        # the verdict once every load has completed (VERDICT): AXI_READ for an error response,
        # BAD_QBLOCK for a bad block, 0 after a failed store
        verdict_fail = self.rd_error | (load_q & self.q_bad) | self.stop
        verdict_code = Mux(self.rd_error, ErrorCode.AXI_READ,
                           Mux(self.stop, 0, ErrorCode.BAD_QBLOCK))

        with m.FSM(name="fc_front") as fsm:
            with m.State("IDLE"):
                with m.If(self.desc.valid):
                    m.d.sync += [
                        a_shift.eq(4 - lane_shift), o_shift.eq(d.out_width + 2),
                        beat_shift.eq(2 + lane_shift),
                        early.eq(Cat(failed for _, failed in early_checks)),
                        row_shift.eq(wide_row_shift - narrow),
                    ]
                    m.next = "SHAPE"
            with m.State("SHAPE"):
                # vectors in beats, steps and blocks (the shifts follow the precision)
                per_beat = (Const(1, 6) << beat_shift) - 1
                per_step = (Const(1, 6) << (lane_shift + unit_shift)) - 1
                m.d.sync += [
                    vector_beats.eq((d.in_c + per_beat) >> beat_shift),
                    steps.eq((d.in_c + per_step) >> (lane_shift + unit_shift)),
                    blocks.eq((d.out_c + (pes - 1)) >> pes_shift),
                    stride_bits.eq(d.in_row_stride << a_shift),
                    out_stride_bits.eq(d.out_row_stride << o_shift),
                    mul_step.eq(0), mul_phase.eq(0),
                ]
                with m.If(early != 0):
                    m.next = "IDLE"
                with m.Else():
                    m.next = "MUL"
            with m.State("MUL"):
                # a product every three cycles: operands, product, kept
                with m.If(mul_phase != 2):
                    m.d.sync += mul_phase.eq(mul_phase + 1)
                with m.Else():
                    m.d.sync += [mul_phase.eq(0), mul_step.eq(1)]
                    with m.If(mul_step):
                        m.d.sync += rows.eq(multiplier.product)
                        m.next = "LATE"
                    with m.Else():
                        m.d.sync += x_rows.eq(multiplier.product)
            with m.State("LATE"):
                m.d.sync += late.eq(Cat(failed for _, failed in late_checks))
                m.next = "DECIDE"
            with m.State("DECIDE"):
                with m.If(late != 0):
                    m.next = "IDLE"
                with m.Else():
                    m.next = "BANK"
            with m.State("BANK"):
                with m.If(self.stop):
                    m.next = "IDLE"
                with m.Elif(~self.bank_busy.bit_select(bank, 1)):
                    m.d.sync += [
                        req_valid.eq(1), req.addr.eq(d.in_addr),
                        req.seg_bytes.eq(vector_beats << 3), req.inner_count.eq(d.in_h),
                        req.inner_stride.eq(stride_bits[3:35]), req.outer_count.eq(1),
                        req.outer_stride.eq(0), req.tag.eq(TAG_INPUT),
                        x_loaded.eq(0), q_loaded.eq(0),
                    ]
                    m.next = "LOAD_Q"
            # each request a cycle after the previous one is issued
            with m.State("LOAD_Q"):
                with m.If(~req_valid):
                    m.d.sync += [req_valid.eq(load_q), req.addr.eq(d.q_addr),
                                 req.seg_bytes.eq(BEAT_BYTES * 2 + ((d.out_c + 1) >> 1 << 3)),
                                 req.inner_count.eq(1), req.inner_stride.eq(0),
                                 req.tag.eq(TAG_QUANT)]
                    m.next = "LOAD_W"
            with m.State("LOAD_W"):
                with m.If(~req_valid):
                    block_bytes = (steps << (row_shift + 3))[:16]
                    m.d.sync += [req_valid.eq(1), req.addr.eq(d.w_addr),
                                 req.seg_bytes.eq(block_bytes), req.inner_count.eq(blocks),
                                 req.inner_stride.eq(block_bytes), req.tag.eq(TAG_WEIGHTS),
                                 rows_valid.eq(1), self.rows_cmd.payload.narrow.eq(narrow),
                                 self.rows_cmd.payload.rows.eq(rows)]
                    m.next = "ARRIVE"
            with m.State("ARRIVE"):
                with m.If(x_loaded & (q_loaded | ~load_q)):
                    m.d.sync += [record.core.drain.eq(x_bad), cmd_valid.eq(1)]
                    m.next = "HAND"
            with m.State("HAND"):
                with m.If(~cmd_valid):
                    m.d.sync += [self.held.eq(1), self.held_tag.eq(record.index[:TAG_BITS])]
                    m.next = "READS"
            with m.State("READS"):
                with m.If(~req_valid & ~rows_valid & self.rd_idle):
                    m.next = "VERDICT"
            with m.State("VERDICT"):
                m.d.sync += self.held.eq(0)
                with m.If(verdict_fail):
                    with m.If(verdict_code != 0):
                        m.d.sync += [self.failed.eq(1), self.failed_tag.eq(self.held_tag)]
                    m.next = "IDLE"
                with m.Else():
                    m.d.sync += [bank.eq(~bank), acc_valid.eq(1), acc_batch.eq(d.in_h),
                                 acc_out.eq(d.out_c)]
                    m.next = "IDLE"
        m.d.comb += x_bad.eq(self.x_err | (load_q & (self.q_err | self.q_bad)))

        # The descriptor is let go of (refused with a code, or accepted in VERDICT) and the
        # loads start by plain expressions of the state, not assignments under it
        # (``hdl.socket.signature``: Icarus leaves those X until one of their inputs changes).
        early_refused = fsm.ongoing("SHAPE") & (early != 0)
        late_refused = fsm.ongoing("DECIDE") & (late != 0)
        stopped = fsm.ongoing("BANK") & self.stop
        deciding = fsm.ongoing("VERDICT")
        m.d.comb += [
            self.load_start.eq(fsm.ongoing("BANK") & ~self.stop
                               & ~self.bank_busy.bit_select(bank, 1)),
            self.desc.ready.eq(early_refused | late_refused | stopped | deciding),
            self.verdict.accepted.eq(deciding & ~verdict_fail),
            self.verdict.code.eq(Mux(early_refused, first_code(early_checks, early),
                                     Mux(late_refused, first_code(late_checks, late),
                                         Mux(deciding & verdict_fail, verdict_code, 0)))),
        ]

        # the command's record, written as the checks are decided (nothing reads it then)
        with m.If(fsm.ongoing("LATE")):
            core, st, sreq = record.core, record.store, record.store_req
            m.d.sync += [
                record.index.eq(index), record.q_flag.eq(d.q_flag), record.relu.eq(d.relu),
                core.precision.eq(prec), core.blocks.eq(blocks), core.steps.eq(steps),
                core.batch.eq(d.in_h), core.vector_beats.eq(vector_beats),
                core.in_bank.eq(bank), core.acc_flag.eq(d.acc_flag), core.drain.eq(0),
                st.batch.eq(d.in_h), st.out_c.eq(d.out_c), st.out_seg.eq(d.out_seg),
                st.out_bits.eq(d.out_width), st.lane.eq(d.out_addr[:3]),
                st.row_step.eq(out_stride_bits[3:6]),
                sreq.addr.eq(d.out_addr),
                sreq.seg_bytes.eq(((d.out_seg << o_shift) + 7) >> 3),
                sreq.inner_count.eq(d.in_h), sreq.inner_stride.eq(out_stride_bits[3:35]),
                sreq.outer_count.eq(1), sreq.outer_stride.eq(0),
                load_q.eq(~d.acc_flag | d.q_flag),
            ]
        with m.If(self.abort):
            m.d.sync += [acc_valid.eq(0), self.failed.eq(0)]
        return m
