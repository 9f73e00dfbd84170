"""Per-layer tile choice: seed 000's ``naive`` rule and the ``optimal`` exhaustive search.

Both choose among the same candidates, which the capacity model allows:

* ``rows``: every number of output rows from 1 to the layer's height;
* ``out_channels``: for every count ``n`` of output-channel tiles, the smallest tile size
  (a multiple of ``Capacity.out_step``) that needs only ``n`` tiles;
* ``in_channels``: likewise for input channels (multiples of ``Capacity.in_step``);
* both loop orders of :data:`~sw.tiling.layer_tiling.ORDERS`.

Restricting channel tiles to the smallest size per tile count loses nothing: for a given count,
the calls, segments and beats of every tensor are the same whatever the size (each tile is one
call; segments and beats sum over tiles to the whole tensor), while a smaller tile needs less
memory. So the minimum over these candidates is the minimum over all tilings of the model
(``docs/tiling.md`` gives the argument in full).
"""

import numpy as np

from .capacity import TilingError
from .layer_tiling import ORDERS, Tiling, check_layer, evaluate, tensor_stats

__all__ = ["channel_candidates", "choose", "median_tiling", "min_bytes_tiling", "naive_tiling",
           "optimal_tiling"]


def _ceil(a, b):
    return -(-a // b)


def channel_candidates(total, step):
    """The smallest tile size (a multiple of ``step``, or ``total``) for each tile count."""
    sizes = {total}
    for n in range(2, _ceil(total, step) + 1):
        size = _ceil(_ceil(total, n), step) * step
        if size < total:
            sizes.add(size)
    return sorted(sizes)


def _candidates(layer, capacity):
    p = capacity.precision
    ho = layer.out_shape[0]
    if layer.kind == "fc":
        rows = [1]
    else:
        rows = list(range(1, ho + 1))
    if layer.kind == "depthwise":
        step = np.lcm.reduce([capacity.out_step, 64 // p.act_bits])
        zs = channel_candidates(layer.out_channels, int(step))
        ks = [0]
    else:
        zs = channel_candidates(layer.out_channels, capacity.out_step)
        ks = channel_candidates(layer.in_channels, capacity.in_step)
    return (np.array(rows)[:, None, None], np.array(zs)[None, :, None],
            np.array(ks)[None, None, :])


def _grid(layer, capacity, cost, orders, kinds=("hwc", "hwc")):
    rows, zs, ks = _candidates(layer, capacity)
    stats = tensor_stats(layer, capacity, rows, zs, ks if layer.kind != "depthwise" else zs)
    results = {}
    for order in orders:
        results[order] = evaluate(layer, capacity, cost, rows, zs, ks, order, stats, kinds)
    return (rows, zs, ks), results


def _no_fit(layer, capacity, cost, kinds=("hwc", "hwc")):
    rows, zs, ks = _candidates(layer, capacity)
    smallest = evaluate(layer, capacity, cost, rows.min(), zs.min(),
                        ks.min() if layer.kind != "depthwise" else zs.min(), kinds=kinds)
    need = capacity.needed(*(int(v) for v in smallest.footprint))
    return TilingError(f"layer {layer.name}: even its smallest tile (1 output row, "
                       f"{int(zs.min())} output and {int(ks.min() or zs.min())} input channels) "
                       f"does not fit {capacity.describe()}; it needs {need}")


def choose(layer, capacity, cost, key, orders=ORDERS, kinds=("hwc", "hwc")):
    """The tiling minimising ``key(cost_result) -> tuple of arrays`` (lexicographic) over
    the loop ``orders``, the layer's input and output laid out as ``kinds``."""
    check_layer(layer, capacity)
    (rows, zs, ks), results = _grid(layer, capacity, cost, orders, kinds)
    best = None
    for order, res in results.items():
        shape = np.broadcast_shapes(rows.shape, zs.shape, ks.shape)
        fits = np.broadcast_to(res.fits, shape)
        if not fits.any():
            continue
        keys = [np.broadcast_to(k, shape)[fits] for k in key(res)]
        idx = np.lexsort(keys[::-1])[0]
        flat = np.argwhere(fits)[idx]
        score = tuple(k[idx] for k in keys)
        tiling = Tiling(int(rows[flat[0], 0, 0]), int(zs[0, flat[1], 0]),
                        int(zs[0, flat[1], 0]) if layer.kind == "depthwise"
                        else int(ks[0, 0, flat[2]]), order)
        if best is None or score < best[0]:
            best = (score, tiling)
    if best is None:
        raise _no_fit(layer, capacity, cost, kinds)
    return best[1]


def optimal_tiling(layer, capacity, cost, kinds=("hwc", "hwc")):
    """The tiling with the lowest DMA cost; ties go to fewer beats, then fewer commands."""
    return choose(layer, capacity, cost,
                  lambda res: (res.cycles, res.total_beats, res.commands), kinds=kinds)


def naive_tiling(layer, capacity, cost, kinds=("hwc", "hwc")):
    """Seed 000's naive choice: the largest tiles, i.e. the tiling that fills the most
    on-chip memory, with seed 000's loop order (rows outermost: ``hzk``); ties go to fewer
    commands."""
    return choose(layer, capacity, cost, lambda res: (-sum(res.footprint), res.commands),
                  orders=("hzk",), kinds=kinds)


def min_bytes_tiling(layer, capacity, cost, kinds=("hwc", "hwc")):
    """The tiling moving the fewest bytes (then the lowest DMA cost): what this tile space can
    reach at best in bytes."""
    return choose(layer, capacity, cost,
                  lambda res: (res.total_beats, res.cycles, res.commands), kinds=kinds)


def median_tiling(layer, capacity, cost, kinds=("hwc", "hwc"), fill=0.8):
    """A seed-000-style naive tiling: among the tilings with seed 000's loop order (rows
    outermost) whose tiles use at least ``fill`` of the on-chip memory, the one of median DMA
    cost (seed 000 compares its optimum with such a typical hand choice, not with the worst).
    Falls back to :func:`naive_tiling` when no tiling fills that much."""
    check_layer(layer, capacity)
    (rows, zs, ks), results = _grid(layer, capacity, cost, ("hzk",), kinds)
    res = results["hzk"]
    shape = np.broadcast_shapes(rows.shape, zs.shape, ks.shape)
    fits = np.broadcast_to(res.fits, shape)
    use = _use(capacity, *(np.broadcast_to(f, shape) for f in res.footprint))
    chosen = fits & (use >= fill)
    if not chosen.any():
        return naive_tiling(layer, capacity, cost, kinds)
    cycles = np.broadcast_to(res.cycles, shape)[chosen]
    order = np.lexsort((np.argwhere(chosen)[:, 0], cycles))
    flat = np.argwhere(chosen)[order[(len(order) - 1) // 2]]
    k = int(zs[0, flat[1], 0]) if layer.kind == "depthwise" else int(ks[0, 0, flat[2]])
    return Tiling(int(rows[flat[0], 0, 0]), int(zs[0, flat[1], 0]), k, "hzk")


def _use(capacity, in_b, w_b, acc_b):
    """Fraction of the on-chip memory (shared) or of the fullest bank (private PLMs)."""
    if capacity.ocm_bytes is not None:
        return capacity.banks * (in_b + w_b + acc_b) / capacity.ocm_bytes
    bi, bw, ba = capacity.bank_bytes
    return np.maximum(np.maximum(in_b / bi, w_b / bw), acc_b / ba)
