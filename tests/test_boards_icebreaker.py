# amaranth: UnusedElaboratable=no
"""The iCEBreaker build (``boards.icebreaker``): the SoC's processor and RAM options, the SPRAM
memories, the UART boot ROM, the top level's pins, and the board monitor and models run over
the simulated board's UART (the build's top level on Verilator, the SPRAM blocks by their
behavioural model) against the golden model."""

import dataclasses
import struct
import subprocess
import sys

import numpy as np
import pytest
from amaranth.sim import Simulator

from boards.icebreaker import MEMORY_BYTES, check_image_fits, icebreaker_soc_config
from hdl.soc.boot import UART_BOOT_SOURCE, boot_program
from hdl.soc.soc import Soc
from hdl.soc.spram import SpramAxiMemory
from hls_ref.config import DEFAULT_SOC, SocConfig
from hls_ref.image import IMAGE_BASE


def test_soc_options_round_trip_and_are_checked():
    soc = icebreaker_soc_config()
    assert (soc.muldiv, soc.ram, soc.boot, soc.cache_bytes) == (False, "spram", "uart", 0)
    assert SocConfig.from_dict(soc.as_dict()) == soc
    # a build with the default options keeps the dictionary it had before the options
    assert not {"muldiv", "ram", "boot"} & set(DEFAULT_SOC.as_dict())
    assert SocConfig.from_dict(DEFAULT_SOC.as_dict()) == DEFAULT_SOC
    with pytest.raises(ValueError, match=r"^ram must be one of block, spram, not 'ebr'$"):
        SocConfig(ram="ebr")
    with pytest.raises(ValueError, match=r"^an SPRAM RAM is two or four 32768-byte blocks"):
        SocConfig(ram="spram", ram_bytes=8192)
    with pytest.raises(ValueError, match=r"^boot must be one of memory, uart, not 'flash'$"):
        SocConfig(boot="flash")
    with pytest.raises(ValueError, match=r"^muldiv must be True or False, not 1$"):
        SocConfig(muldiv=1)
    with pytest.raises(ValueError, match=r"^cache_bytes must be a power of two from 1024"):
        SocConfig(cache_bytes=512)
    with pytest.raises(ValueError, match="no initial contents"):
        Soc(soc, firmware=b"\0" * 4)


def test_uart_boot_program_equals_the_assembler_output(tmp_path):
    source = tmp_path / "boot.S"
    source.write_text(".text\n.globl _start\n_start:\n" + UART_BOOT_SOURCE)
    zig = [sys.executable, "-m", "ziglang"]
    subprocess.run([*zig, "cc", "-target", "riscv32-freestanding-none", "-mcpu=generic_rv32",
                    "-c", str(source), "-o", str(tmp_path / "boot.o")], check=True)
    subprocess.run([*zig, "objcopy", "-O", "binary", str(tmp_path / "boot.o"),
                    str(tmp_path / "boot.bin")], check=True)
    data = (tmp_path / "boot.bin").read_bytes()
    words = list(struct.unpack(f"<{len(data) // 4}I", data))
    assert len(words) == 33 and words == boot_program("uart")[:len(words)]
    assert boot_program("uart")[len(words):] == [0] * (len(boot_program()) - len(words))


def test_spram_axi_memory_serves_bursts_strobes_and_aliases():
    signature = Soc.mem_signature(icebreaker_soc_config())
    dut = SpramAxiMemory(size=MEMORY_BYTES, signature=signature)
    axi = dut.axi
    rng = np.random.default_rng(3)
    words = [int(w) for w in rng.integers(0, 1 << 63, 4, dtype=np.uint64)]
    got = {}

    async def write(ctx, address, beats, strobe=0xFF, burst=1):
        ctx.set(axi.awaddr, address)
        ctx.set(axi.awlen, len(beats) - 1)
        ctx.set(axi.awburst, burst)
        ctx.set(axi.awid, 1)
        ctx.set(axi.awvalid, 1)
        await ctx.tick().until(axi.awready)
        ctx.set(axi.awvalid, 0)
        for k, beat in enumerate(beats):
            ctx.set(axi.wdata, beat)
            ctx.set(axi.wstrb, strobe)
            ctx.set(axi.wlast, k == len(beats) - 1)
            ctx.set(axi.wvalid, 1)
            await ctx.tick().until(axi.wready)
        ctx.set(axi.wvalid, 0)
        ctx.set(axi.bready, 1)
        (bid,) = await ctx.tick().sample(axi.bid).until(axi.bvalid)
        ctx.set(axi.bready, 0)
        assert bid == 1

    async def read(ctx, address, count):
        ctx.set(axi.araddr, address)
        ctx.set(axi.arlen, count - 1)
        ctx.set(axi.arburst, 1)
        ctx.set(axi.arid, 1)
        ctx.set(axi.arvalid, 1)
        await ctx.tick().until(axi.arready)
        ctx.set(axi.arvalid, 0)
        ctx.set(axi.rready, 1)
        beats = []
        for k in range(count):
            data, last, rid = await ctx.tick().sample(axi.rdata, axi.rlast, axi.rid).until(
                axi.rvalid)
            assert (last, rid) == (k == count - 1, 1)
            beats.append(data)
        ctx.set(axi.rready, 0)
        return beats

    async def testbench(ctx):
        await write(ctx, 0x100, words[:3])
        got["burst"] = await read(ctx, 0x100, 3)
        # a narrow write: only the strobed bytes change
        await write(ctx, 0x108, [0xAABBCCDD_11223344], strobe=0b11110000)
        got["strobed"] = await read(ctx, 0x108, 1)
        # every alias of a byte is the same byte (the SoC's window is larger than the SPRAM)
        got["alias"] = await read(ctx, IMAGE_BASE + 0x100, 1)
        await write(ctx, 0x200, words[3:], burst=0)
        got["fixed"] = await read(ctx, 0x200, 1)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert got["burst"] == words[:3]
    assert got["strobed"] == [(words[1] & 0xFFFFFFFF) | 0xAABBCCDD << 32]
    assert got["alias"] == [words[0]]
    assert got["fixed"] == [words[3]]


def test_icebreaker_top_level_is_written_with_pins_spram_and_no_pll():
    from boards.bitstream import BOARDS, PREPARE

    platform, top, device = BOARDS["icebreaker"](12_000_000, False)
    assert device.name == "ice40-up5k" and top.soc.config == icebreaker_soc_config()
    plan = platform.build(top, name="tessera", do_build=False, script_after_read=PREPARE)
    pcf = plan.files["tessera.pcf"]
    for pin in ("35", "9", "6", "11", "37"):     # clock, UART tx and rx, LEDs 0 and 1
        assert f" {pin}\n" in pcf, pin
    il = plan.files["tessera.il"]
    assert il.count("SB_SPRAM256KA") >= 4 and "SB_PLL40" not in il
    with pytest.raises(ValueError, match="12 MHz"):
        BOARDS["icebreaker"](24_000_000, False)


def _last_layers(count):
    """DS-CNN's last ``count`` layers, from their first layer's input: the processor (RV32I,
    no multiplier) runs the average pooling, the FC layer and the softmax in about a million
    cycles (the first convolution would take tens of millions)."""
    from sw.tflite_import import load_model

    graph = load_model("dscnn")
    ops = graph.ops[-count:]
    return dataclasses.replace(graph, ops=ops, inputs=(ops[0].inputs[0],))


def _run_on_simulated_icebreaker(graph, seed):
    from sw.board import SIM_UART_DIVISOR, BoardLink, run_board, simulated_board
    from sw.run import _load_input
    from sw.soc_image import compile_model
    from sw.soc_run import run_golden

    soc = icebreaker_soc_config(uart_divisor=SIM_UART_DIVISOR)
    image = compile_model(graph, soc)
    check_image_fits(image)
    x, _ = _load_input(graph, None, seed)
    golden = run_golden(image, x, graph=graph)
    with simulated_board(soc, level="icebreaker") as port, BoardLink(
            port, timeout=120, run_timeout=3600) as board:
        hello = board.hello()
        assert (hello.accelerators, hello.datapaths, hello.clock_hz) == (0, 0, 12_000_000)
        run = run_board(board, image, x)
        board.exit(0)
    return run, golden


@pytest.mark.cocotb
def test_simulated_icebreaker_boots_over_the_uart_and_runs_layers():
    """The board monitor sent to the boot ROM over the UART, then DS-CNN's last four layers on
    the processor (RV32I: multiplications by library calls), bit-exact with the golden
    model."""
    graph = _last_layers(4)
    assert [op.kind for op in graph.ops] == ["avgpool2d", "reshape", "fc", "softmax"]
    run, golden = _run_on_simulated_icebreaker(graph, 5)
    assert np.array_equal(run.output, golden.output)
    assert all(record.cycles > 0 for record in run.records[:1])


@pytest.mark.slow
@pytest.mark.cocotb
def test_dscnn_on_the_simulated_icebreaker_is_bit_exact():
    from sw.tflite_import import load_model

    run, golden = _run_on_simulated_icebreaker(load_model("dscnn"), 7)
    assert np.array_equal(run.output, golden.output)
    assert all(record.cycles > 0 for record in run.records)


def test_an_image_beyond_the_spram_is_refused():
    from sw.soc_image import compile_model
    from sw.tflite_import import load_model

    image = compile_model(load_model("vww"), icebreaker_soc_config())
    with pytest.raises(ValueError, match=r"the iCEBreaker has 65,472"):
        check_image_fits(image)



@pytest.mark.slow
def test_the_icebreaker_bitstream_fits_and_meets_timing():
    """``make bitstream BOARD=icebreaker`` (cached by digest; the first run takes minutes to
    twenty on a loaded machine): it fits the UP5K and meets the 12 MHz constraint."""
    from boards.bitstream import build_bitstream

    result = build_bitstream("icebreaker")
    assert result.bitstream and result.bitstream.endswith(".bin"), result.note
    assert result.resources["LUT"] <= result.available["LUT"]
    assert result.timing_met, result.clocks
