"""Layer fusion (seed 004's Imagination Tensor Tiling, ITT): tile groups of consecutive layers
whose intermediate tensors never leave the chip.

A tile group runs in ``passes``. Tensors are cut into bands of whole rows (a band always has the
tensor's full width, as ITT tiles "by lines"). The group's last layers produce their output
``rows`` lines a pass; that goal is propagated backwards through the group: each layer must
produce, by the end of a pass, every row its consumers in the group need for theirs
(``(r - 1) * stride + kernel - pad_top``). So the first pass is larger (the base tile: the
look-ahead of every kernel taller than its stride adds up) and the later ones are constant
(sub-tiles). Rows a consumer still needs in the next pass stay on chip (overlap lines: ITT's
HEAP region), the rest of a band is freed after the pass (SWAP region), and every weight of the
group stays on chip for the whole group (coefficients in the OCM). External traffic is therefore
each group input read once, every weight once and each group output written once; the passes
only add DMA calls.

On-chip memory of a pass: the bands of every tensor of the group (new rows plus kept overlap
lines; bands of group inputs and outputs twice, so that their DMA overlaps the compute), the
group's weights and quantization blocks, and the largest accumulator band (32 bits per output
of one layer's band). A group fits when its largest pass fits the on-chip memory (the whole of
it: no bank split beyond the double-buffered bands). Layers that need a whole tensor at once
(fully connected, global pooling) force a single pass.

``fused_partition`` chooses the groups by dynamic programming over the layer order, minimising
external bytes, then DMA cost; a single layer is always a possible group and costs what the
``optimal`` layer-by-layer schedule of it costs.
"""

from dataclasses import dataclass

from .capacity import BEAT_BYTES
from .layer_tiling import check_layer, evaluate
from .search import optimal_tiling

__all__ = ["Group", "fused_partition", "group_plan"]

ROW_LOCAL = ("conv", "depthwise", "maxpool", "avgpool", "add", "concat", "upsample")


@dataclass
class Group:
    """A tile group: its layers, passes, rows each tensor has produced by the end of each pass,
    peak on-chip bytes, and its external traffic and calls."""

    layers: list
    passes: int
    ends: dict            # tensor -> [rows produced by the end of pass p]
    starts: dict          # tensor -> [first row still on chip during pass p]
    peak_bytes: int
    inputs: list          # tensors read from external memory
    outputs: list         # tensors written to external memory
    read_bytes: int
    written_bytes: int
    calls: int
    cycles: float
    fused: bool = True

    @property
    def dram_bytes(self):
        return self.read_bytes + self.written_bytes


def _row_bytes(capacity, shape):
    lay = capacity.layout(shape)
    return lay.row_stride * lay.bits // 8


def _weight_bytes(layer, capacity):
    return sum(capacity.layer_weight_bytes(layer))


def _needs_whole(layer):
    if layer.kind == "fc":
        return True
    if layer.kind in ("maxpool", "avgpool"):
        return layer.kernel[0] >= layer.in_shape[0]
    return False


def _need_end(layer, out_end, in_height):
    """Rows of its input a layer needs to produce its first ``out_end`` output rows."""
    if out_end <= 0:
        return 0
    if layer.kind in ("add", "concat"):
        return min(out_end, in_height)
    if layer.kind == "upsample":
        factor = layer.out_shape[0] // layer.in_shape[0]
        return min(-(-out_end // factor), in_height)
    if layer.kind == "fc":
        return in_height
    kh, sh, top = layer.kernel[0], layer.stride[0], layer.padding.top
    return max(0, min((out_end - 1) * sh + kh - top, in_height))


def _need_start(layer, out_start, in_height):
    """First input row a layer reads for output rows from ``out_start`` on."""
    if layer.kind in ("add", "concat"):
        return out_start
    if layer.kind == "upsample":
        return out_start // (layer.out_shape[0] // layer.in_shape[0])
    if layer.kind == "fc":
        return 0
    return min(max(0, out_start * layer.stride[0] - layer.padding.top), in_height)


def group_plan(layers, network, capacity, cost, shapes=None, consumers=None, weights=None):
    """The :class:`Group` of ``layers`` (consecutive, in execution order) with the fewest passes
    that fit, or ``None`` if even the most passes do not fit. ``shapes``, ``consumers`` and
    ``weights`` (the layers' weight and quantization bytes) are derived when not given."""
    shapes = shapes or network.shapes
    consumers = consumers or _consumers(network)
    names = {layer.name for layer in layers}
    inputs = []
    for layer in layers:
        for x in layer.inputs:
            if x not in names and x not in inputs:
                inputs.append(x)
    outputs = [layer.name for layer in layers
               if any(c not in names for c in consumers.get(layer.name, []))
               or not consumers.get(layer.name)]
    finals = [layer for layer in layers
              if not any(c in names for c in consumers.get(layer.name, []))]
    if weights is None:
        weights = sum(_weight_bytes(layer, capacity) for layer in layers if layer.weighted)
    max_passes = 1 if any(_needs_whole(layer) for layer in layers) else max(
        shapes[layer.name][0] for layer in finals)
    for layer in layers:
        if layer.weighted:
            check_layer(layer, capacity)
    fit = {}

    def plan(passes):
        if passes not in fit:
            fit[passes] = _plan(layers, finals, inputs, outputs, passes, shapes, capacity,
                                weights)
        return fit[passes]

    # more passes need less memory (smaller bands): the fewest that fit, by bisection
    if weights > capacity.total_bytes or plan(max_passes) is None:
        return None
    low, high = 1, max_passes
    while low < high:
        mid = (low + high) // 2
        if plan(mid) is not None:
            high = mid
        else:
            low = mid + 1
    if plan(low) is None:       # feasibility was not monotone here: the most passes fit
        low = max_passes
    ends, starts, peak = plan(low)
    return _traffic(layers, ends, starts, peak, inputs, outputs, low, shapes, capacity, cost,
                    weights)


def _consumers(network):
    out = {}
    for layer in network.layers:
        for x in layer.inputs:
            out.setdefault(x, []).append(layer.name)
    return out


def _plan(layers, finals, inputs, outputs, passes, shapes, capacity, weights):
    by_name = {layer.name: layer for layer in layers}
    ends = {}
    for layer in finals:
        h = shapes[layer.name][0]
        ends[layer.name] = [min(h, -(-h * (p + 1) // passes)) for p in range(passes)]
    # backwards: every tensor produces what its consumers in the group need by each pass
    for layer in reversed(layers):
        if layer.name not in ends:
            ends[layer.name] = [0] * passes
        for x in layer.inputs:
            h = shapes[x][0]
            need = [_need_end(layer, e, h) for e in ends[layer.name]]
            old = ends.get(x, [0] * passes)
            ends[x] = [max(a, b) for a, b in zip(old, need)]
    for x in ends:
        ends[x][-1] = shapes[x][0]
        for p in range(passes - 2, -1, -1):           # monotone
            ends[x][p] = min(ends[x][p], ends[x][p + 1])
    # the first row each tensor must still hold in pass p: what its consumers read from
    readers = {x: [layer for layer in layers if x in layer.inputs] for x in ends}
    starts = {}
    for x in ends:
        starts[x] = []
        for p in range(passes):
            first = ends[x][p - 1] if p else 0
            for layer in readers[x]:
                out_start = ends[layer.name][p - 1] if p else 0
                first = min(first, _need_start(layer, out_start, shapes[x][0]))
            starts[x].append(first)
    peak = 0
    for p in range(passes):
        total = weights
        acc = 0
        for x, e in ends.items():
            rows = e[p] - starts[x][p]
            band = rows * _row_bytes(capacity, shapes[x])
            total += band * (2 if x in inputs or x in outputs else 1)
            if x in by_name and by_name[x].weighted:
                new = e[p] - (e[p - 1] if p else 0)
                h, w, c = shapes[x]
                acc = max(acc, 4 * new * w * -(-c // capacity.pes) * capacity.pes)
        peak = max(peak, total + acc)
    if peak > capacity.total_bytes:
        return None
    return ends, starts, peak


def _band_traffic(tensors, ends, passes, shapes, capacity):
    """(bytes, calls) of moving each tensor's new rows once per pass, one band a call."""
    moved = calls = 0
    for x in tensors:
        rb = _row_bytes(capacity, shapes[x])
        for p in range(passes):
            rows = ends[x][p] - (ends[x][p - 1] if p else 0)
            if rows:
                moved += rows * rb
                calls += 1
    return moved, calls


def _traffic(layers, ends, starts, peak, inputs, outputs, passes, shapes, capacity, cost,
             weights):
    read, calls_in = _band_traffic(inputs, ends, passes, shapes, capacity)
    written, calls_out = _band_traffic(outputs, ends, passes, shapes, capacity)
    calls = calls_in + calls_out
    weighted = [layer for layer in layers if layer.weighted]
    read += weights
    calls += 2 * len(weighted)
    beats = (read + written) // BEAT_BYTES
    return Group([layer.name for layer in layers], passes, ends, starts, peak, inputs, outputs,
                 read, written, calls, cost.cycles(calls, calls, beats))


def _single(layer, network, capacity, cost, shapes):
    """A one-layer group costs its layer-by-layer schedule."""
    if layer.kind == "concat":
        return Group([layer.name], 1, {}, {}, 0, [], [], 0, 0, 0, 0.0, fused=False)
    if not layer.weighted:
        read = sum(capacity.layout(shapes[x]).bytes for x in layer.inputs)
        written = capacity.layout(layer.out_shape).bytes
        calls = len(layer.inputs) + 1
        return Group([layer.name], 1, {}, {}, 0, list(layer.inputs), [layer.name], read,
                     written, calls, cost.cycles(calls, calls, (read + written) // BEAT_BYTES),
                     fused=False)
    t = optimal_tiling(layer, capacity, cost)
    res = evaluate(layer, capacity, cost, t.rows, t.out_channels, t.in_channels, t.order)
    return Group([layer.name], 1, {}, {}, int(sum(res.footprint)), list(layer.inputs),
                 [layer.name], int(res.read_bytes), int(res.written_bytes),
                 int(res.total_calls), float(res.cycles), fused=False)


def fused_partition(network, capacity, cost, max_group=64):
    """The tile groups minimising external bytes (then DMA cost), in layer order."""
    shapes = network.shapes
    consumers = _consumers(network)
    layers = network.layers
    n = len(layers)
    singles = [_single(layer, network, capacity, cost, shapes) for layer in layers]
    weight_bytes = [_weight_bytes(layer, capacity) if layer.weighted else 0 for layer in layers]
    best = [(0, 0.0, None)] + [None] * n           # (bytes, cycles, groups)
    for j in range(1, n + 1):
        candidates = []
        prev = best[j - 1]
        g = singles[j - 1]
        candidates.append((prev[0] + g.dram_bytes, prev[1] + g.cycles, (prev[2], g)))
        weights = weight_bytes[j - 1]
        for i in range(j - 2, max(0, j - max_group) - 1, -1):
            weights += weight_bytes[i]
            if weights > capacity.total_bytes:
                break           # every longer group holds these weights too
            group = group_plan(layers[i:j], network, capacity, cost, shapes, consumers,
                               weights)
            if group is None:
                continue
            b = best[i]
            candidates.append((b[0] + group.dram_bytes, b[1] + group.cycles, (b[2], group)))
        best[j] = min(candidates, key=lambda c: (c[0], c[1]))
    groups = []
    link = best[n][2]
    while link is not None:
        link, group = link
        groups.append(group)
    return groups[::-1]
