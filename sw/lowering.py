"""Lower graph layers to accelerator commands: quantization blocks, command templates, and the
accumulator no-overflow proof.

:func:`lower_layer` turns a Conv2D, DepthwiseConv2D or FullyConnected operator into what the
accelerators load (:class:`hls_ref.formats.QuantBlock` with the input zero point folded into
the bias, and a :class:`hls_ref.invocation.Command` template); :func:`run_layer_tiled` runs a
layer through the invocation-level golden model under a given tiling.
"""

from dataclasses import dataclass

import numpy as np

from hls_ref import Precision
from hls_ref.formats import QuantBlock, accumulator_bound, fold_input_zero_point
from hls_ref.invocation import (
    ACC_BITS,
    DEFAULT_LIMITS,
    Command,
    conv2d_tiled,
    depthwise_conv2d_tiled,
    fully_connected_tiled,
)

from .golden import conv_requant, fc_requant
from .graph import Conv2D, DepthwiseConv2D, FullyConnected

__all__ = ["CompileError", "LoweredLayer", "lower_layer", "run_layer_tiled"]


class CompileError(ValueError):
    """A layer the accelerators cannot run; the message names the layer and the limit."""


@dataclass
class LoweredLayer:
    """A layer as the accelerators see it."""

    op: object
    weights: np.ndarray        # OHWI (conv), HWC (depthwise) or [out, in] (FC)
    qblock: QuantBlock
    command: Command
    bound: int                 # largest |accumulator| over all inputs and channels


def lower_layer(graph, op, precision=Precision.A8W8, out_bits=8):
    """Lower ``op`` for ``precision``; raises :class:`CompileError` naming the layer when it
    cannot run (dilation, depth multiplier, weight zero point, accumulator overflow)."""
    precision = Precision.parse(precision)
    if not isinstance(op, Conv2D | DepthwiseConv2D | FullyConnected):
        raise CompileError(f"{op.name}: {op.kind} runs on the host, not on an accelerator")
    x = graph.tensor(op.inputs[0])
    w_t = graph.tensor(op.inputs[1])
    _, zp_in = x.quant.single()
    if np.any(w_t.quant.zero_point != 0):
        raise CompileError(f"{op.name}: weights with a non-zero zero point are not supported "
                           "by the accelerators (TFLite int8 weights are symmetric)")
    bias = graph.tensor(op.inputs[2]).data if len(op.inputs) > 2 else None
    if isinstance(op, Conv2D | DepthwiseConv2D):
        if tuple(op.dilation) != (1, 1):
            raise CompileError(f"{op.name}: dilation {op.dilation} is not supported")
        requant = conv_requant(graph, op)
        if isinstance(op, DepthwiseConv2D):
            if op.depth_multiplier != 1:
                raise CompileError(f"{op.name}: depth multiplier {op.depth_multiplier} is not "
                                   "supported")
            weights = w_t.data[0]
            by_channel = weights.reshape(-1, weights.shape[-1]).T
        else:
            weights = w_t.data
            by_channel = weights
        command = Command(precision, out_bits, kernel=weights.shape[-3:-1] if
                          isinstance(op, Conv2D) else weights.shape[:2],
                          stride=tuple(op.stride),
                          padding=(op.padding.top, op.padding.bottom, op.padding.left,
                                   op.padding.right), pad_value=zp_in)
    else:
        requant = fc_requant(graph, op)
        weights = by_channel = w_t.data
        command = Command(precision, out_bits, pad_value=zp_in)
    folded = fold_input_zero_point(bias, by_channel, zp_in)
    bound = accumulator_bound(by_channel, folded, precision.act_bits)
    if bound.max() >= 1 << (ACC_BITS - 1):
        channel = int(np.argmax(bound))
        raise CompileError(f"{op.name}: output channel {channel} can reach an accumulator of "
                           f"{int(bound[channel])}, beyond the {ACC_BITS}-bit accumulator")
    real_scale = requant.real_scale
    qblock = QuantBlock(requant.zero_point, requant.act_min, requant.act_max, folded,
                        np.broadcast_to(requant.multiplier, folded.shape).copy(),
                        np.broadcast_to(requant.shift, folded.shape).copy(),
                        None if real_scale is None
                        else np.broadcast_to(real_scale, folded.shape).copy())
    return LoweredLayer(op, np.asarray(weights, np.int64), qblock, command, int(bound.max()))


def run_layer_tiled(graph, op, x, out_splits=(), row_splits=(), in_splits=(),
                    limits=DEFAULT_LIMITS):
    """Run layer ``op`` on its input ``x`` (the tensor as the graph holds it) through the
    invocation-level models with the given tile boundaries; returns the output tensor."""
    layer = lower_layer(graph, op)
    out = graph.tensor(op.output)
    if isinstance(op, FullyConnected):
        rows = np.asarray(x).reshape(-1, layer.weights.shape[1])
        y = np.stack([fully_connected_tiled(row, layer.weights, layer.qblock, layer.command,
                                            out_splits=out_splits, in_splits=in_splits,
                                            limits=limits) for row in rows])
    elif isinstance(op, DepthwiseConv2D):
        y = depthwise_conv2d_tiled(np.asarray(x)[0], layer.weights, layer.qblock,
                                   layer.command, out_splits=out_splits,
                                   row_splits=row_splits, limits=limits)
    else:
        y = conv2d_tiled(np.asarray(x)[0], layer.weights, layer.qblock, layer.command,
                         out_splits=out_splits, row_splits=row_splits, in_splits=in_splits,
                         limits=limits)
    return y.reshape(out.shape).astype(out.dtype)
