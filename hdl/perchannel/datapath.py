"""The per-channel datapath of the accelerator socket: depthwise convolution, global average
pooling and the element-wise add (descriptor ``op`` 2, ``docs/perchannel.md``).

It implements :class:`hdl.socket.signature.DatapathSignature` with the blocks of
``hdl/perchannel/``, in three stages (front end, compute, store) that hold a command each:

1. **checks** -- :class:`hdl.perchannel.checks.PerChannelChecks` gives the first failing
   rule's code (``hls_ref.perchannel.check``), then the command's geometry and DMA requests
   are registered over a few cycles (the golden model's merged segments, so that the byte
   counts agree);
2. **loads** -- into the next of the ``banks`` input banks (with one bank: once the previous
   command's compute has ended), three requests back to back
   (tags 1-3, ``hls_ref.perchannel.load_requests``): the input tile through
   :class:`~hdl.perchannel.loader.PixelLoader` into the input PLM (two memories by row
   parity), then the weight blob into the weight registers, or an add's input B through the
   same loader into the other memory, and the quantization block through conv2d's
   :class:`hdl.loaders.QuantLoader`;
3. **verdict** -- when every read has completed: refused with ``AXI_READ`` (an error
   response), ``BAD_QBLOCK`` (a block of the wrong entry count or with double scaling), or 0
   after a failed store; otherwise accepted and handed to the compute stage when it is free,
   which takes copies of the weights and the quantization block;
4. **compute** -- :class:`~hdl.perchannel.core.DepthwiseCore` (depthwise, or a pool's sum
   with a weight of one) or :class:`~hdl.perchannel.add.AddUnit` into the output buffer
   (``acc_pixels`` rows of ``lanes`` sums per bank); a depthwise output and a pool start from the
   block's biases, a pool with ``acc_flag`` from the previous pool's sums (kept in registers);
5. **store** -- once the store stage is free (the requantization copied, the output bank
   handed over), conv2d's :class:`hdl.store.StoreUnit` requantizes and packs the tile (an
   add's output entry scales every lane), and the command retires when its write completes.

With two banks (``DepthwiseConfig.banks``) a command's loads overlap the previous command's
compute and its compute the previous command's store; with one, its loads wait for the
previous compute and its compute for the previous store. With two banks a depthwise command
also follows a depthwise command without a gap: it is taken as soon as the core has read the
previous one's tile and the store stage is idle, so that its window fills while the previous
command's last operations and sums are in flight (that command then drains into its output
bank with its own biases, and goes to the store stage when its last sum is written). The
socket fetches and checks the next descriptor meanwhile. After a failed store the computed
command is dropped.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, wiring

from hls_ref.config import AcceleratorConfig
from hls_ref.descriptor import MAX_SEGMENT_BYTES, ErrorCode, Mode, Op
from hls_ref.precision import Precision

from ..dma import BEAT_BYTES, dma_request_layout
from ..loaders import QuantLoader
from ..params import address_bits
from ..socket.signature import ADDR_WIDTH, DatapathSignature
from ..store import StoreUnit, store_config_layout
from .add import AddUnit, add_command_layout
from .checks import CHECK_LATENCY, OPERAND_BITS, PerChannelChecks
from .core import DepthwiseCore
from .loader import PixelLoader, pixel_loader_config
from .window import window_command_layout

__all__ = ["PerChannelDatapath", "check_perchannel_config"]

TAG_INPUT, TAG_SECOND, TAG_QUANT = 1, 2, 3


def check_perchannel_config(config):
    """Refuse per-channel builds the RTL cannot implement, naming the limit (``ValueError``)."""
    s = config.depthwise
    problems = []
    kh, kw = s.max_kernel
    if kh * kw > 15:
        problems.append(f"max_kernel {s.max_kernel} has more than 15 taps")
    if s.max_stride > 2:
        problems.append(f"max_stride ({s.max_stride}) above 2")
    per = s.requantizers // 2
    if s.requantizers % 2 or s.lanes % per:
        problems.append(f"requantizers ({s.requantizers}) must be even and half of them "
                        f"divide lanes ({s.lanes})")
    if problems:
        raise ValueError("unsupported per-channel build: " + "; ".join(problems))


def _command_layout(addr_width, acc_bits, lanes):
    """An accepted command, from the front end to the back end."""
    return data.StructLayout({
        "index": unsigned(32),
        "mode": unsigned(2),
        "q_flag": unsigned(1),
        "acc_flag": unsigned(1),
        "relu": unsigned(1),
        "window": window_command_layout(addr_width),
        "add": add_command_layout(addr_width, acc_bits),
        "store": store_config_layout(),
        "store_req": dma_request_layout(ADDR_WIDTH),
    })


class PerChannelDatapath(wiring.Component):
    """The per-channel datapath of one build (see the module docstring).

    Parameters
    ----------
    config : AcceleratorConfig
        The build; its ``depthwise`` section sizes the datapath.
    pe_stages : int
        Pipeline stages of the ST multipliers.
    requant_stages : int or None
        Pipeline stages of the store's requantizer (its default if None).

    Members
    -------
    The members of :class:`hdl.socket.signature.DatapathSignature`.
    """

    #: The descriptors this datapath runs.
    op = Op.DEPTHWISE

    def __init__(self, config, *, pe_stages=4, requant_stages=None):
        if not isinstance(config, AcceleratorConfig) or config.depthwise is None:
            raise TypeError(f"config must be an AcceleratorConfig with a depthwise section, "
                            f"not {config!r}")
        check_perchannel_config(config)
        self._config = config
        self._pe_stages = pe_stages
        self._requant_stages = requant_stages
        super().__init__(DatapathSignature(fields_width=1))

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        s = self._config.depthwise
        lanes = s.lanes
        addr_width = address_bits(s.plm_pixels)
        acc_bits = address_bits(s.acc_pixels)
        taps = s.max_kernel[0] * s.max_kernel[1]
        multiplier = self._config.pe_multiplier if s.pe_dsp else "lut"

        m.submodules.checks = checks = PerChannelChecks(s)
        assert CHECK_LATENCY >= 4   # the front end's first product is ready by the code
        m.submodules.loader = loader = PixelLoader(lanes=lanes, addr_width=addr_width)
        m.submodules.q_loader = q_loader = QuantLoader(pes=lanes)
        m.submodules.core = core = DepthwiseCore(
            lanes=lanes, max_kernel=s.max_kernel, addr_width=addr_width,
            precisions=s.precisions, stages=self._pe_stages, multiplier=multiplier)
        m.submodules.add = add = AddUnit(lanes=lanes, scalers=s.requantizers,
                                         addr_width=addr_width, out_width=acc_bits)
        m.submodules.store = store = StoreUnit(
            pes=lanes, acc_rows=s.acc_pixels, requant_stages=self._requant_stages,
            elements=s.store_elements)
        m.d.comb += [self.mac.eq(core.mac), self.rd_fields.eq(0), self.reads_busy.eq(0)]

        d = self.desc.payload.desc
        layout = _command_layout(addr_width, acc_bits, lanes)
        rec = Signal(layout, reset_less=True)       # the command being checked and loaded
        cur = Signal(layout, reset_less=True)       # the command being computed
        stc = Signal(layout, reset_less=True)       # the command being stored
        bank_bits = s.banks - 1
        f_bank = Signal(bank_bits)                  # the bank the front end loads
        c_bank = Signal(bank_bits)                  # the input bank of the computed command
        o_bank = Signal(bank_bits)                  # the output bank it computes into
        s_bank = Signal(bank_bits)                  # the output bank being stored
        load_free = Signal()                        # the front end's bank may be loaded
        take_ready = Signal()                       # the compute stage may take a command
        pool_pending = Signal()                     # a pool's partial sums wait

        # --- checks and geometry ------------------------------------------------------------
        prec = d.precision
        a4 = prec == Precision.A4W4.value
        a8 = (prec == Precision.A8W8.value) | (prec == Precision.A8W4.value)
        a_shift = Mux(a4, 2, Mux(a8, 3, 4))          # log2(act_bits)
        l_shift = Mux(a4, 2, Mux(a8, 1, 0))          # log2(products per ST operation)
        o_shift = Mux(d.out_width == 0, 2, Mux(d.out_width == 1, 3, 4))
        depthwise = d.mode == Mode.DEPTHWISE
        pool = d.mode == Mode.AVGPOOL
        is_add = d.mode == Mode.ADD
        m.d.comb += [checks.desc.eq(d), checks.pool_pending.eq(pool_pending)]

        out_h, out_w = checks.out_h, checks.out_w
        groups = Signal(5)
        seg = Signal(OPERAND_BITS)       # one input pixel's bytes
        p_bytes = Signal(32)
        r_bytes = Signal(32)
        x_row = Signal(2 * OPERAND_BITS)     # seg * in_w
        x_seg1 = Signal(OPERAND_BITS)
        x_inner = Signal(16)
        x_block = Signal(2 * OPERAND_BITS)   # x_seg1 * in_h
        pixels = checks.pixels
        or_bits = Signal(40)
        op_bits = Signal(40)
        seg_bits = Signal(40)
        o_row = checks.row_elements          # out_w * out_seg
        s_seg = Signal(OPERAND_BITS)
        s_inner = Signal(16)
        # the front end's multiplier (one DSP block): operands registered, then the product
        mul_a = Signal(OPERAND_BITS)
        mul_b = Signal(OPERAND_BITS)
        product = Signal(2 * OPERAND_BITS)
        s_block = product                    # s_seg * out_h, in RECORD
        row_mode = d.out_seg == d.out_pixel_stride
        pad_value = Mux(a4, d.pad_value[:4].as_signed(),
                        Mux(a8, d.pad_value[:8].as_signed(), d.pad_value[:16].as_signed()))
        load_q = Signal()

        req_valid = Signal()
        req = Signal(self.rd_req.payload.shape())
        m.d.comb += [self.rd_req.valid.eq(req_valid), self.rd_req.payload.eq(req)]
        with m.If(req_valid & self.rd_req.ready):
            m.d.sync += req_valid.eq(0)

        q = q_loader.q
        entries = Mux(is_add, 3, d.out_c)
        q_bad = (q.channels != entries) | q.double
        verdict_fail = self.rd_error | (load_q & q_bad) | self.stop
        verdict_code = Mux(self.rd_error, ErrorCode.AXI_READ,
                           Mux(self.stop, 0, ErrorCode.BAD_QBLOCK))
        phase_b = Signal()               # the loader takes an add's input B
        w_beat = Signal(range(max(2, (taps * lanes) // 4 + 1)))
        go = Signal()

        with m.FSM(name="perchannel_front") as front:
            with m.State("IDLE"):
                with m.If(self.desc.valid):
                    m.next = "CHECK"
            with m.State("CHECK"):
                # kernel_h * kernel_w from shifted copies (4 x 4 bits: no multiplier)
                taps_n = sum(Mux(d.kernel_h[i], d.kernel_w << i, 0) for i in range(4))
                m.d.sync += [
                    groups.eq((taps_n + (1 << l_shift) - 1) >> l_shift),
                    seg.eq(((d.in_c << a_shift) + 7) >> 3),
                    p_bytes.eq((d.in_pixel_stride << a_shift)[3:35]),
                    r_bytes.eq((d.in_row_stride << a_shift)[3:35]),
                    or_bits.eq(d.out_row_stride << o_shift),
                    op_bits.eq(d.out_pixel_stride << o_shift),
                    seg_bits.eq(d.out_seg << o_shift),
                    load_q.eq(~d.acc_flag | d.q_flag),
                ]
                m.next = "CODE"
            with m.State("CODE"):
                # the multiplier gives seg * in_w meanwhile (CHECK_LATENCY >= 4 cycles)
                m.d.sync += x_row.eq(product)
                with m.If(checks.valid):
                    with m.If(checks.code == 0):
                        m.next = "GEO2"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("GEO2"):
                merge1 = (d.in_w > 1) & (p_bytes == seg) & (x_row <= MAX_SEGMENT_BYTES)
                row_bytes = ((o_row << o_shift) + 7) >> 3
                m.d.sync += [
                    x_seg1.eq(Mux(merge1, x_row, seg)),
                    x_inner.eq(Mux(merge1, 1, d.in_w)),
                    s_seg.eq(Mux(row_mode, row_bytes, seg_bits >> 3)),
                    s_inner.eq(Mux(row_mode, 1, out_w)),
                ]
                m.next = "GEO3"
            with m.State("GEO3"):
                m.next = "GEO4"
            with m.State("GEO4"):
                m.next = "GEO5"
            with m.State("GEO5"):
                m.d.sync += x_block.eq(product)
                m.next = "RECORD"
            with m.State("RECORD"):
                x_merge2 = (x_inner == 1) & (d.in_h > 1) & (r_bytes == x_seg1) \
                    & (x_block <= MAX_SEGMENT_BYTES)
                s_merge = (s_inner == 1) & (out_h > 1) & (or_bits[3:35] == s_seg) \
                    & (s_block <= MAX_SEGMENT_BYTES)
                w, a, st, sreq = rec.window, rec.add, rec.store, rec.store_req
                m.d.sync += [
                    rec.index.eq(self.desc.payload.index), rec.mode.eq(d.mode),
                    rec.q_flag.eq(d.q_flag), rec.acc_flag.eq(d.acc_flag), rec.relu.eq(d.relu),
                    w.base.eq(0), w.in_h.eq(d.in_h), w.in_w.eq(d.in_w),
                    w.out_h.eq(Mux(pool, d.in_h, out_h)), w.out_w.eq(Mux(pool, d.in_w, out_w)),
                    w.kernel_h.eq(Mux(pool, 1, d.kernel_h)),
                    w.kernel_w.eq(Mux(pool, 1, d.kernel_w)),
                    w.stride_h.eq(Mux(pool, 1, d.stride_h)),
                    w.stride_w.eq(Mux(pool, 1, d.stride_w)),
                    w.pad_top.eq(Mux(pool, 0, d.pad_top)),
                    w.pad_left.eq(Mux(pool, 0, d.pad_left)),
                    w.pad_value.eq(pad_value), w.precision.eq(prec),
                    w.groups.eq(Mux(pool, 1, groups)), w.pixels.eq(pixels),
                    a.pixels.eq(pixels), a.base_a.eq(0), a.base_b.eq((pixels + 1) >> 1),
                    a.out_base.eq(0),
                    st.acc_bank.eq(0), st.out_h.eq(out_h), st.out_w.eq(out_w),
                    st.out_c.eq(d.out_c), st.out_seg.eq(d.out_seg),
                    st.out_bits.eq(d.out_width), st.lane.eq(d.out_addr[:3]),
                    st.row_step.eq(or_bits[3:6]), st.pixel_step.eq(op_bits[3:6]),
                    st.pixel_segments.eq(~row_mode & (out_w > 1)),
                    st.row_segments.eq((out_h > 1) & ~s_merge),
                    st.row_align.eq(row_mode),
                    sreq.addr.eq(d.out_addr),
                    sreq.seg_bytes.eq(Mux(s_merge, s_block, s_seg)),
                    sreq.inner_count.eq(s_inner),
                    sreq.inner_stride.eq(op_bits[3:35]),
                    sreq.outer_count.eq(Mux(s_merge, 1, out_h)),
                    sreq.outer_stride.eq(or_bits[3:35]),
                    # the input request (dma_request's merges)
                    req.addr.eq(d.in_addr),
                    req.seg_bytes.eq(Mux(x_merge2, x_block, x_seg1)),
                    req.inner_count.eq(x_inner),
                    req.inner_stride.eq(Mux(x_inner > 1, p_bytes, 0)),
                    req.outer_count.eq(Mux(x_merge2, 1, d.in_h)),
                    req.outer_stride.eq(Mux(x_merge2 | (d.in_h == 1), 0, r_bytes)),
                    req.tag.eq(TAG_INPUT),
                ]
                m.next = "WAIT"
            with m.State("WAIT"):
                # one bank: the previous command must have been computed (the compute stage
                # keeps copies of the weights and the quantization block)
                with m.If(self.stop):
                    m.next = "IDLE"
                with m.Elif(load_free):
                    m.d.sync += [req_valid.eq(1), phase_b.eq(0), w_beat.eq(0)]
                    m.next = "LOAD_2"
            with m.State("LOAD_2"):
                with m.If(~req_valid):
                    with m.If(is_add):
                        m.d.sync += [req.addr.eq(d.w_addr)]      # input B: A's strides
                    with m.Else():
                        m.d.sync += [req.addr.eq(d.w_addr),
                                     req.seg_bytes.eq(groups * (2 * lanes)),
                                     req.inner_count.eq(1), req.inner_stride.eq(0),
                                     req.outer_count.eq(1), req.outer_stride.eq(0)]
                    m.d.sync += [req.tag.eq(TAG_SECOND), req_valid.eq(depthwise | is_add)]
                    m.next = "LOAD_Q"
            with m.State("LOAD_Q"):
                with m.If(~req_valid):
                    m.d.sync += [req.addr.eq(d.q_addr),
                                 req.seg_bytes.eq(BEAT_BYTES * (1 + 2 * entries)),
                                 req.inner_count.eq(1), req.inner_stride.eq(0),
                                 req.outer_count.eq(1), req.outer_stride.eq(0),
                                 req.tag.eq(TAG_QUANT), req_valid.eq(load_q)]
                    m.next = "READS"
            with m.State("READS"):
                with m.If(~req_valid & self.rd_idle):
                    m.next = "SETTLE"
            with m.State("SETTLE"):
                # the loader writes a pixel the cycle after its last beat; the compute stage
                # takes the command once it has handed the previous one to the store
                with m.If(take_ready):
                    m.next = "VERDICT"
            with m.State("VERDICT"):
                m.next = "IDLE"
                with m.If(~verdict_fail):
                    m.d.sync += [cur.eq(rec), pool_pending.eq(pool), c_bank.eq(f_bank),
                                 f_bank.eq(f_bank + 1)]

        # the multiplier's operands: x_seg1 * in_h in GEO3, s_seg * out_h in GEO4, else
        # seg * in_w
        m.d.sync += [
            mul_a.eq(Mux(front.ongoing("GEO3"), x_seg1, Mux(front.ongoing("GEO4"), s_seg, seg))),
            mul_b.eq(Mux(front.ongoing("GEO3"), d.in_h,
                         Mux(front.ongoing("GEO4"), out_h, d.in_w))),
            product.eq(mul_a * mul_b),
        ]
        started_loads = front.ongoing("WAIT") & ~self.stop & load_free
        deciding = front.ongoing("VERDICT")
        refused = front.ongoing("CODE") & checks.valid & (checks.code != 0)
        stopped = front.ongoing("WAIT") & self.stop
        m.d.comb += [
            checks.start.eq(front.ongoing("CHECK")),
            self.desc.ready.eq(refused | stopped | deciding),
            self.verdict.accepted.eq(deciding & ~verdict_fail),
            self.verdict.code.eq(Mux(refused, checks.code,
                                     Mux(deciding & verdict_fail, verdict_code, 0))),
            go.eq(deciding & ~verdict_fail),
        ]
        with m.If(self.abort):
            m.d.sync += pool_pending.eq(0)

        # --- read beats: the loader, the weight registers, the quantization loader ----------
        beats = self.rd_beats
        beat = beats.payload.beat
        to_loader = beats.valid & (((beat.tag == TAG_INPUT) & ~phase_b)
                                   | ((beat.tag == TAG_SECOND) & is_add & phase_b))
        cfg = Signal(pixel_loader_config(addr_width, lanes))
        m.d.comb += [
            cfg.base.eq(Mux(started_loads, 0, rec.add.base_b)),
            cfg.in_w.eq(Mux(is_add, 1, d.in_w)),
            cfg.seg_bytes.eq(seg), cfg.in_c.eq(d.in_c), cfg.precision.eq(prec),
            loader.cfg.eq(cfg),
            loader.start.eq(started_loads | (loader.done & is_add & ~phase_b
                                             & ~front.ongoing("WAIT"))),
            loader.beats.valid.eq(to_loader),
            loader.beats.payload.eq(beat),
            q_loader.start.eq(started_loads),
            q_loader.beats.valid.eq(beats.valid & (beat.tag == TAG_QUANT)),
            q_loader.beats.payload.eq(beat),
            beats.ready.eq(Mux((beat.tag == TAG_INPUT) | ((beat.tag == TAG_SECOND) & is_add),
                               loader.beats.ready & to_loader, 1)),
        ]
        with m.If(loader.done & is_add & ~phase_b):
            m.d.sync += phase_b.eq(1)

        weights = Signal(data.ArrayLayout(data.ArrayLayout(unsigned(16), lanes), taps),
                         reset_less=True)
        w_flat = weights.as_value()
        w_take = beats.valid & (beat.tag == TAG_SECOND) & ~is_add
        with m.If(w_take):
            m.d.sync += w_beat.eq(w_beat + 1)
            for n in range(-(-(taps * lanes) // 4)):
                width = min(64, len(w_flat) - 64 * n)
                with m.If(w_beat == n):
                    m.d.sync += w_flat[64 * n:64 * n + width].eq(beat.data[:width])

        # the compute stage's copies of the weights and the quantization block, taken with
        # the command (the front end then loads the next command's); two banks of weights,
        # by ``c_tag``: a command may start while the previous one's last operations still
        # multiply by its own
        c_weights = [Signal.like(weights, name=f"c_weights{t}") for t in range(2)]
        c_tag = Signal()
        cq = Signal.like(q_loader.q)
        with m.If(go):
            m.d.sync += [c_tag.eq(~c_tag), cq.eq(q_loader.q)]
            with m.If(c_tag):
                m.d.sync += c_weights[0].eq(weights)
            with m.Else():
                m.d.sync += c_weights[1].eq(weights)

        # --- the input PLM: two memories by row parity, ``banks`` banks each -----------------
        for k in range(2):
            mem = memory.Memory(shape=unsigned(16 * lanes), depth=_depth(s.plm_pixels, s.banks),
                                init=[])
            m.submodules[f"in_plm{k}"] = mem
            wr, rd = mem.write_port(), mem.read_port()
            rd_addr = Mux(cur.mode == Mode.ADD, add.rd[k].addr, core.rd[k].addr)
            m.d.comb += [
                wr.addr.eq(Cat(loader.wr_addr, f_bank)), wr.data.eq(loader.wr_data),
                wr.en.eq(loader.wr_en & ((loader.wr_memory ^ phase_b) == k)),
                rd.addr.eq(Cat(rd_addr, c_bank)),
                rd.en.eq(1),
                core.rd[k].data.eq(rd.data), add.rd[k].data.eq(rd.data),
            ]

        # --- the back end: compute, then store and retire -----------------------------------
        # The compute stage hands a computed command to the store stage once that one is idle
        # (its output bank and requantization copied); with two output banks it then computes
        # the next command into the other bank while the store drains this one.
        sums = data.ArrayLayout(signed(32), lanes)
        m.submodules.out_buf = out_buf = memory.Memory(
            shape=sums, depth=_depth(s.acc_pixels, s.banks), init=[])
        ob_wr, ob_rd = out_buf.write_port(), out_buf.read_port()
        pool_acc = Signal(sums, reset_less=True)
        out_row = Signal(acc_bits)
        cur_pool = cur.mode == Mode.AVGPOOL
        cur_add = cur.mode == Mode.ADD
        st_go = Signal()
        st_req_valid = Signal()
        handoff = Signal()               # a computed command moves to the store stage
        drop = Signal()                  # a store failed: the computed command is dropped
        # A depthwise command taken while the previous depthwise command runs (two banks):
        # the previous one drains (``drn``: its record, output bank and biases) while the new
        # one's window fills; ``early`` takes it, ``claim`` holds the compute stage in RUN
        # from the front end's last check to its verdict.
        early = Signal()
        early_ok = Signal()
        early_start = Signal()
        draining = Signal()
        drain_done = Signal()
        drn = Signal(layout, reset_less=True)
        drn_bank = Signal(bank_bits)
        drn_bias = Signal.like(cq.bias, reset_less=True)
        m.d.sync += [st_go.eq(0), early_start.eq(early)]
        with m.If(st_req_valid & self.wr_req.ready):
            m.d.sync += st_req_valid.eq(0)
        claim = front.ongoing("SETTLE") & early_ok
        with m.FSM(name="perchannel_compute") as comp:
            with m.State("IDLE"):
                with m.If(go):
                    m.next = "START"
            with m.State("START"):
                m.d.sync += out_row.eq(0)
                m.next = "RUN"
            with m.State("RUN"):
                with m.If(~core.busy & ~add.busy & ~add.wr_en & ~draining & ~early_start
                          & ~claim & ~go):
                    m.next = "DONE"
            with m.State("DONE"):
                with m.If(handoff | drop):
                    m.d.sync += o_bank.eq(o_bank + (s.banks - 1))
                    m.next = "IDLE"
        with m.If(early):
            m.d.sync += [draining.eq(1), drn.eq(cur), drn_bank.eq(o_bank),
                         drn_bias.eq(cq.bias), o_bank.eq(o_bank + 1)]
        with m.Elif(drain_done):
            m.d.sync += draining.eq(0)
        h_rec = Mux(drain_done, drn.as_value(), cur.as_value())
        h_q_flag = Mux(drain_done, drn.q_flag, cur.q_flag)
        with m.FSM(name="perchannel_store") as stf:
            with m.State("IDLE"):
                with m.If(handoff & h_q_flag):
                    m.d.sync += [st_go.eq(1), st_req_valid.eq(1)]
                    m.next = "STORE"
            with m.State("STORE"):
                with m.If(~st_go & ~store.busy & ~st_req_valid):
                    m.next = "RESPONSE"
            with m.State("RESPONSE"):
                with m.If(self.wr_done.valid):
                    m.next = "IDLE"
        m.d.comb += [
            early_ok.eq(comp.ongoing("RUN") & ~early_start & ~draining
                        & (cur.mode == Mode.DEPTHWISE) & (rec.mode == Mode.DEPTHWISE)
                        & core.accept & stf.ongoing("IDLE") & ~st_go & ~st_req_valid
                        if s.banks == 2 else 0),
            early.eq(go & comp.ongoing("RUN")),
        ]
        # the drained command is handed over when its last sum is written (the store stage
        # was idle when the next command was taken, and nothing else starts it meanwhile)
        finished = comp.ongoing("DONE") | drain_done
        m.d.comb += [
            handoff.eq(finished & stf.ongoing("IDLE") & ~self.stop),
            drop.eq(finished & self.stop),
        ]
        with m.If(handoff):
            m.d.sync += [stc.eq(h_rec), s_bank.eq(Mux(drain_done, drn_bank, o_bank))]
        starting = comp.ongoing("START") | early_start
        m.d.comb += [
            core.start.eq(starting & ~cur_add), core.pool.eq(cur_pool), core.cmd.eq(cur.window),
            core.tag.eq(c_tag), core.o.ready.eq(1),
            core.weights[0].eq(c_weights[0]), core.weights[1].eq(c_weights[1]),
            add.start.eq(starting & cur_add), add.cmd.eq(cur.add),
            add.params.zero_point[0].eq(cq.bias[0]), add.params.zero_point[1].eq(cq.bias[1]),
            add.params.multiplier[0].eq(cq.multiplier[0]),
            add.params.multiplier[1].eq(cq.multiplier[1]),
            add.params.shift[0].eq(cq.shift[0]), add.params.shift[1].eq(cq.shift[1]),
            add.params.left_shift.eq(cq.bias[2][:5]),
        ]
        # a depthwise output or a pool: the sums plus the biases (a pool with acc_flag: plus
        # the previous pool's sums)
        start_sums = Signal(sums)
        total = Signal(sums)
        for lane in range(lanes):
            m.d.comb += [
                start_sums[lane].eq(Mux(draining, drn_bias[lane],
                                        Mux(cur_pool & cur.acc_flag, pool_acc[lane],
                                            cq.bias[lane]))),
                total[lane].eq((start_sums[lane] + core.o.payload[lane])[:32].as_signed()),
            ]
        taken = core.o.valid
        # the sums' command (the drained one while ``draining``): its outputs counted by
        # column and row, so that its end is known when its last sum is written
        s_col = Signal(16)
        s_row = Signal(16)
        s_done = Signal()                # the sums' command has written its last sum
        s_window = Mux(draining, drn.window.as_value(), cur.window.as_value())
        s_window = data.View(window_command_layout(addr_width), s_window)
        last_sum = (taken & (s_col == s_window.out_w - 1) & (s_row == s_window.out_h - 1))
        m.d.comb += drain_done.eq(draining & (s_done | last_sum))
        with m.If(taken):
            m.d.sync += out_row.eq(out_row + 1)
            with m.If(cur_pool):
                m.d.sync += pool_acc.eq(total)
            with m.If(s_col != s_window.out_w - 1):
                m.d.sync += s_col.eq(s_col + 1)
            with m.Else():
                m.d.sync += [s_col.eq(0), s_row.eq(s_row + 1)]
            with m.If(last_sum):
                m.d.sync += s_done.eq(1)
        with m.If(comp.ongoing("START") | drain_done):
            m.d.sync += [out_row.eq(0), s_col.eq(0), s_row.eq(0), s_done.eq(0)]
        m.d.comb += [
            ob_wr.addr.eq(Cat(Mux(cur_add, add.wr_addr, Mux(cur_pool, 0, out_row)),
                              Mux(draining, drn_bank, o_bank))),
            ob_wr.data.eq(Mux(cur_add, add.wr_data, total)),
            ob_wr.en.eq(Mux(cur_add, add.wr_en, taken)),
            ob_rd.addr.eq(Cat(store.acc_rd.addr[:acc_bits], s_bank)), ob_rd.en.eq(1),
            store.acc_rd.data.eq(ob_rd.data),
        ]

        # the store's requantization: the block's zero point and clamp (ReLU and the output
        # width folded in), each lane's multiplier and shift (an add: the output entry's),
        # copied with the command
        width_min = Mux(cur.store.out_bits == 0, -8, Mux(cur.store.out_bits == 1, -128, -32768))
        width_max = Mux(cur.store.out_bits == 0, 7, Mux(cur.store.out_bits == 1, 127, 32767))
        low = Mux(cur.relu & (cq.zero_point > cq.act_min), cq.zero_point, cq.act_min)
        # (a drained command's are copied when the next command is taken: the store stage is
        # idle then, and the block is the next command's afterwards)
        with m.If((handoff & ~drain_done) | early):
            m.d.sync += [store.q.zero_point.eq(cq.zero_point),
                         store.q.low.eq(Mux(low > width_min, low, width_min)),
                         store.q.high.eq(Mux(cq.act_max < width_max, cq.act_max, width_max))]
            for lane in range(lanes):
                m.d.sync += [
                    store.q.multiplier[lane].eq(Mux(cur_add, cq.multiplier[2],
                                                    cq.multiplier[lane])),
                    store.q.shift[lane].eq(Mux(cur_add, cq.shift[2], cq.shift[lane])),
                ]
        answered = stf.ongoing("RESPONSE") & self.wr_done.valid
        m.d.comb += [
            store.start.eq(st_go), store.cfg.eq(stc.store),
            self.wr_req.valid.eq(st_req_valid), self.wr_req.payload.eq(stc.store_req),
            self.wr_data.valid.eq(store.beats.valid), self.wr_data.payload.eq(store.beats.payload),
            store.beats.ready.eq(self.wr_data.ready),
            self.wr_done.ready.eq(stf.ongoing("RESPONSE")),
            self.write_error.eq(answered & self.wr_done.payload.err),
            self.error_index.eq(stc.index),
            self.retire.eq((handoff & ~h_q_flag) | (answered & ~self.wr_done.payload.err)),
            # one input bank: the next loads wait for the compute; one output bank: the next
            # compute waits for the store
            load_free.eq(comp.ongoing("IDLE") & ~go if s.banks == 1 else 1),
            take_ready.eq((comp.ongoing("IDLE") & (stf.ongoing("IDLE") if s.banks == 1 else 1))
                          | early_ok),
            self.busy.eq(~comp.ongoing("IDLE") | ~stf.ongoing("IDLE") | go),
        ]
        return m


def _depth(rows, banks):
    """Rows of a memory of ``banks`` banks of ``rows`` rows, bank ``b`` from row
    ``b << address_bits(rows)`` (its address: the bank number above a bank's row)."""
    return rows + (banks - 1) * (1 << address_bits(rows))
