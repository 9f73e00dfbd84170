"""The accelerators' clock-domain crossings (``hdl/soc/clock_crossing.py``) in the Amaranth
simulator: two clocks of unrelated periods, random back-pressure and random gaps on both sides
of every channel, every beat's payload compared bit for bit; the interrupt's level; the SoC's
choice of crossing by ``SocConfig.accel_clock_hz``."""

import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.lib.wiring import Out
from amaranth.sim import Simulator

from hdl.axi import AXI4LiteSignature, AXI4Signature
from hdl.soc.clock_crossing import AxiLiteCrossing, AxiManagerCrossing, IrqCrossing
from hls_ref.config import DEFAULT_SOC, SocConfig

#: (sync period, accel period), seconds: the accelerator's clock faster (the board: 50 and
#: 75 MHz, here not a ratio of small integers) and slower.
PERIODS = [(20e-9, 13.1e-9), (10e-9, 23.7e-9)]

def _channels(signature):
    """``{prefix: (payload members, manager to subordinate)}`` of an AXI signature, read from
    its members (not from the crossing's own table, so a member the crossing leaves out fails
    the tests below)."""
    members = signature.members
    channels = {}
    for name, member in members.items():
        if name.endswith("valid"):
            prefix = name[:-len("valid")]
            fields = tuple(n for n in members if n.startswith(prefix)
                           and n not in (f"{prefix}valid", f"{prefix}ready"))
            channels[prefix] = (fields, member.flow == Out)
    return channels


def _top(crossing):
    m = Module()
    m.domains.sync = ClockDomain("sync")
    m.domains.accel = ClockDomain("accel")
    m.submodules.dut = crossing
    return m


async def _send(ctx, domain, port, prefix, fields, beats, rng, gap):
    valid, ready = getattr(port, f"{prefix}valid"), getattr(port, f"{prefix}ready")
    for beat in beats:
        while rng.random() < gap:
            await ctx.tick(domain)
        for name, value in zip(fields, beat):
            ctx.set(getattr(port, name), value)
        ctx.set(valid, 1)
        while True:
            _, _, accepted = await ctx.tick(domain).sample(ready)
            if accepted:
                break
        ctx.set(valid, 0)


async def _receive(ctx, domain, port, prefix, fields, count, rng, stall, got):
    valid, ready = getattr(port, f"{prefix}valid"), getattr(port, f"{prefix}ready")
    signals = [getattr(port, name) for name in fields]
    while len(got) < count:
        take = rng.random() >= stall
        ctx.set(ready, take)
        _, _, shown, *values = await ctx.tick(domain).sample(valid, *signals)
        if take and shown:
            got.append(tuple(values))
    ctx.set(ready, 0)


def _exchange(crossing, channels, manager_domain, subordinate_domain, periods, seed,
              count=60):
    """Random beats on every channel of ``crossing``, from the side that sends it; returns
    ``{channel: (sent, received)}``."""
    sync_period, accel_period = periods
    rng = random.Random(seed)
    sim = Simulator(_top(crossing))
    sim.add_clock(sync_period, domain="sync")
    sim.add_clock(accel_period, domain="accel")
    results = {}
    for prefix, (fields, forward) in channels.items():
        source = crossing.manager if forward else crossing.subordinate
        sink = crossing.subordinate if forward else crossing.manager
        source_domain = manager_domain if forward else subordinate_domain
        sink_domain = subordinate_domain if forward else manager_domain
        widths = [len(getattr(source, name)) for name in fields]
        beats = [tuple(rng.getrandbits(w) for w in widths) for _ in range(count)]
        got = []
        results[prefix] = (beats, got)
        gap, stall = rng.choice([(0.0, 0.0), (0.3, 0.5), (0.6, 0.2)]), rng.random() * 0.6
        send_rng, receive_rng = random.Random(rng.random()), random.Random(rng.random())

        async def sender(ctx, source=source, source_domain=source_domain, prefix=prefix,
                         fields=fields, beats=beats, send_rng=send_rng, gap=gap[0]):
            await _send(ctx, source_domain, source, prefix, fields, beats, send_rng, gap)

        async def receiver(ctx, sink=sink, sink_domain=sink_domain, prefix=prefix,
                           fields=fields, got=got, receive_rng=receive_rng, stall=stall):
            await _receive(ctx, sink_domain, sink, prefix, fields, count, receive_rng, stall,
                           got)

        sim.add_testbench(sender)
        sim.add_testbench(receiver)
    sim.run_until(count * 40 * max(periods))
    return results


@pytest.mark.parametrize("periods", PERIODS)
def test_axi4_manager_crossing_carries_every_beat_bit_exact(periods):
    signature = AXI4Signature(addr_width=32, data_width=64, id_width=2)
    crossing = AxiManagerCrossing(signature)
    results = _exchange(crossing, _channels(signature), "accel", "sync", periods,
                        seed=int(periods[1] * 1e10))
    for channel, (sent, got) in results.items():
        assert got == sent, channel


@pytest.mark.parametrize("periods", PERIODS)
def test_axi4_lite_crossing_carries_every_beat_bit_exact(periods):
    signature = AXI4LiteSignature(addr_width=12, data_width=32)
    crossing = AxiLiteCrossing(signature)
    results = _exchange(crossing, _channels(signature), "sync", "accel", periods,
                        seed=int(periods[0] * 1e10))
    for channel, (sent, got) in results.items():
        assert got == sent, channel


def test_a_full_channel_holds_the_sender_and_loses_nothing():
    """A receiver that takes nothing for a while: the sender sees ``ready`` fall once the FIFO
    is full (its depth), and every beat arrives afterwards in order."""
    crossing = AxiManagerCrossing(AXI4Signature(addr_width=32, data_width=64, id_width=1))
    sim = Simulator(_top(crossing))
    sim.add_clock(13.1e-9, domain="accel")
    sim.add_clock(20e-9, domain="sync")
    accepted = []
    got = []

    async def sender(ctx):
        port = crossing.manager
        for k in range(20):
            ctx.set(port.wdata, 0x0123_4567_89AB_0000 + k)
            ctx.set(port.wvalid, 1)
            while True:
                _, _, ready = await ctx.tick("accel").sample(port.wready)
                if ready:
                    accepted.append(k)
                    break
        ctx.set(port.wvalid, 0)

    async def receiver(ctx):
        port = crossing.subordinate
        await ctx.tick("sync").repeat(40)
        assert len(accepted) == 8          # the W channel's depth
        ctx.set(port.wready, 1)
        while len(got) < 20:
            _, _, valid, data = await ctx.tick("sync").sample(port.wvalid, port.wdata)
            if valid:
                got.append(data - 0x0123_4567_89AB_0000)

    sim.add_testbench(sender)
    sim.add_testbench(receiver)
    sim.run_until(3e-6)
    assert got == list(range(20))


def test_the_interrupt_level_crosses_in_both_directions():
    irq = IrqCrossing()
    sim = Simulator(_top(irq))
    sim.add_clock(13.1e-9, domain="accel")
    sim.add_clock(20e-9, domain="sync")
    seen = []

    async def bench(ctx):
        for level in (1, 0, 1, 0):
            ctx.set(irq.i, level)
            await ctx.tick("accel")
            for cycle in range(6):
                _, _, out = await ctx.tick("sync").sample(irq.o)
                if out == level:
                    seen.append(cycle)
                    break

    sim.add_testbench(bench)
    sim.run_until(2e-6)
    assert len(seen) == 4 and all(cycle <= 3 for cycle in seen)


def test_the_soc_config_selects_the_crossing():
    """The default SoC keeps one clock (and its configuration's dictionary, which the
    simulators' digests cover); the board level runs through the crossing in the slow tier
    (``tests/test_sw_board.py``)."""
    assert DEFAULT_SOC.accel_clock_hz == 0
    assert "accel_clock_hz" not in DEFAULT_SOC.as_dict()
    config = SocConfig(accel_clock_hz=75_000_000)
    assert SocConfig.from_dict(config.as_dict()) == config
    for bad in (-1, 2.5, "fast", True, False):
        with pytest.raises(ValueError, match="accel_clock_hz must be a positive integer"):
            SocConfig(accel_clock_hz=bad)
