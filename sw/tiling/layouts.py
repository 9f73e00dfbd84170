"""The activation layout of every tensor: HWC or channel-blocked (``docs/formats.md`` 1, 1b).

The layout of a tensor decides what a channel slice of a row band costs: one DMA segment per
pixel in HWC, one per row channel-blocked; whole-row bands cost the same in both, and HWC packs
tensors of fewer channels than a block into fewer bytes. So the best layout of a tensor depends
on how its producer stores it and how its consumers load it, which depends on their tilings.

:func:`choose_layouts` picks a layout per tensor for a strategy: every weighted layer is scored
in each combination of its input's and output's layouts (the strategy's tiling for that
combination, cost from ``evaluate``), host layers by their whole-tensor transfers, and the
assignment minimising the network's DMA cost is found by coordinate descent from the all-HWC
and the all-blocked assignments (each tensor flipped while that lowers the total). A concat
and the inputs stored in its channels share one layout (they share a region).
"""

from dataclasses import replace

from hls_ref.formats import LAYOUTS

from .capacity import BEAT_BYTES
from .layer_tiling import evaluate
from .schedule import fc_input

__all__ = ["LAYOUT_CHOICES", "choose_layouts", "effective_fc", "resolve_layouts"]

LAYOUT_CHOICES = ("hwc", "blocked", "auto")


def effective_fc(layer, layout):
    """An FC layer as it runs on a producer tensor laid out as ``layout`` (its input vector
    includes the layout's fillers, ``schedule.fc_input``)."""
    elements, index = fc_input(layout)
    if elements == layer.in_channels and (index == range(len(index))).all():
        return layer
    return replace(layer, in_shape=(1, 1, elements))


def _bits(network, capacity):
    bits = {x: capacity.act_bits for x in network.inputs}
    bits.update({layer.name: capacity.out_bits if layer.weighted else capacity.act_bits
                 for layer in network.layers})
    return bits


class _Scorer:
    """DMA cost of one layer for given input and output layouts (cached)."""

    def __init__(self, network, capacity, cost, strategy, tile):
        self.network, self.capacity, self.cost = network, capacity, cost
        self.strategy, self.tile = strategy, tile
        self.shapes = network.shapes
        self.bits = _bits(network, capacity)
        self.cache = {}

    def whole(self, x, kind):
        lay = self.capacity.layout(self.shapes[x], self.bits[x], kind)
        return self.cost.cycles(1, 1, lay.bytes // BEAT_BYTES)

    def __call__(self, layer, in_kinds, out_kind):
        key = (layer.name, in_kinds, out_kind)
        if key not in self.cache:
            self.cache[key] = self._score(layer, in_kinds, out_kind)
        return self.cache[key]

    def _score(self, layer, in_kinds, out_kind):
        if layer.kind == "concat":
            return 0.0
        if not layer.weighted:
            return (sum(self.whole(x, k) for x, k in zip(layer.inputs, in_kinds))
                    + self.whole(layer.name, out_kind))
        if layer.kind == "fc":
            x = layer.inputs[0]
            layer = effective_fc(layer, self.capacity.layout(self.shapes[x], self.bits[x],
                                                             in_kinds[0]))
        kinds = (in_kinds[0], out_kind)
        try:
            t = self.tile(self.strategy, layer, self.capacity, self.cost, kinds)
        except ValueError:
            return float("inf")
        res = evaluate(layer, self.capacity, self.cost, t.rows, t.out_channels,
                       t.in_channels, t.order, kinds=kinds)
        return float(res.cycles)


def choose_layouts(network, capacity, cost, strategy, views, tile):
    """{tensor: "hwc" or "blocked"} minimising the network's DMA cost under ``strategy``
    (``tile(strategy, layer, capacity, cost, kinds)`` gives its tiling); ``views``: the
    concat views (``strategies.concat_views``), whose tensors take their concat's layout."""
    score = _Scorer(network, capacity, cost, strategy, tile)

    def root(x):
        while x in views:
            x = views[x][0]
        return x

    tensors = [*network.inputs, *(layer.name for layer in network.layers)]
    roots = sorted({root(x) for x in tensors}, key=tensors.index)
    touching = {r: [] for r in roots}
    for layer in network.layers:
        for x in {root(x) for x in (*layer.inputs, layer.name)}:
            touching[x].append(layer)

    def layer_cost(layer, kind):
        return score(layer, tuple(kind[root(x)] for x in layer.inputs), kind[root(layer.name)])

    def total(kind):
        return sum(layer_cost(layer, kind) for layer in network.layers)

    best = None
    for start in LAYOUTS:
        kind = dict.fromkeys(roots, start)
        cost_now = total(kind)
        improved = True
        while improved:
            improved = False
            for r in roots:
                old = sum(layer_cost(layer, kind) for layer in touching[r])
                kind[r] = "blocked" if kind[r] == "hwc" else "hwc"
                new = sum(layer_cost(layer, kind) for layer in touching[r])
                if new < old:
                    cost_now += new - old
                    improved = True
                else:
                    kind[r] = "blocked" if kind[r] == "hwc" else "hwc"
        if best is None or cost_now < best[0]:
            best = (cost_now, dict(kind))
    return {x: best[1][root(x)] for x in tensors}


def resolve_layouts(layouts, network, capacity, cost, strategy, views, tile):
    """``layouts`` as given to ``build_schedule`` (``None``/``"hwc"``, ``"blocked"``,
    ``"auto"`` or a dict) -> {tensor: kind}; a concat's views take the concat's layout."""
    tensors = [*network.inputs, *(layer.name for layer in network.layers)]
    if layouts is None or isinstance(layouts, str):
        name = layouts or "hwc"
        if name not in LAYOUT_CHOICES:
            raise ValueError(f"layout must be one of {', '.join(LAYOUT_CHOICES)}, not "
                             f"{name!r}")
        if name == "auto":
            return choose_layouts(network, capacity, cost, strategy, views, tile)
        return dict.fromkeys(tensors, name)
    out = {x: layouts.get(x, "hwc") for x in tensors}
    for x in tensors:
        r = x
        while r in views:
            r = views[r][0]
        out[x] = out[r]
    return out
