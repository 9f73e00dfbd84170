"""The NVE code generator on the seed's two networks: every layer fused and compiled, the
workload-weighted MAC/instruction against the seed's Table 5 (computed by the compiler, not
stored), data transfer with and without fusion, and row bands of real layers on the ISS."""

import numpy as np
import pytest

from sw.nve.network import (
    SEED_WORKLOAD,
    TABLE5_TOTALS,
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
    manual, automatic = TABLE5_TOTALS[network]
    for which in ("seed", "ours"):
        ours = net.weighted("steady", which)
        print(f"{network} ({which} weights): {ours:.3f} steady, "
              f"{net.weighted('whole', which):.3f} whole layer; seed {manual} / {automatic}")
        assert ours > max(manual, automatic)
        assert ours > max(net.weighted("seed_manual", which),
                          net.weighted("seed_automatic", which))
    # Table 5's printed totals are its rows weighted by its printed percentages
    assert net.weighted("seed_manual", "seed") == pytest.approx(manual, abs=0.02)
    assert net.weighted("seed_automatic", "seed") == pytest.approx(automatic, abs=0.03)
    # our weights are Table 1's MAC shares
    assert sum(net.weights("ours").values()) == pytest.approx(1)
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
    assert face.steady > 5.89 and speed.steady > 6.26
    for r in (face, speed):
        (program,) = r.programs()
        assert program.lanes == 8 and program.limit == "MEMA"


def test_face_l2_needs_fusion_to_beat_the_seed(networks):
    l2 = layer(networks, "face-detection", "L2")
    assert l2.unfused.steady_mac_per_instruction < 12.06 < l2.steady
    assert max(len(g) for g in l2.fusion.groups) > 4  # more than the hand-picked 4 + 4 + 3 + 3


def test_fusion_cuts_the_data_transfer_of_shared_inputs(networks):
    for net in networks.values():
        l1, l2 = (layer(networks, net.name, n) for n in ("L1", "L2"))
        assert l1.reduction > 0.6  # every L1 map reads the frame: one program streams it once
        assert l2.reduction > 0.25
        for r in net.layers:
            assert r.transfer_bytes <= r.unfused_bytes
            greedy = r.fusion.greedy
            assert r.fusion.chosen.estimate.cycles <= greedy.estimate.cycles
    assert layer(networks, "face-detection", "L2").reduction > 0.65


def test_layer_cycles_are_bands_times_program_cycles(networks):
    for net in networks.values():
        for r in net.layers:
            assert r.cycles == sum(g.bands * g.instructions_per_band for g in r.compiled.groups)
        assert net.cycles == sum(r.cycles for r in net.layers)


@pytest.mark.parametrize("network, name", [("face-detection", "L2"), ("speed-sign", "L4")])
def test_simulated_bands_are_bit_exact(networks, network, name):
    r = layer(networks, network, name)
    runs = simulate_layer(r, 2, np.random.default_rng(17))
    assert len(runs) == 2 * len(r.programs())
    assert runs[0].band == 0 and runs[-1].band == r.compiled.groups[0].bands - 1
    for run in runs:
        assert run.exact and run.cycles == run.expected
    assert runs[-1].rows == r.layer.out_h - runs[-1].band * r.compiled.groups[0].lanes
