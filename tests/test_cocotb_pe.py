"""cocotb regression of the processing element and the PE row on Icarus and Verilator."""

import pytest

from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb

CONFIGURATIONS = {
    "pe_stages2": ("hdl.pe:ProcessingElement", {"stages": 2}),
    "pe_low_stages0_acc20": ("hdl.pe:ProcessingElement",
                             {"stages": 0, "precisions": ["a8w8", "a8w4", "a4w4"],
                              "acc_width": 20}),
    "pe_row4_stages3": ("hdl.pe:PERow", {"pes": 4, "stages": 3}),
    "pe_row4_stages3_dsp": ("hdl.pe:PERow", {"pes": 4, "stages": 3, "multiplier": "dsp4"}),
    "pe_row4_stages3_dsp_ecp5": ("hdl.pe:PERow",
                                 {"pes": 4, "stages": 3, "multiplier": "dsp4"}),
    "pe_row4_stages4_dsp_ecp5": ("hdl.pe:PERow",
                                 {"pes": 4, "stages": 4, "multiplier": "dsp4"}),
    "pe_row4_stages4_dsp2_ecp5": ("hdl.pe:PERow",
                                  {"pes": 4, "stages": 4, "multiplier": "dsp2"}),
    "pe_row4_stages4_dsp1_ecp5": ("hdl.pe:PERow",
                                  {"pes": 4, "stages": 4, "multiplier": "dsp1"}),
}

#: Configurations elaborated for a target, with its vendor primitives' simulation models.
TARGETS = {"pe_row4_stages3_dsp_ecp5": "ecp5", "pe_row4_stages4_dsp_ecp5": "ecp5",
           "pe_row4_stages4_dsp2_ecp5": "ecp5", "pe_row4_stages4_dsp1_ecp5": "ecp5"}


#: Configurations run in the slow tier only (the Amaranth-simulator tests cover them in the CI
#: tier).
SLOW = {"pe_row4_stages4_dsp1_ecp5"}


@pytest.mark.parametrize("config", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c
                                    for c in CONFIGURATIONS])
def test_pe(sim, config):
    factory, params = CONFIGURATIONS[config]
    design = Design(config, factory, params, TARGETS.get(config))
    assert run_cocotb(design, "tests.cocotb.tb_pe", sim=sim) == 3
