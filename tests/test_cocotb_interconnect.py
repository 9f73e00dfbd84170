"""cocotb regression of the SoC's AXI4 interconnect on Icarus and Verilator, against
cocotbext-axi's AxiMaster and AxiRam models."""

import pytest

from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb

CONFIGURATIONS = {
    "axi_ic_m3": {"managers": 3},
    "axi_ic_m2_d1": {"managers": 2, "depth": 1},
}


@pytest.mark.parametrize("config", [
    "axi_ic_m3", pytest.param("axi_ic_m2_d1", marks=pytest.mark.slow)])
def test_interconnect(sim, config):
    design = Design(config, "hdl.soc.interconnect:AxiInterconnect", CONFIGURATIONS[config])
    assert run_cocotb(design, "tests.cocotb.tb_interconnect", sim=sim) == 2
