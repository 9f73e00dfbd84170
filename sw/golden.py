"""Run a graph (:mod:`sw.graph`) on the network-level golden models of :mod:`hls_ref`.

This is the ``golden`` backend of ``tessera run``: every operator is computed with the integer
arithmetic the accelerators and the host implement, and TFLite's reference kernels agree with it
bit for bit (``tests/test_golden_vs_litert.py``). The quantization parameters each operator
needs (Q31 multipliers and shifts, clamps) are derived here from the tensors' scales, in the
same floating-point precision and order as TFLite, so that they are identical.
"""

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from hls_ref import layers
from hls_ref.quant import activation_range, quantize_multiplier
from hls_ref.softmax import softmax, softmax_params

from .graph import (
    Add,
    AveragePool2D,
    Conv2D,
    DepthwiseConv2D,
    FullyConnected,
    MaxPool2D,
    Reshape,
    Softmax,
)

__all__ = ["LayerRun", "conv_requant", "fc_requant", "prepare", "run_graph", "run_op"]


def _bits(tensor):
    return tensor.dtype.itemsize * 8


def _output_clamp(op, out):
    scale, zero_point = out.quant.single()
    return activation_range(op.activation.value, scale, zero_point, _bits(out))


def _effective_scales(graph, op):
    """Per-output-channel ``double(s_in) * double(s_w) / double(s_out)`` (float64 array)."""
    x, w, out = (graph.tensor(n) for n in (op.inputs[0], op.inputs[1], op.output))
    s_in, _ = x.quant.single()
    s_out, _ = out.quant.single()
    w_scales = np.broadcast_to(w.quant.scale.astype(np.float64), (out.shape[-1],))
    return np.array([float(s_in) * float(s_w) / float(s_out) for s_w in w_scales])


def conv_requant(graph, op):
    """:class:`hls_ref.layers.Requant` of a Conv2D / DepthwiseConv2D: fixed point.

    Channel ``c`` gets ``quantize_multiplier(double(s_in) * double(s_w[c]) / double(s_out))``
    (TFLite's ``PopulateConvolutionQuantizationParams``; per-tensor weight scales broadcast).
    """
    out = graph.tensor(op.output)
    pairs = [quantize_multiplier(float(e)) for e in _effective_scales(graph, op)]
    act_min, act_max = _output_clamp(op, out)
    return layers.Requant(np.array([m for m, _ in pairs], np.int64),
                          np.array([s for _, s in pairs], np.int64),
                          out.quant.single()[1], act_min, act_max)


def fc_requant(graph, op):
    """Requant of a FullyConnected layer: LiteRT's reference kernel scales the accumulators
    in double precision by the same effective scale, rounding ties away from zero."""
    return dataclasses.replace(conv_requant(graph, op),
                               real_scale=_effective_scales(graph, op))


def _add_params(graph, op):
    a, b, out = (graph.tensor(n) for n in (*op.inputs[:2], op.output))
    (s1, z1), (s2, z2), (so, zo) = a.quant.single(), b.quant.single(), out.quant.single()
    left_shift = 20                      # TFLite's value for int8 inputs
    twice_max = 2.0 * max(s1, s2)
    out_real = twice_max / (float(1 << left_shift) * so)
    m1, m2, mo = (quantize_multiplier(r) for r in (s1 / twice_max, s2 / twice_max, out_real))
    act_min, act_max = _output_clamp(op, out)
    return layers.AddParams(left_shift, (z1, *m1), (z2, *m2), (zo, *mo), act_min, act_max)


def _weights(tensor):
    zp = tensor.quant.zero_point if tensor.quant is not None else np.zeros(1, np.int64)
    if np.any(zp != zp.flat[0]):
        raise ValueError(f"tensor {tensor.name!r}: per-channel weight zero points are not "
                         "supported")
    return tensor.data, int(zp.flat[0])


def _bias(graph, op):
    return graph.tensor(op.inputs[2]).data if len(op.inputs) > 2 else None


def _derived_parameters(graph, op):
    """The constants an operator derives from its tensors' scales (multipliers, clamps)."""
    if isinstance(op, Conv2D | DepthwiseConv2D):
        return conv_requant(graph, op)
    if isinstance(op, FullyConnected):
        return fc_requant(graph, op)
    if isinstance(op, Add):
        return _add_params(graph, op)
    if isinstance(op, AveragePool2D | MaxPool2D):
        return _output_clamp(op, graph.tensor(op.output))
    if isinstance(op, Softmax):
        return softmax_params(op.beta, graph.tensor(op.inputs[0]).quant.single()[0])
    return None


def prepare(graph):
    """Derive every operator's constants once, for repeated runs of ``graph``; pass the result
    to :func:`run_graph` / :func:`run_op` as ``parameters``."""
    return {op.name: _derived_parameters(graph, op) for op in graph.ops}


def _compute(graph, op, values, derived):
    x_t = graph.tensor(op.inputs[0])
    x = values[op.inputs[0]]
    out_t = graph.tensor(op.output)
    if isinstance(op, Conv2D | DepthwiseConv2D):
        w, w_zp = _weights(graph.tensor(op.inputs[1]))
        if w_zp:
            raise ValueError(f"{op.name}: convolution weights must be symmetric (zero point 0)")
        _, zp_in = x_t.quant.single()
        geometry = dict(stride=op.stride, dilation=op.dilation,
                        padding=(op.padding.top, op.padding.bottom, op.padding.left,
                                 op.padding.right))
        if isinstance(op, Conv2D):
            y = layers.conv2d(x[0], w, _bias(graph, op), zp_in, derived, **geometry)
        else:
            y = layers.depthwise_conv2d(x[0], w[0], _bias(graph, op), zp_in, derived,
                                        depth_multiplier=op.depth_multiplier, **geometry)
        return y[None]
    if isinstance(op, FullyConnected):
        w, w_zp = _weights(graph.tensor(op.inputs[1]))
        _, zp_in = x_t.quant.single()
        rows = x.reshape(-1, w.shape[1])
        return layers.fully_connected(rows, w, _bias(graph, op), zp_in, derived,
                                      weight_zero_point=w_zp)
    if isinstance(op, Add):
        return layers.add(x, values[op.inputs[1]], derived)
    if isinstance(op, AveragePool2D | MaxPool2D):
        act_min, act_max = derived
        pool = layers.avg_pool2d if isinstance(op, AveragePool2D) else layers.max_pool2d
        padding = (op.padding.top, op.padding.bottom, op.padding.left, op.padding.right)
        return pool(x[0], op.filter, op.stride, padding, act_min, act_max)[None]
    if isinstance(op, Reshape):
        return x
    if isinstance(op, Softmax):
        return softmax(x, derived, out_bits=_bits(out_t))
    raise TypeError(f"{op.name}: no golden model for {type(op).__name__}")


def run_op(graph, op, values, parameters=None):
    """Run one operator; ``values`` maps its non-constant input names to arrays, and
    ``parameters`` (from :func:`prepare`) saves deriving the operator's constants again.

    Returns the output with the output tensor's shape and dtype.
    """
    out = graph.tensor(op.output)
    derived = (parameters[op.name] if parameters is not None
               else _derived_parameters(graph, op))
    return np.asarray(_compute(graph, op, values, derived)).reshape(out.shape).astype(out.dtype)


@dataclass
class LayerRun:
    """One operator of a golden-model run: its output and the time it took (seconds)."""

    op: object
    output: np.ndarray
    seconds: float


def run_graph(graph, x, parameters=None):
    """Run ``graph`` on input ``x`` (the model's input dtype and shape); ``parameters`` from
    :func:`prepare` when the graph runs many times.

    Returns ``(output, runs)``: the graph output with the model's dtype and shape, and one
    :class:`LayerRun` per operator in execution order.
    """
    inp = graph.input
    x = np.asarray(x)
    if x.shape != inp.shape or x.dtype != inp.dtype:
        raise ValueError(f"input must be {inp.dtype} of shape {inp.shape}, "
                         f"not {x.dtype} of shape {x.shape}")
    if parameters is None:
        parameters = prepare(graph)
    values = {inp.name: x}
    runs = []
    for op in graph.ops:
        start = time.perf_counter()
        y = run_op(graph, op, values, parameters)
        values[op.output] = y
        runs.append(LayerRun(op, y, time.perf_counter() - start))
    return values[graph.outputs[0]], runs
