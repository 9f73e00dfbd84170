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
        ctx.set(core.weights, [weights, weights])
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


def test_commands_back_to_back_use_their_own_weights_and_precision():
    """Depthwise commands started as soon as the core accepts them (the next one's window
    runs while the present one's last operations and sums are in flight), alternating weight
    banks, each with its own precision and shape, then a pool that waits for an idle core:
    every output's sums equal the golden model's for its command."""
    from .test_hdl_perchannel_window import _random_command

    rng = np.random.default_rng(11)
    commands, base = [], 0
    for _ in range(4):
        precision = list(Precision)[int(rng.integers(len(Precision)))]
        x, kernel, stride, padding, pad_value = _random_command(rng, precision)
        w_lo, w_hi = -(1 << (precision.weight_bits - 1)), 1 << (precision.weight_bits - 1)
        w = rng.integers(w_lo, w_hi, (*kernel, LANES))
        commands.append((precision, x, w, stride, padding, pad_value, base))
        base += 24
    pool_x = rng.integers(-128, 128, (3, 2, LANES))
    rows = [[0] * (1 << ADDR) for _ in range(2)]
    for _, x, *_, base in [*commands, (None, pool_x, None, None, None, None, 120)]:
        for k in range(2):
            for r, value in enumerate(plm_rows(x, base)[k]):
                rows[k][r] |= value
    core = DepthwiseCore(lanes=LANES, max_kernel=(3, 3), addr_width=ADDR, fifo_depth=4,
                         precisions=list(Precision), stages=2)
    dut = Harness(core, rows)
    sums = []

    def bank(precision, w):
        kh, kw, _ = w.shape
        words = pack_weights(w.reshape(kh * kw, LANES).T, precision)
        rows = [[0] * LANES for _ in range(9)]
        for g in range(words.shape[1]):
            rows[g] = [int(v) for v in words[:, g]]
        return rows

    def outputs(x, w, stride, padding):
        kh, kw, _ = w.shape
        return (((x.shape[0] + padding[0] + padding[1] - kh) // stride[0] + 1)
                * ((x.shape[1] + padding[2] + padding[3] - kw) // stride[1] + 1))

    # a bank is rewritten for command n once command n - 2's sums are all out (its last
    # operation taken)
    done_after = np.cumsum([outputs(x, w, stride, padding)
                            for _, x, w, stride, padding, _, _ in commands])

    async def testbench(ctx):
        banks = [[[0] * LANES for _ in range(9)] for _ in range(2)]
        queue = list(enumerate(commands))
        pool_started = False
        for _ in range(4000):
            start = 0
            bank_free = queue and (queue[0][0] < 2 or len(sums) >= done_after[queue[0][0] - 2])
            if queue and bank_free and ctx.get(core.accept):
                n, (precision, x, w, stride, padding, pad_value, base) = queue.pop(0)
                kh, kw, _ = w.shape
                ho = (x.shape[0] + padding[0] + padding[1] - kh) // stride[0] + 1
                wo = (x.shape[1] + padding[2] + padding[3] - kw) // stride[1] + 1
                banks[n & 1] = bank(precision, w)
                ctx.set(core.cmd, dict(
                    base=base, in_h=x.shape[0], in_w=x.shape[1], out_h=ho, out_w=wo,
                    kernel_h=kh, kernel_w=kw, stride_h=stride[0], stride_w=stride[1],
                    pad_top=padding[0], pad_left=padding[2], pad_value=pad_value,
                    precision=precision, groups=-(-(kh * kw) // precision.lanes)))
                ctx.set(core.tag, n & 1)
                ctx.set(core.pool, 0)
                start = 1
            elif queue:
                pass                    # the next command waits for its weight bank
            elif not pool_started:
                ctx.set(core.cmd, dict(base=120, in_h=3, in_w=2, out_h=3, out_w=2, kernel_h=1,
                                       kernel_w=1, stride_h=1, stride_w=1, pad_top=0,
                                       pad_left=0, pad_value=0, precision=Precision.A8W8,
                                       groups=1, pixels=6))
                ctx.set(core.pool, 1)
                start = 1
                if ctx.get(core.accept):
                    # a pool waits for the last command's sums
                    assert not ctx.get(core.busy)
                    pool_started = True
                    ctx.set(core.tag, 0)
            ctx.set(core.weights, banks)
            ctx.set(core.start, start)
            ready = int(rng.random() < 0.7)
            ctx.set(core.o.ready, ready)
            if ready and ctx.get(core.o.valid):
                sums.append([int(v) for v in ctx.get(core.o.payload)])
            await ctx.tick()
            if pool_started and not ctx.get(core.busy):
                break
        assert pool_started and not ctx.get(core.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    at = 0
    zeros = np.zeros(LANES, np.int64)
    for precision, x, w, stride, padding, pad_value, _ in commands:
        golden = DepthwiseAccelerator(BIG)
        golden.invoke(Command(precision, 8, w.shape[:2], stride, padding, pad_value,
                              q_flag=False), x, w, QuantBlock(0, 0, 0, zeros, zeros, zeros))
        ho, wo, _ = golden.acc.shape
        got = np.array(sums[at:at + ho * wo]).reshape(ho, wo, LANES)
        assert np.array_equal(got, golden.acc), (precision, w.shape, stride, padding)
        at += ho * wo
    assert sums[at:] == [pool_x.sum(axis=(0, 1)).tolist()]
