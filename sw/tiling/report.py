"""Per-layer and whole-network figures of a schedule, counted from its transfers, and the
lower bounds: compulsory traffic and a Hong-Kung-style I/O bound."""

from dataclasses import dataclass
from math import sqrt

from .capacity import BEAT_BYTES, Capacity
from .cost import DmaCost
from .layer_tiling import evaluate

__all__ = ["LayerFigures", "fused_floor", "hong_kung_bound", "layer_bound", "layer_figures",
           "lower_bound", "network_totals"]


@dataclass
class LayerFigures:
    """What one layer of a schedule costs (bytes are bus bytes: whole 64-bit beats)."""

    layer: str
    kind: str
    tiles: int
    commands: int
    calls: int
    read_bytes: int
    written_bytes: int
    cycles: float
    onchip_use: float      # largest tile / what one tile may occupy, 0..1
    tiling: str

    @property
    def dram_bytes(self):
        return self.read_bytes + self.written_bytes


def layer_figures(schedule, network):
    """[:class:`LayerFigures`] of every layer, counted from the schedule's transfers."""
    cost = DmaCost(**schedule.cost)
    capacity = Capacity.from_dict(schedule.capacity)
    out = []
    for ls in schedule.layers:
        transfers = list(ls.transfers())
        calls = len(transfers)
        segments = sum(t.segments for t in transfers)
        beats = sum(t.beats for t in transfers)
        read = sum(t.beats for t in transfers if t.direction == "load") * BEAT_BYTES
        written = sum(t.beats for t in transfers if t.direction == "store") * BEAT_BYTES
        use, text = 0.0, "host"
        if ls.tiling is not None:
            t = ls.tiling
            layer = network.layer(ls.layer)
            regions = schedule.regions
            kinds = (regions[layer.inputs[0]].layout, regions[layer.name].layout)
            if layer.kind == "fc":
                from .layouts import effective_fc
                from .schedule import region_layout

                layer = effective_fc(layer, region_layout(regions[layer.inputs[0]]))
            res = evaluate(layer, capacity, cost, t.rows, t.out_channels, t.in_channels,
                           t.order, kinds=kinds)
            use = _use(capacity, *(int(v) for v in res.footprint))
            text = (f"{t.rows}r x {t.out_channels}co x {t.in_channels}ci {t.order}"
                    if ls.kind != "depthwise" else f"{t.rows}r x {t.out_channels}c {t.order}")
        elif ls.group is not None:
            use = ls.group["peak_bytes"] / capacity.total_bytes
            text = f"{len(ls.group['layers'])} layers fused, {ls.group['passes']} passes"
        elif ls.kind == "concat":
            text = "view"
        out.append(LayerFigures(ls.layer, ls.kind, len(ls.steps),
                                sum(1 for _ in ls.commands()), calls, read, written,
                                cost.cycles(calls, segments, beats), use, text))
    return out


def _use(capacity, in_b, w_b, acc_b):
    if capacity.ocm_bytes is not None:
        return capacity.banks * (in_b + w_b + acc_b) / capacity.ocm_bytes
    bi, bw, ba = capacity.bank_bytes
    return max(in_b / bi, w_b / bw, acc_b / ba)


def _rows_read(layer):
    """Input rows a layer reads at all (a stride larger than the kernel skips rows)."""
    h = layer.in_shape[0]
    if layer.kind not in ("conv", "depthwise", "maxpool", "avgpool"):
        return h
    kh, sh, top = layer.kernel[0], layer.stride[0], layer.padding.top
    used = set()
    for r in range(layer.out_shape[0]):
        used.update(range(max(r * sh - top, 0), min(r * sh - top + kh, h)))
    return len(used)


def lower_bound(network, capacity, cost):
    """[(layer, bytes, cycles)]: the compulsory traffic -- every input row the layer reads,
    its weights, quantization parameters and output, each moved once in one call."""
    out = []
    shapes = network.shapes
    for layer in network.layers:
        if layer.kind == "concat":
            out.append((layer.name, 0, 0.0))
            continue
        beats = 0
        for x in layer.inputs:
            lay = capacity.layout(shapes[x])
            beats += _rows_read(layer) * lay.row_stride * lay.bits // 64
        bits = capacity.out_bits if layer.weighted else None
        beats += capacity.layout(layer.out_shape, bits).bytes // BEAT_BYTES
        calls = len(layer.inputs) + 1
        if layer.weighted:
            beats += sum(capacity.layer_weight_bytes(layer)) // BEAT_BYTES
            calls += 2
        out.append((layer.name, beats * BEAT_BYTES, cost.cycles(calls, calls, beats)))
    return out


def hong_kung_bound(network, capacity):
    """[(layer, bytes)]: a red-blue pebble game I/O lower bound for each convolution and fully
    connected layer computed with the whole on-chip memory (``docs/tiling.md`` derives it):

    ``Q >= 2 * MACs / sqrt(R * S) - 2 * S`` elements moved between external and on-chip memory,

    the bound of Smith et al. for matrix products (A Tight I/O Lower Bound for Matrix
    Multiplication, 2019), with the convolution's input reuse ``R`` of Chen, Han and Wang
    (Communication Lower Bound in Convolution Accelerators, HPCA 2020). ``R =
    ceil(kh / sh) * ceil(kw / sw)``, the most windows one input element joins (Chen et al.
    write ``kh * kw / (sh * sw)``, the average, equal to the most when the stride divides the
    kernel and smaller otherwise; the argument needs the most). Elements are counted at the
    narrowest width ``e`` of the layer's operands (activations, weights, outputs): ``S`` is
    the on-chip bytes (both banks) over ``e``, and every element moved is at least ``e``
    bytes, so ``e * Q`` bytes is a floor for any schedule, tiled or not. Depthwise layers
    and the host's layers: 0 (they are not matrix products and no term is derived for them;
    their compulsory traffic stands as their bound). ``layer_bound`` takes the larger of this
    and the compulsory traffic."""
    p = capacity.precision
    elem = min(p.act_bits, p.weight_bits, capacity.out_bits) / 8
    s = capacity.total_bytes / elem
    out = []
    for layer in network.layers:
        if layer.kind not in ("conv", "fc"):
            out.append((layer.name, 0))
            continue
        (kh, kw), (sh, sw) = layer.kernel, layer.stride
        r = -(-kh // sh) * -(-kw // sw)
        q = max(0.0, 2 * layer.macs / sqrt(r * s) - 2 * s)
        out.append((layer.name, int(q * elem)))
    return out


def layer_bound(network, capacity, cost):
    """[(layer, compulsory bytes, Hong-Kung bytes, bound bytes)]: the larger of the two is
    what no schedule of the layer on this memory moves less than."""
    return [(name, c, h, max(c, h)) for (name, c, _), (_, h) in
            zip(lower_bound(network, capacity, cost), hong_kung_bound(network, capacity))]


def fused_floor(network, capacity):
    """Bytes of the ideal whole-network fusion: the network inputs, every weight and
    quantization block, and the network outputs, each moved once."""
    from .fusion import _weight_bytes

    shapes = network.shapes
    total = sum(capacity.layout(shapes[x]).bytes for x in network.inputs)
    total += sum(_weight_bytes(layer, capacity) for layer in network.layers if layer.weighted)
    total += sum(capacity.layout(shapes[x]).bytes for x in network.outputs)
    return total


def network_totals(figures):
    """Sums over layers: (tiles, commands, calls, read, written, cycles)."""
    return (sum(f.tiles for f in figures), sum(f.commands for f in figures),
            sum(f.calls for f in figures), sum(f.read_bytes for f in figures),
            sum(f.written_bytes for f in figures), sum(f.cycles for f in figures))
