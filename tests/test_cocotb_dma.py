"""cocotb regression of the DMA engine (reader and writer on one AXI4 port) on Icarus and
Verilator, against cocotbext-axi's AxiRam."""

import pytest

from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb

CONFIGURATIONS = {
    "dma_b16_o4_t2": {"max_burst": 16, "max_outstanding": 4, "tag_width": 2},
    "dma_b4_o2": {"max_burst": 4, "max_outstanding": 2},
}


@pytest.mark.parametrize("config", list(CONFIGURATIONS))
def test_dma(sim, config):
    design = Design(config, "hdl.dma:Dma", CONFIGURATIONS[config])
    assert run_cocotb(design, "tests.cocotb.tb_dma", sim=sim) == 3
