# amaranth: UnusedElaboratable=no
"""The pipelined multiplier: its portable form in the Amaranth simulator (two enabled cycles of
latency, holding while disabled), and what its ECP5 form instantiates. The ECP5 form's
behaviour is simulated with the primitive's model in the cocotb regressions of the ST
multiplier, the PE row and the conv2d accelerator (``*_ecp5`` configurations)."""

import random

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Fragment, Module, Signal
from amaranth.sim import Simulator

from hdl.dsp import ECP5_DSP_WIDTH, PipelinedMultiplier, shift_add_product
from hdl.target import Target, is_ecp5
from tests.fragments import instances


@pytest.mark.parametrize("is_signed", [True, False])
@pytest.mark.parametrize("width", [2, 9, ECP5_DSP_WIDTH])
def test_portable_form_multiplies_two_enabled_cycles_later(width, is_signed):
    rng = random.Random(width)
    dut = PipelinedMultiplier(width, is_signed=is_signed)
    if is_signed:
        low, high = -(1 << (width - 1)), (1 << (width - 1)) - 1
        corners = [low, high, 0, -1]
    else:
        low, high = 0, (1 << width) - 1
        corners = [high, 0, 1, high >> 1]
    operands = [(x, y) for x in corners for y in corners]
    operands += [(rng.randint(low, high), rng.randint(low, high)) for _ in range(200)]
    enables = [rng.random() < 0.7 for _ in range(4 * len(operands))]

    async def bench(ctx):
        loaded = []      # operands in the order the enabled cycles took them
        pending = list(operands)
        for enable in enables:
            x, y = pending[0] if pending else (0, 0)
            ctx.set(dut.x, x)
            ctx.set(dut.y, y)
            ctx.set(dut.enable, enable)
            await ctx.tick()
            if enable:
                loaded.append((x, y))
                if pending:
                    pending.pop(0)
                # After the second enabled edge the product of the operands loaded at the
                # first appears, and it stays while the enable is low.
                if len(loaded) >= 2:
                    x0, y0 = loaded[-2]
                    assert ctx.get(dut.product) == x0 * y0, (x0, y0)
            elif len(loaded) >= 2:
                x0, y0 = loaded[-2]
                assert ctx.get(dut.product) == x0 * y0, "product changed while disabled"
        assert not pending, "the random enables left operands unused; lengthen the run"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def test_ecp5_form_is_one_mult18x18d_with_its_own_registers():
    dut = PipelinedMultiplier(9)
    fragment = Fragment.get(dut, Target("ecp5"))
    (block,) = [i for i in instances(fragment) if i.type == "MULT18X18D"]
    for name in ("INPUTA", "INPUTB", "OUTPUT"):
        assert block.parameters[f"REG_{name}_CLK"] == "CLK0"
        assert block.parameters[f"REG_{name}_CE"] == "CE0"
    assert block.parameters["REG_PIPELINE_CLK"] == "NONE"
    pins = set(block.ports)
    assert {f"A{i}" for i in range(18)} <= pins and {f"B{i}" for i in range(18)} <= pins
    assert {f"P{i}" for i in range(18)} <= pins
    assert not any(name.startswith("C") and name[1:].isdigit() for name in pins)
    assert block.ports["SIGNEDA"][0].value == 1 and block.ports["SIGNEDB"][0].value == 1
    fragment = Fragment.get(PipelinedMultiplier(9, is_signed=False), Target("ecp5"))
    (block,) = [i for i in instances(fragment) if i.type == "MULT18X18D"]
    assert block.ports["SIGNEDA"][0].value == 0 and block.ports["SIGNEDB"][0].value == 0


def test_other_targets_get_the_portable_form():
    assert is_ecp5(Target("ecp5"))
    for platform in (None, Target("ice40"), object()):
        assert not is_ecp5(platform)
        fragment = Fragment.get(PipelinedMultiplier(9), platform)
        assert not list(instances(fragment))


def test_width_is_checked():
    with pytest.raises(ValueError, match="width"):
        PipelinedMultiplier(ECP5_DSP_WIDTH + 1)


def test_shift_add_product_is_the_product_and_takes_no_multiplier():
    m = Module()
    narrow, value, product = Signal(4), Signal(8), Signal(12)
    m.d.comb += product.eq(shift_add_product(narrow, value))

    async def bench(ctx):
        for a in range(16):
            for b in (0, 1, 2, 77, 128, 255):
                ctx.set(narrow, a)
                ctx.set(value, b)
                assert ctx.get(product) == a * b, (a, b)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert "$mul" not in rtlil.convert(m, ports=[narrow, value, product])
