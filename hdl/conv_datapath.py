"""The conv2d datapath of the accelerator socket: checks, loads, PLMs, core and store.

It implements :class:`hdl.socket.signature.DatapathSignature`. Three stages work on different
commands at once:

* **front end** -- takes a descriptor the socket fetched, checks it in the order of
  :func:`hls_ref.descriptor.check` and derives everything the other blocks need (core command,
  DMA requests, store geometry) with one shared multiplier over a few cycles; then, once an
  operand bank is free, loads the input tile, the weight blob and the quantization block into
  that bank (three DMA reads in flight back to back, their beats routed by tag) and lets go of
  the descriptor;
* **compute** -- runs the core (:class:`hdl.conv_core.ConvCore`) on the oldest loaded
  command, into an accumulator bank that no store is reading;
* **store** -- requantizes and writes each finished output tile (:class:`hdl.store.StoreUnit`
  into the socket's DMA writer) and retires commands in order.

Input and weight PLMs and the quantization registers have two banks that alternate per
command, so the loads of command ``i+1`` overlap the compute of command ``i``. The accumulator
PLM has two banks that alternate per output tile (a command with ``acc_flag`` adds to the bank
of the previous one), so the store of tile ``i-1`` overlaps the compute of tile ``i``.

Errors follow :mod:`hls_ref.socket`: the front end refuses the first failing descriptor (the
socket then stops fetching), commands before it complete, stores included. After a write
error (``stop``) every later command is dropped.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.fifo import SyncFIFOBuffered

from hls_ref.config import DEFAULT_CONFIG, AcceleratorConfig
from hls_ref.descriptor import MAX_SEGMENT_BYTES, ErrorCode, Op
from hls_ref.precision import Precision

from .block_ram import DualPortRAM
from .conv_core import ConvCore, core_command_layout
from .dma import BEAT_BYTES, dma_request_layout
from .dsp import PipelinedMultiplier, shift_add_product
from .loaders import InputLoader, QuantLoader, WeightLoader, input_beat_fields
from .params import address_bits
from .plm import InputPLM
from .replica import Replicas
from .requant import MAX_STAGES as REQUANT_MAX_STAGES
from .socket.signature import ADDR_WIDTH, DatapathSignature
from .store import StoreUnit, store_config_layout, store_quant_layout

__all__ = ["ConvDatapath", "check_conv_config"]

_TAG_INPUT, _TAG_WEIGHTS, _TAG_QUANT = 1, 2, 3
_MUL_WIDTH = 18                       # operands of the front end's shared multiplier



def _input_fields_layout():
    """The input loader's fields of a read beat (:func:`hdl.loaders.input_beat_fields`)."""
    return data.StructLayout({"words": 3, "last_quarter": 2, "tail": 3})


def _per_pe_select(selects, banks):
    """``[Mux(selects[pe], banks[1][pe], banks[0][pe]) for each pe]``: per-PE elements of one of
    two banks, each PE's by its own copy of the bank bit (see :class:`hdl.replica.Replicas`)."""
    return [Mux(select, banks[1][pe], banks[0][pe]) for pe, select in enumerate(selects)]


def _command_layout(in_words, acc_rows):
    """A checked command on its way from the front end through compute to the store."""
    return data.StructLayout({
        "index": unsigned(32),
        "core": core_command_layout(in_words, acc_rows),
        "q_flag": unsigned(1),
        "relu": unsigned(1),
        "store": store_config_layout(),
        "store_req": dma_request_layout(ADDR_WIDTH),
    })


def _store_record_layout():
    """A computed command waiting for the store stage to write (or just retire) it."""
    return data.StructLayout({
        "index": unsigned(32),
        "q_flag": unsigned(1),
        "store": store_config_layout(),
        "store_req": dma_request_layout(ADDR_WIDTH),
    })


def check_conv_config(config):
    """Refuse conv2d builds the RTL cannot implement, naming the limit (``ValueError``)."""
    pes = config.pes
    problems = []
    if pes % 4:
        problems.append(f"pes ({pes}) must be a multiple of 4 (one beat holds 4 weights)")
    if config.plm_w_words % pes or config.plm_acc_words % pes:
        problems.append("plm_w_words and plm_acc_words must be multiples of pes")
    if config.plm_in_words % 4:
        problems.append("plm_in_words must be a multiple of 4")
    if 2 * max(config.plm_in_words, config.plm_w_words) > MAX_SEGMENT_BYTES:
        problems.append("an input or weight bank must fit one DMA segment "
                        f"({MAX_SEGMENT_BYTES} bytes)")
    if config.max_stride > 2:
        problems.append(f"max_stride ({config.max_stride}) above 2")
    if max(config.max_kernel) > 15:
        problems.append("max_kernel above 15 (4-bit descriptor fields)")
    if config.max_width >= 1 << 16:
        problems.append("max_width must fit 16 bits")
    if not config.double_buffer:
        problems.append("the RTL is always double-buffered (double_buffer=True)")
    if problems:
        raise ValueError("unsupported conv2d build: " + "; ".join(problems))


class ConvDatapath(wiring.Component):
    """The conv2d datapath of one build (see the module docstring).

    Parameters
    ----------
    config : AcceleratorConfig
        The build: PEs, PLM banks, limits, precisions (``hls_ref.config``).
    pe_stages : int
        Pipeline stages of the ST multipliers (4: the ECP5 timing needs every boundary, the
        DSP products registered once more in the fabric included).
    requant_stages : int or None
        Pipeline stages of the requantizers (if None, every boundary of
        :data:`hdl.requant.REGISTER_ORDER`: the left-shifted accumulator's register, which the
        requantizer's default leaves out, ends the path from the store's element register to
        the DSP blocks, the 16-PE build's critical path without it).

    Members
    -------
    The members of :class:`hdl.socket.signature.DatapathSignature`.
    """

    #: The descriptors this datapath runs.
    op = Op.CONV2D

    def __init__(self, config=DEFAULT_CONFIG, *, pe_stages=4, requant_stages=None):
        if not isinstance(config, AcceleratorConfig):
            raise TypeError(f"config must be an AcceleratorConfig, not {config!r}")
        check_conv_config(config)
        self._config = config
        self._pe_stages = pe_stages
        self._requant_stages = REQUANT_MAX_STAGES if requant_stages is None else requant_stages
        super().__init__(DatapathSignature(fields_width=_input_fields_layout().size))

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        config = self._config
        pes = config.pes
        in_words = config.plm_in_words
        w_rows = config.plm_w_words // pes
        acc_rows = config.plm_acc_words // pes
        w_bits, acc_bits = address_bits(w_rows), address_bits(acc_rows)

        # --- blocks ---------------------------------------------------------------------------
        # the input PLM registers its block RAMs' outputs (see hdl.plm); the weight PLM's row is
        # registered twice (its block RAMs sit far from the PE row): in the block RAMs' output
        # registers, then in the core, which aligns the input word
        m.submodules.in_plm = in_plm = InputPLM(words=in_words, read_latency=2,
                                                write_latency=1)
        m.submodules.w_plm = w_plm = DualPortRAM(shape=unsigned(16 * pes), depth=2 << w_bits,
                                                 granularity=16, read_latency=2)
        m.submodules.core = core = ConvCore(pes=pes, in_words=in_words, w_rows=w_rows,
                                            acc_rows=acc_rows, precisions=config.precisions,
                                            stages=self._pe_stages,
                                            multiplier=config.pe_multiplier,
                                            in_latency=in_plm.read_latency, w_stages=2,
                                            w_latency=w_plm.read_latency,
                                            acc_latency=2)
        m.submodules.store = store = StoreUnit(pes=pes, acc_rows=acc_rows,
                                               requant_stages=self._requant_stages,
                                               acc_latency=2,
                                               elements=config.store_elements)
        m.submodules.in_loader = x_loader = InputLoader(words=in_words)
        m.submodules.w_loader = w_loader = WeightLoader(pes=pes, rows=w_rows)
        q_loaders = [QuantLoader(pes=pes) for _ in range(2)]
        m.submodules.q_loader0, m.submodules.q_loader1 = q_loaders

        # input PLM: loader writes, core reads
        m.d.comb += [
            in_plm.wr.eq(x_loader.wr),
            in_plm.wr_en.eq(x_loader.wr_en),
            in_plm.rd.addr.eq(core.in_rd.addr),
            in_plm.rd.en.eq(core.in_rd.en),
            core.in_rd.data.eq(in_plm.rd.data),
        ]
        # weight PLM: one row of ``pes`` words, written four words (one beat) at a time; the
        # loader writes only a bank no command in the core reads (``bank_full``, below)
        w_wr, w_rd = w_plm.wr, w_plm.rd
        m.d.comb += [
            w_wr.addr.eq(w_loader.wr_addr),
            w_wr.data.eq(w_loader.wr_data),
            w_wr.en.eq(w_loader.wr_en),
            w_rd.addr.eq(core.w_rd.addr),
            w_rd.en.eq(core.w_rd.en),
            core.w_rd.data.eq(w_rd.data),
        ]

        # --- command records between the stages ---------------------------------------------
        layout = _command_layout(in_words, acc_rows)
        dec = Signal(layout)             # front end: the command being checked and loaded
        # (no reset: a record matters only while its flag says it is there)
        pend = Signal(layout, reset_less=True)   # loaded, waiting for the core
        pend_valid = Signal()
        comp = Signal(layout, reset_less=True)   # in the core
        comp_active = Signal()           # from core start until handed to the store stage
        core_go = Signal()
        bank_full = Signal(2)            # operand banks holding a loaded, uncomputed command
        acc_busy = Signal(2)             # accumulator banks waiting for or being stored
        acc_cur = Signal()               # accumulator bank of the latest computed command
        write_fail = self.stop           # a store failed: drop everything after it
        rd_err = self.rd_error           # a read failed (the socket clears it per list)
        m.d.comb += self.mac.eq(core.mac)

        # --- DMA read side: one request register, beats routed by tag -------------------------
        req_valid = Signal()
        req = Signal(self.rd_req.payload.shape())
        issued = req_valid & self.rd_req.ready
        m.d.comb += [self.rd_req.valid.eq(req_valid), self.rd_req.payload.eq(req)]
        with m.If(issued):
            m.d.sync += req_valid.eq(0)

        # The socket's read slice carries the input loader's fields of each beat, formed
        # before it, so that the loader's ready and word count start from registers.
        x_fields = input_beat_fields(self.rd_peek, x_loader.cfg)
        m.d.comb += self.rd_fields.eq(Cat(x_fields["words"], x_fields["last_quarter"],
                                          x_fields["tail"]))
        beats = self.rd_beats
        beat = beats.payload.beat
        fields = data.View(_input_fields_layout(), beats.payload.fields)
        f_bank = Signal()                # operand bank the front end loads next
        # Quantization beats pass one more register per loader (its ready is always 1): the
        # registers they write are spread over every PE, and the beat's tag decode should
        # not be in front of their enables as well.
        q_valid = Signal(2)
        for k, loader in enumerate(q_loaders):
            target = loader.beats.payload
            m.d.sync += [q_valid[k].eq(beats.valid & (beat.tag == _TAG_QUANT) & (f_bank == k)),
                         target.data.eq(beat.data), target.last.eq(beat.last)]
            m.d.comb += loader.beats.valid.eq(q_valid[k])
        # a completion may overtake its last beats (held in the slice, or in the register of
        # a quantization loader): reads are over when all have drained
        m.d.comb += self.reads_busy.eq(q_valid.any())
        reads_idle = self.rd_idle & ~q_valid.any()
        loaders = [(x_loader, beat.tag == _TAG_INPUT), (w_loader, beat.tag == _TAG_WEIGHTS)]
        for loader, selected in loaders:
            target = loader.beats.payload
            m.d.comb += [
                loader.beats.valid.eq(beats.valid & selected),
                target.data.eq(beat.data), target.lo.eq(beat.lo), target.hi.eq(beat.hi),
                target.seg_last.eq(beat.seg_last), target.last.eq(beat.last),
                target.err.eq(beat.err),
            ]
        m.d.comb += [getattr(x_loader.beats.payload, name).eq(getattr(fields, name))
                     for name in x_fields]
        m.d.comb += beats.ready.eq(Mux(beat.tag == _TAG_INPUT, x_loader.beats.ready, 1))
        d = self.desc.payload.desc

        # --- front end --------------------------------------------------------------------------
        f_code = Signal(8)               # the first failing early check (CODE state)
        acc_valid = Signal()             # the accumulators hold partial sums of shape acc_h x w
        acc_h = Signal(16)
        acc_w = Signal(16)

        # the padded tile's extent (registered as the descriptor arrives, a cycle before the
        # checks use it), and 2**(stride == 2) - kernel, so that out = (span + k_adjust) >>
        # (stride == 2) is one addition: ((span - kernel) >> s) + 1 == (span - kernel + 2**s)
        # >> s
        span_h = Signal(18)
        span_w = Signal(18)
        k_adjust_h = Signal(signed(18))
        k_adjust_w = Signal(signed(18))

        # decode: single-cycle checks (codes 1-10) and shifts
        prec = d.precision
        lane_shift = Mux(prec == Precision.A4W4.value, 2,
                         Mux((prec == Precision.A8W8.value) | (prec == Precision.A8W4.value),
                             1, 0))
        act_shift = 4 - lane_shift                     # log2(act_bits)
        supported = Const(sum(1 << p.value for p in config.precisions), 8)
        max_kh, max_kw = config.max_kernel
        early_checks = [
            (ErrorCode.BAD_OP, d.op != self.op),
            (ErrorCode.BAD_PRECISION, ~supported.bit_select(prec, 1)),
            (ErrorCode.BAD_OUT_WIDTH, d.out_width == 3),
            (ErrorCode.ZERO_DIM, (d.in_h == 0) | (d.in_w == 0) | (d.in_c == 0)
             | (d.out_c == 0) | (d.out_seg == 0)),
            (ErrorCode.BAD_KERNEL, (d.kernel_h == 0) | (d.kernel_h > max_kh)
             | (d.kernel_w == 0) | (d.kernel_w > max_kw)),
            (ErrorCode.BAD_STRIDE, (d.stride_h == 0) | (d.stride_h > config.max_stride)
             | (d.stride_w == 0) | (d.stride_w > config.max_stride)),
            (ErrorCode.BAD_PADDING, (d.pad_top >= d.kernel_h) | (d.pad_bottom >= d.kernel_h)
             | (d.pad_left >= d.kernel_w) | (d.pad_right >= d.kernel_w)),
            (ErrorCode.TOO_MANY_CHANNELS, d.out_c > pes),
            (ErrorCode.ROW_TOO_WIDE, d.in_w > config.max_width),
            (ErrorCode.TILE_TOO_SMALL, (span_h < d.kernel_h) | (span_w < d.kernel_w)),
        ]

        # values the decode steps keep
        groups = Signal(17)
        out_h = Signal(18)
        out_w = Signal(18)
        a_shift = Signal(3)
        o_shift = Signal(3)
        hw = Signal(36)                  # in_h * in_w
        x_words = Signal(36)             # in_h * in_w * groups
        w_need = Signal(36)              # kernel_h * kernel_w * groups (weight rows)
        o_pix = Signal(36)               # out_h * out_w
        o_row = Signal(36)               # out_w * out_seg (elements of a contiguous row)
        gw = Signal(36)                  # groups * in_w
        # the core's input PLM strides (``core_command_layout``), from ``gw`` and ``groups``
        in_bits = address_bits(in_words)
        row_step = Signal(in_bits + 2)
        pix_step = Signal(in_bits + 2)
        top = Signal(in_bits)
        left = Signal(in_bits)
        origin = Signal(in_bits)
        x_block = Signal(36)
        s_block = Signal(36)
        # the shared multiplier: a DSP block holding its operand and product registers
        m.submodules.multiplier = multiplier = PipelinedMultiplier(_MUL_WIDTH, is_signed=False)
        mul_phase = Signal(2)            # 0: operands registered; 1: product; 2: it is kept
        mul_step = Signal(3)             # which of the products below
        product = multiplier.product

        # input addressing (act_bits = 1 << a_shift)
        p_bits = Signal(36)
        r_bits = Signal(36)
        strides = [p_bits.eq(d.in_pixel_stride << a_shift),      # registered in CODE
                   r_bits.eq(d.in_row_stride << a_shift)]
        words_mode = (p_bits[:4] == 0) & (d.in_pixel_stride != 0)
        narrow = (p_bits == 4) | (p_bits == 8)
        nibble = p_bits == 4
        x_row_bytes = Mux(nibble, (d.in_w + 1) >> 1, d.in_w)       # narrow rows
        x_istride = p_bits[3:35]
        x_ostride = r_bits[3:35]
        x_merge1 = ~narrow & (d.in_w > 1) & (x_istride == (groups << 1)) \
            & ((gw << 1) <= MAX_SEGMENT_BYTES)
        x_seg1 = Signal(36)              # registered in SEGS, as are the next ones
        x_inner1 = Signal(16)
        segments = [x_seg1.eq(Mux(narrow, x_row_bytes, Mux(x_merge1, gw << 1, groups << 1))),
                    x_inner1.eq(Mux(narrow | x_merge1, 1, d.in_w))]
        x_merge2 = (x_inner1 == 1) & (d.in_h > 1) & (x_ostride == x_seg1) \
            & (x_block <= MAX_SEGMENT_BYTES)

        # output addressing (out_bits = 1 << o_shift)
        or_bits = Signal(36)
        op_bits = Signal(36)
        seg_bits = Signal(36)
        strides += [or_bits.eq(d.out_row_stride << o_shift),
                    op_bits.eq(d.out_pixel_stride << o_shift),
                    seg_bits.eq(d.out_seg << o_shift)]
        row_mode = d.out_seg == d.out_pixel_stride
        o_row_bytes = Signal(36)
        s_seg = Signal(36)
        s_inner = Signal(18)
        row_bytes = ((o_row << o_shift) + 7) >> 3    # registered into o_row_bytes in SEGS
        segments += [o_row_bytes.eq(row_bytes)]
        # (``gw`` is the product before SEGS; the narrow factors multiply by shifts and adds)
        segments += [row_step.eq(shift_add_product(d.stride_h, gw[:in_bits + 2])),
                     pix_step.eq(shift_add_product(d.stride_w, groups[:in_bits + 2])),
                     top.eq(shift_add_product(d.pad_top, gw[:in_bits])),
                     left.eq(shift_add_product(d.pad_left, groups[:in_bits]))]
        # a cycle later (SEGS2), from the registered row size
        segments2 = [s_seg.eq(Mux(row_mode, o_row_bytes, seg_bits >> 3)),
                     s_inner.eq(Mux(row_mode, 1, out_w)),
                     origin.eq(-top - left)]
        s_ostride = or_bits[3:35]
        s_merge = (s_inner == 1) & (out_h > 1) & (s_ostride == s_seg) \
            & (s_block <= MAX_SEGMENT_BYTES)

        layout_bad = Signal()            # registered in SEGS2, with its deep comparisons
        segments2 += [layout_bad.eq(
            ~(words_mode | narrow) | (d.in_c > d.in_pixel_stride)
            | (words_mode & (d.in_addr[0] | (r_bits[:4] != 0)))
            | (narrow & ((d.in_addr[:3] != 0) | (r_bits[:6] != 0)))
            | (d.w_addr[:3] != 0) | (d.q_addr[:3] != 0)
            | (d.out_c > d.out_seg) | (d.out_seg > d.out_pixel_stride)
            | (or_bits[:3] != 0) | ((d.out_width == 2) & d.out_addr[0])
            | (row_mode & (((o_row_bytes << 3) > or_bits)
                           | (o_row_bytes > MAX_SEGMENT_BYTES)))
            | (~row_mode & ((op_bits[:3] != 0) | (seg_bits[:3] != 0)
                            | ((seg_bits >> 3) > MAX_SEGMENT_BYTES))))]
        late_checks = [
            (ErrorCode.INPUT_TOO_LARGE, (hw > in_words) | (x_words > in_words)),
            (ErrorCode.WEIGHTS_TOO_LARGE, w_need > w_rows),
            (ErrorCode.OUTPUT_TOO_LARGE, o_pix > acc_rows),
            (ErrorCode.BAD_LAYOUT, layout_bad),
            (ErrorCode.ACC_STATE, d.acc_flag & ~(acc_valid & (acc_h == out_h)
                                                 & (acc_w == out_w))),
        ]
        # The checks' results are registered, and their codes chosen by priority from the
        # registers a cycle later (one deep comparison-and-priority path would limit Fmax).
        early_failed = Signal(len(early_checks))
        late_failed = Signal(len(late_checks))
        x_merge2_r = Signal()
        s_merge_r = Signal()

        def first_code(checks, failed):
            code = Const(0, 8)
            for n in reversed(range(len(checks))):
                code = Mux(failed[n], checks[n][0], code)
            return code

        pad = d.pad_value.as_unsigned()
        pad_word = Mux(lane_shift == 2, pad[:4].replicate(4),
                       Mux(lane_shift == 1, pad[:8].replicate(2), pad))
        load_q = Signal()                # the command loads a quantization block
        q_bad = Signal()
        q_regs = [q.q for q in q_loaders]
        loaded_q = Mux(f_bank, q_regs[1].channels, q_regs[0].channels)
        loaded_double = Mux(f_bank, q_regs[1].double, q_regs[0].double)

        load_start = Signal()            # the loads of the front end's command begin


        with m.FSM(name="front") as front:
            with m.State("IDLE"):
                # a dispatched descriptor: its padded tile's extent is registered first
                with m.If(self.desc.valid):
                    m.d.sync += [
                        span_h.eq(d.in_h + d.pad_top + d.pad_bottom),
                        span_w.eq(d.in_w + d.pad_left + d.pad_right),
                        k_adjust_h.eq(Mux(d.stride_h == 2, 2, 1) - d.kernel_h),
                        k_adjust_w.eq(Mux(d.stride_w == 2, 2, 1) - d.kernel_w),
                    ]
                    m.next = "CHECK"
            with m.State("CHECK"):
                m.d.sync += [
                    early_failed.eq(Cat(failed for _, failed in early_checks)),
                    groups.eq((d.in_c + (Const(1, 3) << lane_shift) - 1) >> lane_shift),
                    out_h.eq((span_h + k_adjust_h).as_unsigned() >> (d.stride_h == 2)),
                    out_w.eq((span_w + k_adjust_w).as_unsigned() >> (d.stride_w == 2)),
                    a_shift.eq(act_shift),
                    o_shift.eq(d.out_width + 2),
                ]
                m.next = "CODE"
            with m.State("CODE"):
                m.d.sync += [f_code.eq(first_code(early_checks, early_failed)), *strides,
                             mul_step.eq(0), mul_phase.eq(0)]
                m.next = "MUL"
            with m.State("SEGS"):
                # the DMA segments, between the products they need and those that need them
                m.d.sync += segments
                m.next = "SEGS2"
            with m.State("SEGS2"):
                m.d.sync += segments2
                m.next = "MUL"
            # One product every three cycles through the shared multiplier (its operands and
            # product registered in the DSP block; a cycle to keep the product).
            # The products are steps of one state, so that the operands are chosen by a
            # three-bit counter rather than by a decode of the front end's state.
            steps = [
                (d.in_h, d.in_w, hw),
                (hw, groups, x_words),
                (shift_add_product(d.kernel_h, d.kernel_w), groups, w_need),
                (out_h, out_w, o_pix),
                (out_w, d.out_seg, o_row),
                (groups, d.in_w, gw),
                (x_seg1, d.in_h, x_block),
                (s_seg, out_h, s_block),
            ]
            with m.State("MUL"):
                with m.If((mul_step == 0) & (mul_phase == 0) & (f_code != 0)):
                    m.next = "IDLE"
                with m.Elif(mul_phase != 2):
                    m.d.sync += mul_phase.eq(mul_phase + 1)
                with m.Else():
                    with m.Switch(mul_step):
                        for n, (_, _, target) in enumerate(steps):
                            with m.Case(n):
                                m.d.sync += target.eq(product)
                    m.d.sync += [mul_phase.eq(0), mul_step.eq(mul_step + 1)]
                    with m.If(mul_step == 5):
                        m.next = "SEGS"
                    with m.Elif(mul_step == len(steps) - 1):
                        m.next = "LATE"
            with m.State("LATE"):
                m.d.sync += [late_failed.eq(Cat(failed for _, failed in late_checks)),
                             x_merge2_r.eq(x_merge2), s_merge_r.eq(s_merge)]
                m.next = "DECIDE"
            with m.State("DECIDE"):
                # (the command's records are written whatever the decision, below)
                with m.If(late_failed != 0):
                    m.next = "IDLE"
                with m.Else():
                    m.next = "BANK"
            with m.State("BANK"):
                with m.If(write_fail):
                    m.next = "IDLE"
                with m.Elif(load_start):
                    m.d.sync += [req_valid.eq(1), x_loader.cfg.bank.eq(f_bank),
                                 w_loader.bank.eq(f_bank)]
                    m.next = "LOAD_X"
            # Each load is requested a cycle after the previous one is issued: the request
            # register's enable is then the state and ``req_valid``, not the DMA's ready.
            with m.State("LOAD_X"):
                with m.If(~req_valid):
                    m.d.sync += [req_valid.eq(1), req.addr.eq(d.w_addr),
                                 req.seg_bytes.eq(2 * pes * w_need), req.inner_count.eq(1),
                                 req.outer_count.eq(1), req.tag.eq(_TAG_WEIGHTS)]
                    m.next = "LOAD_W"
            with m.State("LOAD_W"):
                with m.If(~req_valid):
                    m.d.sync += [req_valid.eq(load_q), req.addr.eq(d.q_addr),
                                 req.seg_bytes.eq(BEAT_BYTES * (1 + 2 * d.out_c)),
                                 req.tag.eq(_TAG_QUANT)]
                    m.next = "LOAD_Q"
            with m.State("LOAD_Q"):
                with m.If(~req_valid & reads_idle):
                    m.d.sync += q_bad.eq(load_q & ((loaded_q != d.out_c) | loaded_double))
                    m.next = "LOADED"
            with m.State("LOADED"):
                with m.If(rd_err | q_bad | write_fail):
                    m.next = "IDLE"
                with m.Elif(~pend_valid):
                    m.d.sync += pend_valid.eq(1)
                    m.next = "ADVANCE"
            with m.State("ADVANCE"):
                # the descriptor is let go of (the socket moves to the next) and the front
                # end's own state moves on a cycle after the hand-off, so that these
                # registers' enable is the state, not the hand-off's conditions
                m.d.sync += [f_bank.eq(~f_bank),
                             acc_valid.eq(1), acc_h.eq(out_h), acc_w.eq(out_w)]
                m.next = "IDLE"
        # The descriptor is let go of -- accepted (loaded and queued) or refused with a code
        # (0: stopped after a failed store) -- in the cycle the front end leaves for IDLE.
        # Like every output of a datapath these are plain expressions, not assignments under
        # the states: Icarus does not run an ``always @*`` block at time 0, and a datapath
        # that a list never uses must not leave X on the socket's signals.
        loaded = front.ongoing("LOADED")
        refusals = [
            (front.ongoing("MUL") & (mul_step == 0) & (mul_phase == 0) & (f_code != 0),
             f_code),
            (front.ongoing("DECIDE") & (late_failed != 0), first_code(late_checks, late_failed)),
            (front.ongoing("BANK") & write_fail, 0),
            (loaded & rd_err, ErrorCode.AXI_READ),
            (loaded & ~rd_err & q_bad, ErrorCode.BAD_QBLOCK),
            (loaded & ~rd_err & ~q_bad & write_fail, 0),
        ]
        code = Const(0, 8)
        for refused, refused_code in reversed(refusals):
            code = Mux(refused, refused_code, code)
        accepted = front.ongoing("ADVANCE")
        m.d.comb += [
            self.desc.ready.eq(accepted | Cat(refused for refused, _ in refusals).any()),
            self.verdict.accepted.eq(accepted),
            self.verdict.code.eq(code),
        ]

        # The multiplier's operands are loaded every cycle from the step's sources (which
        # hold still from the step's first cycle on), so their enable is no state decode.
        m.d.comb += [multiplier.x.eq(Array(a for a, _, _ in steps)[mul_step]),
                     multiplier.y.eq(Array(b for _, b, _ in steps)[mul_step]),
                     multiplier.enable.eq(1)]

        # The decided command's records and its input request are written in the DECIDE cycle
        # whatever the decision (a failing command's are never used; nothing reads them in
        # that cycle): their enable, hundreds of bits wide, is then a register of its own
        # (``deciding``, set as LATE passes to DECIDE), not the late checks' result.
        deciding = Signal()
        m.d.sync += deciding.eq(front.ongoing("LATE"))
        with m.If(deciding):
            core_cmd, st, sreq = dec.core, dec.store, dec.store_req
            m.d.sync += [
                dec.index.eq(self.desc.payload.index),
                dec.q_flag.eq(d.q_flag),
                dec.relu.eq(d.relu),
                core_cmd.precision.eq(prec),
                core_cmd.kernel_h.eq(d.kernel_h), core_cmd.kernel_w.eq(d.kernel_w),
                core_cmd.stride_h.eq(d.stride_h), core_cmd.stride_w.eq(d.stride_w),
                core_cmd.pad_top.eq(d.pad_top), core_cmd.pad_left.eq(d.pad_left),
                core_cmd.in_h.eq(d.in_h), core_cmd.in_w.eq(d.in_w),
                core_cmd.groups.eq(groups),
                core_cmd.out_h.eq(out_h), core_cmd.out_w.eq(out_w),
                core_cmd.pad_word.eq(pad_word),
                core_cmd.row_words.eq(gw), core_cmd.row_step.eq(row_step),
                core_cmd.pix_step.eq(pix_step), core_cmd.origin.eq(origin),
                core_cmd.last_pixel.eq(o_pix - 1),
                core_cmd.acc_flag.eq(d.acc_flag),
                st.out_h.eq(out_h), st.out_w.eq(out_w),
                st.out_c.eq(d.out_c), st.out_seg.eq(d.out_seg),
                st.out_bits.eq(d.out_width),
                st.lane.eq(d.out_addr[:3]),
                st.row_step.eq(or_bits[3:6]),
                st.pixel_step.eq(op_bits[3:6]),
                st.pixel_segments.eq(~row_mode & (out_w > 1)),
                st.row_segments.eq((out_h > 1) & ~s_merge_r),
                st.row_align.eq(row_mode),
                sreq.addr.eq(d.out_addr),
                sreq.seg_bytes.eq(Mux(s_merge_r, s_block, s_seg)),
                sreq.inner_count.eq(s_inner),
                sreq.inner_stride.eq(op_bits[3:35]),
                sreq.outer_count.eq(Mux(s_merge_r, 1, out_h)),
                sreq.outer_stride.eq(s_ostride),
                # the loads: input tile first
                req.addr.eq(d.in_addr),
                req.seg_bytes.eq(Mux(x_merge2_r, x_block, x_seg1)),
                req.inner_count.eq(x_inner1),
                req.inner_stride.eq(x_istride),
                req.outer_count.eq(Mux(x_merge2_r, 1, d.in_h)),
                req.outer_stride.eq(x_ostride),
                req.tag.eq(_TAG_INPUT),
                load_q.eq(~d.acc_flag | d.q_flag),
                x_loader.cfg.narrow.eq(narrow),
                x_loader.cfg.nibble.eq(nibble),
                x_loader.cfg.in_w.eq(d.in_w),
            ]

        # The pending record follows the decided one while it is empty, so that its enable is
        # one flip-flop (``pend_valid``) rather than the loaded command's checks; it holds
        # from the cycle the command is loaded (``pend_valid`` set) until the core takes it.
        with m.If(~pend_valid):
            m.d.sync += [pend.eq(dec),
                         pend.core.in_bank.eq(f_bank), pend.core.w_bank.eq(f_bank)]

        # control signals into other blocks are plain expressions, never assigned under a
        # condition (see ``hdl.dma``: Icarus leaves those undefined until an input changes)
        m.d.comb += load_start.eq(front.ongoing("BANK") & ~write_fail
                                  & ~bank_full.bit_select(f_bank, 1))
        # The loaders start a cycle after the loads do, from registers: their first beats come
        # after a request, an AXI read and the read slice, so the delay costs nothing, and
        # the starts (which clear the loaders' counters) then follow no front-end logic.
        loader_go = Signal()
        q_go = Signal(2)
        m.d.sync += [loader_go.eq(load_start),
                     q_go.eq(Mux(load_start & load_q, Mux(f_bank, 0b10, 0b01), 0))]
        m.d.comb += [x_loader.start.eq(loader_go), w_loader.start.eq(loader_go)]
        m.d.comb += [q_loaders[k].start.eq(q_go[k]) for k in range(2)]

        # --- compute stage --------------------------------------------------------------------
        # The core takes the pending command while the previous one (``comp``) still reads its
        # operands' last taps; that one then moves to ``drn`` until its last sum is written.
        # Two commands at most are in the core (``drn`` free), so both find room in the store
        # queue when they finish (``stores.level`` small enough when the later one is taken).
        stores_depth = 8
        m.submodules.stores = stores = SyncFIFOBuffered(width=_store_record_layout().size,
                                                        depth=stores_depth)
        drn = Signal(layout, reset_less=True)    # the older command in the core
        comp_load = Signal()             # the core takes the pending command
        drn_valid = Signal()
        target_acc = Mux(pend.core.acc_flag, acc_cur, ~acc_cur)
        # the requantization parameters are copied three cycles after a start (below); the
        # next start waits until the copy is made
        core_went = Signal(3)
        m.d.sync += core_went.eq(Cat(core_go, core_went[:2]))
        # A command adding to the sums of one that the store will read waits until that one
        # is stored (its accumulator bank is busy then).
        m.d.comb += core.cmd.valid.eq(
            pend_valid & ~write_fail & ~acc_busy.bit_select(target_acc, 1) & ~drn_valid
            & ~core_go & ~core_went.any() & (stores.level <= stores_depth - 3)
            & ~(comp_active & pend.core.acc_flag & comp.q_flag))
        m.d.comb += [core.cmd.payload.eq(pend.core), core.cmd.payload.acc_bank.eq(target_acc)]
        m.d.comb += comp_load.eq(core.cmd.valid & core.cmd.ready)
        m.d.comb += [core.bias[k][pe].eq(q_regs[k].bias[pe]) for k in range(2)
                     for pe in range(pes)]
        # The started command's operand bank selects each PE's requantization parameters for
        # the copy: hundreds of bits, so the bank bit is registered once per PE.
        m.submodules.comp_banks = comp_banks = Replicas(1, pes)
        m.d.comb += [comp_banks.d.eq(pend.core.in_bank), comp_banks.enable.eq(comp_load)]
        comp_in_bank = [comp_banks.q[pe] for pe in range(pes)]
        m.d.sync += core_go.eq(comp_load)
        with m.If(pend_valid & ~comp_active & write_fail):
            # a failed store: later commands are dropped unrun
            m.d.sync += pend_valid.eq(0)
        # the core's ``done`` is the older command's if there are two
        handoff = core.done
        oldest = data.View(layout, Mux(drn_valid, drn, comp))
        with m.If(handoff):
            with m.If(drn_valid):
                m.d.sync += drn_valid.eq(0)
            with m.Else():
                m.d.sync += comp_active.eq(0)
        with m.If(comp_load):
            m.d.sync += [acc_cur.eq(target_acc), pend_valid.eq(0), comp_active.eq(1),
                         comp.eq(pend), comp.core.acc_bank.eq(target_acc)]
            with m.If(comp_active & ~(handoff & ~drn_valid)):
                m.d.sync += [drn.eq(comp), drn_valid.eq(1)]

        # a finished command goes to the store stage (the requantization parameters of its
        # operand bank are already copied into the accumulator bank's set)
        # (its head is a register: it decides the store stage's start and records)
        record = data.View(_store_record_layout(), stores.w_data)
        m.d.comb += [
            record.index.eq(oldest.index),
            record.q_flag.eq(oldest.q_flag),
            record.store.eq(oldest.store),
            record.store.acc_bank.eq(oldest.core.acc_bank),
            record.store_req.eq(oldest.store_req),
            stores.w_en.eq(handoff),
        ]
        # the computed command's requantization parameters, from its operand bank
        store_q = [Signal(store_quant_layout(pes), name=f"store_q{k}", reset_less=True)
                   for k in range(2)]
        done_q = Signal(store_quant_layout(pes))
        q = data.View(q_regs[0].shape(), Mux(comp_in_bank[0], q_regs[1], q_regs[0]))
        for field in ("multiplier", "shift"):
            chosen = _per_pe_select(comp_in_bank, [getattr(q, field) for q in q_regs])
            m.d.comb += [getattr(done_q, field)[pe].eq(v) for pe, v in enumerate(chosen)]
        # The per-tile fields pass three registers of their own on the way to the copy: the
        # bank's fields, then the clamp narrowed to the output width with the ReLU comparison,
        # then the clamp with the ReLU bound chosen, so that neither the bank choice nor a
        # comparison is in front of another or of the copy's enable. They follow every cycle:
        # the copy is made three cycles after ``core_go``, and from ``core_go`` on the
        # command, its bank and the bank's parameters hold still.
        chosen_q = {field: Signal.like(getattr(q, field), name=f"chosen_{field}")
                    for field in ("zero_point", "act_min", "act_max")}
        chosen_relu = Signal()
        m.d.sync += [reg.eq(getattr(q, field)) for field, reg in chosen_q.items()]
        m.d.sync += chosen_relu.eq(comp.relu)
        # the output width's range (4, 8 or 16 bits), from the computed command's record
        width_min = Signal(signed(16))
        width_max = Signal(signed(16))
        out_code = comp.store.out_bits
        m.d.sync += [width_min.eq(Mux(out_code == 0, -8, Mux(out_code == 1, -128, -32768))),
                     width_max.eq(Mux(out_code == 0, 7, Mux(out_code == 1, 127, 32767)))]
        # max(act_min, width_min) and min(act_max, width_max); the ReLU bound applied after
        # it equals max(ReLU bound, width_min) (docs/formats.md). Whether the ReLU's bound (the
        # zero point) is the lower one is decided beside the narrowing, from the same
        # registers (zero_point > max(a, b) is both comparisons), so the last stage is a
        # multiplexer alone.
        narrow_q = {field: Signal.like(reg, name=f"narrow_{field}")
                    for field, reg in chosen_q.items()}
        relu_low = Signal()
        act_min, act_max = chosen_q["act_min"], chosen_q["act_max"]
        m.d.sync += [
            narrow_q["zero_point"].eq(chosen_q["zero_point"]),
            narrow_q["act_min"].eq(Mux(act_min > width_min, act_min, width_min)),
            narrow_q["act_max"].eq(Mux(act_max < width_max, act_max, width_max)),
            relu_low.eq(chosen_relu & (chosen_q["zero_point"] > act_min)
                        & (chosen_q["zero_point"] > width_min)),
        ]
        zero_point, act_min = narrow_q["zero_point"], narrow_q["act_min"]
        tile_q = {field: Signal.like(getattr(done_q, field), name=f"tile_{field}")
                  for field in ("zero_point", "low", "high")}
        m.d.sync += [
            tile_q["zero_point"].eq(zero_point),
            tile_q["low"].eq(Mux(relu_low, zero_point, act_min)),
            tile_q["high"].eq(narrow_q["act_max"]),
        ]
        # The copy is made three cycles after the core starts, from a register per PE (an
        # enable of every parameter bit of a bank; copy 0 also enables the per-tile fields).
        # The store unit does not read that bank's set then: the core computes into an
        # accumulator bank only once the store has released it, and the operand bank's
        # parameters stay loaded until the hand-off (the core's latency later at least).
        m.submodules.q_copy = q_copy = Replicas(2, pes)
        m.d.comb += [q_copy.d.eq(Mux(core_went[1] & comp.q_flag,
                                     Mux(comp.core.acc_bank, 0b10, 0b01), 0)),
                     q_copy.enable.eq(1)]
        for k in range(2):
            with m.If(q_copy.q[0][k]):
                m.d.sync += [getattr(store_q[k], field).eq(reg)
                             for field, reg in tile_q.items()]
            for pe in range(pes):
                with m.If(q_copy.q[pe][k]):
                    m.d.sync += [store_q[k].multiplier[pe].eq(done_q.multiplier[pe]),
                                 store_q[k].shift[pe].eq(done_q.shift[pe])]

        # --- store stage ----------------------------------------------------------------------
        head = data.View(_store_record_layout(), stores.r_data)
        st = Signal(_store_record_layout())
        st_go = Signal()
        st_req_valid = Signal()
        m.d.comb += [
            store.start.eq(st_go),
            store.cfg.eq(st.store),
            self.wr_req.valid.eq(st_req_valid),
            self.wr_req.payload.eq(st.store_req),
            self.wr_data.valid.eq(store.beats.valid),
            self.wr_data.payload.eq(store.beats.payload),
            store.beats.ready.eq(self.wr_data.ready),
            self.error_index.eq(st.index),
        ]
        m.d.sync += st_go.eq(0)
        with m.If(st_req_valid & self.wr_req.ready):
            m.d.sync += st_req_valid.eq(0)
        store_owns = Signal()            # the store unit reads accumulator bank st.acc_bank
        retire = Signal()                # a command completes (in list order)
        store_next = Signal()            # the store queue's head is stored now
        store_release = Signal()         # the store unit has read its accumulator bank
        store_fsm_idle = Signal()        # the store stage waits for the queue's head
        # the stored command's accumulator bank selects each PE's sums and parameters: a copy
        # of the bit per PE, loaded with ``st`` (copy 0 also serves the per-tile fields)
        m.submodules.st_banks = st_banks = Replicas(1, pes)
        m.d.comb += [st_banks.d.eq(head.store.acc_bank),
                     st_banks.enable.eq(store_fsm_idle)]
        st_acc_bank = [st_banks.q[pe] for pe in range(pes)]
        st_q = data.View(store_quant_layout(pes), Mux(st_acc_bank[0], store_q[1], store_q[0]))
        # The chosen bank's parameters are registered on their way to the store: the bank
        # bits and both banks' parameters sit by the PEs, the requantizer's operands by the
        # store; the bank and PE multiplexers and that distance head the board's accelerator
        # clock (the sums the same bits choose below still cross it in one cycle). The bank
        # is chosen while the store stage is idle and the store reads its parameters three
        # cycles after it starts or later, so the register costs no cycle.
        chosen_q = Signal(store_quant_layout(pes), name="store_q_chosen", reset_less=True)
        m.d.sync += [chosen_q.zero_point.eq(st_q.zero_point), chosen_q.low.eq(st_q.low),
                     chosen_q.high.eq(st_q.high)]
        for field in ("multiplier", "shift"):
            chosen = _per_pe_select(st_acc_bank, [getattr(q, field) for q in store_q])
            m.d.sync += [getattr(chosen_q, field)[pe].eq(v) for pe, v in enumerate(chosen)]
        m.d.comb += store.q.eq(chosen_q)
        with m.FSM(name="store_stage") as store_fsm:
            with m.State("IDLE"):
                # the record follows the queue's head while idle (nothing reads it then), so
                # that its enable is the state alone
                m.d.sync += st.eq(head)
                with m.If(store_next):
                    m.d.sync += [st_go.eq(1), st_req_valid.eq(1)]
                    m.next = "STORE"
            with m.State("STORE"):
                with m.If(store_release):
                    m.next = "RESPONSE"
            with m.State("RESPONSE"):
                with m.If(self.wr_done.valid):
                    m.next = "IDLE"
        # Bank flags are set and cleared by different stages, possibly in the same cycle, so
        # each is updated by one assignment from its set and clear masks.
        to_pend = (front.ongoing("LOADED") & ~rd_err & ~q_bad & ~write_fail & ~pend_valid)
        dropped = pend_valid & ~comp_active & write_fail
        m.d.comb += store_release.eq(store_fsm.ongoing("STORE") & ~st_go & ~store.busy
                                     & ~st_req_valid)
        bank_set = Mux(to_pend, 1 << f_bank, 0)
        bank_clear = (Mux(handoff, 1 << oldest.core.in_bank, 0)
                      | Mux(dropped, 1 << pend.core.in_bank, 0))
        acc_set = Mux(handoff & oldest.q_flag, 1 << oldest.core.acc_bank, 0)
        # a computed command dropped after a write error releases its bank as well
        drop_stored = store_fsm.ongoing("IDLE") & stores.r_rdy & write_fail & head.q_flag
        acc_clear = (Mux(store_release, 1 << st.store.acc_bank, 0)
                     | Mux(drop_stored, 1 << head.store.acc_bank, 0))
        m.d.sync += [bank_full.eq((bank_full & ~bank_clear) | bank_set),
                     acc_busy.eq((acc_busy & ~acc_clear) | acc_set)]
        idle = store_fsm.ongoing("IDLE")
        responding = store_fsm.ongoing("RESPONSE")
        m.d.comb += [
            # the head is popped when taken, or dropped after a write error
            stores.r_en.eq(idle & stores.r_rdy),
            store_next.eq(idle & stores.r_rdy & ~write_fail & head.q_flag),
            store_owns.eq(store_fsm.ongoing("STORE")),
            store_fsm_idle.eq(idle),
            self.wr_done.ready.eq(responding),
            self.write_error.eq(responding & self.wr_done.valid & self.wr_done.payload.err),
            retire.eq((idle & stores.r_rdy & ~write_fail & ~head.q_flag)
                      | (responding & self.wr_done.valid & ~self.wr_done.payload.err)),
        ]

        # accumulator PLM: two banks; the core owns one, the store unit may read the other
        sums = data.ArrayLayout(signed(32), pes)
        acc_reads = []
        for k in range(2):
            mem = memory.Memory(shape=sums, depth=1 << acc_bits, init=[])
            m.submodules[f"acc_plm{k}"] = mem
            rd, wr = mem.read_port(), mem.write_port()
            # the store unit addresses the bank from the cycle after its start on, so whether
            # it does is registered (a cycle late) and the address multiplexer's select
            # follows no store-stage logic
            mine = Signal(name=f"store_reads{k}")
            m.d.sync += mine.eq(store_owns & (st.store.acc_bank == k))
            m.d.comb += [
                rd.addr.eq(Mux(mine, store.acc_rd.addr[:acc_bits], core.acc_rd.addr[:acc_bits])),
                rd.en.eq(1),             # both readers read every cycle
                wr.addr.eq(core.acc_wr.addr[:acc_bits]),
                wr.data.eq(core.acc_wr.data),
                wr.en.eq(core.acc_wr.en & (core.acc_wr.addr[acc_bits] == k)),
            ]
            # The read data is registered straight out of the block RAMs (their 5.6 ns
            # clock-to-output would otherwise meet the bank and bias multiplexers in the
            # same cycle): the core and the store unit take their data two cycles after the
            # address.
            read = Signal.like(rd.data, name=f"acc_read{k}", reset_less=True)
            m.d.sync += read.eq(rd.data)
            acc_reads.append(read)
        # The core's data is the bank its address named two cycles before (the address holds
        # the bank of the command whose sums arrive): that bit, registered, then copied per PE.
        core_read_bank = Signal()
        m.d.sync += core_read_bank.eq(core.acc_rd.addr[acc_bits])
        m.submodules.core_read_banks = core_read_banks = Replicas(1, pes)
        m.d.comb += [core_read_banks.d.eq(core_read_bank), core_read_banks.enable.eq(1)]
        core_acc_bank = [core_read_banks.q[pe] for pe in range(pes)]
        for reader, selects in ((core, core_acc_bank), (store, st_acc_bank)):
            m.d.comb += [reader.acc_rd.data[pe].eq(v) for pe, v in
                         enumerate(_per_pe_select(selects, acc_reads))]

        # --- the list -------------------------------------------------------------------------
        m.d.comb += [
            self.retire.eq(retire),
            self.busy.eq(pend_valid | comp_active | drn_valid | (stores.level != 0)
                         | ~store_fsm.ongoing("IDLE")),
        ]
        with m.If(self.abort):
            m.d.sync += acc_valid.eq(0)
        return m
