"""Write a graph (:mod:`sw.graph`) as a ``.tflite`` flatbuffer.

The inverse of :mod:`sw.tflite_import` for the supported operators. It lets tests build
single-layer models with chosen scales, zero points and shapes (requantization edge cases,
padding and stride corner cases) and run them on TFLite's reference kernels, and it gives users
a way to save a graph they built or modified in Python.
"""

import flatbuffers
import numpy as np
import tflite
from tflite.ActivationFunctionType import ActivationFunctionType
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.Padding import Padding as TflitePadding
from tflite.TensorType import TensorType

from .graph import (
    Add,
    AveragePool2D,
    Conv2D,
    DepthwiseConv2D,
    FullyConnected,
    MaxPool2D,
    Reshape,
    Softmax,
    same_padding,
)

__all__ = ["write_model"]

_TYPES = {np.dtype(np.int8): TensorType.INT8, np.dtype(np.int16): TensorType.INT16,
          np.dtype(np.int32): TensorType.INT32, np.dtype(np.int64): TensorType.INT64,
          np.dtype(np.uint8): TensorType.UINT8, np.dtype(np.float32): TensorType.FLOAT32}

_ACTIVATIONS = {"none": ActivationFunctionType.NONE, "relu": ActivationFunctionType.RELU,
                "relu6": ActivationFunctionType.RELU6,
                "relu_n1_to_1": ActivationFunctionType.RELU_N1_TO_1}


# Operator versions of the int8 kernels (what the TFLite converter writes for int8 models).
_VERSIONS = {BuiltinOperator.CONV_2D: 3, BuiltinOperator.DEPTHWISE_CONV_2D: 3,
             BuiltinOperator.FULLY_CONNECTED: 4, BuiltinOperator.ADD: 2,
             BuiltinOperator.AVERAGE_POOL_2D: 2, BuiltinOperator.MAX_POOL_2D: 2,
             BuiltinOperator.RESHAPE: 1, BuiltinOperator.SOFTMAX: 2}


def _padding_code(graph, op, kernel):
    """SAME or VALID: TFLite cannot express other explicit paddings."""
    if op.padding == type(op.padding)():
        return TflitePadding.VALID
    h, w = graph.tensor(op.inputs[0]).shape[1:3]
    dilation = getattr(op, "dilation", (1, 1))
    same = (same_padding(h, kernel[0], op.stride[0], dilation[0])
            + same_padding(w, kernel[1], op.stride[1], dilation[1]))
    if (op.padding.top, op.padding.bottom, op.padding.left, op.padding.right) != same:
        raise ValueError(f"{op.name}: padding {op.padding} is neither SAME nor VALID")
    return TflitePadding.SAME


def _conv_options(b, graph, op):
    kernel = graph.tensor(op.inputs[1]).shape[1:3]
    padding = _padding_code(graph, op, kernel)
    act = _ACTIVATIONS[op.activation.value]
    if isinstance(op, Conv2D):
        tflite.Conv2DOptionsStart(b)
        tflite.Conv2DOptionsAddPadding(b, padding)
        tflite.Conv2DOptionsAddStrideH(b, op.stride[0])
        tflite.Conv2DOptionsAddStrideW(b, op.stride[1])
        tflite.Conv2DOptionsAddDilationHFactor(b, op.dilation[0])
        tflite.Conv2DOptionsAddDilationWFactor(b, op.dilation[1])
        tflite.Conv2DOptionsAddFusedActivationFunction(b, act)
        return BuiltinOptions.Conv2DOptions, tflite.Conv2DOptionsEnd(b)
    tflite.DepthwiseConv2DOptionsStart(b)
    tflite.DepthwiseConv2DOptionsAddPadding(b, padding)
    tflite.DepthwiseConv2DOptionsAddStrideH(b, op.stride[0])
    tflite.DepthwiseConv2DOptionsAddStrideW(b, op.stride[1])
    tflite.DepthwiseConv2DOptionsAddDilationHFactor(b, op.dilation[0])
    tflite.DepthwiseConv2DOptionsAddDilationWFactor(b, op.dilation[1])
    tflite.DepthwiseConv2DOptionsAddDepthMultiplier(b, op.depth_multiplier)
    tflite.DepthwiseConv2DOptionsAddFusedActivationFunction(b, act)
    return BuiltinOptions.DepthwiseConv2DOptions, tflite.DepthwiseConv2DOptionsEnd(b)


def _options(b, graph, op):
    """(builtin code, options type, options offset) of an operator."""
    if isinstance(op, Conv2D | DepthwiseConv2D):
        code = (BuiltinOperator.CONV_2D if isinstance(op, Conv2D)
                else BuiltinOperator.DEPTHWISE_CONV_2D)
        return (code, *_conv_options(b, graph, op))
    if isinstance(op, FullyConnected):
        tflite.FullyConnectedOptionsStart(b)
        tflite.FullyConnectedOptionsAddFusedActivationFunction(
            b, _ACTIVATIONS[op.activation.value])
        return (BuiltinOperator.FULLY_CONNECTED, BuiltinOptions.FullyConnectedOptions,
                tflite.FullyConnectedOptionsEnd(b))
    if isinstance(op, Add):
        tflite.AddOptionsStart(b)
        tflite.AddOptionsAddFusedActivationFunction(b, _ACTIVATIONS[op.activation.value])
        return BuiltinOperator.ADD, BuiltinOptions.AddOptions, tflite.AddOptionsEnd(b)
    if isinstance(op, AveragePool2D | MaxPool2D):
        padding = _padding_code(graph, op, op.filter)
        tflite.Pool2DOptionsStart(b)
        tflite.Pool2DOptionsAddPadding(b, padding)
        tflite.Pool2DOptionsAddStrideH(b, op.stride[0])
        tflite.Pool2DOptionsAddStrideW(b, op.stride[1])
        tflite.Pool2DOptionsAddFilterHeight(b, op.filter[0])
        tflite.Pool2DOptionsAddFilterWidth(b, op.filter[1])
        tflite.Pool2DOptionsAddFusedActivationFunction(b, _ACTIVATIONS[op.activation.value])
        code = (BuiltinOperator.AVERAGE_POOL_2D if isinstance(op, AveragePool2D)
                else BuiltinOperator.MAX_POOL_2D)
        return code, BuiltinOptions.Pool2DOptions, tflite.Pool2DOptionsEnd(b)
    if isinstance(op, Reshape):
        shape = _int_vector(b, tflite.ReshapeOptionsStartNewShapeVector,
                            list(graph.tensor(op.output).shape))
        tflite.ReshapeOptionsStart(b)
        tflite.ReshapeOptionsAddNewShape(b, shape)
        return BuiltinOperator.RESHAPE, BuiltinOptions.ReshapeOptions, tflite.ReshapeOptionsEnd(b)
    if isinstance(op, Softmax):
        tflite.SoftmaxOptionsStart(b)
        tflite.SoftmaxOptionsAddBeta(b, op.beta)
        return BuiltinOperator.SOFTMAX, BuiltinOptions.SoftmaxOptions, tflite.SoftmaxOptionsEnd(b)
    raise TypeError(f"{op.name}: cannot export {type(op).__name__}")


def _vector(b, values, dtype):
    return b.CreateNumpyVector(np.ascontiguousarray(values, dtype=dtype))


def _int_vector(b, start, values):
    start(b, len(values))
    for v in reversed(values):
        b.PrependInt32(v)
    return b.EndVector()


def write_model(graph):
    """Serialise ``graph`` to ``.tflite`` bytes (schema version 3, one subgraph)."""
    b = flatbuffers.Builder(1024)
    names = list(graph.tensors)
    index = {name: i for i, name in enumerate(names)}

    buffers = [(tflite.BufferStart(b), tflite.BufferEnd(b))[1]]
    buffer_of = {}
    for name in names:
        t = graph.tensors[name]
        if t.is_constant:
            data = _vector(b, np.ascontiguousarray(t.data).view(np.uint8).ravel(), np.uint8)
            tflite.BufferStart(b)
            tflite.BufferAddData(b, data)
            buffer_of[name] = len(buffers)
            buffers.append(tflite.BufferEnd(b))

    tensors = []
    for name in names:
        t = graph.tensors[name]
        name_off = b.CreateString(name.split("#")[0])
        shape = _vector(b, t.shape, np.int32)
        quant = None
        if t.quant is not None:
            scale = _vector(b, t.quant.scale, np.float32)
            zero = _vector(b, t.quant.zero_point, np.int64)
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, scale)
            tflite.QuantizationParametersAddZeroPoint(b, zero)
            tflite.QuantizationParametersAddQuantizedDimension(b, t.quant.axis)
            quant = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, _TYPES[np.dtype(t.dtype)])
        tflite.TensorAddBuffer(b, buffer_of.get(name, 0))
        tflite.TensorAddName(b, name_off)
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        tensors.append(tflite.TensorEnd(b))

    codes, operators = [], []
    for op in graph.ops:
        code, options_type, options = _options(b, graph, op)
        if code not in codes:
            codes.append(code)
        inputs = _int_vector(b, tflite.OperatorStartInputsVector,
                             [index[n] for n in op.inputs])
        outputs = _int_vector(b, tflite.OperatorStartOutputsVector,
                              [index[n] for n in op.outputs])
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, codes.index(code))
        tflite.OperatorAddInputs(b, inputs)
        tflite.OperatorAddOutputs(b, outputs)
        if options is not None:
            tflite.OperatorAddBuiltinOptionsType(b, options_type)
            tflite.OperatorAddBuiltinOptions(b, options)
        operators.append(tflite.OperatorEnd(b))

    def table_vector(start, items):
        start(b, len(items))
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return b.EndVector()

    tensor_vec = table_vector(tflite.SubGraphStartTensorsVector, tensors)
    op_vec = table_vector(tflite.SubGraphStartOperatorsVector, operators)
    in_vec = _int_vector(b, tflite.SubGraphStartInputsVector,
                         [index[n] for n in graph.inputs])
    out_vec = _int_vector(b, tflite.SubGraphStartOutputsVector,
                          [index[n] for n in graph.outputs])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensor_vec)
    tflite.SubGraphAddOperators(b, op_vec)
    tflite.SubGraphAddInputs(b, in_vec)
    tflite.SubGraphAddOutputs(b, out_vec)
    subgraph = tflite.SubGraphEnd(b)

    code_offsets = []
    for code in codes:
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddVersion(b, _VERSIONS.get(code, 1))
        code_offsets.append(tflite.OperatorCodeEnd(b))
    codes_vec = table_vector(tflite.ModelStartOperatorCodesVector, code_offsets)
    subgraphs_vec = table_vector(tflite.ModelStartSubgraphsVector, [subgraph])
    buffers_vec = table_vector(tflite.ModelStartBuffersVector, buffers)
    description = b.CreateString("tessera")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddBuffers(b, buffers_vec)
    tflite.ModelAddDescription(b, description)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())
