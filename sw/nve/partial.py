"""Partial sums: an output map too large for one program, split across programs by its inputs.

A map whose program does not fit the instruction buffer (or its coefficients and ring the
local buffer) is computed by ``K`` programs, each over a contiguous share of its input maps
(``docs/nve.md``, "Partial sums"). Every part but the last sends its accumulators out as the 8
``act.ps`` words per output column; every part but the first reloads the previous part's sum:
the host turns the words into four *digit planes*, one int8 image per digit, each digit of
output ``(y, x)`` at the padded-input position one kernel tap reads (:func:`plane_tap`: row 0
of the first input column an iteration stores), and streams them as four more input maps,
which the part reads at that tap only (``set.i`` and ``mac`` / ``mach`` with the weights 1,
256, 1, 256:
:class:`~.taskgraph.GroupSpec`). The first part adds the bias, the others start from 0. A part
is compiled like any group (on a *part layer*: the layer's input maps plus the four planes,
and the one map reading its share), so the scheduler, the local-buffer plan and the emitter
are the ordinary ones.
"""

from dataclasses import replace

import numpy as np

from hls_ref.nve.isa import DEFAULT_CONFIG
from hls_ref.nve.numerics import partial_value

from .bands import padded_input
from .columns import column_steps
from .compile import compile_group, run_group
from .errors import NveCompileError
from .taskgraph import PLANE_WEIGHTS, PLANES

__all__ = ["part_inputs", "part_layer", "plane_tap", "plane_values", "run_parts", "split_map",
           "with_plane_weights"]


def part_layer(layer, inputs, reload):
    """The layer one part is compiled on: ``layer``'s input maps and the four digit planes
    after them (maps ``in_maps ... in_maps + 3``), and one output map reading ``inputs``
    (and, with ``reload``, the planes)."""
    planes = tuple(range(layer.in_maps, layer.in_maps + PLANES)) if reload else ()
    return replace(layer, in_maps=layer.in_maps + PLANES,
                   connections=(tuple(inputs) + planes,))


def plane_tap(layer):
    """The kernel tap ``(row, column)`` at which a part reads its digit planes: row 0 of the
    first input column an iteration stores (:class:`~.columns.ColumnSteps`), so that a
    plane's column is read in the iteration that writes it."""
    return 0, column_steps(layer.kernel_w, layer.stride_w).first_new


def _positions(layer):
    row, col = plane_tap(layer)
    return (slice(row, row + (layer.out_h - 1) * layer.stride_h + 1, layer.stride_h),
            slice(col, col + (layer.out_w - 1) * layer.stride_w + 1, layer.stride_w))


def plane_values(padded, planes, layer):
    """The partial sums (int64 ``[out_h, out_w]``) the digit planes ``planes`` (indices into
    the padded maps ``padded``) hold at each output's plane tap."""
    rows, cols = _positions(layer)
    return partial_value(np.asarray(padded)[list(planes), rows, cols])


def _planes(digits, layer, shape):
    """Digit planes ``[4, rows, cols]`` (padded coordinates) holding ``digits`` ``[4, out_h,
    out_w]`` at the outputs' plane taps, zero elsewhere."""
    planes = np.zeros((PLANES, *shape), np.int8)
    rows, cols = _positions(layer)
    planes[:, rows, cols] = digits
    return planes


def with_plane_weights(weights, layer):
    """Per-map weights ``[connections, kh, kw]`` whose last four connections are digit
    planes: those get the reload's weights at the plane tap (1, 256, 1, 256) and 0
    elsewhere."""
    row, col = plane_tap(layer)
    out = []
    for w in weights:
        w = np.array(w, dtype=np.int16)
        w[-PLANES:] = 0
        w[-PLANES:, row, col] = PLANE_WEIGHTS
        out.append(w)
    return out


def _shares(inputs, count):
    size, extra = divmod(len(inputs), count)
    out, start = [], 0
    for k in range(count):
        end = start + size + (k < extra)
        out.append(tuple(inputs[start:end]))
        start = end
    return out


def part_inputs(layer, m, index, count):
    """The local-buffer inputs of part ``index`` of ``count`` of map ``m``: its share of the
    map's input maps (sorted), then the four planes (parts after the first)."""
    share = tuple(sorted(_shares(layer.connections[m], count)[index]))
    planes = tuple(range(layer.in_maps, layer.in_maps + PLANES)) if index else ()
    return share + planes


def split_map(layer, m, *, name, config=DEFAULT_CONFIG, form="auto", check=True):
    """The part groups (:class:`~.compile.CompiledGroup` with ``part = (index, count)``, in
    order) of output map ``m``: the fewest parts that all compile. Raises
    :class:`NveCompileError` when even one input map per part does not fit."""
    inputs = layer.connections[m]
    last_error = None
    for count in range(2, len(inputs) + 1):
        parts = []
        try:
            for index, share in enumerate(_shares(inputs, count)):
                reload, partial_out = index > 0, index < count - 1
                group = compile_group(part_layer(layer, share, reload), (0,),
                                      name=f"{name} map {m} part {index + 1}/{count}",
                                      form=form, config=config, check=check, reload=reload,
                                      partial_out=partial_out)
                parts.append(replace(group, spec=replace(group.spec, maps=(m,)),
                                     part=(index, count)))
        except NveCompileError as error:
            if not error.too_large:
                raise
            last_error = error
            continue
        return tuple(parts)
    raise NveCompileError(f"{name}: map {m} does not fit even with one input map per program "
                          f"({last_error})", too_large=True)


def run_parts(parts, layer, inputs, weights, bias, shift, lut, band, config=DEFAULT_CONFIG):
    """Run one band of the parts of one map on the ISS, each part's partial sums into the
    next: ``(outputs [out_maps, out_h, out_w] int8 with the map's band filled, the parts'
    RunResults)``."""
    m = parts[0].spec.maps[0]
    padded = padded_input(inputs, layer.pad)
    count = len(parts)
    shares = _shares(layer.connections[m], count)
    digits, results, start = None, [], 0
    for (index, _), share, group in zip((p.part for p in parts), shares, parts):
        w = np.asarray(weights[m])[start:start + len(share)]
        start += len(share)
        real = group.spec.inputs[:len(share)]  # sorted; the planes follow
        maps = padded[list(real)]
        if index > 0:
            maps = np.concatenate([maps, _planes(digits, layer, padded.shape[1:])])
            w = np.concatenate([w, np.zeros((PLANES, *w.shape[1:]), w.dtype)])
            w = with_plane_weights([w], layer)[0]
        out, run = run_group(group, layer, None, {m: w}, {m: bias[m] if index == 0 else 0},
                             shift, lut, bands=[band], config=config, padded=maps)
        results += run
        if group.spec.partial_out:
            digits = out[m]
    return out, results
