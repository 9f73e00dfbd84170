# amaranth: UnusedElaboratable=no
"""Amaranth-simulator test of the per-channel datapath's scaler against
``hls_ref.quant.multiply_by_quantized_multiplier``: random and extreme int32 inputs,
multipliers and every shift from -128 to 127, with random back-pressure."""

import numpy as np
from amaranth.sim import Simulator

from hdl.perchannel.scale import Scaler
from hls_ref.quant import multiply_by_quantized_multiplier


def test_scaler_equals_the_golden_scaling():
    rng = np.random.default_rng(17)
    n = 1500
    x = rng.integers(-(1 << 31), 1 << 31, n)
    x[:40] = [-(1 << 31), (1 << 31) - 1, 0, 1, -1] * 8
    multiplier = rng.integers(0, 1 << 31, n)
    multiplier[40:80] = [(1 << 31) - 1, 1 << 30, 0, 1] * 10
    shift = np.where(rng.random(n) < 0.7, rng.integers(-33, 3, n), rng.integers(-128, 128, n))
    shift[80:336] = np.arange(-128, 128)
    want = multiply_by_quantized_multiplier(x, multiplier, shift)
    dut = Scaler(user_width=16)
    got = []

    async def producer(ctx):
        for k in range(n):
            ctx.set(dut.i.payload, dict(x=int(x[k]), multiplier=int(multiplier[k]),
                                        shift=int(shift[k]), user=k & 0xFFFF))
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready)
            ctx.set(dut.i.valid, 0)
            if rng.random() < 0.2:
                await ctx.tick()

    async def consumer(ctx):
        for _ in range(10 * n):
            ready = int(rng.random() < 0.7)
            ctx.set(dut.o.ready, ready)
            if ready and ctx.get(dut.o.valid):
                payload = ctx.get(dut.o.payload)
                got.append((int(payload.user), int(payload.value)))
            await ctx.tick()
            if len(got) == n:
                break

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    assert [u for u, _ in got] == [k & 0xFFFF for k in range(n)]
    bad = [(k, int(x[k]), int(multiplier[k]), int(shift[k]), v, int(want[k]))
           for k, (_, v) in enumerate(got) if v != want[k]]
    assert not bad, bad[:5]
