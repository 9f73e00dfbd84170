# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the FC weight rows (``hdl.fc.weights``): the beats of
``hls_ref.formats.fc_stream_blob`` become, row after row, ST ``B`` words that multiply like
``hls_ref.st.pack_weights``'s, commands of different precisions back to back, with random
pauses on both sides."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from hdl.fc.weights import WeightRows
from hls_ref import Precision
from hls_ref.formats import FCRows, fc_stream_blob
from hls_ref.st import pack_activations, pack_weights, st_product
from sim.streams import stream_get, stream_put, with_sync_domain


def run(units, commands, *, seed, idle, stall):
    """``commands``: list of (narrow, beats, rows); returns the rows received (lists of
    ``units`` words) in order."""
    dut = WeightRows(units=units)
    rng = random.Random(seed)
    total = sum(rows for _, _, rows in commands)
    got = []

    async def announce(ctx):
        for narrow, _, rows in commands:
            await stream_put(ctx, dut.cmd, {"narrow": narrow, "rows": rows})

    async def producer(ctx):
        for _, beats, _ in commands:
            for beat in beats:
                await stream_put(ctx, dut.beats, int(beat), rng=rng, idle=idle)

    async def consumer(ctx):
        for _ in range(total):
            payload = await stream_get(ctx, dut.rows, rng=rng, stall=stall)
            got.append([int(w) for w in payload])

    sim = Simulator(with_sync_domain(dut))
    sim.add_clock(1e-8)
    for bench in (announce, producer, consumer):
        sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("pes, st_units", [(4, 2), (8, 1), (2, 4), (8, 2)])
def test_rows_multiply_like_st_words(pes, st_units):
    rng = np.random.default_rng(pes * 10 + st_units)
    commands, expected = [], []
    for precision in [*Precision, Precision.A8W4, Precision.A8W8]:
        p = precision
        outputs, inputs = int(rng.integers(1, 2 * pes + 1)), int(rng.integers(1, 30))
        w = rng.integers(-(1 << (p.weight_bits - 1)), 1 << (p.weight_bits - 1),
                         (outputs, inputs))
        rows = FCRows(p, pes, st_units, inputs, outputs)
        commands.append((int(rows.unit_bits == 8), fc_stream_blob(w, p, pes, st_units),
                         rows.blocks * rows.steps))
        padded = np.zeros((rows.blocks * pes, rows.steps * rows.step_inputs), np.int64)
        padded[:outputs, :inputs] = w
        # a random activation for every ST word: the product is what the row must give
        x = rng.integers(-(1 << (p.act_bits - 1)), 1 << (p.act_bits - 1), padded.shape[1])
        a = pack_activations(x, p)
        want = st_product(a[None], pack_weights(padded, p), p)            # (O, steps * U)
        for block in range(rows.blocks):
            for step in range(rows.steps):
                cols = slice(step * st_units, (step + 1) * st_units)
                expected.append((p, a[cols], want[block * pes:(block + 1) * pes, cols]))
    got = run(pes * st_units, commands, seed=pes, idle=0.3, stall=0.3)
    assert len(got) == len(expected)
    for words, (p, a, want) in zip(got, expected):
        b = np.array(words, np.int64).reshape(pes, st_units)
        np.testing.assert_array_equal(st_product(a[None], b, p), want, err_msg=p.label)


def test_one_beat_per_cycle():
    """With a consumer that is always ready, rows of one beat leave one per cycle and rows of
    two beats one every other cycle: the stream is never held up."""
    dut = WeightRows(units=8)
    beats = list(range(1, 41))
    seen = []

    async def bench(ctx):
        ctx.set(dut.cmd.payload.narrow, 1)
        ctx.set(dut.cmd.payload.rows, 20)
        ctx.set(dut.cmd.valid, 1)
        await ctx.tick()
        ctx.set(dut.cmd.payload.narrow, 0)
        ctx.set(dut.cmd.payload.rows, 10)
        await ctx.tick()
        ctx.set(dut.cmd.valid, 0)
        ctx.set(dut.rows.ready, 1)
        ctx.set(dut.beats.valid, 1)
        taken = 0
        for cycle in range(60):
            ctx.set(dut.beats.payload, beats[min(taken, len(beats) - 1)])
            ctx.set(dut.beats.valid, taken < len(beats))
            _, _, ready, valid = await ctx.tick().sample(dut.beats.ready, dut.rows.valid)
            if ready and taken < len(beats):
                taken += 1
            if valid:
                seen.append(cycle)
        assert taken == len(beats)

    sim = Simulator(with_sync_domain(dut))
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert len(seen) == 30
    gaps = np.diff(seen)
    assert set(gaps[:19]) == {1} and set(gaps[20:]) == {2}, seen
