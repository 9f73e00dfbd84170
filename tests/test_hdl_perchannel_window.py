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


def _random_command(rng, precision, lanes=LANES):
    """A random tile and window command: (x, kernel, stride, padding, pad_value)."""
    lo, hi = -(1 << (precision.act_bits - 1)), 1 << (precision.act_bits - 1)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = (int(rng.integers(kh)), int(rng.integers(kh)), int(rng.integers(kw)),
               int(rng.integers(kw)))
    h = int(rng.integers(max(1, kh - padding[0] - padding[1]), 6))
    w = int(rng.integers(max(1, kw - padding[2] - padding[3]), 6))
    return (rng.integers(lo, hi, (h, w, lanes)), (kh, kw), stride, padding,
            int(rng.integers(lo, hi)))


@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
def test_window_words_equal_the_golden_operands(precision):
    rng = np.random.default_rng(precision.value)
    for case in range(4):
        x, (kh, kw), stride, padding, pad_value = _random_command(rng, precision)
        h, w, _ = x.shape
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


def run_sequence(commands, seed, ready_rate=0.7):
    """Start each command of ``commands`` ((precision, x, kernel, stride, padding, pad_value,
    base) each, tiles at disjoint bases) as soon as the unit accepts it; returns the
    operations taken, in order, as (words, group, clear, last, precision, tag)."""
    rows = [[0] * (1 << ADDR) for _ in range(2)]
    for _, x, *_, base in commands:
        tile = plm_rows(x, base)
        for k in range(2):
            for r, value in enumerate(tile[k]):
                if value:
                    rows[k][r] = value
    unit = WindowUnit(lanes=LANES, max_kernel=(3, 3), addr_width=ADDR, fifo_depth=4)
    dut = Harness(unit, rows)
    rng = np.random.default_rng(seed)
    got = []

    async def testbench(ctx):
        pending = list(enumerate(commands))
        for _ in range(400 * len(commands) + 200):
            if pending and ctx.get(unit.accept):
                n, (precision, x, kernel, stride, padding, pad_value, base) = pending.pop(0)
                _, ho, wo = expected_words(x, kernel, stride, padding, pad_value, precision)
                ctx.set(unit.cmd, dict(
                    base=base, in_h=x.shape[0], in_w=x.shape[1], out_h=ho, out_w=wo,
                    kernel_h=kernel[0], kernel_w=kernel[1], stride_h=stride[0],
                    stride_w=stride[1], pad_top=padding[0], pad_left=padding[2],
                    pad_value=pad_value, precision=precision,
                    groups=-(-(kernel[0] * kernel[1]) // precision.lanes)))
                ctx.set(unit.tag, n & 1)
                ctx.set(unit.start, 1)
            else:
                ctx.set(unit.start, 0)
            ready = int(rng.random() < ready_rate)
            ctx.set(unit.o.ready, ready)
            if ready and ctx.get(unit.o.valid):
                p = ctx.get(unit.o.payload)
                got.append(([int(v) for v in p.a], int(p.group), int(p.clear), int(p.last),
                            Precision(p.precision), int(p.tag)))
            await ctx.tick()
            if not pending and not ctx.get(unit.busy):
                break
        assert not ctx.get(unit.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return got


def test_commands_back_to_back_keep_their_own_operands():
    """Commands started as soon as the unit accepts them (before the previous one's last
    operation), each with its own kernel, stride, padding and precision: every operation is
    its command's, in order, with its command's precision and tag."""
    rng = np.random.default_rng(7)
    for trial in range(4):
        commands, base = [], 0
        for _ in range(4):
            precision = list(Precision)[int(rng.integers(len(Precision)))]
            x, kernel, stride, padding, pad_value = _random_command(rng, precision)
            commands.append((precision, x, kernel, stride, padding, pad_value, base))
            base += 24
        got = run_sequence(commands, seed=trial)
        want, real = [], []
        for n, (precision, x, kernel, stride, padding, pad_value, _) in enumerate(commands):
            words, _, _ = expected_words(x, kernel, stride, padding, pad_value, precision)
            taps, lanes = kernel[0] * kernel[1], precision.lanes
            groups = -(-taps // lanes)
            want += [(list(map(int, row)), k % groups, int(k % groups == 0),
                      int(k % groups == groups - 1), precision, n & 1)
                     for k, row in enumerate(words)]
            # the slots past the kernel's last tap meet weights of zero: their activations
            # are whatever the registers held (the golden model packs zeros)
            width = 16 // lanes
            real += [(1 << (width * min(lanes, taps - (k % groups) * lanes))) - 1
                     for k in range(len(words))]
        assert len(got) == len(want), trial
        for k, (op, ref, mask) in enumerate(zip(got, want, real, strict=True)):
            words = [w & mask for w in op[0]]
            assert (words, *op[1:]) == ([w & mask for w in ref[0]], *ref[1:]), (
                trial, k, [c[2:5] for c in commands])


def test_the_next_command_follows_without_a_gap():
    """Two DS-CNN depthwise tiles (25x5, 3x3, stride 1, padding 1, a8) started back to back
    without back-pressure: the second command's first operation follows the first's last
    within two cycles, the window's fill hidden behind the first command's last outputs."""
    rows = plm_rows(np.zeros((25, 5, LANES), np.int64))
    unit = WindowUnit(lanes=LANES, max_kernel=(3, 3), addr_width=ADDR, fifo_depth=8)
    dut = Harness(unit, rows)
    ops = 25 * 5 * 5
    seen = []

    async def testbench(ctx):
        cmd = dict(base=0, in_h=25, in_w=5, out_h=25, out_w=5, kernel_h=3, kernel_w=3,
                   stride_h=1, stride_w=1, pad_top=1, pad_left=1, pad_value=0,
                   precision=Precision.A8W8, groups=5)
        ctx.set(unit.cmd, cmd)
        ctx.set(unit.o.ready, 1)
        started = 0
        for cycle in range(4 * ops):
            ctx.set(unit.start, int(started < 2 and ctx.get(unit.accept)))
            started += int(started < 2 and ctx.get(unit.accept))
            ctx.set(unit.tag, started & 1)
            if ctx.get(unit.o.valid):
                seen.append(cycle)
            await ctx.tick()
            if len(seen) == 2 * ops:
                break

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert len(seen) == 2 * ops
    assert seen[ops] - seen[ops - 1] <= 2, seen[ops] - seen[ops - 1]
