"""The NVE RTL (``hdl.nve``) in the Amaranth simulator: its units against ``hls_ref.nve`` (the
instruction decoder, the sequencer's pc order, the trace signature) and the core in lockstep
with the instruction-set simulator on small programs. The full regression (both simulators,
random programs, the networks' programs, the host interface) is ``tests/test_cocotb_nve.py``."""

# amaranth: UnusedElaboratable=no

import enum
import os
import random
from itertools import chain, repeat

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hdl.nve.core import SIGNED_FROM, NveCore, retire_layout
from hdl.nve.isa import Error, as_config, legal_word
from hdl.nve.sequencer import Sequencer
from hdl.nve.signature import signature, signature_step
from hls_ref.nve.asm import assemble
from hls_ref.nve.isa import (
    DEFAULT_CONFIG,
    OPS,
    ErrorCode,
    NveError,
    decode,
    instruction_fields,
)
from hls_ref.nve.iss import Retire, run
from sim.nve_programs import DATA, DIRECTED, HAZARDS, PREFIX, partial_sum_jobs, random_program

SEED = int(os.environ.get("TESSERA_SEED", "20261121"))


def _comb(values, build):
    """Evaluate the combinational ``build(input)`` for every value; return the outputs."""
    m = Module()
    x = Signal(64)
    y = build(m, x)
    out = []

    async def tb(ctx):
        for v in values:
            ctx.set(x, v)
            out.append(ctx.get(y))
    sim = Simulator(m)
    sim.add_testbench(tb)
    sim.run()
    return out


def test_legal_word_matches_decode():
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    words = []
    for _ in range(3000):
        word = rng.getrandbits(64)
        for f in instruction_fields():
            if f.name == "op" and rng.random() < 0.9:
                code = rng.randrange(len(OPS[f.slot]))
                word = (word & ~(((1 << f.width) - 1) << f.lsb)) | code << f.lsb
            if f.slot in ("mema", "memb") and f.name != "op" and rng.random() < 0.4:
                word &= ~(((1 << f.width) - 1) << f.lsb)
        words.append(word)

    def build(m, x):
        y = Signal()
        m.d.comb += y.eq(legal_word(x))
        return y

    def decodes(word):
        try:
            decode(word)
            return 1
        except NveError:
            return 0
    expected = [decodes(w) for w in words]
    assert _comb(words, build) == expected
    assert 300 < sum(expected) < 2700


def test_signature_step_matches_the_python_signature():
    rng = random.Random(SEED + 1)
    bits = retire_layout(DEFAULT_CONFIG).size - SIGNED_FROM
    records = [rng.getrandbits(bits) for _ in range(20)]
    m = Module()
    data, h = Signal(bits), Signal(64)
    m.d.sync += h.eq(signature_step(m, h, data))
    got = []

    async def tb(ctx):
        for r in records:
            ctx.set(data, r)
            await ctx.tick()
        got.append(ctx.get(h))
    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    assert got == [signature(records, bits)]


def _pc_order(size, start, end, iterations):
    return list(chain(range(0, start), chain.from_iterable(repeat(range(start, end + 1),
                                                                  iterations)),
                      range(end + 1, size)))


@pytest.mark.parametrize("size, start, end, iterations", [
    (5, 1, 3, 3), (5, 0, 4, 2), (5, 2, 2, 4), (5, 1, 2, 0), (5, 0, 1, 0), (3, 0, 2, 0),
    (4, 0, 0, 1), (6, 5, 5, 3),
])
def test_sequencer_walks_the_program_parts(size, start, end, iterations):
    seq = Sequencer()
    order, first = [], []

    async def tb(ctx):
        for k, value in (("program_size", size), ("loop_start", start), ("loop_end", end),
                         ("iterations", iterations)):
            ctx.set(getattr(seq, k), value)
        await ctx.tick()  # (the settings are stable from the cycle before the start)
        ctx.set(seq.en, 1)
        ctx.set(seq.start, 1)
        await ctx.tick()
        ctx.set(seq.start, 0)
        for _ in range(size * (iterations + 1) + 4):
            await ctx.tick()
            if ctx.get(seq.d_valid):
                order.append(ctx.get(seq.d_pc))
                first.append(ctx.get(seq.d_first))
    sim = Simulator(seq)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    expected = _pc_order(size, start, end, iterations)
    assert order == expected
    seen = set()
    assert first == [not (pc in seen or seen.add(pc)) for pc in expected]


def test_config_must_be_an_nve_config_or_its_fields():
    assert as_config({"local_words": 1024}).local_words == 1024
    with pytest.raises(TypeError, match=r"^config must be an NveConfig or a dict of its "):
        as_config(5)
    with pytest.raises(ValueError, match=r"^local_words must be a positive integer"):
        as_config({"local_words": 0})


# ---- the core against the ISS


def _int(value):
    return value.value if isinstance(value, enum.Enum) else int(value)


def run_core(program, data, *, cycles=4000, ready=None):
    """Run ``program`` (loaded from the stream) on an :class:`NveCore` in the Amaranth
    simulator; return ``(retire records, output words, status)``. ``ready``: the output's
    ready as a function of the cycle (default: always)."""
    core = NveCore(trace=True)
    s = program.settings
    records, words, status = [], [], {}

    async def tb(ctx):
        settings = {"program_size": program.size, "loop_start": s.loop_start,
                    "loop_end": program.loop_end, "iterations": s.iterations,
                    "shift": s.shift, "load": 1}
        for name, value in settings.items():
            ctx.set(getattr(core, name), value)
        for mode in range(1, DEFAULT_CONFIG.agu_modes):
            ctx.set(core.agu_inc[mode - 1], s.pair(mode)[0])
            ctx.set(core.agu_toggle[mode - 1], s.pair(mode)[1])
        lut = [v & 0xFF for v in s.lut]
        for r in range(256):
            ctx.set(core.lut_w_address, r)
            ctx.set(core.lut_w_data, sum(lut[4 * r + k] << (8 * k) for k in range(4)))
            ctx.set(core.lut_w_strobe, 0xF)
            ctx.set(core.lut_w_en, 1)
            await ctx.tick()
        ctx.set(core.lut_w_en, 0)
        ctx.set(core.o_stream.ready, 1)
        ctx.set(core.start, 1)
        await ctx.tick()
        ctx.set(core.start, 0)
        stream = list(program.words) + list(data)
        for cycle in range(cycles):
            accept = 1 if ready is None else ready(cycle)
            ctx.set(core.o_stream.ready, accept)
            ctx.set(core.i_stream.valid, bool(stream))
            if stream:
                ctx.set(core.i_stream.payload, stream[0])
            _, _, taken, beat, beat_valid, retire, done = await ctx.tick().sample(
                core.i_stream.ready, core.o_stream.payload, core.o_stream.valid,
                core.retire, core.done)
            if taken and stream:
                stream.pop(0)
            if beat_valid and accept:
                words.append((beat.data, beat.last))
            if retire.valid:
                records.append(tuple(_int(getattr(retire, f)) for f in Retire._fields))
            if done:
                status.update(error=ErrorCode(ctx.get(core.error).value),
                              pc=ctx.get(core.error_pc), cycle=ctx.get(core.error_cycle),
                              cycles=ctx.get(core.cycles))
                break
        # done rises after the last output beat: nothing is left to send
        for _ in range(4):
            ctx.set(core.o_stream.ready, 1)
            assert not (await ctx.tick().sample(core.o_stream.valid))[-1]
    sim = Simulator(core)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    return records, words, status


def run_core_runs(runs):
    """Run several ``(program, data)`` one after the other on one :class:`NveCore`; return
    each run's status."""
    core = NveCore(trace=True)
    statuses = []

    async def tb(ctx):
        ctx.set(core.o_stream.ready, 1)
        for program, data in runs:
            s = program.settings
            for name, value in (("program_size", program.size), ("loop_start", s.loop_start),
                                ("loop_end", program.loop_end), ("iterations", s.iterations),
                                ("load", 1)):
                ctx.set(getattr(core, name), value)
            ctx.set(core.start, 1)
            await ctx.tick()
            ctx.set(core.start, 0)
            stream = list(program.words) + list(data)
            for _ in range(500):
                ctx.set(core.i_stream.valid, bool(stream))
                if stream:
                    ctx.set(core.i_stream.payload, stream[0])
                taken, done = (await ctx.tick().sample(core.i_stream.ready, core.done))[2:]
                if taken and stream:
                    stream.pop(0)
                if done:
                    statuses.append({"error": ErrorCode(ctx.get(core.error).value),
                                     "cycles": ctx.get(core.cycles)})
                    break
            ctx.set(core.i_stream.valid, 0)
            ctx.set(core.abort, 1)  # drop what the faulting run left in the input
            await ctx.tick()
            ctx.set(core.abort, 0)
    sim = Simulator(core)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    return statuses


def _check_against_iss(program, data, strict=True):
    records, words, status = run_core(program, data)
    try:
        result = run(program, data, strict=strict, retire=True)
    except NveError as error:
        if error.code is ErrorCode.READ_UNWRITTEN:  # not checked by the RTL
            return
        assert [r[1:] for r in records] == [tuple(int(x) for x in r)[1:]
                                           for r in error.retire]
        assert (status["error"], status["pc"], status["cycle"]) == (error.code, error.pc,
                                                                   error.cycle)
        return
    assert records == [tuple(int(x) for x in r) for r in result.retire]
    assert [w for w, _ in words] == list(result.output_words)
    assert [last for _, last in words] == [k == len(words) - 1 for k in range(len(words))]
    assert (status["error"], status["cycles"]) == (ErrorCode.NONE, result.cycles)


@pytest.mark.parametrize("name, text, data, strict", DIRECTED[1:], ids=[d[0] for d in
                                                                         DIRECTED[1:]])
def test_core_runs_the_directed_programs_like_the_iss(name, text, data, strict):
    _check_against_iss(assemble(text, strict=strict), data, strict)


@pytest.mark.parametrize("hazard", [h for h in HAZARDS if h.code not in (
    ErrorCode.INPUT_EXHAUSTED, ErrorCode.READ_UNWRITTEN)][::3], ids=lambda h: h.name)
def test_core_reports_hazards_like_the_iss(hazard):
    _check_against_iss(hazard.program, hazard.data, strict=False)


def test_core_runs_a_random_program_and_partial_sums_like_the_iss():
    rng = random.Random(SEED)
    program, data = random_program(rng, instructions=150)
    _check_against_iss(program, data, strict=False)
    for job in partial_sum_jobs(rng, macs=40):
        _check_against_iss(job.program, job.data)


def test_core_keeps_every_output_word_under_back_pressure():
    # the output is refused for 60 of every 64 cycles: the 9 words the core holds fill up,
    # acts with `out` stall, and the word kept for `last` waits for room in the FIFO
    rng = random.Random(SEED + 2)
    program, data = random_program(rng, instructions=200)
    records, words, status = run_core(program, data, cycles=20000,
                                      ready=lambda cycle: cycle % 64 >= 60)
    result = run(program, data, strict=False, retire=True)
    assert len(result.output_words) > 20
    assert [r[1:] for r in records] == [tuple(int(x) for x in r)[1:] for r in result.retire]
    assert [w for w, _ in words] == list(result.output_words)
    assert [last for _, last in words] == [k == len(words) - 1 for k in range(len(words))]
    assert status["error"] is ErrorCode.NONE and status["cycles"] > result.cycles
    # nine words while nothing is accepted: the FIFO is full when the run ends, and the kept
    # word must wait for room rather than be dropped
    program = assemble(".loop 8 8 20\n" + PREFIX + "sh.w\nmac\nsetrb\nnop\nnop\n" +
                       "act.ps out\n" * 9)
    records, words, status = run_core(program, DATA, ready=lambda cycle: cycle >= 400)
    assert [w for w, _ in words] == list(run(program, DATA).output_words)
    assert [last for _, last in words] == [0] * 8 + [1]


def test_done_follows_the_last_output_word_under_random_back_pressure():
    rng = random.Random(SEED + 3)
    program, data = random_program(rng, instructions=160)
    ready = [rng.random() >= 0.3 for _ in range(10000)]
    _, words, _ = run_core(program, data, cycles=10000, ready=lambda cycle: ready[cycle])
    expected = run(program, data, strict=False).output_words
    assert [w for w, _ in words] == list(expected)
    assert [last for _, last in words][-1:] == [1]


def test_a_run_after_a_fault_starts_clean():
    # a fault is held until the next run's clear; the next run must not see it
    hazard = next(h for h in HAZARDS if h.name == "port_a_conflict")
    good = assemble("wr.a 0\nnop\nrd.a 0\nnop\nset.w\nsetrb\n")
    statuses = run_core_runs([(hazard.program, hazard.data), (good, (7,))])
    assert [s["error"] for s in statuses] == [ErrorCode.PORT_A_CONFLICT, ErrorCode.NONE]
    assert statuses[1]["cycles"] == 6


def test_error_shape_is_the_error_codes():
    assert [m.name for m in Error] == [c.name for c in ErrorCode]
