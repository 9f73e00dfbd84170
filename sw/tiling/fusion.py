"""Layer fusion (seed 004's Imagination Tensor Tiling, ITT): tile groups of consecutive layers
whose intermediate tensors never leave the chip.

A tile group is one of two kinds.

* **Banded** (``passes > 1``): the group runs in passes over bands of whole rows (a band always
  has the tensor's full width, as ITT tiles "by lines"). The group's last layers produce an
  equal share of their rows a pass; that goal is propagated backwards, each layer producing by
  the end of a pass every row its consumers in the group need (``(r - 1) * stride + kernel -
  pad_top``), so the first pass is larger (the base tile) and the later ones are constant
  (sub-tiles). Rows a consumer still needs in the next pass stay on chip (overlap lines:
  ITT's HEAP region), the others are freed as soon as their last reader has run. Each layer's
  weights are loaded in the first pass and stay until its last pass.
* **Streamed** (one pass): every layer computes its whole output from whole input tensors,
  one PE block of output channels at a time, and the weights stream through the chip one PE
  block at a time (loaded once, freed after use). So layers with megabytes of weights fuse,
  as long as the tensors that are alive together fit.

External traffic is the same for both: each group input read once, every weight once, each
group output written once; the passes only add DMA calls.

On-chip memory is counted as the validator replays it (``validate.group_occupancy``): an item
(a row of a tensor, a layer's weights or one PE block of them, a quantization block) occupies
memory from the step that writes it to the last step that reads it; with double buffering the
next step's loads and the previous step's stores occupy memory during a step too; a weighted
layer's step adds its accumulators (32 bits per output pixel of its band for one PE block).
``_banded_peak`` and ``_streamed_peak`` compute it in closed form (numpy over passes); a group fits
when its largest step fits the on-chip memory, and a banded group uses the fewest passes
that fit (bisection).

``fused_partition`` chooses the groups by dynamic programming over the layer order, minimising
external bytes, then DMA cost; a single layer is always a possible group and costs what the
``optimal`` layer-by-layer schedule of it costs.
"""

from dataclasses import dataclass

import numpy as np

from .capacity import BEAT_BYTES, MAX_QBLOCK_CHANNELS
from .layer_tiling import check_layer, evaluate
from .search import optimal_tiling

__all__ = ["Group", "fused_partition", "group_plan"]


@dataclass
class Group:
    """A tile group: its layers, passes, rows each tensor has produced by the end of each pass,
    peak on-chip bytes, and its external traffic and calls. ``streamed``: one pass, weights
    streamed a PE block at a time."""

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
    streamed: bool = False

    @property
    def dram_bytes(self):
        return self.read_bytes + self.written_bytes


def _weight_bytes(layer, capacity):
    return sum(capacity.layer_weight_bytes(layer))


def _needs_whole(layer):
    if layer.kind == "fc":
        return True
    if layer.kind in ("maxpool", "avgpool"):
        return layer.kernel[0] >= layer.in_shape[0]
    return False


def _need_end(layer, out_end, in_height):
    """Rows of its input a layer needs to produce its first ``out_end`` output rows (numpy
    arrays work element-wise)."""
    out_end = np.asarray(out_end)
    if layer.kind in ("add", "concat"):
        need = out_end
    elif layer.kind == "upsample":
        factor = layer.out_shape[0] // layer.in_shape[0]
        need = -(-out_end // factor)
    elif layer.kind == "fc":
        need = np.full_like(out_end, in_height)
    else:
        kh, sh, top = layer.kernel[0], layer.stride[0], layer.padding.top
        need = (out_end - 1) * sh + kh - top
    return np.where(out_end <= 0, 0, np.clip(need, 0, in_height))


def _need_start(layer, out_start, in_height):
    """First input row a layer reads for output rows from ``out_start`` on (numpy arrays work
    element-wise)."""
    out_start = np.asarray(out_start)
    if layer.kind in ("add", "concat"):
        return out_start
    if layer.kind == "upsample":
        return out_start // (layer.out_shape[0] // layer.in_shape[0])
    if layer.kind == "fc":
        return np.zeros_like(out_start)
    return np.minimum(np.maximum(0, out_start * layer.stride[0] - layer.padding.top), in_height)


class _Context:
    """What the planner needs about a network, computed once."""

    def __init__(self, network, capacity, cost, row_bytes=None, effective=None, kinds=None):
        self.network = network
        self.capacity = capacity
        self.cost = cost
        self.shapes = network.shapes
        self.consumers = {}
        for layer in network.layers:
            for x in layer.inputs:
                self.consumers.setdefault(x, []).append(layer.name)
        self.row_bytes = {}
        for x, shape in self.shapes.items():
            if row_bytes is not None:
                self.row_bytes[x] = row_bytes(x)
            else:
                lay = capacity.layout(shape)
                self.row_bytes[x] = lay.row_stride * lay.bits // 8
        self.tensor_bytes = {x: self.row_bytes[x] * self.shapes[x][0] for x in self.shapes}
        self.weights, self.qparams, self.chunk = {}, {}, {}
        pes = capacity.pes
        for layer in network.layers:
            if layer.weighted:
                layer = (effective or {}).get(layer.name, layer)
                w, q = capacity.layer_weight_bytes(layer)
                self.weights[layer.name], self.qparams[layer.name] = w, q
                self.chunk[layer.name] = capacity.weight_bytes(layer.kind, layer.kernel, pes,
                                                               layer.in_channels)
        self.whole = {layer.name: _needs_whole(layer) for layer in network.layers}
        self.effective = effective or {}
        self.kinds = kinds or {}


def _shape_group(layers, ctx):
    names = {layer.name for layer in layers}
    inputs = []
    for layer in layers:
        for x in layer.inputs:
            if x not in names and x not in inputs:
                inputs.append(x)
    outputs = [layer.name for layer in layers
               if any(c not in names for c in ctx.consumers.get(layer.name, []))
               or not ctx.consumers.get(layer.name)]
    return inputs, outputs


def group_plan(layers, network, capacity, cost, ctx=None, kinds=("streamed", "banded"),
               fewest_passes=True):
    """The cheapest feasible :class:`Group` of ``layers`` (consecutive, in execution order):
    streamed, or banded with the fewest passes that fit (``fewest_passes=False``: the most
    passes, the most frugal, which is enough to know that it fits); ``None`` if neither
    fits."""
    ctx = ctx or _Context(network, capacity, cost)
    for layer in layers:
        if layer.weighted:
            check_layer(layer, capacity)
    options = []
    if "streamed" in kinds:
        options.append(_streamed(layers, ctx))
    if "banded" in kinds:
        options.append(_banded(layers, ctx, fewest_passes))
    options = [g for g in options if g is not None]
    return min(options, key=lambda g: g.cycles) if options else None


# --- streamed groups ---------------------------------------------------------------------

def _streamed_peak(layers, inputs, outputs, ctx):
    """Largest on-chip occupancy of the steps of a streamed group (see the module docstring):
    a weighted layer runs one step per PE block of output channels, the others one step.
    Tensors live from their producer's first step (group inputs: the first step) to their last
    reader's last step, so they are constant over a layer's steps; the weight blocks, the
    next step's loads and the previous step's stores are what changes within a layer."""
    cap = ctx.capacity
    n = len(layers)
    index = {layer.name: i for i, layer in enumerate(layers)}
    act = np.zeros(n + 1, np.int64)
    for x in [*inputs, *(layer.name for layer in layers)]:
        start = index.get(x, 0)
        end = max([index[c] for c in ctx.consumers.get(x, []) if c in index] + [start])
        act[start] += ctx.tensor_bytes[x]
        act[end + 1] -= ctx.tensor_bytes[x]
    act = np.cumsum(act)[:n]
    first_load = [0] * (n + 1)      # bytes the first step of each layer loads
    first_load[0] = sum(ctx.tensor_bytes[x] for x in inputs)
    blocks, chunk, fixed, store = [], [], [], []
    for i, layer in enumerate(layers):
        if layer.weighted:
            c, q = ctx.chunk[layer.name], ctx.qparams[layer.name]
            blocks.append(-(-layer.out_channels // cap.pes))
            chunk.append(c)
            first_load[i] += c + q
            fixed.append(c + q + 4 * layer.out_shape[0] * layer.out_shape[1] * cap.pes)
        else:
            blocks.append(1)
            chunk.append(0)
            fixed.append(0)
        store.append(ctx.tensor_bytes[layer.name] if layer.name in outputs else 0)
    double = cap.banks > 1
    peak = 0
    for i in range(n):
        base = int(act[i]) + fixed[i]
        nxt_layer = first_load[i + 1] if i + 1 < n else 0
        if not double:
            peak = max(peak, base)
            continue
        prev_store = store[i - 1] if i else 0
        if blocks[i] == 1:
            peak = max(peak, base + nxt_layer + prev_store)
        else:
            peak = max(peak, base + chunk[i] + prev_store, base + nxt_layer)
    return peak


def _streamed(layers, ctx):
    inputs, outputs = _shape_group(layers, ctx)
    peak = _streamed_peak(layers, inputs, outputs, ctx)
    if peak > ctx.capacity.total_bytes:
        return None
    ends = {x: [ctx.shapes[x][0]] for x in [*inputs, *(layer.name for layer in layers)]}
    starts = {x: [0] for x in ends}
    read = sum(ctx.tensor_bytes[x] for x in inputs)
    written = sum(ctx.tensor_bytes[x] for x in outputs)
    weighted = [layer for layer in layers if layer.weighted]
    read += sum(ctx.weights[la.name] + ctx.qparams[la.name] for la in weighted)
    calls = len(inputs) + len(outputs) + sum(
        -(-la.out_channels // ctx.capacity.pes) + 1 for la in weighted)
    beats = (read + written) // BEAT_BYTES
    return Group([layer.name for layer in layers], 1, ends, starts, peak, inputs, outputs,
                 read, written, calls, ctx.cost.cycles(calls, calls, beats), streamed=True)


# --- banded groups -----------------------------------------------------------------------

def _ends(layers, finals, passes, ctx):
    """Rows every tensor of the group has by the end of each pass (numpy, [passes])."""
    shapes = ctx.shapes
    ends = {}
    p = np.arange(1, passes + 1)
    for layer in finals:
        h = shapes[layer.name][0]
        ends[layer.name] = np.minimum(h, -(-h * p // passes))
    for layer in reversed(layers):
        if layer.name not in ends:
            ends[layer.name] = np.zeros(passes, np.int64)
        for x in layer.inputs:
            h = shapes[x][0]
            ends[x] = np.maximum(ends.get(x, 0), _need_end(layer, ends[layer.name], h))
    for x, e in ends.items():
        e[-1] = shapes[x][0]
        ends[x] = np.minimum.accumulate(e[::-1])[::-1]      # monotone
    return ends


def _banded_peak(layers, inputs, outputs, passes, ctx):
    """(peak bytes, ends, starts) of a banded group in ``passes`` passes."""
    cap = ctx.capacity
    names = {layer.name for layer in layers}
    finals = [layer for layer in layers
              if not any(c in names for c in ctx.consumers.get(layer.name, []))]
    ends = _ends(layers, finals, passes, ctx)
    prev = {x: np.concatenate([[0], e[:-1]]) for x, e in ends.items()}
    index = {layer.name: i for i, layer in enumerate(layers)}
    n = len(layers)
    new = np.array([ends[la.name] - prev[la.name] for la in layers])      # [n, passes]
    active = new > 0
    # the first step of a pass (where its loads go): the first layer with new rows
    head = np.argmax(active, axis=0)                                       # [passes]
    pos = np.arange(n)[:, None]                                            # position i
    big = np.iinfo(np.int64).max // 4
    total = np.zeros((n, passes), np.int64)
    starts = {}
    for x in ends:
        j = index.get(x)
        hi = np.where(pos >= j, ends[x], prev[x]) if j is not None else \
            np.broadcast_to(ends[x], (n, passes))
        lo = np.full((n, passes), big)
        first = prev[x].copy()
        for c in ctx.consumers.get(x, []):
            k = index.get(c)
            if k is None:
                continue
            layer = layers[k]
            now = _need_start(layer, prev[c], ctx.shapes[x][0])
            nxt = _need_start(layer, ends[c], ctx.shapes[x][0])
            lo = np.minimum(lo, np.where(pos <= k, now, nxt))
            first = np.minimum(first, now)
        starts[x] = first
        if j is None:
            written = pos == head[None, :]
        else:
            written = np.broadcast_to(pos == j, (n, passes))
        lo = np.where(written, np.minimum(lo, prev[x]), lo)
        total += np.maximum(0, hi - np.minimum(lo, hi)) * ctx.row_bytes[x]
    # steps in order: (pass, layer) with new rows
    order_p, order_i = np.nonzero(active.T)
    steps = len(order_p)
    step_of = np.full((passes, n), -1)
    step_of[order_p, order_i] = np.arange(steps)
    occ = total[order_i, order_p]
    loads = np.zeros(steps, np.int64)
    stores = np.zeros(steps, np.int64)
    w_live = np.zeros(steps + 1, np.int64)
    in_rows = sum(((ends[x] - prev[x]) * ctx.row_bytes[x] for x in inputs),
                  np.zeros(passes, np.int64))
    heads = step_of[np.arange(passes), head]
    np.add.at(loads, heads[heads >= 0], in_rows[heads >= 0])
    out_set = set(outputs)
    for i, layer in enumerate(layers):
        act = np.flatnonzero(active[i])
        if not len(act):
            continue
        mine = step_of[act, i]
        if layer.weighted:
            w = ctx.weights[layer.name] + ctx.qparams[layer.name]
            w_live[mine[0]] += w
            w_live[mine[-1] + 1] -= w
            loads[mine[0]] += w
            occ[mine] += 4 * new[i, act] * layer.out_shape[1] * cap.pes
        if layer.name in out_set:
            stores[mine] += new[i, act] * ctx.row_bytes[layer.name]
    occ = occ + np.cumsum(w_live)[:steps]
    if cap.banks > 1 and steps:
        occ[:-1] += loads[1:]
        occ[1:] += stores[:-1]
    peak = int(occ.max()) if steps else 0
    return peak, {x: [int(v) for v in e] for x, e in ends.items()}, \
        {x: [int(v) for v in s] for x, s in starts.items()}


def _banded(layers, ctx, fewest_passes=True):
    if any(ctx.whole[layer.name] for layer in layers) or len(layers) < 2:
        return None
    inputs, outputs = _shape_group(layers, ctx)
    names = {layer.name for layer in layers}
    finals = [layer for layer in layers
              if not any(c in names for c in ctx.consumers.get(layer.name, []))]
    max_passes = max(ctx.shapes[layer.name][0] for layer in finals)
    if max_passes < 2:
        return None
    weights = sum(ctx.weights.get(layer.name, 0) + ctx.qparams.get(layer.name, 0)
                  for layer in layers)
    if weights > ctx.capacity.total_bytes:
        return None
    fit = {}

    def plan(passes):
        if passes not in fit:
            peak, ends, starts = _banded_peak(layers, inputs, outputs, passes, ctx)
            fit[passes] = (peak, ends, starts) if peak <= ctx.capacity.total_bytes else None
        return fit[passes]

    if plan(max_passes) is None:
        return None
    low, high = (2 if fewest_passes else max_passes), max_passes
    while low < high:       # more passes need less memory (smaller bands): bisection
        mid = (low + high) // 2
        if plan(mid) is not None:
            high = mid
        else:
            low = mid + 1
    if plan(low) is None:
        low = max_passes
    peak, ends, starts = plan(low)
    return _band_traffic(layers, ends, starts, peak, inputs, outputs, low, ctx)


def _band_traffic(layers, ends, starts, peak, inputs, outputs, passes, ctx):
    """Each tensor's new rows moved once per pass, one band a call; weights once."""
    moved = {}
    calls = 0
    for x in [*inputs, *outputs]:
        e = ends[x]
        rows = [e[p] - (e[p - 1] if p else 0) for p in range(passes)]
        moved[x] = sum(rows) * ctx.row_bytes[x]
        calls += sum(1 for r in rows if r)
    read = sum(moved[x] for x in inputs)
    written = sum(moved[x] for x in outputs)
    weighted = [layer for layer in layers if layer.weighted]
    read += sum(ctx.weights[la.name] + ctx.qparams[la.name] for la in weighted)
    calls += 2 * len(weighted)
    beats = (read + written) // BEAT_BYTES
    return Group([layer.name for layer in layers], passes, ends, starts, peak, inputs, outputs,
                 read, written, calls, ctx.cost.cycles(calls, calls, beats))


# --- the partition -----------------------------------------------------------------------

def _single(layer, ctx):
    """A one-layer group costs its layer-by-layer schedule."""
    capacity, cost = ctx.capacity, ctx.cost
    if layer.kind == "concat":
        return Group([layer.name], 1, {}, {}, 0, [], [], 0, 0, 0, 0.0, fused=False)
    if not layer.weighted:
        read = sum(ctx.tensor_bytes[x] for x in layer.inputs)
        written = ctx.tensor_bytes[layer.name]
        calls = len(layer.inputs) + 1
        return Group([layer.name], 1, {}, {}, 0, list(layer.inputs), [layer.name], read,
                     written, calls, cost.cycles(calls, calls, (read + written) // BEAT_BYTES),
                     fused=False)
    kinds = ctx.kinds.get(layer.name, ("hwc", "hwc"))
    layer = ctx.effective.get(layer.name, layer)
    t = optimal_tiling(layer, capacity, cost, kinds)
    res = evaluate(layer, capacity, cost, t.rows, t.out_channels, t.in_channels, t.order,
                   kinds=kinds)
    return Group([layer.name], 1, {}, {}, int(sum(res.footprint)), list(layer.inputs),
                 [layer.name], int(res.read_bytes), int(res.written_bytes),
                 int(res.total_calls), float(res.cycles), fused=False)


def _group_bytes(layers, ctx):
    """External bytes of fusing ``layers`` (whatever the kind and passes)."""
    inputs, outputs = _shape_group(layers, ctx)
    return (sum(ctx.tensor_bytes[x] for x in [*inputs, *outputs])
            + sum(ctx.weights.get(la.name, 0) + ctx.qparams.get(la.name, 0) for la in layers))


def fused_partition(network, capacity, cost, max_group=64, row_bytes=None, effective=None,
                    kinds=None):
    """The tile groups minimising external bytes (then DMA cost), in layer order.

    A group's bytes do not depend on how it is run, so the search first finds, for every
    end layer, the groups that fit and the bytes they move, and plans passes only for the
    groups it keeps. Groups grow backwards from their last layer until one does not fit (a
    longer group holds at least the same tensors at once)."""
    ctx = _Context(network, capacity, cost, row_bytes, effective, kinds)
    layers = network.layers
    n = len(layers)
    singles = [_single(layer, ctx) for layer in layers]
    best = [(0, 0.0, None)] + [None] * n           # (bytes, cycles, groups)
    for j in range(1, n + 1):
        prev = best[j - 1]
        g = singles[j - 1]
        candidates = [(prev[0] + g.dram_bytes, prev[1] + g.cycles, (prev[2], g))]
        misses = {"streamed": 0, "banded": 0}
        for i in range(j - 2, max(0, j - max_group) - 1, -1):
            kinds = [k for k, m in misses.items() if m < 2]
            if not kinds:
                break           # longer groups hold these tensors too
            if best[i][0] + _group_bytes(layers[i:j], ctx) > candidates[0][0]:
                continue        # moves more than leaving the last layer alone: cannot win
            group = None
            for kind in kinds:
                found = group_plan(layers[i:j], network, capacity, cost, ctx, (kind,), False)
                misses[kind] = 0 if found else misses[kind] + 1
                if found and (group is None or found.cycles < group.cycles):
                    group = found
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
    # the kept banded groups: the fewest passes that fit
    return [group_plan([network.layer(x) for x in g.layers], network, capacity, cost, ctx)
            if g.fused and not g.streamed else g for g in groups[::-1]]


def qblock_ranges(channels):
    """The output-channel ranges of a layer's quantization blocks (at most 256 channels)."""
    return [(a, min(a + MAX_QBLOCK_CHANNELS, channels))
            for a in range(0, channels, MAX_QBLOCK_CHANNELS)]
