"""The accelerator configuration object: validation and the DSP blocks it counts."""

import json

import pytest

from hls_ref.config import (
    DEFAULT_CONFIG,
    DSP1_BUDGET_CONFIG,
    DSP1_CONFIG,
    DSP2_CONFIG,
    DSP_BUDGET_CONFIG,
    ICE40_CONFIG,
    OTHER_DSP_BLOCKS,
    REQUANT_DSP_BLOCKS,
    AcceleratorConfig,
    DepthwiseConfig,
)


def test_dsp_blocks_of_the_builds():
    assert (DEFAULT_CONFIG.pe_multiplier, DEFAULT_CONFIG.pe_dsp_blocks) == ("dsp4", 64)
    # the PE array, four requantizers of four blocks in the store, and the others
    assert DEFAULT_CONFIG.store_elements == 4
    assert DEFAULT_CONFIG.dsp_blocks == 64 + 4 * REQUANT_DSP_BLOCKS + OTHER_DSP_BLOCKS == 81
    assert (DSP2_CONFIG.pes, DSP2_CONFIG.dsp_blocks) == (16, 32 + 16 + OTHER_DSP_BLOCKS)
    # the same PE array blocks as 16 PEs of four blocks each, spent on twice the PEs
    assert DSP_BUDGET_CONFIG.pe_dsp_blocks == DEFAULT_CONFIG.pe_dsp_blocks == 64
    assert DSP_BUDGET_CONFIG.pes == 2 * DEFAULT_CONFIG.pes
    # one block per PE: a quarter of the four-block array, or four times its PEs
    assert (DSP1_CONFIG.pes, DSP1_CONFIG.dsp_blocks) == (16, 16 + 16 + OTHER_DSP_BLOCKS)
    assert DSP1_BUDGET_CONFIG.pe_dsp_blocks == 64
    assert DSP1_BUDGET_CONFIG.pes == 4 * DEFAULT_CONFIG.pes
    assert ICE40_CONFIG.pe_dsp_blocks == 0


def test_multiplier_round_trips_through_as_dict():
    config = AcceleratorConfig(pes=8, pe_multiplier="dsp4")
    assert AcceleratorConfig(**config.as_dict()) == config


@pytest.mark.parametrize("value", [0, 3, 16, True, "4"])
def test_store_elements_other_than_1_2_4_8_are_refused(value):
    with pytest.raises(ValueError, match=r"^store_elements must be one of \(1, 2, 4, 8\)"):
        AcceleratorConfig(store_elements=value)
    with pytest.raises(ValueError, match=r"^store_elements must be one of \(1, 2, 4, 8\)"):
        DepthwiseConfig(store_elements=value)


def test_unknown_multiplier_is_refused():
    with pytest.raises(ValueError, match=r"^pe_multiplier must be one of 'lut', 'dsp4', 'dsp2', "
                                         r"'dsp1', not 'dsp3'$"):
        AcceleratorConfig(pe_multiplier="dsp3")


@pytest.mark.parametrize("config", [DEFAULT_CONFIG, DSP2_CONFIG, DSP_BUDGET_CONFIG, DSP1_CONFIG,
                                    DSP1_BUDGET_CONFIG, ICE40_CONFIG])
def test_builds_round_trip_through_json(config):
    assert AcceleratorConfig(**json.loads(json.dumps(config.as_dict()))) == config


def test_dicts_written_before_pe_multiplier_are_read():
    old = {k: v for k, v in DEFAULT_CONFIG.as_dict().items() if k != "pe_multiplier"}
    assert AcceleratorConfig(**old, pe_dsp=False).pe_multiplier == "lut"
    assert AcceleratorConfig(**old, pe_dsp=True) == DEFAULT_CONFIG
    with pytest.raises(ValueError, match=r"^pe_dsp=True contradicts pe_multiplier='lut'$"):
        AcceleratorConfig(pe_dsp=True, pe_multiplier="lut")
