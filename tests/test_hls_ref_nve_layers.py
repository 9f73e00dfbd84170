"""Golden model of NVE layers: vectorised layers against plain loops, merged pooling, int32
wrap-around, validation, and the seed-003 layers' sizes and MAC counts (Table 1)."""

import re
import time

import numpy as np
import pytest

from hls_ref.nve import numerics
from hls_ref.nve.layers import (
    NveLayer,
    conv_layer,
    merge_bias,
    merge_pooling,
    random_layer_data,
    reference_loops,
)
from sw.nve_layers import nve_layer, nve_layers
from sw.workloads import nve_networks

LUTS = {"tanh": numerics.tanh_lut, "identity": numerics.identity_lut, "relu": numerics.relu_lut}
RANDOM_SEEDS = range(64)


def _axis(rng, out, stride, kernel):
    """(in_size, before, after) with padding in -2 ... 2 that spans the windows exactly."""
    span = (out - 1) * stride + kernel
    while True:
        before, after = (int(v) for v in rng.integers(-2, 3, 2))
        size = span - before - after
        if size >= 1 and max(-before, 0) + max(-after, 0) < size:
            return size, before, after


def random_small_layer(rng):
    """A small layer: kernels 1..8, strides 1..2, sparse shuffled connectivity, padding
    -2 ... 2 on every side."""
    kh, kw = (int(v) for v in rng.integers(1, 9, 2))
    sh, sw = (int(v) for v in rng.integers(1, 3, 2))
    out_h, out_w = (int(v) for v in rng.integers(1, 6, 2))
    in_h, top, bottom = _axis(rng, out_h, sh, kh)
    in_w, left, right = _axis(rng, out_w, sw, kw)
    in_maps, out_maps = (int(v) for v in rng.integers(1, 5, 2))
    connections = [rng.permutation(in_maps)[:rng.integers(1, in_maps + 1)].tolist()
                   for _ in range(out_maps)]
    return NveLayer(in_maps=in_maps, in_h=in_h, in_w=in_w, out_h=out_h, out_w=out_w,
                    kernel_h=kh, kernel_w=kw, stride_h=sh, stride_w=sw,
                    connections=connections, pad=(top, bottom, left, right))


def random_case(seed):
    rng = np.random.default_rng(seed)
    layer = random_small_layer(rng)
    data = random_layer_data(layer, rng)
    shift = int(rng.integers(0, numerics.MAX_SHIFT + 1))
    lut_name = str(rng.choice(sorted(LUTS)))
    return layer, data, shift, lut_name


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_conv_layer_matches_reference_loops(seed):
    layer, data, shift, lut_name = random_case(seed)
    lut = LUTS[lut_name]()
    out, acc = conv_layer(*data, layer, shift, lut)
    ref_out, ref_acc = reference_loops(*data, layer, shift, lut)
    where = f"seed {seed}: {layer}, shift {shift}, {lut_name} LUT"
    assert out.dtype == np.int8 and acc.dtype == np.int32, where
    assert out.shape == acc.shape == layer.out_shape, where
    np.testing.assert_array_equal(acc, ref_acc, err_msg=where)
    np.testing.assert_array_equal(out, ref_out, err_msg=where)


def test_random_layers_cover_the_geometry():
    """The cross-check above sees every kind of layer it is meant to check."""
    layers = [random_case(seed)[0] for seed in RANDOM_SEEDS]
    pads = [p for layer in layers for p in layer.pad]
    assert min(pads) < 0 < max(pads)
    assert {layer.stride_h for layer in layers} == {1, 2} == {layer.stride_w for layer in layers}
    assert max(layer.kernel_h for layer in layers) == 8 == max(layer.kernel_w for layer in layers)
    assert min(layer.kernel_h for layer in layers) == 1
    assert any(len(c) < layer.in_maps for layer in layers for c in layer.connections)
    assert any(list(c) != sorted(c) for layer in layers for c in layer.connections)
    assert {case[3] for case in map(random_case, RANDOM_SEEDS)} == set(LUTS)


def test_unconnected_input_maps_are_not_read():
    layer = NveLayer(in_maps=3, in_h=6, in_w=7, out_h=4, out_w=5, kernel_h=3, kernel_w=3,
                     stride_h=1, stride_w=1, connections=[[2, 0], [0]])
    inputs, weights, bias = random_layer_data(layer, np.random.default_rng(7))
    out, acc = conv_layer(inputs, weights, bias, layer, 12, numerics.tanh_lut())
    changed = inputs.copy()
    changed[1] = -changed[1] - 1
    out2, acc2 = conv_layer(changed, weights, bias, layer, 12, numerics.tanh_lut())
    np.testing.assert_array_equal(acc, acc2)
    np.testing.assert_array_equal(out, out2)
    # ... and the order of connections[m] is the order of weights[m].
    swapped = NveLayer(**{**layer.__dict__, "connections": [[0, 2], [0]]})
    _, acc3 = conv_layer(inputs, [weights[0][::-1], weights[1]], bias, swapped, 12,
                         numerics.tanh_lut())
    np.testing.assert_array_equal(acc, acc3)


def test_weights_may_be_one_array_when_maps_have_equal_inputs():
    layer = NveLayer(in_maps=2, in_h=5, in_w=5, out_h=2, out_w=2, kernel_h=3, kernel_w=3,
                     stride_h=2, stride_w=2, connections=[[0, 1], [1, 0], [1, 0]])
    inputs, weights, bias = random_layer_data(layer, np.random.default_rng(3))
    lut = numerics.identity_lut()
    as_list = conv_layer(inputs, weights, bias, layer, 9, lut)
    as_array = conv_layer(inputs, np.stack(weights), bias, layer, 9, lut)
    for a, b in zip(as_list, as_array):
        np.testing.assert_array_equal(a, b)


# --- merged pooling -------------------------------------------------------------------------


def test_merge_pooling_is_the_sum_of_four_shifted_kernels():
    np.testing.assert_array_equal(merge_pooling([[1, 2], [3, 4]]),
                                  [[1, 3, 2], [4, 10, 6], [3, 7, 4]])
    np.testing.assert_array_equal(merge_pooling([[5]]), [[5, 5], [5, 5]])
    stack = np.arange(2 * 3 * 2).reshape(2, 3, 2)
    merged = merge_pooling(stack)
    assert merged.shape == (2, 4, 3)
    np.testing.assert_array_equal(merged[1], merge_pooling(stack[1]))
    assert merged.sum() == 4 * stack.sum()


def test_merge_pooling_refuses_int16_overflow():
    merge_pooling(np.full((3, 3), 8191))  # 4 * 8191 = 32764 fits
    with pytest.raises(OverflowError, match="int16"):
        merge_pooling(np.full((3, 3), 8192))
    with pytest.raises(OverflowError, match="int16"):
        merge_pooling([[-20000, -20000]])
    assert merge_bias(-8192) == -32768
    np.testing.assert_array_equal(merge_bias([1, -2, 3]), [4, -8, 12])
    with pytest.raises(OverflowError, match="merged bias"):
        merge_bias([0, 8192])
    with pytest.raises(ValueError, match="kh, kw"):
        merge_pooling([1, 2, 3])


def _sum_pool(acc):
    """2 x 2 sum pooling with stride 2 of int32 accumulators [maps, h, w], wrapped to int32."""
    maps, h, w = acc.shape
    ph, pw = h // 2, w // 2
    blocks = acc[:, :2 * ph, :2 * pw].astype(np.int64).reshape(maps, ph, 2, pw, 2)
    return numerics.wrap_acc(blocks.sum(axis=(2, 4)))


@pytest.mark.parametrize("kernel", range(1, 8))
def test_merged_pooling_equals_convolution_then_sum_pooling(kernel):
    seed = 1000 + kernel
    rng = np.random.default_rng(seed)
    in_h, in_w = (int(v) for v in rng.integers(kernel + 1, kernel + 12, 2))
    connections = [[1], [0, 1], [1, 0]]
    conv_h, conv_w = in_h - kernel + 1, in_w - kernel + 1
    conv = NveLayer(in_maps=2, in_h=in_h, in_w=in_w, out_h=conv_h, out_w=conv_w,
                    kernel_h=kernel, kernel_w=kernel, stride_h=1, stride_w=1,
                    connections=connections)
    out_h, out_w = conv_h // 2, conv_w // 2
    # An odd convolution output leaves its last row/column out of the pooling: the merged
    # layer does not read the input's last row/column (padding -1).
    merged = NveLayer(in_maps=2, in_h=in_h, in_w=in_w, out_h=out_h, out_w=out_w,
                      kernel_h=kernel + 1, kernel_w=kernel + 1, stride_h=2, stride_w=2,
                      connections=connections,
                      pad=(0, (out_h - 1) * 2 + kernel + 1 - in_h,
                           0, (out_w - 1) * 2 + kernel + 1 - in_w))
    inputs = rng.integers(-128, 128, conv.in_shape)
    weights = [rng.integers(-8191, 8192, conv.weight_shape(m)) for m in range(3)]
    bias = rng.integers(-8191, 8192, 3)
    lut = numerics.tanh_lut()
    _, conv_acc = conv_layer(inputs, weights, bias, conv, 10, lut)
    merged_out, merged_acc = conv_layer(inputs, [merge_pooling(w) for w in weights],
                                        merge_bias(bias), merged, 12, lut)
    where = f"seed {seed}, kernel {kernel}, input {in_h}x{in_w}"
    pooled = _sum_pool(conv_acc)
    np.testing.assert_array_equal(merged_acc, pooled, err_msg=where)
    # Average pooling's 1/4 is two more bits of activation shift.
    np.testing.assert_array_equal(merged_out, numerics.activate(pooled, 12, lut), err_msg=where)


# --- int32 wrap-around ----------------------------------------------------------------------


def test_accumulators_wrap_at_32_bits():
    # 8 maps x 8 x 8 taps of (-128) * (-32768) = 2**22 each sum to exactly 2**31.
    layer = NveLayer(in_maps=8, in_h=8, in_w=9, out_h=1, out_w=2, kernel_h=8, kernel_w=8,
                     stride_h=1, stride_w=1, connections=[list(range(8))])
    inputs = np.full(layer.in_shape, -128)
    inputs[:, :, 8] = 0  # the second window loses one column of taps: 2**31 - 8 * 8 * 2**22
    weights = [np.full(layer.weight_shape(0), -32768)]
    out, acc = conv_layer(inputs, weights, [5], layer, 0, numerics.identity_lut())
    exact = [2 ** 31 + 5, 2 ** 31 - 8 * 8 * 2 ** 22 + 5]
    assert exact[0] > np.iinfo(np.int32).max
    wrapped = [(v + 2 ** 31) % 2 ** 32 - 2 ** 31 for v in exact]
    assert wrapped[0] == -(2 ** 31) + 5
    np.testing.assert_array_equal(acc, [[wrapped]])
    # The activation sees the wrapped (negative) value: the identity LUT saturates it low.
    np.testing.assert_array_equal(out, [[[-128, 127]]])


def test_accumulators_wrap_like_python_integers_on_random_large_sums():
    seed = 77
    rng = np.random.default_rng(seed)
    # 24 maps x 64 taps of products near -(2**21.7): the first map's sums pass -2**32.
    layer = NveLayer(in_maps=24, in_h=9, in_w=10, out_h=2, out_w=3, kernel_h=8, kernel_w=8,
                     stride_h=1, stride_w=1, connections=[list(range(24)), [3, 1, 4]])
    sign = rng.choice([-1, 1], layer.in_shape)
    inputs = sign * rng.integers(100, 129, layer.in_shape).clip(max=127 + (sign < 0))
    weights = [-sign[layer.connections[m], :8, :8] * rng.integers(20000, 32768,
               layer.weight_shape(m)) for m in range(2)]
    bias = rng.integers(-32768, 32768, 2)
    out, acc = conv_layer(inputs, weights, bias, layer, 20, numerics.tanh_lut())
    exact = int(bias[0]) + sum(int(w) * int(p) for w, p in zip(
        weights[0].ravel(), inputs[:, :8, :8].ravel()))
    assert exact < -(2 ** 32), f"seed {seed}: the case must wrap more than once"
    assert acc[0, 0, 0] == (exact + 2 ** 31) % 2 ** 32 - 2 ** 31, f"seed {seed}"
    ref_out, ref_acc = reference_loops(inputs, weights, bias, layer, 20, numerics.tanh_lut())
    np.testing.assert_array_equal(acc, ref_acc, err_msg=f"seed {seed}")
    np.testing.assert_array_equal(out, ref_out, err_msg=f"seed {seed}")


def test_lut_index_rounds_half_up_and_saturates():
    # round(acc / 2) half up, including the negative halves
    assert (numerics.lut_index([-3, -2, -1, 0, 1, 2, 3], 1) - 512).tolist() == [-1, -1, 0, 0, 1,
                                                                                1, 2]
    # the edges of the signed 10-bit range, shift 4: 511.4375 -> 511, 511.5 -> 512 (saturates),
    # -512.5 -> -512, -512.5625 -> -513 (saturates)
    assert numerics.lut_index([511 * 16 + 7, 511 * 16 + 8, -512 * 16 - 8, -512 * 16 - 9],
                              4).tolist() == [1023, 1023, 0, 0]
    assert numerics.lut_index([510 * 16 + 7, -511 * 16 - 9], 4).tolist() == [1022, 0]
    # int32 extremes: no overflow in the rounding constant; 2**31 is the wrapped -2**31
    top, bottom = 2 ** 31 - 1, -(2 ** 31)
    assert numerics.lut_index([top, bottom, 2 ** 31], 0).tolist() == [1023, 0, 0]
    assert numerics.lut_index([top, bottom], 31).tolist() == [513, 511]
    with pytest.raises(ValueError, match=r"shift must be 0 \.\.\. 31"):
        numerics.lut_index([0], 32)


def test_named_luts():
    assert numerics.identity_lut()[[0, 500, 512, 517, 1023]].tolist() == [-128, -12, 0, 5, 127]
    assert numerics.relu_lut()[[0, 511, 512, 600, 1023]].tolist() == [0, 0, 0, 88, 127]
    tanh = numerics.tanh_lut()
    assert tanh[[0, 512, 1023]].tolist() == [-127, 0, 127]
    assert tanh[512 + 64] == round(127 * np.tanh(1.0))
    assert (np.diff(tanh.astype(int)) >= 0).all()


# --- validation -----------------------------------------------------------------------------

BASE = {"in_maps": 2, "in_h": 9, "in_w": 12, "out_h": 4, "out_w": 5, "kernel_h": 3,
        "kernel_w": 4, "stride_h": 2, "stride_w": 2, "connections": [[0], [1, 0]]}


def test_base_layer_is_valid():
    layer = NveLayer(**BASE)
    assert layer.connections == ((0,), (1, 0)) and layer.pad == (0, 0, 0, 0)
    assert layer.out_maps == 2 and layer.pairs == 3
    assert layer.macs == 4 * 5 * 3 * 4 * 3
    assert layer.in_shape == (2, 9, 12) and layer.out_shape == (2, 4, 5)
    assert layer.weight_shape(1) == (2, 3, 4)
    hash(layer)


@pytest.mark.parametrize(("change", "message"), [
    ({"kernel_h": 0}, r"NveLayer\.kernel_h must be an integer >= 1, not 0"),
    ({"stride_w": 1.5}, r"NveLayer\.stride_w must be an integer >= 1"),
    ({"in_h": True}, r"NveLayer\.in_h must be an integer"),
    ({"out_w": -3}, r"NveLayer\.out_w"),
    ({"in_h": 10}, r"NveLayer\.pad: the padded input height 10 \+ 0 \+ 0 = 10 must equal "
                   r"\(out - 1\) \* stride \+ kernel = \(4 - 1\) \* 2 \+ 3 = 9"),
    ({"pad": (0, 0, 1, 0)}, r"NveLayer\.pad: the padded input width .* = 12"),
    ({"pad": (0, 0, 0)}, r"NveLayer\.pad must be four integers"),
    ({"pad": 0}, r"NveLayer\.pad must be four integers"),
    ({"pad": (-9, 9, 0, 0)}, r"NveLayer\.pad: negative padding drops 9 of the 9 input"),
    ({"pad": (1, -1, 0.5, -0.5)}, r"NveLayer\.pad must be four integers"),
    ({"connections": []}, r"NveLayer\.connections must list at least one output map"),
    ({"connections": [[0], []]}, r"NveLayer\.connections\[1\] is empty"),
    ({"connections": [[0], [2]]}, r"NveLayer\.connections\[1\]: input map 2 is not in "
                                  r"0 \.\.\. 1 \(in_maps = 2\)"),
    ({"connections": [[-1]]}, r"input map -1 is not in"),
    ({"connections": [[0, 1, 0]]}, r"NveLayer\.connections\[0\] lists an input map twice"),
    ({"connections": 5}, r"NveLayer\.connections must be a sequence of sequences"),
])
def test_layer_validation(change, message):
    with pytest.raises(ValueError, match=message):
        NveLayer(**{**BASE, **change})


def test_padding_may_mix_cropping_and_zeros():
    layer = NveLayer(**{**BASE, "in_h": 9, "pad": (-3, 3, 2, -2)})
    inputs, weights, bias = random_layer_data(layer, np.random.default_rng(5))
    lut = numerics.relu_lut()
    for a, b in zip(conv_layer(inputs, weights, bias, layer, 16, lut),
                    reference_loops(inputs, weights, bias, layer, 16, lut)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("what", "message"), [
    ("pixel", r"inputs \(int8 pixels\) must lie in -128 \.\.\. 127"),
    ("weight", r"weights\[1\] \(int16\) must lie in -32768 \.\.\. 32767"),
    ("bias", r"bias \(int16\) must lie in"),
    ("float", r"inputs \(int8 pixels\) must be integers"),
    ("input shape", r"inputs \(int8 pixels\) must have shape \(2, 9, 12\)"),
    ("weight count", r"weights must hold one array per output map \(2\), not 1"),
    ("weight shape", r"weights\[0\] \(int16\) must have shape \(1, 3, 4\)"),
    ("bias shape", r"bias \(int16\) must have shape \(2,\)"),
    ("shift", r"activation shift must be 0 \.\.\. 31"),
    ("lut", r"1024 entries"),
])
def test_conv_layer_refuses_bad_data(what, message):
    layer = NveLayer(**BASE)
    inputs, weights, bias = random_layer_data(layer, np.random.default_rng(1))
    inputs, weights, bias = inputs.astype(np.int64), list(weights), bias.astype(np.int64)
    shift, lut = 8, numerics.identity_lut()
    if what == "pixel":
        inputs[1, 2, 3] = 128
    elif what == "weight":
        weights[1] = weights[1].astype(np.int64)
        weights[1][0, 0, 0] = 32768
    elif what == "bias":
        bias[0] = -32769
    elif what == "float":
        inputs = inputs.astype(np.float64)
    elif what == "input shape":
        inputs = inputs[:, :, :-1]
    elif what == "weight count":
        weights = weights[:1]
    elif what == "weight shape":
        weights[0] = weights[1]
    elif what == "bias shape":
        bias = bias[:1]
    elif what == "shift":
        shift = 32
    elif what == "lut":
        lut = lut[:-1]
    with pytest.raises(ValueError, match=message):
        conv_layer(inputs, weights, bias, layer, shift, lut)


def test_random_layer_data_is_in_range_and_reproducible():
    layer = NveLayer(**BASE)
    first = random_layer_data(layer, np.random.default_rng(11))
    again = random_layer_data(layer, np.random.default_rng(11))
    other = random_layer_data(layer, np.random.default_rng(12))
    inputs, weights, bias = first
    assert inputs.dtype == np.int8 and inputs.shape == layer.in_shape
    assert [w.dtype for w in weights] == [np.int16] * 2
    assert [w.shape for w in weights] == [layer.weight_shape(m) for m in range(2)]
    assert bias.dtype == np.int16 and bias.shape == (2,)
    np.testing.assert_array_equal(inputs, again[0])
    np.testing.assert_array_equal(weights[1], again[1][1])
    assert not np.array_equal(inputs, other[0])
    big = NveLayer(in_maps=1, in_h=64, in_w=64, out_h=64, out_w=64, kernel_h=1, kernel_w=1,
                   stride_h=1, stride_w=1, connections=[[0]] * 300)
    x, ws, b = random_layer_data(big, np.random.default_rng(2))
    assert (x.min(), x.max()) == (-128, 127)  # the full int8 range is drawn
    for values in (np.concatenate(ws), b):  # ... and the full int16 range
        assert int(values.min()) < -30000 and int(values.max()) > 30000


# --- the seed-003 networks ------------------------------------------------------------------

# Table 1: maps, feature-map size W x H, kernel, subsample, MACs as printed.
TABLE_1 = {
    "face-detection": {
        "L1": (4, (638, 358), 6, 2, "32.9M"),
        "L2": (14, (317, 177), 4, 2, "17.95M"),
        "L3": (14, (312, 172), 6, 1, "27M"),
        "L4": (1, (312, 172), 1, 1, "0.75M"),
    },
    "speed-sign": {
        "L1": (6, (637, 357), 6, 2, "49.1M"),
        "L2": (16, (317, 177), 6, 2, "121.2M"),
        "L3": (80, (312, 172), 5, 1, "858.6M"),
        "L4": (1, (312, 172), 1, 1, "4.3M"),
    },
}
# Finer roundings of the same MAC counts (out_h * out_w * kh * kw * pairs), in millions.
MACS_2DP = {
    "face-detection": {"L1": 32.89, "L2": 17.95, "L3": 27.05, "L4": 0.751},
    "speed-sign": {"L1": 49.12, "L2": 121.20, "L3": 858.62, "L4": 4.29},
}
PADDING = {
    "face-detection": {"L2": (0, -2, 0, -2)},
    "speed-sign": {"L1": (0, -2, 0, -2), "L2": (0, 1, 0, 1), "L3": (0, -1, 0, -1)},
}


def printed_matches(value, printed):
    """``value`` is within half a unit of the last digit of the printed figure ("32.9M")."""
    number = re.fullmatch(r"([0-9.]+)M", printed).group(1)
    decimals = len(number.partition(".")[2])
    return abs(value - float(number) * 1e6) <= 0.5 * 10 ** -decimals * 1e6


@pytest.mark.parametrize("network", sorted(TABLE_1))
def test_seed_layers_match_table_1(network):
    layers = nve_layers(network)
    assert list(layers) == ["L1", "L2", "L3", "L4"]
    previous = (1, 720, 1280)  # the grey 1280 x 720 frame
    for name, layer in layers.items():
        maps, (width, height), kernel, sub, macs = TABLE_1[network][name]
        where = f"{network} {name}: {layer}"
        assert layer.in_shape == previous, where
        assert layer.out_shape == (maps, height, width), where
        assert (layer.kernel_h, layer.kernel_w, layer.stride_h, layer.stride_w) == (
            kernel, kernel, sub, sub), where
        assert layer.connections == tuple(
            map(tuple, nve_networks.CONNECTIONS[network][name])), where
        assert layer.pad == PADDING[network].get(name, (0, 0, 0, 0)), where
        assert layer.macs == height * width * kernel * kernel * layer.pairs, where
        assert printed_matches(layer.macs, macs), f"{where}: {layer.macs} vs {macs}"
        digits = len(str(MACS_2DP[network][name]).partition(".")[2])
        assert round(layer.macs / 1e6, digits) == MACS_2DP[network][name], where
        previous = layer.out_shape


def test_adapter_refuses_mismatched_descriptions():
    net = nve_networks.face_detection()
    l2 = net.layer("L2")
    table = nve_networks.CONNECTIONS["face-detection"]["L2"]
    assert nve_layer(l2, table).pairs == 20
    with pytest.raises(ValueError, match="13 connection entries for 14 output maps"):
        nve_layer(l2, table[:-1])
    with pytest.raises(ValueError, match="has 21 pairs, the shape description 20"):
        nve_layer(l2, [*table[:-1], [0, 1, 2]])
    with pytest.raises(KeyError, match="unknown NVE network"):
        nve_layers("lenet")


def _pixel(inputs, weights, bias, layer, m, y, x):
    """One exact, unwrapped accumulator, from the input coordinates of its window."""
    top, _, left, _ = layer.pad
    total = int(bias[m])
    for j, i in enumerate(layer.connections[m]):
        for a in range(layer.kernel_h):
            for c in range(layer.kernel_w):
                row, col = y * layer.stride_h + a - top, x * layer.stride_w + c - left
                if 0 <= row < layer.in_h and 0 <= col < layer.in_w:
                    total += int(weights[m][j, a, c]) * int(inputs[i, row, col])
    return total


def _spot_check(out, acc, data, layer, shift, lut, rng, where):
    """Corners (where padding acts) and random pixels against :func:`_pixel`."""
    maps, h, w = layer.out_shape
    points = [(m, y, x) for m in range(maps) for y in (0, h - 1) for x in (0, w - 1)]
    points += [tuple(int(v) for v in rng.integers(0, (maps, h, w))) for _ in range(16)]
    for m, y, x in points:
        exact = _pixel(*data, layer, m, y, x)
        wrapped = (exact + 2 ** 31) % 2 ** 32 - 2 ** 31
        assert acc[m, y, x] == wrapped, f"{where}: accumulator {(m, y, x)}"
        assert out[m, y, x] == numerics.activate(wrapped, shift, lut), f"{where}: {(m, y, x)}"


def test_face_detection_l1_l2_full_size_smoke():
    seed = 2024
    rng = np.random.default_rng(seed)
    layers = nve_layers("face-detection")
    lut = numerics.tanh_lut()
    l1 = layers["L1"]
    data = random_layer_data(l1, rng)
    # Shift 15 spreads the random accumulators (about 2**23) over the LUT's index range.
    start = time.perf_counter()
    out1, acc1 = conv_layer(*data, l1, 15, lut)
    seconds = time.perf_counter() - start
    print(f"face-detection L1 ({l1.macs / 1e6:.1f} M MACs): {seconds:.2f} s")
    assert out1.shape == acc1.shape == (4, 358, 638)
    _spot_check(out1, acc1, data, l1, 15, lut, rng, f"seed {seed}, face L1")
    # L2 reads L1's outputs, 2 of its rows and columns unread.
    l2 = layers["L2"]
    _, weights, bias = random_layer_data(l2, rng)
    out2, acc2 = conv_layer(out1, weights, bias, l2, 15, lut)
    assert out2.shape == (14, 177, 317)
    _spot_check(out2, acc2, (out1, weights, bias), l2, 15, lut, rng, f"seed {seed}, face L2")
    assert len(np.unique(out2)) > 100, "random data should spread over the tanh LUT"
