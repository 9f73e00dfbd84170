# amaranth: UnusedElaboratable=no
"""Amaranth-simulator test of the per-channel add unit: its sums, scaled to the output as the
store does (``multiply_by_quantized_multiplier``, zero point, clamp), equal
``AddAccelerator``'s output in every ST configuration, for TFLite-like and for random (wrapping)
parameters."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from hdl.perchannel.add import AddUnit
from hls_ref import Precision
from hls_ref.formats import QuantBlock
from hls_ref.invocation import AddAccelerator, Command, Limits
from hls_ref.quant import multiply_by_quantized_multiplier

from .test_hdl_perchannel_window import Harness

LANES = 4
ADDR = 6
BIG = Limits(pes=LANES, plm_in=1 << 20, plm_w=1 << 20, plm_acc=1 << 30)


def _row(values):
    return sum((int(v) & 0xFFFF) << (16 * lane) for lane, v in enumerate(values))


def run(a, b, qblock, scalers, base_a=0, base_b=20, out_base=3):
    pixels = a.reshape(-1, LANES)
    rows = [[0] * (1 << ADDR) for _ in range(2)]
    for k, (pa, pb) in enumerate(zip(pixels, b.reshape(-1, LANES), strict=True)):
        rows[k & 1][base_a + (k >> 1)] = _row(pa)
        rows[1 - (k & 1)][base_b + (k >> 1)] = _row(pb)
    unit = AddUnit(lanes=LANES, scalers=scalers, addr_width=ADDR, out_width=6)
    dut = Harness(unit, rows, addr_bits=ADDR)
    written = {}
    z, mult, shift = qblock.bias, qblock.multiplier, qblock.shift

    async def testbench(ctx):
        ctx.set(unit.cmd, dict(pixels=len(pixels), base_a=base_a, base_b=base_b,
                               out_base=out_base))
        ctx.set(unit.params, dict(zero_point=[int(z[0]), int(z[1])],
                                  multiplier=[int(mult[0]), int(mult[1])],
                                  shift=[int(shift[0]), int(shift[1])],
                                  left_shift=int(z[2]) & 31))
        ctx.set(unit.start, 1)
        await ctx.tick()
        ctx.set(unit.start, 0)
        for _ in range(20 * len(pixels) + 50):
            if ctx.get(unit.wr_en):
                written[ctx.get(unit.wr_addr)] = [int(v) for v in ctx.get(unit.wr_data)]
            await ctx.tick()
            if not ctx.get(unit.busy):
                break
        assert not ctx.get(unit.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert sorted(written) == list(range(out_base, out_base + len(pixels)))
    return np.array([written[out_base + k] for k in range(len(pixels))]).reshape(a.shape)


@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
def test_add_sums_give_the_golden_output(precision):
    rng = np.random.default_rng(400 + precision.value)
    lo, hi = -(1 << (precision.act_bits - 1)), 1 << (precision.act_bits - 1)
    for case in range(3):
        h, w = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        a = rng.integers(lo, hi, (h, w, LANES))
        b = rng.integers(lo, hi, (h, w, LANES))
        if case == 0:      # TFLite-like: left shift 20, multipliers below one
            bias = [int(rng.integers(lo, hi)), int(rng.integers(lo, hi)), 20]
            mult = rng.integers(1 << 30, 1 << 31, 3)
            shift = [int(rng.integers(-3, 1)), int(rng.integers(-3, 1)),
                     int(rng.integers(-22, -15))]
        else:              # anything: the 32-bit arithmetic wraps as the golden model's
            bias = [int(v) for v in rng.integers(-(1 << 31), 1 << 31, 3)]
            mult = rng.integers(0, 1 << 31, 3)
            shift = [int(v) for v in rng.integers(-40, 8, 3)]
        qblock = QuantBlock(int(rng.integers(-50, 50)), -100, 100, np.array(bias),
                            np.array(mult), np.array(shift))
        sums = run(a, b, qblock, scalers=2 * (1 + case % 2))
        out = np.clip(multiply_by_quantized_multiplier(sums, mult[2], shift[2])
                      + qblock.zero_point, -100, 100)
        want = AddAccelerator(BIG).invoke(Command(precision, 16), a, b, qblock)
        assert np.array_equal(out, want), case
