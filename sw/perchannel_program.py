"""Per-channel layers as accelerator programs: depthwise convolution, global average pooling and
add as descriptor lists in an external-memory image (``hls_ref.perchannel``).

Like :func:`sw.program.conv2d_program`, each builder cuts a layer into commands -- channel
blocks of the build's ``lanes`` (within the given channel tiles), then row stripes -- writes a
descriptor per command, lays out the operands in the formats of ``docs/formats.md`` and fills
every other byte with a seeded random pattern; the :class:`sw.program.Program` runs on the
socket golden model and on the RTL alike.

* :func:`depthwise_program`: output-row stripes (each loads the input rows its outputs need,
  with the stripe's padding), a weight blob and a quantization block per channel block;
* :func:`avg_pool_program`: a global pool's input-row stripes, whose partial sums carry from
  command to command (``acc_flag``; the last requantizes and stores);
* :func:`add_program`: row stripes of both inputs (input B at ``w_addr``, laid out like A) and
  the layer's three-entry quantization block.
"""

import numpy as np

from hls_ref.config import DEFAULT_CONFIG
from hls_ref.descriptor import DESCRIPTOR_BYTES, Descriptor, Mode, Op, write_descriptors
from hls_ref.formats import TensorLayout, depthwise_weight_blob
from hls_ref.invocation import row_tile, tile_bounds
from hls_ref.precision import Precision

from .program import OUT_WIDTH_CODE, Program, ProgramError, _Image

__all__ = ["add_program", "avg_pool_program", "depthwise_program"]


def _section(config):
    if config.depthwise is None:
        raise ProgramError("the build has no per-channel datapath (config.depthwise is None)")
    return config.depthwise


def _blocks(out_splits, channels, lanes, bits, out_bits):
    """Channel blocks: the tiles of ``out_splits`` cut into blocks of ``lanes``; each must
    start on a byte of the input and of the output."""
    blocks = [(b, min(b + lanes, c1)) for c0, c1 in tile_bounds(out_splits, channels)
              for b in range(c0, c1, lanes)]
    for b0, b1 in blocks:
        if (b0 * bits) % 8 or (b0 * out_bits) % 8:
            raise ProgramError(f"channel block {b0}:{b1} does not start on a byte at "
                               f"{bits}-bit inputs and {out_bits}-bit outputs")
    return blocks


def _byte_pixels(*layouts):
    """The datapath loads pixels that start on a byte (``docs/accelerator.md``)."""
    for layout in layouts:
        if (layout.channel_stride * layout.bits) % 8:
            raise ProgramError(f"the pixels of a {layout.channels}-channel {layout.bits}-bit "
                               f"tensor do not start on a byte (the per-channel datapath "
                               f"loads whole bytes)")


def _finish(image, descriptors, desc_addr, out_addr, out_layout, config, seed):
    """The program; with ``seed`` None only its descriptors (``memory`` None), for the
    compiler's search over tilings."""
    memory = None
    if seed is not None:
        memory = image.build(np.random.default_rng(seed))
        write_descriptors(memory, desc_addr, descriptors)
    return Program(memory, desc_addr, descriptors, out_addr, out_layout, config, image.regions)


def _common(p, out_bits, in_layout, out_layout, b0, b1, channels, relu):
    """Descriptor fields every per-channel command of a channel block shares."""
    seg = (out_layout.channel_stride - b0) if b1 == channels else b1 - b0
    return dict(op=Op.DEPTHWISE, precision=p.value, out_width=OUT_WIDTH_CODE[out_bits],
                relu=int(relu), in_c=b1 - b0, out_c=b1 - b0,
                in_row_stride=in_layout.row_stride, in_pixel_stride=in_layout.channel_stride,
                out_pixel_stride=out_layout.channel_stride,
                out_row_stride=out_layout.row_stride, out_seg=seg)


def depthwise_program(x, weights, qblock, command, config=DEFAULT_CONFIG, *, out_splits=(),
                      row_splits=(), relu=False, seed=0, base=0x1000, guard=192):
    """A depthwise convolution (depth multiplier 1) as a descriptor list.

    ``x`` (H, W, C) raw inputs, ``weights`` (kh, kw, C), ``qblock`` the layer's quantization
    block (C channels), ``command`` its precision, output width, kernel, stride, padding and pad
    value; ``out_splits`` and ``row_splits`` are channel and output-row tile boundaries."""
    lanes = _section(config).lanes
    p = Precision.parse(command.precision)
    bits, ob = p.act_bits, command.out_bits
    x, weights = np.asarray(x, np.int64), np.asarray(weights, np.int64)
    h, w, c = x.shape
    kh, kw, _ = weights.shape
    top, bottom, left, right = command.padding
    sh, sw = command.stride
    ho = (h + top + bottom - kh) // sh + 1
    wo = (w + left + right - kw) // sw + 1
    in_layout, out_layout = TensorLayout(h, w, c, bits), TensorLayout(ho, wo, c, ob)
    _byte_pixels(in_layout)
    blocks = _blocks(out_splits, c, lanes, bits, ob)
    rows = tile_bounds(row_splits, ho)
    image = _Image(base, guard)
    desc_addr = image.reserve("descriptors", len(blocks) * len(rows) * DESCRIPTOR_BYTES)
    in_addr = image.place("input", in_layout.pack(x))
    blobs, qblocks = {}, {}
    for b0, b1 in blocks:
        blobs[b0] = image.place(f"weights[{b0}:{b1}]",
                                depthwise_weight_blob(weights[..., b0:b1], p, lanes))
        qblocks[b0] = image.place(f"qblock[{b0}:{b1}]", qblock.select(b0, b1).pack())
    out_addr = image.reserve("output", out_layout.bytes)
    descriptors = []
    for b0, b1 in blocks:
        for r0, r1 in rows:
            in_r0, in_r1, t_top, t_bottom = row_tile((r0, r1), h, kh, sh, top, bottom)
            descriptors.append(Descriptor(
                **_common(p, ob, in_layout, out_layout, b0, b1, c, relu),
                mode=Mode.DEPTHWISE, kernel_h=kh, kernel_w=kw, stride_h=sh, stride_w=sw,
                pad_top=t_top, pad_bottom=t_bottom, pad_left=left, pad_right=right,
                pad_value=int(command.pad_value), in_h=in_r1 - in_r0, in_w=w,
                in_addr=in_addr + in_layout.element_index(in_r0, 0, b0) * bits // 8,
                w_addr=blobs[b0], q_addr=qblocks[b0],
                out_addr=out_addr + out_layout.element_index(r0, 0, b0) * ob // 8))
    return _finish(image, descriptors, desc_addr, out_addr, out_layout, config, seed)


def avg_pool_program(x, qblock, command, config=DEFAULT_CONFIG, *, out_splits=(),
                     row_splits=(), relu=False, seed=0, base=0x1000, guard=192):
    """A global average pool (the window is the whole input) as a descriptor list:
    ``qblock`` holds the division (``hls_ref.perchannel.pool_scale``) for every channel;
    ``row_splits`` cut the input rows into commands whose partial sums carry over."""
    lanes = _section(config).lanes
    p = Precision.parse(command.precision)
    bits, ob = p.act_bits, command.out_bits
    x = np.asarray(x, np.int64)
    h, w, c = x.shape
    in_layout, out_layout = TensorLayout(h, w, c, bits), TensorLayout(1, 1, c, ob)
    _byte_pixels(in_layout)
    blocks = _blocks(out_splits, c, lanes, bits, ob)
    rows = tile_bounds(row_splits, h)
    image = _Image(base, guard)
    desc_addr = image.reserve("descriptors", len(blocks) * len(rows) * DESCRIPTOR_BYTES)
    in_addr = image.place("input", in_layout.pack(x))
    qblocks = {b0: image.place(f"qblock[{b0}:{b1}]", qblock.select(b0, b1).pack())
               for b0, b1 in blocks}
    out_addr = image.reserve("output", out_layout.bytes)
    descriptors = []
    for b0, b1 in blocks:
        for k, (r0, r1) in enumerate(rows):
            descriptors.append(Descriptor(
                **_common(p, ob, in_layout, out_layout, b0, b1, c, relu),
                mode=Mode.AVGPOOL, acc_flag=int(k > 0), q_flag=int(k == len(rows) - 1),
                in_h=r1 - r0, in_w=w,
                in_addr=in_addr + in_layout.element_index(r0, 0, b0) * bits // 8,
                q_addr=qblocks[b0],
                out_addr=out_addr + out_layout.element_index(0, 0, b0) * ob // 8))
    return _finish(image, descriptors, desc_addr, out_addr, out_layout, config, seed)


def add_program(a, b, qblock, command, config=DEFAULT_CONFIG, *, out_splits=(), row_splits=(),
                relu=False, seed=0, base=0x1000, guard=192):
    """An element-wise add of ``a`` and ``b`` (H, W, C) as a descriptor list; ``qblock`` is the
    layer's three-entry block (``hls_ref.perchannel.add_qblock``)."""
    lanes = _section(config).lanes
    p = Precision.parse(command.precision)
    bits, ob = p.act_bits, command.out_bits
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    if a.shape != b.shape:
        raise ProgramError(f"the inputs of an add must have one shape, not {a.shape} and "
                           f"{b.shape}")
    h, w, c = a.shape
    in_layout, out_layout = TensorLayout(h, w, c, bits), TensorLayout(h, w, c, ob)
    _byte_pixels(in_layout)
    blocks = _blocks(out_splits, c, lanes, bits, ob)
    rows = tile_bounds(row_splits, h)
    image = _Image(base, guard)
    desc_addr = image.reserve("descriptors", len(blocks) * len(rows) * DESCRIPTOR_BYTES)
    a_addr = image.place("input", in_layout.pack(a))
    b_addr = image.place("input B", in_layout.pack(b))
    q_addr = image.place("qblock", qblock.pack())
    out_addr = image.reserve("output", out_layout.bytes)
    descriptors = []
    for b0, b1 in blocks:
        for r0, r1 in rows:
            offset = in_layout.element_index(r0, 0, b0) * bits // 8
            descriptors.append(Descriptor(
                **_common(p, ob, in_layout, out_layout, b0, b1, c, relu),
                mode=Mode.ADD, in_h=r1 - r0, in_w=w, in_addr=a_addr + offset,
                w_addr=b_addr + offset, q_addr=q_addr,
                out_addr=out_addr + out_layout.element_index(r0, 0, b0) * ob // 8))
    return _finish(image, descriptors, desc_addr, out_addr, out_layout, config, seed)
