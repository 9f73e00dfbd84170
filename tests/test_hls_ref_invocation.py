"""Invocation-level golden models: any tiling equals the untiled layer, in every ST
configuration and output width; accumulators equal an independent float64 convolution."""


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hls_ref import Precision
from hls_ref.formats import QuantBlock, fold_input_zero_point
from hls_ref.invocation import (
    Command,
    ConvAccelerator,
    DepthwiseAccelerator,
    FCAccelerator,
    InvocationError,
    Limits,
    conv2d_tiled,
    depthwise_conv2d_tiled,
    fully_connected_tiled,
    row_tile,
)
from hls_ref.layers import (
    AccumulatorOverflowError,
    conv2d_acc,
    depthwise_conv2d_acc,
    fully_connected_acc,
)
from hls_ref.quant import multiply_by_quantized_multiplier, quantize_multiplier
from hls_ref.st import wrap_signed
from sw.golden import run_graph
from sw.lowering import CompileError, lower_layer, run_layer_tiled
from sw.tflite_import import load_model

BIG = Limits(pes=16, plm_in=1 << 20, plm_w=1 << 20, plm_acc=1 << 20)
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _splits(draw, total, multiple=1):
    candidates = list(range(multiple, total, multiple))
    chosen = draw(st.lists(st.sampled_from(candidates), max_size=3, unique=True)) \
        if candidates else []
    return tuple(sorted(chosen))


# --- the real layers: both golden levels agree (and so agree with LiteRT) -----------------

_MODELS = {}


def _model_values(name):
    if name not in _MODELS:
        graph = load_model(name)
        x = np.random.default_rng(4).integers(-128, 128, graph.input.shape).astype(np.int8)
        _, runs = run_graph(graph, x)
        values = {graph.input.name: x} | {r.op.output: r.output for r in runs}
        layers = [op for op in graph.ops if op.kind in ("conv2d", "dwconv2d", "fc")]
        _MODELS[name] = graph, values, layers
    return _MODELS[name]


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("model", ["resnet8", "dscnn", "vww", "autoencoder"])
def test_real_layers_under_random_tilings(model, data):
    graph, values, layers = _model_values(model)
    op = data.draw(st.sampled_from(layers))
    out = graph.tensor(op.output)
    channels = out.shape[-1]
    out_splits = _splits(data.draw, channels)
    # every output block must fit the 16 PEs
    out_splits = tuple(sorted(set(out_splits) | set(range(16, channels, 16))))
    row_splits = _splits(data.draw, out.shape[1]) if op.kind != "fc" else ()
    cin = graph.tensor(op.inputs[1]).shape[-1]
    in_splits = _splits(data.draw, cin, multiple=2) if op.kind != "dwconv2d" else ()
    tiled = run_layer_tiled(graph, op, values[op.inputs[0]], out_splits, row_splits, in_splits,
                            limits=BIG)
    assert np.array_equal(tiled, values[op.output]), (op.name, out_splits, row_splits,
                                                      in_splits)


# --- every ST configuration and output width ------------------------------------------------


def _random_layer(rng, precision, kind, fit=True):
    """A random layer in the configuration's value ranges; with ``fit``, weights are limited
    so that no accumulator can overflow 32 bits (what the compiler proves or refuses)."""
    a_bits, w_bits = precision.act_bits, precision.weight_bits
    a_lo, a_hi = -(1 << (a_bits - 1)), (1 << (a_bits - 1)) - 1
    cin = int(rng.integers(1, 12))
    cout = int(rng.integers(1, 17))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    w_max = 1 << (w_bits - 1)
    if fit:
        w_max = min(w_max, (1 << 30) // (40 * 9 * 12 << (a_bits - 1)) or 1)
    w_lo, w_hi = -w_max, w_max - 1
    h, w = int(rng.integers(kh + 1, 10)), int(rng.integers(kw + 1, 10))
    if kind == "dw":
        cout = cin
        weights = rng.integers(w_lo, w_hi + 1, (kh, kw, cin))
    elif kind == "fc":
        weights = rng.integers(w_lo, w_hi + 1, (cout, int(rng.integers(1, 40))))
    else:
        weights = rng.integers(w_lo, w_hi + 1, (cout, kh, kw, cin))
    x = rng.integers(a_lo, a_hi + 1, (h, w, cin) if kind != "fc" else weights.shape[1])
    zp = int(rng.integers(a_lo, a_hi + 1))
    return x, weights, zp, (kh, kw), cout


def _qblock(rng, cout, zp_in, by_channel, out_bits, double=False):
    bias = rng.integers(-1000, 1000, cout)
    folded = fold_input_zero_point(bias, by_channel, zp_in)
    reals = rng.uniform(1e-5, 0.05, cout)
    pairs = [quantize_multiplier(float(r)) for r in reals]
    top = (1 << (out_bits - 1)) - 1
    return QuantBlock(int(rng.integers(-top // 2, top // 2)), -top - 1, top, folded,
                      np.array([m for m, _ in pairs]), np.array([s for _, s in pairs]),
                      reals if double else None), bias


def _requantized(acc, qblock, out_bits):
    """Fixed-point requantization of untiled accumulators, clamped to ``out_bits``."""
    scaled = multiply_by_quantized_multiplier(acc, qblock.multiplier, qblock.shift)
    return np.clip(scaled + qblock.zero_point, -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1)


def _float64_conv(x, w, zp, stride, padding):
    """Independent reference: explicit loops over output pixels in float64."""
    top, bottom, left, right = padding
    xp = np.pad(x.astype(np.float64) - zp, ((top, bottom), (left, right), (0, 0)))
    cout, kh, kw, _ = w.shape
    ho = (xp.shape[0] - kh) // stride[0] + 1
    wo = (xp.shape[1] - kw) // stride[1] + 1
    out = np.zeros((ho, wo, cout))
    wf = w.astype(np.float64)
    for r in range(ho):
        for c in range(wo):
            patch = xp[r * stride[0]:r * stride[0] + kh, c * stride[1]:c * stride[1] + kw]
            out[r, c] = np.tensordot(wf, patch, axes=([1, 2, 3], [0, 1, 2]))
    return out


@pytest.mark.parametrize("precision", list(Precision))
@pytest.mark.parametrize("seed", range(4))
def test_conv_accumulators_equal_a_float64_convolution(precision, seed):
    rng = np.random.default_rng(seed * 10 + precision.value)
    # odd seeds use full-range weights: 16-bit activations can then overflow 32 bits
    x, w, zp, kernel, cout = _random_layer(rng, precision, "conv", fit=seed % 2 == 0)
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = tuple(int(v) for v in rng.integers(0, min(kernel), 4))
    qblock, bias = _qblock(rng, cout, zp, w, 8)
    cmd = Command(precision, 8, kernel, stride, padding, zp, acc_flag=False, q_flag=False)
    accelerator = ConvAccelerator(BIG)
    assert accelerator.invoke(cmd, x, w, qblock) is None
    expected = _float64_conv(x, w, zp, stride, padding) + bias      # exact below 2**53
    assert np.abs(expected).max() < 2.0 ** 53
    # the hardware accumulator wraps; the compiler's bound keeps real layers from wrapping
    assert np.array_equal(accelerator.acc, wrap_signed(expected.astype(np.int64), 32))
    if np.abs(expected).max() < 2 ** 31:
        assert np.array_equal(conv2d_acc(x, w, bias, zp, stride=stride, padding=padding),
                              expected)
    else:
        with pytest.raises(AccumulatorOverflowError, match="exceeds int32"):
            conv2d_acc(x, w, bias, zp, stride=stride, padding=padding)


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("precision", list(Precision))
@pytest.mark.parametrize("out_bits", [4, 8, 16])
def test_any_conv_tiling_equals_the_untiled_layer(precision, out_bits, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    x, w, zp, kernel, cout = _random_layer(rng, precision, "conv")
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = tuple(int(v) for v in rng.integers(0, min(kernel), 4))
    qblock, bias = _qblock(rng, cout, zp, w, out_bits)
    cmd = Command(precision, out_bits, kernel, stride, padding, zp)
    untiled = conv2d_acc(x, w, bias, zp, stride=stride, padding=padding)
    expected = _requantized(untiled, qblock, out_bits)
    lanes = precision.lanes
    out_splits = tuple(sorted(set(_splits(data.draw, cout)) | ({16} if cout > 16 else set())))
    tiled = conv2d_tiled(x, w, qblock, cmd, out_splits=out_splits,
                         row_splits=_splits(data.draw, expected.shape[0]),
                         in_splits=_splits(data.draw, x.shape[2], lanes), limits=BIG)
    assert np.array_equal(tiled, expected)


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("precision", list(Precision))
@pytest.mark.parametrize("out_bits", [4, 8, 16])
def test_any_depthwise_tiling_equals_the_untiled_layer(precision, out_bits, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    x, w, zp, kernel, c = _random_layer(rng, precision, "dw")
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = tuple(int(v) for v in rng.integers(0, min(kernel), 4))
    qblock, bias = _qblock(rng, c, zp, w.reshape(-1, c).T, out_bits)
    cmd = Command(precision, out_bits, kernel, stride, padding, zp)
    untiled = depthwise_conv2d_acc(x, w, bias, zp, stride=stride, padding=padding)
    expected = _requantized(untiled, qblock, out_bits)
    tiled = depthwise_conv2d_tiled(x, w, qblock, cmd, out_splits=_splits(data.draw, c),
                                   row_splits=_splits(data.draw, expected.shape[0]), limits=BIG)
    assert np.array_equal(tiled, expected)


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("precision", list(Precision))
def test_any_fc_tiling_equals_the_untiled_layer(precision, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    x, w, zp, _, cout = _random_layer(rng, precision, "fc")
    out_bits = data.draw(st.sampled_from([4, 8, 16]))
    qblock, bias = _qblock(rng, cout, zp, w, out_bits, double=True)
    untiled = fully_connected_acc(x[None], w, bias, zp)[0]
    from hls_ref.quant import scale_by_double

    expected = np.clip(scale_by_double(untiled, qblock.real_scale) + qblock.zero_point,
                       -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1)
    tiled = fully_connected_tiled(x, w, qblock, Command(precision, out_bits, pad_value=zp),
                                  out_splits=_splits(data.draw, cout),
                                  in_splits=_splits(data.draw, len(x), precision.lanes),
                                  limits=BIG)
    assert np.array_equal(tiled, expected)


# --- tile geometry and refused commands -----------------------------------------------------


def test_row_tile_geometry():
    # 3x3, stride 1, SAME (1, 1) on 8 rows: the first stripe is padded above, the last below
    assert row_tile((0, 3), 8, 3, 1, 1, 1) == (0, 4, 1, 0)
    assert row_tile((3, 6), 8, 3, 1, 1, 1) == (2, 7, 0, 0)
    assert row_tile((6, 8), 8, 3, 1, 1, 1) == (5, 8, 0, 1)
    # stride 2, asymmetric SAME (0, 1) on 96 rows -> 48 output rows
    assert row_tile((47, 48), 96, 3, 2, 0, 1) == (94, 96, 0, 1)


def _small_command(**changes):
    return Command(**({"kernel": (3, 3)} | changes))


@pytest.mark.parametrize("changes, message", [
    (dict(kernel=(11, 3)), r"kernel 11x3 exceeds the maximum 10x10"),
    (dict(stride=(3, 1)), r"stride \(3, 1\) must be between 1 and the build's maximum 2"),
    (dict(out_bits=5), r"output width must be one of \(4, 8, 16\), not 5"),
    (dict(padding=(3, 0, 0, 0)), r"padding \(3, 0, 0, 0\) must be below the kernel size 3x3"),
    (dict(kernel=(3, 1), padding=(0, 0, 1, 1)), r"must be below the kernel size 3x1 on each"),
    (dict(acc_flag=True), r"acc_flag set but the accumulators hold no partial sums"),
])
def test_invalid_commands_are_refused(changes, message):
    cmd = _small_command(**changes)
    kernel = cmd.kernel
    w = np.ones((4, *kernel, 4), np.int64)
    x = np.ones((12, 12, 4), np.int64)
    qblock = QuantBlock(0, -128, 127, np.zeros(4), np.full(4, 1 << 30), np.zeros(4))
    with pytest.raises(InvocationError, match=message):
        ConvAccelerator().invoke(cmd, x, w, qblock)


def test_plm_capacities_are_checked():
    small = Limits(pes=4, plm_in=100, plm_w=1000, plm_acc=1000)
    fc_limits = Limits(pes=4, plm_in=300, plm_w=1000)
    qblock = QuantBlock(0, -128, 127, np.zeros(4), np.full(4, 1 << 30), np.zeros(4))
    with pytest.raises(InvocationError, match=r"input tile needs 200 words, the PLM holds 100"):
        ConvAccelerator(small).invoke(_small_command(), np.zeros((10, 10, 4), np.int64),
                                      np.zeros((4, 3, 3, 4), np.int64), qblock)
    with pytest.raises(InvocationError, match=r"5 output channels exceed the 4 PEs"):
        ConvAccelerator(small).invoke(_small_command(), np.zeros((4, 4, 2), np.int64),
                                      np.zeros((5, 3, 3, 2), np.int64), qblock)
    with pytest.raises(InvocationError, match=r"6 channels exceed the 4 PEs"):
        DepthwiseAccelerator(small).invoke(_small_command(), np.zeros((4, 4, 6), np.int64),
                                           np.zeros((3, 3, 6), np.int64), qblock)
    with pytest.raises(InvocationError, match=r"weight tile needs 1200 words, the PLM holds "
                                              r"1000"):
        FCAccelerator(fc_limits).invoke(Command(), np.zeros(600, np.int64),
                                    np.zeros((4, 600), np.int64), qblock)


def test_fc_inputs_must_match_the_weights():
    qblock = QuantBlock(0, -128, 127, np.zeros(2), np.full(2, 1 << 30), np.zeros(2))
    with pytest.raises(InvocationError, match=r"weights \(2, 10\) do not match the \(2,\) "
                                              r"inputs"):
        FCAccelerator().invoke(Command(), np.ones(2, np.int64), np.ones((2, 10), np.int64),
                               qblock)


@pytest.mark.parametrize("splits", [(4, 2), (-2,), (2, 2), (8,), (0,)])
def test_tile_splits_must_increase_within_the_dimension(splits):
    qblock = QuantBlock(0, -128, 127, np.zeros(3), np.full(3, 1 << 30), np.zeros(3))
    with pytest.raises(InvocationError, match=r"tile splits .* must increase strictly within "
                                              r"\(0, 8\)"):
        fully_connected_tiled(np.ones(8), np.ones((3, 8)), qblock, Command(), in_splits=splits)


def test_row_tile_refuses_rows_beyond_the_padded_input():
    with pytest.raises(InvocationError, match=r"output rows \(6, 9\) reach below"):
        row_tile((6, 9), 8, 3, 1, 1, 1)


def test_input_channel_tiles_must_be_whole_st_groups():
    with pytest.raises(InvocationError, match=r"multiples of 4 at a4w4"):
        conv2d_tiled(np.zeros((4, 4, 8)), np.zeros((2, 1, 1, 8)), None,
                     Command(Precision.A4W4, kernel=(1, 1)), in_splits=(2,))


def test_compiler_refuses_what_the_accelerators_cannot_run():
    import dataclasses

    graph = load_model("dscnn")
    with pytest.raises(CompileError, match=r"^09_average_pool_2d: avgpool2d runs on the host"):
        lower_layer(graph, graph.ops[9])
    conv, dw = graph.ops[2], graph.ops[1]
    with pytest.raises(CompileError, match=r"^02_conv_2d: dilation \(2, 1\) is not supported"):
        lower_layer(graph, dataclasses.replace(conv, dilation=(2, 1)))
    with pytest.raises(CompileError, match=r"^01_depthwise_conv_2d: depth multiplier 2"):
        lower_layer(graph, dataclasses.replace(dw, depth_multiplier=2))
    w = graph.tensor(conv.inputs[1])
    w.quant = dataclasses.replace(w.quant, zero_point=np.ones_like(w.quant.zero_point))
    with pytest.raises(CompileError, match=r"^02_conv_2d: weights with a non-zero zero point"):
        lower_layer(graph, conv)


def test_compiler_refuses_layers_whose_accumulators_could_overflow():
    graph = load_model("resnet8")
    op = graph.ops[1]
    lowered = lower_layer(graph, op)
    assert lowered.bound < 1 << 31
    assert lower_layer(graph, op, precision=Precision.A16W8).bound > 16 * lowered.bound
    bias = graph.tensor(op.inputs[2])
    bias.data = bias.data.copy()
    bias.data[5] = (1 << 31) - 1000
    with pytest.raises(CompileError, match=r"^01_conv_2d: output channel 5 can reach an "
                                           r"accumulator of \d+, beyond the 32-bit accumulator"):
        lower_layer(graph, op)


@pytest.mark.parametrize("model, bits", [("resnet8", 21.5), ("dscnn", 19.4), ("vww", 30.0),
                                         ("autoencoder", 20.7)])
def test_accumulator_bits_of_the_mlperf_tiny_models(model, bits):
    """The figures quoted in docs/formats.md section 5."""
    graph, _, layers = _model_values(model)
    worst = max(lower_layer(graph, op).bound for op in layers)
    assert round(float(np.log2(worst)), 1) == bits


def test_limits_come_from_the_configuration_object():
    from hls_ref.config import DEFAULT_CONFIG, AcceleratorConfig

    assert Limits() == DEFAULT_CONFIG.limits()
    one = AcceleratorConfig(max_stride=1).limits()
    assert one.max_stride == 1
    cmd = _small_command(stride=(2, 1))
    w = np.ones((4, 3, 3, 4), np.int64)
    x = np.ones((12, 12, 4), np.int64)
    qblock = QuantBlock(0, -128, 127, np.zeros(4), np.full(4, 1 << 30), np.zeros(4))
    with pytest.raises(InvocationError, match=r"build's maximum 1"):
        ConvAccelerator(one).invoke(cmd, x, w, qblock)
    assert ConvAccelerator().invoke(cmd, x, w, qblock).shape == (5, 10, 4)
