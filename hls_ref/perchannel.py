"""The per-channel datapath's contract: its descriptors, loads and stores, the add's
quantization block, the average pool's division, and its engine in the socket golden model.

One per-channel command (``op`` 2, ``docs/accelerator.md``) works on at most ``lanes``
channels of an HWC tile, one channel per PE, and its ``mode`` says what it computes:

* **depthwise convolution** (``Mode.DEPTHWISE``): as
  :class:`hls_ref.invocation.DepthwiseAccelerator` -- ST operand pairs from the kernel
  window's taps, ``groups = ceil(kh * kw / lanes_st)`` operations per output per channel
  (``lanes_st`` = products per ST operation);
* **global average pooling** (``Mode.AVGPOOL``): the sum of every pixel of the tile, per
  channel, plus the bias, requantized: the compiler's multiplier and shift
  (:func:`pool_scale`) make that requantization TFLite's rounded division by the element
  count; partial sums carry across commands (``acc_flag``) when a window is cut into row tiles;
* **add** (``Mode.ADD``): TFLite's quantized ADD of the tile at ``in_addr`` (input A) and the
  tile at ``w_addr`` (input B, same strides), element by element, with the three-entry
  quantization block of :func:`add_qblock`.

The input tile's PLM holds one row of ``lanes`` elements per pixel (an add's two inputs share
it: B after A), which sets the tile limit (``INPUT_TOO_LARGE``: ``in_h * in_w``, twice that
for an add, above ``plm_pixels``). Every pixel is one DMA segment of ``ceil(in_c * act_bits /
8)`` bytes (merged into rows, or one block, when contiguous); pixels and rows start on a byte.

:class:`PerChannelEngine` runs a command in :class:`hls_ref.socket.SocketModel`: loads with
the byte counts and faults of the hardware, the invocation-level model, the store.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .descriptor import (
    OUT_WIDTH_CODES,
    ErrorCode,
    Mode,
    Op,
    output_layout_ok,
    output_request,
)
from .dma import BEAT_BYTES, DmaRequest, dma_request
from .formats import QuantBlock
from .invocation import AddAccelerator, Command, DepthwiseAccelerator, PoolAccelerator
from .layers import AddParams
from .precision import Precision
from .quant import multiply_by_quantized_multiplier
from .st import signed_field

__all__ = ["ADD_ENTRIES", "PerChannelEngine", "PerChannelGeometry", "add_params",
           "add_qblock", "check", "geometry", "load_requests", "pool_scale", "store_request"]

#: Entries of an add's quantization block: input A, input B, output.
ADD_ENTRIES = 3

_ADDR_MASK = (1 << 32) - 1


@dataclass(frozen=True)
class PerChannelGeometry:
    """What a valid per-channel descriptor implies (sizes in elements, pixels or words)."""

    mode: Mode
    precision: Precision
    out_bits: int
    out_h: int
    out_w: int
    groups: int          # depthwise: ST operations per output per channel; else 0
    pixels: int          # in_h * in_w (of each input)
    seg_bytes: int       # one input pixel's DMA segment


@lru_cache(maxsize=4096)
def geometry(desc):
    """The :class:`PerChannelGeometry` of a descriptor that passed the field checks (cached:
    descriptors are frozen, and the compiler's estimates ask for each one's several times)."""
    mode = Mode(desc.mode)
    p = Precision(desc.precision)
    if mode == Mode.DEPTHWISE:
        out_h = (desc.in_h + desc.pad_top + desc.pad_bottom - desc.kernel_h) \
            // desc.stride_h + 1
        out_w = (desc.in_w + desc.pad_left + desc.pad_right - desc.kernel_w) \
            // desc.stride_w + 1
        groups = -(-(desc.kernel_h * desc.kernel_w) // p.lanes)
    elif mode == Mode.AVGPOOL:
        out_h = out_w = 1
        groups = 0
    else:
        out_h, out_w, groups = desc.in_h, desc.in_w, 0
    return PerChannelGeometry(mode, p, OUT_WIDTH_CODES[desc.out_width], out_h, out_w, groups,
                              desc.in_h * desc.in_w, -(-desc.in_c * p.act_bits // 8))


def _input_layout_ok(desc, addr, bits):
    """Pixels and rows start on a byte; 16-bit elements on an even byte."""
    if desc.in_c > desc.in_pixel_stride:
        return False
    if (desc.in_pixel_stride * bits) % 8 or (desc.in_row_stride * bits) % 8:
        return False
    return not (bits == 16 and addr % 2)


def _layout_ok(desc, geo):
    bits = geo.precision.act_bits
    if desc.in_c != desc.out_c or not _input_layout_ok(desc, desc.in_addr, bits):
        return False
    if geo.mode == Mode.ADD:
        if not _input_layout_ok(desc, desc.w_addr, bits):
            return False
    elif desc.w_addr % 8:
        return False
    if desc.q_addr % 8:
        return False
    return output_layout_ok(desc, geo.out_w, geo.out_bits)


def check(desc, section, acc_shape=None):
    """The error code of per-channel descriptor ``desc`` on a build whose per-channel
    datapath is ``section`` (:class:`hls_ref.config.DepthwiseConfig`); ``acc_shape`` is (1, 1)
    while the accumulators hold an average pool's partial sums, else None. The rules are
    applied in the order of :class:`ErrorCode` (the ones that do not apply to the mode are
    skipped: a pool or an add has no kernel, stride or padding; the weight PLM holds the
    largest kernel, so ``WEIGHTS_TOO_LARGE`` never applies). The output tile must fit the
    output buffer (``OUTPUT_TOO_LARGE``: ``out_h * out_w`` above ``acc_pixels``)."""
    if desc.op != Op.DEPTHWISE or desc.mode not in {m.value for m in Mode}:
        return ErrorCode.BAD_OP
    if desc.precision not in {p.value for p in section.precisions}:
        return ErrorCode.BAD_PRECISION
    if desc.out_width not in OUT_WIDTH_CODES:
        return ErrorCode.BAD_OUT_WIDTH
    if 0 in (desc.in_h, desc.in_w, desc.in_c, desc.out_c, desc.out_seg):
        return ErrorCode.ZERO_DIM
    depthwise = desc.mode == Mode.DEPTHWISE
    if depthwise:
        max_kh, max_kw = section.max_kernel
        if not (1 <= desc.kernel_h <= max_kh and 1 <= desc.kernel_w <= max_kw):
            return ErrorCode.BAD_KERNEL
        if not (1 <= desc.stride_h <= section.max_stride
                and 1 <= desc.stride_w <= section.max_stride):
            return ErrorCode.BAD_STRIDE
        if (max(desc.pad_top, desc.pad_bottom) >= desc.kernel_h
                or max(desc.pad_left, desc.pad_right) >= desc.kernel_w):
            return ErrorCode.BAD_PADDING
    if desc.out_c > section.lanes:
        return ErrorCode.TOO_MANY_CHANNELS
    if depthwise and (desc.in_h + desc.pad_top + desc.pad_bottom < desc.kernel_h
                      or desc.in_w + desc.pad_left + desc.pad_right < desc.kernel_w):
        return ErrorCode.TILE_TOO_SMALL
    inputs = 2 if desc.mode == Mode.ADD else 1
    if inputs * desc.in_h * desc.in_w > section.plm_pixels:
        return ErrorCode.INPUT_TOO_LARGE
    geo = geometry(desc)
    if geo.out_h * geo.out_w > section.acc_pixels:
        return ErrorCode.OUTPUT_TOO_LARGE
    if not _layout_ok(desc, geo):
        return ErrorCode.BAD_LAYOUT
    if desc.acc_flag and (desc.mode != Mode.AVGPOOL or acc_shape != (1, 1)):
        return ErrorCode.ACC_STATE
    return ErrorCode.NONE


def _stride_bytes(elements, bits):
    return elements * bits // 8 & _ADDR_MASK


def _input_request(desc, addr, geo):
    bits = geo.precision.act_bits
    return dma_request(addr, geo.seg_bytes, desc.in_w, _stride_bytes(desc.in_pixel_stride, bits),
                       desc.in_h, _stride_bytes(desc.in_row_stride, bits))


def load_requests(desc, section):
    """``(input, weights or input B or None, quantization block or None)`` requests of a
    valid descriptor, in the order the hardware issues them (DMA tags 1, 2, 3)."""
    geo = geometry(desc)
    x = _input_request(desc, desc.in_addr, geo)
    if geo.mode == Mode.DEPTHWISE:
        second = DmaRequest(desc.w_addr, 2 * geo.groups * section.lanes)
    elif geo.mode == Mode.ADD:
        second = _input_request(desc, desc.w_addr, geo)
    else:
        second = None
    entries = ADD_ENTRIES if geo.mode == Mode.ADD else desc.out_c
    q = (DmaRequest(desc.q_addr, BEAT_BYTES * (1 + 2 * entries))
         if (not desc.acc_flag or desc.q_flag) else None)
    return x, second, q


def store_request(desc):
    """The output request of a valid descriptor with ``q_flag`` set."""
    geo = geometry(desc)
    return output_request(desc, geo.out_h, geo.out_w, geo.out_bits)


def mac_cycles(desc):
    """Cycles the PE array issues operations for a valid command (``MAC_CYCLES``): one per
    tap group and output pixel (depthwise), one per input pixel (pool), none (add: the
    requantizers do the work)."""
    geo = geometry(desc)
    if geo.mode == Mode.DEPTHWISE:
        return geo.out_h * geo.out_w * geo.groups
    return geo.pixels if geo.mode == Mode.AVGPOOL else 0


# --- the add's quantization block --------------------------------------------------------

def add_qblock(params):
    """An add's quantization block (:class:`hls_ref.formats.QuantBlock` of three entries) from
    its :class:`hls_ref.layers.AddParams`: entry 0 is input A (``bias`` holds its zero point,
    then its multiplier and shift), entry 1 input B, entry 2 the output (``bias`` holds the
    left shift); the header holds the output zero point and the clamp."""
    (z1, m1, s1), (z2, m2, s2), (zo, mo, so) = params.input1, params.input2, params.output
    return QuantBlock(int(zo), int(params.act_min), int(params.act_max),
                      np.array([z1, z2, params.left_shift], np.int64),
                      np.array([m1, m2, mo], np.int64), np.array([s1, s2, so], np.int64))


def add_params(qblock):
    """The inverse of :func:`add_qblock`."""
    z, m, s = (np.asarray(v, np.int64) for v in (qblock.bias, qblock.multiplier, qblock.shift))
    return AddParams(int(z[2]), (int(z[0]), int(m[0]), int(s[0])),
                     (int(z[1]), int(m[1]), int(s[1])),
                     (int(qblock.zero_point), int(m[2]), int(s[2])), int(qblock.act_min),
                     int(qblock.act_max))


# --- the average pool's division -----------------------------------------------------------

def _rounded_division(total, count):
    """TFLite's integer average: ``total / count`` rounded half away from zero."""
    half = count // 2
    return np.where(total > 0, (total + half) // count, -((half - total) // count))


def _division_steps(count, act_bits):
    """Every sum at which the rounded division steps, and the sum before it, within the sums
    ``count`` elements of ``act_bits`` bits reach: two monotone integer functions that agree
    at these points (and the ends) agree everywhere in between."""
    low, high = -(count << (act_bits - 1)), count * ((1 << (act_bits - 1)) - 1)
    half = count // 2
    k = np.arange(1, (1 << act_bits) + 2, dtype=np.int64)
    steps = np.concatenate([k * count - half, half - k * count + 1])
    points = np.concatenate([steps, steps - 1, [low, high, 0, 1, -1]])
    return np.unique(points[(points >= low) & (points <= high)])


@lru_cache(maxsize=256)
def pool_scale(count, act_bits):
    """``(multiplier, shift)`` with which the requantizer divides an average pool's sum of
    ``count`` elements of ``act_bits`` bits exactly as TFLite does (round half away from
    zero): ``multiply_by_quantized_multiplier(total, multiplier, shift)`` equals the rounded
    quotient for every sum those elements can reach (checked here, at every point where the
    quotient steps). ``ValueError`` if no candidate is exact (very large windows)."""
    if count < 1:
        raise ValueError(f"count must be at least 1, not {count}")
    points = _division_steps(count, act_bits)
    want = _rounded_division(points, count)
    candidates = [((1 << 31) - 1, 0)] if count == 1 else []
    for extra in range(0, 32):
        base = -(-(1 << (31 + extra)) // count)
        if base >= 1 << 31:
            break
        candidates += [(base, -extra), (base + 1, -extra)]
    for multiplier, shift in candidates:
        if multiplier < 1 << 31 and np.array_equal(
                multiply_by_quantized_multiplier(points, multiplier, shift), want):
            return multiplier, shift
    raise ValueError(f"no requantization divides sums of {count} {act_bits}-bit elements "
                     f"exactly")


# --- the engine of the socket golden model ------------------------------------------------

class PerChannelEngine:
    """The per-channel datapath's commands in :class:`hls_ref.socket.SocketModel` (an engine
    of ``hls_ref.socket.ENGINES``, see :class:`hls_ref.socket.ConvEngine`): checks
    (:func:`check`), loads with the byte counts and faults of the hardware, the
    invocation-level models, the store. ``acc_shape`` is (1, 1) while an average pool's
    partial sums wait for the next row tile: after a pool, until another command of this
    datapath or an error."""

    op = Op.DEPTHWISE

    def __init__(self, config):
        self.section = config.depthwise
        limits = self.section.limits()
        self.depthwise = DepthwiseAccelerator(limits)
        self.pool = PoolAccelerator(limits)
        self.add = AddAccelerator(limits)
        self.acc_shape = None

    def reset(self):
        """After an error or an abort: no partial sums."""
        self.pool.acc = None
        self.acc_shape = None

    def check(self, desc):
        return check(desc, self.section, self.acc_shape)

    def run(self, mem, desc, index, status):
        """Run valid command ``desc`` (list index ``index``) on ``mem`` (the socket model's
        memory), updating ``status``; a bad quantization block or a bus error ends the list
        (``hls_ref.socket``)."""
        from .socket import _store_segments, _unpack_weights, read_qblock

        geo = geometry(desc)
        lanes = self.section.lanes
        p = geo.precision
        x_req, second, q_req = load_requests(desc, self.section)
        loads = [req for req in (x_req, second, q_req) if req is not None]
        status.bytes_read += sum(BEAT_BYTES * req.beat_count() for req in loads)
        for req in loads:
            mem.read_request(req)

        def tile(addr):
            # whole rows of ``lanes`` elements: those beyond in_c read as zero, as the
            # loader writes them
            h, w, c = np.meshgrid(np.arange(desc.in_h), np.arange(desc.in_w),
                                  np.arange(lanes), indexing="ij")
            index = h * desc.in_row_stride + w * desc.in_pixel_stride + c
            return np.where(c < desc.in_c, mem.read_elements(addr, index, p.act_bits), 0)

        x = tile(desc.in_addr)
        if geo.mode == Mode.ADD:
            qblock = read_qblock(mem, desc, q_req, ADD_ENTRIES, ADD_ENTRIES)
        else:
            qblock = read_qblock(mem, desc, q_req, lanes)
        cmd = Command(p, geo.out_bits, (desc.kernel_h, desc.kernel_w),
                      (desc.stride_h, desc.stride_w),
                      (desc.pad_top, desc.pad_bottom, desc.pad_left, desc.pad_right),
                      int(signed_field(desc.pad_value, 0, p.act_bits)),
                      acc_flag=bool(desc.acc_flag), q_flag=bool(desc.q_flag))
        c = desc.out_c
        if geo.mode == Mode.DEPTHWISE:
            raw = mem.read_bytes(desc.w_addr, second.seg_bytes).view("<u2").astype(np.int64)
            taps = _unpack_weights(raw.reshape(geo.groups, lanes).T, p)   # (lanes, taps)
            w = taps[:c, :desc.kernel_h * desc.kernel_w].T.reshape(desc.kernel_h,
                                                                   desc.kernel_w, c)
            y = self.depthwise.invoke(cmd, x[..., :c], w, qblock.select(0, c))
        elif geo.mode == Mode.AVGPOOL:
            y = self.pool.invoke(cmd, x, qblock)
        else:
            y = self.add.invoke(cmd, x[..., :c], tile(desc.w_addr)[..., :c], qblock)
        # only a pool leaves partial sums for the next command (a pool's next row tile)
        self.acc_shape = (1, 1) if geo.mode == Mode.AVGPOOL else None
        status.mac_cycles += mac_cycles(desc)
        if y is None:
            return
        store = store_request(desc)
        status.bytes_written += store.bytes
        mem.check_write(store)
        _store_segments(mem, desc, y, geo.out_h, geo.out_w, geo.out_bits)
        status.outputs.append((index, y[..., :c]))
