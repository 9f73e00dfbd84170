"""Tile sizes and loop orders of one layer, and their DMA traffic and cost in closed form.

A :class:`Tiling` cuts a layer into tiles of ``rows`` output rows, ``out_channels`` output
channels and ``in_channels`` input channels (always the full width: rows of a tensor are
contiguous in external memory, and the accelerator's row loops cover whole rows). The loops
run in ``order`` (outermost first) over row tiles ``h``, output-channel tiles ``z`` and
input-channel tiles ``k``; ``k`` is always innermost because the accelerators are
output-stationary: partial sums stay in the accumulator PLM (``acc_flag``) until the last
input-channel tile requantizes them (``q_flag``) and the output tile is stored once.

Traffic follows from the loop order. A tile of a tensor is loaded again whenever a loop it
does not depend on iterates outside the innermost loop it does depend on (counting only loops
of more than one iteration): with order ``hzk`` and several input-channel tiles, every input
tile is loaded once per output-channel tile; with a single input-channel tile it stays on chip
while the output-channel tiles go by.

:func:`evaluate` computes calls, segments and beats per tensor with numpy, element-wise over
arrays of candidate tile sizes, so the same code scores one tiling and searches thousands;
``sw.tiling.schedule`` materialises a tiling into explicit DMA transfers and commands and the
tests check that both count the same.
"""

from dataclasses import dataclass

import numpy as np

from .capacity import BEAT_BYTES, MAX_QBLOCK_CHANNELS, TilingError

__all__ = ["ORDERS", "LayerCost", "Tiling", "check_layer", "evaluate", "row_tiles",
           "splits", "tensor_stats"]

ORDERS = ("hzk", "zhk")
TENSORS = ("input", "weights", "qparams", "output")


@dataclass(frozen=True)
class Tiling:
    """Tile sizes (output rows, output channels, input channels) and loop order of a layer.

    For depthwise layers ``in_channels`` equals ``out_channels`` (a tile's input channels are
    its output channels); for FC layers ``rows`` is 1.
    """

    rows: int
    out_channels: int
    in_channels: int
    order: str = "hzk"

    def as_dict(self):
        return {"rows": self.rows, "out_channels": self.out_channels,
                "in_channels": self.in_channels, "order": self.order}


def _ceil(a, b):
    return -(-a // b)


def splits(total, size):
    """[(start, stop)] tiles of ``size`` along ``total`` (the last one shorter)."""
    return [(a, min(a + size, total)) for a in range(0, total, size)]


def row_tiles(layer, rows):
    """[(out_r0, out_r1, in_r0, in_r1)] for output-row tiles of ``rows`` rows."""
    h = layer.in_shape[0]
    ho = layer.out_shape[0]
    kh, sh, top = layer.kernel[0], layer.stride[0], layer.padding.top
    tiles = []
    for r0, r1 in splits(ho, rows):
        a = max(r0 * sh - top, 0)
        b = min((r1 - 1) * sh + kh - top, h)
        tiles.append((r0, r1, a, b))
    return tiles


def check_layer(layer, capacity):
    """Raise :class:`TilingError` if the accelerator cannot run ``layer`` at all."""
    config = capacity.config
    if not layer.weighted:
        return
    kh, kw = layer.kernel
    mh, mw = config.max_kernel
    if kh > mh or kw > mw:
        raise TilingError(f"layer {layer.name}: kernel {kh}x{kw} exceeds the accelerator's "
                          f"maximum kernel {mh}x{mw} (max_kernel)")
    if max(layer.stride) > config.max_stride:
        raise TilingError(f"layer {layer.name}: stride {layer.stride} exceeds the maximum "
                          f"stride {config.max_stride} (max_stride)")
    if layer.in_shape[1] > config.max_width:
        raise TilingError(f"layer {layer.name}: rows of {layer.in_shape[1]} pixels exceed the "
                          f"accelerator's maximum row length {config.max_width} (max_width)")
    p = layer.padding
    if max(p.top, p.bottom) >= kh or max(p.left, p.right) >= kw:
        raise TilingError(f"layer {layer.name}: padding {p} is not smaller than the kernel")


@dataclass
class RowStats:
    """Per candidate ``rows``: row tiles, input rows summed and at most."""

    rows: np.ndarray
    count: np.ndarray
    sum_in: np.ndarray
    max_in: np.ndarray


def _row_stats(layer, rows):
    rows = np.asarray(rows, np.int64)
    count, sum_in, max_in = [], [], []
    for r in rows.ravel():
        tiles = row_tiles(layer, int(r))
        sizes = [b - a for _, _, a, b in tiles]
        count.append(len(tiles))
        sum_in.append(sum(sizes))
        max_in.append(max(sizes))
    shape = rows.shape
    return RowStats(rows, *(np.array(v, np.int64).reshape(shape)
                            for v in (count, sum_in, max_in)))


def _channel_stats(total, sizes, lanes, bits, pes=None):
    """Per candidate tile size: count, summed ST words, summed beats per pixel, summed
    PE-padded channels, and the largest tile's PE-padded channels."""
    sizes = np.asarray(sizes, np.int64)
    out = {k: [] for k in ("count", "words", "beats", "padded", "padded_max")}
    for s in sizes.ravel():
        tiles = [b - a for a, b in splits(total, int(s))]
        starts = [a for a, _ in splits(total, int(s))]
        out["count"].append(len(tiles))
        out["words"].append(sum(_ceil(t, lanes) for t in tiles))
        out["beats"].append(sum(_ceil((a + t) * bits, 64) - (a * bits) // 64
                                for a, t in zip(starts, tiles)))
        if pes:
            out["padded"].append(sum(_ceil(t, pes) * pes for t in tiles))
            out["padded_max"].append(_ceil(tiles[0], pes) * pes)
        else:
            out["padded"].append(0)
            out["padded_max"].append(0)
    return {k: np.array(v, np.int64).reshape(sizes.shape) for k, v in out.items()}


def tensor_stats(layer, capacity, rows, out_channels, in_channels):
    """The per-dimension statistics :func:`evaluate` needs, for broadcastable arrays of
    candidate sizes."""
    p = capacity.precision
    c_in, c_out = layer.in_channels, layer.out_channels
    if layer.kind == "fc":
        rs = _row_stats_fc(rows)
    else:
        rs = _row_stats(layer, rows)
    ks = _channel_stats(c_in, in_channels, p.lanes, p.act_bits)
    zs_in = _channel_stats(c_in, out_channels, p.lanes, p.act_bits) \
        if layer.kind == "depthwise" else None
    zs = _channel_stats(c_out, out_channels, p.lanes, capacity.out_bits, capacity.pes)
    return rs, ks, zs, zs_in


def _row_stats_fc(rows):
    rows = np.asarray(rows, np.int64)
    one = np.ones_like(rows)
    return RowStats(rows, one, one, one)


@dataclass
class LayerCost:
    """DMA calls, segments and beats per tensor, on-chip footprint and commands of a tiling
    (scalars, or arrays over candidates)."""

    calls: dict
    segments: dict
    beats: dict
    footprint: tuple
    commands: object
    cycles: object
    fits: object

    @property
    def total_beats(self):
        return sum(self.beats.values())

    @property
    def total_calls(self):
        return sum(self.calls.values())

    @property
    def dram_bytes(self):
        return self.total_beats * BEAT_BYTES

    @property
    def read_bytes(self):
        return (self.beats["input"] + self.beats["weights"] + self.beats["qparams"]) * BEAT_BYTES

    @property
    def written_bytes(self):
        return self.beats["output"] * BEAT_BYTES


def _reload(order, trips, relevant):
    """How many times each tile of a tensor depending on loops ``relevant`` is loaded."""
    factor = 1
    found = False
    for loop in reversed(order):
        t = trips[loop]
        if loop in relevant:
            found = found | (t > 1)
        else:
            factor = factor * np.where(found, t, 1)
    return factor


def evaluate(layer, capacity, cost, rows, out_channels, in_channels, order="hzk", stats=None,
             kinds=("hwc", "hwc")):
    """Traffic, footprint and DMA cost of tiling ``layer`` (arrays broadcast element-wise),
    its input and output laid out as ``kinds`` (``"hwc"`` or ``"blocked"``): a channel slice
    of a band is one DMA segment per pixel in HWC, one per row channel-blocked."""
    rows = np.asarray(rows, np.int64)
    out_channels = np.asarray(out_channels, np.int64)
    in_channels = np.asarray(in_channels, np.int64)
    if layer.kind == "depthwise":
        in_channels = out_channels
    rs, ks, zs, zs_in = stats or tensor_stats(layer, capacity, rows, out_channels, in_channels)
    _, w, c = layer.in_shape
    ho, wo, co = layer.out_shape
    kh, kw = layer.kernel
    pes = capacity.pes
    in_kind, out_kind = kinds
    in_layout = capacity.layout(layer.in_shape, kind=in_kind)
    out_layout = capacity.layout(layer.out_shape, capacity.out_bits, out_kind)
    in_seg = 1 if in_kind == "blocked" else w          # segments per row of a channel slice
    out_seg = 1 if out_kind == "blocked" else wo
    row_beats_in = in_layout.row_stride * in_layout.bits // 64
    row_beats_out = out_layout.row_stride * out_layout.bits // 64

    nh, nz = rs.count, zs["count"]
    nk = nz if layer.kind == "depthwise" else ks["count"]
    trips = {"h": nh, "z": nz, "k": nk if layer.kind != "depthwise" else np.ones_like(nk)}
    in_rel = {"h", "z"} if layer.kind == "depthwise" else {"h", "k"}

    calls, segs, beats = {}, {}, {}
    # input: a band of whole rows when one tile holds every channel, else one segment a pixel
    f_in = _reload(order, trips, in_rel)
    chan = zs_in if layer.kind == "depthwise" else ks
    full_in = nk == 1
    calls["input"] = f_in * nh * nk
    if layer.kind == "fc":
        segs["input"] = calls["input"]
        beats["input"] = f_in * nh * chan["beats"]
    else:
        segs["input"] = f_in * np.where(full_in, nh, rs.sum_in * in_seg * nk)
        beats["input"] = f_in * np.where(full_in, rs.sum_in * row_beats_in,
                                         rs.sum_in * w * chan["beats"])
    # weights: the compiler lays each (z, k) weight tile out contiguously
    f_w = _reload(order, trips, {"z", "k"} if layer.kind != "depthwise" else {"z"})
    if layer.kind == "conv":
        words = kh * kw * ks["words"] * zs["padded"]
    elif layer.kind == "depthwise":
        words = _ceil(kh * kw, capacity.lanes) * zs["padded"]
    else:
        words = ks["words"] * zs["padded"]
    w_tiles = nz * (1 if layer.kind == "depthwise" else nk)
    calls["weights"] = f_w * w_tiles
    segs["weights"] = calls["weights"]
    beats["weights"] = f_w * _ceil(2 * words, BEAT_BYTES)
    f_q = _reload(order, trips, {"z"})
    calls["qparams"] = f_q * nz
    segs["qparams"] = calls["qparams"]
    beats["qparams"] = f_q * (nz + 2 * co)
    # output: stored once per (h, z) tile, after the last input-channel tile
    calls["output"] = nh * nz
    if layer.kind == "fc":
        segs["output"] = calls["output"]
        beats["output"] = zs["beats"]
    else:
        segs["output"] = np.where(nz == 1, nh, ho * out_seg * nz)
        beats["output"] = np.where(nz == 1, ho * row_beats_out, ho * wo * zs["beats"])

    # footprint of the largest tile
    k_max = out_channels if layer.kind == "depthwise" else in_channels
    k_max = np.minimum(k_max, c)
    z_max = np.minimum(out_channels, co)
    if layer.kind == "depthwise":
        in_b = 2 * rs.max_in * w * z_max
    elif layer.kind == "fc":
        in_b = capacity.input_tile_bytes(np.ones_like(rs.max_in), 1, k_max)
    else:
        in_b = capacity.input_tile_bytes(rs.max_in, w, k_max, in_kind)
    w_b = capacity.weight_tile_bytes(layer.kind, layer.kernel, z_max, k_max)
    acc_rows = np.minimum(rows, ho)
    acc_b = capacity.acc_tile_bytes(acc_rows, wo, z_max)
    fits = capacity.fits(in_b, w_b, acc_b) & (z_max <= MAX_QBLOCK_CHANNELS)

    pe_blocks = zs["padded"] // pes
    commands = nh * pe_blocks * (1 if layer.kind == "depthwise" else nk)
    cycles = sum(cost.cycles(calls[t], segs[t], beats[t]) for t in TENSORS)
    return LayerCost(calls, segs, beats, (in_b, w_b, acc_b), commands, cycles, fits)
