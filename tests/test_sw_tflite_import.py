"""The .tflite importer: operators, geometry, quantization, and clear errors."""

import numpy as np
import pytest
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions

import sw.tflite_export
from sw.graph import Activation, Conv2D, DepthwiseConv2D, FullyConnected, Padding, same_padding
from sw.tflite_export import write_model
from sw.tflite_import import SUPPORTED, UnsupportedModelError, load_model

EXPECTED_OPS = {
    "resnet8": {"conv2d": 9, "add": 3, "avgpool2d": 1, "reshape": 1, "fc": 1, "softmax": 1},
    "dscnn": {"conv2d": 5, "dwconv2d": 4, "avgpool2d": 1, "reshape": 1, "fc": 1, "softmax": 1},
    "vww": {"conv2d": 14, "dwconv2d": 13, "avgpool2d": 1, "reshape": 1, "fc": 1, "softmax": 1},
    "autoencoder": {"fc": 10},
}


@pytest.mark.parametrize("model", list(EXPECTED_OPS))
def test_operator_inventory(model):
    graph = load_model(model)
    counts = {}
    for op in graph.ops:
        counts[op.kind] = counts.get(op.kind, 0) + 1
    assert counts == EXPECTED_OPS[model]


def test_tensors_quantization_and_constants():
    graph = load_model("resnet8")
    conv = graph.ops[0]
    x, w, b, y = (graph.tensor(n) for n in (*conv.inputs, conv.output))
    assert x.shape == (1, 32, 32, 3) and x.dtype == np.int8 and not x.is_constant
    assert w.shape == (16, 3, 3, 3) and w.dtype == np.int8 and w.is_constant
    assert w.quant.per_channel and w.quant.scale.shape == (16,) and w.quant.axis == 0
    assert np.all(w.quant.zero_point == 0)
    assert b.dtype == np.int32 and b.data.shape == (16,)
    assert y.quant.single()[1] == -128
    assert conv.activation is Activation.RELU and conv.padding == Padding(1, 1, 1, 1)


def test_asymmetric_same_padding_on_stride_two():
    vww = load_model("vww")
    first = vww.ops[0]
    assert isinstance(first, Conv2D) and first.stride == (2, 2)
    assert first.padding == Padding(0, 1, 0, 1)           # 96 -> 48 with a 3x3 kernel
    dscnn = load_model("dscnn")
    assert dscnn.ops[0].padding == Padding(4, 5, 1, 1)    # 49x10 -> 25x5 with 10x4, stride 2
    assert isinstance(dscnn.ops[1], DepthwiseConv2D) and dscnn.ops[1].depth_multiplier == 1


@pytest.mark.parametrize("size, kernel, stride, expected", [
    (96, 3, 2, (0, 1)), (9, 3, 2, (1, 1)), (10, 3, 2, (0, 1)), (49, 10, 2, (4, 5)),
    (32, 3, 1, (1, 1)), (8, 8, 8, (0, 0)), (5, 1, 1, (0, 0))])
def test_same_padding(size, kernel, stride, expected):
    assert same_padding(size, kernel, stride, 1) == expected


def test_fully_connected_weights_are_out_by_in():
    graph = load_model("autoencoder")
    fc = graph.ops[0]
    assert isinstance(fc, FullyConnected)
    assert graph.tensor(fc.inputs[1]).shape == (128, 640)


@pytest.mark.parametrize("model", list(EXPECTED_OPS))
def test_export_round_trip(model):
    graph = load_model(model)
    again = load_model_bytes(write_model(graph))
    assert [(op.kind, op.inputs, op.outputs) for op in again.ops] == \
        [(op.kind, tuple(n.split("#")[0] for n in op.inputs), op.outputs) for op in graph.ops]
    for name, tensor in graph.tensors.items():
        other = again.tensors[name]
        assert other.shape == tensor.shape and other.dtype == tensor.dtype
        if tensor.is_constant:
            assert np.array_equal(other.data, tensor.data)


def load_model_bytes(data):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.tflite"
        path.write_bytes(data)
        return load_model(str(path))


def test_unsupported_operators_are_listed_by_name(monkeypatch):
    """Every unsupported operator is named, with its count, in one error."""
    graph = load_model("resnet8")
    original = sw.tflite_export._options

    def options(builder, g, op):
        if op.kind == "add":
            return BuiltinOperator.MUL, BuiltinOptions.NONE, None
        if op.kind == "avgpool2d":
            return BuiltinOperator.MEAN, BuiltinOptions.NONE, None
        return original(builder, g, op)

    monkeypatch.setattr(sw.tflite_export, "_options", options)
    data = write_model(graph)
    with pytest.raises(UnsupportedModelError,
                       match=r"model.tflite uses operators Tessera does not support: "
                             r"MEAN \(x1\), MUL \(x3\). Supported: CONV_2D, "):
        load_model_bytes(data)
    assert "SOFTMAX" in SUPPORTED and "MAX_POOL_2D" in SUPPORTED


def test_float_models_are_refused_with_the_tensor_named():
    graph = load_model("autoencoder")
    first = graph.tensor(graph.ops[0].inputs[0])
    first.dtype = np.dtype(np.float32)
    with pytest.raises(UnsupportedModelError, match=r"00_fully_connected: tensor .* is float32"):
        load_model_bytes(write_model(graph))


def test_int16_activations_are_refused_with_the_tensor_named():
    graph = load_model("autoencoder")
    out = graph.tensor(graph.ops[0].output)
    out.dtype = np.dtype(np.int16)
    with pytest.raises(UnsupportedModelError, match=r"00_fully_connected: tensor .* is int16; "
                                                    r"Tessera runs int8 activations only"):
        load_model_bytes(write_model(graph))
