"""Partial sums in the NVE code generator: a map too large for one program is split by its
input maps into programs that pass their sums on (``sw.nve.partial``), bit-exact on the
instruction-set simulator; the exact self-check (``sw.nve.compile.check_data``); networks
described in text (``sw.nve.netfile``, ``tessera nve compile FILE``)."""

from pathlib import Path

import numpy as np
import pytest

from hls_ref.nve.isa import DEFAULT_CONFIG
from hls_ref.nve.iss import run
from hls_ref.nve.layers import NveLayer, conv_layer
from sw.cli import main
from sw.nve import NveCompileError, compile_layer, run_layer
from sw.nve.compile import band_run, check_data, short_band
from sw.nve.fusion import fuse_layer
from sw.nve.netfile import parse_network

SEED = 20261121

#: LeNet-5's C5 shape on a short row: 5x5 over 16 input maps, 400 MACs per output column,
#: more than one program holds (II 401 alone; 512 instructions).
C5 = NveLayer(16, 5, 20, 1, 16, 5, 5, 1, 1, [list(range(16)), [3, 1, 2, 0, *range(4, 16)]])


def test_a_map_too_large_for_one_program_is_split_into_partial_sums():
    with pytest.raises(NveCompileError, match=r"more than the 512 of the instruction buffer"):
        compile_layer(C5, maps=[0], partial=False)
    compiled = compile_layer(C5)
    assert [(g.spec.maps, g.part) for g in compiled.groups] == [
        ((0,), (0, 2)), ((0,), (1, 2)), ((1,), (0, 2)), ((1,), (1, 2))]
    first, second = compiled.groups[:2]
    assert first.spec.partial_out and not first.spec.reload
    assert second.spec.reload and not second.spec.partial_out
    names = [op.name for op in second.graph.ops if op.plane]
    assert names == ["mac", "mac", "mach", "mach"]  # the four digit planes
    assert first.macs_per_iteration == second.macs_per_iteration == 200  # 8 maps x 25 taps
    assert all(g.program.size <= 512 for g in compiled.groups)
    assert compiled.maps == (0, 1) and compiled.macs == 2 * 16 * 25 * 16
    assert compiled.steady_mac_per_instruction > 15.5


@pytest.mark.parametrize("exact", [False, True])
def test_partial_sums_are_bit_exact_on_the_simulator(exact):
    rng = np.random.default_rng(SEED)
    inputs, weights, bias, shift, lut = check_data(C5, rng, exact=exact)
    expected, _ = conv_layer(inputs, weights, bias, C5, shift, lut)
    got = run_layer(C5, inputs, weights, bias, shift, lut, compiled=compile_layer(C5))
    assert np.array_equal(got.outputs, expected)
    assert got.cycles == compile_layer(C5, check=False).instructions


def test_fusion_leaves_a_split_layer_unfused():
    fused = fuse_layer(C5)
    assert fused.chosen.label == "none, partial sums"
    assert len(fused.compiled.groups) == 4 and fused.greedy is None


def test_the_exact_check_sees_a_weight_off_by_one():
    # One coefficient of the stream one unit too large: with realistic data the activation
    # shift drops the difference, with the exact check's data it changes the outputs.
    layer = NveLayer(2, 18, 10, 16, 8, 3, 3, 1, 1, [[0, 1]])
    group = compile_layer(layer, check=False).groups[0]
    probe, small = short_band(group, DEFAULT_CONFIG)
    seen = {}
    for exact in (False, True):
        data = check_data(small, np.random.default_rng(SEED), exact=exact)
        expected, _ = conv_layer(*data[:3], small, *data[3:])
        program, words = band_run(probe, small, *data, band=0)
        words = list(words)
        words[1] += 1 << 16  # coefficient 1 of the second coefficient word, plus one
        result = run(program, words)
        got = result.outputs.reshape(-1, 2, 8)  # (columns, half, rows)
        seen[exact] = not np.array_equal(got.transpose(1, 2, 0).reshape(16, -1),
                                         expected[0])
    assert seen == {False: False, True: True}


LENET = """\
# LeNet-5 on a 32 x 32 image, conv + subsample merged
network lenet5
input 1 32 32
layer C1S2 out 14x14 kernel 6x6 subsample 2x2 maps 6 connect all
layer C3S4 out 5x5 kernel 6x6 subsample 2x2 maps 4 connect 0,1,2 1,2,3 2,3,4,5 one
"""


def test_a_network_is_described_in_text():
    net = parse_network(LENET.replace(" one", " 0,1,2,3,4,5"), "lenet.txt")
    assert net.name == "lenet5" and list(net.layers) == ["C1S2", "C3S4"]
    c1, c3 = net.layers.values()
    assert (c1.in_maps, c1.in_h, c1.kernel_h, c1.stride_h, c1.out_maps) == (1, 32, 6, 2, 6)
    assert c1.pad == (0, 0, 0, 0)  # 13 * 2 + 6 = 32: the merged kernel covers the image
    assert (c3.in_maps, c3.in_h, c3.out_h) == (6, 14, 5)
    assert c3.connections[3] == (0, 1, 2, 3, 4, 5) and c3.pad == (0, 0, 0, 0)


@pytest.mark.parametrize("text, message", [
    (LENET, r"^lenet.txt:5: layer C3S4: connect entry 3 must be input maps separated by "
     r"commas, not 'one'$"),
    ("layer A out 1x1 kernel 1x1 maps 1 connect all\n", r"^lenet.txt:1: a layer before"),
    ("input 1 4 4\nlayer A out 4 kernel 1x1 maps 1 connect all\n",
     r"^lenet.txt:2: layer A: out must be HxW with positive integers, not '4'$"),
    ("input 1 4 4\nlayer A out 4x4 kernel 1x1 maps 2 connect 0\n",
     r"^lenet.txt:2: layer A: connect lists 1 output maps, the layer has 2"),
    ("input 1 4 4\nlayer A out 4x4 kernel 1x1 connect all\n", r"^lenet.txt:2: layer A: "
     r"missing maps$"),
    ("input 1 4 4\nlayer A out 4x4 kernel 1x1 maps 1 connect 3\n",
     r"^lenet.txt:2: layer A: NveLayer.connections\[0\]: input map 3 is not in 0 \.\.\. 0"),
    ("input 1 4 4\nsize 3\n", r"^lenet.txt:2: unknown keyword 'size'"),
    ("input 1 4 4\n", r"^lenet.txt: no layer$"),
])
def test_description_errors_name_the_line(text, message):
    with pytest.raises(NveCompileError, match=message):
        parse_network(text, "lenet.txt")


def test_tessera_nve_compile_reads_a_file(tmp_path, capsys):
    path = tmp_path / "small.txt"
    path.write_text("network small\ninput 2 10 20\n"
                    "layer A out 8x18 kernel 3x3 maps 3 connect 0 1 0,1\n")
    assert main(["nve", "compile", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "| small A | 3x3 / 1x1 | 3 |" in out
    assert (tmp_path / "out" / "summary.json").exists()
    assert main(["nve", "compile", str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt" in capsys.readouterr().err


def test_the_shipped_lenet_description_parses():
    path = Path(__file__).resolve().parents[1] / "sw" / "workloads" / "nve_lenet5.txt"
    net = parse_network(path.read_text(), path.name)
    assert list(net.layers) == ["C1S2", "C3S4", "C5"]
    assert net.layers["C3S4"].pairs == 60 and net.layers["C5"].macs == 120 * 16 * 25
