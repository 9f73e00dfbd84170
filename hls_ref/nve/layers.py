"""Bit-exact golden model of one NVE (Neuro Vector Engine, seed 003) convolution layer.

An NVE layer is a 2D convolution with sparse map connectivity: output map ``m`` reads only the
input maps listed in ``connections[m]``, and only those (input, output) pairs have weights.
Subsampling is not a separate operator: a K x K convolution followed by 2 x 2 subsampling is
evaluated as one (K+1) x (K+1) convolution with stride 2 (:func:`merge_pooling`).

Numbers, all raw integers:

* input pixels are int8, weights and biases int16;
* an output pixel's accumulator is ``bias[m] + sum(w * p)`` over the connected input maps and
  the kernel taps, wrapped to int32 (:func:`hls_ref.nve.numerics.wrap_acc`). Wrapping addition
  is addition modulo 2**32, which is associative and commutative, so the result does not depend
  on the order in which the hardware (or this model) adds the products; the model sums exactly
  in int64 and wraps once at the end;
* the output pixel is ``activate(acc, shift, lut)`` (int8), the one activation definition of
  :mod:`hls_ref.nve.numerics`.

Layouts: maps are CHW, i.e. inputs ``[in_maps, in_h, in_w]`` and outputs
``[out_maps, out_h, out_w]``; the weights of output map ``m`` are
``[len(connections[m]), kernel_h, kernel_w]`` in the order of ``connections[m]``.

Padding is ``(top, bottom, left, right)`` in rows/columns of the input. The NVE evaluates
``out_h x out_w`` windows from the corner of the padded map, so the padded input must span
exactly ``(out - 1) * stride + kernel``: a positive value adds zero rows/columns, a negative one
drops rows/columns of the input that the layer never reads.
"""

from dataclasses import dataclass

import numpy as np

from . import numerics

__all__ = [
    "PIXEL_MAX",
    "PIXEL_MIN",
    "WEIGHT_MAX",
    "WEIGHT_MIN",
    "NveLayer",
    "conv_layer",
    "merge_bias",
    "merge_pooling",
    "pad_maps",
    "random_layer_data",
    "reference_loops",
]

PIXEL_MIN, PIXEL_MAX = -128, 127  # int8 pixels
WEIGHT_MIN, WEIGHT_MAX = -(1 << 15), (1 << 15) - 1  # int16 weights and biases

_POSITIVE_FIELDS = ("in_maps", "in_h", "in_w", "out_h", "out_w", "kernel_h", "kernel_w",
                    "stride_h", "stride_w")


def _is_int(value):
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclass(frozen=True)
class NveLayer:
    """Geometry and connectivity of one NVE convolution layer (sizes in pixels).

    ``in_maps x in_h x in_w`` is the producer's output (or the frame), ``out_h x out_w`` the
    size of every output map. ``kernel_h x kernel_w`` and ``stride_h x stride_w`` are the
    (merged) kernel and the subsampling step. ``connections[m]`` lists the input maps output
    map ``m`` reads (lists are accepted and stored as tuples). ``pad`` is
    ``(top, bottom, left, right)``: positive = zero rows/columns, negative = input
    rows/columns never read; the padded input must span exactly
    ``(out - 1) * stride + kernel`` in both directions.

    Raises :class:`ValueError` naming the offending field and the limit it breaks.
    """

    in_maps: int
    in_h: int
    in_w: int
    out_h: int
    out_w: int
    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    connections: tuple
    pad: tuple = (0, 0, 0, 0)

    def __post_init__(self):
        for name in _POSITIVE_FIELDS:
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"NveLayer.{name} must be an integer >= 1, not {value!r}")
            object.__setattr__(self, name, int(value))
        self._set_pad()
        self._set_connections()

    def _set_pad(self):
        try:
            pad = tuple(self.pad)
        except TypeError:
            pad = ()
        if len(pad) != 4 or not all(_is_int(p) for p in pad):
            raise ValueError(f"NveLayer.pad must be four integers (top, bottom, left, right), "
                             f"not {self.pad!r}")
        pad = tuple(int(p) for p in pad)
        object.__setattr__(self, "pad", pad)
        top, bottom, left, right = pad
        for axis, size, before, after, out, kernel, stride in (
                ("height", self.in_h, top, bottom, self.out_h, self.kernel_h, self.stride_h),
                ("width", self.in_w, left, right, self.out_w, self.kernel_w, self.stride_w)):
            span = (out - 1) * stride + kernel
            if size + before + after != span:
                raise ValueError(
                    f"NveLayer.pad: the padded input {axis} {size} + {before} + {after} = "
                    f"{size + before + after} must equal (out - 1) * stride + kernel = "
                    f"({out} - 1) * {stride} + {kernel} = {span}")
            cropped = max(-before, 0) + max(-after, 0)
            if cropped >= size:
                raise ValueError(f"NveLayer.pad: negative padding drops {cropped} of the "
                                 f"{size} input rows/columns along the {axis}; at most "
                                 f"{size - 1} may be dropped")

    def _set_connections(self):
        try:
            table = tuple(tuple(inputs) for inputs in self.connections)
        except TypeError:
            raise ValueError(f"NveLayer.connections must be a sequence of sequences of input "
                             f"map indices, not {self.connections!r}") from None
        if not table:
            raise ValueError("NveLayer.connections must list at least one output map")
        for m, inputs in enumerate(table):
            if not inputs:
                raise ValueError(f"NveLayer.connections[{m}] is empty; every output map "
                                 f"reads at least one input map")
            for i in inputs:
                if not _is_int(i) or not 0 <= i < self.in_maps:
                    raise ValueError(f"NveLayer.connections[{m}]: input map {i!r} is not in "
                                     f"0 ... {self.in_maps - 1} (in_maps = {self.in_maps})")
            if len(set(inputs)) != len(inputs):
                raise ValueError(f"NveLayer.connections[{m}] lists an input map twice: "
                                 f"{list(inputs)}")
        object.__setattr__(self, "connections",
                           tuple(tuple(int(i) for i in inputs) for inputs in table))

    @property
    def out_maps(self):
        """Number of output maps."""
        return len(self.connections)

    @property
    def pairs(self):
        """Connected (input map, output map) pairs, i.e. kernels of the layer."""
        return sum(len(inputs) for inputs in self.connections)

    @property
    def macs(self):
        """Multiply-accumulates of one layer evaluation: out_h * out_w * kh * kw * pairs."""
        return self.out_h * self.out_w * self.kernel_h * self.kernel_w * self.pairs

    @property
    def in_shape(self):
        """(in_maps, in_h, in_w) of the input array."""
        return (self.in_maps, self.in_h, self.in_w)

    @property
    def out_shape(self):
        """(out_maps, out_h, out_w) of the output and accumulator arrays."""
        return (self.out_maps, self.out_h, self.out_w)

    def weight_shape(self, m):
        """(len(connections[m]), kernel_h, kernel_w) of output map ``m``'s weights."""
        return (len(self.connections[m]), self.kernel_h, self.kernel_w)


def _integers(x, what, lo, hi, shape=None):
    """``x`` as an int64 array, checked for an integer dtype, ``shape`` and the range lo..hi."""
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{what} must be integers, not {x.dtype}")
    if shape is not None and x.shape != tuple(shape):
        raise ValueError(f"{what} must have shape {tuple(shape)}, not {x.shape}")
    if x.size and (x.min() < lo or x.max() > hi):
        raise ValueError(f"{what} must lie in {lo} ... {hi}; found {x.min()} ... {x.max()}")
    return x.astype(np.int64)


def _check_data(inputs, weights, bias, layer):
    """inputs, per-map weights and bias as int64 arrays, checked against ``layer``."""
    x = _integers(inputs, "inputs (int8 pixels)", PIXEL_MIN, PIXEL_MAX, layer.in_shape)
    if len(weights) != layer.out_maps:
        raise ValueError(f"weights must hold one array per output map ({layer.out_maps}), "
                         f"not {len(weights)}")
    ws = [_integers(weights[m], f"weights[{m}] (int16)", WEIGHT_MIN, WEIGHT_MAX,
                    layer.weight_shape(m)) for m in range(layer.out_maps)]
    b = _integers(bias, "bias (int16)", WEIGHT_MIN, WEIGHT_MAX, (layer.out_maps,))
    return x, ws, b


def pad_maps(x, pad):
    """``[C, H, W]`` maps cropped by negative and zero-extended by positive
    ``pad = (top, bottom, left, right)`` (rows/columns); the dtype is kept."""
    top, bottom, left, right = pad
    h, w = x.shape[1:]
    x = x[:, max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
    return np.pad(x, ((0, 0), (max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))))


def _accumulate(x, ws, b, layer):
    """Exact (unwrapped) int64 accumulators [maps, out_h, out_w] of checked data.

    One multiply-add per (connected pair, tap) over a whole output map: the tap's inputs are a
    strided view of the padded map, so nothing is copied per window. Magnitudes stay below
    taps * 2**22 + 2**15, far inside int64 for any layer that fits in memory.
    """
    xp = pad_maps(x, layer.pad)
    kh, kw, sh, sw = layer.kernel_h, layer.kernel_w, layer.stride_h, layer.stride_w
    rows, cols = (layer.out_h - 1) * sh + 1, (layer.out_w - 1) * sw + 1
    acc = np.empty(layer.out_shape, np.int64)
    product = np.empty((layer.out_h, layer.out_w), np.int64)
    for m, inputs in enumerate(layer.connections):
        acc[m] = b[m]
        for j, i in enumerate(inputs):
            for a in range(kh):
                for c in range(kw):
                    tap = xp[i, a:a + rows:sh, c:c + cols:sw]
                    np.multiply(tap, ws[m][j, a, c], out=product)
                    acc[m] += product
    return acc


def conv_layer(inputs, weights, bias, layer, shift, lut):
    """One NVE layer, bit-exact: ``(outputs, accumulators)``.

    ``inputs``: int8 pixels ``[in_maps, in_h, in_w]``; ``weights``: one int16 array
    ``[len(connections[m]), kernel_h, kernel_w]`` per output map ``m`` (a list, or an array
    when every map has as many inputs); ``bias``: int16 ``[out_maps]``; ``layer``: an
    :class:`NveLayer`; ``shift`` (0 ... 31) and ``lut`` (1024 int8 entries) as in
    :func:`hls_ref.nve.numerics.activate`. Any integer dtype is accepted; values outside
    int8 / int16 raise :class:`ValueError`.

    Returns int8 outputs and int32 accumulators, both ``[out_maps, out_h, out_w]``:
    ``acc = wrap32(bias[m] + sum over i in connections[m], taps (a, c) of
    w[m][j, a, c] * padded[i, y * stride_h + a, x * stride_w + c])`` with ``j`` the position of
    ``i`` in ``connections[m]``; ``out = activate(acc, shift, lut)``.
    """
    x, ws, b = _check_data(inputs, weights, bias, layer)
    acc = numerics.wrap_acc(_accumulate(x, ws, b, layer))
    return numerics.activate(acc, shift, lut), acc.astype(np.int32)


def merge_pooling(w):
    """The (K+1) x (K+1) stride-2 kernel of a K x K convolution followed by 2 x 2 pooling.

    ``w``: integer kernels ``[..., kh, kw]`` (leading axes, e.g. input maps, are kept).
    Returns int64 ``[..., kh + 1, kw + 1]``, the sum of the four copies of ``w`` shifted by 0 or
    1 row and 0 or 1 column. A stride-1 convolution followed by 2 x 2 *sum* pooling with stride 2
    equals the merged convolution with stride 2, exactly, since both are linear in the pixels.

    Average pooling is the sum divided by 4: the merged kernel keeps the sum, and the 1/4 goes
    into the activation (two more bits of ``shift``), so no weight precision is lost. Pooling
    must act on the accumulators (before the activation) for the merge to be exact. The bias
    is pooled too: use :func:`merge_bias`. Raises :class:`OverflowError` when a merged weight
    leaves int16.
    """
    w = _integers(w, "merge_pooling kernel", np.iinfo(np.int64).min // 8,
                  np.iinfo(np.int64).max // 8)
    if w.ndim < 2:
        raise ValueError(f"merge_pooling needs kernels [..., kh, kw], not shape {w.shape}")
    kh, kw = w.shape[-2:]
    merged = np.zeros((*w.shape[:-2], kh + 1, kw + 1), np.int64)
    for dy in (0, 1):
        for dx in (0, 1):
            merged[..., dy:dy + kh, dx:dx + kw] += w
    _check_int16(merged, "merged kernel")
    return merged


def merge_bias(bias):
    """Bias of a merged convolution/pooling layer: ``4 * bias`` (each pooled output sums four
    convolution outputs, each carrying the bias). int64; :class:`OverflowError` past int16."""
    b = _integers(bias, "merge_bias bias", np.iinfo(np.int64).min // 8,
                  np.iinfo(np.int64).max // 8)
    merged = 4 * b
    _check_int16(merged, "merged bias")
    return merged


def _check_int16(x, what):
    if x.size and (x.min() < WEIGHT_MIN or x.max() > WEIGHT_MAX):
        raise OverflowError(f"{what} range {x.min()} ... {x.max()} leaves int16 "
                            f"({WEIGHT_MIN} ... {WEIGHT_MAX})")


def random_layer_data(layer, rng):
    """Random ``(inputs, weights, bias)`` for ``layer``, uniform over the full formats.

    ``rng``: a :class:`numpy.random.Generator`. ``inputs`` int8 ``layer.in_shape``;
    ``weights`` a list with one int16 ``layer.weight_shape(m)`` array per output map; ``bias``
    int16 ``[out_maps]``.
    """
    inputs = rng.integers(PIXEL_MIN, PIXEL_MAX, layer.in_shape, endpoint=True, dtype=np.int8)
    weights = [rng.integers(WEIGHT_MIN, WEIGHT_MAX, layer.weight_shape(m), endpoint=True,
                            dtype=np.int16) for m in range(layer.out_maps)]
    bias = rng.integers(WEIGHT_MIN, WEIGHT_MAX, layer.out_maps, endpoint=True, dtype=np.int16)
    return inputs, weights, bias


def reference_loops(inputs, weights, bias, layer, shift, lut):
    """:func:`conv_layer` written as plain nested loops over Python integers (for tests).

    Independent of :func:`conv_layer`'s padding and vectorisation: every tap maps its padded
    coordinate back to an input coordinate and reads zero outside the input, and the int32
    wrap is done with Python integers. Slow; meant for small layers only.
    """
    x, ws, b = _check_data(inputs, weights, bias, layer)
    top, _, left, _ = layer.pad
    acc = np.zeros(layer.out_shape, np.int64)
    for m, conn in enumerate(layer.connections):
        for y in range(layer.out_h):
            for xo in range(layer.out_w):
                total = int(b[m])
                for j, i in enumerate(conn):
                    for a in range(layer.kernel_h):
                        for c in range(layer.kernel_w):
                            # Padded coordinate minus the top/left padding; a negative padding
                            # moves the window past the input's dropped first rows/columns.
                            row = y * layer.stride_h + a - top
                            col = xo * layer.stride_w + c - left
                            if 0 <= row < layer.in_h and 0 <= col < layer.in_w:
                                total += int(ws[m][j, a, c]) * int(x[i, row, col])
                acc[m, y, xo] = (total + (1 << 31)) % (1 << 32) - (1 << 31)
    return numerics.activate(acc, shift, lut), acc.astype(np.int32)
