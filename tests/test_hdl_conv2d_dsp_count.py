# amaranth: UnusedElaboratable=no
"""The DSP blocks of the conv2d accelerator elaborated for the ECP5, counted in its netlist:
:attr:`hls_ref.config.AcceleratorConfig.dsp_blocks` (which the benchmarks divide MACs by) is
what the hardware instantiates (synthesis reports the blocks of the whole build, including
any it infers, in ``docs/results.md``)."""

import re

import pytest
from amaranth.back import rtlil

from hdl.accelerator import Accelerator
from hdl.target import Target
from hls_ref.config import AcceleratorConfig

SMALL = {"pes": 4, "plm_in_words": 1024, "plm_w_words": 1024, "plm_acc_words": 512,
         "max_width": 64}


@pytest.mark.parametrize("multiplier", ["dsp4", "dsp2", "dsp1"])
def test_dsp_blocks_of_the_netlist(multiplier):
    config = AcceleratorConfig(**SMALL, pe_multiplier=multiplier)
    text = rtlil.convert(Accelerator(config), platform=Target("ecp5"), emit_src=False)
    blocks = len(re.findall(r"^\s*cell \\MULT18X18D ", text, flags=re.MULTILINE))
    assert blocks == config.dsp_blocks
