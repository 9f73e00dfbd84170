"""cocotb regression of the conv2d accelerator top level on Icarus and Verilator: random layers
and tilings, invalid descriptors, bus errors and back-to-back lists against the golden model
(``tests/cocotb/tb_conv2d.py``)."""

import re
from pathlib import Path

import pytest

from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb

#: A small build (8 PEs, small PLMs) so that both simulators run the regression quickly,
#: with the two-block ST multipliers (the four-block ones are tested in the PE regression).
SMALL = {"pes": 8, "plm_in_words": 4096, "plm_w_words": 4096, "plm_acc_words": 2048,
         "max_width": 128, "pe_multiplier": "dsp2"}

#: Elaborated for the ECP5, as synthesis builds it: the PEs' DSP units are MULT18X18D blocks
#: with their own registers, simulated with their model (the portable form of the same units
#: is tested in the ST multiplier and PE regressions).
TARGET = "ecp5"


#: The regression's tests in the CI tier on Icarus: all but the real layers and the fuzzed
#: lists, which Verilator runs there in full and the slow tier runs on both simulators (the
#: two took a third of Icarus's simulated time).
ICARUS_CI_TESTS = ("random_layers,invalid_descriptors,bus_errors,back_to_back_lists,"
                   "write_error_mid_list,odd_output_address,output_width_clamp,"
                   "descriptor_list_alignment")
ICARUS_LEFT_TO_VERILATOR = {"real_layers", "fuzz_lists"}


def test_icarus_ci_tests_name_every_other_test_of_the_bench():
    """A test added to the bench runs on Icarus in the CI tier unless it is named above."""
    bench = (Path(__file__).parent / "cocotb" / "tb_conv2d.py").read_text()
    tests = set(re.findall(r"^@cocotb\.test\(\)\nasync def (\w+)", bench, flags=re.MULTILINE))
    assert set(ICARUS_CI_TESTS.split(",")) == tests - ICARUS_LEFT_TO_VERILATOR


def test_conv2d(sim):
    design = Design("conv2d_p8", "hdl.accelerator:accelerator", {"config": SMALL}, TARGET)
    if sim == "icarus":
        assert run_cocotb(design, "tests.cocotb.tb_conv2d", sim=sim,
                          testcase=ICARUS_CI_TESTS) == 8
    else:
        assert run_cocotb(design, "tests.cocotb.tb_conv2d", sim=sim) == 10


@pytest.mark.slow
def test_conv2d_dsp1(sim):
    """The same regression on the one-block ST multipliers (a DSP block and a LUT unit)."""
    config = {**SMALL, "pe_multiplier": "dsp1"}
    design = Design("conv2d_p8_dsp1", "hdl.accelerator:accelerator", {"config": config}, TARGET)
    assert run_cocotb(design, "tests.cocotb.tb_conv2d", sim=sim) == 10


@pytest.mark.slow
def test_conv2d_every_real_layer(sim):
    """Every conv layer of ResNet-8, DS-CNN and VWW (Icarus: the first commands of each)."""
    design = Design("conv2d_p8", "hdl.accelerator:accelerator", {"config": SMALL}, TARGET)
    assert run_cocotb(design, "tests.cocotb.tb_conv2d", sim=sim, testcase="real_layers",
                      extra_env={"TESSERA_REAL_LAYERS": "all"}) == 1


@pytest.mark.slow
def test_conv2d_fuzz_and_every_case(sim):
    """Every case of the defect regressions on both simulators and a thousand fuzzed lists
    on Verilator (a hundred on Icarus)."""
    design = Design("conv2d_p8", "hdl.accelerator:accelerator", {"config": SMALL}, TARGET)
    lists = "1000" if sim == "verilator" else "100"
    assert run_cocotb(design, "tests.cocotb.tb_conv2d", sim=sim,
                      testcase="write_error_mid_list,odd_output_address,fuzz_lists",
                      extra_env={"TESSERA_THOROUGH": "1", "TESSERA_FUZZ_LISTS": lists}) == 3
