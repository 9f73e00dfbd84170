"""A layer as an accelerator program: descriptors and operands in an external-memory image.

:func:`fc_program` does the same for a FullyConnected layer on the FC datapath (vector tiles
of a batch, output tiles, input tiles innermost).

:func:`conv2d_program` cuts a 2D convolution into commands (output-channel tiles in PE
blocks, output-row stripes, input-channel tiles innermost, as
:func:`hls_ref.invocation.conv2d_tiled` does), writes one descriptor per command
(``hls_ref.descriptor``), lays out the input tensor, the weight blob of every (PE block,
input-channel tile), the quantization block of every PE block and the output tensor in the
formats of ``docs/formats.md``, and fills every other byte with a seeded random pattern, so
that a test can compare the whole image after a run: a stray write anywhere shows.

The same :class:`Program` runs on the socket golden model (:meth:`Program.run_golden`) and on
the RTL (the cocotb testbench loads :attr:`Program.memory` into its AXI memory).
"""

from dataclasses import dataclass, field, replace

import numpy as np

from hls_ref.config import DEFAULT_CONFIG
from hls_ref.descriptor import (
    DESCRIPTOR_BYTES,
    OUT_WIDTH_CODES,
    Descriptor,
    Op,
    input_mode,
    write_descriptors,
)
from hls_ref.formats import TensorLayout, conv_weight_blob, fc_stream_blob
from hls_ref.invocation import row_tile, tile_bounds
from hls_ref.precision import Precision
from hls_ref.socket import SocketModel

__all__ = ["PairView", "Program", "ProgramError", "compiler_program", "conv2d_program",
           "fc_program", "pair_view", "pointwise_view"]

OUT_WIDTH_CODE = {bits: code for code, bits in OUT_WIDTH_CODES.items()}
_ALIGN = 64


class ProgramError(ValueError):
    """A tiling the accelerator cannot address (the message says which tile and why)."""


@dataclass
class Program:
    """An external-memory image holding a descriptor list and its operands."""

    memory: np.ndarray                  # uint8, the whole image
    desc_addr: int
    descriptors: list
    out_addr: int
    out_layout: TensorLayout
    config: object
    regions: dict = field(default_factory=dict)    # name -> (byte address, bytes)
    macs: int | None = None             # the layer's multiply-accumulates (conv2d_program)

    @property
    def count(self):
        return len(self.descriptors)

    def with_descriptors(self, descriptors):
        """A copy of this program whose image holds ``descriptors`` at ``desc_addr``
        instead of its own (the operands unchanged)."""
        memory = self.memory.copy()
        write_descriptors(memory, self.desc_addr, descriptors)
        return replace(self, memory=memory, descriptors=list(descriptors))

    def output(self, memory=None):
        """The output tensor (HWC values) held by ``memory`` (default: this image)."""
        memory = self.memory if memory is None else memory
        nbytes = self.out_layout.bytes
        beats = memory[self.out_addr:self.out_addr + nbytes].view("<u8")
        return self.out_layout.unpack(beats)

    def run_golden(self, *, faults=()):
        """Run the list on :class:`hls_ref.socket.SocketModel`; returns ``(memory, status)``
        with a copy of the image as the run leaves it."""
        memory = self.memory.copy()
        status = SocketModel(self.config).run(memory, self.desc_addr, self.count,
                                              faults=faults)
        return memory, status


class _Image:
    """Bump allocation in a byte image, every region 64-byte aligned and followed by at
    least ``guard`` bytes nobody owns."""

    def __init__(self, base, guard):
        self.top = base
        self.guard = guard
        self.chunks = []
        self.regions = {}

    def place(self, name, data):
        data = data.view(np.uint8).ravel()
        addr = -(-self.top // _ALIGN) * _ALIGN
        self.chunks.append((addr, data))
        self.regions[name] = (addr, len(data))
        self.top = addr + len(data) + self.guard
        return addr

    def reserve(self, name, size):
        addr = -(-self.top // _ALIGN) * _ALIGN
        self.regions[name] = (addr, size)
        self.top = addr + size + self.guard
        return addr

    def build(self, rng):
        size = -(-self.top // 4096) * 4096
        memory = rng.integers(0, 256, size, dtype=np.uint8)
        for addr, data in self.chunks:
            memory[addr:addr + len(data)] = data
        return memory

    def program(self, seed, desc_addr, descriptors, out_addr, out_layout, config, macs=None):
        """The :class:`Program` of this image: the fill pattern of ``seed``, the regions
        placed, the descriptors written at ``desc_addr``."""
        memory = self.build(np.random.default_rng(seed))
        write_descriptors(memory, desc_addr, descriptors)
        return Program(memory, desc_addr, descriptors, out_addr, out_layout, config,
                       self.regions, macs)


def conv2d_program(x, weights, qblock, command, config=DEFAULT_CONFIG, *, out_splits=(),
                   row_splits=(), in_splits=(), relu=False, seed=0, base=0x1000, guard=192,
                   pair_taps=True):
    """A 2D convolution as a descriptor list (see the module docstring).

    Parameters
    ----------
    x : array (H, W, C)
        Raw input values (``command.precision``'s activation width).
    weights : array (O, kh, kw, C)
        Raw weights.
    qblock : hls_ref.formats.QuantBlock
        The layer's quantization parameters (``O`` channels, fixed-point scaling).
    command : hls_ref.invocation.Command
        Precision, output width, kernel, stride, the layer's padding and pad value.
    out_splits, row_splits, in_splits : sequences of int
        Tile boundaries along output channels (each tile is further cut into blocks of
        ``config.pes``), output rows and input channels (multiples of the precision's lanes).
    relu : bool
        Set the descriptors' ``relu`` flag.
    seed : int
        Seed of the fill pattern.
    base, guard : int
        First byte address used and the unowned bytes after every region.
    pair_taps : bool
        Address a layer with narrow input pixels through its :func:`pair_view` when it has
        one (False: always pixel by pixel).
    """
    p = Precision.parse(command.precision)
    bits, ob, pes = p.act_bits, command.out_bits, config.pes
    x, weights = np.asarray(x, np.int64), np.asarray(weights, np.int64)
    h, w, c = x.shape
    o, kh, kw, _ = weights.shape
    top, bottom, left, right = command.padding
    sh, sw = command.stride
    ho = (h + top + bottom - kh) // sh + 1
    wo = (w + left + right - kw) // sw + 1
    macs = ho * wo * kh * kw * c * o
    in_layout = TensorLayout(h, w, c, bits)
    out_layout = TensorLayout(ho, wo, o, ob)
    if any(s % p.lanes for s in in_splits):
        raise ProgramError(f"input-channel tiles must start at multiples of {p.lanes} "
                           f"channels at {p.label}")
    # Narrow pixels (one ST word holds several) addressed several at a time: the kernel's
    # taps are paired in the ST operands (see pair_view); the commands see that view.
    pairs = pair_view(command, in_layout) if pair_taps else None
    if pairs:
        if in_splits:
            raise ProgramError("a tap-paired layer has a single input-channel tile")
        weights = pairs.weights(weights, in_layout.channel_stride)
        kw, c, left, right = pairs.kernel_w, pairs.pixels * in_layout.channel_stride, \
            pairs.pad_left, pairs.pad_right

    image = _Image(base, guard)
    in_tiles = tile_bounds(in_splits, c)
    out_blocks = [(b, min(b + pes, o1)) for o0, o1 in tile_bounds(out_splits, o)
                  for b in range(o0, o1, pes)]
    count = len(out_blocks) * len(tile_bounds(row_splits, ho)) * len(in_tiles)
    desc_addr = image.reserve("descriptors", count * DESCRIPTOR_BYTES)
    in_addr = image.place("input", in_layout.pack(x))
    blobs, qblocks = {}, {}
    for b0, b1 in out_blocks:
        qblocks[b0] = image.place(f"qblock[{b0}:{b1}]", qblock.select(b0, b1).pack())
        for i0, i1 in in_tiles:
            blob = conv_weight_blob(weights[b0:b1, :, :, i0:i1], p, pes)
            blobs[b0, i0] = image.place(f"weights[{b0}:{b1},{i0}:{i1}]", blob)
    out_addr = image.reserve("output", out_layout.bytes)

    # A strided 1x1 convolution without padding reads only every stride-th pixel of every
    # stride-th row: its commands address that subsampled view of the input (row and pixel
    # strides scaled by the layer's) as a stride-1 convolution, so that the DMA loads only
    # the pixels the PEs use.
    view = pointwise_view(command, in_layout)
    if view:
        in_row_stride, in_pixel_stride = sh * in_layout.row_stride, sw * in_layout.channel_stride
        d_sh, d_sw, d_w = 1, 1, wo
    elif pairs:
        in_row_stride, in_pixel_stride = in_layout.row_stride, c
        d_sh, d_sw, d_w = sh, pairs.stride_w, pairs.in_w
    else:
        in_row_stride, in_pixel_stride = in_layout.row_stride, in_layout.channel_stride
        d_sh, d_sw, d_w = sh, sw, w
    descriptors = []
    for b0, b1 in out_blocks:
        if (b0 * ob) % 8:
            raise ProgramError(f"output channel block {b0}:{b1} does not start on a byte "
                               f"at {ob}-bit outputs")
        # the block holding the last channel also writes the layout's channel filler
        seg = (out_layout.channel_stride - b0) if b1 == o else b1 - b0
        for r0, r1 in tile_bounds(row_splits, ho):
            if view:
                in_r0, in_r1, t_top, t_bottom = r0 * sh, r0 * sh + (r1 - r0), 0, 0
                rows = r1 - r0
            else:
                in_r0, in_r1, t_top, t_bottom = row_tile((r0, r1), h, kh, sh, top, bottom)
                rows = in_r1 - in_r0
            for k, (i0, i1) in enumerate(in_tiles):
                descriptors.append(Descriptor(
                    op=Op.CONV2D, precision=p.value, out_width=OUT_WIDTH_CODE[ob],
                    acc_flag=int(k > 0), q_flag=int(k == len(in_tiles) - 1), relu=int(relu),
                    kernel_h=kh, kernel_w=kw, stride_h=d_sh, stride_w=d_sw,
                    pad_top=t_top, pad_bottom=t_bottom, pad_left=left, pad_right=right,
                    pad_value=int(command.pad_value),
                    in_h=rows, in_w=d_w, in_c=i1 - i0, out_c=b1 - b0,
                    in_addr=in_addr + in_layout.element_index(in_r0, 0, i0) * bits // 8,
                    in_row_stride=in_row_stride,
                    in_pixel_stride=in_pixel_stride,
                    out_pixel_stride=out_layout.channel_stride,
                    w_addr=blobs[b0, i0], q_addr=qblocks[b0],
                    out_addr=out_addr + out_layout.element_index(r0, 0, b0) * ob // 8,
                    out_row_stride=out_layout.row_stride, out_seg=seg))
    return image.program(seed, desc_addr, descriptors, out_addr, out_layout, config, macs)


@dataclass(frozen=True)
class PairView:
    """How :func:`conv2d_program` addresses a layer whose input pixels are narrower than an
    ST word (``pixels`` of them fill one): as a convolution over the view whose pixel is
    ``pixels`` consecutive input pixels (``pixels * channel_stride`` channels, one ST word),
    so that an ST operand holds ``pixels`` horizontal kernel taps instead of one pixel and
    zeros.

    Input column ``X`` is slot ``X % pixels`` of view pixel ``X // pixels``. The window of
    output column ``ox`` starts at input column ``ox * stride - pad_left`` = view pixel
    ``ox * stride_w - pad_left`` (view units) plus ``lead`` slots; the view kernel is
    ``kernel_w`` view pixels wide, its slots outside the layer's kernel weigh zero. View
    pixels outside the view's ``in_w`` are padded as a whole, which is right because they
    hold only input columns outside the input (its width is a multiple of ``pixels``)."""

    pixels: int          # input pixels per view pixel (one ST word)
    lead: int            # slots of the first view tap before the kernel's first column
    kernel_w: int        # view taps
    stride_w: int        # view pixels between output columns
    pad_left: int        # view pixels
    pad_right: int       # view pixels
    in_w: int            # view pixels per row

    def weights(self, weights, channel_stride):
        """The view's weights ``(O, kh, kernel_w, pixels * channel_stride)`` from the
        layer's ``(O, kh, kw, C)``."""
        o, kh, kw, c = weights.shape
        view = np.zeros((o, kh, self.kernel_w, self.pixels, channel_stride), np.int64)
        for kx in range(kw):
            j, t = divmod(kx + self.lead, self.pixels)
            view[:, :, j, t, :c] = weights[:, :, kx, :]
        return view.reshape(o, kh, self.kernel_w, self.pixels * channel_stride)


def pair_view(command, in_layout):
    """The :class:`PairView` of a conv command over ``in_layout`` when it takes fewer
    operand cycles per output pixel than the plain command, else None: the input pixels are
    narrow (``hls_ref.descriptor.input_mode``), the horizontal stride and the input width are
    multiples of the pixels one ST word holds, and the view's kernel is narrower than the
    layer's (e.g. DS-CNN's 10x4 stride-2 first layer: 3 view taps instead of 4)."""
    p = Precision.parse(command.precision)
    if input_mode(p, in_layout.channel_stride) != "narrow":
        return None
    pixels = 16 // (in_layout.channel_stride * p.act_bits)
    _, kw = command.kernel
    _, sw = command.stride
    _, _, left, right = command.padding
    w = in_layout.width
    if sw % pixels or w % pixels:
        return None
    pad_left = -(-left // pixels)
    lead = pad_left * pixels - left
    kernel_w = -(-(lead + kw) // pixels)
    stride_w, in_w = sw // pixels, w // pixels
    wo = (w + left + right - kw) // sw + 1
    pad_right = max(0, (wo - 1) * stride_w + kernel_w - in_w - pad_left)
    if (kernel_w >= kw or pad_left >= kernel_w or pad_right >= kernel_w
            or (in_w + pad_left + pad_right - kernel_w) // stride_w + 1 != wo):
        return None
    return PairView(pixels, lead, kernel_w, stride_w, pad_left, pad_right, in_w)


def pointwise_view(command, in_layout):
    """Whether a conv command is a strided 1x1 convolution without padding whose input pixels
    span whole 16-bit words: then :func:`conv2d_program` addresses the input's subsampled
    view as a stride-1 convolution (scaled row and pixel strides) and loads only the pixels
    used; :func:`compiler_program` tiles it as that convolution."""
    p = Precision.parse(command.precision)
    return (tuple(command.kernel) == (1, 1) and tuple(command.stride) != (1, 1)
            and not any(command.padding)
            and input_mode(p, in_layout.channel_stride) == "words")


def compiler_program(x, weights, qblock, command, config=DEFAULT_CONFIG, *, name="layer",
                     relu=False, seed=0, min_row_tiles=None):
    """:func:`conv2d_program` with the tile sizes the tiling compiler chooses for this layer
    on ``config`` (``sw.tiling.optimal_tiling``: the lowest DMA cost). Returns
    ``(program, tiling)`` (the tiling with the row stripes used); raises
    ``sw.tiling.capacity.TilingError`` naming the layer and the limit when no tile fits.

    The compiler minimises traffic; the row stripes are then chosen for the accelerator's
    pipeline (``sw.conv2d_cycles.best_rows``: a layer of a few commands leaves the load of
    the first and the store of the last tile outside the pipeline, one of many small commands
    pays their loads). ``min_row_tiles`` instead caps the compiler's stripes so that the layer
    has at least that many."""
    from sw.conv2d_cycles import best_rows
    from sw.graph import Padding
    from sw.tiling.capacity import Capacity
    from sw.tiling.cost import DEFAULT_COST
    from sw.tiling.search import optimal_tiling
    from sw.workloads.shapes import Layer

    h, w, c = np.shape(x)
    o, kh, kw, _ = np.shape(weights)
    top, bottom, left, right = command.padding
    sh, sw = command.stride
    ho = (h + top + bottom - kh) // sh + 1
    wo = (w + left + right - kw) // sw + 1
    layer = Layer(name, "conv", ("input",), (h, w, c), (ho, wo, o), (kh, kw), (sh, sw),
                  Padding(top, bottom, left, right))
    in_layout = TensorLayout(h, w, c, Precision.parse(command.precision).act_bits)
    pairs = pair_view(command, in_layout)
    if pointwise_view(command, in_layout):
        # its commands load the subsampled view (see conv2d_program): tile that
        layer = Layer(name, "conv", ("input",), (ho, wo, c), (ho, wo, o), (1, 1), (1, 1),
                      Padding(0, 0, 0, 0))
    elif pairs:
        # its commands see the tap-paired view (see conv2d_program): tile that
        layer = Layer(name, "conv", ("input",), (h, pairs.in_w,
                                                 pairs.pixels * in_layout.channel_stride),
                      (ho, wo, o), (kh, pairs.kernel_w), (sh, pairs.stride_w),
                      Padding(top, bottom, pairs.pad_left, pairs.pad_right))
    capacity = Capacity(config, command.precision, command.out_bits)
    tiling = optimal_tiling(layer, capacity, DEFAULT_COST)
    if min_row_tiles is None:
        rows = best_rows(layer, capacity, tiling)
    else:
        rows = min(tiling.rows, -(-ho // min_row_tiles))
    tiling = replace(tiling, rows=rows)
    program = conv2d_program(
        x, weights, qblock, command, config, relu=relu, seed=seed,
        out_splits=range(tiling.out_channels, o, tiling.out_channels),
        row_splits=range(rows, ho, rows),
        in_splits=() if pairs else range(tiling.in_channels, c, tiling.in_channels))
    return program, tiling


def fc_program(x, weights, qblock, command, config, *, out_splits=(), in_splits=(),
               batch_splits=(), relu=False, seed=0, base=0x1000, guard=192):
    """A FullyConnected layer on the FC datapath (``config.fc``) as a descriptor list.

    Parameters
    ----------
    x : array (vectors, inputs)
        Raw input vectors (a batch; ``command.precision``'s activation width).
    weights : array (outputs, inputs)
        Raw weights.
    qblock : hls_ref.formats.QuantBlock
        The layer's quantization parameters: one double-precision scale for every output
        (written in the shared layout).
    command : hls_ref.invocation.Command
        Precision and output width.
    out_splits, in_splits, batch_splits : sequences of int
        Tile boundaries along outputs (tiles of at most 256; at 4-bit outputs even), inputs
        (multiples of a beat's elements) and vectors (tiles of at most ``max_batch``); input
        tiles are innermost and accumulate.
    relu, seed, base, guard
        As :func:`conv2d_program`.

    The input and output tensors are ``TensorLayout(vectors, 1, features)``: each vector
    starts on a beat.
    """
    fc = config.fc
    if fc is None:
        raise ProgramError("the build has no FC datapath")
    p = Precision.parse(command.precision)
    bits, ob = p.act_bits, command.out_bits
    x, weights = np.atleast_2d(np.asarray(x, np.int64)), np.asarray(weights, np.int64)
    vectors, inputs = x.shape
    outputs = weights.shape[0]
    in_layout = TensorLayout(vectors, 1, inputs, bits)
    out_layout = TensorLayout(vectors, 1, outputs, ob)
    per_beat = 64 // bits
    if any(s % per_beat for s in in_splits):
        raise ProgramError(f"input tiles must start at multiples of {per_beat} inputs (a "
                           f"beat) at {p.label}")
    if any(s % 2 for s in out_splits) and ob == 4:
        raise ProgramError("output tiles must start on a byte (even outputs) at 4-bit outputs")
    image = _Image(base, guard)
    in_tiles = tile_bounds(in_splits, inputs)
    out_tiles = tile_bounds(out_splits, outputs)
    vec_tiles = tile_bounds(batch_splits, vectors)
    count = len(in_tiles) * len(out_tiles) * len(vec_tiles)
    desc_addr = image.reserve("descriptors", count * DESCRIPTOR_BYTES)
    in_addr = image.place("input", in_layout.pack(x[:, None, :]))
    blobs, qblocks = {}, {}
    for o0, o1 in out_tiles:
        qblocks[o0] = image.place(f"qblock[{o0}:{o1}]",
                                  qblock.select(o0, o1).pack(shared=True))
        for i0, i1 in in_tiles:
            blob = fc_stream_blob(weights[o0:o1, i0:i1], p, fc.pes, fc.st_units)
            blobs[o0, i0] = image.place(f"weights[{o0}:{o1},{i0}:{i1}]", blob)
    out_addr = image.reserve("output", out_layout.bytes)
    descriptors = []
    for v0, v1 in vec_tiles:
        for o0, o1 in out_tiles:
            # the tile holding the last output also writes the layout's filler
            seg = (out_layout.channel_stride - o0) if o1 == outputs else o1 - o0
            for k, (i0, i1) in enumerate(in_tiles):
                descriptors.append(Descriptor(
                    op=Op.FC, precision=p.value, out_width=OUT_WIDTH_CODE[ob],
                    acc_flag=int(k > 0), q_flag=int(k == len(in_tiles) - 1), relu=int(relu),
                    in_h=v1 - v0, in_c=i1 - i0, out_c=o1 - o0,
                    in_addr=in_addr + in_layout.element_index(v0, 0, i0) * bits // 8,
                    in_row_stride=in_layout.row_stride,
                    w_addr=blobs[o0, i0], q_addr=qblocks[o0],
                    out_addr=out_addr + out_layout.element_index(v0, 0, o0) * ob // 8,
                    out_row_stride=out_layout.row_stride, out_seg=seg))
    return image.program(seed, desc_addr, descriptors, out_addr, out_layout, config)
