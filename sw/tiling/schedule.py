"""The ``Schedule``: what every tiling strategy produces and the validator replays.

A schedule places every tensor in external memory (:class:`Region`: byte address and size),
then lists, layer by layer, the steps the accelerator runs. A :class:`Step` is one tile: the
DMA loads that bring its operands into on-chip banks, the accelerator commands that compute it
(one per PE block and input-channel tile), and the DMA stores that write its output back.
Loads of operands still on chip from the previous step are left out; that is where tiling
strategies differ.

Transfers are strided copies between external memory and a bank: ``rows`` x ``pixels``
segments of ``segment_bytes`` each, with separate row and pixel strides on both sides. That is
enough for every tile of both activation layouts of ``docs/formats.md``: a band of whole rows
(one segment), a channel slice of a band (HWC: one segment per pixel; channel-blocked: one per
row). Weight tiles are contiguous because the compiler lays each layer's weights out tile by
tile in the order the schedule reads them (:func:`weight_chunks`).

An activation :class:`Region` records the layout of its tensor (``layout``, ``shape``,
``bits``). A region with ``view_of`` set is a channel slice of another tensor's region (the
producers of a ``concat`` write straight into its channels): ``channel_offset`` is where its
channels start there, and ``shape`` is the whole tensor's.

Everything is deterministic and serialises to JSON (:meth:`Schedule.to_json`).
"""

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np

from hls_ref.formats import TensorLayout, make_layout

from .capacity import BEAT_BYTES, Capacity
from .layer_tiling import Tiling, row_tiles, splits

__all__ = ["Command", "LayerSchedule", "Region", "Schedule", "Step", "Transfer",
           "activation_transfer", "fc_input", "materialize", "own_layout", "region_layout",
           "weight_chunks"]

ALIGN = 4096


@dataclass(frozen=True)
class Region:
    """A tensor in external memory."""

    name: str
    kind: str          # "activation", "weights" or "qparams"
    addr: int
    bytes: int
    shape: tuple | None = None      # activations: (H, W, C) of the tensor laid out here
    bits: int = 0                   # activations: element width
    layout: str = "hwc"             # activations: "hwc" or "blocked"
    view_of: str | None = None      # a channel slice of this tensor's region
    channel_offset: int = 0


@dataclass(frozen=True)
class Transfer:
    """One DMA call (see the module docstring). Addresses and strides are in bytes."""

    direction: str     # "load" (external -> bank) or "store" (bank -> external)
    tensor: str
    buffer: str        # "in", "w", "q" or "acc"
    bank: int
    addr: int
    offset: int        # byte offset in the bank
    rows: int
    pixels: int
    segment_bytes: int
    row_stride: int
    pixel_stride: int
    bank_row_stride: int
    bank_pixel_stride: int

    @property
    def segments(self):
        return self.rows * self.pixels

    @property
    def beats(self):
        """64-bit beats on the bus (a segment that starts or ends inside a beat moves it
        whole)."""
        total = 0
        for r in range(self.rows):
            start = self.addr + r * self.row_stride
            if self.pixel_stride % BEAT_BYTES == 0:
                first = start % BEAT_BYTES
                total += self.pixels * (-(-(first + self.segment_bytes) // BEAT_BYTES))
            else:
                for p in range(self.pixels):
                    a = start + p * self.pixel_stride
                    total += -(-(a % BEAT_BYTES + self.segment_bytes) // BEAT_BYTES)
        return total

    @property
    def bytes(self):
        return self.segments * self.segment_bytes


@dataclass(frozen=True)
class Command:
    """One accelerator command: a PE block of output channels on one input-channel tile.

    ``out_rows``/``out_channels``/``in_channels`` are [start, stop) in the layer's tensors;
    ``in_rows`` the input rows the input bank holds for it and ``padding`` the (top, bottom,
    left, right) padding the command inserts; ``w_offset`` is the byte offset of its PE block
    in the weight bank; ``acc_offset`` is the first of the command's accumulators (32-bit words).
    """

    op: str
    out_rows: tuple
    out_channels: tuple
    in_channels: tuple
    in_rows: tuple
    padding: tuple
    acc_flag: bool
    q_flag: bool
    in_bank: int
    w_bank: int
    q_bank: int
    acc_bank: int
    w_offset: int
    acc_offset: int
    layer: str = ""     # the layer computed (fused groups and host layers)


@dataclass
class Step:
    loads: list = field(default_factory=list)
    commands: list = field(default_factory=list)
    stores: list = field(default_factory=list)


@dataclass
class LayerSchedule:
    """The steps of one layer; ``tiling`` is ``None`` for layers the host runs. A fused tile
    group (``kind == "fused"``) has one step per pass and its plan in ``group``: ``layers``,
    ``passes``, ``ends``/``starts`` (per tensor and pass: rows produced so far, first row still
    on chip), ``peak_bytes``, ``inputs`` and ``outputs``."""

    layer: str
    kind: str
    tiling: Tiling | None
    steps: list
    group: dict | None = None

    def transfers(self):
        for step in self.steps:
            yield from step.loads
            yield from step.stores

    def commands(self):
        for step in self.steps:
            yield from step.commands


@dataclass
class Schedule:
    """A whole network's schedule (see the module docstring)."""

    network: str
    strategy: str
    capacity: dict
    cost: dict
    regions: dict
    layers: list

    def to_dict(self):
        return {
            "network": self.network, "strategy": self.strategy, "capacity": self.capacity,
            "cost": self.cost,
            "regions": [dict(asdict(r), shape=list(r.shape) if r.shape else None)
                        for r in self.regions.values()],
            "layers": [{
                "layer": ls.layer, "kind": ls.kind,
                "tiling": ls.tiling.as_dict() if ls.tiling else None,
                "group": ls.group,
                "steps": [{"loads": [asdict(t) for t in s.loads],
                           "commands": [asdict(c) for c in s.commands],
                           "stores": [asdict(t) for t in s.stores]} for s in ls.steps],
            } for ls in self.layers],
        }

    def to_json(self, indent=None):
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d):
        def cmd(c):
            return Command(**{k: tuple(v) if isinstance(v, list) else v for k, v in c.items()})

        layers = [LayerSchedule(
            ls["layer"], ls["kind"], Tiling(**ls["tiling"]) if ls["tiling"] else None,
            [Step([Transfer(**t) for t in s["loads"]], [cmd(c) for c in s["commands"]],
                  [Transfer(**t) for t in s["stores"]]) for s in ls["steps"]],
            ls.get("group"))
            for ls in d["layers"]]
        regions = {r["name"]: Region(**dict(r, shape=tuple(r["shape"]) if r.get("shape")
                                            else None)) for r in d["regions"]}
        return cls(d["network"], d["strategy"], d["capacity"], d["cost"], regions, layers)

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))


# --- placing tensors -----------------------------------------------------------------------

class Allocator:
    """Bump allocation of external memory, every region 4 KiB aligned."""

    def __init__(self):
        self.regions = {}
        self.top = 0

    def place(self, name, kind, size, **activation):
        if name not in self.regions:
            self.regions[name] = Region(name, kind, self.top, size, **activation)
            self.top += -(-max(size, 1) // ALIGN) * ALIGN
        return self.regions[name]

    def place_tensor(self, name, shape, bits, layout):
        """An activation tensor of its own (a whole region in ``layout``)."""
        size = make_layout(layout, *shape, bits).bytes
        return self.place(name, "activation", size, shape=tuple(shape), bits=bits,
                          layout=layout)

    def place_view(self, name, root, channel_offset):
        """A tensor stored as channels ``[channel_offset, ...)`` of ``root``'s region."""
        r = self.regions[root]
        self.regions[name] = Region(name, "activation", r.addr, r.bytes, r.shape, r.bits,
                                    r.layout, r.view_of or root,
                                    r.channel_offset + channel_offset)
        return self.regions[name]


@lru_cache(maxsize=4096)
def _layout(kind, shape, bits):
    return make_layout(kind, *shape, bits)


def region_layout(region):
    """The layout of the whole tensor laid out in ``region``."""
    return _layout(region.layout, tuple(region.shape), region.bits)


def own_layout(region, shape):
    """The layout of a tensor of ``shape`` on its own (a bank or on-chip band holding it),
    in the layout its region uses."""
    return _layout(region.layout, tuple(shape), region.bits)


def fc_input(layout):
    """How a fully connected layer reads its input tensor, laid out as ``layout``:
    (elements, index).

    The FC's input vector is the producer's tensor as its layout lays it out, fillers
    included (``elements`` of them); ``index[n]`` is where flattened (HWC order) element ``n``
    sits in that vector. The compiler spreads the FC's weight columns the same way (zero at
    the fillers), so no reshaping copy is needed; when the layout has no filler and is HWC,
    ``index`` is the identity."""
    h, w, c = layout.height, layout.width, layout.channels
    hh, ww, cc = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
    index = layout.element_index(hh, ww, cc).reshape(-1)
    return layout.beats * layout.per_beat, index


def weight_chunks(layer, capacity, tiling):
    """[(z-range, k-range, byte offset, bytes)] of the layer's weight region: one chunk per
    (output-channel tile, input-channel tile), output-channel tiles outermost; each chunk is
    that tile's weight blob (``docs/formats.md`` section 2)."""
    chunks, offset = [], 0
    k_ranges = ([None] if layer.kind == "depthwise"
                else splits(layer.in_channels, tiling.in_channels))
    for z in splits(layer.out_channels, tiling.out_channels):
        for k in k_ranges:
            size = capacity.weight_bytes(layer.kind, layer.kernel, z[1] - z[0],
                                         k[1] - k[0] if k else 0)
            chunks.append((z, k, offset, size))
            offset += size
    return chunks


def qparam_chunks(layer, tiling):
    """[(z-range, byte offset, bytes)]: one quantization block per output-channel tile."""
    chunks, offset = [], 0
    for z in splits(layer.out_channels, tiling.out_channels):
        size = Capacity.qblock_bytes(z[1] - z[0])
        chunks.append((z, offset, size))
        offset += size
    return chunks


# --- materialising a tiling -----------------------------------------------------------------

def activation_transfer(direction, tensor, region, rows, channels, buffer, bank, bank_layout,
                        bank_row=0):
    """Copy rows ``[r0, r1)`` x every pixel x channels ``[c0, c1)`` of ``tensor`` (channels
    counted in the tensor, which may be a view) between its region and a bank holding them as
    ``bank_layout``, from the bank's row ``bank_row`` on."""
    layout = region_layout(region)
    (r0, r1), (c0, c1) = rows, channels
    c0, c1 = c0 + region.channel_offset, c1 + region.channel_offset
    bits = layout.bits
    row_b = layout.row_stride * bits // 8
    bank_row_b = bank_layout.row_stride * bits // 8
    offset = bank_row * bank_row_b
    whole = c0 == 0 and c1 == layout.channels and row_b == bank_row_b
    if layout.kind == "blocked":
        block = layout.block
        if c0 % block or (c1 % block and c1 != layout.channels):
            raise ValueError(f"{tensor}: channels [{c0}, {c1}) are not whole blocks of "
                             f"{block}")
        seg = -(-(c1 - c0) // block) * layout.width * block * bits // 8
        if whole:
            return Transfer(direction, tensor, buffer, bank, region.addr + r0 * row_b, offset,
                            1, 1, (r1 - r0) * seg, row_b, seg, bank_row_b, seg)
        addr = region.addr + r0 * row_b + (c0 // block) * layout.block_stride * bits // 8
        return Transfer(direction, tensor, buffer, bank, addr, offset, r1 - r0, 1, seg,
                        row_b, seg, bank_row_b, seg)
    px_b = layout.channel_stride * bits // 8
    bank_px_b = bank_layout.channel_stride * bits // 8
    if whole:
        # the channel vectors and rows of both sides coincide: one contiguous band
        return Transfer(direction, tensor, buffer, bank, region.addr + r0 * row_b, offset, 1, 1,
                        (r1 - r0) * row_b, row_b, px_b, bank_row_b, bank_px_b)
    if (c0 * bits) % 8 or ((c1 - c0) * bits) % 8:
        raise ValueError(f"{tensor}: channels [{c0}, {c1}) of {bits}-bit elements are not "
                         f"whole bytes")
    seg = (c1 - c0) * bits // 8
    addr = region.addr + r0 * row_b + c0 * bits // 8
    return Transfer(direction, tensor, buffer, bank, addr, offset, r1 - r0, layout.width, seg,
                    row_b, px_b, bank_row_b, bank_px_b)


def _fc_transfer(tensor, region, channels, bank):
    """Elements ``[k0, k1)`` of an FC's input vector (see :func:`fc_input`) into a bank."""
    k0, k1 = channels
    bits = region.bits
    if (k0 * bits) % 8 or ((k1 - k0) * bits) % 8:
        raise ValueError(f"{tensor}: elements [{k0}, {k1}) of {bits}-bit values are not "
                         f"whole bytes")
    seg = (k1 - k0) * bits // 8
    bank_b = TensorLayout(1, 1, k1 - k0, bits).bytes
    return Transfer("load", tensor, "in", bank, region.addr + k0 * bits // 8, 0, 1, 1, seg,
                    bank_b, seg, bank_b, seg)


def _contiguous(direction, tensor, region, offset, size, buffer, bank, bank_offset=0):
    return Transfer(direction, tensor, buffer, bank, region.addr + offset, bank_offset, 1, 1,
                    size, size, size, size, size)


class _Banks:
    """Which tile each buffer's current bank holds. A step reuses an operand only when it is
    the one the previous step used (what the cost model counts); otherwise the operand goes to
    the next bank, so that with two banks it loads while the previous tile computes."""

    def __init__(self, banks):
        self.banks = banks
        self.current = {}

    def find(self, buffer, key):
        bank, held = self.current.get(buffer, (None, None))
        return bank if held == key else None

    def take(self, buffer, key):
        bank, _ = self.current.get(buffer, (-1, None))
        bank = (bank + 1) % self.banks
        self.current[buffer] = (bank, key)
        return bank


def materialize(layer, capacity, tiling, regions, input_name):
    """Steps of one accelerated layer under ``tiling`` (regions already placed; for an FC,
    ``layer`` reads the input vector :func:`fc_input` describes)."""
    pes = capacity.pes
    _, wo, co = layer.out_shape
    c_in = layer.in_channels
    in_region, out_region = regions[input_name], regions[layer.name]
    banks = _Banks(capacity.banks)
    w_chunks = {(z, k): (off, size) for z, k, off, size in
                weight_chunks(layer, capacity, tiling)}
    q_chunks = {z: (off, size) for z, off, size in qparam_chunks(layer, tiling)}
    z_tiles = splits(co, tiling.out_channels)
    if layer.kind == "fc":
        h_tiles = [(0, 1, 0, 1)]
    else:
        h_tiles = row_tiles(layer, tiling.rows)
    dw = layer.kind == "depthwise"
    k_tiles = [None] if dw else splits(c_in, tiling.in_channels)
    pad = layer.padding
    if tiling.order == "hzk":
        outer = [(h, z) for h in h_tiles for z in z_tiles]
    else:
        outer = [(h, z) for z in z_tiles for h in h_tiles]
    steps = []
    for h, z in outer:
        r0, r1, a, b = h
        top = max(pad.top - r0 * layer.stride[0], 0) if layer.kind != "fc" else 0
        bottom = max((r1 - 1) * layer.stride[0] + layer.kernel[0] - pad.top - layer.in_shape[0],
                     0) if layer.kind != "fc" else 0
        left, right = (pad.left, pad.right) if layer.kind != "fc" else (0, 0)
        acc_bank = banks.take("acc", (h, z))
        tile_out_layout = own_layout(out_region, (r1 - r0, wo, z[1] - z[0]))
        for ki, k in enumerate(k_tiles):
            step = Step()
            kr = z if dw else k
            in_key = (h[:2], kr)
            bank = banks.find("in", in_key)
            if bank is None:
                bank = banks.take("in", in_key)
                if layer.kind == "fc":
                    step.loads.append(_fc_transfer(input_name, in_region, kr, bank))
                else:
                    bank_layout = own_layout(in_region, (b - a, layer.in_shape[1],
                                                         kr[1] - kr[0]))
                    step.loads.append(activation_transfer(
                        "load", input_name, in_region, (a, b), kr, "in", bank, bank_layout))
            in_bank = bank
            w_key = (z, k)
            w_bank = banks.find("w", w_key)
            if w_bank is None:
                w_bank = banks.take("w", w_key)
                off, size = w_chunks[(z, k)]
                step.loads.append(_contiguous("load", f"{layer.name}.weights",
                                              regions[f"{layer.name}.weights"], off, size, "w",
                                              w_bank))
            if ki == 0:
                q_bank = banks.find("q", z)
                if q_bank is None:
                    q_bank = banks.take("q", z)
                    off, size = q_chunks[z]
                    step.loads.append(_contiguous("load", f"{layer.name}.qparams",
                                                  regions[f"{layer.name}.qparams"], off, size,
                                                  "q", q_bank))
            last = ki == len(k_tiles) - 1
            blocks = splits(z[1] - z[0], pes)
            block_bytes = capacity.weight_bytes(layer.kind, layer.kernel, pes, kr[1] - kr[0])
            for bi, (o0, o1) in enumerate(blocks):
                step.commands.append(Command(
                    layer.kind, (r0, r1), (z[0] + o0, z[0] + o1), kr, (a, b),
                    (top, bottom, left, right), ki > 0, last, in_bank, w_bank, q_bank, acc_bank,
                    bi * block_bytes, bi * pes * (r1 - r0) * wo, layer.name))
            if last:
                step.stores.append(activation_transfer(
                    "store", layer.name, out_region, (r0, r1), z, "acc", acc_bank,
                    tile_out_layout))
            steps.append(step)
    return steps
