# amaranth: UnusedElaboratable=no
"""Amaranth-simulator test of the stream register slice: under random valid and ready
patterns every transfer comes out once, in order, and at one per cycle when never stalled."""

import random

import pytest
from amaranth.sim import Simulator

from hdl.register_slice import RegisterSlice


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_register_slice_passes_every_transfer_in_order(seed):
    rng = random.Random(seed)
    dut = RegisterSlice(16)
    sent = [rng.randrange(1 << 16) for _ in range(300)]
    got = []

    async def producer(ctx):
        for value in sent:
            ctx.set(dut.i.payload, value)
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready)
            ctx.set(dut.i.valid, 0)
            for _ in range(rng.choice([0, 0, 0, 1, 2])):
                await ctx.tick()

    async def consumer(ctx):
        while len(got) < len(sent):
            ready = rng.random() < 0.6
            ctx.set(dut.o.ready, ready)
            await ctx.delay(1e-9)
            if ready and ctx.get(dut.o.valid):
                got.append(ctx.get(dut.o.payload))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run_until(1e-2)
    assert got == sent, f"seed {seed}"


def test_register_slice_full_rate():
    dut = RegisterSlice(8)
    cycles = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.i.valid, 1)
        received = 0
        for cycle in range(40):
            ctx.set(dut.i.payload, cycle)
            await ctx.delay(1e-9)
            assert ctx.get(dut.i.ready)
            if ctx.get(dut.o.valid):
                assert ctx.get(dut.o.payload) == received
                received += 1
                cycles.append(cycle)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # one cycle of latency, then one transfer per cycle
    assert cycles == list(range(1, 40))
