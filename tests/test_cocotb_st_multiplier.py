"""cocotb regression of the ST multiplier on Icarus and Verilator."""

import pytest

from hdl.st_multiplier import MAX_STAGES
from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb

CONFIGURATIONS = {
    "comb": {"stages": 0, "user_width": 3},
    "stages2": {"stages": 2, "user_width": 2},
    "stages3": {"stages": 3},
    "stages3_dsp": {"stages": 3, "multiplier": "dsp4"},
    "stages3_dsp_ecp5": {"stages": 3, "multiplier": "dsp4"},
    "stages4_dsp_ecp5": {"stages": 4, "multiplier": "dsp4"},
    "stages4_dsp2_ecp5": {"stages": 4, "multiplier": "dsp2"},
    "stages4_dsp1_ecp5": {"stages": 4, "multiplier": "dsp1"},
    "stages4": {"stages": 4, "user_width": 1},
    "low_stages2_dsp": {"stages": 2, "precisions": ["a8w8", "a8w4", "a4w4"],
                        "multiplier": "dsp4", "user_width": 1},
    "low_stages2_dsp2": {"stages": 2, "precisions": ["a8w8", "a8w4", "a4w4"],
                         "multiplier": "dsp2", "user_width": 1},
    "low_stages1": {"stages": 1, "precisions": ["a8w8", "a8w4", "a4w4"], "user_width": 1},
}

#: Configurations elaborated for a target, with its vendor primitives' simulation models.
TARGETS = {"stages3_dsp_ecp5": "ecp5", "stages4_dsp_ecp5": "ecp5", "stages4_dsp2_ecp5": "ecp5",
           "stages4_dsp1_ecp5": "ecp5"}


#: Configurations run in the slow tier only (the Amaranth-simulator tests and the proofs
#: cover them in the CI tier).
SLOW = {"stages4_dsp1_ecp5"}


@pytest.mark.parametrize("config", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c
                                    for c in CONFIGURATIONS])
def test_st_multiplier(sim, config):
    design = Design(f"st_multiplier_{config}", "hdl.st_multiplier:STMultiplier",
                    CONFIGURATIONS[config], TARGETS.get(config))
    assert run_cocotb(design, "tests.cocotb.tb_st_multiplier", sim=sim) == 4


@pytest.mark.slow
@pytest.mark.parametrize("draw", range(4))
def test_st_multiplier_random_configuration(sim, draw):
    """Long regression: configurations drawn at random (make test-full)."""
    import random

    from hls_ref import Precision

    rng = random.Random(1000 + draw)
    precisions = rng.sample([p.label for p in Precision], rng.randint(1, 5))
    params = {"stages": rng.randint(0, MAX_STAGES), "precisions": sorted(precisions),
              "user_width": rng.randint(0, 4),
              "multiplier": rng.choice(["lut", "dsp4", "dsp2", "dsp1"])}
    target = "ecp5" if rng.random() < 0.5 else None
    design = Design(f"st_multiplier_random{draw}", "hdl.st_multiplier:STMultiplier", params,
                    target)
    assert run_cocotb(design, "tests.cocotb.tb_st_multiplier", sim=sim, seed=draw) == 4
