"""The NVE code generator on the seed's two networks: every layer fused and compiled, the
workload-weighted MAC/instruction against the seed's Table 5 (computed by the compiler, not
stored), data transfer with and without fusion, and row bands of real layers on the ISS."""

import numpy as np
import pytest

from hls_ref.nve.layers import conv_layer, random_layer_data
from sw.nve import run_layer
from sw.nve.network import (
    SEED_WORKLOAD,
    TABLE5_TOTALS,
    _shift,
    compile_network,
    simulate_layer,
)
from sw.nve.report import TABLE5


@pytest.fixture(scope="module")
def networks():
    return {name: compile_network(name, check=False) for name in SEED_WORKLOAD}


def layer(networks, network, name):
    return next(r for r in networks[network].layers if r.name == name)


@pytest.mark.parametrize("network", list(SEED_WORKLOAD))
def test_weighted_totals_beat_both_columns_of_table5(networks, network):
    net = networks[network]
    automatic, manual = TABLE5_TOTALS[network]
    for which in ("seed", "ours"):
        ours = net.weighted("steady", which)
        print(f"{network} ({which} weights): {ours:.3f} steady, "
              f"{net.weighted('whole', which):.3f} whole layer; seed {manual} / {automatic}")
        assert ours > max(manual, automatic)
        assert ours > max(net.weighted("seed_manual", which),
                          net.weighted("seed_automatic", which))
    # Table 5's printed totals are its rows weighted by its printed percentages, rounded to
    # the digits printed
    for metric, printed in (("seed_automatic", automatic), ("seed_manual", manual)):
        digits = len(str(printed).partition(".")[2])
        assert round(net.weighted(metric, "seed"), digits) == printed
    # our weights are Table 1's MAC shares
    for name, share in net.weights("ours").items():
        assert 100 * share == pytest.approx(SEED_WORKLOAD[network][name], abs=0.5)


def test_every_layer_beats_table5_in_the_steady_state(networks):
    for net in networks.values():
        for r in net.layers:
            seed, experts = TABLE5[(net.name, r.name)]
            assert r.steady > max(seed, experts), (net.name, r.name)
            assert r.whole < r.steady


def test_1x1_layers_beat_the_experts_half_vector_code(networks):
    face, speed = layer(networks, "face-detection", "L4"), layer(networks, "speed-sign", "L4")
    for r in (face, speed):
        assert r.steady > TABLE5[(r.network, r.name)][1]
        (program,) = r.programs()
        assert program.lanes == 8 and program.limit == "MEMA"


def test_face_l2_needs_fusion_to_beat_the_seed(networks):
    l2 = layer(networks, "face-detection", "L2")
    seed = TABLE5[("face-detection", "L2")][0]
    assert l2.unfused.steady_mac_per_instruction < seed < l2.steady
    assert max(len(g) for g in l2.fusion.groups) > 4  # more than the hand-picked 4 + 4 + 3 + 3


def test_fusion_cuts_the_data_transfer_of_shared_inputs(networks):
    for net in networks.values():
        l1, l2 = (layer(networks, net.name, n) for n in ("L1", "L2"))
        assert l1.reduction > 0.6  # every L1 map reads the frame: one program streams it once
        assert l2.reduction > 0.25
        for r in net.layers:
            assert r.transfer_bytes <= r.unfused_bytes
    assert layer(networks, "face-detection", "L2").reduction > 0.65


def test_a_whole_layer_on_the_iss(networks):
    # every band of face L4 (172 x 312 outputs): the cycles and bytes the report gives
    r = layer(networks, "face-detection", "L4")
    rng = np.random.default_rng(19)
    x, w, b = random_layer_data(r.layer, rng)
    shift, lut = _shift(r.layer), rng.integers(-128, 128, 1024)  # the LUT's whole range
    run = run_layer(r.layer, x, w, b, shift, lut, compiled=r.compiled)
    assert np.array_equal(run.outputs, conv_layer(x, w, b, r.layer, shift, lut)[0])
    assert run.cycles == r.cycles
    assert (run.input_bytes, run.output_bytes) == (r.input_bytes, r.output_bytes)


@pytest.mark.parametrize("network, name", [("face-detection", "L2"), ("speed-sign", "L4")])
def test_simulated_bands_are_bit_exact(networks, network, name):
    r = layer(networks, network, name)
    runs = simulate_layer(r, 2, np.random.default_rng(17))
    assert len(runs) == 2 * len(r.programs())
    assert runs[0].band == 0 and runs[-1].band == r.compiled.groups[0].bands - 1
    for run in runs:
        assert run.exact and run.exact_accumulators and run.cycles == run.expected
    assert runs[-1].rows == r.layer.out_h - runs[-1].band * r.compiled.groups[0].lanes
