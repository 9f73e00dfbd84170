"""The data of one band: padded input, coefficient words, the input stream, the outputs.

Every band of a group is one run of the same program. Its input stream is, word for word, what
the program's MEMA writes consume (:class:`~.emit.StreamPlan`): the coefficient words, the
stored columns of the init part, then the new stored columns of every iteration, with zero
pixels for padding rows and columns and for the rows of the last band past the map.
"""

import numpy as np

from hls_ref.nve.isa import coefficients_to_word
from hls_ref.nve.layers import PIXEL_MAX, PIXEL_MIN, pad_maps

from .columns import column_words

__all__ = ["band_stream", "coefficient_words", "padded_input", "place_outputs"]


def padded_input(inputs, pad):
    """int8 ``[maps, rows, columns]`` of ``inputs`` padded as the golden model pads them
    (:func:`hls_ref.nve.layers.pad_maps`); values outside int8 are refused, not wrapped."""
    x = np.asarray(inputs)
    if x.size and (x.min() < PIXEL_MIN or x.max() > PIXEL_MAX):
        raise ValueError(f"input pixels are int8 ({PIXEL_MIN} ... {PIXEL_MAX})")
    return pad_maps(x.astype(np.int8), pad)


def coefficient_words(graph, weights, bias):
    """The group's coefficient words (Python ints, the order of ``graph.coef_words``):
    ``weights[i]`` / ``bias[i]`` belong to the group's ``i``-th map (weights
    ``[inputs, kernel_h, kernel_w]`` int16). Each word holds consecutive coefficients of one
    map's sequence ``bias, w(mac 1), w(mac 2), ...`` and zeros after them."""
    spec = graph.spec
    sequences = []
    for pos in range(len(spec.maps)):
        w = np.asarray(weights[pos])
        seq = [int(bias[pos])] + [int(w[j, a, c]) for j, a, c in spec.mac_taps(pos)]
        sequences.append(seq)
    words = []
    for pos, first, size in graph.coef_words:
        values = sequences[pos][first:first + size]
        words.append(coefficients_to_word(values + [0] * (4 - size)))
    return words


def band_stream(stream, coef_words, padded, columns, band):
    """The input-stream data words (Python ints) of band ``band`` for the group inputs'
    ``padded`` maps ``[inputs, rows, columns]`` and stored-column layout ``columns``."""
    col = column_words(padded, columns, band * columns.lanes)
    coef = np.asarray(coef_words, dtype=np.uint64)
    out = np.zeros(len(stream), dtype=np.uint64)
    k0, k1 = stream.kind == 0, stream.kind == 1
    out[k0] = coef[stream.a[k0]]
    out[k1] = col[stream.a[k1], stream.column[k1], stream.word[k1]]
    return [int(v) for v in out]


def place_outputs(out, result_outputs, plan_outputs, maps, columns, band):
    """Write the int8 output words of one run into ``out[map, row, column]``: output word ``n``
    is ``plan_outputs[n] = (map position, output column, half)`` (``None``: discarded); ``lo``
    holds band rows 0..7, ``hi`` rows 8..15 (rows 0..7 in half-vector mode). Partial-sum words
    (``ps``) go to ``out[map, digit, row, column]``: the ``n``-th of a map and column holds
    digit ``n // 2`` of rows ``8 (n % 2)`` ... Rows past the map are dropped."""
    rows = out.shape[-2]
    count = {}
    for word, where in zip(result_outputs, plan_outputs):
        if where is None:
            continue
        pos, x, half = where
        if half == "ps":
            n = count[(pos, x)] = count.get((pos, x), -1) + 1
            first = band * columns.lanes + 8 * (n % 2)
            keep = min(8, rows - first)
            if keep > 0:
                out[maps[pos], n // 2, first:first + keep, x] = word[:keep]
            continue
        first = band * columns.lanes + (8 if half == "hi" and not columns.half else 0)
        keep = min(8, rows - first)
        if keep > 0:
            out[maps[pos], first:first + keep, x] = word[:keep]
