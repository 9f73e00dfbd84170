"""cocotb regression of the requantization unit on Icarus and Verilator."""

import pytest

from hdl.requant import MAX_STAGES
from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb

CONFIGURATIONS = {
    "default": {"user_width": 4},
    "comb": {"stages": 0, "user_width": 1},
    "stages3": {"stages": 3},
    "deepest": {"stages": MAX_STAGES, "user_width": 9},
}


@pytest.mark.parametrize("config", list(CONFIGURATIONS))
def test_requant(sim, config):
    design = Design(f"requant_{config}", "hdl.requant:Requantizer", CONFIGURATIONS[config])
    assert run_cocotb(design, "tests.cocotb.tb_requant", sim=sim) == 3
