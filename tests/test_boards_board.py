"""The board build's parts: PLL settings, the SDRAM core generator, the SoC's memory-controller
window and the ULX3S top level as Amaranth's platform build writes it (no place and route:
``make bitstream`` runs that)."""

import pytest

from boards.sdram import SdramSpec, litedram_core
from boards.ulx3s import (
    ACCEL_CLOCK_HZ,
    CLOCK_HZ,
    MEMCTRL_BYTES,
    board_soc_config,
    pll_parameters,
)
from hls_ref.config import SocConfig
from hls_ref.soc_map import MEMCTRL_BASE, c_header


def test_pll_parameters_keep_the_vco_in_range_and_shift_the_sdram_clock_by_half_a_period():
    pll = pll_parameters(50_000_000)
    assert (pll["p_CLKI_DIV"], pll["p_CLKFB_DIV"], pll["p_CLKOP_DIV"]) == (1, 2, 12)
    # output = 25 MHz * CLKFB_DIV / CLKI_DIV; VCO = output * CLKOP_DIV
    assert 25e6 * pll["p_CLKFB_DIV"] * pll["p_CLKOP_DIV"] == 600e6
    assert pll["p_CLKOS_CPHASE"] - pll["p_CLKOP_CPHASE"] == pll["p_CLKOS_DIV"] // 2
    assert pll_parameters(100_000_000)["p_CLKOP_DIV"] == 6
    # below 50 MHz the input divider joins in: 25 MHz * 8 / 5 = 40 MHz, the secondary output
    # half a 40 MHz period later (an odd output divider: seven and a half VCO cycles)
    pll = pll_parameters(40_000_000)
    assert (pll["p_CLKI_DIV"], pll["p_CLKFB_DIV"], pll["p_CLKOP_DIV"]) == (5, 8, 15)
    assert (pll["p_CLKOS_CPHASE"] - pll["p_CLKOP_CPHASE"], pll["p_CLKOS_FPHASE"]) == (7, 4)
    with pytest.raises(ValueError, match=r"multiple of 25000000 Hz divided by at most 8"):
        pll_parameters(4_687_500)               # 600 MHz / 128
    with pytest.raises(ValueError, match="must divide 600000000"):
        pll_parameters(175_000_000)
    assert "p_CLKOS2_ENABLE" not in pll
    # the accelerators' clock on the third output
    pll = pll_parameters(50_000_000, accel_clock_hz=75_000_000)
    assert pll["p_CLKOS2_ENABLE"] == "ENABLED" and 75e6 * pll["p_CLKOS2_DIV"] == 600e6
    with pytest.raises(ValueError, match="accel_clock_hz must divide 600000000"):
        pll_parameters(50_000_000, accel_clock_hz=70_000_000)


def test_sdram_spec_checks_its_fields():
    assert SdramSpec().bytes == 32 << 20
    with pytest.raises(ValueError, match="part must be one of MT48LC16M16"):
        SdramSpec(part="IS42S16")
    with pytest.raises(ValueError, match="clock_hz must be from 10 MHz to 133 MHz"):
        SdramSpec(clock_hz=200_000_000)


def test_litedram_core_has_the_ports_the_top_level_connects(tmp_path):
    core = litedram_core(SdramSpec(id_width=3), build_root=tmp_path)
    text = core.verilog.read_text()
    assert "module litedram_core" in text
    for port in ("input  wire   [24:0] user_port_axi_0_araddr",
                 "input  wire    [2:0] user_port_axi_0_arid",
                 "output wire   [63:0] user_port_axi_0_rdata",
                 "input  wire    [7:0] user_port_axi_0_wstrb",
                 "input  wire   [29:0] wb_ctrl_adr", "output wire   [12:0] sdram_a"):
        assert port in text, port
    assert core.address_bits == 25
    # the init sequence's registers, inside the control window the SoC gives the core
    assert {"sdram_dfii_control", "sdram_dfii_pi0_command", "ddrctrl_init_done"} <= set(
        core.registers)
    assert max(core.registers.values()) < MEMCTRL_BYTES
    assert (core.header_dir / "sdram_phy.h").exists()
    again = litedram_core(SdramSpec(id_width=3), build_root=tmp_path)
    assert again.verilog == core.verilog


def test_the_board_soc_has_the_sdram_and_its_control_window():
    config = board_soc_config()
    assert config.dram_bytes == 32 << 20 and config.memctrl_bytes == MEMCTRL_BYTES
    assert config.clock_hz == CLOCK_HZ == 40_000_000
    assert config.uart_divisor == 347            # 40 MHz / 115200 baud
    # the accelerator in its own clock domain; none without accelerators
    assert config.accel_clock_hz == ACCEL_CLOCK_HZ == 60_000_000
    assert config.accelerators[0].store_elements == 1
    assert board_soc_config(accelerators=()).accel_clock_hz == 0
    assert SocConfig.from_dict(config.as_dict()) == config
    assert f"#define MEMCTRL_BASE 0x{MEMCTRL_BASE:08x}u" in c_header(config)
    with pytest.raises(ValueError, match="memctrl_bytes must be 0 or a power of two"):
        SocConfig(memctrl_bytes=3000)


def test_ulx3s_top_level_is_written_with_pins_clock_constraint_and_sdram_core():
    from amaranth_boards.ulx3s import ULX3S_85F_Platform

    from boards.bitstream import PREPARE
    from boards.ulx3s import Ulx3sTop

    top = Ulx3sTop(accelerators=())
    plan = ULX3S_85F_Platform().build(top, name="tessera", do_build=False,
                                      script_after_read=PREPARE)
    lpf = plan.files["tessera.lpf"]
    for pin in ("G2", "F19", "J16", "M1", "L4", "B2"):   # clock, SDRAM clock, dq0, UART, LED 0
        assert f'SITE "{pin}"' in lpf, pin
    assert f'FREQUENCY NET "clk_sys" {CLOCK_HZ:.1f} HZ' in lpf
    assert "litedram_core.v" in plan.files
    assert PREPARE in plan.files["tessera.ys"]
    il = plan.files["tessera.il"]
    assert "EHXPLLL" in il and "ODDRX1F" in il and "litedram_core" in il
    # the board monitor, with the controller's init sequence, is in the on-chip RAM (the
    # processor starts there: the SDRAM holds nothing at power-on)
    from hls_ref.config import SocConfig as Config
    from sw.board import board_firmware

    simulated = board_firmware(Config(accelerators=()), uart_divisor=434).read_bytes()
    assert len(top.firmware) > len(simulated)     # sdram.c's init sequence and memory check
    assert top.soc._firmware[:len(top.firmware)] == top.firmware


def test_program_says_what_is_missing(tmp_path):
    from boards.bitstream import BitstreamResult, program

    missing = BitstreamResult("ulx3s-85f", "d", {}, {}, {}, False, None, 0.0,
                              "the flow failed (exit 1)")
    with pytest.raises(RuntimeError, match=r"no bitstream to load for ulx3s-85f: the flow failed"):
        program(missing)
    bit = tmp_path / "tessera.bit"
    bit.write_bytes(b"\xff")
    built = BitstreamResult("ulx3s-85f", "d", {}, {}, {}, True, str(bit), 0.0)
    with pytest.raises(RuntimeError, match=r"no-such-loader is not installed: install "
                                           r"openFPGALoader"):
        program(built, loader="no-such-loader")
    calls = []

    class Done:
        returncode = 0

    program(built, loader="sh", run=lambda args, check: calls.append(args) or Done())
    assert calls == [["sh", "-b", "ulx3s", str(bit)]]


def test_build_bitstream_checks_its_flow_options_before_building():
    from boards.bitstream import build_bitstream

    with pytest.raises(ValueError, match=r"^router must be router1 or router2, not 'router3'$"):
        build_bitstream(router="router3")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=r"^seed must be a positive integer"):
            build_bitstream(seed=bad)


@pytest.mark.slow
def test_the_default_bitstream_builds_with_its_timing_report():
    """``make bitstream``'s default build (cached by digest after the first run, which takes
    about half an hour on two cores): a bitstream whose clocks meet their constraints (the
    build's defaults are clocks it meets, docs/board.md)."""
    from boards.bitstream import build_bitstream, format_result

    result = build_bitstream("ulx3s-85f")
    assert result.bitstream, result.note
    assert result.clocks and result.resources["LUT"] <= result.available["LUT"]
    assert result.timing_met, format_result(result)


_NEXTPNR_LOG = """Info: Max frequency for clock       '$glbnet$clk': 57.10 MHz (PASS at 50.00 MHz)
Info: Max frequency for clock '$glbnet$clk_accel': 96.40 MHz (FAIL at 100.00 MHz)
Info: Routing..
Info: Critical path report for clock '$glbnet$clk_accel' (posedge -> posedge):
Info:       type curr  total name
Info:   clk-to-q  0.52  0.52 Source soc.accel0.plm.q_TRELLIS_FF_Q.Q
Info:    routing  2.35  2.88 Net soc.accel0.x (110,21) -> (115,21)
Info:                          Sink soc.accel0.store.y_LUT4_D.B
Info:      logic  0.24  3.11 Source soc.accel0.store.y_LUT4_D.F
Info:      setup  0.00  10.20 Source soc.accel0.store.z_TRELLIS_FF_Q.DI
Info: 3.20 ns logic, 7.00 ns routing

Warning: Max frequency for clock '$glbnet$clk': 55.00 MHz (PASS at 50.00 MHz)
Warning: Max frequency for clock '$glbnet$clk_accel': 98.04 MHz (FAIL at 100.00 MHz)
"""


def test_the_timing_report_reads_each_clocks_placement_estimate_and_critical_path():
    from boards.bitstream import BitstreamResult, format_result, timing_report

    placement, paths = timing_report(_NEXTPNR_LOG)
    assert placement == {"$glbnet$clk": 57.1, "$glbnet$clk_accel": 96.4}
    assert paths == {"$glbnet$clk_accel": {
        "ns": 10.2, "logic_ns": 3.2, "routing_ns": 7.0,
        "source": "soc.accel0.plm.q_TRELLIS_FF_Q.Q",
        "sink": "soc.accel0.store.z_TRELLIS_FF_Q.DI"}}
    result = BitstreamResult("ulx3s-85f", "d", {}, {}, {"$glbnet$clk": (55.0, 50.0)}, False,
                             None, 1.0, "", placement, paths)
    text = format_result(result)
    assert "| `$glbnet$clk` | 57.1 | 55.0 | 50.0 | yes |" in text
    assert "| `$glbnet$clk_accel` | 96.4 | not routed |" in text
    assert "| `$glbnet$clk_accel` | 10.20 | 3.20 / 7.00 |" in text
