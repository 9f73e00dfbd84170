"""Import a quantized ``.tflite`` model into Tessera's graph IR (:mod:`sw.graph`).

Only int8-quantized models are accepted: int8 activations, int8 weights, int32 biases (the
scheme the golden models are proven bit-exact on; TFLite's 16x8 scheme is refused, with the
tensor named). Operators outside :data:`SUPPORTED` are collected and reported together in one
:class:`UnsupportedModelError`, by TFLite name and count.
"""

from collections import Counter
from pathlib import Path

import numpy as np
import tflite
from tflite.ActivationFunctionType import ActivationFunctionType
from tflite.BuiltinOperator import BuiltinOperator
from tflite.Padding import Padding as TflitePadding
from tflite.TensorType import TensorType

from .graph import (
    Activation,
    Add,
    AveragePool2D,
    Conv2D,
    DepthwiseConv2D,
    FullyConnected,
    Graph,
    MaxPool2D,
    Padding,
    QuantParams,
    Reshape,
    Softmax,
    Tensor,
    same_padding,
)
from .models import model_path

__all__ = ["SUPPORTED", "UnsupportedModelError", "load_model"]

_OPERATOR_NAMES = {code: name for name, code in vars(BuiltinOperator).items()
                   if not name.startswith("_")}

_DTYPES = {
    TensorType.INT8: np.dtype(np.int8),
    TensorType.INT16: np.dtype(np.int16),
    TensorType.INT32: np.dtype(np.int32),
    TensorType.INT64: np.dtype(np.int64),
    TensorType.UINT8: np.dtype(np.uint8),
    TensorType.FLOAT32: np.dtype(np.float32),
}

_ACTIVATIONS = {
    ActivationFunctionType.NONE: Activation.NONE,
    ActivationFunctionType.RELU: Activation.RELU,
    ActivationFunctionType.RELU6: Activation.RELU6,
    ActivationFunctionType.RELU_N1_TO_1: Activation.RELU_N1_TO_1,
}


class UnsupportedModelError(ValueError):
    """The model uses operators, types or options Tessera cannot run; the message names them."""


def _options(op, cls):
    table = op.BuiltinOptions()
    options = cls()
    options.Init(table.Bytes, table.Pos)
    return options


def _activation(code, where):
    if code not in _ACTIVATIONS:
        raise UnsupportedModelError(f"{where}: unsupported fused activation code {code}")
    return _ACTIVATIONS[code]


def _spatial_padding(padding_code, in_hw, kernel_hw, stride, dilation):
    if padding_code == TflitePadding.VALID:
        return Padding()
    (top, bottom), (left, right) = (
        same_padding(in_hw[i], kernel_hw[i], stride[i], dilation[i]) for i in range(2))
    return Padding(top, bottom, left, right)


def _convert_conv(op, name, inputs, outputs, tensors):
    o = _options(op, tflite.Conv2DOptions)
    x, w = tensors[inputs[0]], tensors[inputs[1]]
    stride = (o.StrideH(), o.StrideW())
    dilation = (o.DilationHFactor(), o.DilationWFactor())
    return Conv2D(name, inputs, outputs, stride=stride, dilation=dilation,
                  padding=_spatial_padding(o.Padding(), x.shape[1:3], w.shape[1:3], stride,
                                           dilation),
                  activation=_activation(o.FusedActivationFunction(), name))


def _convert_depthwise(op, name, inputs, outputs, tensors):
    o = _options(op, tflite.DepthwiseConv2DOptions)
    x, w = tensors[inputs[0]], tensors[inputs[1]]
    stride = (o.StrideH(), o.StrideW())
    dilation = (o.DilationHFactor(), o.DilationWFactor())
    multiplier = w.shape[3] // x.shape[3]
    return DepthwiseConv2D(name, inputs, outputs, stride=stride, dilation=dilation,
                           padding=_spatial_padding(o.Padding(), x.shape[1:3], w.shape[1:3],
                                                    stride, dilation),
                           activation=_activation(o.FusedActivationFunction(), name),
                           depth_multiplier=multiplier)


def _convert_fc(op, name, inputs, outputs, tensors):
    o = _options(op, tflite.FullyConnectedOptions)
    if o.WeightsFormat() != 0:
        raise UnsupportedModelError(f"{name}: shuffled FULLY_CONNECTED weights are not supported")
    return FullyConnected(name, inputs, outputs,
                          activation=_activation(o.FusedActivationFunction(), name))


def _convert_add(op, name, inputs, outputs, tensors):
    o = _options(op, tflite.AddOptions)
    a, b = tensors[inputs[0]], tensors[inputs[1]]
    if a.shape != b.shape:
        raise UnsupportedModelError(f"{name}: broadcasting ADD {a.shape} + {b.shape} is not "
                                    "supported")
    return Add(name, inputs, outputs, activation=_activation(o.FusedActivationFunction(), name))


def _convert_pool(cls):
    def convert(op, name, inputs, outputs, tensors):
        o = _options(op, tflite.Pool2DOptions)
        x = tensors[inputs[0]]
        filt = (o.FilterHeight(), o.FilterWidth())
        stride = (o.StrideH(), o.StrideW())
        return cls(name, inputs, outputs, filter=filt, stride=stride,
                   padding=_spatial_padding(o.Padding(), x.shape[1:3], filt, stride, (1, 1)),
                   activation=_activation(o.FusedActivationFunction(), name))
    return convert


def _convert_reshape(op, name, inputs, outputs, tensors):
    # The shape operand (if any) is redundant with the output tensor's shape.
    return Reshape(name, inputs[:1], outputs)


def _convert_softmax(op, name, inputs, outputs, tensors):
    o = _options(op, tflite.SoftmaxOptions)
    return Softmax(name, inputs, outputs, beta=float(o.Beta()))


_CONVERTERS = {
    "CONV_2D": _convert_conv,
    "DEPTHWISE_CONV_2D": _convert_depthwise,
    "FULLY_CONNECTED": _convert_fc,
    "ADD": _convert_add,
    "AVERAGE_POOL_2D": _convert_pool(AveragePool2D),
    "MAX_POOL_2D": _convert_pool(MaxPool2D),
    "RESHAPE": _convert_reshape,
    "SOFTMAX": _convert_softmax,
}

#: TFLite operators the importer understands.
SUPPORTED = tuple(_CONVERTERS)


def _read_tensor(model, graph, index):
    t = graph.Tensors(index)
    name = t.Name().decode()
    if t.Type() not in _DTYPES:
        raise UnsupportedModelError(f"tensor {name!r}: unsupported element type "
                                    f"{t.Type()} (int4 weights must be unpacked to int8)")
    dtype = _DTYPES[t.Type()]
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    q = t.Quantization()
    quant = None
    if q is not None and q.ScaleLength():
        quant = QuantParams(scale=q.ScaleAsNumpy().astype(np.float32),
                            zero_point=(q.ZeroPointAsNumpy().astype(np.int64)
                                        if q.ZeroPointLength()
                                        else np.zeros(q.ScaleLength(), np.int64)),
                            axis=int(q.QuantizedDimension()))
    data = None
    buffer = model.Buffers(t.Buffer())
    if buffer is not None and buffer.DataLength():
        raw = buffer.DataAsNumpy().tobytes()
        data = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    return Tensor(name=name, shape=shape, dtype=dtype, quant=quant, data=data)


def _check_types(graph, ops):
    """Reject float models, non-int8 and unquantized activations, with the tensor named."""
    for op in ops:
        for name in (*op.inputs, *op.outputs):
            t = graph[name]
            if t.dtype == np.float32:
                raise UnsupportedModelError(
                    f"{op.name}: tensor {name!r} is float32; Tessera runs integer-quantized "
                    "models only (quantize with the TFLite converter's int8 scheme)")
            if not t.is_constant and t.dtype != np.int8:
                raise UnsupportedModelError(
                    f"{op.name}: tensor {name!r} is {t.dtype}; Tessera runs int8 activations "
                    "only (TFLite's int16x8 scheme is not supported)")
            if t.dtype == np.int8 and t.quant is None:
                raise UnsupportedModelError(f"{op.name}: tensor {name!r} has no quantization "
                                            "parameters")


def load_model(name_or_path):
    """Read a ``.tflite`` file (or a built-in model name) into a :class:`sw.graph.Graph`.

    Raises
    ------
    UnsupportedModelError
        Listing every unsupported operator by TFLite name (with its count), or the first
        unsupported type or option, with the operator and tensor named.
    """
    path = Path(model_path(name_or_path))
    model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    if model.SubgraphsLength() != 1:
        raise UnsupportedModelError(f"{path.name}: models with {model.SubgraphsLength()} "
                                    "subgraphs are not supported (control flow)")
    sub = model.Subgraphs(0)

    kinds = []
    for i in range(sub.OperatorsLength()):
        code = model.OperatorCodes(sub.Operators(i).OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        kinds.append(_OPERATOR_NAMES.get(builtin, f"CUSTOM:{code.CustomCode()}"))
    missing = Counter(k for k in kinds if k not in _CONVERTERS)
    if missing:
        listed = ", ".join(f"{k} (x{n})" for k, n in sorted(missing.items()))
        raise UnsupportedModelError(
            f"{path.name} uses operators Tessera does not support: {listed}. "
            f"Supported: {', '.join(SUPPORTED)}")

    tensors = {}
    names = []
    for i in range(sub.TensorsLength()):
        t = _read_tensor(model, sub, i)
        # TFLite tensor names are not guaranteed unique; make them so.
        if t.name in tensors:
            t.name = f"{t.name}#{i}"
        tensors[t.name] = t
        names.append(t.name)

    ops = []
    for i, kind in enumerate(kinds):
        op = sub.Operators(i)
        inputs = tuple(names[j] for j in op.InputsAsNumpy() if j >= 0)
        outputs = tuple(names[j] for j in op.OutputsAsNumpy())
        opname = f"{i:02d}_{kind.lower()}"
        ops.append(_CONVERTERS[kind](op, opname, inputs, outputs, tensors))
    _check_types(tensors, ops)
    graph = Graph(name=path.stem, tensors=tensors, ops=ops,
                  inputs=tuple(names[j] for j in sub.InputsAsNumpy()),
                  outputs=tuple(names[j] for j in sub.OutputsAsNumpy()))
    return graph
