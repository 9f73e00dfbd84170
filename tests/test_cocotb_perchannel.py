"""cocotb regression of the accelerator with the per-channel datapath on Icarus and
Verilator: random depthwise, pool and add layers in every ST configuration and output width,
invalid descriptors, bus errors, fuzzed lists and the models' real layers against the golden
model (``tests/cocotb/tb_perchannel.py``)."""

import pytest

from sim.runner import SIMULATORS, Design, run_cocotb

pytestmark = pytest.mark.cocotb

#: A small per-channel datapath (4 lanes of LUT-built PEs) without conv2d.
PC_L4 = {"conv": False, "depthwise": {"lanes": 4, "plm_pixels": 256, "acc_pixels": 64,
                                      "pe_dsp": False}}


def design(config=PC_L4, name="perchannel_l4"):
    return Design(name, "hdl.accelerator:accelerator", {"config": config})


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_perchannel(simulator, request):
    """Every test of the bench once, on both simulators."""
    if simulator not in (request.config.getoption("--sim") or SIMULATORS):
        pytest.skip(f"--sim does not select {simulator}")
    assert run_cocotb(design(), "tests.cocotb.tb_perchannel", sim=simulator) == 6
