"""The NVE as an SoC peripheral (``hdl/soc/nve.py``, ``SocConfig.nve``): its Wishbone window
in the Amaranth simulator, driven the way the firmware's driver (``firmware/nve.c``) drives it,
against the instruction-set simulator; the configuration and the firmware header. The
firmware on the whole SoC in Verilator is ``tests/test_firmware_nve.py`` (slow tier)."""

# amaranth: UnusedElaboratable=no

import random

import pytest
from amaranth.sim import Simulator

from hdl.soc.nve import NvePeripheral
from hls_ref.config import DEFAULT_SOC, SocConfig
from hls_ref.nve.asm import assemble
from hls_ref.nve.isa import (
    DEFAULT_CONFIG,
    HOST_LUT_OFFSET,
    ErrorCode,
    NveConfig,
    Program,
    host_registers,
)
from hls_ref.soc_map import NVE_PORT, NVE_PORT_OFFSET, c_header
from sim.nve_programs import partial_sum_jobs
from sw.nve.soc import NveSocRun, compare

REGS = host_registers(DEFAULT_CONFIG)
PORT = {r.name: NVE_PORT_OFFSET + r.offset for r in NVE_PORT}


def _drive(runs):
    """Run each ``(program, data)`` of ``runs`` on an :class:`NvePeripheral` through its
    Wishbone port, step by step as ``nve_run`` does; return an :class:`NveSocRun` each and
    whether any access ended with ``err``."""
    dut = NvePeripheral(DEFAULT_CONFIG)
    bus = dut.wb
    results, errors = [], []

    async def access(ctx, address, value=None):
        ctx.set(bus.adr, address >> 2)
        ctx.set(bus.sel, 0xF)
        ctx.set(bus.we, value is not None)
        ctx.set(bus.dat_w, value or 0)
        ctx.set(bus.cyc, 1)
        ctx.set(bus.stb, 1)
        data, err = await ctx.tick().sample(bus.dat_r, bus.err).until(bus.ack | bus.err)
        ctx.set(bus.cyc, 0)
        ctx.set(bus.stb, 0)
        if err:
            errors.append(address)
        return data

    async def tb(ctx):
        for program, data in runs:
            s = program.settings
            values = {"PROGRAM_SIZE": program.size, "LOOP_START": s.loop_start,
                      "LOOP_END": program.loop_end, "ITERATIONS": s.iterations,
                      "SHIFT": s.shift}
            for mode in range(1, DEFAULT_CONFIG.agu_modes):
                values[f"AGU{mode}_INC"], values[f"AGU{mode}_TOGGLE"] = s.pair(mode)
            for name, value in values.items():
                await access(ctx, REGS.offset(name), value)
            words = [*program.words, *data]
            await access(ctx, REGS.offset("CTRL"), REGS.encode("CTRL", start=1, load=1))
            sent, out, last = 0, [], 0
            while True:
                port = await access(ctx, PORT["STATUS"])
                if port & 2:
                    low = await access(ctx, PORT["OUT_LO"])
                    out.append(low | await access(ctx, PORT["OUT_HI"]) << 32)
                    last = port >> 2 & 1
                elif sent < len(words) and port & 1:
                    await access(ctx, PORT["IN_LO"], words[sent] & 0xFFFF_FFFF)
                    await access(ctx, PORT["IN_HI"], words[sent] >> 32)
                    sent += 1
                elif not await access(ctx, REGS.offset("STATUS")) & 1:
                    break
            status = {name: await access(ctx, REGS.offset(name))
                      for name in ("STATUS", "ERROR", "ERROR_CYCLE", "CYCLES", "STALLS",
                                   "BUSY_CYCLES", "LOADED")}
            await access(ctx, PORT["CLEAR"], 1)
            await access(ctx, REGS.offset("CTRL"), REGS.encode("CTRL", abort=1))
            await access(ctx, REGS.offset("STATUS"), REGS.encode("STATUS", done=1, error=1))
            results.append(NveSocRun(
                status["STATUS"], status["ERROR"], status["ERROR_CYCLE"], status["CYCLES"],
                status["STALLS"], status["BUSY_CYCLES"], status["LOADED"], len(out), last,
                sent, 0, tuple(out)))
        # an access the NVE answers with SLVERR (an unmapped register) ends with err
        await access(ctx, 0x3FC)
        assert ctx.get(dut.irq) == 0

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    return results, errors


def test_the_processor_runs_programs_through_the_window_like_the_iss():
    job = partial_sum_jobs(random.Random(7), macs=12)[0]
    good = assemble("nop\nnop\nnop\nnop\n")
    bad = Program((*good.words[:2], 5 << 5, *good.words[3:]), good.settings)
    runs = [(job.program, job.data), (bad, (1, 2, 3)), (job.program, job.data)]
    results, errors = _drive(runs)
    assert errors == [0x3FC]  # only the unmapped read
    for (program, data), got in zip(runs, results):
        assert compare(program, data, got) == [], got
    first, refused, again = results
    assert first.outputs == 8 and first.last and first.stalls > 0
    # the illegal word at pc 2: every program word taken, the data words withdrawn
    assert (refused.error_code, refused.error_pc, refused.loaded) == (
        ErrorCode.ILLEGAL_INSTRUCTION, 2, 0)
    assert refused.status & 4  # STATUS.error
    assert again == first  # the withdrawn words did not reach the next run


def test_the_configuration_and_the_header_name_the_nve_only_when_it_is_built():
    with_nve = SocConfig(accelerators=(), nve=NveConfig())
    assert SocConfig.from_dict(with_nve.as_dict()) == with_nve
    assert "nve" not in DEFAULT_SOC.as_dict()
    assert "NVE_BASE" not in c_header(DEFAULT_SOC)
    header = c_header(with_nve)
    for text in ("#define NVE_BASE 0x20020000u", "#define NVE_PORT_IN_HI 0x00000004u",
                 f"#define NVE_LUT_OFFSET 0x{HOST_LUT_OFFSET:08x}u",
                 f"#define NVE_CYCLES 0x{REGS.offset('CYCLES'):08x}u",
                 "#define NVE_ERROR_ILLEGAL_INSTRUCTION 3"):
        assert text in header
    with pytest.raises(ValueError, match=r"^nve must be None or an NveConfig, not 16$"):
        SocConfig(nve=16)
