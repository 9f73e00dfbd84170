# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the AXI4-Lite register bank: field semantics, strobes, channel
ordering, back-pressure and concurrency, on the accelerator's map and on a hand-made one."""

import json
import random

import pytest
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hdl.axi import RESP_OKAY, RESP_SLVERR
from hdl.csr import CsrBank, csr_bank, port_name
from hls_ref.config import DEFAULT_CONFIG, ICE40_CONFIG, AcceleratorConfig
from hls_ref.registers import MAGIC, Access, Field, Register, RegisterMap, register_map

#: Cycles to wait for a handshake or a response before failing.
TIMEOUT = 50

DEFAULT_MAP = register_map(DEFAULT_CONFIG)


async def _handshake(ctx, channels, delays):
    """Raise each channel's ``valid`` after its delay (cycles), hold it until accepted.
    ``channels`` are ``(valid, ready)`` pairs."""
    done = [False] * len(channels)
    for cycle in range(TIMEOUT):
        if all(done):
            break
        fire = []
        for (valid, ready), delay, finished in zip(channels, delays, done):
            active = not finished and cycle >= delay
            ctx.set(valid, active)
            fire.append(active and ctx.get(ready))
        await ctx.tick()
        done = [d or f for d, f in zip(done, fire)]
    for valid, _ in channels:
        ctx.set(valid, 0)
    if not all(done):
        raise AssertionError(f"handshake not accepted within {TIMEOUT} cycles")


async def _response(ctx, valid, ready, payload, stall):
    """Wait for ``valid``, keep ``ready`` low for ``stall`` more cycles (the response must stay
    valid and unchanged), accept it and check that it is gone. Return the payload values."""
    for _ in range(TIMEOUT):
        if ctx.get(valid):
            break
        await ctx.tick()
    else:
        raise AssertionError(f"no response within {TIMEOUT} cycles")
    held = [ctx.get(value) for value in payload]
    for _ in range(stall):
        await ctx.tick()
        assert ctx.get(valid), "response withdrawn under back-pressure"
        assert [ctx.get(value) for value in payload] == held, "response changed while held"
    ctx.set(ready, 1)
    await ctx.tick()
    ctx.set(ready, 0)
    assert not ctx.get(valid), "response still valid after it was accepted"
    return held


async def axi_write(ctx, bus, address, data, *, strb=0xF, aw_delay=0, w_delay=0, b_stall=0):
    """Write ``data`` at byte ``address``; the address and data channels become valid after
    ``aw_delay`` and ``w_delay`` cycles. Return ``bresp``."""
    ctx.set(bus.awaddr, address)
    ctx.set(bus.wdata, data)
    ctx.set(bus.wstrb, strb)
    await _handshake(ctx, [(bus.awvalid, bus.awready), (bus.wvalid, bus.wready)],
                     [aw_delay, w_delay])
    (resp,) = await _response(ctx, bus.bvalid, bus.bready, [bus.bresp], b_stall)
    return resp


async def axi_read(ctx, bus, address, *, ar_delay=0, r_stall=0):
    """Read byte ``address``; return ``(rdata, rresp)``."""
    ctx.set(bus.araddr, address)
    await _handshake(ctx, [(bus.arvalid, bus.arready)], [ar_delay])
    data, resp = await _response(ctx, bus.rvalid, bus.rready, [bus.rdata, bus.rresp], r_stall)
    return data, resp


async def read_ok(ctx, bus, address, **kwargs):
    data, resp = await axi_read(ctx, bus, address, **kwargs)
    assert resp == RESP_OKAY, f"read of {address:#x} answered {resp}"
    return data


async def write_ok(ctx, bus, address, data, **kwargs):
    resp = await axi_write(ctx, bus, address, data, **kwargs)
    assert resp == RESP_OKAY, f"write of {address:#x} answered {resp}"


def simulate(dut, *testbenches, watch=()):
    """Run ``testbenches`` together on ``dut``; return, for each signal of ``watch``, its value
    at every clock edge."""
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    traces = []
    for signal in watch:
        trace = []
        traces.append(trace)

        async def monitor(ctx, signal=signal, trace=trace):
            async for _, _, value in ctx.tick().sample(signal):
                trace.append(value)

        sim.add_testbench(monitor, background=True)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    sim.run()
    return traces


def test_factory_takes_json_data():
    params = json.loads(json.dumps({"config": ICE40_CONFIG.as_dict()}))
    bank = csr_bank(**params)
    assert bank.regmap.registers == register_map(ICE40_CONFIG).registers
    assert bank.bus.awaddr.shape().width == bank.regmap.addr_width == 12
    assert len(bank.bus.wdata) == 32

    async def testbench(ctx):
        assert await read_ok(ctx, bank.bus, bank.regmap.offset("PES")) == ICE40_CONFIG.pes

    simulate(bank, testbench)


def test_ports_follow_the_map():
    bank = CsrBank(DEFAULT_MAP)
    expected = {"bus"}
    for register in DEFAULT_MAP:
        for field in register.fields:
            name = port_name(register.name, field.name)
            if field.access is Access.CONST:
                with pytest.raises(ValueError, match=r"is a constant and has no port$"):
                    bank.field_port(register.name, field.name)
                continue
            expected.add(name)
            port = bank.field_port(register.name, field.name)
            assert port is getattr(bank, name)
            assert len(port) == field.width
            flow = bank.signature.members[name].flow
            assert flow == (In if field.access is Access.RO else Out)
            if field.access is Access.W1C:
                expected.add(f"{name}_set")
                assert bank.set_port(register.name, field.name) is getattr(bank, f"{name}_set")
                assert bank.signature.members[f"{name}_set"].flow == In
            if field.access is Access.RW:
                assert port.init == field.reset
    assert set(bank.signature.members) == expected
    assert port_name("STATUS", "done") == "status_done"


def test_lookup_errors():
    bank = CsrBank(DEFAULT_MAP)
    with pytest.raises(KeyError, match=r"no field STATUS\.nope"):
        bank.field_port("STATUS", "nope")
    with pytest.raises(KeyError, match=r"no field NOPE\.value"):
        bank.field_port("NOPE", "value")
    with pytest.raises(ValueError, match=r"^CTRL\.irq_enable is not a W1C field"):
        bank.set_port("CTRL", "irq_enable")
    with pytest.raises(TypeError, match=r"^regmap must be a RegisterMap, not "):
        CsrBank(list(DEFAULT_MAP))
    clash = RegisterMap([Register("A", 0, (
        Field("b", 0, 1, Access.W1C),
        Field("b_set", 1, 1, Access.RO),
    ))])
    with pytest.raises(ValueError, match=r"^port 'a_b_set' of A\.b_set is already used"):
        CsrBank(clash)


def test_reset_values_and_constants():
    dut = CsrBank(DEFAULT_MAP)

    async def testbench(ctx):
        for register in DEFAULT_MAP:
            for field in register.fields:
                if field.access is Access.RO:
                    ctx.set(dut.field_port(register.name, field.name), 0)
        for register in DEFAULT_MAP:
            value = await read_ok(ctx, dut.bus, register.offset)
            assert value == register.reset_value, register.name
        assert await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("ID")) == MAGIC
        version = DEFAULT_MAP.decode("VERSION",
                                     await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("VERSION")))
        assert version == {"minor": 0, "major": 2}
        datapaths = DEFAULT_MAP.decode(
            "DATAPATHS", await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("DATAPATHS")))
        assert datapaths == {"ops": 1 << 1}
        assert await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("PES")) == DEFAULT_CONFIG.pes
        # Writes to constants and read-only fields are accepted and change nothing.
        for name in ("ID", "VERSION", "PES", "ERR_INDEX", "TILES"):
            await write_ok(ctx, dut.bus, DEFAULT_MAP.offset(name), 0xFFFFFFFF)
            value = await read_ok(ctx, dut.bus, DEFAULT_MAP.offset(name))
            assert value == DEFAULT_MAP[name].reset_value, name

    simulate(dut, testbench)


def test_rw_with_strobes():
    dut = CsrBank(DEFAULT_MAP)
    desc_addr = DEFAULT_MAP.offset("DESC_ADDR")
    ctrl = DEFAULT_MAP.offset("CTRL")

    async def testbench(ctx):
        await write_ok(ctx, dut.bus, desc_addr, 0x11223344)
        assert await read_ok(ctx, dut.bus, desc_addr) == 0x11223344
        assert ctx.get(dut.field_port("DESC_ADDR", "value")) == 0x11223344
        await write_ok(ctx, dut.bus, desc_addr, 0xAABBCCDD, strb=0b0101)
        assert await read_ok(ctx, dut.bus, desc_addr) == 0x11BB33DD
        await write_ok(ctx, dut.bus, desc_addr, 0xAABBCCDD, strb=0b1010)
        assert await read_ok(ctx, dut.bus, desc_addr) == 0xAABBCCDD
        await write_ok(ctx, dut.bus, desc_addr, 0x12345678, strb=0)
        assert await read_ok(ctx, dut.bus, desc_addr) == 0xAABBCCDD
        # DESC_COUNT is unaffected by all of this.
        assert await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("DESC_COUNT")) == 0
        # The irq_enable bit is in byte 1 of CTRL: a write without that byte leaves it alone.
        await write_ok(ctx, dut.bus, ctrl, 0x100, strb=0b1101)
        assert ctx.get(dut.field_port("CTRL", "irq_enable")) == 0
        await write_ok(ctx, dut.bus, ctrl, 0xFFFFFFFE)
        assert ctx.get(dut.field_port("CTRL", "irq_enable")) == 1
        assert await read_ok(ctx, dut.bus, ctrl) == 0x100
        # The two low address bits are ignored.
        await write_ok(ctx, dut.bus, desc_addr + 3, 0x0BADF00D)
        assert await read_ok(ctx, dut.bus, desc_addr + 1) == 0x0BADF00D

    simulate(dut, testbench)


def test_w1p_pulses_once():
    dut = CsrBank(DEFAULT_MAP)
    ctrl = DEFAULT_MAP.offset("CTRL")
    marks = []

    async def testbench(ctx):
        await write_ok(ctx, dut.bus, ctrl, 0x1, b_stall=3)
        marks.append(ctx.get(dut.field_port("CTRL", "irq_enable")))
        assert await read_ok(ctx, dut.bus, ctrl) == 0  # start reads 0
        await write_ok(ctx, dut.bus, ctrl, 0x0)  # no pulse
        await write_ok(ctx, dut.bus, ctrl, 0x1, strb=0b1110)  # byte 0 not strobed: no pulse
        await write_ok(ctx, dut.bus, ctrl, 0x101)  # pulse, and irq_enable set
        assert await read_ok(ctx, dut.bus, ctrl) == 0x100
        for _ in range(3):
            await ctx.tick()

    start, bvalid = simulate(dut, testbench,
                             watch=[dut.field_port("CTRL", "start"), dut.bus.bvalid])
    pulses = [cycle for cycle, value in enumerate(start) if value]
    assert len(pulses) == 2
    # Each pulse lasts one cycle and comes with the rising edge of its write response.
    for cycle in pulses:
        assert bvalid[cycle] and not bvalid[cycle - 1]
    assert marks == [0]


def test_w1c_set_and_clear():
    dut = CsrBank(DEFAULT_MAP)
    status = DEFAULT_MAP.offset("STATUS")
    done_set = dut.set_port("STATUS", "done")
    error_set = dut.set_port("STATUS", "error")
    done = dut.field_port("STATUS", "done")

    async def testbench(ctx):
        assert await read_ok(ctx, dut.bus, status) == 0
        # A one-cycle set makes the bit sticky.
        ctx.set(done_set, 1)
        await ctx.tick()
        ctx.set(done_set, 0)
        assert ctx.get(done) == 1
        for _ in range(3):
            await ctx.tick()
        assert await read_ok(ctx, dut.bus, status) == 0b010
        ctx.set(error_set, 1)
        await ctx.tick()
        ctx.set(error_set, 0)
        assert await read_ok(ctx, dut.bus, status) == 0b110
        # Writing 0 clears nothing; writing 1 clears only that bit; unstrobed bytes clear nothing.
        await write_ok(ctx, dut.bus, status, 0)
        assert await read_ok(ctx, dut.bus, status) == 0b110
        await write_ok(ctx, dut.bus, status, 0b100, strb=0b1110)
        assert await read_ok(ctx, dut.bus, status) == 0b110
        await write_ok(ctx, dut.bus, status, 0b100)
        assert await read_ok(ctx, dut.bus, status) == 0b010
        await write_ok(ctx, dut.bus, status, 0xFFFFFFFF)
        assert await read_ok(ctx, dut.bus, status) == 0
        assert ctx.get(done) == 0
        # A set in the cycle the clear lands wins: hold set high through a whole write.
        ctx.set(done_set, 1)
        await write_ok(ctx, dut.bus, status, 0b010)
        ctx.set(done_set, 0)
        assert await read_ok(ctx, dut.bus, status) == 0b010

    simulate(dut, testbench)


def test_w1c_set_in_the_clearing_cycle():
    """The set input is high only in the one cycle the clearing write lands."""
    dut = CsrBank(DEFAULT_MAP)
    status = DEFAULT_MAP.offset("STATUS")
    done_set = dut.set_port("STATUS", "done")
    done = dut.field_port("STATUS", "done")

    async def testbench(ctx):
        ctx.set(done_set, 1)
        await ctx.tick()
        ctx.set(done_set, 0)
        # With both channels valid at once, the write lands on the second edge.
        ctx.set(dut.bus.awaddr, status)
        ctx.set(dut.bus.wdata, 0b010)
        ctx.set(dut.bus.wstrb, 0xF)
        ctx.set(dut.bus.awvalid, 1)
        ctx.set(dut.bus.wvalid, 1)
        await ctx.tick()
        ctx.set(dut.bus.awvalid, 0)
        ctx.set(dut.bus.wvalid, 0)
        ctx.set(done_set, 1)
        await ctx.tick()
        ctx.set(done_set, 0)
        assert ctx.get(dut.bus.bvalid), "the write did not land on the second edge"
        assert ctx.get(done) == 1
        (resp,) = await _response(ctx, dut.bus.bvalid, dut.bus.bready, [dut.bus.bresp], 0)
        assert resp == RESP_OKAY
        # Without the set, the same write clears.
        await write_ok(ctx, dut.bus, status, 0b010)
        assert ctx.get(done) == 0

    simulate(dut, testbench)


def test_ro_reflects_inputs():
    dut = CsrBank(DEFAULT_MAP)

    async def testbench(ctx):
        ctx.set(dut.field_port("STATUS", "busy"), 1)
        ctx.set(dut.field_port("STATUS", "code"), 0x5A)
        ctx.set(dut.field_port("ERR_INDEX", "value"), 0xDEADBEEF)
        ctx.set(dut.field_port("CYCLES_HI", "value"), 0x80000001)
        assert await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("STATUS")) == 0x5A01
        assert await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("ERR_INDEX")) == 0xDEADBEEF
        assert await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("CYCLES_HI")) == 0x80000001
        ctx.set(dut.field_port("STATUS", "busy"), 0)
        assert await read_ok(ctx, dut.bus, DEFAULT_MAP.offset("STATUS")) == 0x5A00

    simulate(dut, testbench)


def test_unmapped_offsets_answer_slverr():
    dut = CsrBank(DEFAULT_MAP)
    mapped = {register.offset for register in DEFAULT_MAP}
    holes = [0x038, 0x03C, 0x058, 0x084, 0xFFC]
    assert not mapped & set(holes)

    async def testbench(ctx):
        for hole in holes:
            assert await axi_write(ctx, dut.bus, hole, 0xFFFFFFFF) == RESP_SLVERR
            assert await axi_read(ctx, dut.bus, hole) == (0, RESP_SLVERR)
        for register in DEFAULT_MAP:
            assert await read_ok(ctx, dut.bus, register.offset) == register.reset_value
        assert await read_ok(ctx, dut.bus, 0x001) == MAGIC

    simulate(dut, testbench)


@pytest.mark.parametrize(("aw_delay", "w_delay"), [(0, 0), (0, 1), (0, 4), (1, 0), (5, 0),
                                                    (2, 2), (3, 7)])
def test_address_and_data_in_any_order(aw_delay, w_delay):
    dut = CsrBank(DEFAULT_MAP)
    offset = DEFAULT_MAP.offset("DESC_COUNT")

    async def testbench(ctx):
        for value in (0x01020304, 0xF0E0D0C0):
            await write_ok(ctx, dut.bus, offset, value, aw_delay=aw_delay, w_delay=w_delay)
            assert await read_ok(ctx, dut.bus, offset, ar_delay=aw_delay) == value

    simulate(dut, testbench)


def test_read_and_write_proceed_concurrently():
    dut = CsrBank(DEFAULT_MAP)
    desc_addr = DEFAULT_MAP.offset("DESC_ADDR")
    desc_count = DEFAULT_MAP.offset("DESC_COUNT")
    events = []

    async def writer(ctx):
        await write_ok(ctx, dut.bus, desc_count, 77)
        # Keep the write response waiting while reads go on.
        await write_ok(ctx, dut.bus, desc_addr, 0x1000, b_stall=12)
        events.append("write done")

    async def reader(ctx):
        for _ in range(4):
            await ctx.tick()
        for _ in range(3):
            assert await read_ok(ctx, dut.bus, desc_count) == 77
            events.append("read done")

    simulate(dut, writer, reader)
    assert events == ["read done"] * 3 + ["write done"]

    # A write and a read issued in the same cycle both complete.
    dut = CsrBank(DEFAULT_MAP)
    results = {}

    async def writer2(ctx):
        results["write"] = await axi_write(ctx, dut.bus, desc_addr, 0x40)

    async def reader2(ctx):
        results["read"] = await axi_read(ctx, dut.bus, DEFAULT_MAP.offset("ID"))

    simulate(dut, writer2, reader2)
    assert results == {"write": RESP_OKAY, "read": (MAGIC, RESP_OKAY)}


def test_new_transactions_wait_for_held_responses():
    """Addresses and data sent while a response is held: each transaction keeps its own
    address, data and response, in order."""
    dut = CsrBank(DEFAULT_MAP)
    desc_addr = DEFAULT_MAP.offset("DESC_ADDR")
    desc_count = DEFAULT_MAP.offset("DESC_COUNT")
    writes = [(desc_addr, 0x11111111), (desc_count, 0x22222222), (desc_addr, 0x33333333),
              (0x0FC, 0x44444444)]
    reads = [DEFAULT_MAP.offset("ID"), DEFAULT_MAP.offset("PES"), 0x0FC,
             DEFAULT_MAP.offset("MAX_WIDTH")]
    bresps, rresps = [], []

    async def write_requests(ctx):
        for address, data in writes:
            ctx.set(dut.bus.awaddr, address)
            ctx.set(dut.bus.wdata, data)
            ctx.set(dut.bus.wstrb, 0xF)
            await _handshake(ctx, [(dut.bus.awvalid, dut.bus.awready),
                                   (dut.bus.wvalid, dut.bus.wready)], [0, 0])

    async def write_responses(ctx):
        for _ in writes:
            bresps.append(*await _response(ctx, dut.bus.bvalid, dut.bus.bready,
                                           [dut.bus.bresp], stall=8))
        assert ctx.get(dut.field_port("DESC_ADDR", "value")) == 0x33333333
        assert ctx.get(dut.field_port("DESC_COUNT", "value")) == 0x22222222

    async def read_requests(ctx):
        for address in reads:
            ctx.set(dut.bus.araddr, address)
            await _handshake(ctx, [(dut.bus.arvalid, dut.bus.arready)], [0])

    async def read_responses(ctx):
        for _ in reads:
            rresps.append(tuple(await _response(ctx, dut.bus.rvalid, dut.bus.rready,
                                                [dut.bus.rdata, dut.bus.rresp], stall=6)))

    bvalid, bready = simulate(dut, write_requests, write_responses, read_requests,
                              read_responses, watch=[dut.bus.bvalid, dut.bus.bready])
    assert bresps == [RESP_OKAY] * 3 + [RESP_SLVERR]
    assert sum(v and r for v, r in zip(bvalid, bready)) == len(writes)
    assert rresps == [(MAGIC, RESP_OKAY), (DEFAULT_CONFIG.pes, RESP_OKAY), (0, RESP_SLVERR),
                      (DEFAULT_CONFIG.max_width, RESP_OKAY)]


def test_back_pressure_keeps_every_response():
    """Random delays and stalls: every write gets one response and every read the value the
    model expects; no response is lost or repeated (checked by counting handshakes)."""
    dut = CsrBank(DEFAULT_MAP)
    rng = random.Random(5)
    offsets = [DEFAULT_MAP.offset("DESC_ADDR"), DEFAULT_MAP.offset("DESC_COUNT")]
    count = 40
    model = dict.fromkeys(offsets, 0)

    async def testbench(ctx):
        for _ in range(count):
            offset = rng.choice(offsets)
            value, strb = rng.getrandbits(32), rng.getrandbits(4)
            await write_ok(ctx, dut.bus, offset, value, strb=strb,
                           aw_delay=rng.randrange(4), w_delay=rng.randrange(4),
                           b_stall=rng.choice([0, 0, 1, 5]))
            mask = sum(0xFF << 8 * i for i in range(4) if strb >> i & 1)
            model[offset] = (model[offset] & ~mask) | (value & mask)
            offset = rng.choice(offsets)
            assert await read_ok(ctx, dut.bus, offset, ar_delay=rng.randrange(3),
                                 r_stall=rng.choice([0, 0, 1, 6])) == model[offset]

    bvalid, bready, rvalid, rready = simulate(
        dut, testbench, watch=[dut.bus.bvalid, dut.bus.bready, dut.bus.rvalid, dut.bus.rready])
    assert sum(v and r for v, r in zip(bvalid, bready)) == count
    assert sum(v and r for v, r in zip(rvalid, rready)) == count


def test_other_builds():
    for config in (ICE40_CONFIG, AcceleratorConfig(max_width=512, depthwise={"lanes": 8})):
        regmap = register_map(config)
        dut = csr_bank(config.as_dict())

        async def testbench(ctx, dut=dut, regmap=regmap, config=config):
            for register in regmap:
                assert await read_ok(ctx, dut.bus, register.offset) == register.reset_value
            assert await read_ok(ctx, dut.bus, regmap.offset("PES")) == config.pes
            assert await read_ok(ctx, dut.bus, regmap.offset("MAX_WIDTH")) == config.max_width

        simulate(dut, testbench)
    assert ICE40_CONFIG.pes == 4 and ICE40_CONFIG.max_width == 256


def small_map():
    """A hand-made 16-byte map: fields that straddle bytes, multi-bit W1C and W1P fields."""
    return RegisterMap([
        Register("INFO", 0x0, (
            Field("tag", 0, 4, Access.CONST, value=0xA),
            Field("limit", 4, 12, Access.RW, reset=0x123),
            Field("mode", 30, 2, Access.RW, reset=2),
        )),
        Register("EVENTS", 0x4, (
            Field("flags", 5, 6, Access.W1C),
            Field("kick", 14, 4, Access.W1P),
            Field("level", 24, 8, Access.RO),
        )),
        Register("SCRATCH", 0xC, (Field("value", 0, 32, Access.RW, reset=0xCAFE0000),)),
    ], addr_width=4)


def test_custom_register_map():
    regmap = small_map()
    dut = CsrBank(regmap)
    assert set(dut.signature.members) == {
        "bus", "info_limit", "info_mode", "events_flags", "events_flags_set", "events_kick",
        "events_level", "scratch_value"}
    assert len(dut.bus.awaddr) == 4
    flags = dut.field_port("EVENTS", "flags")
    flags_set = dut.set_port("EVENTS", "flags")

    async def testbench(ctx):
        assert await read_ok(ctx, dut.bus, 0x0) == (2 << 30) | (0x123 << 4) | 0xA
        assert await read_ok(ctx, dut.bus, 0xC) == 0xCAFE0000
        # limit spans bytes 0 and 1: strobing byte 1 only writes its top 8 bits.
        await write_ok(ctx, dut.bus, 0x0, 0xFFFF_FFFF, strb=0b0010)
        assert ctx.get(dut.field_port("INFO", "limit")) == 0xFF3
        assert ctx.get(dut.field_port("INFO", "mode")) == 2
        await write_ok(ctx, dut.bus, 0x0, 0x4000_0000, strb=0b1000)
        assert await read_ok(ctx, dut.bus, 0x0) == (1 << 30) | (0xFF3 << 4) | 0xA
        # W1C, several bits: set some, clear some.
        ctx.set(dut.field_port("EVENTS", "level"), 0x99)
        ctx.set(flags_set, 0b101101)
        await ctx.tick()
        ctx.set(flags_set, 0)
        assert await read_ok(ctx, dut.bus, 0x4) == (0x99 << 24) | (0b101101 << 5)
        await write_ok(ctx, dut.bus, 0x4, 0b001100 << 5)
        assert ctx.get(flags) == 0b100001
        # flags bits 3..5 are in byte 1 (bits 8..10): not strobed, not cleared.
        await write_ok(ctx, dut.bus, 0x4, 0b111111 << 5, strb=0b0001)
        assert ctx.get(flags) == 0b100000
        # W1P, several bits, across bytes 1 and 2.
        await write_ok(ctx, dut.bus, 0x4, 0b1001 << 14)
        await write_ok(ctx, dut.bus, 0x4, 0b1111 << 14, strb=0b0100)
        assert await read_ok(ctx, dut.bus, 0x4) == (0x99 << 24) | (0b100000 << 5)
        # Offset 8 has no register.
        assert await axi_write(ctx, dut.bus, 0x8, 1) == RESP_SLVERR
        assert await axi_read(ctx, dut.bus, 0x8) == (0, RESP_SLVERR)
        await write_ok(ctx, dut.bus, 0xC, 0x12345678, strb=0b0011)
        assert await read_ok(ctx, dut.bus, 0xF) == 0xCAFE5678

    (kick,) = simulate(dut, testbench, watch=[dut.field_port("EVENTS", "kick")])
    assert [value for value in kick if value] == [0b1001, 0b1100]
