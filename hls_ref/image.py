"""The model image: the binary contract between the compiler (``sw/soc_image.py``), the
firmware (``firmware/``, whose ``image_format.h`` :func:`c_header` generates) and the golden
runner (``sw/soc_golden.py``). ``docs/soc.md`` describes it.

External memory (bus addresses) as a run sees it::

    0                 boot block: BOOT_MAGIC, firmware words, the firmware (hls_ref.soc_map)
    RUN_BLOCK         run block (host -> firmware): RunBlock
    IMAGE_BASE        the image: ImageHeader, layer table (LayerEntry per layer), layer names,
                      processor-layer parameter blocks, weights, quantization blocks and
                      descriptor lists -- all constant, covered by the checksum
    header.buffers    activation buffers (the buffer plan: every tensor's address)
    header.results    results (firmware -> host): RunRecord, then LayerResult per layer

Every structure is little-endian with 32- or 64-bit fields and a size that is a multiple of
8 bytes; every section starts on a 64-byte boundary. Tensors are in ``docs/formats.md``
section 1 layout (8-bit elements); a processor layer's tensors are described by
``TensorDesc`` (height, width, channels, channel stride and row stride in elements).

The checksum is Fletcher-64 over 32-bit little-endian words: ``a += word; b += a`` (both
modulo 2**32) over the bytes from ``CHECKSUM_FROM`` to ``ImageHeader.data_bytes``.
"""

import enum
import struct
from dataclasses import dataclass

from .descriptor import Op

__all__ = [
    "CHECKSUM_FROM",
    "IMAGE_BASE",
    "IMAGE_MAGIC",
    "IMAGE_VERSION",
    "RUN_BLOCK",
    "RUN_MAGIC",
    "STRUCTS",
    "Engine",
    "LayerOp",
    "Reason",
    "RunStatus",
    "Struct",
    "c_header",
    "fletcher64",
]

IMAGE_MAGIC = 0x474D4954          # "TIMG"
IMAGE_VERSION = 4                 # 4: the network input may be written unfolded (formats 1c)
RUN_MAGIC = 0x4E555254            # "TRUN"
#: Bus address of the run block and of the image.
RUN_BLOCK = 0x000F_FFC0
IMAGE_BASE = 0x0010_0000
#: The checksum covers the image from this byte (after the checksum words themselves).
CHECKSUM_FROM = 16
SECTION_ALIGN = 64
#: Limits of the processor's kernels (their on-chip scratch space): channels of a
#: convolution, depthwise or pooling layer, inputs of a fully connected layer, softmax width.
MAX_CHANNELS = 512
FC_MAX_INPUTS = 4096
SOFTMAX_MAX = 1024


class LayerOp(enum.IntEnum):
    """What a layer computes."""

    CONV2D = 1
    DEPTHWISE = 2
    FC = 3
    ADD = 4
    AVGPOOL = 5
    MAXPOOL = 6
    SOFTMAX = 7
    RESHAPE = 8


#: The accelerator datapath (descriptor ``op``) that can run each layer op.
ACCELERATOR_FOR = {LayerOp.CONV2D: Op.CONV2D, LayerOp.DEPTHWISE: Op.DEPTHWISE,
                   LayerOp.FC: Op.FC, LayerOp.ADD: Op.DEPTHWISE, LayerOp.AVGPOOL: Op.DEPTHWISE}


class Engine(enum.IntEnum):
    """Who runs a layer: the processor, or accelerator ``k`` as ``ACCEL0 + k``."""

    PROCESSOR = 0
    ACCEL0 = 1


class Reason(enum.IntEnum):
    """Why a layer runs on the processor (``NONE`` for accelerator layers)."""

    NONE = 0
    NO_ACCELERATOR = 1      # no accelerator of its kind in this build
    HOST_OP = 2             # an op no accelerator kind runs (softmax, pooling, add, reshape)
    UNSUPPORTED = 3         # the accelerator cannot run this instance (the message says why)
    COPY = 4                # a reshape whose layouts differ: the processor copies it
    ALIAS = 5               # a reshape that changes no byte: nothing to run


class RunStatus(enum.IntEnum):
    """``RunRecord.status``: how the firmware's run ended."""

    OK = 0
    BAD_IMAGE = 1           # no image magic, or another version
    BAD_CHECKSUM = 2
    WRONG_BUILD = 3         # the image was compiled for other accelerators
    ACCEL_ERROR = 4         # an accelerator stopped with an error (layer, index, code)
    BAD_LAYER = 5           # a layer table entry the firmware cannot run


@dataclass(frozen=True)
class Struct:
    """A little-endian record of named fields (``u32``, ``i32``, ``u64``)."""

    name: str
    fields: tuple            # (name, type, meaning)

    _FORMATS = {"u32": "I", "i32": "i", "u64": "Q"}

    @property
    def format(self):
        return "<" + "".join(self._FORMATS[t] for _, t, _ in self.fields)

    @property
    def size(self):
        return struct.calcsize(self.format)

    def pack(self, **values):
        unknown = set(values) - {n for n, _, _ in self.fields}
        if unknown:
            raise KeyError(f"{self.name} has no field {sorted(unknown)[0]!r}")
        return struct.pack(self.format, *(int(values.get(n, 0)) for n, _, _ in self.fields))

    def unpack(self, data, offset=0):
        values = struct.unpack_from(self.format, data, offset)
        return {n: v for (n, _, _), v in zip(self.fields, values)}


def _struct(name, *fields):
    s = Struct(name, tuple(fields))
    if s.size % 8:
        raise ValueError(f"{name} is {s.size} bytes, not a multiple of 8")
    return s


def _tensor(prefix):
    return ((f"{prefix}_addr", "u32", "bus address of element (0, 0, 0)"),
            (f"{prefix}_h", "u32", "rows"), (f"{prefix}_w", "u32", "columns"),
            (f"{prefix}_c", "u32", "channels"),
            (f"{prefix}_cs", "u32", "channel stride, elements"),
            (f"{prefix}_rs", "u32", "row stride, elements"))


RUN_BLOCK_STRUCT = _struct(
    "RunBlock",
    ("magic", "u32", "RUN_MAGIC"),
    ("uart_divisor", "u32", "UART clock cycles per bit the firmware sets (0: keep)"),
    ("flags", "u32", "bit 0: verify the checksum, bit 1: print each layer on the UART"),
    ("reserved", "u32", ""),
)

IMAGE_HEADER = _struct(
    "ImageHeader",
    ("magic", "u32", "IMAGE_MAGIC"),
    ("version", "u32", "IMAGE_VERSION"),
    ("checksum_a", "u32", "Fletcher-64 sum"),
    ("checksum_b", "u32", "Fletcher-64 sum of sums"),
    ("data_bytes", "u32", "bytes of constant data from the image's start (checksummed)"),
    ("layer_count", "u32", "layers"),
    ("layers", "u32", "bus address of the layer table"),
    ("accels", "u32", "accelerators of the build the image was compiled for"),
    ("datapaths", "u32", "their datapaths, a byte each (SYSCTRL.DATAPATHS)"),
    ("input", "u32", "bus address of the input tensor"),
    ("input_bytes", "u32", "its bytes"),
    ("output", "u32", "bus address of the output tensor"),
    ("output_bytes", "u32", "its bytes"),
    ("buffers", "u32", "bus address of the activation buffers"),
    ("buffer_bytes", "u32", "their bytes"),
    ("results", "u32", "bus address of the results (RunRecord, LayerResult per layer)"),
)

LAYER_ENTRY = _struct(
    "LayerEntry",
    ("op", "u32", "LayerOp"),
    ("engine", "u32", "Engine: 0 processor, 1 + k accelerator k"),
    ("reason", "u32", "Reason (processor layers)"),
    ("name", "u32", "bus address of the layer's name (NUL-terminated)"),
    ("desc_addr", "u32", "descriptor list (accelerator layers)"),
    ("desc_count", "u32", "descriptors"),
    ("params", "u32", "parameter block (processor layers)"),
    ("reserved", "u32", ""),
)

RUN_RECORD = _struct(
    "RunRecord",
    ("status", "u32", "RunStatus"),
    ("layer", "u32", "layers completed (the failing layer's index on an error)"),
    ("code", "u32", "accelerator error code (hls_ref.descriptor.ErrorCode)"),
    ("index", "u32", "index of the failing descriptor in the layer's list"),
    ("cycles", "u64", "cycles of the whole inference (the layer loop)"),
    ("check_cycles", "u64", "cycles of the checksum verification"),
    ("done", "u32", "1 once the firmware has written this record"),
    ("reserved", "u32", ""),
)

LAYER_RESULT = _struct(
    "LayerResult",
    ("cycles", "u64", "cycles of the layer (start to interrupt, or the processor's run)"),
    ("bus_read", "u64", "bytes read from external memory during the layer (bus monitor)"),
    ("bus_written", "u64", "bytes written to external memory during the layer (bus monitor)"),
    ("acc_cycles", "u64", "the accelerator's CYCLES counter"),
    ("acc_mac_cycles", "u64", "its MAC_CYCLES counter"),
    ("acc_bytes_read", "u64", "its BYTES_READ counter"),
    ("acc_bytes_written", "u64", "its BYTES_WRITTEN counter"),
    ("status", "u32", "the accelerator's STATUS word at the interrupt"),
    ("tiles", "u32", "its TILES counter"),
)

# Processor-layer parameter blocks (one per op kind).
CONV_PARAMS = _struct(
    "ConvParams", *_tensor("in"), *_tensor("out"),
    ("kernel_h", "u32", ""), ("kernel_w", "u32", ""),
    ("stride_h", "u32", ""), ("stride_w", "u32", ""),
    ("pad_top", "u32", ""), ("pad_left", "u32", ""),
    ("pad_value", "i32", "input zero point (the value of padded positions)"),
    ("weights", "u32", "int8 weights: Conv2D (out, kh, kw, in), depthwise (kh, kw, channel); "
                       "the last dimension fastest"),
    ("qblock", "u32", "quantization block (docs/formats.md section 3, fixed point)"),
    ("reserved", "u32", ""),
)

FC_PARAMS = _struct(
    "FcParams", *_tensor("in"), *_tensor("out"),
    ("in_features", "u32", ""), ("out_features", "u32", ""),
    ("weights", "u32", "int8 weights [out][in], rows padded to in_stride bytes"),
    ("in_stride", "u32", "bytes per weight row (a multiple of 4)"),
    ("qblock", "u32", "quantization block (double-precision or fixed-point scaling)"),
    ("reserved", "u32", ""),
)

ADD_PARAMS = _struct(
    "AddParams", *_tensor("a"), *_tensor("b"), *_tensor("out"),
    ("left_shift", "u32", ""),
    ("a_zero_point", "i32", ""), ("a_multiplier", "i32", ""), ("a_shift", "i32", ""),
    ("b_zero_point", "i32", ""), ("b_multiplier", "i32", ""), ("b_shift", "i32", ""),
    ("out_zero_point", "i32", ""), ("out_multiplier", "i32", ""), ("out_shift", "i32", ""),
    ("act_min", "i32", ""), ("act_max", "i32", ""),
)

POOL_PARAMS = _struct(
    "PoolParams", *_tensor("in"), *_tensor("out"),
    ("filter_h", "u32", ""), ("filter_w", "u32", ""),
    ("stride_h", "u32", ""), ("stride_w", "u32", ""),
    ("pad_top", "u32", ""), ("pad_left", "u32", ""),
    ("act_min", "i32", ""), ("act_max", "i32", ""),
)

SOFTMAX_PARAMS = _struct(
    "SoftmaxParams", *_tensor("in"), *_tensor("out"),
    ("multiplier", "i32", "input rescaling, Q31"), ("left_shift", "i32", ""),
    ("diff_min", "i32", "differences from the row maximum below this output the minimum"),
    ("out_bits", "u32", "output width (scale 2**-out_bits, zero point -2**(out_bits-1))"),
    ("exp_table", "u32", "bus address of 256 int32 exponentials (hls_ref.softmax.exp_table: "
                         "entry k for a difference of -k from the row maximum), or 0: the "
                         "kernel computes them"),
    ("reserved", "u32", ""),
)

COPY_PARAMS = _struct(
    "CopyParams", *_tensor("in"), *_tensor("out"),
)

STRUCTS = (RUN_BLOCK_STRUCT, IMAGE_HEADER, LAYER_ENTRY, RUN_RECORD, LAYER_RESULT,
           CONV_PARAMS, FC_PARAMS, ADD_PARAMS, POOL_PARAMS, SOFTMAX_PARAMS, COPY_PARAMS)


def fletcher64(data):
    """``(a, b)``: the image checksum of ``data`` (bytes, a multiple of 4 long)."""
    import numpy as np

    words = np.frombuffer(bytes(data), "<u4").astype(np.uint64)
    a = int(words.sum()) & 0xFFFF_FFFF
    # b = sum over i of (a after word i) = sum of words[i] * (n - i)
    n = len(words)
    weights = np.arange(n, 0, -1, dtype=np.uint64)
    b = int(((words * weights) & 0xFFFF_FFFF_FFFF_FFFF).sum(dtype=np.uint64)) & 0xFFFF_FFFF
    return a, b


def c_header():
    """The firmware's ``image_format.h``: the constants and structures above as C."""
    lines = ["/* Generated by hls_ref.image.c_header: do not edit. */",
             "#ifndef TESSERA_IMAGE_FORMAT_H", "#define TESSERA_IMAGE_FORMAT_H", "",
             "#include <stdint.h>", ""]
    for name, value in (("IMAGE_MAGIC", IMAGE_MAGIC), ("IMAGE_VERSION", IMAGE_VERSION),
                        ("RUN_MAGIC", RUN_MAGIC), ("RUN_BLOCK", RUN_BLOCK),
                        ("IMAGE_BASE", IMAGE_BASE), ("CHECKSUM_FROM", CHECKSUM_FROM),
                        ("MAX_CHANNELS", MAX_CHANNELS), ("FC_MAX_INPUTS", FC_MAX_INPUTS),
                        ("SOFTMAX_MAX", SOFTMAX_MAX)):
        lines.append(f"#define {name} 0x{value:x}u")
    lines.append("")
    for enum_cls in (LayerOp, Engine, Reason, RunStatus):
        prefix = {"LayerOp": "OP", "Engine": "ENGINE", "Reason": "REASON",
                  "RunStatus": "RUN"}[enum_cls.__name__]
        for member in enum_cls:
            lines.append(f"#define {prefix}_{member.name} {member.value}")
        lines.append("")
    ctype = {"u32": "uint32_t", "i32": "int32_t", "u64": "uint64_t"}
    for s in STRUCTS:
        lines.append("typedef struct {")
        for name, t, doc in s.fields:
            comment = f"  /* {doc} */" if doc else ""
            lines.append(f"    {ctype[t]} {name};{comment}")
        lines.append(f"}} {s.name};")
        lines.append(f"_Static_assert(sizeof({s.name}) == {s.size}, \"{s.name} size\");")
        lines.append("")
    lines += ["#endif", ""]
    return "\n".join(lines)
