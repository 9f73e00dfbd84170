"""The per-channel datapath's descriptor checks, in the order of
:func:`hls_ref.perchannel.check` (the golden model's): the error code of a fetched descriptor.

One evaluation per ``start``; the code is registered (``valid`` a cycle later). The products
(``in_h * in_w``, ``out_h * out_w``, an output row's bits) are plain multiplications here:
when the unit joins the datapath's front end they move onto its registered steps, as
conv2d's front end does (``hdl.conv_datapath``).
"""

from amaranth.hdl import Const, Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hls_ref.descriptor import MAX_SEGMENT_BYTES, ErrorCode, Mode, Op
from hls_ref.precision import Precision

from ..socket.signature import descriptor_layout

__all__ = ["PerChannelChecks"]


class PerChannelChecks(wiring.Component):
    """The error code of a per-channel descriptor on a build with ``section``
    (:class:`hls_ref.config.DepthwiseConfig`).

    Members
    -------
    start : ``In(1)``
        Check ``desc`` (with ``pool_pending``: an average pool's partial sums wait).
    desc : ``In(descriptor_layout())``
    pool_pending : ``In(1)``
    valid : ``Out(1)``
        ``code`` is the last started descriptor's (a cycle after ``start``; held).
    code : ``Out(8)``
        :class:`hls_ref.descriptor.ErrorCode` (0: the command may run).
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
        pixels = d.in_h * d.in_w
        out_h = Mux(depthwise, ((span_h - d.kernel_h) >> (d.stride_h == 2)) + 1,
                    Mux(pool, 1, d.in_h))
        out_w = Mux(depthwise, ((span_w - d.kernel_w) >> (d.stride_w == 2)) + 1,
                    Mux(pool, 1, d.in_w))

        def input_bad(addr):
            # pixels and rows start on a byte, 16-bit elements on an even byte
            return ((d.in_c > d.in_pixel_stride)
                    | (nibble & (d.in_pixel_stride[0] | d.in_row_stride[0]))
                    | (sixteen & addr[0]))

        o_shift = Mux(d.out_width == 0, 2, Mux(d.out_width == 1, 3, 4))   # log2(out_bits)
        row_bits = (out_w * d.out_seg) << o_shift
        row_bytes = (row_bits + 7) >> 3
        or_bits = d.out_row_stride << o_shift
        op_bits = d.out_pixel_stride << o_shift
        seg_bits = d.out_seg << o_shift
        row_mode = d.out_seg == d.out_pixel_stride
        output_bad = ((d.out_c > d.out_seg) | (d.out_seg > d.out_pixel_stride)
                      | (or_bits[:3] != 0) | ((d.out_width == 2) & d.out_addr[0])
                      | Mux(row_mode,
                            ((row_bytes << 3) > or_bits) | (row_bytes > MAX_SEGMENT_BYTES),
                            (op_bits[:3] != 0) | (seg_bits[:3] != 0)
                            | ((seg_bits >> 3) > MAX_SEGMENT_BYTES)))
        layout_bad = ((d.in_c != d.out_c) | input_bad(d.in_addr)
                      | Mux(add, input_bad(d.w_addr), d.w_addr[:3] != 0)
                      | (d.q_addr[:3] != 0) | output_bad)

        checks = [
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
            (ErrorCode.INPUT_TOO_LARGE, Mux(add, pixels << 1, pixels) > s.plm_pixels),
            (ErrorCode.OUTPUT_TOO_LARGE, out_h * out_w > s.acc_pixels),
            (ErrorCode.BAD_LAYOUT, layout_bad),
            (ErrorCode.ACC_STATE, d.acc_flag & ~(pool & self.pool_pending)),
        ]
        code = Const(0, 8)
        for error, failed in reversed(checks):
            code = Mux(failed, error.value, code)
        with m.If(self.start):
            m.d.sync += [self.code.eq(code), self.valid.eq(1)]
        return m
