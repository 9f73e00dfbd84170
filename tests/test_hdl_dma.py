# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the DMA reader, writer and combined engine against a behavioural
AXI4 memory (random flow control on every channel, chosen beats answering SLVERR or DECERR),
and of the reference functions against brute force."""

import random
from collections import deque

import pytest
from amaranth.hdl import unsigned
from amaranth.sim import Simulator

from hdl.axi import BOUNDARY_BYTES, BURST_INCR, RESP_DECERR, RESP_OKAY, RESP_SLVERR
from hdl.dma import (
    Dma,
    DmaReader,
    DmaRequest,
    DmaWriter,
    dma_done_layout,
    dma_read_data_layout,
    dma_request_layout,
    segment_beats,
    split_bursts,
)
from sim.streams import stream_get, stream_put

MASK64 = (1 << 64) - 1


def beat_value(beat):
    """Initial contents of memory beat ``beat``: distinct, pseudo-random."""
    return (beat * 0x9E3779B97F4A7C15 + 0x0123456789ABCDEF) & MASK64


def lane_mask(lo, hi):
    return sum(1 << lane for lane in range(lo, hi))


def strobe_bytes(mask):
    return sum(0xFF << (8 * lane) for lane in range(8) if mask >> lane & 1)


# --- Reference functions ---------------------------------------------------------------------

def fewest_bursts(first, beats, max_burst):
    """Brute force: the fewest bursts of at most ``max_burst`` beats, none crossing a 4 KiB
    boundary, that cover ``beats`` beats from ``first`` (dynamic programming over every cut)."""
    page = BOUNDARY_BYTES // 8
    fewest = [0] + [None] * beats          # fewest[n]: bursts covering the first n beats
    for end in range(1, beats + 1):
        for length in range(1, min(end, max_burst) + 1):
            start = first + end - length
            if start // page == (first + end - 1) // page:
                count = fewest[end - length] + 1
                if fewest[end] is None or count < fewest[end]:
                    fewest[end] = count
    return fewest[beats]


@pytest.mark.parametrize("max_burst", [1, 2, 4, 16, 64, 256])
def test_split_bursts_matches_brute_force(max_burst):
    rng = random.Random(max_burst)
    page = BOUNDARY_BYTES // 8
    cases = [(first, beats) for first in (0, 1, page - 1, page - 5, 3 * page - 17)
             for beats in (1, 2, 3, 17, 100, 600)]
    cases += [(rng.randrange(4 * page), rng.randrange(1, 1200)) for _ in range(40)]
    for first, beats in cases:
        bursts = split_bursts(first, beats, max_burst)
        covered = [beat for start, length in bursts for beat in range(start, start + length)]
        assert covered == list(range(first, first + beats))
        for start, length in bursts:
            assert 1 <= length <= max_burst
            assert start // page == (start + length - 1) // page, (start, length)
        assert len(bursts) == fewest_bursts(first, beats, max_burst), (first, beats)


def test_split_bursts_wraps_at_the_top_of_the_address_space():
    # 12-bit addresses: 512 beats, one 4 KiB page.
    assert split_bursts(509, 6, 16, addr_width=12) == [(509, 3), (0, 3)]


def test_segment_beats_matches_bytes():
    for addr_width in (12, 32):
        for addr in [*range(20), 4090, 4095]:
            for seg_bytes in range(0, 40):
                beats = {}
                for byte in range(addr, addr + seg_bytes):
                    byte %= 1 << addr_width
                    beats.setdefault(byte // 8, []).append(byte % 8)
                want = [(beat, min(lanes), max(lanes) + 1) for beat, lanes in beats.items()]
                assert segment_beats(addr, seg_bytes, addr_width=addr_width) == want


def test_request_segments_in_row_major_order():
    request = DmaRequest(addr=0x100, seg_bytes=3, inner_count=3, inner_stride=8,
                         outer_count=2, outer_stride=0x40)
    assert request.segments() == [0x100, 0x108, 0x110, 0x140, 0x148, 0x150]
    wrapping = DmaRequest(addr=0xFFF8, seg_bytes=16, inner_count=2, inner_stride=0xFFFF_FFF8)
    assert wrapping.segments(addr_width=16) == [0xFFF8, 0xFFF0]
    assert wrapping.beats(addr_width=16) == [(0x1FFF, 0, 8, False, False),
                                             (0x0000, 0, 8, True, False),
                                             (0x1FFE, 0, 8, False, False),
                                             (0x1FFF, 0, 8, True, True)]
    assert DmaRequest(addr=4, seg_bytes=0, inner_count=5).beats() == []
    assert DmaRequest(addr=4, seg_bytes=5, outer_count=0).bursts(16) == []


def widths(layout):
    return {name: field.width for name, field in layout}


def test_layouts():
    assert widths(dma_request_layout(40, 3)) == {
        "addr": 40, "seg_bytes": 16, "inner_count": 16, "inner_stride": 32,
        "outer_count": 16, "outer_stride": 32, "tag": 3}
    assert widths(dma_read_data_layout(2)) == {
        "data": 64, "lo": 3, "hi": 4, "seg_last": 1, "last": 1, "err": 1, "tag": 2}
    assert widths(dma_done_layout(0)) == {"err": 1, "tag": 0}
    assert widths(dma_done_layout()) == {"err": 1}
    writer = DmaWriter()
    assert writer.done.payload.shape() == dma_done_layout()
    assert writer.data.payload.shape() == unsigned(64)
    assert widths(writer.req.payload.shape())["tag"] == 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_burst": 12}, r"^max_burst must be a power of two, not 12$"),
    ({"max_burst": 512}, r"^max_burst must be between 1 and 256, not 512$"),
    ({"max_outstanding": 0}, r"^max_outstanding must be between 1 and 256, not 0$"),
    ({"addr_width": 8}, r"^addr_width must be between 12 and 64, not 8$"),
    ({"tag_width": -1}, r"^tag_width must be between 0 and 32, not -1$"),
])
def test_parameters_are_validated(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DmaReader(**kwargs)
    with pytest.raises(ValueError, match=message):
        Dma(**kwargs)
    if "tag_width" not in kwargs:
        with pytest.raises(ValueError, match=message):
            DmaWriter(**kwargs)


# --- Behavioural AXI4 memory -----------------------------------------------------------------

class AxiMemory:
    """An AXI4 subordinate for the Amaranth simulator, one process per direction.

    Every cycle each ready is raised with probability ``1 - stall`` and each pending response
    is presented with probability ``1 - idle``. Beats in ``errors`` (beat address -> RESP)
    answer with that response and are not written. With ``aw_waits_for_w``, ``AWREADY`` waits
    for the burst's first W beat, as AXI allows a subordinate to do. The model checks the
    manager's side of the protocol: stable ``*VALID`` and payload until the handshake, 8-byte
    INCR bursts of at most ``max_burst`` beats within a 4 KiB page, ``WLAST``.
    """

    def __init__(self, bus, *, rng, max_burst, addr_width=32, stall=0.3, idle=0.3,
                 errors=None, aw_waits_for_w=False):
        self.bus = bus
        self.rng = rng
        self.max_burst = max_burst
        self.beat_mask = (1 << (addr_width - 3)) - 1
        self.stall = stall
        self.idle = idle
        self.errors = errors or {}
        self.aw_waits_for_w = aw_waits_for_w
        self.memory = {}
        self.ar_log, self.aw_log = [], []       # (beat, length) of every burst
        self.ar_cycles, self.r_cycles = [], []  # cycles of AR and R handshakes
        self.w_cycles = []
        self.strobes = []                       # WSTRB of every W beat

    def read_beat(self, beat):
        return self.memory.get(beat, beat_value(beat))

    def _check_burst(self, addr, length, size, burst):
        beats = length + 1
        assert addr % 8 == 0 and size == 3 and burst == BURST_INCR, (addr, size, burst)
        assert beats <= self.max_burst, f"burst of {beats} beats at {addr:#x}"
        assert addr % BOUNDARY_BYTES + 8 * beats <= BOUNDARY_BYTES, \
            f"burst of {beats} beats at {addr:#x} crosses 4 KiB"
        return addr >> 3, beats

    def add_to(self, sim):
        sim.add_testbench(self._read_side, background=True)
        sim.add_testbench(self._write_side, background=True)

    def _chance(self, probability):
        return self.rng.random() >= probability

    async def _read_side(self, ctx):
        bus = self.bus
        pending = deque()                    # (beat, last) still to return
        presenting = False
        held_ar = None
        cycle = 0
        while True:
            ar_ready = self._chance(self.stall)
            ctx.set(bus.arready, ar_ready)
            if not presenting and pending and self._chance(self.idle):
                beat, last = pending[0]
                ctx.set(bus.rdata, self.read_beat(beat))
                ctx.set(bus.rresp, self.errors.get(beat, RESP_OKAY))
                ctx.set(bus.rlast, last)
                presenting = True
            ctx.set(bus.rvalid, presenting)
            (_, _, ar_valid, *ar, r_ready) = await ctx.tick().sample(
                bus.arvalid, bus.araddr, bus.arlen, bus.arsize, bus.arburst, bus.rready)
            if held_ar is not None:
                assert ar_valid and tuple(ar) == held_ar, "AR changed before its handshake"
            held_ar = None
            if presenting and r_ready:
                pending.popleft()
                presenting = False
                self.r_cycles.append(cycle)
            if ar_valid and ar_ready:
                beat, beats = self._check_burst(*ar)
                self.ar_log.append((beat, beats))
                self.ar_cycles.append(cycle)
                pending.extend(((beat + k) & self.beat_mask, k == beats - 1)
                               for k in range(beats))
            elif ar_valid:
                held_ar = tuple(ar)
            cycle += 1

    async def _write_side(self, ctx):
        bus = self.bus
        bursts = deque()                     # [beat, beats, beats received, resp] per AW
        beats = deque()                      # W beats not yet matched with an AW
        responses = deque()
        presenting = False
        held_aw = held_w = None
        w_count = aw_beats = 0               # W beats and AW burst beats accepted so far
        cycle = 0
        while True:
            aw_ready = self._chance(self.stall)
            if self.aw_waits_for_w:
                # Accept an address only once its burst's first data beat has arrived.
                aw_ready &= w_count > aw_beats
            w_ready = self._chance(self.stall)
            ctx.set(bus.awready, aw_ready)
            ctx.set(bus.wready, w_ready)
            if not presenting and responses and self._chance(self.idle):
                ctx.set(bus.bresp, responses[0])
                presenting = True
            ctx.set(bus.bvalid, presenting)
            (_, _, aw_valid, *aw, w_valid, w_data, w_strb, w_last, b_ready) = \
                await ctx.tick().sample(bus.awvalid, bus.awaddr, bus.awlen, bus.awsize,
                                        bus.awburst, bus.wvalid, bus.wdata, bus.wstrb,
                                        bus.wlast, bus.bready)
            if held_aw is not None:
                assert aw_valid and tuple(aw) == held_aw, "AW changed before its handshake"
            if held_w is not None:
                assert w_valid and (w_data, w_strb, w_last) == held_w, \
                    "W changed before its handshake"
            held_aw = held_w = None
            if presenting and b_ready:
                responses.popleft()
                presenting = False
            if w_valid and w_ready:
                beats.append((w_data, w_strb, w_last))
                self.w_cycles.append(cycle)
                w_count += 1
            elif w_valid:
                held_w = (w_data, w_strb, w_last)
            if aw_valid and aw_ready:
                beat, length = self._check_burst(*aw)
                self.aw_log.append((beat, length))
                bursts.append([beat, length, 0, RESP_OKAY])
                aw_beats += length
            elif aw_valid:
                held_aw = tuple(aw)
            while bursts and beats:
                self._write_beat(bursts, *beats.popleft(), responses)
            # A manager may send data ahead of its address, but only for the burst whose
            # AWVALID is up.
            assert len(beats) <= self.max_burst, "W beats ahead of any AW"
            cycle += 1

    def _write_beat(self, bursts, w_data, w_strb, w_last, responses):
        head = bursts[0]
        beat = (head[0] + head[2]) & self.beat_mask
        head[2] += 1
        assert w_last == (head[2] == head[1]), "WLAST on the wrong beat"
        self.strobes.append(w_strb)
        resp = self.errors.get(beat, RESP_OKAY)
        if resp == RESP_OKAY:
            keep = strobe_bytes(w_strb)
            self.memory[beat] = (self.read_beat(beat) & ~keep) | (w_data & keep)
        head[3] = max(head[3], resp)
        if head[2] == head[1]:
            responses.append(head[3])
            bursts.popleft()


def watchdog(cycles):
    async def testbench(ctx):
        for _ in range(cycles):
            await ctx.tick()
        raise AssertionError(f"the design did not finish in {cycles} cycles")
    return testbench


def make_simulator(dut, memory, max_cycles):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    memory.add_to(sim)
    sim.add_testbench(watchdog(max_cycles), background=True)
    return sim


def put_all(port, items, rng, idle):
    async def testbench(ctx):
        for item in items:
            await stream_put(ctx, port, item, rng=rng, idle=idle)
    return testbench


def get_all(port, count, into, rng, stall):
    async def testbench(ctx):
        for _ in range(count):
            into.append(await stream_get(ctx, port, rng=rng, stall=stall))
    return testbench


def fields(value, names):
    return {name: int(getattr(value, name)) for name in names}


# --- Reader ----------------------------------------------------------------------------------

def random_request(rng, *, tag_width=0, max_bytes=300):
    """A random request: contiguous, strided, near or across 4 KiB boundaries, or empty."""
    tag = rng.randrange(1 << tag_width)
    kind = rng.choice(["contiguous", "strided", "strided", "boundary", "empty"])
    addr = rng.randrange(1 << 20)
    if kind == "boundary":
        addr = rng.randrange(1, 256) * BOUNDARY_BYTES - rng.randrange(1, 80)
    if kind == "contiguous":
        seg_bytes = rng.randrange(1, max_bytes)
        return DmaRequest(addr, seg_bytes, rng.randrange(1, 3), seg_bytes, tag=tag)
    if kind == "empty":
        counts = [rng.randrange(4), rng.randrange(4), rng.randrange(4)]
        counts[rng.randrange(3)] = 0
        return DmaRequest(addr, counts[0], counts[1], 8, counts[2], 64, tag=tag)
    return DmaRequest(addr, rng.randrange(1, 40), rng.randrange(1, 5), rng.randrange(0, 100),
                      rng.randrange(1, 4), rng.randrange(0, 5000), tag=tag)


def expected_read(requests, errors, addr_width=32):
    beats, dones = [], []
    for request in requests:
        err = 0
        for beat, lo, hi, seg_last, last in request.beats(addr_width=addr_width):
            beat_err = int(beat in errors)
            err |= beat_err
            beats.append({"data": beat_value(beat), "lo": lo, "hi": hi, "seg_last": int(seg_last),
                          "last": int(last), "err": beat_err, "tag": request.tag})
        dones.append({"err": err, "tag": request.tag})
    return beats, dones


def run_reader(dut, requests, *, seed, errors=None, stall=0.3, idle=0.3, addr_width=32,
               max_cycles=20000):
    rng = random.Random(seed)
    memory = AxiMemory(dut.bus, rng=rng, max_burst=dut.max_burst, addr_width=addr_width,
                       stall=stall, idle=idle, errors=errors)
    want_beats, want_dones = expected_read(requests, errors or {}, addr_width)
    beats, dones = [], []
    sim = make_simulator(dut, memory, max_cycles)
    sim.add_testbench(put_all(dut.req, [r.fields() for r in requests], rng, idle))
    sim.add_testbench(get_all(dut.data, len(want_beats), beats, rng, stall))
    sim.add_testbench(get_all(dut.done, len(want_dones), dones, rng, stall))
    sim.run()
    got = [fields(b, ("data", "lo", "hi", "seg_last", "last", "err", "tag")) for b in beats]
    for index, (g, w) in enumerate(zip(got, want_beats)):
        assert g == w, f"beat {index}"
    assert [fields(d, ("err", "tag")) for d in dones] == want_dones
    want_bursts = [b for r in requests for b in r.bursts(dut.max_burst, addr_width=addr_width)]
    assert memory.ar_log == want_bursts
    return memory


READER_CONFIGS = [
    {"max_burst": 4, "max_outstanding": 2, "tag_width": 2},
    {"max_burst": 16, "max_outstanding": 4, "tag_width": 0},
    {"max_burst": 1, "max_outstanding": 1, "tag_width": 1},
]


@pytest.mark.parametrize("config", READER_CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_reader_random_requests(config):
    rng = random.Random(str(config))
    dut = DmaReader(**config)
    requests = [random_request(rng, tag_width=config["tag_width"]) for _ in range(25)]
    run_reader(dut, requests, seed=rng.randrange(1 << 30))


def test_reader_reports_errors_and_carries_on():
    dut = DmaReader(max_burst=4, tag_width=2)
    requests = [
        DmaRequest(0x1000, 64, tag=1),                  # beats 0x200..0x207
        DmaRequest(0x2003, 20, 2, 0x100, tag=2),        # beats 0x400..0x402, 0x420..0x422
        DmaRequest(0x1800, 64, tag=3),                  # clean
        DmaRequest(0x3000, 0, tag=0),                   # empty: no error
        DmaRequest(0x2100, 8, tag=1),                   # the DECERR beat alone
    ]
    errors = {0x205: RESP_SLVERR, 0x420: RESP_DECERR}
    run_reader(dut, requests, seed=3, errors=errors)


def test_reader_wraps_at_the_top_of_the_address_space():
    dut = DmaReader(addr_width=16, max_burst=8)
    requests = [DmaRequest(0xFFE5, 60), DmaRequest(0xFFF0, 4, 3, 0x7FF8, 2, 0xFFFF_0000)]
    run_reader(dut, requests, seed=4, addr_width=16)


@pytest.mark.parametrize("max_burst", [2, 8, 32, 64, 128])
def test_reader_bursts_match_split_bursts(max_burst):
    """Segments starting just before a 4 KiB boundary, at every offset class of the burst."""
    rng = random.Random(max_burst)
    dut = DmaReader(max_burst=max_burst, max_outstanding=4)
    requests = [DmaRequest(rng.randrange(1, 64) * BOUNDARY_BYTES - rng.randrange(1, 8 * 300),
                           rng.randrange(1, 1200), rng.randrange(1, 3), rng.randrange(0, 4000))
                for _ in range(6)]
    run_reader(dut, requests, seed=max_burst, stall=0.0, idle=0.0)


def test_reader_long_bursts():
    """256-beat bursts, cut at 4 KiB boundaries, from unaligned segments."""
    dut = DmaReader(max_burst=256, max_outstanding=2)
    requests = [DmaRequest(0x0FF3, 4100), DmaRequest(0x1F00 - 8 * 3, 2100, 2, 0x2000)]
    run_reader(dut, requests, seed=12, stall=0.1, idle=0.1)


def test_reader_stalled_completions_do_not_lose_data():
    dut = DmaReader(max_burst=4, max_outstanding=3)
    requests = [DmaRequest(8 * k + 3, 9) for k in range(12)]
    rng = random.Random(5)
    memory = AxiMemory(dut.bus, rng=rng, max_burst=4, stall=0.0, idle=0.0)
    beats, dones = [], []

    async def late_done(ctx):
        for _ in range(60):                             # every beat waits for completions
            await ctx.tick()
        for _ in requests:
            dones.append(await stream_get(ctx, dut.done))

    sim = make_simulator(dut, memory, 2000)
    sim.add_testbench(put_all(dut.req, [r.fields() for r in requests], rng, 0.0))
    sim.add_testbench(get_all(dut.data, 24, beats, rng, 0.0))
    sim.add_testbench(late_done)
    sim.run()
    want_beats, _ = expected_read(requests, {})
    assert [fields(b, ("data", "lo", "hi", "last")) for b in beats] == \
        [{k: b[k] for k in ("data", "lo", "hi", "last")} for b in want_beats]
    assert len(dones) == len(requests)


def test_reader_issues_one_burst_per_cycle_for_pixel_reads():
    """Two-byte pixels 24 bytes apart, one beat each: an AR and a data beat every cycle."""
    dut = DmaReader(max_burst=16, max_outstanding=4)
    requests = [DmaRequest(0x40, 2, 64, 24)]
    memory = run_reader(dut, requests, seed=6, stall=0.0, idle=0.0)
    assert memory.ar_cycles == list(range(memory.ar_cycles[0], memory.ar_cycles[0] + 64))
    assert memory.r_cycles == list(range(memory.r_cycles[0], memory.r_cycles[0] + 64))


def test_reader_streams_contiguous_data_at_one_beat_per_cycle():
    dut = DmaReader(max_burst=16, max_outstanding=4)
    requests = [DmaRequest(0xF04, 8 * 300)]             # unaligned, across a 4 KiB boundary
    memory = run_reader(dut, requests, seed=7, stall=0.0, idle=0.0)
    assert memory.r_cycles == list(range(memory.r_cycles[0], memory.r_cycles[0] + 301))


# --- Writer ----------------------------------------------------------------------------------

def run_writer(dut, requests, *, seed, errors=None, stall=0.3, idle=0.3, max_cycles=20000,
               aw_waits_for_w=False):
    rng = random.Random(seed)
    memory = AxiMemory(dut.bus, rng=rng, max_burst=dut.max_burst, stall=stall, idle=idle,
                       errors=errors, aw_waits_for_w=aw_waits_for_w)
    errors = errors or {}
    beats, want_strobes, want_dones = [], [], []
    want_memory = {}
    for request in requests:
        err = 0
        for beat, lo, hi, _, _ in request.beats():
            value = rng.getrandbits(64)
            beats.append(value)
            want_strobes.append(lane_mask(lo, hi))
            err |= beat in errors
            if beat not in errors:
                keep = strobe_bytes(lane_mask(lo, hi))
                old = want_memory.get(beat, beat_value(beat))
                want_memory[beat] = (old & ~keep) | (value & keep)
        want_dones.append({"err": err})
    dones = []
    sim = make_simulator(dut, memory, max_cycles)
    sim.add_testbench(put_all(dut.req, [r.fields() for r in requests], rng, idle))
    sim.add_testbench(put_all(dut.data, beats, rng, idle))
    sim.add_testbench(get_all(dut.done, len(requests), dones, rng, stall))
    sim.run()
    assert [fields(d, ("err",)) for d in dones] == want_dones
    assert memory.strobes == want_strobes
    assert memory.memory == want_memory
    assert memory.aw_log == [b for r in requests for b in r.bursts(dut.max_burst)]
    return memory


@pytest.mark.parametrize("config", [{"max_burst": 4, "max_outstanding": 2},
                                    {"max_burst": 16, "max_outstanding": 4},
                                    {"max_burst": 1, "max_outstanding": 1}],
                         ids=lambda c: "-".join(map(str, c.values())))
def test_writer_random_requests(config):
    rng = random.Random(str(config))
    dut = DmaWriter(**config)
    requests = [random_request(rng) for _ in range(25)]
    run_writer(dut, requests, seed=rng.randrange(1 << 30))


def test_writer_sends_data_before_the_address_is_accepted():
    """A subordinate may hold AWREADY until it has seen WVALID; the writer must not deadlock."""
    rng = random.Random(11)
    dut = DmaWriter(max_burst=4, max_outstanding=2)
    requests = [random_request(rng) for _ in range(10)]
    run_writer(dut, requests, seed=11, aw_waits_for_w=True)


def test_writer_reports_errors_and_carries_on():
    dut = DmaWriter(max_burst=4)
    requests = [
        DmaRequest(0x1001, 62),                         # beats 0x200..0x207
        DmaRequest(0x2000, 8, 3, 0x100),                # beats 0x400, 0x420, 0x440
        DmaRequest(0x1801, 62),                         # clean
        DmaRequest(0x3000, 0),                          # empty
        DmaRequest(0x2100, 8),                          # the DECERR beat alone
    ]
    errors = {0x206: RESP_SLVERR, 0x420: RESP_DECERR}
    run_writer(dut, requests, seed=8, errors=errors)


def test_writer_streams_contiguous_data_at_one_beat_per_cycle():
    dut = DmaWriter(max_burst=16, max_outstanding=4)
    memory = run_writer(dut, [DmaRequest(0xF04, 8 * 300)], seed=9, stall=0.0, idle=0.0)
    assert memory.w_cycles == list(range(memory.w_cycles[0], memory.w_cycles[0] + 301))


# --- Both on one port ------------------------------------------------------------------------

def test_dma_reads_and_writes_concurrently():
    rng = random.Random(10)
    dut = Dma(max_burst=8, max_outstanding=2, tag_width=3)
    memory = AxiMemory(dut.bus, rng=rng, max_burst=8)
    reads = [DmaRequest(0x10000 + 37 * k, 50, 2, 200, tag=k % 8) for k in range(6)]
    writes = [DmaRequest(0x80000 + 91 * k, 30, 3, 64) for k in range(6)]
    want_beats, want_dones = expected_read(reads, {})
    values = [rng.getrandbits(64) for r in writes for _ in r.beats()]
    beats, rd_dones, wr_dones = [], [], []
    sim = make_simulator(dut, memory, 20000)
    sim.add_testbench(put_all(dut.rd_req, [r.fields() for r in reads], rng, 0.3))
    sim.add_testbench(get_all(dut.rd_data, len(want_beats), beats, rng, 0.3))
    sim.add_testbench(get_all(dut.rd_done, len(reads), rd_dones, rng, 0.3))
    sim.add_testbench(put_all(dut.wr_req, [w.fields() for w in writes], rng, 0.3))
    sim.add_testbench(put_all(dut.wr_data, values, rng, 0.3))
    sim.add_testbench(get_all(dut.wr_done, len(writes), wr_dones, rng, 0.3))
    sim.run()
    assert [fields(b, want_beats[0]) for b in beats] == want_beats
    assert [fields(d, ("err", "tag")) for d in rd_dones] == want_dones
    assert [fields(d, ("err",)) for d in wr_dones] == [{"err": 0}] * len(writes)
    written = [beat for w in writes for beat, *_ in w.beats()]
    assert len(memory.strobes) == len(written) and set(memory.memory) == set(written)
    assert memory.ar_log == [b for r in reads for b in r.bursts(8)]
    assert memory.aw_log == [b for w in writes for b in w.bursts(8)]
