# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the per-channel depthwise core (window unit + one PE per lane)
against the invocation-level golden model: random depthwise tiles in every ST configuration,
kernels up to 3x3, strides 1 and 2, asymmetric padding, random back-pressure; the sums equal
``DepthwiseAccelerator``'s partial sums (bias 0), and ``mac`` counts the operations."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from hdl.perchannel.core import DepthwiseCore
from hls_ref import Precision
from hls_ref.formats import QuantBlock
from hls_ref.invocation import Command, DepthwiseAccelerator, Limits
from hls_ref.st import pack_weights

from .test_hdl_perchannel_window import ADDR, LANES, Harness, plm_rows

BIG = Limits(pes=LANES, plm_in=1 << 20, plm_w=1 << 20, plm_acc=1 << 30)


def run(precision, x, w, stride, padding, pad_value, seed):
    h, wd, c = x.shape
    kh, kw, _ = w.shape
    top, bottom, left, right = padding
    ho = (h + top + bottom - kh) // stride[0] + 1
    wo = (wd + left + right - kw) // stride[1] + 1
    groups = -(-(kh * kw) // precision.lanes)
    rows = plm_rows(x)
    words = pack_weights(w.reshape(kh * kw, c).T, precision)            # (lanes, groups)
    weights = [[0] * LANES for _ in range(9)]
    for g in range(groups):
        weights[g] = [int(v) for v in words[:, g]]
    core = DepthwiseCore(lanes=LANES, max_kernel=(3, 3), addr_width=ADDR, fifo_depth=4,
                         precisions=[precision], stages=2)
    dut = Harness(core, rows)
    rng = np.random.default_rng(seed)
    sums, macs = [], [0]

    async def testbench(ctx):
        ctx.set(core.weights, weights)
        ctx.set(core.cmd, dict(base=0, in_h=h, in_w=wd, out_h=ho, out_w=wo, kernel_h=kh,
                               kernel_w=kw, stride_h=stride[0], stride_w=stride[1],
                               pad_top=top, pad_left=left, pad_value=pad_value,
                               precision=precision, groups=groups))
        ctx.set(core.start, 1)
        await ctx.tick()
        ctx.set(core.start, 0)
        for _ in range(60 * ho * wo * groups + 200):
            ready = int(rng.random() < 0.6)
            ctx.set(core.o.ready, ready)
            macs[0] += ctx.get(core.mac)
            if ready and ctx.get(core.o.valid):
                sums.append([int(v) for v in ctx.get(core.o.payload)])
            await ctx.tick()
            if not ctx.get(core.busy):
                break
        assert not ctx.get(core.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return np.array(sums).reshape(ho, wo, LANES), macs[0], groups


@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
def test_core_sums_equal_the_golden_partial_sums(precision):
    rng = np.random.default_rng(100 + precision.value)
    a_lo, a_hi = -(1 << (precision.act_bits - 1)), 1 << (precision.act_bits - 1)
    w_lo, w_hi = -(1 << (precision.weight_bits - 1)), 1 << (precision.weight_bits - 1)
    for case in range(3):
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        padding = (int(rng.integers(kh)), int(rng.integers(kh)), int(rng.integers(kw)),
                   int(rng.integers(kw)))
        h = int(rng.integers(max(1, kh - padding[0] - padding[1]), 6))
        wd = int(rng.integers(max(1, kw - padding[2] - padding[3]), 6))
        x = rng.integers(a_lo, a_hi, (h, wd, LANES))
        w = rng.integers(w_lo, w_hi, (kh, kw, LANES))
        pad_value = int(rng.integers(a_lo, a_hi))
        got, macs, groups = run(precision, x, w, stride, padding, pad_value, seed=case)
        golden = DepthwiseAccelerator(BIG)
        zeros = np.zeros(LANES, np.int64)
        golden.invoke(Command(precision, 8, (kh, kw), stride, padding, pad_value,
                              q_flag=False), x, w, QuantBlock(0, 0, 0, zeros, zeros, zeros))
        assert np.array_equal(got, golden.acc), (kh, kw, stride, padding, h, wd)
        assert macs == got.shape[0] * got.shape[1] * groups


def run_pool(precision, x, seed):
    h, wd, _ = x.shape
    rows = plm_rows(x)
    core = DepthwiseCore(lanes=LANES, max_kernel=(3, 3), addr_width=ADDR, fifo_depth=4,
                         precisions=[precision], stages=2)
    dut = Harness(core, rows)
    rng = np.random.default_rng(seed)
    sums, macs = [], [0]

    async def testbench(ctx):
        ctx.set(core.cmd, dict(base=0, in_h=h, in_w=wd, out_h=h, out_w=wd, kernel_h=1,
                               kernel_w=1, stride_h=1, stride_w=1, pad_top=0, pad_left=0,
                               pad_value=0, precision=precision, groups=1, pixels=h * wd))
        ctx.set(core.pool, 1)
        ctx.set(core.start, 1)
        await ctx.tick()
        ctx.set(core.start, 0)
        for _ in range(10 * h * wd + 100):
            ready = int(rng.random() < 0.6)
            ctx.set(core.o.ready, ready)
            macs[0] += ctx.get(core.mac)
            if ready and ctx.get(core.o.valid):
                sums.append([int(v) for v in ctx.get(core.o.payload)])
            await ctx.tick()
            if not ctx.get(core.busy):
                break
        assert not ctx.get(core.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return sums, macs[0]


@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
def test_pool_mode_sums_the_whole_tile(precision):
    """An average pool's sum: one sum per lane for the whole tile, one operation per pixel."""
    rng = np.random.default_rng(200 + precision.value)
    lo, hi = -(1 << (precision.act_bits - 1)), 1 << (precision.act_bits - 1)
    x = rng.integers(lo, hi, (int(rng.integers(1, 7)), int(rng.integers(1, 7)), LANES))
    sums, macs = run_pool(precision, x, seed=precision.value)
    assert sums == [x.sum(axis=(0, 1)).tolist()]
    assert macs == x.shape[0] * x.shape[1]
