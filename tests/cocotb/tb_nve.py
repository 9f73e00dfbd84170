"""cocotb testbench of the NVE (``hdl.nve``): the RTL in lockstep with the instruction-set
simulator (``sim.nve_host``), and its host interface.

``host_interface`` checks the register port: reset values, refused starts, loads with an
illegal word, reruns, the LUT window, writes while busy and aborts. ``lockstep`` runs the jobs
of the pickle file named by ``TESSERA_NVE_JOBS`` (written by
``tests/test_cocotb_nve.py``): every retire record, output word, status register and fault is
compared with :mod:`hls_ref.nve.iss`; the figures (jobs, records, mismatches) go to the JSON
file ``TESSERA_NVE_SUMMARY``.
"""

import json
import os
import pickle
import random

import cocotb
from cocotb.triggers import ClockCycles

from hls_ref.nve.asm import assemble
from hls_ref.nve.isa import HOST_LUT_OFFSET, ErrorCode, Program
from sim.cocotb_streams import StreamSource
from sim.nve_host import AxiResp, NveBench, compare
from sim.runner import Design


@cocotb.test()
async def lockstep(dut):
    config = Design.from_env().build().config
    bench = NveBench(dut, config, seed=cocotb.RANDOM_SEED)
    await bench.reset()
    with open(os.environ["TESSERA_NVE_JOBS"], "rb") as stream:
        jobs = pickle.load(stream)
    problems, records, runs, cycles = [], 0, 0, []
    for job in jobs:
        rtl = await bench.run(job.program, job.data, load=job.load, idle=job.idle,
                              stall=job.stall)
        cycles.append([job.name, rtl.status["CYCLES"], rtl.status["BUSY_CYCLES"],
                       rtl.status["STALLS"], rtl.signature.get("records", 0)])
        found, compared = compare(job, rtl, config)
        if found and not rtl.monitored:  # find the first record that differs
            rtl = await bench.run(job.program, job.data, load=job.load, idle=job.idle,
                                  stall=job.stall, monitor=True)
            found = compare(job, rtl, config)[0] or found
        problems += found
        records += compared
        runs += 1
        if len(problems) > 20:
            break
    summary = {"jobs": runs, "records": records, "mismatches": len(problems),
               "problems": problems[:20], "cycles": cycles}
    path = os.environ.get("TESSERA_NVE_SUMMARY")
    if path:
        with open(path, "w") as stream:
            json.dump(summary, stream, indent=1)
    assert not problems, "\n".join(problems[:20])


def _loop_program(iterations):
    """A program that runs ``iterations`` nops (and needs no data)."""
    return assemble(f".loop 1 1 {iterations}\nnop\nnop\nnop\n")


@cocotb.test()
async def host_interface(dut):
    """The register port and the rules of docs/nve.md for starts, loads, busy writes, the LUT
    and aborts."""
    config = Design.from_env().build().config
    bench = NveBench(dut, config, seed=cocotb.RANDOM_SEED)
    await bench.reset()
    regmap = bench.regmap
    # reset values: every register but the constants reads 0
    for register in regmap:
        value = int.from_bytes((await bench.master.read(register.offset, 4)).data, "little")
        assert value == register.reset_value, (register.name, value)
    assert (await bench.read("LOCAL_WORDS"))["value"] == config.local_words
    assert (await bench.master.read(0x3FC, 4)).resp == AxiResp.SLVERR  # unmapped
    assert (await bench.master.write(0x3FC, b"\1\0\0\0")).resp == AxiResp.SLVERR

    async def refused_start(**settings):
        for name, value in settings.items():
            assert await bench.write(name, value=value) == AxiResp.OKAY
            bench._written[name] = value
        assert await bench.write("CTRL", start=1) == AxiResp.OKAY
        await ClockCycles(dut.clk, 4)
        status = await bench.read("STATUS")
        error = await bench.read("ERROR")
        await bench.write("STATUS", done=1, error=1)
        return status, ErrorCode(error["code"])

    status, code = await refused_start()  # PROGRAM_SIZE 0
    assert status == {"busy": 0, "done": 1, "error": 1} and code is ErrorCode.SETTINGS
    status, code = await refused_start(PROGRAM_SIZE=3, LOOP_START=2, LOOP_END=1)
    assert code is ErrorCode.SETTINGS
    status, code = await refused_start(LOOP_START=0, LOOP_END=2)
    assert code is ErrorCode.NO_PROGRAM  # nothing loaded

    # an illegal word at pc 2: every word is taken, nothing runs, nothing stays loaded
    good = assemble("nop\nnop\nnop\nnop\n")
    bad = Program((*good.words[:2], 5 << 5, *good.words[3:]), good.settings)
    rtl = await bench.run(bad, ())
    assert rtl.status["ERROR.code"] == ErrorCode.ILLEGAL_INSTRUCTION
    assert (rtl.status["ERROR.pc"], rtl.status["LOADED"]) == (2, 0)
    rtl = await bench.run(good, ())
    assert (rtl.status["ERROR.code"], rtl.status["LOADED"]) == (0, 4)
    assert rtl.status["CYCLES"] == 4 and rtl.status["BUSY_CYCLES"] > 4
    rtl = await bench.run(good, (), load=False)  # a rerun needs no load
    assert (rtl.status["ERROR.code"], rtl.status["CYCLES"]) == (0, 4)

    # the LUT window: strobes select entries; reads return what was written
    rng = random.Random(cocotb.RANDOM_SEED)
    lut = [rng.randint(-128, 127) for _ in range(1024)]
    await bench.write_lut(lut)
    await bench.master.write(HOST_LUT_OFFSET + 8, b"\x11")  # one byte: one entry
    await bench.master.write(HOST_LUT_OFFSET + 10, b"\x33")
    lut[8], lut[10] = 0x11, 0x33
    for r in [*rng.sample(range(256), 16), 2]:
        data = (await bench.master.read(HOST_LUT_OFFSET + 4 * r, 4)).data
        assert [b - 256 if b > 127 else b for b in data] == lut[4 * r:4 * r + 4], r
    bench._lut = tuple(lut)

    # while busy: settings and the LUT are refused, CTRL acts only on abort
    program = _loop_program(60000)
    await bench.settings(program)
    await bench.master.write(0, (3).to_bytes(4, "little"))  # start | load
    stream = cocotb.start_soon(StreamSource(dut, "i_stream", dut.clk, rng=rng).send(
        list(program.words)))
    await ClockCycles(dut.clk, 20)
    assert (await bench.read("STATUS"))["busy"] == 1
    assert await bench.write("ITERATIONS", value=5) == AxiResp.SLVERR
    assert (await bench.read("ITERATIONS"))["value"] == 60000
    assert await bench.write("SHIFT", value=3) == AxiResp.SLVERR
    assert (await bench.master.write(HOST_LUT_OFFSET, b"\0\0\0\0")).resp == AxiResp.SLVERR
    assert (await bench.master.read(HOST_LUT_OFFSET, 4)).resp == AxiResp.SLVERR
    assert await bench.write("CTRL", start=1, load=0) == AxiResp.OKAY
    assert (await bench.read("CTRL"))["load"] == 1
    assert await bench.write("CTRL", abort=1) == AxiResp.OKAY
    await ClockCycles(dut.clk, 2)
    assert await bench.read("STATUS") == {"busy": 0, "done": 1, "error": 1}
    assert (await bench.read("ERROR"))["code"] == ErrorCode.ABORTED
    assert (await bench.read("LOADED"))["value"] == 3  # loaded before the abort
    assert dut.irq.value == 1
    await stream
    await bench.write("STATUS", done=1, error=1)
    assert dut.irq.value == 0
    # and the NVE runs again
    rtl = await bench.run(good, ())
    assert rtl.status["ERROR.code"] == 0
