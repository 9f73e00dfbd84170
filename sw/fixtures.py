"""Layers for tests and benchmarks: random conv layers whose accumulators cannot overflow,
random tilings, and the MLPerf Tiny models' conv layers as programs with their real weights
(``sw.program`` builds the programs; this module only chooses what to build)."""

import numpy as np

from hls_ref.config import DEFAULT_CONFIG
from hls_ref.formats import QuantBlock, fold_input_zero_point
from hls_ref.invocation import Command
from hls_ref.layers import Requant, conv2d
from hls_ref.quant import quantize_multiplier

from .program import compiler_program

__all__ = ["model_conv_programs", "random_conv", "random_splits"]


def random_conv(rng, precision, out_bits, *, cin=None, cout=None, kernel=None, size=None,
                stride=None, pad=None):
    """A random conv layer whose accumulators cannot overflow: ``(x, weights, qblock,
    command, want)`` with raw values in ``precision``'s widths, fixed-point scaling to
    ``out_bits`` outputs and the reference output ``want`` (``hls_ref.layers.conv2d``).
    Unset shape arguments are drawn from ``rng`` (a numpy Generator)."""
    p = precision
    a_lo, a_hi = -(1 << (p.act_bits - 1)), (1 << (p.act_bits - 1)) - 1
    cin = cin or int(rng.integers(1, 20))
    cout = cout or int(rng.integers(1, 40))
    kh, kw = kernel or (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    sh, sw = stride or (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    pads = pad or tuple(int(rng.integers(0, k)) for k in (kh, kh, kw, kw))
    h, w = size or (int(rng.integers(kh, 14)), int(rng.integers(kw, 14)))
    w_max = min(1 << (p.weight_bits - 1), max(1, (1 << 29) // (kh * kw * cin << p.act_bits)))
    weights = rng.integers(-w_max, w_max, (cout, kh, kw, cin))
    x = rng.integers(a_lo, a_hi + 1, (h, w, cin))
    zp_in = int(rng.integers(a_lo, a_hi + 1))
    bias = rng.integers(-5000, 5000, cout)
    folded = fold_input_zero_point(bias, weights, zp_in)
    pairs = [quantize_multiplier(float(r)) for r in rng.uniform(1e-4, 0.2, cout)]
    top = (1 << (out_bits - 1)) - 1
    zp_out = int(rng.integers(-top // 2, top // 2 + 1))
    qb = QuantBlock(zp_out, -top - 1, top, folded, np.array([m for m, _ in pairs]),
                    np.array([s for _, s in pairs]))
    cmd = Command(p, out_bits, (kh, kw), (sh, sw), pads, zp_in)
    requant = Requant(qb.multiplier, qb.shift, zp_out, -top - 1, top)
    want = conv2d(x, weights, bias, zp_in, requant, stride=(sh, sw), padding=pads)
    return x, weights, qb, cmd, want


def random_splits(rng, total, multiple=1, most=3):
    """Up to ``most`` random tile boundaries in ``(0, total)``, multiples of ``multiple``."""
    candidates = list(range(multiple, total, multiple))
    if not candidates:
        return ()
    k = int(rng.integers(0, min(most, len(candidates)) + 1))
    return tuple(sorted(rng.choice(candidates, k, replace=False).tolist()))


def model_conv_programs(model, config=DEFAULT_CONFIG, *, seed=0):
    """Every Conv2D layer of a built-in model (``resnet8``, ``dscnn``, ``vww``) as a program
    with the layer's real weights and quantization, its input taken from a golden-model run
    of the network on a seeded random input, tiled by the compiler for ``config``.

    Returns ``[(layer name, program, tiling, reference output)]``; the reference is the
    golden model's output of the layer (bit-exact with LiteRT, ``docs/results.md``)."""
    from sw import graph as g
    from sw.golden import run_graph
    from sw.lowering import lower_layer
    from sw.tflite_import import load_model

    graph = load_model(model)
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, graph.input.shape).astype(graph.input.dtype)
    _, runs = run_graph(graph, x)
    values = {graph.input.name: x} | {r.op.output: r.output for r in runs}
    programs = []
    for op in graph.ops:
        if not isinstance(op, g.Conv2D):
            continue
        layer = lower_layer(graph, op)
        program, tiling = compiler_program(np.asarray(values[op.inputs[0]])[0], layer.weights,
                                           layer.qblock, layer.command, config, name=op.name,
                                           seed=seed)
        programs.append((op.name, program, tiling, np.asarray(values[op.output])[0]))
    return programs
