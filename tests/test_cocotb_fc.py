"""cocotb regression of the accelerator with the FC datapath on Icarus and Verilator: random
layers and tilings (batches included), invalid descriptors, bus errors, back-to-back lists,
fuzzed descriptor lists and the real FC layers against the golden model
(``tests/cocotb/tb_fc.py``)."""

import pytest

from sim.runner import SIMULATORS, Design, run_cocotb

pytestmark = pytest.mark.cocotb

#: The default FC datapath (4 PEs of 2 ST units, batches of 8) with a small input PLM.
FC_P4 = {"conv": False, "fc": {"pes": 4, "st_units": 2, "max_batch": 8, "plm_in_words": 1024}}

#: Elaborated for the ECP5, as synthesis builds it (the ST multipliers' DSP units are
#: MULT18X18D blocks, simulated with their model).
TARGET = "ecp5"


def design(config=FC_P4, name="fc_p4"):
    return Design(name, "hdl.accelerator:accelerator", {"config": config}, TARGET)


@pytest.mark.parametrize("simulator", ["icarus", pytest.param("verilator", marks=pytest.mark.slow)])
def test_fc(simulator, request):
    """Every test of the bench once (CI: on Icarus, about 45 s; Verilator's build takes three
    minutes, so its run is in the slow tier)."""
    if simulator not in (request.config.getoption("--sim") or SIMULATORS):
        pytest.skip(f"--sim does not select {simulator}")
    assert run_cocotb(design(), "tests.cocotb.tb_fc", sim=simulator) == 8


@pytest.mark.slow
def test_fc_dsp1(sim):
    """The random layers on one-block ST units (a DSP block and a LUT unit each), as the
    build's ``pe_multiplier`` makes them."""
    config = {**FC_P4, "pe_multiplier": "dsp1"}
    assert run_cocotb(design(config, "fc_p4_dsp1"), "tests.cocotb.tb_fc", sim=sim,
                      testcase="random_layers") == 1


@pytest.mark.slow
def test_fc_every_real_layer(sim):
    """Every FC layer of the four MLPerf Tiny models, one vector and a batch of 8."""
    assert run_cocotb(design(), "tests.cocotb.tb_fc", sim=sim, testcase="real_layers",
                      extra_env={"TESSERA_REAL_LAYERS": "all", "TESSERA_FC_BATCH": "8"}) == 1


@pytest.mark.slow
def test_fc_fuzz_and_every_case(sim):
    """More random layers, every case of the error tests, and two hundred fuzzed lists on
    Verilator (twenty on Icarus)."""
    lists = "200" if sim == "verilator" else "20"
    assert run_cocotb(design(), "tests.cocotb.tb_fc", sim=sim,
                      testcase="random_layers,write_error_mid_list,"
                               "output_addresses_and_clamps,fuzz_lists",
                      extra_env={"TESSERA_THOROUGH": "1", "TESSERA_FUZZ_LISTS": lists,
                                 "TESSERA_FC_LAYERS": "40"}) == 4


#: The FC datapath beside a small conv2d datapath behind one socket.
FC_BESIDE_CONV = {"pes": 4, "plm_in_words": 2048, "plm_w_words": 2048, "plm_acc_words": 1024,
                  "max_width": 64, "fc": FC_P4["fc"]}


@pytest.mark.slow
def test_fc_beside_conv2d(sim):
    """A build with both datapaths: fuzzed lists that switch between them (each switch waits
    for the other datapath to drain), then the real FC layers and the other FC tests."""
    assert run_cocotb(design(FC_BESIDE_CONV, "fc_conv_p4"), "tests.cocotb.tb_fc", sim=sim,
                      testcase="fuzz_lists,real_layers,invalid_descriptors,bus_errors",
                      extra_env={"TESSERA_FUZZ_LISTS": "30" if sim == "verilator" else "6"}
                      ) == 4
