"""Invocation-level golden models of the accelerators' commands (2D conv, depthwise conv, FC,
and the per-channel datapath's average pooling and add).

One call of :meth:`~ConvAccelerator.invoke` is one accelerator command on one tile, as the
hardware runs it: load the tile into PLM-sized arrays (capacities checked), pack activations
and weights into 16-bit ST operands with :func:`hls_ref.st.pack_activations` and
:func:`~hls_ref.st.pack_weights` (the words the tensor layout and weight blobs of
``docs/formats.md`` hold, as ``tests/test_hls_ref_formats.py`` shows), multiply
them with the ST golden model (:func:`hls_ref.st.st_product`) one operand pair at a time,
accumulate in 32-bit two's complement, and -- on ``q_flag`` -- requantize to ``out_bits``.

Flags across input-channel (or input-neuron) tiles, as in seed 002:

* ``acc_flag=False`` starts the accumulators from the folded bias of the quantization block;
  ``acc_flag=True`` adds this tile's products to the accumulators the previous command left.
* ``q_flag=True`` requantizes and returns the output tile; otherwise nothing is returned
  (partial sums stay in the accumulator PLM).

The tiled drivers (:func:`conv2d_tiled`, :func:`depthwise_conv2d_tiled`,
:func:`fully_connected_tiled`, :func:`avg_pool2d_tiled`, :func:`add_tiled`) are the host loop:
they cut a layer into commands (output-channel blocks, output-row stripes, input-channel tiles
innermost; a global average pool's input rows) and reassemble the output. Any tiling must give
the untiled layer's result (tests prove it).
"""

import itertools
from dataclasses import dataclass

import numpy as np

from .config import DEFAULT_CONFIG, Limits
from .formats import OUTPUT_WIDTHS
from .precision import Precision
from .quant import multiply_by_quantized_multiplier, scale_by_double_integer
from .st import pack_activations, pack_weights, st_product, wrap_signed

__all__ = [
    "ACC_BITS",
    "DEFAULT_LIMITS",
    "AddAccelerator",
    "Command",
    "ConvAccelerator",
    "DepthwiseAccelerator",
    "FCAccelerator",
    "InvocationError",
    "Limits",
    "PoolAccelerator",
    "add_tiled",
    "avg_pool2d_tiled",
    "conv2d_tiled",
    "depthwise_conv2d_tiled",
    "fully_connected_tiled",
    "row_tile",
    "tile_bounds",
]

ACC_BITS = 32


class InvocationError(ValueError):
    """A command the accelerator must refuse (the hardware sets an error status instead)."""


#: The default build's limits (:data:`hls_ref.config.DEFAULT_CONFIG`).
DEFAULT_LIMITS = DEFAULT_CONFIG.limits()


@dataclass(frozen=True)
class Command:
    """One accelerator command (the fields of a descriptor that matter to the arithmetic)."""

    precision: Precision = Precision.A8W8
    out_bits: int = 8
    kernel: tuple = (1, 1)
    stride: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)     # this tile's (top, bottom, left, right)
    pad_value: int = 0                 # the input zero point
    acc_flag: bool = False
    q_flag: bool = True


def _check_command(cmd, limits):
    if cmd.out_bits not in OUTPUT_WIDTHS:
        raise InvocationError(f"output width must be one of {OUTPUT_WIDTHS}, not "
                              f"{cmd.out_bits}")
    kh, kw = cmd.kernel
    if not (1 <= kh <= limits.max_kernel[0] and 1 <= kw <= limits.max_kernel[1]):
        raise InvocationError(f"kernel {kh}x{kw} exceeds the maximum "
                              f"{limits.max_kernel[0]}x{limits.max_kernel[1]}")
    if any(not 1 <= s <= limits.max_stride for s in cmd.stride):
        raise InvocationError(f"stride {cmd.stride} must be between 1 and the build's "
                              f"maximum {limits.max_stride} on each axis")
    top, bottom, left, right = cmd.padding
    if min(cmd.padding) < 0 or max(top, bottom) >= kh or max(left, right) >= kw:
        raise InvocationError(f"padding {cmd.padding} must be below the kernel size "
                              f"{kh}x{kw} on each axis")


def _check_capacity(what, needed, capacity):
    if needed > capacity:
        raise InvocationError(f"{what} needs {needed} words, the PLM holds {capacity}")


def _requantize(acc, qblock, out_bits):
    if qblock.real_scale is not None:
        # the integer algorithm (equal to round(double(acc) * scale), as LiteRT's FC kernel
        # computes it, for every int32 accumulator), saturated where a huge scale would
        # overflow: beyond the int16 clamp the saturation changes no output
        scaled = scale_by_double_integer(acc, qblock.real_scale, limit=1 << 31)
    else:
        scaled = multiply_by_quantized_multiplier(acc, qblock.multiplier, qblock.shift)
    low = max(qblock.act_min, -(1 << (out_bits - 1)))
    high = min(qblock.act_max, (1 << (out_bits - 1)) - 1)
    return np.clip(scaled + qblock.zero_point, low, high)


class _Accelerator:
    """Accumulator PLM state shared by the three accelerators."""

    def __init__(self, limits=DEFAULT_LIMITS):
        self.limits = limits
        self.acc = None

    def _accumulate(self, cmd, partial, qblock):
        if cmd.acc_flag:
            if self.acc is None or self.acc.shape != partial.shape:
                raise InvocationError("acc_flag set but the accumulators hold no partial sums "
                                      "of this tile's shape")
            acc = self.acc + partial
        else:
            if qblock.channels != partial.shape[-1]:
                raise InvocationError(f"quantization block has {qblock.channels} channels, "
                                      f"the tile {partial.shape[-1]}")
            acc = qblock.bias + partial
        self.acc = wrap_signed(acc, ACC_BITS)
        if not cmd.q_flag:
            return None
        return _requantize(self.acc, qblock, cmd.out_bits)


def _padded_taps(x, cmd, limits, pack=None):
    """Pad the tile with the pad value (then ``pack`` it, if given); return ``tap(i, j)``, the
    (Ho, Wo, ...) view of the result under kernel tap ``(i, j)``, and the output size (its
    capacity checked)."""
    top, bottom, left, right = cmd.padding
    xp = np.pad(x, ((top, bottom), (left, right), (0, 0)), constant_values=cmd.pad_value)
    if pack is not None:
        xp = pack(xp)
    (kh, kw), (sh, sw) = cmd.kernel, cmd.stride
    ho = (xp.shape[0] - kh) // sh + 1
    wo = (xp.shape[1] - kw) // sw + 1
    if ho < 1 or wo < 1:
        raise InvocationError(f"input tile {x.shape[:2]} is smaller than the kernel")
    _check_capacity("output tile", ho * wo * limits.pes, limits.plm_acc)

    def tap(i, j):
        return xp[i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw]

    return tap, ho, wo


class ConvAccelerator(_Accelerator):
    """2D convolution: one output channel per PE; ST lanes from consecutive input channels."""

    def invoke(self, cmd, x, w, qblock):
        """Run one command on input tile ``x`` (HWC, raw values), weights ``w`` (OHWI, O at
        most ``pes``) and quantization block ``qblock``; returns the output tile or None."""
        _check_command(cmd, self.limits)
        p = Precision.parse(cmd.precision)
        x, w = np.asarray(x, np.int64), np.asarray(w, np.int64)
        cout, kh, kw, cin = w.shape
        if (kh, kw) != tuple(cmd.kernel) or x.shape[2] != cin:
            raise InvocationError(f"weights {w.shape} do not match the command's kernel "
                                  f"{cmd.kernel} and the input's {x.shape[2]} channels")
        if cout > self.limits.pes:
            raise InvocationError(f"{cout} output channels exceed the {self.limits.pes} PEs")
        groups = -(-cin // p.lanes)
        _check_capacity("input tile", x.shape[0] * x.shape[1] * groups, self.limits.plm_in)
        _check_capacity("weight tile", cout * kh * kw * groups, self.limits.plm_w)
        # activations are packed once, padded: (Hp, Wp, G) ST words
        tap, ho, wo = _padded_taps(x, cmd, self.limits, lambda xp: pack_activations(xp, p))
        b = pack_weights(w, p)                                               # (O, kh, kw, G)
        partial = np.zeros((ho, wo, cout), np.int64)
        for i in range(kh):
            for j in range(kw):
                partial += st_product(tap(i, j)[:, :, None, :], b[None, None, :, i, j, :],
                                      p).sum(axis=-1)
        return self._accumulate(cmd, partial, qblock)


class DepthwiseAccelerator(_Accelerator):
    """Depthwise convolution: one channel per PE; ST lanes from the kernel window's taps."""

    def invoke(self, cmd, x, w, qblock):
        """``x`` HWC (C at most ``pes``), ``w`` HWC taps; see :meth:`ConvAccelerator.invoke`."""
        _check_command(cmd, self.limits)
        p = Precision.parse(cmd.precision)
        x, w = np.asarray(x, np.int64), np.asarray(w, np.int64)
        kh, kw, c = w.shape
        if (kh, kw) != tuple(cmd.kernel) or x.shape[2] != c:
            raise InvocationError(f"weights {w.shape} do not match the kernel {cmd.kernel} "
                                  f"and the input's {x.shape[2]} channels")
        if c > self.limits.pes:
            raise InvocationError(f"{c} channels exceed the {self.limits.pes} PEs")
        groups = -(-(kh * kw) // p.lanes)
        _check_capacity("input tile", x.shape[0] * x.shape[1] * c, self.limits.plm_in)
        _check_capacity("weight tile", c * groups, self.limits.plm_w)
        tap, _, _ = _padded_taps(x, cmd, self.limits)
        taps = np.stack([tap(i, j) for i in range(kh) for j in range(kw)], axis=-1)  # Ho,Wo,C,T
        a = pack_activations(taps, p)                                      # (Ho, Wo, C, G)
        b = pack_weights(w.reshape(kh * kw, c).T, p)                       # (C, G)
        partial = st_product(a, b[None, None], p).sum(axis=-1)
        return self._accumulate(cmd, partial, qblock)


class FCAccelerator(_Accelerator):
    """Fully connected: one output neuron per PE; ST lanes from consecutive inputs."""

    def invoke(self, cmd, x, w, qblock):
        """``x`` [in] or a batch [vectors, in], ``w`` [out (at most ``pes``), in];
        ``cmd.kernel`` etc. are ignored. Returns [out] (or [vectors, out]) or None."""
        p = Precision.parse(cmd.precision)
        if cmd.out_bits not in OUTPUT_WIDTHS:
            raise InvocationError(f"output width must be one of {OUTPUT_WIDTHS}, not "
                                  f"{cmd.out_bits}")
        x, w = np.asarray(x, np.int64), np.asarray(w, np.int64)
        if x.ndim not in (1, 2) or w.ndim != 2 or w.shape[1] != x.shape[-1]:
            raise InvocationError(f"weights {w.shape} do not match the {x.shape} inputs")
        if w.shape[0] > self.limits.pes:
            raise InvocationError(f"{w.shape[0]} outputs exceed the {self.limits.pes} PEs")
        groups = -(-x.shape[-1] // p.lanes)
        _check_capacity("input tile", groups * (x.shape[0] if x.ndim == 2 else 1),
                        self.limits.plm_in)
        _check_capacity("weight tile", w.shape[0] * groups, self.limits.plm_w)
        partial = st_product(pack_activations(x, p)[..., None, :], pack_weights(w, p),
                             p).sum(axis=-1)
        return self._accumulate(cmd, partial, qblock)


class PoolAccelerator(_Accelerator):
    """Global average pooling on the per-channel datapath: one channel per PE; every pixel of
    the tile is one operation (the activation times a weight of one), so each PE sums its
    channel over the tile. The quantization block's bias starts the sum, and its multiplier
    and shift divide it by the window's element count (``hls_ref.perchannel.pool_scale``:
    exact, with TFLite's rounding, for the counts and widths the compiler checks)."""

    def invoke(self, cmd, x, qblock):
        """``x`` HWC (C at most ``pes``); returns the (1, 1, C) output or None. Partial sums
        carry across commands (``acc_flag``) when a window is cut into row tiles."""
        if cmd.out_bits not in OUTPUT_WIDTHS:
            raise InvocationError(f"output width must be one of {OUTPUT_WIDTHS}, not "
                                  f"{cmd.out_bits}")
        x = np.asarray(x, np.int64)
        c = x.shape[2]
        if c > self.limits.pes:
            raise InvocationError(f"{c} channels exceed the {self.limits.pes} PEs")
        _check_capacity("input tile", x.shape[0] * x.shape[1] * self.limits.pes,
                        self.limits.plm_in)
        partial = x.sum(axis=(0, 1), keepdims=True)
        return self._accumulate(cmd, partial, qblock)


class AddAccelerator(_Accelerator):
    """TFLite's quantized ADD on the per-channel datapath, element by element: each input
    less its zero point, shifted left, scaled by its multiplier; the sum scaled to the output,
    plus the output zero point, clamped. The quantization block holds three entries: input A
    (``bias`` = its zero point), input B, the output (``bias`` = the left shift, of which the
    low five bits count) (``hls_ref.perchannel.add_qblock``).

    The hardware computes in 32 bits: the differences, the shifted inputs and the sum wrap
    modulo ``2**32`` (each scaling is :func:`hls_ref.quant.multiply_by_quantized_multiplier`
    on an int32). Where nothing wraps -- TFLite's int8 adds: ``|x - zp| < 2**9`` shifted by
    20 -- this is :func:`hls_ref.layers.add` exactly; the compiler refuses adds that could
    wrap."""

    def invoke(self, cmd, a, b, qblock):
        """``a``, ``b`` HWC of one shape (C at most ``pes``); returns the output tile or None
        (``q_flag`` clear). An add has no partial sums: ``acc_flag`` is refused."""
        if cmd.out_bits not in OUTPUT_WIDTHS:
            raise InvocationError(f"output width must be one of {OUTPUT_WIDTHS}, not "
                                  f"{cmd.out_bits}")
        if cmd.acc_flag:
            raise InvocationError("an add has no partial sums: acc_flag must be clear")
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        if a.shape != b.shape:
            raise InvocationError(f"inputs {a.shape} and {b.shape} differ")
        if a.shape[2] > self.limits.pes:
            raise InvocationError(f"{a.shape[2]} channels exceed the {self.limits.pes} PEs")
        _check_capacity("input tiles", 2 * a.shape[0] * a.shape[1] * self.limits.pes,
                        self.limits.plm_in)
        _check_capacity("output tile", a.shape[0] * a.shape[1] * self.limits.pes,
                        self.limits.plm_acc)
        if qblock.channels != 3:
            raise InvocationError(f"an add's quantization block has 3 entries, not "
                                  f"{qblock.channels}")
        self.acc = None
        if not cmd.q_flag:
            return None
        bits = cmd.out_bits
        low = max(qblock.act_min, -(1 << (bits - 1)))
        high = min(qblock.act_max, (1 << (bits - 1)) - 1)
        zp, mult, shift = (np.asarray(v, np.int64) for v in
                           (qblock.bias, qblock.multiplier, qblock.shift))
        left = int(zp[2]) & 31

        def scaled(x, k):
            shifted = wrap_signed(wrap_signed(x - zp[k], ACC_BITS) << left, ACC_BITS)
            return multiply_by_quantized_multiplier(shifted, mult[k], shift[k])

        total = wrap_signed(scaled(a, 0) + scaled(b, 1), ACC_BITS)
        out = multiply_by_quantized_multiplier(total, mult[2], shift[2]) + qblock.zero_point
        return np.clip(out, low, high)


def row_tile(out_rows, in_height, kernel, stride, pad_top, pad_bottom):
    """Input rows and tile padding for output rows ``[r0, r1)`` of a convolution.

    Returns ``(in_r0, in_r1, tile_top, tile_bottom)``: the input rows to load and the padding
    rows the command inserts above and below them.
    """
    r0, r1 = out_rows
    first = r0 * stride - pad_top
    last = (r1 - 1) * stride + kernel - pad_top          # exclusive
    in_r0, in_r1 = max(first, 0), min(last, in_height)
    bottom = last - in_r1
    if bottom > pad_bottom and r1 > 0:
        raise InvocationError(f"output rows {out_rows} reach below the padded input")
    return in_r0, in_r1, in_r0 - first, bottom


def tile_bounds(splits, total):
    """Tile boundaries from split points: strictly increasing, inside ``(0, total)``."""
    splits = [int(s) for s in splits]
    if any(b <= a for a, b in itertools.pairwise(splits)) or any(
            not 0 < s < total for s in splits):
        raise InvocationError(f"tile splits {tuple(splits)} must increase strictly within "
                              f"(0, {total})")
    return list(itertools.pairwise([0, *splits, total]))


def _conv_like_tiled(accelerator, x, w_tile, c_out, c_in, qblock, cmd, out_hw, *,
                     out_splits, row_splits, in_splits, depthwise):
    ho, wo = out_hw
    out = np.zeros((ho, wo, c_out), np.int64)
    top, bottom, left, right = cmd.padding
    kh = cmd.kernel[0]
    for o0, o1 in tile_bounds(out_splits, c_out):
        q = qblock.select(o0, o1)
        for r0, r1 in tile_bounds(row_splits, ho):
            in_r0, in_r1, t_top, t_bottom = row_tile((r0, r1), x.shape[0], kh, cmd.stride[0],
                                                     top, bottom)
            # a depthwise tile's input channels are its output channels
            tiles = [(o0, o1)] if depthwise else tile_bounds(in_splits, c_in)
            for k, (i0, i1) in enumerate(tiles):
                tile_cmd = Command(cmd.precision, cmd.out_bits, cmd.kernel, cmd.stride,
                                   (t_top, t_bottom, left, right), cmd.pad_value,
                                   acc_flag=k > 0, q_flag=k == len(tiles) - 1)
                y = accelerator.invoke(tile_cmd, x[in_r0:in_r1, :, i0:i1], w_tile(o0, o1, i0, i1),
                                       q)
            out[r0:r1, :, o0:o1] = y
    return out


def conv2d_tiled(x, w, qblock, cmd, *, out_splits=(), row_splits=(), in_splits=(),
                 limits=DEFAULT_LIMITS):
    """A whole 2D convolution as a sequence of commands.

    ``cmd`` carries the layer's precision, output width, kernel, stride, full padding and pad
    value; the ``*_splits`` are the tile boundaries along output channels, output rows and
    input channels (input-channel splits must be multiples of the precision's lanes).
    """
    x, w = np.asarray(x, np.int64), np.asarray(w, np.int64)
    lanes = Precision.parse(cmd.precision).lanes
    if any(s % lanes for s in in_splits):
        raise InvocationError(f"input-channel tiles must be multiples of {lanes} at "
                              f"{Precision.parse(cmd.precision).label}")
    top, bottom, left, right = cmd.padding
    ho = (x.shape[0] + top + bottom - cmd.kernel[0]) // cmd.stride[0] + 1
    wo = (x.shape[1] + left + right - cmd.kernel[1]) // cmd.stride[1] + 1
    return _conv_like_tiled(ConvAccelerator(limits), x,
                            lambda o0, o1, i0, i1: w[o0:o1, :, :, i0:i1], w.shape[0],
                            w.shape[3], qblock, cmd, (ho, wo), out_splits=out_splits,
                            row_splits=row_splits, in_splits=in_splits, depthwise=False)


def depthwise_conv2d_tiled(x, w, qblock, cmd, *, out_splits=(), row_splits=(),
                           limits=DEFAULT_LIMITS):
    """A whole depthwise convolution (multiplier 1) as commands over channel blocks and
    output-row stripes."""
    x, w = np.asarray(x, np.int64), np.asarray(w, np.int64)
    top, bottom, left, right = cmd.padding
    ho = (x.shape[0] + top + bottom - cmd.kernel[0]) // cmd.stride[0] + 1
    wo = (x.shape[1] + left + right - cmd.kernel[1]) // cmd.stride[1] + 1
    return _conv_like_tiled(DepthwiseAccelerator(limits), x,
                            lambda o0, o1, i0, i1: w[:, :, o0:o1], w.shape[2], w.shape[2],
                            qblock, cmd, (ho, wo), out_splits=out_splits,
                            row_splits=row_splits, in_splits=(), depthwise=True)


def fully_connected_tiled(x, w, qblock, cmd, *, out_splits=(), in_splits=(),
                          limits=DEFAULT_LIMITS):
    """A whole FC layer as commands over output blocks and (innermost) input tiles."""
    x, w = np.asarray(x, np.int64), np.asarray(w, np.int64)
    lanes = Precision.parse(cmd.precision).lanes
    if any(s % lanes for s in in_splits):
        raise InvocationError(f"input tiles must be multiples of {lanes}")
    accelerator = FCAccelerator(limits)
    out = np.zeros(w.shape[0], np.int64)
    for o0, o1 in tile_bounds(out_splits, w.shape[0]):
        tiles = tile_bounds(in_splits, w.shape[1])
        for k, (i0, i1) in enumerate(tiles):
            tile_cmd = Command(cmd.precision, cmd.out_bits, acc_flag=k > 0,
                               q_flag=k == len(tiles) - 1)
            y = accelerator.invoke(tile_cmd, x[i0:i1], w[o0:o1, i0:i1], qblock.select(o0, o1))
        out[o0:o1] = y
    return out


def avg_pool2d_tiled(x, qblock, cmd, *, out_splits=(), row_splits=(), limits=DEFAULT_LIMITS):
    """A global average pool (the window is the whole input) as commands over channel blocks
    and, innermost, input-row tiles whose partial sums carry over (``acc_flag``); returns the
    (1, 1, C) output."""
    x = np.asarray(x, np.int64)
    accelerator = PoolAccelerator(limits)
    out = np.zeros((1, 1, x.shape[2]), np.int64)
    for o0, o1 in tile_bounds(out_splits, x.shape[2]):
        tiles = tile_bounds(row_splits, x.shape[0])
        for k, (r0, r1) in enumerate(tiles):
            tile_cmd = Command(cmd.precision, cmd.out_bits, acc_flag=k > 0,
                               q_flag=k == len(tiles) - 1)
            y = accelerator.invoke(tile_cmd, x[r0:r1, :, o0:o1], qblock.select(o0, o1))
        out[..., o0:o1] = y
    return out


def add_tiled(a, b, qblock, cmd, *, out_splits=(), row_splits=(), limits=DEFAULT_LIMITS):
    """An element-wise add as commands over channel blocks and row stripes; ``qblock`` is the
    layer's three-entry block (every command loads the same one)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    accelerator = AddAccelerator(limits)
    out = np.zeros(a.shape, np.int64)
    for o0, o1 in tile_bounds(out_splits, a.shape[2]):
        for r0, r1 in tile_bounds(row_splits, a.shape[0]):
            out[r0:r1, :, o0:o1] = accelerator.invoke(
                Command(cmd.precision, cmd.out_bits), a[r0:r1, :, o0:o1],
                b[r0:r1, :, o0:o1], qblock)
    return out
