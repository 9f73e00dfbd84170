"""cocotb regression of the AXI4-Lite register bank on Icarus and Verilator."""

import pytest

from hls_ref.config import DEFAULT_CONFIG, ICE40_CONFIG
from sim.runner import SIMULATORS, Design, run_cocotb

pytestmark = pytest.mark.cocotb

#: name: (factory parameters, simulators). The second build differs only in its constants, so
#: it runs on Icarus alone (a Verilator build costs about 20 s).
CONFIGURATIONS = {
    "csr_conv2d": ({"config": DEFAULT_CONFIG.as_dict()}, SIMULATORS),
    "csr_ice40": ({"config": ICE40_CONFIG.as_dict()}, ("icarus",)),
}


@pytest.mark.parametrize("config", list(CONFIGURATIONS))
def test_csr(sim, config):
    params, sims = CONFIGURATIONS[config]
    if sim not in sims:
        pytest.skip(f"{config} runs on {', '.join(sims)} only")
    design = Design(config, "hdl.csr:csr_bank", params)
    assert run_cocotb(design, "tests.cocotb.tb_csr", sim=sim) == 3
