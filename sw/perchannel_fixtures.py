"""Per-channel layers for tests and benchmarks: random depthwise convolutions (whose
accumulators cannot overflow), global average pools and adds with their reference outputs,
and the MLPerf Tiny models' depthwise, pool and add layers as programs with their real weights.
"""

import numpy as np

from hls_ref.config import PERCHANNEL_CONFIG
from hls_ref.formats import QuantBlock, fold_input_zero_point
from hls_ref.invocation import Command
from hls_ref.layers import AddParams, Requant, add, avg_pool2d, depthwise_conv2d
from hls_ref.perchannel import add_qblock, pool_scale
from hls_ref.quant import quantize_multiplier

__all__ = ["model_perchannel_programs", "random_add", "random_depthwise", "random_pool"]

#: The layers the per-channel datapath runs, by graph operator kind.
KINDS = ("dwconv2d", "avgpool2d", "add")


def _act_range(precision):
    return -(1 << (precision.act_bits - 1)), (1 << (precision.act_bits - 1)) - 1


def random_depthwise(rng, precision, out_bits, *, channels=None, kernel=None, size=None,
                     stride=None, pad=None, max_kernel=(3, 3)):
    """A random depthwise layer: ``(x, weights, qblock, command, want)``, raw values in
    ``precision``'s widths, fixed-point scaling to ``out_bits``, ``want`` the reference
    output (``hls_ref.layers.depthwise_conv2d``). Unset shapes are drawn from ``rng``."""
    p = precision
    a_lo, a_hi = _act_range(p)
    c = channels or int(rng.integers(1, 20))
    kh, kw = kernel or (int(rng.integers(1, max_kernel[0] + 1)),
                        int(rng.integers(1, max_kernel[1] + 1)))
    sh, sw = stride or (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pads = pad or tuple(int(rng.integers(0, k)) for k in (kh, kh, kw, kw))
    h, w = size or (int(rng.integers(max(1, kh - pads[0] - pads[1]), 12)),
                    int(rng.integers(max(1, kw - pads[2] - pads[3]), 12)))
    w_max = min(1 << (p.weight_bits - 1), max(1, (1 << 29) // (kh * kw << p.act_bits)))
    weights = rng.integers(-w_max, w_max, (kh, kw, c))
    x = rng.integers(a_lo, a_hi + 1, (h, w, c))
    zp_in = int(rng.integers(a_lo, a_hi + 1))
    bias = rng.integers(-5000, 5000, c)
    folded = fold_input_zero_point(bias, weights.reshape(-1, c).T, zp_in)
    pairs = [quantize_multiplier(float(r)) for r in rng.uniform(1e-4, 0.2, c)]
    top = (1 << (out_bits - 1)) - 1
    zp_out = int(rng.integers(-top // 2, top // 2 + 1))
    qb = QuantBlock(zp_out, -top - 1, top, folded, np.array([m for m, _ in pairs]),
                    np.array([s for _, s in pairs]))
    cmd = Command(p, out_bits, (kh, kw), (sh, sw), pads, zp_in)
    requant = Requant(qb.multiplier, qb.shift, zp_out, -top - 1, top)
    want = depthwise_conv2d(x, weights, bias, zp_in, requant, stride=(sh, sw), padding=pads)
    return x, weights, qb, cmd, want


def random_pool(rng, precision, out_bits, *, channels=None, size=None):
    """A random global average pool: ``(x, qblock, command, want)``; the block divides by
    the window's element count (``hls_ref.perchannel.pool_scale``)."""
    a_lo, a_hi = _act_range(precision)
    c = channels or int(rng.integers(1, 20))
    h, w = size or (int(rng.integers(1, 12)), int(rng.integers(1, 12)))
    x = rng.integers(a_lo, a_hi + 1, (h, w, c))
    top = (1 << (out_bits - 1)) - 1
    multiplier, shift = pool_scale(h * w, precision.act_bits)
    qb = QuantBlock(0, -top - 1, top, np.zeros(c, np.int64), np.full(c, multiplier),
                    np.full(c, shift))
    want = avg_pool2d(x, (h, w), (1, 1), (0, 0, 0, 0), -top - 1, top)
    return x, qb, Command(precision, out_bits), want


def random_add(rng, precision, out_bits, *, channels=None, size=None):
    """A random add with TFLite's parameters for scales drawn from ``rng``: ``(a, b, qblock,
    command, want)``; the left shift keeps every 32-bit intermediate in range, as the
    compiler requires (20 for inputs of 8 bits or fewer, as TFLite's int8 ADD)."""
    a_lo, a_hi = _act_range(precision)
    c = channels or int(rng.integers(1, 20))
    h, w = size or (int(rng.integers(1, 10)), int(rng.integers(1, 10)))
    a = rng.integers(a_lo, a_hi + 1, (h, w, c))
    b = rng.integers(a_lo, a_hi + 1, (h, w, c))
    left_shift = 20 if precision.act_bits <= 8 else 12
    s1, s2, so = rng.uniform(0.01, 0.1, 3)
    twice = 2 * max(s1, s2)
    m1, m2 = quantize_multiplier(s1 / twice), quantize_multiplier(s2 / twice)
    mo = quantize_multiplier(twice / ((1 << left_shift) * so))
    zp = [int(rng.integers(a_lo // 2, a_hi // 2 + 1)) for _ in range(2)]
    top = (1 << (out_bits - 1)) - 1
    zo = int(rng.integers(-top // 2, top // 2 + 1))
    params = AddParams(left_shift, (zp[0], *m1), (zp[1], *m2), (zo, *mo), -top - 1, top)
    return a, b, add_qblock(params), Command(precision, out_bits), add(a, b, params)


def model_perchannel_programs(model, config=PERCHANNEL_CONFIG, *, seed=0, names=None):
    """Every DepthwiseConv2D, AveragePool2D and Add of a built-in model as a program with the
    layer's real weights and quantization, its inputs from a golden-model run of the network
    on a seeded random input, compiled for ``config`` (``sw.perchannel_compile``).

    Returns ``[(layer name, program, tiling, reference output)]`` (of the layers ``names``,
    or all); the reference is the golden model's output of the layer (bit-exact with LiteRT,
    ``docs/results.md``)."""
    from sw.golden import run_graph
    from sw.perchannel_compile import compile_perchannel
    from sw.tflite_import import load_model

    graph = load_model(model)
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, graph.input.shape).astype(graph.input.dtype)
    _, runs = run_graph(graph, x)
    values = {graph.input.name: x} | {r.op.output: r.output for r in runs}
    programs = []
    for op in graph.ops:
        if op.kind not in KINDS or (names is not None and op.name not in names):
            continue
        count = 2 if op.kind == "add" else 1
        inputs = [np.asarray(values[name])[0] for name in op.inputs[:count]]
        program, tiling, _ = compile_perchannel(graph, op, inputs, config, seed=seed)
        programs.append((op.name, program, tiling, np.asarray(values[op.output])[0]))
    return programs
