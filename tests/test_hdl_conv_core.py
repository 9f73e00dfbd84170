# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the convolution compute core against the invocation-level
golden model: random tiles in every ST configuration, padding, strides, kernels up to 10x4,
both accumulator modes and banks; one MAC per PE per cycle."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import memory, wiring
from amaranth.sim import Simulator

from hdl.conv_core import ConvCore, core_command
from hls_ref import Precision, pack_activations, pack_weights
from hls_ref.formats import QuantBlock
from hls_ref.invocation import Command, ConvAccelerator, Limits


class CoreHarness(wiring.Component):
    """The core with plain memories as its PLMs, filled from ``init``; with the core's
    ``in_latency`` 2 the input memory's read data passes a register, as in a registered
    :class:`hdl.plm.InputPLM`, with ``w_latency`` 2 the weight memory's, as in the weight PLM
    with its output register, and with ``acc_latency`` 2 the accumulator memory's, as in the
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
            if (name, 2) in (("in", core.in_latency), ("w", core.w_latency),
                             ("acc", core.acc_latency)):
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
             multiplier="lut", in_latency=1, w_stages=None, w_latency=1, acc_latency=1, pes=4,
             in_words=512, w_rows=256, acc_rows=128):
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
                    multiplier=multiplier, in_latency=in_latency, w_stages=w_stages,
                    w_latency=w_latency, acc_latency=acc_latency)
    dut = CoreHarness(core, in_init, w_init, acc_init)
    result = {}

    async def bench(ctx):
        ctx.set(core.cmd.payload, core_command(
            in_words=in_words, acc_rows=acc_rows,
            precision=p, kernel_h=kh, kernel_w=kw, stride_h=stride[0], stride_w=stride[1],
            pad_top=top, pad_left=left, in_h=h, in_w=wd, groups=groups, out_h=ho, out_w=wo,
            pad_word=pad_word(pad_value, p), acc_flag=acc_flag, in_bank=in_bank,
            w_bank=w_bank, acc_bank=acc_bank))
        # the other operand bank's bias must not be used
        biases = [[int(b) for b in bias], [int(b) + 12345 for b in bias]]
        ctx.set(core.bias, biases if in_bank == 0 else biases[::-1])
        ctx.set(core.cmd.valid, 1)
        assert ctx.get(core.cmd.ready)
        await ctx.tick()
        ctx.set(core.cmd.valid, 0)
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
    w_stages = max(in_latency - 1, case % 3)   # every allowed (in_latency, w_stages) pair
    # a weight PLM with its own output register provides one of the row's registers
    w_latency = 2 if w_stages and (case // 3) % 2 else 1
    print(f"case {case}: in_latency {in_latency}, w_stages {w_stages}, w_latency {w_latency}")
    got, cycles, macs = run_core(p, x, w, bias, prev, banks=banks, multiplier=multiplier,
                                 in_latency=in_latency, w_stages=w_stages,
                                 w_latency=w_latency, acc_latency=acc_latency, **kw)
    want = golden(p, x, w, bias, prev, **kw)
    np.testing.assert_array_equal(got, want)
    groups = -(-shape[2] // p.lanes)
    assert macs == ho * wo * kernel[0] * kernel[1] * groups
    # one MAC per cycle from the cycle after the command is taken, plus a fixed latency: the
    # PLM read and the weight row's registers (``1 + w_stages``), the operand register, the
    # PE row's input stage, the multipliers' stages and the accumulate stages' read
    # (``acc_latency``), register and write
    assert cycles == macs + 7 + w_stages + acc_latency


def random_commands(rng, count, *, pes, tiny_share=0.3):
    """``count`` random commands for :func:`run_back_to_back`: about a third add to the
    previous command's sums (same output tile, other channels or precision), some are tiny (one
    or two output pixels of one tap)."""
    commands = []
    for index in range(count):
        p = Precision(int(rng.integers(0, len(Precision))))
        if index and rng.random() < 0.35:
            previous = commands[-1]
            shape = (*previous["x"].shape[:2], int(rng.integers(1, 9)))
            kernel, stride, padding = previous["kernel"], previous["stride"], previous["padding"]
            acc_flag = 1
        elif rng.random() < tiny_share:
            shape = (1, int(rng.integers(1, 3)), int(rng.integers(1, 3)))
            kernel, stride, padding, acc_flag = (1, 1), (1, 1), (0, 0, 0, 0), 0
        else:
            kernel = tuple(int(k) for k in rng.integers(1, 4, 2))
            stride = tuple(int(s) for s in rng.integers(1, 3, 2))
            padding = tuple(int(rng.integers(0, kernel[k // 2])) for k in range(4))
            shape = (int(rng.integers(kernel[0], 7)), int(rng.integers(kernel[1], 7)),
                     int(rng.integers(1, 9)))
            acc_flag = 0
        x = rng.integers(-(1 << (p.act_bits - 1)), 1 << (p.act_bits - 1), shape)
        w = rng.integers(-(1 << (p.weight_bits - 1)), 1 << (p.weight_bits - 1),
                         (pes, *kernel, shape[2]))
        pad_value = int(rng.integers(-(1 << (p.act_bits - 1)), 1 << (p.act_bits - 1)))
        commands.append(dict(precision=p, x=x, w=w, kernel=kernel, stride=stride,
                             padding=padding, pad_value=pad_value, acc_flag=acc_flag,
                             acc_bank=commands[-1]["acc_bank"] if acc_flag
                             else int(rng.integers(0, 2))))
    return commands


def out_size(c):
    """A :func:`random_commands` command's output tile, (rows, columns)."""
    (h, wd, _), (kh, kw), (sh, sw) = c["x"].shape, c["kernel"], c["stride"]
    top, bottom, left, right = c["padding"]
    return (h + top + bottom - kh) // sh + 1, (wd + left + right - kw) // sw + 1


def run_back_to_back(commands, *, pes=4, in_words=512, w_rows=256, acc_rows=128,
                     multiplier="lut", in_latency=2, w_stages=None, w_latency=1, acc_latency=2,
                     seed=0):
    """Offer ``commands`` to the core one after the other, each as soon as its operand bank
    (``index % 2``) is free; returns (both accumulator banks, the cycles each command was taken,
    the cycles operands entered the PE row)."""
    rng = np.random.default_rng(seed)
    biases = rng.integers(-1 << 20, 1 << 20, (2, pes))
    core = ConvCore(pes=pes, in_words=in_words, w_rows=w_rows, acc_rows=acc_rows,
                    multiplier=multiplier, in_latency=in_latency, w_stages=w_stages,
                    w_latency=w_latency, acc_latency=acc_latency)
    acc_init = [[int(v) for v in rng.integers(-1 << 24, 1 << 24, pes)]
                for _ in range(2 * acc_rows)]
    dut = CoreHarness(core, [0] * (2 * in_words), [[0] * pes for _ in range(2 * w_rows)],
                      acc_init)
    taken, macs, result = [], [], {}

    def load(ctx, bank, c):
        p = c["precision"]
        words = pack_activations(c["x"], p).reshape(-1)
        for k, word in enumerate(words):
            ctx.set(dut.in_mem.data[bank * in_words + k], int(word))
        rows = pack_weights(c["w"], p).transpose(1, 2, 3, 0).reshape(-1, pes)
        for r, row in enumerate(rows):
            ctx.set(dut.w_mem.data[bank * w_rows + r], [int(v) for v in row])

    def command(bank, c):
        p, (h, wd, _), (kh, kw) = c["precision"], c["x"].shape, c["kernel"]
        top, _, left, _ = c["padding"]
        return core_command(
            in_words=in_words, acc_rows=acc_rows, precision=p, kernel_h=kh, kernel_w=kw,
            stride_h=c["stride"][0], stride_w=c["stride"][1], pad_top=top, pad_left=left,
            in_h=h, in_w=wd, groups=pack_activations(c["x"], p).shape[-1],
            out_h=out_size(c)[0], out_w=out_size(c)[1],
            pad_word=pad_word(c["pad_value"], p), acc_flag=c["acc_flag"], in_bank=bank,
            w_bank=bank, acc_bank=c["acc_bank"])

    async def bench(ctx):
        ctx.set(core.bias, [[int(b) for b in row] for row in biases])
        cycle = done = 0

        async def tick():
            nonlocal cycle, done
            macs.append(ctx.get(core.mac))
            done += ctx.get(core.done)
            await ctx.tick()
            cycle += 1

        for index, c in enumerate(commands):
            bank = index % 2
            # the bank's previous command has read its operands once its successor is taken
            # (and its last reads have returned three cycles later)
            while index >= 2 and cycle < taken[index - 1] + 3:
                await tick()
            load(ctx, bank, c)
            ctx.set(core.cmd.payload, command(bank, c))
            ctx.set(core.cmd.valid, 1)
            while not ctx.get(core.cmd.ready):
                await tick()
                assert cycle < 100_000
            taken.append(cycle)
            await tick()
            ctx.set(core.cmd.valid, 0)
        while ctx.get(core.busy):
            await tick()
        # every command pulsed ``done`` once, none after ``busy`` fell
        assert done == len(commands)
        for _ in range(4):
            await tick()
        assert done == len(commands)
        result["acc"] = [np.array([ctx.get(dut.acc_mem.data[b * acc_rows + r])
                                   for r in range(acc_rows)], np.int64) for b in range(2)]

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # the golden model: each command on the accumulator bank it names
    want = [np.array(acc_init[b * acc_rows:(b + 1) * acc_rows], np.int64) for b in range(2)]
    for index, c in enumerate(commands):
        bank = want[c["acc_bank"]]
        ho, wo = out_size(c)
        prev = bank[:ho * wo].reshape(ho, wo, pes)
        out = golden(c["precision"], c["x"], c["w"], biases[index % 2], prev,
                     stride=c["stride"], padding=c["padding"], pad_value=c["pad_value"],
                     acc_flag=c["acc_flag"])
        bank[:ho * wo] = out.reshape(-1, pes)
    return result["acc"], want, taken, macs


@pytest.mark.parametrize("trial", range(6))
def test_commands_back_to_back_match_golden(trial):
    """Random commands taken as soon as the core accepts them: tiny ones, chains adding to
    their predecessor's sums, both PLM latencies and every multiplier build."""
    rng = np.random.default_rng([7, trial])
    commands = random_commands(rng, 10, pes=4)
    got, want, _, _ = run_back_to_back(
        commands, multiplier=("lut", "dsp4", "dsp2")[trial % 3], in_latency=1 + trial % 2,
        w_stages=2 if trial >= 3 else None, w_latency=2 if trial >= 4 else 1,
        acc_latency=1 + (trial // 2) % 2, seed=trial)
    for bank in range(2):
        np.testing.assert_array_equal(got[bank], want[bank], err_msg=f"trial {trial}")


def test_the_next_command_follows_without_a_gap():
    """Commands of at least 16 operand cycles (a new tile, then two adding to it): the PE row
    receives operands in every cycle from the first command's first to the last one's last."""
    rng = np.random.default_rng(3)
    commands = []
    for acc_flag in (0, 1, 1, 0):
        p = Precision.A8W8
        x = rng.integers(-128, 128, (4, 5, 4))
        w = rng.integers(-128, 128, (4, 3, 3, 4))
        commands.append(dict(precision=p, x=x, w=w, kernel=(3, 3), stride=(1, 1),
                             padding=(1, 1, 1, 1), pad_value=-3, acc_flag=acc_flag,
                             acc_bank=0 if len(commands) < 3 else 1))
    got, want, taken, macs = run_back_to_back(commands)
    for bank in range(2):
        np.testing.assert_array_equal(got[bank], want[bank])
    first = taken[0] + 1
    operand_cycles = 4 * 20 * 9 * 2
    assert macs[first:first + operand_cycles] == [1] * operand_cycles
    assert sum(macs) == operand_cycles


def test_weight_stages_must_cover_the_input_latency():
    """The input word can wait for the weight row, not the other way round."""
    for in_latency, w_stages in ((2, 0), (1, 3), (1, -1)):
        with pytest.raises(ValueError, match="w_stages"):
            ConvCore(in_latency=in_latency, w_stages=w_stages)
    assert ConvCore(in_latency=2).w_stages == 1 and ConvCore(w_stages=2).operand_latency == 3


def test_weight_latency_is_one_of_the_weight_stages():
    """A weight PLM's own register counts among ``w_stages``: a PLM of latency 2 needs at
    least one, and the operands still meet ``1 + w_stages`` cycles after their addresses."""
    for w_stages, w_latency in ((0, 2), (2, 3), (1, 0)):
        with pytest.raises(ValueError, match="w_latency"):
            ConvCore(w_stages=w_stages, w_latency=w_latency)
    assert ConvCore(w_stages=2, w_latency=2).operand_latency == 3


@pytest.mark.parametrize("acc_latency, w_stages", [(1, 0), (2, 0), (2, 2)])
def test_a_chain_of_tiny_commands_adds_to_written_sums(acc_latency, w_stages):
    """Commands of one or two output pixels of one tap, each adding to the previous one's sums
    and offered at once: each must wait until its predecessor's sums are written."""
    rng = np.random.default_rng(acc_latency)
    commands = []
    for index in range(8):
        p = Precision.A8W8
        commands.append(dict(precision=p, x=rng.integers(-128, 128, (1, 1, 2)),
                             w=rng.integers(-128, 128, (4, 1, 1, 2)), kernel=(1, 1),
                             stride=(1, 1), padding=(0, 0, 0, 0), pad_value=0,
                             acc_flag=int(index > 0), acc_bank=1))
    got, want, _, _ = run_back_to_back(commands, acc_latency=acc_latency, in_latency=1,
                                       w_stages=w_stages)
    np.testing.assert_array_equal(got[1], want[1])
