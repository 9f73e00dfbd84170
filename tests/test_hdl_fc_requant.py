# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the FC requantizer (``hdl.fc.requant``) against
``hls_ref.quant.scale_by_double_integer`` (LiteRT's FC rule): corner cases of both roundings,
scales over the whole exponent range, saturation and the clamp, with random back-pressure."""

import random
import struct

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hdl.fc.requant import LATENCY, DoubleRequantizer, bit_length
from hls_ref.quant import scale_by_double, scale_by_double_integer
from sim.streams import stream_get, stream_put, with_sync_domain


def double_bits(value):
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def golden(acc, scale, zero_point, low, high):
    scaled = scale_by_double_integer(np.asarray(acc, np.int64), scale, limit=1 << 31)
    return np.minimum(np.maximum(scaled + zero_point, low), high)


def run(groups, *, seed, idle=0.3, stall=0.3):
    """``groups``: list of ``(scale, zero_point, low, high, accs)``; the parameters are set
    while the pipeline is empty. Returns the values received, group by group."""
    dut = DoubleRequantizer(user_width=8)
    rng = random.Random(seed)
    got = [[] for _ in groups]
    done = {"groups": 0}

    async def producer(ctx):
        for n, (scale, zero_point, low, high, accs) in enumerate(groups):
            while done["groups"] < n:                # the previous group has left
                await ctx.tick()
            ctx.set(dut.scale, double_bits(scale))
            ctx.set(dut.zero_point, zero_point)
            ctx.set(dut.low, low)
            ctx.set(dut.high, high)
            await ctx.tick().repeat(2)
            for k, acc in enumerate(accs):
                await stream_put(ctx, dut.i, {"acc": int(acc), "user": k & 0xFF}, rng=rng,
                                 idle=idle)

    async def consumer(ctx):
        for n, group in enumerate(groups):
            for k in range(len(group[4])):
                payload = await stream_get(ctx, dut.o, rng=rng, stall=stall)
                assert payload.user == k & 0xFF
                got[n].append(payload.value)
            done["groups"] = n + 1

    sim = Simulator(with_sync_domain(dut))
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    return got


#: (acc, scale) pairs at the roundings' edges: ties of the integer rounding (x.5 both signs),
#: IEEE ties (a product of 54 and more significant bits exactly halfway), the extremes of
#: int32, zero, 1.
EDGES = [(-5, 0.5), (5, 0.5), (-3, 0.5), (3, 0.5), (1, 0.5), (-1, 0.5), (0, 0.3),
         (-(1 << 31), 1.0), ((1 << 31) - 1, 1.0), (-(1 << 31), 2.0 ** -14),
         ((1 << 31) - 1, 2.0 ** -15), (3, 1 + 2.0 ** -52), ((1 << 30) + 1, 1 + 2.0 ** -52),
         ((1 << 31) - 1, 1 - 2.0 ** -53), (7, 0.1), (-7, 0.1), (12345, 2.0 ** -13),
         (-12345, 2.0 ** -13), (65535, 2.0 ** -1), (-65537, 2.0 ** -1),
         (3 << 20, (2 ** 53 - 1) * 2.0 ** -72), (-(3 << 20), (2 ** 53 - 1) * 2.0 ** -72)]


def test_edges_and_random_scales():
    rng = np.random.default_rng(1)
    groups = [(scale, 0, -32768, 32767, [acc]) for acc, scale in EDGES]
    for _ in range(12):
        # scales from tiny to large; accumulators of random bit lengths
        scale = float(rng.uniform(1, 2)) * 2.0 ** int(rng.integers(-45, 4))
        accs = rng.integers(-(1 << 31), 1 << 31, 40) >> rng.integers(0, 31, 40)
        zp = int(rng.integers(-200, 200))
        low, high = sorted(int(v) for v in rng.integers(-32768, 32768, 2))
        groups.append((scale, zp, low, high, accs))
    got = run(groups, seed=3)
    for (scale, zp, low, high, accs), values in zip(groups, got):
        np.testing.assert_array_equal(values, golden(accs, scale, zp, low, high),
                                      err_msg=f"scale {scale!r}")
    # the same as LiteRT's double arithmetic, within int16
    for (scale, _, _, _, accs), values in zip(groups[:len(EDGES)], got):
        want = np.clip(scale_by_double(np.asarray(accs), scale), -32768, 32767)
        np.testing.assert_array_equal(values, want)


def test_saturation_and_clamps():
    """Magnitudes beyond the int16 window (huge scales included) clamp as the golden model's
    do; crossed bounds give ``high``; the zero point is added at full width."""
    accs = [1, -1, 3, -3, 1 << 20, -(1 << 20), (1 << 31) - 1, -(1 << 31), 0]
    groups = [(2.0 ** 600, 0, -32768, 32767, accs), (2.0 ** 40, 5, -100, 100, accs),
              (1.0, 32767, -32768, 32767, accs), (1.0, -32768, -32768, 32767, accs),
              (2.0 ** -30, 3, 10, -10, accs), (2.0 ** -1022, 0, -8, 7, accs),
              (1.5 * 2.0 ** 17, -7, -32768, 32767, accs), (2.0 ** 16, 0, -32768, 32767, accs)]
    got = run(groups, seed=4, idle=0.0, stall=0.5)
    for (scale, zp, low, high, accs_), values in zip(groups, got):
        np.testing.assert_array_equal(values, golden(accs_, scale, zp, low, high),
                                      err_msg=f"scale {scale!r}")


@pytest.mark.parametrize("seed", [5, 6])
def test_one_result_per_cycle(seed):
    """Without back-pressure a result leaves every cycle, LATENCY cycles after its input."""
    dut = DoubleRequantizer()
    cycles = []

    async def bench(ctx):
        ctx.set(dut.scale, double_bits(0.25))
        ctx.set(dut.high, 32767)
        ctx.set(dut.low, -32768)
        ctx.set(dut.o.ready, 1)
        await ctx.tick().repeat(2)
        for k in range(20):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload.acc, 4 * k + seed)
            await ctx.tick()
            if ctx.get(dut.o.valid):
                cycles.append((k, ctx.get(dut.o.payload.value)))
        ctx.set(dut.i.valid, 0)

    sim = Simulator(with_sync_domain(dut))
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert cycles[0][0] == LATENCY - 1 and len(cycles) == 20 - (LATENCY - 1)
    want = golden([4 * k + seed for k in range(len(cycles))], 0.25, 0, -32768, 32767)
    assert [v for _, v in cycles] == list(want)


def test_bit_length():
    m = Module()
    value = Signal(32)
    result = bit_length(m, value, name="t")
    values = [0, 1, 2, 3, 255, 256, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 12345]

    async def bench(ctx):
        for v in values:
            ctx.set(value, v)
            assert ctx.get(result) == v.bit_length(), v

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_results_in_the_output_window():
    """Random scales and accumulators whose products land in or near the int16 window (where
    every bit of both roundings shows), including exact IEEE ties."""
    rng = np.random.default_rng(8)
    groups = []
    for _ in range(16):
        k = int(rng.integers(1, 60))
        scale = float(rng.uniform(1, 2)) * 2.0 ** -k
        lengths = np.clip(k + rng.integers(-3, 17, 48), 0, 31)
        accs = rng.integers(0, 1 << 31, 48) >> (31 - lengths)
        accs = np.where(rng.random(48) < 0.5, -accs, accs)
        groups.append((scale, int(rng.integers(-50, 50)), -32768, 32767, accs))
    # IEEE ties: |x| * S has exactly a half at the rounding position
    groups.append(((1 + 2.0 ** -52) * 2.0 ** -40, 0, -32768, 32767,
                   [(1 << 31) - 1, -(1 << 31) + 1, (1 << 30) + (1 << 29), 3 << 28]))
    got = run(groups, seed=9, idle=0.1, stall=0.1)
    for (scale, zp, low, high, accs), values in zip(groups, got):
        np.testing.assert_array_equal(values, golden(accs, scale, zp, low, high),
                                      err_msg=f"scale {scale!r}")
