"""Layers for tests and benchmarks: random conv and FC layers whose accumulators cannot
overflow, random tilings, and the MLPerf Tiny models' conv layers as programs with their real
weights, conv and FullyConnected (``sw.program`` builds the programs; this module only
chooses what to build)."""

import numpy as np

from hls_ref.config import DEFAULT_CONFIG
from hls_ref.formats import QuantBlock, fold_input_zero_point
from hls_ref.invocation import Command
from hls_ref.layers import Requant, conv2d, fully_connected
from hls_ref.quant import quantize_multiplier

from .program import compiler_program, fc_program

__all__ = ["model_conv_programs", "model_fc_layers", "model_fc_programs", "random_conv",
           "random_fc", "random_splits"]


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


def random_fc(rng, precision, out_bits, *, vectors=None, inputs=None, outputs=None):
    """A random FullyConnected layer whose accumulators cannot overflow: ``(x, weights,
    qblock, command, want)`` with ``x`` a batch ``[vectors, inputs]``, one double-precision
    scale for every output (the FC rule, ``docs/formats.md`` section 4) and the reference
    ``want`` (``hls_ref.layers.fully_connected``). Unset sizes are drawn from ``rng``."""
    p = precision
    a_lo, a_hi = -(1 << (p.act_bits - 1)), (1 << (p.act_bits - 1)) - 1
    vectors = vectors or int(rng.integers(1, 4))
    inputs = inputs or int(rng.integers(1, 70))
    outputs = outputs or int(rng.integers(1, 40))
    w_max = min(1 << (p.weight_bits - 1), max(1, (1 << 29) // (inputs << p.act_bits)))
    weights = rng.integers(-w_max, w_max, (outputs, inputs))
    x = rng.integers(a_lo, a_hi + 1, (vectors, inputs))
    zp_in = int(rng.integers(a_lo, a_hi + 1))
    bias = rng.integers(-5000, 5000, outputs)
    folded = fold_input_zero_point(bias, weights, zp_in)
    scale = np.full(outputs, float(rng.uniform(1e-4, 0.2)) / (1 << int(rng.integers(0, 8))))
    top = (1 << (out_bits - 1)) - 1
    zp_out = int(rng.integers(-top // 2, top // 2 + 1))
    zeros = np.zeros(outputs, np.int64)
    qb = QuantBlock(zp_out, -top - 1, top, folded, zeros, zeros, scale)
    want = fully_connected(x, weights, bias, zp_in,
                           Requant(zeros, zeros, zp_out, -top - 1, top, scale))
    return x, weights, qb, Command(p, out_bits, pad_value=zp_in), want


def random_splits(rng, total, multiple=1, most=3):
    """Up to ``most`` random tile boundaries in ``(0, total)``, multiples of ``multiple``."""
    candidates = list(range(multiple, total, multiple))
    if not candidates:
        return ()
    k = int(rng.integers(0, min(most, len(candidates)) + 1))
    return tuple(sorted(rng.choice(candidates, k, replace=False).tolist()))


def model_conv_programs(model, config=DEFAULT_CONFIG, *, seed=0, unfold_input=True,
                        plain_first=False):
    """Every Conv2D layer of a built-in model (``resnet8``, ``dscnn``, ``vww``) as a program
    with the layer's real weights and quantization, its input taken from a golden-model run
    of the network on a seeded random input, tiled by the compiler for ``config``.

    With ``unfold_input`` the layer that reads the network input runs on it unfolded when
    the model image would (``sw.unfold``; named ``"<layer> unfolded"``, its reference in the
    unfolded layer's output shape, the same bytes); ``plain_first`` adds that layer as it is
    before it.

    Returns ``[(layer name, program, tiling, reference output)]``; the reference is the
    golden model's output of the layer (bit-exact with LiteRT, ``docs/results.md``)."""
    from sw import graph as g
    from sw.golden import run_graph
    from sw.lowering import lower_layer
    from sw.tflite_import import load_model
    from sw.unfold import input_reader, unfolded_program

    graph = load_model(model)
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, graph.input.shape).astype(graph.input.dtype)
    _, runs = run_graph(graph, x)
    values = {graph.input.name: x} | {r.op.output: r.output for r in runs}
    programs = []
    first = input_reader(graph) if unfold_input else None
    for op in graph.ops:
        if not isinstance(op, g.Conv2D):
            continue
        layer = lower_layer(graph, op)
        x_op, want = np.asarray(values[op.inputs[0]])[0], np.asarray(values[op.output])[0]
        unfolded = op is first and unfolded_program(x_op, layer, config, name=op.name,
                                                    seed=seed)
        if not unfolded or plain_first:
            program, tiling = compiler_program(x_op, layer.weights, layer.qblock,
                                               layer.command, config, name=op.name, seed=seed)
            programs.append((op.name, program, tiling, want))
        if unfolded:
            unfold, program, tiling = unfolded
            programs.append((f"{op.name} unfolded", program, tiling,
                             want.reshape(unfold.out_shape(want.shape[-1]))))
    return programs


def model_fc_layers(model, *, vectors=1, seed=0):
    """Every FullyConnected layer of a built-in model (``resnet8``, ``dscnn``, ``vww``,
    ``autoencoder``), lowered (``sw.lowering.lower_layer``: real weights and quantization),
    with ``vectors`` input vectors (a batch: the layer's inputs, flattened -- a Reshape is a
    view -- in golden-model runs of the network on seeded random inputs) and the golden
    network's outputs of the layer for them (bit-exact with LiteRT, ``docs/results.md``).

    Returns ``[(layer name, x [vectors, inputs], lowered layer, reference [vectors,
    outputs])]``."""
    from sw import graph as g
    from sw.golden import prepare, run_graph
    from sw.lowering import lower_layer
    from sw.tflite_import import load_model

    graph = load_model(model)
    parameters = prepare(graph)
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(vectors):
        x = rng.integers(-128, 128, graph.input.shape).astype(graph.input.dtype)
        _, runs = run_graph(graph, x, parameters)
        values.append({graph.input.name: x} | {r.op.output: r.output for r in runs})
    layers = []
    for op in graph.ops:
        if not isinstance(op, g.FullyConnected):
            continue
        layer = lower_layer(graph, op)
        outputs, inputs = layer.weights.shape
        x = np.concatenate([np.asarray(v[op.inputs[0]]).reshape(-1, inputs) for v in values])
        want = np.concatenate([np.asarray(v[op.output]).reshape(-1, outputs) for v in values])
        layers.append((op.name, x.astype(np.int64), layer, want))
    return layers


def model_fc_programs(model, config, *, vectors=1, seed=0):
    """:func:`model_fc_layers` as programs for ``config``'s FC datapath, tiled by the FC
    tiling compiler (``sw.tiling.fc``).

    Returns ``[(layer name, program, tiling, reference output [vectors, outputs])]``."""
    from .tiling.fc import fc_tiling

    programs = []
    for name, x, layer, want in model_fc_layers(model, vectors=vectors, seed=seed):
        cmd = layer.command
        tiling = fc_tiling(name, x.shape[0], x.shape[1], layer.weights.shape[0],
                           cmd.precision, config)
        program = fc_program(x, layer.weights, layer.qblock, cmd, config,
                             out_splits=tiling.out_splits, in_splits=tiling.in_splits,
                             batch_splits=tiling.batch_splits, seed=seed)
        programs.append((name, program, tiling, want))
    return programs
