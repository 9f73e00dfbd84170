"""Whole-network schedules: each layer tiled by a strategy, tensors placed, steps listed.

Strategies (``STRATEGIES``):

* ``thesis``: seed 002's tiling algorithm (``sw.tiling.thesis``), with its loop order;
* ``naive``: seed 000's naive choice, the tiles that fill the most on-chip memory;
* ``optimal``: the lowest DMA cost over every tiling and loop order (``sw.tiling.search``);
* ``fused``: tile groups of layers whose intermediate tensors stay on chip (``sw.tiling.fusion``,
  seed 004's ITT); layers left alone are scheduled as by ``optimal``.

Operators without weights (pooling, add, upsample) run on the host in these layer-by-layer
schedules: they read their inputs and write their output once, as whole-tensor transfers.
``concat`` is a view: its producers' outputs are its channel slices, so it moves nothing.
"""

from dataclasses import asdict

from .capacity import Capacity, TilingError
from .cost import DEFAULT_COST
from .fusion import fused_partition
from .layer_tiling import check_layer
from .schedule import (
    Allocator,
    LayerSchedule,
    Schedule,
    Step,
    Transfer,
    materialize,
    qparam_chunks,
    weight_chunks,
)
from .search import naive_tiling, optimal_tiling
from .thesis import thesis_tiling

__all__ = ["STRATEGIES", "build_schedule", "tile_layer"]

STRATEGIES = {
    "thesis": thesis_tiling,
    "naive": naive_tiling,
    "optimal": optimal_tiling,
    "fused": optimal_tiling,      # for the layers no group takes
}


def tile_layer(strategy, layer, capacity, cost=DEFAULT_COST):
    """The :class:`~sw.tiling.layer_tiling.Tiling` ``strategy`` picks for one layer."""
    try:
        choose = STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown strategy {strategy!r}; one of "
                         f"{', '.join(STRATEGIES)}") from None
    return choose(layer, capacity, cost)


def _whole(direction, region, buffer):
    return Transfer(direction, region.name, buffer, 0, region.addr, 0, 1, 1, region.bytes,
                    region.bytes, region.bytes, region.bytes, region.bytes)


def _band(direction, region, capacity, shape, rows, buffer):
    lay = capacity.layout(shape)
    row_b = lay.row_stride * lay.bits // 8
    size = (rows[1] - rows[0]) * row_b
    return Transfer(direction, region.name, buffer, 0, region.addr + rows[0] * row_b, 0, 1, 1,
                    size, size, size, size, size)


def _group_schedule(group, network, capacity, alloc):
    """One step per pass: the new rows of every group input, every weight in the first pass,
    the new rows of every group output."""
    shapes = network.shapes
    steps = []
    for p in range(group.passes):
        step = Step()
        if p == 0:
            for name in group.layers:
                if network.layer(name).weighted:
                    for suffix, buffer in ((".weights", "w"), (".qparams", "q")):
                        step.loads.append(_whole("load", alloc.regions[name + suffix], buffer))
        for names, direction, buffer, target in ((group.inputs, "load", "in", step.loads),
                                                 (group.outputs, "store", "acc", step.stores)):
            for x in names:
                e = group.ends[x]
                rows = (e[p - 1] if p else 0, e[p])
                if rows[1] > rows[0]:
                    target.append(_band(direction, alloc.regions[x], capacity, shapes[x], rows,
                                        buffer))
        steps.append(step)
    plan = {"layers": group.layers, "passes": group.passes, "ends": group.ends,
            "starts": group.starts, "peak_bytes": group.peak_bytes, "inputs": group.inputs,
            "outputs": group.outputs}
    return LayerSchedule(f"{group.layers[0]}..{group.layers[-1]}", "fused", None, steps, plan)


def build_schedule(network, strategy="optimal", capacity=None, cost=DEFAULT_COST):
    """Tile every layer of ``network`` with ``strategy`` and list the steps."""
    capacity = capacity or Capacity()
    alloc = Allocator()

    for name, shape in network.inputs.items():
        alloc.place(name, "activation", capacity.layout(shape).bytes)
    for layer in network.layers:
        if layer.weighted and min(layer.padding.top, layer.padding.bottom, layer.padding.left,
                                  layer.padding.right) < 0:
            raise TilingError(f"layer {layer.name}: reads a cropped input (padding "
                              f"{layer.padding}); the accelerators have no crop")
    groups = {}
    if strategy == "fused":
        for group in fused_partition(network, capacity, cost):
            if group.fused:
                for name in group.layers:
                    groups[name] = group
    tilings = {}
    for layer in network.layers:
        if layer.weighted and layer.name not in groups:
            check_layer(layer, capacity)
            tilings[layer.name] = tiling = tile_layer(strategy, layer, capacity, cost)
            alloc.place(layer.name, "activation",
                        capacity.layout(layer.out_shape, capacity.out_bits).bytes)
            chunks = weight_chunks(layer, capacity, tiling)
            alloc.place(f"{layer.name}.weights", "weights", sum(c[3] for c in chunks))
            alloc.place(f"{layer.name}.qparams", "qparams",
                        sum(c[2] for c in qparam_chunks(layer, tiling)))
        else:
            alloc.place(layer.name, "activation", capacity.layout(layer.out_shape).bytes)
        if layer.weighted and layer.name in groups:
            weights, qparams = capacity.layer_weight_bytes(layer)
            alloc.place(f"{layer.name}.weights", "weights", weights)
            alloc.place(f"{layer.name}.qparams", "qparams", qparams)
    layers = []
    for layer in network.layers:
        group = groups.get(layer.name)
        if group is not None:
            if layer.name == group.layers[0]:
                layers.append(_group_schedule(group, network, capacity, alloc))
            continue
        if layer.weighted:
            steps = materialize(layer, capacity, tilings[layer.name], alloc.regions,
                                layer.inputs[0])
            layers.append(LayerSchedule(layer.name, layer.kind, tilings[layer.name], steps))
        elif layer.kind == "concat":
            layers.append(LayerSchedule(layer.name, layer.kind, None, []))
        else:
            step = Step(loads=[_whole("load", alloc.regions[x], "host") for x in layer.inputs],
                        stores=[_whole("store", alloc.regions[layer.name], "host")])
            layers.append(LayerSchedule(layer.name, layer.kind, None, [step]))
    return Schedule(network.name, strategy, capacity.as_dict(), asdict(cost), alloc.regions,
                    layers)
