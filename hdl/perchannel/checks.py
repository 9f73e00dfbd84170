"""The per-channel datapath's descriptor checks, in the order of
:func:`hls_ref.perchannel.check` (the golden model's): the error code of a fetched descriptor.

The checks are pipelined over :data:`CHECK_LATENCY` cycles: no product or comparison chain
runs from the descriptor to the code in one cycle. The three products the rules need
(``in_h * in_w``, ``out_h * out_w`` and an output row's elements ``out_w * out_seg``) come
one after the other from one registered 17 x 17-bit multiplier (one DSP block): operands are
registered, then the product, and each rule's verdict is registered as its product arrives;
the first failing rule's code is registered last. The output tile's geometry (``out_h``,
``out_w``) and the products stay on the outputs for the front end (until the next ``start``).
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hls_ref.descriptor import MAX_SEGMENT_BYTES, ErrorCode, Mode, Op
from hls_ref.precision import Precision

from ..socket.signature import descriptor_layout

__all__ = ["CHECK_LATENCY", "OPERAND_BITS", "PerChannelChecks"]

#: Cycles from ``start`` to ``valid``.
CHECK_LATENCY = 6
#: Width of the shared multiplier's unsigned operands: an output dimension of a 16-bit tile
#: with up to 30 rows or columns of padding, or an input pixel's bytes (``in_c`` 16-bit
#: elements of two bytes), fits.
OPERAND_BITS = 17


class PerChannelChecks(wiring.Component):
    """The error code of a per-channel descriptor on a build with ``section``
    (:class:`hls_ref.config.DepthwiseConfig`).

    Members
    -------
    start : ``In(1)``
        Check ``desc`` (with ``pool_pending``: an average pool's partial sums wait); both must
        stay unchanged until ``valid``.
    desc : ``In(descriptor_layout())``
    pool_pending : ``In(1)``
    valid : ``Out(1)``
        ``code`` and the geometry are the last started descriptor's (:data:`CHECK_LATENCY`
        cycles after ``start``; held until the next ``start``).
    code : ``Out(8)``
        :class:`hls_ref.descriptor.ErrorCode` (0: the command may run).
    out_h, out_w : ``Out(OPERAND_BITS)``
        The output tile's rows and columns (a pool: 1 x 1; an add: the input's); meaningful
        when ``code`` is 0.
    pixels : ``Out(2 * OPERAND_BITS)``
        ``in_h * in_w``, input pixels.
    row_elements : ``Out(2 * OPERAND_BITS)``
        ``out_w * out_seg``, elements of an output row.
    """

    def __init__(self, section):
        if section.max_stride > 2:
            raise ValueError(f"the per-channel datapath strides by 1 or 2, not up to "
                             f"{section.max_stride}")
        self._section = section
        super().__init__({
            "start": In(1),
            "desc": In(descriptor_layout()),
            "pool_pending": In(1),
            "valid": Out(1),
            "code": Out(8),
            "out_h": Out(OPERAND_BITS),
            "out_w": Out(OPERAND_BITS),
            "pixels": Out(2 * OPERAND_BITS),
            "row_elements": Out(2 * OPERAND_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        s, d = self._section, self.desc
        depthwise = d.mode == Mode.DEPTHWISE
        pool = d.mode == Mode.AVGPOOL
        add = d.mode == Mode.ADD
        prec = d.precision
        nibble = prec == Precision.A4W4.value
        sixteen = (prec == Precision.A16W16.value) | (prec == Precision.A16W8.value)
        supported = Const(sum(1 << p.value for p in s.precisions), 8)
        max_kh, max_kw = s.max_kernel
        span_h = d.in_h + d.pad_top + d.pad_bottom
        span_w = d.in_w + d.pad_left + d.pad_right

        # step: 0 idle, 1 .. CHECK_LATENCY - 1 running (the cycle after start is step 1)
        last = CHECK_LATENCY - 1
        step = Signal(range(CHECK_LATENCY))
        with m.If(self.start):
            m.d.sync += [step.eq(1), self.valid.eq(0)]
        with m.Elif(step == last):
            m.d.sync += [step.eq(0), self.valid.eq(1)]
        with m.Elif(step != 0):
            m.d.sync += step.eq(step + 1)

        # the shared multiplier: operands registered, then their product
        op_a = Signal(OPERAND_BITS)
        op_b = Signal(OPERAND_BITS)
        product = Signal(2 * OPERAND_BITS)
        m.d.sync += product.eq(op_a * op_b)
        with m.If(self.start):
            m.d.sync += [op_a.eq(d.in_h), op_b.eq(d.in_w),
                         self.out_h.eq(Mux(depthwise,
                                           ((span_h - d.kernel_h) >> (d.stride_h == 2)) + 1,
                                           Mux(pool, 1, d.in_h))),
                         self.out_w.eq(Mux(depthwise,
                                           ((span_w - d.kernel_w) >> (d.stride_w == 2)) + 1,
                                           Mux(pool, 1, d.in_w)))]
        with m.Elif(step == 1):
            m.d.sync += [op_a.eq(self.out_h), op_b.eq(self.out_w)]
        with m.Elif(step == 2):
            m.d.sync += [op_a.eq(self.out_w), op_b.eq(d.out_seg)]

        def input_bad(addr):
            # pixels and rows start on a byte, 16-bit elements on an even byte
            return ((d.in_c > d.in_pixel_stride)
                    | (nibble & (d.in_pixel_stride[0] | d.in_row_stride[0]))
                    | (sixteen & addr[0]))

        o_shift = Mux(d.out_width == 0, 2, Mux(d.out_width == 1, 3, 4))   # log2(out_bits)
        or_bits = d.out_row_stride << o_shift
        op_bits = d.out_pixel_stride << o_shift
        seg_bits = d.out_seg << o_shift
        row_mode = d.out_seg == d.out_pixel_stride

        # the rules that need no product, registered on start
        rules = [
            (ErrorCode.BAD_OP, (d.op != Op.DEPTHWISE) | (d.mode == 3)),
            (ErrorCode.BAD_PRECISION, ~supported.bit_select(prec, 1)),
            (ErrorCode.BAD_OUT_WIDTH, d.out_width == 3),
            (ErrorCode.ZERO_DIM, (d.in_h == 0) | (d.in_w == 0) | (d.in_c == 0)
             | (d.out_c == 0) | (d.out_seg == 0)),
            (ErrorCode.BAD_KERNEL, depthwise & ((d.kernel_h == 0) | (d.kernel_h > max_kh)
                                                | (d.kernel_w == 0) | (d.kernel_w > max_kw))),
            (ErrorCode.BAD_STRIDE, depthwise & ((d.stride_h == 0) | (d.stride_h > s.max_stride)
                                                | (d.stride_w == 0)
                                                | (d.stride_w > s.max_stride))),
            (ErrorCode.BAD_PADDING, depthwise & ((d.pad_top >= d.kernel_h)
                                                 | (d.pad_bottom >= d.kernel_h)
                                                 | (d.pad_left >= d.kernel_w)
                                                 | (d.pad_right >= d.kernel_w))),
            (ErrorCode.TOO_MANY_CHANNELS, d.out_c > s.lanes),
            (ErrorCode.TILE_TOO_SMALL, depthwise & ((span_h < d.kernel_h)
                                                    | (span_w < d.kernel_w))),
        ]
        failed = {}
        for error, rule in rules:
            failed[error] = Signal(name=f"fail_{error.name.lower()}")
            with m.If(self.start):
                m.d.sync += failed[error].eq(rule)
        # the layout's rules without the output row's size, registered on start
        layout_rest = Signal()
        output_rest = ((d.out_c > d.out_seg) | (d.out_seg > d.out_pixel_stride)
                       | (or_bits[:3] != 0) | ((d.out_width == 2) & d.out_addr[0])
                       | (~row_mode & ((op_bits[:3] != 0) | (seg_bits[:3] != 0)
                                       | ((seg_bits >> 3) > MAX_SEGMENT_BYTES))))
        row_mode_r = Signal()
        or_bits_r = Signal(len(or_bits))
        with m.If(self.start):
            m.d.sync += [
                layout_rest.eq((d.in_c != d.out_c) | input_bad(d.in_addr)
                               | Mux(add, input_bad(d.w_addr), d.w_addr[:3] != 0)
                               | (d.q_addr[:3] != 0) | output_rest),
                row_mode_r.eq(row_mode), or_bits_r.eq(or_bits),
            ]
        o_shift_r = Signal(3)
        acc_state = Signal()
        with m.If(self.start):
            m.d.sync += [o_shift_r.eq(o_shift),
                         acc_state.eq(d.acc_flag & ~(pool & self.pool_pending))]

        # the products' rules, registered as the products arrive (step 2: in_h * in_w,
        # step 3: out_h * out_w, step 4: out_w * out_seg)
        for error in (ErrorCode.INPUT_TOO_LARGE, ErrorCode.OUTPUT_TOO_LARGE,
                      ErrorCode.BAD_LAYOUT):
            failed[error] = Signal(name=f"fail_{error.name.lower()}")
        with m.If(step == 2):
            m.d.sync += [self.pixels.eq(product),
                         failed[ErrorCode.INPUT_TOO_LARGE].eq(
                             Mux(add, product << 1, product) > s.plm_pixels)]
        with m.If(step == 3):
            m.d.sync += failed[ErrorCode.OUTPUT_TOO_LARGE].eq(product > s.acc_pixels)
        with m.If(step == 4):
            # a row of whole bytes within the row stride (a multiple of 8 bits, or refused)
            row_bits = product << o_shift_r
            m.d.sync += [
                self.row_elements.eq(product),
                failed[ErrorCode.BAD_LAYOUT].eq(
                    layout_rest | (row_mode_r & ((((row_bits + 7) >> 3) > MAX_SEGMENT_BYTES)
                                                 | (row_bits > or_bits_r)))),
            ]
        failed[ErrorCode.ACC_STATE] = acc_state

        # the first failing rule's code, in ErrorCode's order
        order = [error for error, _ in rules] + [
            ErrorCode.INPUT_TOO_LARGE, ErrorCode.OUTPUT_TOO_LARGE, ErrorCode.BAD_LAYOUT,
            ErrorCode.ACC_STATE]
        code = Const(0, 8)
        for error in reversed(order):
            code = Mux(failed[error], error.value, code)
        with m.If(step == last):
            m.d.sync += self.code.eq(code)
        return m
