"""The golden models equal TFLite's reference kernels bit for bit, layer by layer.

On the four MLPerf Tiny models (real weights, many random inputs), and on single-layer models
written by ``sw.tflite_export`` with chosen scales, geometries and activations, which reach the
requantization corner cases the real models may not (large multipliers, positive and very
negative shifts, saturation at both ends, ties).
"""


import numpy as np
import pytest

from sw.compare import compare_with_litert, random_input
from sw.golden import run_graph
from sw.graph import (
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
    Softmax,
    Tensor,
    conv_output_size,
    same_padding,
)
from sw.litert import ReferenceRuntime
from sw.models import BUILTIN_MODELS
from sw.tflite_export import write_model
from sw.tflite_import import load_model

INPUTS = {"resnet8": 12, "dscnn": 20, "vww": 8, "autoencoder": 40}


@pytest.mark.parametrize("model", list(BUILTIN_MODELS))
def test_every_layer_of_the_mlperf_tiny_models_is_bit_exact(model):
    result = compare_with_litert(model, inputs=INPUTS[model], seed=2026)
    assert result.elements > 0
    bad = {layer.name: (layer.chained_mismatches, layer.isolated_mismatches)
           for layer in result.layers if layer.chained_mismatches or layer.isolated_mismatches}
    assert bad == {}, f"{model}: mismatching elements per layer (chained, isolated): {bad}"
    assert result.output_mismatches == 0


def test_a_planted_bias_error_is_charged_to_its_layer():
    graph = load_model("resnet8")
    bias = graph.tensor(graph.ops[4].inputs[2])
    bias.data = bias.data.copy()
    bias.data[3] += 1000
    result = compare_with_litert("resnet8", inputs=2, seed=1, graph=graph)
    by_name = {layer.name: layer for layer in result.layers}
    assert by_name["04_conv_2d"].isolated_mismatches > 0
    assert all(by_name[op.name].isolated_mismatches == 0 for op in graph.ops[:4])


# --- single-layer models with chosen parameters -------------------------------------------


def _quant(scale, zero_point=0, axis=0):
    scale = np.atleast_1d(np.asarray(scale, np.float32))
    zero_point = np.broadcast_to(np.asarray(zero_point, np.int64), scale.shape).copy()
    return QuantParams(scale, zero_point, axis)


def _activation_tensor(name, shape, scale, zero_point, dtype=np.int8):
    return Tensor(name, tuple(shape), np.dtype(dtype), _quant(scale, zero_point))


def _single_layer_graph(op, tensors):
    tensors = {t.name: t for t in tensors}
    inputs = tuple(n for n in op.inputs if not tensors[n].is_constant)
    return Graph("single", tensors, [op], inputs, op.outputs)


def _check_against_litert(graph, rng, inputs=4):
    reference = ReferenceRuntime(write_model(graph))
    for _ in range(inputs):
        x = random_input(graph.input, rng)
        expected = reference.run(x)
        got, _ = run_graph(graph, x)
        mismatch = np.nonzero(got != expected)
        assert mismatch[0].size == 0, (
            f"{mismatch[0].size} mismatches, first at {tuple(int(i[0]) for i in mismatch)}: "
            f"golden {got[mismatch][0]}, LiteRT {expected[mismatch][0]}")


def _conv_graph(rng, *, h, w, cin, cout, kernel, stride, dilation, same, activation,
                in_q, w_scales, out_q, depthwise=False, multiplier=1):
    kh, kw = kernel
    padding = Padding()
    if same:
        (t, b), (left, r) = (same_padding(h, kh, stride[0], dilation[0]),
                             same_padding(w, kw, stride[1], dilation[1]))
        padding = Padding(t, b, left, r)
    ho = conv_output_size(h, kh, stride[0], dilation[0], same)
    wo = conv_output_size(w, kw, stride[1], dilation[1], same)
    channels = cin * multiplier if depthwise else cout
    wshape = (1, kh, kw, channels) if depthwise else (cout, kh, kw, cin)
    weights = Tensor("w", wshape, np.dtype(np.int8),
                     _quant(w_scales, 0, axis=3 if depthwise else 0),
                     rng.integers(-127, 128, wshape).astype(np.int8))
    bias = Tensor("b", (channels,), np.dtype(np.int32),
                  _quant(in_q[0] * np.broadcast_to(w_scales, (channels,))),
                  rng.integers(-5000, 5000, channels).astype(np.int32))
    x = _activation_tensor("x", (1, h, w, cin), *in_q)
    y = _activation_tensor("y", (1, ho, wo, channels), *out_q)
    cls = DepthwiseConv2D if depthwise else Conv2D
    extra = dict(depth_multiplier=multiplier) if depthwise else {}
    op = cls("layer", ("x", "w", "b"), ("y",), stride=stride, dilation=dilation,
             padding=padding, activation=activation, **extra)
    return _single_layer_graph(op, [x, weights, bias, y])


CONV_CASES = {
    # effective scale > 1: positive shift (the left shift wraps in int32 in TFLite too)
    "large multiplier": dict(in_q=(0.5, 3), w_scales=0.9, out_q=(0.01, -5)),
    # effective scale around 2**-20: very negative shift
    "negative shift": dict(in_q=(0.001, -128), w_scales=0.0004, out_q=(0.5, 0)),
    # saturation at both ends
    "saturation": dict(in_q=(0.2, 10), w_scales=0.5, out_q=(0.05, 0)),
    "relu6": dict(in_q=(0.05, -128), w_scales=0.02, out_q=(0.03, -128),
                  activation=Activation.RELU6),
    # 6 / 0.8 is 7.4999999 in double but 7.5 in float32: TFLite's clamp is 8, not 7
    "relu6 float32 tie": dict(in_q=(0.5, 0), w_scales=0.9, out_q=(0.8, 0),
                              activation=Activation.RELU6),
    "relu_n1_to_1": dict(in_q=(0.05, 5), w_scales=0.02, out_q=(0.01, 2),
                         activation=Activation.RELU_N1_TO_1),
}


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv_requantization_corner_cases(case):
    rng = np.random.default_rng(list(CONV_CASES).index(case))
    params = dict(activation=Activation.NONE) | CONV_CASES[case]
    graph = _conv_graph(rng, h=9, w=7, cin=5, cout=6, kernel=(3, 3), stride=(1, 1),
                        dilation=(1, 1), same=True, **params)
    _check_against_litert(graph, rng)


@pytest.mark.parametrize("seed", range(12))
def test_random_conv_geometries(seed):
    """Strides 1-2, dilation, SAME (asymmetric on even inputs) and VALID, non-square kernels,
    depthwise with multipliers, per-channel scales spanning two decades."""
    rng = np.random.default_rng(100 + seed)
    depthwise = bool(seed % 3 == 2)
    cin = int(rng.integers(1, 9))
    cout = int(rng.integers(1, 9))
    multiplier = int(rng.integers(1, 3)) if depthwise else 1
    channels = cin * multiplier if depthwise else cout
    kernel = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dilation = (1, 1) if seed % 4 else (2, 1)
    h, w = int(rng.integers(kernel[0] * 2 + 2, 14)), int(rng.integers(kernel[1] * 2 + 2, 14))
    graph = _conv_graph(
        rng, h=h, w=w, cin=cin, cout=cout, kernel=kernel, stride=stride, dilation=dilation,
        same=bool(seed % 2), activation=[Activation.NONE, Activation.RELU][seed % 2],
        in_q=(float(rng.uniform(0.005, 0.1)), int(rng.integers(-128, 128))),
        w_scales=rng.uniform(0.001, 0.1, channels).astype(np.float32),
        out_q=(float(rng.uniform(0.02, 0.5)), int(rng.integers(-128, 128))),
        depthwise=depthwise, multiplier=multiplier)
    _check_against_litert(graph, rng)


@pytest.mark.parametrize("case", ["ties", "large multiplier", "saturation", "weight zero point"])
def test_fully_connected_requantization_corner_cases(case):
    """LiteRT's FC reference kernel scales in double precision: ties (scale 0.5) round away
    from zero, which the fixed-point path of convolutions would not do."""
    rng = np.random.default_rng(7)
    scales = {"ties": (1.0, 0.5, 1.0), "large multiplier": (0.5, 0.9, 0.01),
              "saturation": (0.2, 0.5, 0.05), "weight zero point": (0.1, 0.05, 0.2)}[case]
    w_zp = 3 if case == "weight zero point" else 0
    n_in, n_out = 24, 10
    x = _activation_tensor("x", (1, n_in), scales[0], -7)
    w = Tensor("w", (n_out, n_in), np.dtype(np.int8), _quant(scales[1], w_zp),
               rng.integers(-127, 128, (n_out, n_in)).astype(np.int8))
    b = Tensor("b", (n_out,), np.dtype(np.int32), _quant(scales[0] * scales[1]),
               rng.integers(-300, 300, n_out).astype(np.int32))
    y = _activation_tensor("y", (1, n_out), scales[2], 4)
    op = FullyConnected("fc", ("x", "w", "b"), ("y",))
    _check_against_litert(_single_layer_graph(op, [x, w, b, y]), rng, inputs=8)


def test_fully_connected_ties_differ_from_fixed_point():
    """The double-precision rule matters: with a scale of exactly 0.5, fixed point rounds
    -2.5 to -2 while LiteRT (and the golden model) give -3."""
    from hls_ref.quant import multiply_by_quantized_multiplier, quantize_multiplier, scale_by_double

    m, s = quantize_multiplier(0.5)
    assert int(multiply_by_quantized_multiplier(-5, m, s)) == -2
    assert int(scale_by_double(-5, 0.5)) == -3


@pytest.mark.parametrize("scales", [(0.05, 0.02, 0.04), (0.5, 0.001, 0.3), (0.01, 0.01, 0.01)])
@pytest.mark.parametrize("activation", [Activation.NONE, Activation.RELU])
def test_add_against_litert(scales, activation):
    rng = np.random.default_rng(11)
    a = _activation_tensor("a", (1, 5, 6, 7), scales[0], 12)
    b = _activation_tensor("b", (1, 5, 6, 7), scales[1], -40)
    y = _activation_tensor("y", (1, 5, 6, 7), scales[2], -3)
    graph = _single_layer_graph(Add("add", ("a", "b"), ("y",), activation=activation),
                                [a, b, y])
    reference = ReferenceRuntime(write_model(graph))
    interp = reference.interpreter
    details = {d["name"]: d["index"] for d in interp.get_input_details()}
    from sw.golden import run_op

    for _ in range(4):
        xa, xb = random_input(a, rng), random_input(b, rng)
        interp.set_tensor(details["a"], xa)
        interp.set_tensor(details["b"], xb)
        interp.invoke()
        expected = interp.get_tensor(interp.get_output_details()[0]["index"])
        got = run_op(graph, graph.ops[0], {"a": xa, "b": xb})
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("kind", [AveragePool2D, MaxPool2D])
@pytest.mark.parametrize("same", [False, True])
@pytest.mark.parametrize("geometry", [((3, 3), (2, 2)), ((2, 3), (1, 2)), ((8, 8), (8, 8))])
def test_pooling_against_litert(kind, same, geometry):
    """Padded windows average over the in-bounds elements only; padding never wins a max."""
    (fh, fw), stride = geometry
    h, w = 8, 9
    rng = np.random.default_rng(fh * 10 + fw)
    x = _activation_tensor("x", (1, h, w, 4), 0.1, -20)
    ho, wo = (conv_output_size(h, fh, stride[0], 1, same),
              conv_output_size(w, fw, stride[1], 1, same))
    y = _activation_tensor("y", (1, ho, wo, 4), 0.1, -20)
    padding = Padding()
    if same:
        (t, b), (left, r) = same_padding(h, fh, stride[0], 1), same_padding(w, fw, stride[1], 1)
        padding = Padding(t, b, left, r)
    op = kind("pool", ("x",), ("y",), filter=(fh, fw), stride=stride, padding=padding,
              activation=Activation.RELU)
    _check_against_litert(_single_layer_graph(op, [x, y]), rng)


@pytest.mark.parametrize("scale", [0.01, 0.1, 0.5, 2.0])
@pytest.mark.parametrize("beta", [1.0, 0.25])
def test_softmax_against_litert(scale, beta):
    rng = np.random.default_rng(int(scale * 100))
    x = _activation_tensor("x", (3, 17), scale, int(rng.integers(-20, 20)))
    y = _activation_tensor("y", (3, 17), 1 / 256, -128)
    graph = _single_layer_graph(Softmax("softmax", ("x",), ("y",), beta=beta), [x, y])
    _check_against_litert(graph, rng, inputs=6)


def test_duplicate_tflite_tensor_names_resolve_to_the_right_tensor(tmp_path):
    """TFLite names need not be unique: the importer names a later duplicate ``name#index``
    and the reference runtime reads it by that index."""
    from sw.graph import Reshape

    x = _activation_tensor("t", (1, 4, 4, 2), 0.1, 0)
    y = _activation_tensor("t#1", (1, 32), 0.1, 0)
    graph = _single_layer_graph(Reshape("reshape", ("t",), ("t#1",)), [x, y])
    path = tmp_path / "dup.tflite"
    path.write_bytes(write_model(graph))
    again = load_model(str(path))
    assert list(again.tensors) == ["t", "t#1"]
    reference = ReferenceRuntime(str(path))
    data = random_input(x, np.random.default_rng(0))
    reference.run(data)
    assert reference.tensor("t").shape == (1, 4, 4, 2)
    assert np.array_equal(reference.tensor("t#1"), data.reshape(1, 32))
