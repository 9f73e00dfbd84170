# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the socket's parts: the list sequencer against a scripted
datapath (fetches, verdicts, stops, the status it ends a list with), the read tracker and the
performance counters. The whole socket with its conv2d datapath is checked against the golden
model in ``tests/cocotb/tb_conv2d.py``."""

import pytest
from amaranth.sim import Simulator

from hdl.socket.counters import PerformanceCounters
from hdl.socket.reads import ReadTracker
from hdl.socket.sequencer import ListSequencer
from hdl.socket.signature import DatapathSignature
from hls_ref.descriptor import ErrorCode


def _run(dut, bench, cycles=2000):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run_until(cycles * 1e-6)


async def _start(ctx, dut, addr, count):
    ctx.set(dut.desc_addr, addr)
    ctx.set(dut.desc_count, count)
    ctx.set(dut.start, 1)
    await ctx.tick()
    ctx.set(dut.start, 0)


async def _until_end(ctx, dut, limit=200):
    """Ticks until ``done_set`` or ``error_set``; returns which, with code and index."""
    for _ in range(limit):
        await ctx.delay(1e-9)
        if ctx.get(dut.done_set) or ctx.get(dut.error_set):
            done, error = ctx.get(dut.done_set), ctx.get(dut.error_set)
            await ctx.tick()
            return done, error, ctx.get(dut.code), ctx.get(dut.index), ctx.get(dut.progress)
        await ctx.tick()
    raise AssertionError("the list did not end")


@pytest.mark.parametrize("count", [0, 1, 3])
def test_sequencer_runs_a_list(count):
    dut = ListSequencer()
    fetched, ended = [], []

    async def bench(ctx):
        given = []
        ctx.set(dut.fetch.ready, 1)
        ctx.set(dut.reads_idle, 1)
        await _start(ctx, dut, 0x1000, count)
        assert ctx.get(dut.running)
        for _ in range(count):
            await ctx.tick().until(dut.fetch.valid)
            fetched.append(ctx.get(dut.fetch.payload))
            await datapath_step(ctx, dut, given)
        ended.append(await _until_end(ctx, dut))
        assert not ctx.get(dut.running)
        assert given == list(range(count))

    async def datapath_step(ctx, dut, given):
        await ctx.tick().until(dut.dispatch.valid)
        given.append(ctx.get(dut.dispatch.payload.index))
        ctx.set(dut.verdict.accepted, 1)
        ctx.set(dut.dispatch.ready, 1)
        ctx.set(dut.retire, 1)
        await ctx.tick()
        ctx.set(dut.dispatch.ready, 0)
        ctx.set(dut.retire, 0)

    _run(dut, bench)
    assert fetched == [0x1000 + 64 * i for i in range(count)]
    assert ended == [(1, 0, 0, 0, count)]


def test_sequencer_refuses_an_unaligned_list_and_a_failed_fetch():
    dut = ListSequencer()
    ended = []

    async def bench(ctx):
        ctx.set(dut.reads_idle, 1)
        ctx.set(dut.fetch.ready, 1)
        await _start(ctx, dut, 0x1020, 4)
        ended.append(await _until_end(ctx, dut))
        assert not ctx.get(dut.fetch.valid)
        # a fetch whose read fails: AXI_READ at index 0, and the error flag is cleared
        await _start(ctx, dut, 0x1000, 4)
        await ctx.tick().until(dut.fetch.valid)
        ctx.set(dut.read_error, 1)
        for _ in range(4):
            await ctx.delay(1e-9)
            if ctx.get(dut.read_error_clear):
                break
            await ctx.tick()
        else:
            raise AssertionError("the read error was not cleared")
        await ctx.tick()
        ctx.set(dut.read_error, 0)
        ended.append(await _until_end(ctx, dut))

    _run(dut, bench)
    assert ended == [(0, 1, ErrorCode.BAD_DESC_ADDR, 0, 0), (0, 1, ErrorCode.AXI_READ, 0, 0)]


def test_sequencer_stops_on_a_refused_descriptor_once_drained():
    dut = ListSequencer()
    ended = []

    async def bench(ctx):
        ctx.set(dut.reads_idle, 1)
        ctx.set(dut.fetch.ready, 1)
        await _start(ctx, dut, 0x0, 5)
        for verdict in ((1, 0), (1, 0), (0, ErrorCode.BAD_KERNEL)):
            await ctx.tick().until(dut.dispatch.valid)
            ctx.set(dut.verdict.accepted, verdict[0])
            ctx.set(dut.verdict.code, verdict[1])
            ctx.set(dut.dispatch.ready, 1)
            await ctx.tick()
            ctx.set(dut.dispatch.ready, 0)
        # two commands still in the pipeline: no end until they retire
        ctx.set(dut.pipeline_busy, 1)
        await ctx.tick().repeat(10)
        assert ctx.get(dut.running) and not ctx.get(dut.fetch.valid)
        for _ in range(2):
            ctx.set(dut.retire, 1)
            await ctx.tick()
        ctx.set(dut.retire, 0)
        ctx.set(dut.pipeline_busy, 0)
        ended.append(await _until_end(ctx, dut))

    _run(dut, bench)
    assert ended == [(0, 1, ErrorCode.BAD_KERNEL, 2, 2)]


def test_sequencer_write_error_wins_and_stops_fetching():
    dut = ListSequencer()
    ended, aborts = [], []

    async def bench(ctx):
        ctx.set(dut.reads_idle, 1)
        ctx.set(dut.fetch.ready, 1)
        await _start(ctx, dut, 0x0, 9)
        await ctx.tick().until(dut.dispatch.valid)
        ctx.set(dut.verdict.accepted, 1)
        ctx.set(dut.dispatch.ready, 1)
        await ctx.tick()
        ctx.set(dut.dispatch.ready, 0)
        ctx.set(dut.pipeline_busy, 1)
        ctx.set(dut.write_error, 1)
        ctx.set(dut.error_index, 0)
        await ctx.tick()
        ctx.set(dut.write_error, 0)
        assert ctx.get(dut.stop)
        # the datapath lets go of the next descriptor without a code
        await ctx.tick().until(dut.dispatch.valid)
        ctx.set(dut.verdict.accepted, 0)
        ctx.set(dut.verdict.code, 0)
        ctx.set(dut.dispatch.ready, 1)
        await ctx.tick()
        ctx.set(dut.dispatch.ready, 0)
        ctx.set(dut.pipeline_busy, 0)
        for _ in range(20):
            await ctx.delay(1e-9)
            aborts.append(ctx.get(dut.abort))
            if ctx.get(dut.error_set):
                break
            await ctx.tick()
        await ctx.tick()
        ended.append((ctx.get(dut.code), ctx.get(dut.index), ctx.get(dut.stop)))

    _run(dut, bench)
    assert ended == [(ErrorCode.AXI_WRITE, 0, 0)]
    assert aborts[-1] == 1 and sum(aborts) == 1


def test_read_tracker():
    dut = ReadTracker(depth=3)
    seen = []

    async def bench(ctx):
        steps = [dict(issued=1), dict(issued=1), dict(done=1), dict(done=1, error=1),
                 dict(), dict(clear=1, error=1), dict(issued=1, done=1)]
        for step in steps:
            for name in ("issued", "done", "error", "clear"):
                ctx.set(getattr(dut, name), step.get(name, 0))
            await ctx.tick()
            seen.append((ctx.get(dut.idle), ctx.get(dut.failed)))

    _run(dut, bench, 20)
    assert seen == [(0, 0), (0, 0), (0, 0), (1, 1), (1, 1), (1, 0), (1, 0)]


def test_performance_counters():
    """The counts of a list are shown from its end (``capture``, that cycle's counts
    included) until the next list's end: a started list does not change them."""
    dut = PerformanceCounters()
    got = []

    def shown(ctx):
        return (ctx.get(dut.cycles), ctx.get(dut.mac_cycles), ctx.get(dut.bytes_read),
                ctx.get(dut.bytes_written))

    async def bench(ctx):
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        ctx.set(dut.running, 1)
        for strobes in (0xFF, 0x0F, 0x01, 0x00):
            ctx.set(dut.write_beat, strobes != 0)
            ctx.set(dut.write_strobes, strobes)
            ctx.set(dut.read_beat, 1)
            ctx.set(dut.mac, strobes & 1)
            await ctx.tick()
        ctx.set(dut.write_beat, 0)
        ctx.set(dut.read_beat, 0)
        ctx.set(dut.mac, 0)
        await ctx.tick().repeat(2)                   # the byte counts arrive two cycles late
        got.append(shown(ctx))                       # nothing shown before a list ends
        ctx.set(dut.capture, 1)                      # the list's last cycle
        await ctx.tick()
        ctx.set(dut.capture, 0)
        ctx.set(dut.running, 0)
        got.append(shown(ctx))
        ctx.set(dut.clear, 1)                        # the next list starts
        await ctx.tick()
        ctx.set(dut.clear, 0)
        ctx.set(dut.running, 1)
        ctx.set(dut.read_beat, 1)
        await ctx.tick().repeat(3)
        got.append(shown(ctx))                       # still the first list's
        ctx.set(dut.read_beat, 0)
        ctx.set(dut.capture, 1)
        await ctx.tick()
        ctx.set(dut.capture, 0)
        ctx.set(dut.running, 0)
        await ctx.tick()
        got.append(shown(ctx))

    _run(dut, bench, 40)
    first = (7, 3, 32, 8 + 4 + 1)
    assert got == [(0, 0, 0, 0), first, first, (4, 0, 24, 0)]


def test_datapath_signature_parameters():
    assert DatapathSignature(fields_width=8).fields_width == 8
    with pytest.raises(ValueError, match=r"^fields_width must be a positive integer, not 0$"):
        DatapathSignature(fields_width=0)
