"""Random descriptor lists for the socket fuzzer: every layout the checks accept, not only the
ones the compiler emits, with invalid fields, error responses and partial-sum chains.

:func:`random_list` draws one list on a small external-memory image laid out as

* a descriptor region (the list itself, 64-byte aligned);
* a read region (input tiles, weight blobs, quantization blocks: random bytes, with a valid
  quantization block planted for every command that loads one);
* a write region (output tiles), which no command reads, so that the pipelined hardware, which
  loads command ``i+1`` before it stores command ``i``, and the golden model, which runs one
  command after the other, must agree byte for byte (``docs/accelerator.md``: a list must not
  read what it writes).

Each command's geometry is drawn within the build's limits, its strides with random slack (rows
and pixels may overlap on the read side), its addresses at random aligned positions; with small
probabilities a field is replaced by any value of its width (the checks must name it), a tile
reaches past the image (the memory answers with an error), an address wraps around 2**32, or a
byte of a command's operands, output or descriptor answers with an error.

Commands are drawn for every datapath of the build the fuzzer has a generator for
(:data:`GENERATORS`: conv2d, the per-channel datapath's depthwise, average-pool and add
modes, and FC: batches, partial sums, shared-scale blocks, scales that saturate), switching
datapath within a list.

The golden model (:class:`hls_ref.socket.SocketModel`) must run every list without raising; the
cocotb testbenches compare the RTL with it (``tests/cocotb/tb_conv2d.py``, ``tb_fc.py``).
"""

from dataclasses import dataclass, field, replace

import numpy as np

from hls_ref.descriptor import (
    DESCRIPTOR_BYTES,
    FIELDS,
    MAX_SEGMENT_BYTES,
    OUT_WIDTH_CODES,
    Descriptor,
    Mode,
    Op,
    write_descriptors,
)
from hls_ref.formats import FCRows, QuantBlock
from hls_ref.perchannel import ADD_ENTRIES
from hls_ref.perchannel import load_requests as perchannel_loads
from hls_ref.perchannel import store_request as perchannel_store
from hls_ref.precision import Precision
from hls_ref.socket import (
    SocketModel,
    fc_load_requests,
    fc_store_request,
    load_requests,
    store_request,
)

__all__ = ["GENERATORS", "FuzzList", "Generator", "random_list"]

_DESC_BASE = 0x1000
_WORD = 16


@dataclass
class FuzzList:
    """A random descriptor list in a memory image, with the byte ranges that fault."""

    memory: np.ndarray                  # uint8
    desc_addr: int
    descriptors: list
    config: object
    faults: list = field(default_factory=list)
    notes: list = field(default_factory=list)     # what was drawn, for failure messages

    @property
    def count(self):
        return len(self.descriptors)

    def run_golden(self, *, faults=None, write_errors=True):
        """``(memory, status)`` after the list on the socket golden model."""
        memory = self.memory.copy()
        faults = self.faults if faults is None else faults
        status = SocketModel(self.config).run(memory, self.desc_addr, self.count,
                                              faults=faults, write_errors=write_errors)
        return memory, status

    def run_unfaulted(self):
        """The status of the same list when no store fails: after a write error the hardware
        may have fetched, loaded and computed later commands, at most these."""
        return self.run_golden(write_errors=False)[1]

    def describe(self):
        return "; ".join(self.notes)


class _Regions:
    """The image's read and write regions and a random aligned place in each."""

    def __init__(self, rng, count, read_bytes, write_bytes):
        self.rng = rng
        self.desc = _DESC_BASE
        self.read = (-(-(self.desc + count * DESCRIPTOR_BYTES) // 4096) * 4096, read_bytes)
        self.write = (self.read[0] + read_bytes, write_bytes)
        self.size = self.write[0] + write_bytes

    def place(self, region, extent, align):
        """A random ``align``-aligned address where ``extent`` bytes fit in ``region``, or
        None if they do not fit."""
        start, size = region
        room = size - extent
        if room < 0:
            return None
        return start + int(self.rng.integers(0, room // align + 1)) * align


def _pick(rng, values, weights=None):
    values = list(values)
    if weights is None:
        return values[int(rng.integers(len(values)))]
    p = np.asarray(weights, float)
    return values[int(rng.choice(len(values), p=p / p.sum()))]


def _qblock(rng, out_c, out_bits):
    """A quantization block with random fields: clamps narrower and wider than the output
    width, either order; zero points anywhere in int16; shifts over the int8 range."""
    top = (1 << (out_bits - 1)) - 1
    kind = int(rng.integers(4))
    if kind == 0:                            # the layer's usual clamp
        low, high = -top - 1, top
    elif kind == 1:                          # wider than the output
        low, high = -32768, 32767
    else:                                    # anything, possibly empty
        low, high = (int(v) for v in rng.integers(-300, 300, 2))
    zero_point = int(rng.integers(-top - 1, top + 1)) if rng.random() < 0.8 else \
        int(rng.integers(-32768, 32768))
    shifts = np.where(rng.random(out_c) < 0.9, rng.integers(-20, 4, out_c),
                      rng.integers(-128, 128, out_c))
    return QuantBlock(zero_point, low, high, rng.integers(-(1 << 31), 1 << 31, out_c),
                      rng.integers(0, 1 << 31, out_c), shifts)


def _output(rng, regions, out_c, out_h, out_w, ob):
    """The output fields of a command storing ``out_c`` channels of an ``out_h x out_w``
    tile of ``ob``-bit elements in the write region (row segments of contiguous pixels, or
    pixel segments), or None when they do not fit."""
    byte_unit = 8 // ob if ob < 8 else 1                      # elements per byte
    if rng.random() < 0.5:
        # contiguous pixels: each row one segment, zero-filled to a byte before the next row
        seg = out_pixel = out_c + int(rng.integers(0, 3))
        row_bytes = -(-out_w * seg * ob // 8)
        out_row = row_bytes * 8 // ob + byte_unit * int(rng.integers(0, 4))
    else:
        # one segment per pixel, each starting and ending on a byte; rows may overlap
        seg = -(-out_c // byte_unit) * byte_unit + byte_unit * int(rng.integers(0, 2))
        out_pixel = seg + byte_unit * int(rng.integers(1, 3))
        out_row = byte_unit * int(rng.integers(0, -(-out_w * out_pixel // byte_unit) + 3))
    if -(-seg * ob // 8) > MAX_SEGMENT_BYTES:
        return None
    out_extent = ((out_h - 1) * out_row + (out_w - 1) * out_pixel + seg) * ob // 8 + 8
    return dict(out_addr=regions.place(regions.write, out_extent, 2 if ob == 16 else 1),
                out_row_stride=out_row, out_pixel_stride=out_pixel, out_seg=seg)


def _conv_geometry(rng, config, prev):
    """The arithmetic of one conv2d command: kernel, stride, padding, tile sizes, precision
    and output width (a continuation of ``prev``'s partial sums when given)."""
    precision = _pick(rng, config.precisions)
    out_code = _pick(rng, OUT_WIDTH_CODES)
    if prev is not None:
        g = dict(kernel_h=prev.kernel_h, kernel_w=prev.kernel_w, stride_h=prev.stride_h,
                 stride_w=prev.stride_w, pad_top=prev.pad_top, pad_bottom=prev.pad_bottom,
                 pad_left=prev.pad_left, pad_right=prev.pad_right, in_h=prev.in_h,
                 in_w=prev.in_w)
    else:
        kh = int(rng.integers(1, min(config.max_kernel[0], 5) + 1))
        kw = int(rng.integers(1, min(config.max_kernel[1], 5) + 1))
        g = dict(kernel_h=kh, kernel_w=kw,
                 stride_h=int(rng.integers(1, config.max_stride + 1)),
                 stride_w=int(rng.integers(1, config.max_stride + 1)),
                 pad_top=int(rng.integers(kh)), pad_bottom=int(rng.integers(kh)),
                 pad_left=int(rng.integers(kw)), pad_right=int(rng.integers(kw)))
        g["in_h"] = int(rng.integers(max(1, kh - g["pad_top"] - g["pad_bottom"]), 9))
        g["in_w"] = int(rng.integers(max(1, kw - g["pad_left"] - g["pad_right"]),
                                     min(config.max_width, 12) + 1))
    return Precision(precision), out_code, g


def _conv_descriptor(rng, config, regions, prev):
    """One conv2d command (without its faults or invalid fields), or None when the drawn
    tile does not fit the build or the image; its quantization block to plant, if any."""
    p, out_code, g = _conv_geometry(rng, config, prev)
    bits, lanes, ob = p.act_bits, p.lanes, OUT_WIDTH_CODES[out_code]
    out_h = (g["in_h"] + g["pad_top"] + g["pad_bottom"] - g["kernel_h"]) // g["stride_h"] + 1
    out_w = (g["in_w"] + g["pad_left"] + g["pad_right"] - g["kernel_w"]) // g["stride_w"] + 1
    # input: whole ST words per pixel, or a narrow 4/8-bit pixel of one or two channels
    if bits < 16 and rng.random() < 0.25:
        pixel = int(rng.integers(1, 8 // bits + 1))
        in_c = int(rng.integers(1, pixel + 1))
        narrow = True
    else:
        in_c = int(rng.integers(1, 24))
        pixel = -(-in_c // lanes) * lanes + lanes * int(rng.integers(0, 3))
        narrow = False
    groups = -(-in_c // lanes)
    if g["in_h"] * g["in_w"] * groups > config.plm_in_words:
        return None
    if g["kernel_h"] * g["kernel_w"] * groups * config.pes > config.plm_w_words:
        return None
    if out_h * out_w * config.pes > config.plm_acc_words:
        return None
    row_unit = 64 // bits if narrow else 16 // bits          # elements per aligned step
    row_min = -(-g["in_w"] * pixel // row_unit) * row_unit
    row = _pick(rng, [row_min, row_min + row_unit * int(rng.integers(1, 4)),
                      row_unit * int(rng.integers(0, max(1, row_min // row_unit) + 1))])
    extent = ((g["in_h"] - 1) * row + (g["in_w"] - 1) * pixel + max(groups * lanes, pixel)) \
        * bits // 8 + 8
    in_addr = regions.place(regions.read, extent, 8 if narrow else 2)
    w_bytes = 2 * g["kernel_h"] * g["kernel_w"] * groups * config.pes
    w_addr = regions.place(regions.read, w_bytes, 8)
    out_c = int(rng.integers(1, config.pes + 1))
    out = _output(rng, regions, out_c, out_h, out_w, ob)
    if out is None:
        return None
    acc_flag = int(prev is not None)
    q_flag = int(rng.random() < 0.7)
    q_bytes = 8 * (1 + 2 * out_c)
    q_addr = regions.place(regions.read, q_bytes, 8)
    if None in (in_addr, w_addr, out["out_addr"], q_addr):
        return None
    desc = Descriptor(
        op=Op.CONV2D, precision=p.value, out_width=out_code, acc_flag=acc_flag,
        q_flag=q_flag, relu=int(rng.integers(2)), **g,
        pad_value=int(rng.integers(-(1 << 15), 1 << 15)),
        in_c=in_c, out_c=out_c, in_addr=in_addr, in_row_stride=row,
        in_pixel_stride=pixel, w_addr=w_addr, q_addr=q_addr, **out)
    loads_q = not acc_flag or q_flag
    return desc, (_qblock(rng, out_c, ob) if loads_q else None)


def _fc_qblock(rng, out_c, out_bits):
    """An FC block (shared layout): the conv fields' draws, one scale over a wide range
    (now and then a huge one, which saturates)."""
    q = _qblock(rng, out_c, out_bits)
    scale = float(rng.uniform(1, 2)) * 2.0 ** int(rng.integers(-40, 1)) \
        if rng.random() < 0.95 else 2.0 ** int(rng.integers(1, 900))
    return QuantBlock(q.zero_point, q.act_min, q.act_max, q.bias, np.zeros(out_c, np.int64),
                      np.zeros(out_c, np.int64), np.full(out_c, scale))


def _fc_descriptor(rng, config, regions, prev):
    """One FC command (a continuation of ``prev``'s partial sums when given), or None when
    it does not fit the image; its quantization block to plant, if any."""
    fc = config.fc
    p = Precision(_pick(rng, fc.precisions))
    out_code = _pick(rng, OUT_WIDTH_CODES)
    bits, ob = p.act_bits, OUT_WIDTH_CODES[out_code]
    per_beat = 64 // bits
    if prev is not None:
        in_h, out_c = prev.in_h, prev.out_c
    else:
        in_h = int(rng.integers(1, fc.max_batch + 1))
        out_c = int(rng.integers(1, 41)) if rng.random() < 0.9 else int(rng.integers(1, 257))
    in_c = int(rng.integers(1, 97))
    vector_beats = -(-in_c // per_beat)
    if in_h * vector_beats * 4 > fc.plm_in_words:
        return None
    row = -(-in_c // per_beat) * per_beat + per_beat * int(rng.integers(0, 3))
    in_addr = regions.place(regions.read, (in_h - 1) * row * bits // 8 + 8 * vector_beats, 8)
    rows = FCRows(p, fc.pes, fc.st_units, in_c, out_c)
    w_addr = regions.place(regions.read, 8 * rows.beats, 8)
    byte_unit = 8 // ob if ob < 8 else 1
    seg = out_c + int(rng.integers(0, 4))
    out_row = -(-seg // byte_unit) * byte_unit + byte_unit * int(rng.integers(0, 3))
    out_extent = ((in_h - 1) * out_row + seg) * ob // 8 + 8
    out_addr = regions.place(regions.write, out_extent, 2 if ob == 16 else 1)
    acc_flag = int(prev is not None)
    q_flag = int(rng.random() < 0.7)
    q_addr = regions.place(regions.read, 8 * (2 + (out_c + 1) // 2), 8)
    if None in (in_addr, w_addr, out_addr, q_addr):
        return None
    desc = Descriptor(op=Op.FC, precision=p.value, out_width=out_code, acc_flag=acc_flag,
                      q_flag=q_flag, relu=int(rng.integers(2)), in_h=in_h, in_c=in_c,
                      out_c=out_c, in_addr=in_addr, in_row_stride=row, w_addr=w_addr,
                      q_addr=q_addr, out_addr=out_addr, out_row_stride=out_row, out_seg=seg)
    loads_q = not acc_flag or q_flag
    return desc, (_fc_qblock(rng, out_c, ob) if loads_q else None)


def _mutate(rng, desc):
    """``desc`` with one field replaced by any value of its width."""
    name, _, _, width, is_signed, _ = FIELDS[int(rng.integers(len(FIELDS)))]
    low = -(1 << (width - 1)) if is_signed else 0
    value = int(rng.integers(low, low + (1 << width)))
    return replace(desc, **{name: value}), f"{name}={value}"


def _conv_ranges(desc, config):
    """Byte ranges a conv2d command's loads and store touch (for fault draws)."""
    ranges = []
    for request in load_requests(desc, config):
        if request is not None:
            ranges += [(a, request.seg_bytes) for a in request.segments()]
    if desc.q_flag:
        request = store_request(desc)
        ranges += [(a, request.seg_bytes) for a in request.segments()]
    return ranges


def _conv_note(desc):
    return (f"{Precision(desc.precision).label} {OUT_WIDTH_CODES[desc.out_width]}-bit "
            f"k{desc.kernel_h}x{desc.kernel_w} s{desc.stride_h}x{desc.stride_w} "
            f"{desc.in_h}x{desc.in_w}x{desc.in_c}->{desc.out_c} acc{desc.acc_flag} "
            f"q{desc.q_flag}")


@dataclass(frozen=True)
class Generator:
    """How the fuzzer draws the commands of one datapath.

    ``draw(rng, config, regions, prev)`` returns ``(descriptor, [(address, bytes to plant)])``
    or None when the drawn command does not fit (``prev``: the command whose partial sums this
    one continues, or None); ``ranges(desc, config)`` the byte ranges the command's loads and
    store touch; ``note(desc)`` a short description for failure messages."""

    draw: object
    ranges: object
    note: object


def _conv_draw(rng, config, regions, prev):
    drawn = _conv_descriptor(rng, config, regions, prev)
    if drawn is None:
        return None
    desc, qblock = drawn
    return desc, [] if qblock is None else [(desc.q_addr, qblock.pack().view(np.uint8))]


def _perchannel_descriptor(rng, config, regions, prev):
    """One per-channel command (``hls_ref.perchannel``: depthwise, average pool or add), or
    None when the drawn tile does not fit the build or the image; what to plant."""
    section = config.depthwise
    p = Precision(_pick(rng, section.precisions))
    out_code = _pick(rng, OUT_WIDTH_CODES)
    bits, ob, lanes = p.act_bits, OUT_WIDTH_CODES[out_code], section.lanes
    chain = prev is not None and prev.mode == Mode.AVGPOOL
    mode = Mode.AVGPOOL if chain else Mode(_pick(rng, Mode))
    if mode == Mode.DEPTHWISE:
        kh = int(rng.integers(1, section.max_kernel[0] + 1))
        kw = int(rng.integers(1, section.max_kernel[1] + 1))
        g = dict(kernel_h=kh, kernel_w=kw,
                 stride_h=int(rng.integers(1, section.max_stride + 1)),
                 stride_w=int(rng.integers(1, section.max_stride + 1)),
                 pad_top=int(rng.integers(kh)), pad_bottom=int(rng.integers(kh)),
                 pad_left=int(rng.integers(kw)), pad_right=int(rng.integers(kw)))
        in_h = int(rng.integers(max(1, kh - g["pad_top"] - g["pad_bottom"]), 9))
        in_w = int(rng.integers(max(1, kw - g["pad_left"] - g["pad_right"]), 12))
        out_h = (in_h + g["pad_top"] + g["pad_bottom"] - kh) // g["stride_h"] + 1
        out_w = (in_w + g["pad_left"] + g["pad_right"] - kw) // g["stride_w"] + 1
    else:
        # a pool or an add has no kernel: the fields are ignored, any value
        g = {name: int(rng.integers(1 << width)) if rng.random() < 0.3 else default
             for name, width, default in (("kernel_h", 4, 1), ("kernel_w", 4, 1),
                                          ("stride_h", 2, 1), ("stride_w", 2, 1),
                                          ("pad_top", 4, 0), ("pad_bottom", 4, 0),
                                          ("pad_left", 4, 0), ("pad_right", 4, 0))}
        in_h, in_w = int(rng.integers(1, 9)), int(rng.integers(1, 12))
        out_h, out_w = (1, 1) if mode == Mode.AVGPOOL else (in_h, in_w)
    inputs = 2 if mode == Mode.ADD else 1
    if inputs * in_h * in_w > section.plm_pixels or out_h * out_w > section.acc_pixels:
        return None
    # input pixels start on a byte (16-bit ones on an even byte); rows and pixels may overlap
    unit = 8 // bits if bits < 8 else 1
    channels = int(rng.integers(1, lanes + 1))
    pixel = -(-channels // unit) * unit + unit * int(rng.integers(0, 3))
    row_min = in_w * pixel
    row = _pick(rng, [row_min, row_min + unit * int(rng.integers(1, 4)),
                      unit * int(rng.integers(0, row_min // unit + 1))])
    extent = ((in_h - 1) * row + in_w * pixel) * bits // 8 + 8
    align = 2 if bits == 16 else 1
    in_addr = regions.place(regions.read, extent, align)
    if mode == Mode.ADD:
        w_addr = regions.place(regions.read, extent, align)
    else:
        groups = -(-g["kernel_h"] * g["kernel_w"] // p.lanes)
        w_addr = regions.place(regions.read, 2 * groups * lanes, 8)
    out = _output(rng, regions, channels, out_h, out_w, ob)
    if out is None:
        return None
    acc_flag = int(chain)
    q_flag = int(mode != Mode.AVGPOOL or rng.random() < 0.6)
    entries = ADD_ENTRIES if mode == Mode.ADD else channels
    q_addr = regions.place(regions.read, 8 * (1 + 2 * entries), 8)
    if None in (in_addr, w_addr, out["out_addr"], q_addr):
        return None
    desc = Descriptor(
        op=Op.DEPTHWISE, mode=mode, precision=p.value, out_width=out_code, acc_flag=acc_flag,
        q_flag=q_flag, relu=int(rng.integers(2)), **g,
        pad_value=int(rng.integers(-(1 << 15), 1 << 15)), in_h=in_h, in_w=in_w,
        in_c=channels, out_c=channels, in_addr=in_addr, in_row_stride=row,
        in_pixel_stride=pixel, w_addr=w_addr, q_addr=q_addr, **out)
    if acc_flag and not q_flag:
        return desc, []
    return desc, [(q_addr, _qblock(rng, entries, ob).pack().view(np.uint8))]


def _perchannel_ranges(desc, config):
    """Byte ranges a per-channel command's loads and store touch (for fault draws)."""
    ranges = []
    for request in perchannel_loads(desc, config.depthwise):
        if request is not None:
            ranges += [(a, request.seg_bytes) for a in request.segments()]
    if desc.q_flag:
        request = perchannel_store(desc)
        ranges += [(a, request.seg_bytes) for a in request.segments()]
    return ranges


def _fc_draw(rng, config, regions, prev):
    drawn = _fc_descriptor(rng, config, regions, prev)
    if drawn is None:
        return None
    desc, qblock = drawn
    return desc, ([] if qblock is None
                  else [(desc.q_addr, qblock.pack(shared=True).view(np.uint8))])


def _fc_ranges(desc, config):
    """Byte ranges an FC command's loads and store touch (for fault draws)."""
    ranges = []
    for request in fc_load_requests(desc, config.fc):
        if request is not None:
            ranges += [(a, request.seg_bytes) for a in request.segments()]
    if desc.q_flag:
        request = fc_store_request(desc)
        ranges += [(a, request.seg_bytes) for a in request.segments()]
    return ranges


def _perchannel_note(desc):
    mode = Mode(desc.mode).name.lower() if desc.mode in set(Mode) else f"mode {desc.mode}"
    kernel = (f" k{desc.kernel_h}x{desc.kernel_w} s{desc.stride_h}x{desc.stride_w}"
              if desc.mode == Mode.DEPTHWISE else "")
    return (f"{mode} {Precision(desc.precision).label} {OUT_WIDTH_CODES[desc.out_width]}-bit"
            f"{kernel} {desc.in_h}x{desc.in_w}x{desc.in_c} acc{desc.acc_flag} q{desc.q_flag}")


def _fc_note(desc):
    return (f"{Precision(desc.precision).label} {OUT_WIDTH_CODES[desc.out_width]}-bit "
            f"{desc.in_h}x{desc.in_c}->{desc.out_c} acc{desc.acc_flag} q{desc.q_flag}")


#: The fuzzer's generator of each datapath, by descriptor ``op``.
GENERATORS = {Op.CONV2D: Generator(_conv_draw, _conv_ranges, _conv_note),
              Op.DEPTHWISE: Generator(_perchannel_descriptor, _perchannel_ranges,
                                      _perchannel_note),
              Op.FC: Generator(_fc_draw, _fc_ranges, _fc_note)}


def _regions_of(generator, desc, config, index, desc_addr):
    """Byte ranges a command touches: its descriptor, loads and store (for fault draws)."""
    ranges = [(desc_addr + index * DESCRIPTOR_BYTES, DESCRIPTOR_BYTES)]
    try:
        ranges += generator.ranges(desc, config)
    except (ValueError, ZeroDivisionError, KeyError):
        pass                             # an invalid descriptor: its descriptor only
    return ranges


def random_list(rng, config, *, commands=(1, 6), ops=None, read_bytes=24 << 10,
                write_bytes=24 << 10, p_invalid=0.06, p_fault=0.06, p_chain=0.3,
                p_beyond=0.02, p_wrap=0.02, p_switch=0.3):
    """A random descriptor list (see the module docstring) as a :class:`FuzzList`.

    Parameters
    ----------
    rng : numpy.random.Generator
    config : AcceleratorConfig
        The build the list is drawn for.
    commands : (int, int)
        Inclusive range of the list's length.
    ops : sequence of Op or None
        The datapaths the commands are for (default: every datapath of the build the fuzzer
        has a generator for); the list runs of one, switching with ``p_switch``.
    read_bytes, write_bytes : int
        Sizes of the read and write regions.
    p_invalid, p_fault, p_chain, p_beyond, p_wrap, p_switch : float
        Per-command probabilities of an invalid field, a faulty byte in one of the command's
        ranges, a partial-sum continuation of the previous command, a tile reaching past the
        image, an input address that wraps around ``2**32``, and a switch of datapath.
    """
    ops = [op for op in (config.ops if ops is None else ops) if op in GENERATORS]
    if not ops:
        raise ValueError(f"ops must include a datapath the fuzzer knows "
                         f"({', '.join(op.name for op in GENERATORS)})")
    count = int(rng.integers(commands[0], commands[1] + 1))
    regions = _Regions(rng, count, read_bytes, write_bytes)
    memory = rng.integers(0, 256, regions.size, dtype=np.uint8)
    descriptors, notes, faults = [], [], []
    prev = None
    op = ops[int(rng.integers(len(ops)))]
    while len(descriptors) < count:
        if len(ops) > 1 and rng.random() < p_switch:
            op = ops[int(rng.integers(len(ops)))]
        generator = GENERATORS[op]
        chain = (prev if (prev is not None and prev.op == op and rng.random() < p_chain)
                 else None)
        drawn = generator.draw(rng, config, regions, chain)
        if drawn is None:
            continue
        desc, planted = drawn
        drawn_desc = desc
        note = f"{len(descriptors)}: {Op(desc.op).name.lower()} {generator.note(desc)}"
        for addr, data in planted:
            memory[addr:addr + len(data)] = data
        if rng.random() < p_beyond:
            desc = replace(desc, in_addr=regions.size - 8 * int(rng.integers(1, 4)))
            note += " past the image"
        elif rng.random() < p_wrap:
            step = 8 if op == Op.FC else 2          # the input's alignment
            desc = replace(desc, in_addr=(1 << 32) - step * int(rng.integers(1, 64)))
            note += " wraps"
        if rng.random() < p_invalid:
            desc, what = _mutate(rng, desc)
            note += f" invalid {what}"
        index = len(descriptors)
        if rng.random() < p_fault:
            ranges = _regions_of(generator, desc, config, index, regions.desc)
            addr, size = ranges[int(rng.integers(len(ranges)))]
            byte = (addr + int(rng.integers(max(1, size)))) % (1 << 32)
            faults.append((byte, byte + 1))
            note += f" fault at {byte:#x}"
        descriptors.append(desc)
        notes.append(note)
        prev = drawn_desc                # a chain continues the valid geometry
    write_descriptors(memory, regions.desc, descriptors)
    return FuzzList(memory, regions.desc, descriptors, config, faults, notes)
