"""The NVE code generator end to end: random layers and the seed's layers compiled, run band by
band on the instruction-set simulator and compared with the golden layer model bit for bit;
the seed's 3x3 example and Table 5; the errors of layers that do not fit."""

import os

import numpy as np
import pytest

from hls_ref.nve.isa import NveConfig
from hls_ref.nve.layers import NveLayer, conv_layer, random_layer_data
from hls_ref.nve.numerics import activate
from sw.nve import NveCompileError, compile_layer, run_layer
from sw.nve.compile import spread_shift
from sw.nve.report import TABLE5, bound
from sw.nve_layers import nve_layers

SEED = int(os.environ.get("TESSERA_SEED", "20261121"))


def random_layer(rng):
    """A small random layer: kernels 1..6, strides 1..2, 1..3 input and output maps with random
    connections, padding -2..2 per side, out_w 1..7, out_h 1..40."""
    while True:
        kh, kw = (int(v) for v in rng.integers(1, 7, 2))
        sh, sw = (int(v) for v in rng.integers(1, 3, 2))
        in_maps, out_maps = (int(v) for v in rng.integers(1, 4, 2))
        connections = [sorted(rng.choice(in_maps, int(rng.integers(1, in_maps + 1)),
                                         replace=False).tolist()) for _ in range(out_maps)]
        out_h, out_w = int(rng.integers(1, 41)), int(rng.integers(1, 8))
        pad = tuple(int(v) for v in rng.integers(-2, 3, 4))
        in_h = (out_h - 1) * sh + kh - pad[0] - pad[1]
        in_w = (out_w - 1) * sw + kw - pad[2] - pad[3]
        if in_h < 1 or in_w < 1 or max(-pad[0], 0) + max(-pad[1], 0) >= in_h or \
                max(-pad[2], 0) + max(-pad[3], 0) >= in_w:
            continue
        return NveLayer(in_maps, in_h, in_w, out_h, out_w, kh, kw, sh, sw, connections, pad)


def assert_bit_exact(layer, rng, **options):
    # a random LUT over a shift that saturates (almost) no output: every accumulator bit the
    # shift keeps reaches the comparison
    x, w, b = random_layer_data(layer, rng)
    lut = rng.integers(-128, 128, 1024)
    _, acc = conv_layer(x, w, b, layer, 0, lut)
    shift = spread_shift(acc)
    expected = activate(acc, shift, lut)
    run = run_layer(layer, x, w, b, shift, lut, **options)
    bad = np.argwhere(run.outputs != expected)
    assert not len(bad), f"{layer} {options}: {len(bad)} outputs differ, first {bad[0]}"
    return run


@pytest.mark.parametrize("chunk", range(8))
def test_random_layers_are_bit_exact(chunk):
    seed = SEED + chunk
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    for k in range(10):
        layer = random_layer(rng)
        run = assert_bit_exact(layer, rng, form=("auto", "compact")[k % 2])
        assert run.useful_macs == layer.macs
        assert 0 < run.layer_mac_per_instruction <= run.steady_mac_per_instruction <= 16


@pytest.mark.parametrize("chunk", range(3))
def test_fused_groups_are_bit_exact(chunk):
    # several maps in one loop body: shared input columns are written once per iteration
    seed = SEED + 100 + chunk
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    for _ in range(6):
        layer = random_layer(rng)
        maps = rng.permutation(layer.out_maps).tolist()
        cut = int(rng.integers(1, len(maps) + 1))
        groups = [maps[:cut], maps[cut:]] if maps[cut:] else [maps]
        compiled = compile_layer(layer, groups=groups)
        assert_bit_exact(layer, rng, compiled=compiled)
        group = compiled.groups[0]
        inputs = group.spec.inputs
        assert len(group.graph.writes) == len(inputs) * group.plan.words * group.plan.new


def test_layers_at_the_limits():
    rng = np.random.default_rng(SEED + 200)
    print(f"seed {SEED + 200}")
    cases = [
        NveLayer(1, 24, 5, 16, 3, 9, 3, 1, 1, [[0]]),     # 9 taps: set.i, setsh.i, 7 x sh.i
        NveLayer(2, 44, 9, 15, 4, 16, 3, 2, 2, [[0, 1]]),  # 8 + 8 taps in two phases
        NveLayer(1, 30, 12, 30, 1, 1, 12, 1, 1, [[0]]),   # one output column, wide kernel
        NveLayer(3, 17, 2, 17, 2, 1, 1, 1, 1, [[0, 1, 2], [2]]),  # 1x1, short row
        NveLayer(2, 40, 9, 20, 5, 2, 1, 2, 2, [[0, 1]]),  # one tap per phase, columns skipped
        NveLayer(1, 8, 5, 1, 1, 6, 6, 1, 1, [[0]], (-2, 0, 1, 0)),  # one output pixel
    ]
    for layer in cases:
        assert_bit_exact(layer, rng)
        assert_bit_exact(layer, rng, form="compact")


def test_half_vector_mode_for_1x1_layers():
    rng = np.random.default_rng(SEED + 300)
    print(f"seed {SEED + 300}")
    layer = NveLayer(14, 21, 9, 21, 9, 1, 1, 1, 1, [list(range(14))])
    half = compile_layer(layer, half_vector=True)
    full = compile_layer(layer, half_vector=False)
    auto = compile_layer(layer)
    assert half.groups[0].lanes == 8 and full.groups[0].lanes == 16
    assert auto.groups[0].lanes == 8
    # MEMA-bound: one write per 8-pixel word and the coefficient words, nothing else on port A
    assert half.groups[0].ii == 14 + 4
    assert full.groups[0].ii == 2 * 14 + 14 + 4
    for compiled in (half, full):
        assert_bit_exact(layer, rng, compiled=compiled)


def test_seed_3x3_example():
    # seed Fig. 17/24 (14 cycles per iteration before modulo scheduling) and Fig. 26 (II 10)
    layer = NveLayer(1, 18, 39, 16, 37, 3, 3, 1, 1, [[0]])
    group = compile_layer(layer).groups[0]
    assert group.flat_length == 14
    assert group.ii == 10
    assert group.steady_mac_per_instruction == pytest.approx(14.4)
    assert group.layouts == ((3, 3, 4),)  # [b w0 w1] [w2 w3 w4] [w5 w6 w7 w8]
    assert group.emitted.instructions == 10 * 37 + 18  # init 9, prologue 9, final 10
    run = assert_bit_exact(layer, np.random.default_rng(SEED + 400))
    assert run.cycles == run.instructions == 10 * 37 + 18


def test_table5_steady_state():
    # one map per group (no fusion)
    compiled = {(network, name): compile_layer(layer, check=False)
                for network in ("face-detection", "speed-sign")
                for name, layer in nve_layers(network).items()}
    for key, (seed, experts) in TABLE5.items():
        steady = compiled[key].steady_mac_per_instruction
        whole = compiled[key].layer_mac_per_instruction
        print(f"{key}: {steady:.2f} steady, {whole:.2f} whole layer "
              f"(seed {seed}, experts {experts})")
        assert whole < steady
        if key != ("face-detection", "L2"):
            assert steady > max(seed, experts)
    steady = {key: c.steady_mac_per_instruction for key, c in compiled.items()}
    assert steady[("face-detection", "L4")] == pytest.approx(14 * 8 / 18)
    assert steady[("speed-sign", "L4")] == pytest.approx(80 * 8 / 101)
    assert steady[("speed-sign", "L3")] == pytest.approx(200 * 16 / 201)
    # face L2 unfused is MEMA-bound below the seed's (fused) 12.06, above the experts
    l2 = compiled[("face-detection", "L2")]
    assert 10.95 < steady[("face-detection", "L2")] < 12.06
    assert {bound(g) for g in l2.groups} == {(g.ii, "MEMA") for g in l2.groups}


def test_face_l2_with_groups_beats_the_seed():
    layer = nve_layers("face-detection")["L2"]
    groups = [[0, 1, 8, 11], [2, 3, 9, 12], [4, 5, 10], [6, 7, 13]]
    compiled = compile_layer(layer, groups=groups, check=False)
    assert compiled.steady_mac_per_instruction > 12.06


def sublayer(layer, maps):
    """``layer`` with only output maps ``maps`` (for a cheap golden model of a band)."""
    return NveLayer(layer.in_maps, layer.in_h, layer.in_w, layer.out_h, layer.out_w,
                    layer.kernel_h, layer.kernel_w, layer.stride_h, layer.stride_w,
                    [layer.connections[m] for m in maps], layer.pad)


@pytest.mark.parametrize("network, name, maps, band", [
    ("face-detection", "L1", [0], 22),   # the last band: 6 of 16 rows inside the map
    ("face-detection", "L2", [9], 11),   # 2 inputs, MEMA-bound; 1 of 16 rows inside
    ("speed-sign", "L1", [3], 4),        # rows and columns of the frame left unread
    ("face-detection", "L3", [5], 3),
    ("face-detection", "L4", [0], 0),
    ("speed-sign", "L2", [15], 11),      # 6 inputs, compact form, 1 of 16 rows inside
    ("speed-sign", "L3", [0], 0),        # 8 inputs, compact form
    ("speed-sign", "L4", [0], 21),
])
def test_one_band_of_a_real_layer(network, name, maps, band):
    layer = sublayer(nve_layers(network)[name], maps)
    rng = np.random.default_rng(SEED + band)
    print(f"seed {SEED + band}")
    x, w, b = random_layer_data(layer, rng)
    shift, lut = 18, rng.integers(-128, 128, 1024)
    run = run_layer(layer, x, w, b, shift, lut, bands=[band])
    expected, _ = conv_layer(x, w, b, layer, shift, lut)
    lanes = 8 if name == "L4" else 16  # 1x1 layers run in half-vector mode
    rows = slice(band * lanes, (band + 1) * lanes)
    assert np.array_equal(run.outputs[:, rows], expected[:, rows])
    assert not run.outputs[:, :band * lanes].any()


def test_statistics_add_up():
    rng = np.random.default_rng(SEED + 500)
    print(f"seed {SEED + 500}")
    layer = NveLayer(2, 37, 13, 35, 11, 3, 3, 1, 1, [[0, 1], [1]])
    compiled = compile_layer(layer)
    run = assert_bit_exact(layer, rng, compiled=compiled)
    assert run.instructions == compiled.instructions == run.cycles
    assert run.useful_macs == layer.macs
    assert run.layer_mac_per_instruction == pytest.approx(layer.macs / run.instructions)
    assert run.steady_mac_per_instruction == pytest.approx(compiled.steady_mac_per_instruction)
    assert run.input_bytes == 8 * compiled.input_words
    assert run.output_bytes == 8 * compiled.output_words
    # every band streams its coefficients, then per input map its first 2 columns and 1 new
    # column per output column (3 words: rows 0-7, 8-15, 16-17), and returns 2 words per
    # output column
    group = compiled.groups[0]
    assert group.spec.inputs == (0, 1) and group.plan.coef_words == 6  # 19 coefficients
    assert len(group.emitted.stream) == 6 + 2 * 3 * (2 + 11)
    assert len(group.emitted.outputs) == 2 * 11
    assert run.mac_ops == 3 * 11 * (18 + 9)  # 3 bands, 11 columns, 2 + 1 kernels of 9 taps


def test_kernel_too_tall_is_refused():
    layer = NveLayer(1, 25, 4, 16, 4, 10, 1, 1, 1, [[0]])
    with pytest.raises(NveCompileError, match=r"^conv5: kernel height 10 at vertical stride 1 "
                       r"needs 10 taps in one image-register column; .* so kernel_h <= 9 at "
                       r"stride 1$"):
        compile_layer(layer, name="conv5")
    layer = NveLayer(1, 49, 4, 16, 4, 19, 1, 2, 1, [[0]])
    with pytest.raises(NveCompileError, match=r"kernel_h <= 18 at stride 2$"):
        compile_layer(layer)


def test_buffer_overflows_are_refused():
    layer = NveLayer(4, 20, 12, 16, 8, 5, 5, 1, 1, [[0, 1, 2, 3]])
    with pytest.raises(NveCompileError, match=r"^small: the group of maps \[0\] needs \d+ "
                       r"local-buffer words \(\d+ coefficient words .*\), more than the 64 of "
                       r"the local buffer$"):
        compile_layer(layer, name="small", config=NveConfig(local_words=64), partial=False)
    with pytest.raises(NveCompileError, match=r"^small: the program of maps \[0\] \(II 101, "
                       r"\d+ coefficient words, .*\) needs standard \d+ / compact \d+ "
                       r"instructions, more than the 128 of the instruction buffer$"):
        compile_layer(layer, name="small", config=NveConfig(instruction_words=128),
                      partial=False)
    # split into partial sums, the parts' rings still exceed 64 words
    with pytest.raises(NveCompileError, match=r"^small: map 0 does not fit even with one input "
                       r"map per program \(small map 0 part \d/4: .* more than the 64 of the "
                       r"local buffer\)$"):
        compile_layer(layer, name="small", config=NveConfig(local_words=64))


def test_other_datapaths_are_refused():
    # the generator is written for 16 lanes and 64-bit words; NveConfig ties the rest to them
    wide = NveConfig(word_bits=128, lanes=32, act_lanes=16, rw_depth=8, ri_extra=15)
    with pytest.raises(ValueError, match=r"seed's datapath .* not word_bits 128$"):
        compile_layer(NveLayer(1, 18, 12, 16, 10, 3, 3, 1, 1, [[0]]), config=wide)
