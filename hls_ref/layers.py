"""Network-level golden models: whole layers, vectorised with numpy, integer-exact.

These functions define what a layer computes, with TFLite's integer semantics; the invocation
-level models (:mod:`hls_ref.invocation`) and the RTL must reproduce them bit for bit, and
tests check them against TFLite's reference kernels. Activations are HWC (batch 1), Conv2D
weights OHWI, depthwise weights HWC, FC weights ``[out, in]``; all values are raw quantized
integers. Accumulation is in int64 and then checked to fit int32
(:class:`AccumulatorOverflowError`), so an overflow is reported rather than wrapped silently.
"""

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .quant import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier, scale_by_double

__all__ = [
    "AccumulatorOverflowError",
    "AddParams",
    "Requant",
    "add",
    "avg_pool2d",
    "conv2d",
    "conv2d_acc",
    "depthwise_conv2d",
    "depthwise_conv2d_acc",
    "fully_connected",
    "fully_connected_acc",
    "max_pool2d",
]


class AccumulatorOverflowError(ArithmeticError):
    """An accumulator left the int32 range."""


@dataclass(frozen=True)
class Requant:
    """Output stage of a layer: scale the accumulators, add the output zero point, clamp.

    ``multiplier`` and ``shift`` are int64 arrays with one entry per output channel (or one
    entry, broadcast): the fixed-point scaling of convolutions. When ``real_scale`` (float64,
    same broadcasting) is given, the accumulators are scaled in double precision instead, as
    TFLite's FullyConnected does. ``act_min``/``act_max`` combine the output width and the
    fused activation (ReLU is a clamp at the zero point).
    """

    multiplier: np.ndarray
    shift: np.ndarray
    zero_point: int
    act_min: int
    act_max: int
    real_scale: np.ndarray | None = None

    def scale(self, acc):
        """The scaled accumulators, before the zero point and the clamp."""
        if self.real_scale is not None:
            return scale_by_double(acc, self.real_scale)
        return multiply_by_quantized_multiplier(acc, self.multiplier, self.shift)

    def apply(self, acc):
        return np.clip(self.scale(acc) + self.zero_point, self.act_min, self.act_max)


def _check_int32(acc, what):
    if acc.size and (acc.min() < INT32_MIN or acc.max() > INT32_MAX):
        raise AccumulatorOverflowError(f"{what}: accumulator range [{acc.min()}, {acc.max()}] "
                                  "exceeds int32")
    return acc


def _windows(x, kernel, stride, dilation, padding, pad_value):
    """(Ho, Wo, C, kh, kw) view of the padded input's receptive fields."""
    top, bottom, left, right = padding
    xp = np.pad(x, ((top, bottom), (left, right), (0, 0)), constant_values=pad_value)
    kh, kw = kernel
    dh, dw = dilation
    eff = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    win = sliding_window_view(xp, eff, axis=(0, 1))
    return win[::stride[0], ::stride[1], :, ::dh, ::dw]


def conv2d_acc(x, w, bias, input_zero_point, stride=(1, 1), dilation=(1, 1),
               padding=(0, 0, 0, 0), weight_zero_point=0):
    """int32 accumulators of a 2D convolution: ``sum((x - zx) * (w - zw)) + bias``.

    ``x`` HWC, ``w`` OHWI, ``bias`` per output channel (or None); padding is
    ``(top, bottom, left, right)`` and contributes nothing (TFLite pads with the zero point).
    Returns an int64 array (Ho, Wo, O) whose values are checked to fit int32.
    """
    o, kh, kw, c = w.shape
    xs = np.asarray(x, np.int64) - input_zero_point
    ws = np.asarray(w, np.int64) - weight_zero_point
    win = _windows(xs, (kh, kw), stride, dilation, padding, 0)
    ho, wo = win.shape[:2]
    patches = win.transpose(0, 1, 3, 4, 2).reshape(ho * wo, kh * kw * c)
    acc = patches @ ws.reshape(o, kh * kw * c).T
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return _check_int32(acc.reshape(ho, wo, o), "conv2d")


def conv2d(x, w, bias, input_zero_point, requant, **geometry):
    """2D convolution with requantization (see :func:`conv2d_acc` for the arguments)."""
    return requant.apply(conv2d_acc(x, w, bias, input_zero_point, **geometry))


def depthwise_conv2d_acc(x, w, bias, input_zero_point, stride=(1, 1), dilation=(1, 1),
                         padding=(0, 0, 0, 0), depth_multiplier=1):
    """int32 accumulators of a depthwise convolution; ``w`` is HWC with C = Cin x multiplier.

    Output channel ``c`` reads input channel ``c // depth_multiplier`` (TFLite's order).
    """
    kh, kw, _ = w.shape
    xs = np.asarray(x, np.int64) - input_zero_point
    if depth_multiplier != 1:
        xs = np.repeat(xs, depth_multiplier, axis=2)
    win = _windows(xs, (kh, kw), stride, dilation, padding, 0)
    acc = np.einsum("hwcij,ijc->hwc", win, np.asarray(w, np.int64))
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return _check_int32(acc, "depthwise_conv2d")


def depthwise_conv2d(x, w, bias, input_zero_point, requant, **geometry):
    """Depthwise convolution with requantization."""
    return requant.apply(depthwise_conv2d_acc(x, w, bias, input_zero_point, **geometry))


def fully_connected_acc(x, w, bias, input_zero_point, weight_zero_point=0):
    """int32 accumulators of a fully connected layer: ``x`` [rows, in], ``w`` [out, in]."""
    xs = np.asarray(x, np.int64) - input_zero_point
    acc = xs @ (np.asarray(w, np.int64) - weight_zero_point).T
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    return _check_int32(acc, "fully_connected")


def fully_connected(x, w, bias, input_zero_point, requant, weight_zero_point=0):
    """Fully connected layer with requantization."""
    return requant.apply(fully_connected_acc(x, w, bias, input_zero_point, weight_zero_point))


@dataclass(frozen=True)
class AddParams:
    """TFLite's quantized ADD: inputs rescaled to a common Q(31-left_shift) scale, summed,
    rescaled to the output."""

    left_shift: int
    input1: tuple  # (zero_point, multiplier, shift)
    input2: tuple
    output: tuple  # (zero_point, multiplier, shift)
    act_min: int
    act_max: int


def add(a, b, params):
    """Element-wise quantized addition (TFLite ``ADD``, int8/int16 general path)."""
    scale = multiply_by_quantized_multiplier

    def scaled(x, zp_mult_shift):
        zp, mult, shift = zp_mult_shift
        shifted = (np.asarray(x, np.int64) - zp) << params.left_shift
        return scale(shifted, mult, shift)

    total = scaled(a, params.input1) + scaled(b, params.input2)
    zp, mult, shift = params.output
    out = scale(total, mult, shift) + zp
    return np.clip(out, params.act_min, params.act_max)


def _pool_windows(x, filt, stride, padding, pad_value):
    return _windows(np.asarray(x, np.int64), filt, stride, (1, 1), padding, pad_value)


def avg_pool2d(x, filt, stride, padding, act_min, act_max):
    """Average pooling over in-bounds elements, rounded half away from zero (TFLite int8)."""
    values = _pool_windows(x, filt, stride, padding, 0)
    ones = np.ones((*np.asarray(x).shape[:2], 1), np.int64)
    counts = _pool_windows(ones, filt, stride, padding, 0).sum(axis=(3, 4))
    total = values.sum(axis=(3, 4))
    half = counts // 2
    # C division truncates toward zero.
    rounded = np.where(total > 0, (total + half) // counts, -((-(total - half)) // counts))
    return np.clip(rounded, act_min, act_max)


def max_pool2d(x, filt, stride, padding, act_min, act_max):
    """Max pooling; padded positions (filled with the int64 minimum) never win."""
    values = _pool_windows(x, filt, stride, padding, np.iinfo(np.int64).min)
    return np.clip(values.max(axis=(3, 4)), act_min, act_max)
