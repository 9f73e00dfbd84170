"""cocotb regression of the accelerator with the per-channel datapath on Icarus and
Verilator: random depthwise, pool and add layers in every ST configuration and output width,
invalid descriptors, bus errors, fuzzed lists and the models' real layers against the golden
model (``tests/cocotb/tb_perchannel.py``)."""

import pytest

from sim.runner import SIMULATORS, Design, run_cocotb

pytestmark = pytest.mark.cocotb

#: A small per-channel datapath (4 lanes of LUT-built PEs, two banks) without conv2d.
PC_L4 = {"conv": False, "depthwise": {"lanes": 4, "plm_pixels": 256, "acc_pixels": 64,
                                      "pe_dsp": False}}


def design(config=PC_L4, name="perchannel_l4"):
    return Design(name, "hdl.accelerator:accelerator", {"config": config})


@pytest.mark.parametrize("simulator", ["icarus", pytest.param("verilator", marks=pytest.mark.slow)])
def test_perchannel(simulator, request):
    """Every test of the bench once (CI: on Icarus, about 70 s; Verilator's build takes
    several minutes, so its run, about 20 s of simulation, is in the slow tier)."""
    if simulator not in (request.config.getoption("--sim") or SIMULATORS):
        pytest.skip(f"--sim does not select {simulator}")
    assert run_cocotb(design(), "tests.cocotb.tb_perchannel", sim=simulator) == 6


@pytest.mark.slow
def test_perchannel_every_real_layer(sim):
    """Every DepthwiseConv2D, AveragePool2D and Add of DS-CNN, VWW and ResNet-8."""
    assert run_cocotb(design(), "tests.cocotb.tb_perchannel", sim=sim, testcase="real_layers",
                      extra_env={"TESSERA_REAL_LAYERS": "all"}) == 1


@pytest.mark.slow
def test_perchannel_fuzz_and_every_case(sim):
    """More random layers, every case of the error tests, and two hundred fuzzed lists on
    Verilator (twenty on Icarus)."""
    lists = "200" if sim == "verilator" else "20"
    assert run_cocotb(design(), "tests.cocotb.tb_perchannel", sim=sim,
                      testcase="random_layers,write_error_mid_list,fuzz_lists",
                      extra_env={"TESSERA_THOROUGH": "1", "TESSERA_FUZZ_LISTS": lists,
                                 "TESSERA_PC_LAYERS": "45"}) == 3


#: The per-channel datapath (with one bank: each command's loads wait for the previous
#: compute, its compute for the previous store) beside a small conv2d datapath behind one
#: socket.
PC_BESIDE_CONV = {"pes": 4, "plm_in_words": 2048, "plm_w_words": 2048, "plm_acc_words": 1024,
                  "max_width": 64, "depthwise": {**PC_L4["depthwise"], "banks": 1}}


@pytest.mark.slow
def test_perchannel_beside_conv2d(sim):
    """A build with both datapaths: fuzzed lists that switch between them (each switch waits
    for the other datapath to drain), then the per-channel layers and error tests."""
    assert run_cocotb(design(PC_BESIDE_CONV, "perchannel_conv_l4"), "tests.cocotb.tb_perchannel",
                      sim=sim, testcase="fuzz_lists,random_layers,invalid_descriptors,bus_errors",
                      extra_env={"TESSERA_FUZZ_LISTS": "30" if sim == "verilator" else "6"}
                      ) == 4
