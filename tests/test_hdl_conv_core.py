# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the convolution compute core against the invocation-level
golden model: random tiles in every ST configuration, padding, strides, kernels up to 10x4,
both accumulator modes and banks; one MAC per PE per cycle."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import memory, wiring
from amaranth.sim import Simulator

from hdl.conv_core import ConvCore
from hls_ref import Precision, pack_activations, pack_weights
from hls_ref.formats import QuantBlock
from hls_ref.invocation import Command, ConvAccelerator, Limits


class CoreHarness(wiring.Component):
    """The core with plain memories as its PLMs, filled from ``init``; with the core's
    ``in_latency`` 2 the input memory's read data passes a register, as in a registered
    :class:`hdl.plm.InputPLM`, and with ``acc_latency`` 2 the accumulator memory's, as in the
    accelerator."""

    def __init__(self, core, in_init, w_init, acc_init):
        self.core = core
        self.inits = in_init, w_init, acc_init
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        core = m.submodules.core = self.core
        in_init, w_init, acc_init = self.inits
        for name, port_sig, init in (("in", core.in_rd, in_init), ("w", core.w_rd, w_init),
                                     ("acc", core.acc_rd, acc_init)):
            shape = port_sig.data.shape()
            depth = 1 << len(port_sig.addr)
            mem = memory.Memory(shape=shape, depth=depth, init=[])
            mem.data.init = init
            m.submodules[f"{name}_mem"] = mem
            setattr(self, f"{name}_mem", mem)
            rd = mem.read_port()
            m.d.comb += [rd.addr.eq(port_sig.addr), rd.en.eq(port_sig.en)]
            if (name, 2) in (("in", core.in_latency), ("acc", core.acc_latency)):
                m.d.sync += port_sig.data.eq(rd.data)
            else:
                m.d.comb += port_sig.data.eq(rd.data)
            if name == "acc":
                wr = mem.write_port()
                m.d.comb += [wr.addr.eq(core.acc_wr.addr), wr.data.eq(core.acc_wr.data),
                             wr.en.eq(core.acc_wr.en)]
        return m


def pad_word(value, precision):
    p = precision
    mask = (1 << p.act_bits) - 1
    return sum((value & mask) << (k * p.slot_bits) for k in range(p.lanes))


def run_core(precision, x, w, bias, prev, *, stride, padding, pad_value, acc_flag, banks,
             multiplier="lut", in_latency=1, acc_latency=1, pes=4, in_words=512, w_rows=256,
             acc_rows=128):
    """Simulate one command; returns (accumulators (Ho, Wo, P), cycles from start to done,
    MAC cycles)."""
    p = precision
    in_bank, w_bank, acc_bank = banks
    h, wd, _ = x.shape
    _, kh, kw, _ = w.shape
    top, bottom, left, right = padding
    ho = (h + top + bottom - kh) // stride[0] + 1
    wo = (wd + left + right - kw) // stride[1] + 1
    words = pack_activations(x, p).reshape(-1)
    groups = pack_activations(x, p).shape[-1]
    in_init = [0] * (2 * in_words)
    in_init[in_bank * in_words:in_bank * in_words + len(words)] = [int(v) for v in words]
    wwords = pack_weights(w, p).transpose(1, 2, 3, 0).reshape(-1, pes)
    w_init = [[0] * pes for _ in range(2 * w_rows)]
    for r, row in enumerate(wwords):
        w_init[w_bank * w_rows + r] = [int(v) for v in row]
    acc_init = [[0] * pes for _ in range(2 * acc_rows)]
    flat_prev = prev.reshape(-1, pes)
    for r, row in enumerate(flat_prev):
        acc_init[acc_bank * acc_rows + r] = [int(v) for v in row]
    core = ConvCore(pes=pes, in_words=in_words, w_rows=w_rows, acc_rows=acc_rows,
                    multiplier=multiplier, in_latency=in_latency, acc_latency=acc_latency)
    dut = CoreHarness(core, in_init, w_init, acc_init)
    result = {}

    async def bench(ctx):
        ctx.set(core.cmd, {
            "precision": p, "kernel_h": kh, "kernel_w": kw, "stride_h": stride[0],
            "stride_w": stride[1], "pad_top": top, "pad_left": left, "in_h": h, "in_w": wd,
            "groups": groups, "out_h": ho, "out_w": wo, "pad_word": pad_word(pad_value, p),
            "acc_flag": acc_flag, "in_bank": in_bank, "w_bank": w_bank, "acc_bank": acc_bank})
        ctx.set(core.bias, [int(b) for b in bias])
        ctx.set(core.start, 1)
        await ctx.tick()
        ctx.set(core.start, 0)
        cycles = macs = 1
        while not ctx.get(core.done):
            macs += ctx.get(core.mac)
            await ctx.tick()
            cycles += 1
            assert cycles < 100 * ho * wo * kh * kw * groups + 100
        await ctx.tick()
        assert not ctx.get(core.busy)
        acc = [ctx.get(dut.acc_mem.data[acc_bank * acc_rows + r]) for r in range(ho * wo)]
        result.update(acc=np.array(acc, np.int64).reshape(ho, wo, pes), cycles=cycles,
                      macs=macs - 1)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return result["acc"], result["cycles"], result["macs"]


def golden(precision, x, w, bias, prev, *, stride, padding, pad_value, acc_flag):
    engine = ConvAccelerator(Limits(pes=w.shape[0], plm_in=1 << 20, plm_w=1 << 20,
                                    plm_acc=1 << 20))
    zeros = np.zeros(w.shape[0], np.int64)
    qblock = QuantBlock(0, -128, 127, np.asarray(bias), zeros, zeros)
    if acc_flag:
        engine.acc = prev
    cmd = Command(precision, 8, w.shape[1:3], stride, padding, pad_value, acc_flag=bool(acc_flag),
                  q_flag=False)
    engine.invoke(cmd, x, w, qblock)
    return engine.acc


CASES = [
    # precision, (h, w, c), kernel, stride, padding
    (Precision.A8W8, (5, 6, 4), (3, 3), (1, 1), (1, 1, 1, 1)),
    (Precision.A16W16, (4, 5, 3), (2, 3), (2, 1), (1, 0, 2, 1)),
    (Precision.A16W8, (6, 4, 2), (1, 1), (1, 2), (0, 0, 0, 0)),
    (Precision.A8W4, (7, 5, 5), (3, 2), (2, 2), (2, 1, 0, 1)),
    (Precision.A4W4, (6, 6, 7), (3, 3), (1, 1), (0, 2, 2, 0)),
    (Precision.A8W8, (12, 6, 2), (10, 4), (1, 1), (4, 5, 1, 2)),     # DS-CNN's 10x4
    # loops of one iteration: one group, a one-column kernel, a single output pixel or row
    (Precision.A4W4, (3, 1, 3), (3, 1), (1, 1), (0, 0, 0, 0)),
    (Precision.A16W16, (1, 1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
    (Precision.A8W8, (1, 5, 2), (1, 2), (1, 1), (0, 0, 0, 1)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("acc_flag", [0, 1])
def test_core_matches_golden(case, acc_flag):
    precision, shape, kernel, stride, padding = CASES[case]
    p = precision
    rng = np.random.default_rng([case, acc_flag])
    pes = 4
    x = rng.integers(-(1 << (p.act_bits - 1)), 1 << (p.act_bits - 1), shape)
    w = rng.integers(-(1 << (p.weight_bits - 1)), 1 << (p.weight_bits - 1),
                     (pes, *kernel, shape[2]))
    bias = rng.integers(-1 << 20, 1 << 20, pes)
    pad_value = int(rng.integers(-(1 << (p.act_bits - 1)), 1 << (p.act_bits - 1)))
    ho = (shape[0] + padding[0] + padding[1] - kernel[0]) // stride[0] + 1
    wo = (shape[1] + padding[2] + padding[3] - kernel[1]) // stride[1] + 1
    prev = rng.integers(-1 << 24, 1 << 24, (ho, wo, pes))
    banks = tuple(int(b) for b in rng.integers(0, 2, 3))
    kw = dict(stride=stride, padding=padding, pad_value=pad_value, acc_flag=acc_flag)
    # the three multiplier builds take turns, so each runs several cases
    multiplier = ("lut", "dsp4", "dsp2")[(2 * case + acc_flag) % 3]
    in_latency = 1 + case % 2          # a plain and a registered input PLM
    acc_latency = 1 + (case // 2) % 2  # a plain and a registered accumulator PLM
    got, cycles, macs = run_core(p, x, w, bias, prev, banks=banks, multiplier=multiplier,
                                 in_latency=in_latency, acc_latency=acc_latency, **kw)
    want = golden(p, x, w, bias, prev, **kw)
    np.testing.assert_array_equal(got, want)
    groups = -(-shape[2] // p.lanes)
    assert macs == ho * wo * kernel[0] * kernel[1] * groups
    # one MAC per cycle, plus a fixed latency: 4 setup cycles, the PLM read, the operand
    # register, the PE row's input stage, the multipliers' stages and the accumulate stages'
    # read (``acc_latency``), register and write
    assert cycles == macs + 10 + in_latency + acc_latency
