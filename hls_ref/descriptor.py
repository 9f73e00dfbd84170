"""The command descriptor: one accelerator command (one tile invocation) in external memory.

The host writes a list of descriptors and starts the accelerator with the list's address and
length (``hls_ref.registers``); the accelerator fetches and runs them back to back. A
descriptor is eight 64-bit beats (64 bytes, 64-byte aligned), little-endian like every
tensor (``docs/formats.md``); ``docs/accelerator.md`` renders :data:`FIELDS`.

Geometry is given in **elements** of the tensor's own width, so one descriptor addresses a
tile of any HWC tensor of ``docs/formats.md`` (dense sub-words, channel and row strides):

* input element ``(h, w, c)`` of the tile (``c`` counted from the tile's first channel) lives at
  bit ``8 * in_addr + (h * in_row_stride + w * in_pixel_stride + c) * act_bits``;
* output element ``(r, p, k)`` is written at bit
  ``8 * out_addr + (r * out_row_stride + p * out_pixel_stride + k) * out_bits``; the
  accelerator writes ``out_seg`` elements per pixel: the ``out_c`` results, then zeros (the
  layout's channel filler).

:func:`check` is the order in which the hardware validates a descriptor: the first failing rule
gives the error code the status word reports (:class:`ErrorCode`).

An FC command (``op`` 3, :func:`check_fc`) reads the same fields with its own meaning
(``docs/accelerator.md``): ``in_h`` vectors of ``in_c`` inputs (a batch), each at
``in_addr + b * in_row_stride`` elements, ``out_c`` output neurons, and ``out_seg`` elements
written per output row at ``out_addr + b * out_row_stride`` elements; the kernel, stride,
padding, ``in_w`` and pixel-stride fields are not used.
"""

import enum
from dataclasses import dataclass

from .dma import SEG_BYTES_WIDTH, dma_request
from .formats import BEAT_BITS, FCRows
from .precision import Precision

__all__ = ["DESCRIPTOR_BEATS", "DESCRIPTOR_BYTES", "FIELDS", "MAX_SEGMENT_BYTES",
           "OUT_WIDTH_CODES", "Descriptor", "ErrorCode", "FCGeometry", "Geometry", "Mode", "Op",
           "check", "check_fc", "fc_geometry", "geometry", "input_mode", "output_layout_ok",
           "output_request", "write_descriptors"]

DESCRIPTOR_BEATS = 8
DESCRIPTOR_BYTES = DESCRIPTOR_BEATS * BEAT_BITS // 8

#: Longest output segment (one DMA segment: a pixel, or a row of contiguous pixels), bytes.
MAX_SEGMENT_BYTES = (1 << SEG_BYTES_WIDTH) - 1

#: ``out_width`` field code -> output element width in bits (code 3 is invalid).
OUT_WIDTH_CODES = {0: 4, 1: 8, 2: 16}


class Op(enum.IntEnum):
    """The ``op`` field: which accelerator a descriptor is for (``VERSION.kind``)."""

    CONV2D = 1
    DEPTHWISE = 2
    FC = 3


class Mode(enum.IntEnum):
    """The ``mode`` field of a per-channel descriptor (``op`` 2): which per-channel operation
    it runs (``docs/accelerator.md``); other ops ignore it."""

    DEPTHWISE = 0            # depthwise convolution, depth multiplier 1
    AVGPOOL = 1              # global average pooling: the window is the whole tile
    ADD = 2                  # element-wise add of two tensors (TFLite's quantized ADD)


class ErrorCode(enum.IntEnum):
    """``STATUS.code``: why a command list stopped. Codes 1-15 are found by :func:`check`
    before a command touches memory; 16-18 while it runs; 19 when the list starts."""

    NONE = 0
    BAD_OP = 1               # no datapath of the build runs op (or per-channel mode 3)
    BAD_PRECISION = 2        # configuration code not built into the PE array
    BAD_OUT_WIDTH = 3        # out_width code 3
    ZERO_DIM = 4             # in_h, in_w, in_c, out_c or out_seg is 0
    BAD_KERNEL = 5           # kernel 0 or above the maximum
    BAD_STRIDE = 6           # stride 0 or above the maximum
    BAD_PADDING = 7          # padding not below the kernel on its axis
    TOO_MANY_CHANNELS = 8    # out_c above the PEs
    ROW_TOO_WIDE = 9         # in_w above the longest row
    TILE_TOO_SMALL = 10      # the padded tile is smaller than the kernel
    INPUT_TOO_LARGE = 11     # in_h * in_w * groups above the input PLM bank
    WEIGHTS_TOO_LARGE = 12   # kh * kw * groups * PEs above the weight PLM bank
    OUTPUT_TOO_LARGE = 13    # out_h * out_w * PEs above the accumulator PLM bank
    BAD_LAYOUT = 14          # in_c > in_pixel_stride, out_c > out_seg, or a misaligned
    #                          address or stride (see ``check``)
    ACC_STATE = 15           # acc_flag without partial sums of this output size
    BAD_QBLOCK = 16          # quantization block: wrong channel count or scaling mode
    AXI_READ = 17            # an error response while reading (descriptor or operands)
    AXI_WRITE = 18           # an error response while writing the output
    BAD_DESC_ADDR = 19       # DESC_ADDR not 64-byte aligned (nothing is fetched)


#: (name, beat, lsb, width, signed, meaning) of every descriptor field.
FIELDS = (
    ("op", 0, 0, 4, False, "accelerator kind (1 conv2d, 2 depthwise, 3 fc)"),
    ("precision", 0, 4, 3, False, "ST configuration code (`tessera precisions`)"),
    ("out_width", 0, 8, 2, False, "output element width: 0 4-bit, 1 8-bit, 2 16-bit"),
    ("acc_flag", 0, 10, 1, False, "1: add to the partial sums the previous command left"),
    ("q_flag", 0, 11, 1, False, "1: requantize and store the output tile"),
    ("relu", 0, 12, 1, False, "1: clamp below at the output zero point"),
    ("mode", 0, 13, 2, False, "op 2: 0 depthwise conv, 1 average pool, 2 add (else ignored)"),
    ("kernel_h", 0, 16, 4, False, "kernel height"),
    ("kernel_w", 0, 20, 4, False, "kernel width"),
    ("stride_h", 0, 24, 2, False, "vertical stride"),
    ("stride_w", 0, 26, 2, False, "horizontal stride"),
    ("pad_top", 0, 28, 4, False, "rows of padding inserted above the tile"),
    ("pad_bottom", 0, 32, 4, False, "rows of padding inserted below the tile"),
    ("pad_left", 0, 36, 4, False, "columns of padding inserted left of the tile"),
    ("pad_right", 0, 40, 4, False, "columns of padding inserted right of the tile"),
    ("pad_value", 0, 48, 16, True, "padding value: the input zero point (low act_bits used)"),
    ("in_h", 1, 0, 16, False, "input tile rows"),
    ("in_w", 1, 16, 16, False, "input tile columns"),
    ("in_c", 1, 32, 16, False, "input tile channels"),
    ("out_c", 1, 48, 16, False, "output channels of the command (at most PES)"),
    ("in_addr", 2, 0, 32, False, "byte address of input element (0, 0, 0) of the tile"),
    ("in_row_stride", 2, 32, 32, False, "input row stride, elements"),
    ("in_pixel_stride", 3, 0, 32, False, "input pixel stride, elements"),
    ("out_pixel_stride", 3, 32, 32, False, "output pixel stride, elements"),
    ("w_addr", 4, 0, 32, False, "byte address of the weight blob (8-byte aligned)"),
    ("q_addr", 4, 32, 32, False, "byte address of the quantization block (8-byte aligned)"),
    ("out_addr", 5, 0, 32, False, "byte address of output element (0, 0, 0) of the tile"),
    ("out_row_stride", 5, 32, 32, False, "output row stride, elements"),
    ("out_seg", 6, 0, 16, False, "output elements written per pixel (out_c, then zeros)"),
)


@dataclass(frozen=True)
class Descriptor:
    """One command; see :data:`FIELDS` for the meaning and width of every field."""

    op: int = Op.CONV2D
    precision: int = Precision.A8W8.value
    out_width: int = 1
    acc_flag: int = 0
    q_flag: int = 1
    relu: int = 0
    mode: int = 0
    kernel_h: int = 1
    kernel_w: int = 1
    stride_h: int = 1
    stride_w: int = 1
    pad_top: int = 0
    pad_bottom: int = 0
    pad_left: int = 0
    pad_right: int = 0
    pad_value: int = 0
    in_h: int = 1
    in_w: int = 1
    in_c: int = 1
    out_c: int = 1
    in_addr: int = 0
    in_row_stride: int = 0
    in_pixel_stride: int = 0
    out_pixel_stride: int = 0
    w_addr: int = 0
    q_addr: int = 0
    out_addr: int = 0
    out_row_stride: int = 0
    out_seg: int = 0

    def __post_init__(self):
        for name, _, _, width, is_signed, _ in FIELDS:
            value = getattr(self, name)
            low, high = ((-(1 << (width - 1)), (1 << (width - 1)) - 1) if is_signed
                         else (0, (1 << width) - 1))
            if not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"descriptor field {name} = {value!r} does not fit "
                                 f"{'signed' if is_signed else 'unsigned'} {width} bits")

    def encode(self):
        """-> list of :data:`DESCRIPTOR_BEATS` unsigned 64-bit beats."""
        beats = [0] * DESCRIPTOR_BEATS
        for name, beat, lsb, width, _, _ in FIELDS:
            beats[beat] |= (int(getattr(self, name)) & ((1 << width) - 1)) << lsb
        return beats

    def to_bytes(self):
        return b"".join(b.to_bytes(8, "little") for b in self.encode())

    @classmethod
    def decode(cls, beats):
        beats = [int(b) for b in beats]
        if len(beats) != DESCRIPTOR_BEATS:
            raise ValueError(f"a descriptor is {DESCRIPTOR_BEATS} beats, not {len(beats)}")
        values = {}
        for name, beat, lsb, width, is_signed, _ in FIELDS:
            v = (beats[beat] >> lsb) & ((1 << width) - 1)
            if is_signed and v >> (width - 1):
                v -= 1 << width
            values[name] = v
        return cls(**values)

    @classmethod
    def from_bytes(cls, data):
        data = bytes(data)
        return cls.decode([int.from_bytes(data[8 * i:8 * i + 8], "little")
                           for i in range(DESCRIPTOR_BEATS)])


@dataclass(frozen=True)
class Geometry:
    """What a valid conv2d descriptor implies (all sizes in elements, words or pixels)."""

    precision: Precision
    out_bits: int
    groups: int          # ST words per input pixel: ceil(in_c / lanes)
    out_h: int
    out_w: int
    narrow: bool         # input pixels narrower than one ST word (see ``input_mode``)


def input_mode(precision, pixel_stride):
    """``"words"`` when an input pixel spans whole 16-bit words in memory (the DMA copies ST
    words), ``"narrow"`` when it is 4 or 8 bits (a 1- or 2-channel tensor below 16-bit
    activations: the loader widens each pixel to one ST word, zero-filled), else None."""
    bits = pixel_stride * precision.act_bits
    if bits % 16 == 0 and bits:
        return "words"
    if bits in (4, 8):
        return "narrow"
    return None


def geometry(desc):
    """The :class:`Geometry` of a descriptor that passed the field checks of :func:`check`."""
    p = Precision(desc.precision)
    groups = -(-desc.in_c // p.lanes)
    out_h = (desc.in_h + desc.pad_top + desc.pad_bottom - desc.kernel_h) // desc.stride_h + 1
    out_w = (desc.in_w + desc.pad_left + desc.pad_right - desc.kernel_w) // desc.stride_w + 1
    narrow = input_mode(p, desc.in_pixel_stride) == "narrow"
    return Geometry(p, OUT_WIDTH_CODES[desc.out_width], groups, out_h, out_w, narrow)


def _layout_ok(desc, geo):
    """The alignment rules of the input and output addressing (``docs/accelerator.md``)."""
    bits = geo.precision.act_bits
    mode = input_mode(geo.precision, desc.in_pixel_stride)
    if mode is None or desc.in_c > desc.in_pixel_stride:
        return False
    if mode == "words":
        if desc.in_addr % 2 or (desc.in_row_stride * bits) % 16:
            return False
    elif desc.in_addr % 8 or (desc.in_row_stride * bits) % BEAT_BITS:
        return False
    if desc.w_addr % 8 or desc.q_addr % 8:
        return False
    return output_layout_ok(desc, geo.out_w, geo.out_bits)


def output_layout_ok(desc, out_w, ob):
    """The alignment rules of the output addressing, for ``out_w`` pixels per row of ``ob``-bit
    elements (every datapath stores the same way)."""
    if desc.out_c > desc.out_seg or desc.out_seg > desc.out_pixel_stride:
        return False
    if (desc.out_row_stride * ob) % 8 or (ob == 16 and desc.out_addr % 2):
        return False
    if desc.out_seg == desc.out_pixel_stride:
        # pixels are contiguous: each row is one segment, padded with zeros to a whole byte
        row_bytes = -(-out_w * desc.out_seg * ob // 8)
        return row_bytes * 8 <= desc.out_row_stride * ob and row_bytes <= MAX_SEGMENT_BYTES
    return ((desc.out_pixel_stride * ob) % 8 == 0 and (desc.out_seg * ob) % 8 == 0
            and desc.out_seg * ob // 8 <= MAX_SEGMENT_BYTES)


def output_request(desc, out_h, out_w, ob):
    """The DMA request that stores an ``out_h x out_w`` tile of ``ob``-bit outputs of a valid
    descriptor (every datapath stores the same way): one segment per row when the pixels are
    contiguous (``out_seg == out_pixel_stride``), else one per pixel; strides wrap modulo
    2**32."""
    def stride(elements):
        return elements * ob // 8 & 0xFFFFFFFF

    if desc.out_seg == desc.out_pixel_stride:
        row_bytes = -(-out_w * desc.out_seg * ob // 8)
        return dma_request(desc.out_addr, row_bytes, 1, 0, out_h, stride(desc.out_row_stride))
    return dma_request(desc.out_addr, desc.out_seg * ob // 8, out_w,
                       stride(desc.out_pixel_stride), out_h, stride(desc.out_row_stride))


@dataclass(frozen=True)
class FCGeometry:
    """What a valid FC descriptor implies: its weight rows, and the beats of one input vector
    (the loader reads whole beats)."""

    precision: Precision
    out_bits: int
    rows: FCRows
    vector_beats: int


def fc_geometry(desc, fc):
    """The :class:`FCGeometry` of an FC descriptor that passed the field checks of
    :func:`check_fc` on a datapath built from ``fc`` (:class:`hls_ref.config.FCConfig`)."""
    p = Precision(desc.precision)
    rows = FCRows(p, fc.pes, fc.st_units, desc.in_c, desc.out_c)
    return FCGeometry(p, OUT_WIDTH_CODES[desc.out_width], rows,
                      -(-desc.in_c * p.act_bits // BEAT_BITS))


def check_fc(desc, fc, acc_shape=None):
    """The error code of FC descriptor ``desc`` on a datapath built from ``fc``
    (:class:`hls_ref.config.FCConfig`); ``acc_shape`` is ``(vectors, outputs)`` of the partial
    sums the FC accumulators hold, or None. The rules are applied in the order of
    :class:`ErrorCode` (codes that concern convolutions only are never raised)."""
    from .config import FC_MAX_OUTPUTS

    if desc.precision not in {p.value for p in fc.precisions}:
        return ErrorCode.BAD_PRECISION
    if desc.out_width not in OUT_WIDTH_CODES:
        return ErrorCode.BAD_OUT_WIDTH
    if 0 in (desc.in_h, desc.in_c, desc.out_c, desc.out_seg):
        return ErrorCode.ZERO_DIM
    if desc.out_c > FC_MAX_OUTPUTS:
        return ErrorCode.TOO_MANY_CHANNELS
    geo = fc_geometry(desc, fc)
    if desc.in_h * geo.vector_beats * (BEAT_BITS // 16) > fc.plm_in_words:
        return ErrorCode.INPUT_TOO_LARGE
    if desc.in_h > fc.max_batch:
        return ErrorCode.OUTPUT_TOO_LARGE
    bits, ob = geo.precision.act_bits, geo.out_bits
    if (desc.in_addr % 8 or (desc.in_row_stride * bits) % BEAT_BITS
            or desc.in_c > desc.in_row_stride or desc.w_addr % 8 or desc.q_addr % 8
            or not desc.out_c <= desc.out_seg <= desc.out_row_stride
            or (desc.out_row_stride * ob) % 8 or (ob == 16 and desc.out_addr % 2)
            or -(-desc.out_seg * ob // 8) > MAX_SEGMENT_BYTES):
        return ErrorCode.BAD_LAYOUT
    if desc.acc_flag and acc_shape != (desc.in_h, desc.out_c):
        return ErrorCode.ACC_STATE
    return ErrorCode.NONE


def check(desc, config, acc_shape=None):
    """The error code of ``desc`` on an accelerator built from ``config``
    (:class:`hls_ref.config.AcceleratorConfig`), :attr:`ErrorCode.NONE` if it may run.

    ``acc_shape`` is ``(out_h, out_w)`` of the partial sums the accumulators hold, or None
    (after reset or an error). The rules are applied in the order of :class:`ErrorCode`.
    These are the conv2d datapath's checks; the per-channel datapath's (``op`` 2) are
    :func:`hls_ref.perchannel.check`, the FC datapath's (``op`` 3) :func:`check_fc`
    (``hls_ref.socket.ENGINES`` picks them by ``op``).
    """
    if desc.op != Op.CONV2D or not config.conv:
        return ErrorCode.BAD_OP
    if desc.precision not in {p.value for p in config.precisions}:
        return ErrorCode.BAD_PRECISION
    if desc.out_width not in OUT_WIDTH_CODES:
        return ErrorCode.BAD_OUT_WIDTH
    if 0 in (desc.in_h, desc.in_w, desc.in_c, desc.out_c, desc.out_seg):
        return ErrorCode.ZERO_DIM
    (max_kh, max_kw) = config.max_kernel
    if not (1 <= desc.kernel_h <= max_kh and 1 <= desc.kernel_w <= max_kw):
        return ErrorCode.BAD_KERNEL
    if not (1 <= desc.stride_h <= config.max_stride and 1 <= desc.stride_w <= config.max_stride):
        return ErrorCode.BAD_STRIDE
    if (max(desc.pad_top, desc.pad_bottom) >= desc.kernel_h
            or max(desc.pad_left, desc.pad_right) >= desc.kernel_w):
        return ErrorCode.BAD_PADDING
    if desc.out_c > config.pes:
        return ErrorCode.TOO_MANY_CHANNELS
    if desc.in_w > config.max_width:
        return ErrorCode.ROW_TOO_WIDE
    if (desc.in_h + desc.pad_top + desc.pad_bottom < desc.kernel_h
            or desc.in_w + desc.pad_left + desc.pad_right < desc.kernel_w):
        return ErrorCode.TILE_TOO_SMALL
    geo = geometry(desc)
    if desc.in_h * desc.in_w * geo.groups > config.plm_in_words:
        return ErrorCode.INPUT_TOO_LARGE
    if desc.kernel_h * desc.kernel_w * geo.groups * config.pes > config.plm_w_words:
        return ErrorCode.WEIGHTS_TOO_LARGE
    if geo.out_h * geo.out_w * config.pes > config.plm_acc_words:
        return ErrorCode.OUTPUT_TOO_LARGE
    if not _layout_ok(desc, geo):
        return ErrorCode.BAD_LAYOUT
    if desc.acc_flag and acc_shape != (geo.out_h, geo.out_w):
        return ErrorCode.ACC_STATE
    return ErrorCode.NONE


def write_descriptors(memory, addr, descriptors):
    """Write ``descriptors`` into ``memory`` (a uint8 array: an external-memory image) from
    byte ``addr``, in list order."""
    raw = b"".join(d.to_bytes() for d in descriptors)
    memory[addr:addr + len(raw)] = list(raw)
