# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the per-channel window unit: for random depthwise tiles in every
ST configuration (kernels up to 3x3, strides 1 and 2, asymmetric padding, random
back-pressure) it emits, output by output, the ST activation words of the kernel window's taps
that the golden model multiplies (``hls_ref.st.pack_activations`` of the padded taps)."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import memory, wiring
from amaranth.sim import Simulator

from hdl.perchannel.window import WindowUnit
from hls_ref import Precision, pack_activations

LANES = 4
ADDR = 8


class Harness(wiring.Component):
    """A unit with plain memories (one cycle of read latency, ``addr_bits`` of address) as
    its input PLM: ``init`` is the rows of the even-row and the odd-row memory
    (:func:`plm_rows`). The window, core and add unit tests share it."""

    def __init__(self, unit, init, addr_bits=ADDR):
        self.unit, self.init, self.addr_bits = unit, init, addr_bits
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        unit = m.submodules.unit = self.unit
        for k, port in enumerate(unit.rd):
            mem = memory.Memory(shape=LANES * 16, depth=1 << self.addr_bits, init=[])
            mem.data.init = self.init[k]
            m.submodules[f"mem{k}"] = mem
            rd = mem.read_port()
            m.d.comb += [rd.addr.eq(port.addr), rd.en.eq(port.en), port.data.eq(rd.data)]
        return m


def plm_rows(x, base=0):
    """The two PLM memories' rows holding tile ``x`` (H, W, lanes) from row ``base``: pixel
    ``(y, q)`` at ``base + (y >> 1) * W + q`` of memory ``y & 1``."""
    h, w, _ = x.shape
    rows = [[0] * (1 << ADDR) for _ in range(2)]
    for y in range(h):
        for q in range(w):
            rows[y & 1][base + (y >> 1) * w + q] = sum(
                (int(v) & 0xFFFF) << (16 * lane) for lane, v in enumerate(x[y, q]))
    return rows


def expected_words(x, kernel, stride, padding, pad_value, precision):
    """(out_h * out_w * groups, lanes) ST words of the golden model's depthwise operands."""
    (kh, kw), (sh, sw) = kernel, stride
    top, bottom, left, right = padding
    xp = np.pad(x, ((top, bottom), (left, right), (0, 0)), constant_values=pad_value)
    ho = (xp.shape[0] - kh) // sh + 1
    wo = (xp.shape[1] - kw) // sw + 1
    words = []
    for r in range(ho):
        for q in range(wo):
            window = xp[r * sh:r * sh + kh, q * sw:q * sw + kw]          # kh, kw, C
            taps = window.reshape(kh * kw, -1).T                         # C, taps
            words.append(pack_activations(taps, precision).T)            # groups, C
    return np.concatenate(words), ho, wo


def run(precision, x, kernel, stride, padding, pad_value, seed, base=0):
    h, w, _ = x.shape
    rows = plm_rows(x, base)
    want, ho, wo = expected_words(x, kernel, stride, padding, pad_value, precision)
    groups = -(-(kernel[0] * kernel[1]) // precision.lanes)
    unit = WindowUnit(lanes=LANES, max_kernel=(3, 3), addr_width=ADDR, fifo_depth=4)
    dut = Harness(unit, rows)
    rng = np.random.default_rng(seed)
    got, flags = [], []

    async def testbench(ctx):
        cmd = dict(base=base, in_h=h, in_w=w, out_h=ho, out_w=wo, kernel_h=kernel[0],
                   kernel_w=kernel[1], stride_h=stride[0], stride_w=stride[1],
                   pad_top=padding[0], pad_left=padding[2], pad_value=pad_value,
                   precision=precision, groups=groups)
        ctx.set(unit.cmd, cmd)
        ctx.set(unit.start, 1)
        await ctx.tick()
        ctx.set(unit.start, 0)
        for _ in range(40 * len(want) + 200):
            ready = int(rng.random() < 0.7)
            ctx.set(unit.o.ready, ready)
            if ready and ctx.get(unit.o.valid):
                payload = ctx.get(unit.o.payload)
                got.append([int(v) for v in payload.a])
                flags.append((int(payload.group), int(payload.clear), int(payload.last)))
            await ctx.tick()
            if not ctx.get(unit.busy) and len(got) == len(want):
                break

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return np.array(got), want, flags, groups


@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
def test_window_words_equal_the_golden_operands(precision):
    rng = np.random.default_rng(precision.value)
    lo, hi = -(1 << (precision.act_bits - 1)), 1 << (precision.act_bits - 1)
    for case in range(4):
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        padding = (int(rng.integers(kh)), int(rng.integers(kh)), int(rng.integers(kw)),
                   int(rng.integers(kw)))
        h = int(rng.integers(max(1, kh - padding[0] - padding[1]), 6))
        w = int(rng.integers(max(1, kw - padding[2] - padding[3]), 6))
        x = rng.integers(lo, hi, (h, w, LANES))
        pad_value = int(rng.integers(lo, hi))
        got, want, flags, groups = run(precision, x, (kh, kw), stride, padding, pad_value,
                                       seed=case, base=int(rng.integers(0, 64)))
        assert got.shape == want.shape, (kh, kw, stride, padding, h, w)
        assert np.array_equal(got, want), (kh, kw, stride, padding, h, w)
        assert flags == [(g, int(g == 0), int(g == groups - 1))
                         for _ in range(len(want) // groups) for g in range(groups)]


def _cycles(precision, h, w, kernel, stride, padding):
    """(cycles from start to the last operation without back-pressure, operations)."""
    x = np.zeros((h, w, LANES), np.int64)
    want, ho, wo = expected_words(x, kernel, stride, padding, 0, precision)
    groups = -(-(kernel[0] * kernel[1]) // precision.lanes)
    unit = WindowUnit(lanes=LANES, max_kernel=(3, 3), addr_width=ADDR, fifo_depth=8)
    dut = Harness(unit, plm_rows(x))
    result = {}

    async def testbench(ctx):
        ctx.set(unit.cmd, dict(base=0, in_h=h, in_w=w, out_h=ho, out_w=wo,
                               kernel_h=kernel[0], kernel_w=kernel[1], stride_h=stride[0],
                               stride_w=stride[1], pad_top=padding[0], pad_left=padding[2],
                               pad_value=0, precision=precision, groups=groups))
        ctx.set(unit.start, 1)
        ctx.set(unit.o.ready, 1)
        await ctx.tick()
        ctx.set(unit.start, 0)
        taken = cycles = 0
        while taken < len(want):
            taken += ctx.get(unit.o.valid)
            await ctx.tick()
            cycles += 1
        result["cycles"] = cycles

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return result["cycles"], len(want)


def test_a8_3x3_issues_an_operation_almost_every_cycle():
    """DS-CNN's depthwise tile (25x5, 3x3, stride 1, padding 1) at a8: five operations per
    output; the reader and the two-pixel assembler keep up, start of rows included (at most
    one idle cycle per output row, and the pipeline's fill)."""
    cycles, ops = _cycles(Precision.A8W8, 25, 5, (3, 3), (1, 1), (1, 1, 1, 1))
    assert ops == 25 * 5 * 5
    assert cycles <= ops + 25 + 16, cycles


def test_a4_3x3_reads_two_pixels_a_cycle():
    """The same tile at a4: three operations per output need three new pixels, and a row's
    first window nine; reading two vertically adjacent pixels a cycle keeps the idle cycles
    to at most two per output row (plus the pipeline's fill)."""
    cycles, ops = _cycles(Precision.A4W4, 25, 5, (3, 3), (1, 1), (1, 1, 1, 1))
    assert ops == 25 * 5 * 3
    assert cycles <= ops + 2 * 25 + 16, cycles
