# amaranth: UnusedElaboratable=no
"""The out-of-context synthesis harness and flow."""

from amaranth.back import rtlil

from boards.harness import SynthHarness
from boards.synth import format_table, synthesize, write_results_section
from hdl.pe import ProcessingElement


def test_harness_drives_every_input_and_observes_every_output():
    core = ProcessingElement(stages=1)
    text = rtlil.convert(SynthHarness(core), name="top", emit_src=False)
    # Inputs: a, b (16 each), precision (3), clear, last, i.valid, o.ready = 39 bits.
    assert "wire width 39 \\chain" in text
    # Outputs: i.ready, o.valid, o.payload (32) = 34 bits.
    assert "wire width 34 \\captured" in text


def test_plain_multiplier_uses_one_dsp_block():
    result = synthesize("mul16", "ice40-up5k")
    assert result.resources["DSP"] == 1
    assert result.fmax_mhz and result.fmax_mhz > 20
    assert "| ice40-up5k | `mul16` |" in format_table([result])


def test_results_section_is_replaced_in_place(tmp_path):
    path = tmp_path / "results.md"
    path.write_text("# Results\n\nintro\n")
    write_results_section("x", "first", path)
    write_results_section("y", "other", path)
    write_results_section("x", "second", path)
    text = path.read_text()
    assert "first" not in text and "second" in text and "other" in text
    assert text.index("second") < text.index("other")
