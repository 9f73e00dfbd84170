"""Helpers that drive and sample ``lib.stream`` interfaces in Amaranth async testbenches."""

import random

from amaranth.hdl import ClockDomain, Module, Value
from amaranth.sim import Simulator

__all__ = ["run_streams", "stream_get", "stream_put", "with_sync_domain"]


def with_sync_domain(dut):
    """Return a module holding ``dut`` and a ``sync`` clock domain, so that a purely
    combinational design can be clocked by a testbench."""
    m = Module()
    m.domains.sync = ClockDomain()
    m.submodules.dut = dut
    return m


async def stream_put(ctx, stream, payload, *, rng=None, idle=0.0):
    """Send one ``payload`` (a value of the payload's shape, or its raw bits as an int) on
    ``stream``, first idling for random cycles with probability
    ``idle`` per cycle (``rng`` is a :class:`random.Random`)."""
    rng = rng or random
    while idle and rng.random() < idle:
        await ctx.tick()
    if isinstance(payload, int):
        ctx.set(Value.cast(stream.payload), payload)  # raw bits of a structured payload
    else:
        ctx.set(stream.payload, payload)
    ctx.set(stream.valid, 1)
    await ctx.tick().until(stream.ready)
    ctx.set(stream.valid, 0)


async def stream_get(ctx, stream, *, rng=None, stall=0.0):
    """Receive one payload from ``stream``, holding ``ready`` low for random cycles with
    probability ``stall`` per cycle; return the payload as sampled at the transfer."""
    rng = rng or random
    while stall and rng.random() < stall:
        ctx.set(stream.ready, 0)
        await ctx.tick()
    ctx.set(stream.ready, 1)
    (payload,) = await ctx.tick().sample(stream.payload).until(stream.valid)
    ctx.set(stream.ready, 0)
    return payload


def run_streams(dut, words, count, *, seed, idle=0.3, stall=0.3):
    """Simulate ``dut``: send the raw ``words`` on its ``i`` stream and receive ``count``
    transfers from its ``o`` stream, with random idle and stall cycles drawn from ``seed``;
    return the received payloads as raw integers."""
    rng = random.Random(seed)
    received = []

    async def producer(ctx):
        for word in words:
            await stream_put(ctx, dut.i, int(word), rng=rng, idle=idle)

    async def consumer(ctx):
        for _ in range(count):
            payload = await stream_get(ctx, dut.o, rng=rng, stall=stall)
            # a structured payload samples as a data.Const, a plain one as an int
            received.append(payload.as_value().value if hasattr(payload, "as_value")
                            else payload)

    sim = Simulator(with_sync_domain(dut))
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    return received
