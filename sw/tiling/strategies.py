"""Whole-network schedules: each layer tiled by a strategy, tensors placed, steps listed.

Strategies (``STRATEGIES``):

* ``thesis``: seed 002's tiling algorithm (``sw.tiling.thesis``), with its loop order;
* ``naive``: seed 000's naive choice, the tiles that fill the most on-chip memory;
* ``median``: a seed-000-style hand choice, the median-cost tiling among those that fill at
  least 80 % of the on-chip memory (rows outermost);
* ``optimal``: the lowest DMA cost over every tiling and loop order (``sw.tiling.search``);
* ``fused``: tile groups of layers whose intermediate tensors stay on chip (``sw.tiling.fusion``,
  seed 004's ITT); layers left alone are scheduled as by ``optimal``.

Operators without weights (pooling, add, upsample) run on the host in these layer-by-layer
schedules: they read their inputs and write their output once, as whole-tensor transfers.
``concat`` is a view: its producers store their outputs straight into its channels
(:func:`concat_views`), so it moves nothing; an input that cannot be a view (a network input,
a tensor two concats take) is copied into its channels by the host.
"""

from dataclasses import asdict, replace

from .capacity import Capacity, TilingError
from .cost import DEFAULT_COST
from .fusion import fused_partition
from .layer_tiling import check_layer, splits
from .layouts import resolve_layouts
from .schedule import (
    Allocator,
    Command,
    LayerSchedule,
    Schedule,
    Step,
    Transfer,
    activation_transfer,
    fc_input,
    materialize,
    own_layout,
    qparam_chunks,
    region_layout,
    weight_chunks,
)
from .search import median_tiling, naive_tiling, optimal_tiling
from .thesis import thesis_tiling

__all__ = ["STRATEGIES", "band_rows", "build_schedule", "concat_views", "root_of", "tile_layer"]

STRATEGIES = {
    "thesis": thesis_tiling,
    "naive": naive_tiling,
    "median": median_tiling,
    "optimal": optimal_tiling,
    "fused": optimal_tiling,      # for the layers no group takes
}


def tile_layer(strategy, layer, capacity, cost=DEFAULT_COST, kinds=("hwc", "hwc")):
    """The :class:`~sw.tiling.layer_tiling.Tiling` ``strategy`` picks for one layer whose
    input and output are laid out as ``kinds`` (``thesis`` ignores layouts)."""
    try:
        choose = STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown strategy {strategy!r}; one of "
                         f"{', '.join(STRATEGIES)}") from None
    if strategy == "thesis":
        return choose(layer, capacity, cost)
    return choose(layer, capacity, cost, kinds)


def _bits(layer, capacity):
    """Element width of a layer's output tensor."""
    return capacity.out_bits if layer.weighted else capacity.act_bits


def _aligned(offset, bits, layout):
    if layout == "blocked":
        return offset % (64 // bits) == 0
    return (offset * bits) % 8 == 0


def concat_views(network, capacity, layouts):
    """tensor -> (concat, channel offset): the concat inputs stored straight into their
    concat's region. An input that is a network input, feeds two concats, has another element
    width or would start inside a byte (HWC) or a channel block (channel-blocked) is copied
    by the host instead."""
    shapes = network.shapes
    bits = {x: capacity.act_bits for x in network.inputs}
    bits.update({layer.name: _bits(layer, capacity) for layer in network.layers})
    parent = {}
    for layer in network.layers:
        if layer.kind != "concat":
            continue
        offset = 0
        for x in layer.inputs:
            if (x not in network.inputs and x not in parent and bits[x] == bits[layer.name]
                    and _aligned(offset, bits[x], layouts.get(layer.name, "hwc"))):
                parent[x] = (layer.name, offset)
            offset += shapes[x][2]
    return parent


def root_of(name, views):
    """The tensor whose region holds ``name``, and ``name``'s channel offset in it."""
    offset = 0
    while name in views:
        name, o = views[name]
        offset += o
    return name, offset


def _place_activations(network, capacity, alloc, layouts, views):
    shapes = network.shapes
    bits = {x: capacity.act_bits for x in network.inputs}
    bits.update({layer.name: _bits(layer, capacity) for layer in network.layers})
    for x in [*network.inputs, *(layer.name for layer in network.layers)]:
        if x not in views:
            alloc.place_tensor(x, shapes[x], bits[x], layouts.get(x, "hwc"))
    pending = [x for x in views]
    while pending:
        for x in list(pending):
            parent, offset = views[x]
            if parent in alloc.regions:
                alloc.place_view(x, parent, offset)
                pending.remove(x)


def _effective(layer, regions):
    """The layer as the accelerator runs it: an FC reads its producer's tensor as laid out
    (``schedule.fc_input``), so its input vector may have fillers."""
    if layer.kind != "fc":
        return layer
    region = regions[layer.inputs[0]]
    if region.view_of:
        raise TilingError(f"layer {layer.name}: an FC cannot read a channel slice "
                          f"({layer.inputs[0]} is stored inside {region.view_of})")
    elements, index = fc_input(region_layout(region))
    if elements == layer.in_channels and (index == range(len(index))).all():
        return layer
    return replace(layer, in_shape=(1, 1, elements))


def _host_step(layer, network, regions, views):
    """A layer the host runs: its inputs into host buffers 0..n-1, one command, its output
    from buffer n (a concat: each input it copies from buffer n + i into its channels)."""
    shapes = network.shapes
    step = Step()
    n = len(layer.inputs)
    h = layer.out_shape[0]
    for i, x in enumerate(layer.inputs):
        if layer.kind == "concat" and views.get(x, (None,))[0] == layer.name:
            continue
        r = regions[x]
        step.loads.append(activation_transfer("load", x, r, (0, shapes[x][0]),
                                              (0, shapes[x][2]), "host", i,
                                              own_layout(r, shapes[x])))
    out = regions[layer.name]
    step.commands.append(Command(layer.kind, (0, h), (0, layer.out_channels),
                                 (0, layer.in_channels), (0, layer.in_shape[0]),
                                 (0, 0, 0, 0), False, True, 0, 0, 0, 0, 0, 0, layer.name))
    if layer.kind == "concat":
        offset = 0
        for i, x in enumerate(layer.inputs):
            c = shapes[x][2]
            if views.get(x, (None,))[0] != layer.name:
                step.stores.append(activation_transfer(
                    "store", layer.name, out, (0, h), (offset, offset + c), "host", n + i,
                    own_layout(out, (h, layer.out_shape[1], c))))
            offset += c
        if not step.loads:
            return None         # a pure view: nothing moves
    else:
        step.stores.append(activation_transfer("store", layer.name, out, (0, h),
                                               (0, layer.out_channels), "host", n,
                                               own_layout(out, layer.out_shape)))
    return step


def _group_schedule(group, network, capacity, alloc, views):
    """A fused tile group, one step per layer and pass in execution order (a streamed group:
    one step per PE block of a weighted layer). The first step of a pass loads the new rows of
    every group input; a layer's first step loads its weights (a streamed layer: one PE block
    of them a step, the quantization blocks with the first); every step runs one command (the
    layer, its rows, its output channels, the input rows it reads and the band's padding);
    the new rows of a tensor that leaves the group are stored by its last step of the pass."""
    shapes = network.shapes
    regions = alloc.regions
    layers = [network.layer(name) for name in group.layers]
    stored = set(group.outputs)
    outputs = [x for x in group.outputs
               if not any(a in stored for a in _ancestors(x, views))]
    pes = capacity.pes
    steps = []
    loaded = set()
    for p in range(group.passes):
        head = []
        for x in group.inputs:
            e = group.ends[x]
            rows = (e[p - 1] if p else 0, e[p])
            if rows[1] > rows[0]:
                r = regions[x]
                head.append(activation_transfer("load", x, r, rows, (0, shapes[x][2]), "in", 0,
                                                own_layout(r, shapes[x]), rows[0]))
        for layer in layers:
            e = group.ends[layer.name]
            o0, o1 = (e[p - 1] if p else 0), e[p]
            if o1 <= o0:
                continue
            co = layer.out_channels
            blocks = (splits(co, pes) if group.streamed and layer.weighted else [(0, co)])
            a, b, top, bottom = band_rows(layer, o0, o1, shapes[layer.inputs[0]][0])
            pad = layer.padding
            for bi, (c0, c1) in enumerate(blocks):
                step = Step(loads=head)
                head = []
                if layer.weighted and layer.name not in loaded:
                    w = regions[layer.name + ".weights"]
                    q = regions[layer.name + ".qparams"]
                    if group.streamed:
                        chunk = w.bytes // len(blocks)
                        step.loads.append(Transfer("load", w.name, "w", 0, w.addr + bi * chunk,
                                                   bi * chunk, 1, 1, chunk, chunk, chunk, chunk,
                                                   chunk))
                        if bi == len(blocks) - 1:
                            loaded.add(layer.name)
                    else:
                        loaded.add(layer.name)
                        step.loads.append(Transfer("load", w.name, "w", 0, w.addr, 0, 1, 1,
                                                   w.bytes, w.bytes, w.bytes, w.bytes, w.bytes))
                    if bi == 0:
                        step.loads.append(Transfer("load", q.name, "q", 0, q.addr, 0, 1, 1,
                                                   q.bytes, q.bytes, q.bytes, q.bytes, q.bytes))
                step.commands.append(Command(
                    layer.kind, (o0, o1), (c0, c1), (0, layer.in_channels), (a, b),
                    (top, bottom, pad.left, pad.right), False, True, 0, 0, 0, 0, 0, 0,
                    layer.name))
                if layer.name in outputs and bi == len(blocks) - 1:
                    r = regions[layer.name]
                    step.stores.append(activation_transfer(
                        "store", layer.name, r, (o0, o1), (0, co), "acc", 0,
                        own_layout(r, layer.out_shape), o0))
                steps.append(step)
        if head:
            steps.append(Step(loads=head))
    plan = {"layers": group.layers, "passes": group.passes, "streamed": group.streamed,
            "ends": group.ends, "starts": group.starts, "peak_bytes": group.peak_bytes,
            "inputs": group.inputs, "outputs": outputs}
    return LayerSchedule(f"{group.layers[0]}..{group.layers[-1]}", "fused", None, steps, plan)


def _ancestors(x, views):
    while x in views:
        x = views[x][0]
        yield x


def band_rows(layer, o0, o1, h):
    """Input rows [a, b) a layer reads for output rows [o0, o1) of a band, and the band's
    (top, bottom) padding."""
    if layer.kind in ("add", "concat"):
        return o0, o1, 0, 0
    if layer.kind == "upsample":
        f = layer.out_shape[0] // layer.in_shape[0]
        return o0 // f, -(-o1 // f), 0, 0
    if layer.kind == "fc":
        return 0, h, 0, 0
    kh, sh, top = layer.kernel[0], layer.stride[0], layer.padding.top
    first, last = o0 * sh - top, (o1 - 1) * sh + kh - top
    return max(first, 0), min(last, h), max(-first, 0), max(last - h, 0)


def build_schedule(network, strategy="optimal", capacity=None, cost=DEFAULT_COST,
                   layouts=None):
    """Tile every layer of ``network`` with ``strategy`` and list the steps. ``layouts``: the
    activation layout of every tensor -- ``"hwc"`` (the default: what the accelerators' RTL
    reads today), ``"blocked"``, ``"auto"`` (chosen per tensor, ``sw.tiling.layouts``) or a
    dict tensor -> ``"hwc"``/``"blocked"``."""
    capacity = capacity or Capacity()
    alloc = Allocator()
    for layer in network.layers:
        if layer.weighted and min(layer.padding.top, layer.padding.bottom, layer.padding.left,
                                  layer.padding.right) < 0:
            raise TilingError(f"layer {layer.name}: reads a cropped input (padding "
                              f"{layer.padding}); the accelerators have no crop")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}")
    layouts = resolve_layouts(layouts, network, capacity, cost,
                              "optimal" if strategy == "fused" else strategy,
                              concat_views(network, capacity, {}), tile_layer)
    views = concat_views(network, capacity, layouts)
    _place_activations(network, capacity, alloc, layouts, views)
    regions = alloc.regions
    effective = {layer.name: _effective(layer, regions) for layer in network.layers
                 if layer.weighted}
    kinds = {layer.name: (regions[layer.inputs[0]].layout, regions[layer.name].layout)
             for layer in network.layers if layer.weighted}
    groups = {}
    if strategy == "fused":
        def row_bytes(x):
            lay = own_layout(regions[x], network.shapes[x])
            return lay.row_stride * lay.bits // 8

        for group in fused_partition(network, capacity, cost, effective=effective,
                                     row_bytes=row_bytes, kinds=kinds):
            if group.fused:
                for name in group.layers:
                    groups[name] = group
    tilings = {}
    for layer in network.layers:
        if not layer.weighted:
            continue
        eff = effective[layer.name]
        if layer.name not in groups:
            check_layer(eff, capacity)
            tilings[layer.name] = tiling = tile_layer(strategy, eff, capacity, cost,
                                                      kinds[layer.name])
            chunks = weight_chunks(eff, capacity, tiling)
            alloc.place(f"{layer.name}.weights", "weights", sum(c[3] for c in chunks))
            alloc.place(f"{layer.name}.qparams", "qparams",
                        sum(c[2] for c in qparam_chunks(eff, tiling)))
        else:
            weights, qparams = capacity.layer_weight_bytes(eff)
            alloc.place(f"{layer.name}.weights", "weights", weights)
            alloc.place(f"{layer.name}.qparams", "qparams", qparams)
    layers = []
    for layer in network.layers:
        group = groups.get(layer.name)
        if group is not None:
            if layer.name == group.layers[0]:
                layers.append(_group_schedule(group, network, capacity, alloc, views))
            continue
        if layer.weighted:
            eff = effective[layer.name]
            steps = materialize(eff, capacity, tilings[layer.name], alloc.regions,
                                layer.inputs[0])
            layers.append(LayerSchedule(layer.name, layer.kind, tilings[layer.name], steps))
        else:
            step = _host_step(layer, network, alloc.regions, views)
            layers.append(LayerSchedule(layer.name, layer.kind, None,
                                        [step] if step else []))
    return Schedule(network.name, strategy, capacity.as_dict(), asdict(cost), alloc.regions,
                    layers)
