"""Whole-network schedules: each layer tiled by a strategy, tensors placed, steps listed.

Strategies (``STRATEGIES``):

* ``thesis``: seed 002's tiling algorithm (``sw.tiling.thesis``), with its loop order;
* ``naive``: seed 000's naive choice, the tiles that fill the most on-chip memory;
* ``optimal``: the lowest DMA cost over every tiling and loop order (``sw.tiling.search``).

Operators without weights (pooling, add, upsample) run on the host in these layer-by-layer
schedules: they read their inputs and write their output once, as whole-tensor transfers.
``concat`` is a view: its producers' outputs are its channel slices, so it moves nothing.
"""

from dataclasses import asdict

from .capacity import Capacity, TilingError
from .cost import DEFAULT_COST
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


def build_schedule(network, strategy="optimal", capacity=None, cost=DEFAULT_COST):
    """Tile every layer of ``network`` with ``strategy`` and list the steps."""
    capacity = capacity or Capacity()
    alloc = Allocator()
    shapes = network.shapes
    views = {}

    def region_of(name):
        return alloc.regions[views.get(name, name)]

    for name, shape in network.inputs.items():
        alloc.place(name, "activation", capacity.layout(shape).bytes)
    tilings = {}
    for layer in network.layers:
        if layer.weighted:
            check_layer(layer, capacity)
            if min(layer.padding.top, layer.padding.bottom, layer.padding.left,
                   layer.padding.right) < 0:
                raise TilingError(f"layer {layer.name}: reads a cropped input (padding "
                                  f"{layer.padding}); the accelerators have no crop")
            tilings[layer.name] = tiling = tile_layer(strategy, layer, capacity, cost)
            alloc.place(layer.name, "activation",
                        capacity.layout(layer.out_shape, capacity.out_bits).bytes)
            chunks = weight_chunks(layer, capacity, tiling)
            alloc.place(f"{layer.name}.weights", "weights", sum(c[3] for c in chunks))
            alloc.place(f"{layer.name}.qparams", "qparams",
                        sum(c[2] for c in qparam_chunks(layer, tiling)))
        elif layer.kind == "concat":
            views[layer.name] = layer.name
            alloc.place(layer.name, "activation", capacity.layout(layer.out_shape).bytes)
        else:
            alloc.place(layer.name, "activation", capacity.layout(layer.out_shape).bytes)
    layers = []
    for layer in network.layers:
        if layer.weighted:
            regions = dict(alloc.regions)
            regions[layer.inputs[0]] = region_of(layer.inputs[0])
            steps = materialize(layer, capacity, tilings[layer.name], regions, layer.inputs[0])
            layers.append(LayerSchedule(layer.name, layer.kind, tilings[layer.name], steps))
        elif layer.kind == "concat":
            layers.append(LayerSchedule(layer.name, layer.kind, None, []))
        else:
            step = Step(loads=[_whole("load", region_of(x), "host") for x in layer.inputs],
                        stores=[_whole("store", region_of(layer.name), "host")])
            layers.append(LayerSchedule(layer.name, layer.kind, None, [step]))
    del shapes
    return Schedule(network.name, strategy, capacity.as_dict(), asdict(cost), alloc.regions,
                    layers)
