"""Feature-map fusion of the NVE code generator: the seed's greedy (Algorithm 2) on its own
example and without its defects, the alternatives, the exact whole-row figures of a probe,
and fused programs run bit-exact on the instruction-set simulator with less data transfer."""

import os

import numpy as np
import pytest

from hls_ref.nve.isa import NveConfig
from hls_ref.nve.layers import NveLayer, conv_layer, random_layer_data
from sw.nve import NveCompileError, compile_layer, run_layer
from sw.nve.fusion import _Prober, fuse_layer, pair_merging, partner, seed_greedy

SEED = int(os.environ.get("TESSERA_SEED", "20261121"))

# seed Sec. 5.3: I1 = [0 1 2 3], I2 = [1 2 3 4], I3 = [0 2 3 4 5]; every pair shares 3 inputs
EXAMPLE = {1: frozenset({0, 1, 2, 3}), 2: frozenset({1, 2, 3, 4}), 3: frozenset({0, 2, 3, 4, 5})}


def fits_always(maps):
    return None


def test_the_seeds_example_pairs_i1_with_i2():
    # all pairs intersect in 3 inputs; the symmetric difference prefers I1-I2 (2 against 3)
    assert {len(EXAMPLE[a] & EXAMPLE[b]) for a, b in ((1, 2), (1, 3), (2, 3))} == {3}
    assert partner(EXAMPLE[1], [2, 3], EXAMPLE.get) == 2
    assert partner(EXAMPLE[1], [3, 2], EXAMPLE.get) == 2
    # programs of one size: the greedy starts from I1 and adds I2 first
    groups, attempts = seed_greedy([1, 2, 3], EXAMPLE.get, lambda m: 1, fits_always)
    assert (attempts[0].group, attempts[0].candidate) == ((1,), (2,))
    assert groups == [(1, 2, 3)]
    # merging the best pair first picks I1-I2 whatever the program sizes
    _, attempts = pair_merging([1, 2, 3], EXAMPLE.get, fits_always)
    assert (attempts[0].group, attempts[0].candidate) == ((1,), (2,))
    # with sizes that grow with the inputs the greedy starts from I3, the largest program;
    # I1 and I2 then tie (difference 3, intersection 3) and the first pending one is taken
    _, attempts = seed_greedy([1, 2, 3], EXAMPLE.get, lambda m: len(EXAMPLE[m]), fits_always)
    assert (attempts[0].group, attempts[0].candidate) == ((3,), (1,))


def test_tie_break_is_the_largest_intersection():
    inputs = {0: frozenset({0, 1}), 1: frozenset({2}), 2: frozenset({0, 1, 2})}
    # {0, 1} against {2}: difference 3, intersection 0; against {0, 1, 2}: difference 1
    assert partner(inputs[0], [1, 2], inputs.get) == 2
    inputs = {0: frozenset({0, 1}), 1: frozenset({0, 5}), 2: frozenset({0, 1, 2, 3})}
    # both differ in 2 inputs; {0, 1, 2, 3} shares 2, {0, 5} only 1
    assert partner(inputs[0], [1, 2], inputs.get) == 2


def test_the_last_group_is_flushed_and_a_refused_group_is_closed():
    inputs = {m: frozenset({0}) for m in range(5)}
    refused = []

    def at_most_two(maps):
        if len(maps) > 2:
            refused.append(maps)
            return "too long"
        return None

    groups, attempts = seed_greedy(range(5), inputs.get, lambda m: 1, at_most_two)
    assert groups == [(0, 1), (2, 3), (4,)]  # (4,) is the group the seed's listing drops
    assert refused == [(0, 1, 2), (2, 3, 4)]
    assert [a.fits for a in attempts] == [True, False, True, False]
    assert attempts[1].reason == "too long"
    # the refused candidate stays pending and starts (or joins) a later group
    assert sorted(m for g in groups for m in g) == list(range(5))
    assert seed_greedy(range(5), inputs.get, lambda m: 1, fits_always, cap=2)[0] == groups


def test_the_greedy_starts_each_group_from_the_largest_program():
    inputs = {0: frozenset({0}), 1: frozenset({0, 1}), 2: frozenset({1}), 3: frozenset({2})}
    sizes = {0: 10, 1: 30, 2: 20, 3: 5}
    groups, _ = seed_greedy(range(4), inputs.get, sizes.get, lambda g: "no" if len(g) > 1
                            else None)
    assert groups == [(1,), (2,), (0,), (3,)]


def shared_layer(kernel=3, stride=1, out_w=40):
    """Three maps over two inputs, two of them sharing both."""
    out_h = 20
    in_h, in_w = (out_h - 1) * stride + kernel, (out_w - 1) * stride + kernel
    return NveLayer(2, in_h, in_w, out_h, out_w, kernel, kernel, stride, stride,
                    [[0, 1], [0, 1], [1]])


def test_combinations_that_do_not_fit_are_caught():
    layer = shared_layer()
    alone = compile_layer(layer, maps=[0], check=False).groups[0]
    # room for map 0's program (65 instructions), not for maps 0 and 1 (72 in the compact
    # form); maps 1 and 2 fit together (60)
    config = NveConfig(instruction_words=alone.program.size)
    fused = fuse_layer(layer, strategy="greedy", config=config)
    assert fused.groups == ((0,), (1, 2))
    first = fused.attempts[0]
    assert (first.group, first.candidate, first.fits) == ((0,), (1,), False)
    assert "instruction buffer" in first.reason
    assert fused.attempts[1].fits
    # the same with the local buffer as the limit (map 0 alone: 24 words, any pair: 27 or 30)
    config = NveConfig(local_words=alone.plan.used + 2)
    fused = fuse_layer(layer, strategy="greedy", config=config)
    assert len(fused.groups) == 3
    assert any("local buffer" in a.reason for a in fused.attempts)
    # a single map that does not fit is an error, not a fusion decision
    with pytest.raises(NveCompileError, match="instruction buffer"):
        fuse_layer(layer, config=NveConfig(instruction_words=40))  # compact form: 47


def test_size_bound_is_a_lower_bound():
    layer = shared_layer(kernel=4, stride=2)
    prober = _Prober(layer, "layer", None, NveConfig(instruction_words=2048))
    for maps in ((0,), (2,), (0, 1), (0, 2), (2, 0, 1)):
        probe = prober.probe(maps)
        assert prober.size_bound(maps) <= probe.size


def assert_bit_exact(layer, compiled, rng):
    x, w, b = random_layer_data(layer, rng)
    shift, lut = int(rng.integers(8, 16)), rng.integers(-128, 128, 1024)
    expected, _ = conv_layer(x, w, b, layer, shift, lut)
    run = run_layer(layer, x, w, b, shift, lut, compiled=compiled)
    assert np.array_equal(run.outputs, expected), layer
    return run


def random_shared_layer(rng):
    """A small random layer whose maps share inputs: kernels 1..5, strides 1..2, 2..3 inputs,
    2..5 maps, out_w up to 30 (past the probe's 24 columns)."""
    kh, kw = (int(v) for v in rng.integers(1, 6, 2))
    sh, sw = (int(v) for v in rng.integers(1, 3, 2))
    in_maps, out_maps = int(rng.integers(2, 4)), int(rng.integers(2, 6))
    connections = [sorted(rng.choice(in_maps, int(rng.integers(1, in_maps + 1)),
                                     replace=False).tolist()) for _ in range(out_maps)]
    connections[1] = list(connections[0])  # at least two maps read the same inputs
    out_h, out_w = int(rng.integers(1, 34)), int(rng.integers(1, 31))
    return NveLayer(in_maps, (out_h - 1) * sh + kh, (out_w - 1) * sw + kw, out_h, out_w, kh, kw,
                    sh, sw, connections)


@pytest.mark.parametrize("chunk", range(3))
def test_fused_layers_are_bit_exact_and_move_less_data(chunk):
    seed = SEED + 700 + chunk
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    for k in range(4):
        layer = random_shared_layer(rng)
        fused = fuse_layer(layer, strategy=("greedy", "best")[k % 2], check=True)
        assert sorted(m for g in fused.groups for m in g) == list(range(layer.out_maps))
        run = assert_bit_exact(layer, fused.compiled, rng)
        assert run.cycles == fused.chosen.estimate.cycles  # the probe's figure is exact
        unfused = compile_layer(layer, check=False)
        assert max(len(g) for g in fused.groups) > 1  # two maps with the same inputs fit
        fused_words = fused.compiled.input_words + fused.compiled.output_words
        assert fused_words < unfused.input_words + unfused.output_words
        assert 8 * fused_words == run.input_bytes + run.output_bytes


def test_every_candidate_is_estimated_exactly():
    # the choice compares probe estimates: each must equal the compiled grouping's figures
    rng = np.random.default_rng(SEED + 800)
    layer = NveLayer(4, 44, 60, 20, 28, 6, 6, 2, 2,
                     [[0], [0], [1], [1], [0, 1], [1, 2], [2, 3], [0, 3]])
    fused = fuse_layer(layer, check=False)
    assert {c.label for c in fused.candidates} >= {"greedy", "none", "pair merging"}
    for c in fused.candidates:
        compiled = compile_layer(layer, groups=c.groups, half_vector=c.half_vector, check=False)
        assert (compiled.instructions, compiled.input_words, compiled.output_words) == (
            c.estimate.cycles, c.estimate.input_words, c.estimate.output_words), c.label
    none = next(c for c in fused.candidates if c.label == "none")
    assert fused.chosen.estimate.words < none.estimate.words
    assert_bit_exact(layer, fused.compiled, rng)
