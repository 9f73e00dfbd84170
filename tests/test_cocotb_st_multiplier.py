"""cocotb regression of the ST multiplier on Icarus and Verilator."""

import pytest

from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb

CONFIGURATIONS = {
    "comb": {"stages": 0, "user_width": 3},
    "stages2": {"stages": 2, "user_width": 2},
    "stages3": {"stages": 3},
    "low_stages1": {"stages": 1, "precisions": ["a8w8", "a8w4", "a4w4"], "user_width": 1},
}


@pytest.mark.parametrize("config", list(CONFIGURATIONS))
def test_st_multiplier(sim, config):
    design = Design(f"st_multiplier_{config}", "hdl.st_multiplier:STMultiplier",
                    CONFIGURATIONS[config])
    assert run_cocotb(design, "tests.cocotb.tb_st_multiplier", sim=sim) == 4
