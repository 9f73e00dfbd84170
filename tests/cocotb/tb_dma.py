"""cocotb testbench of the combined DMA engine (``hdl.dma.Dma``) against cocotbext-axi's
``AxiRam``: random strided reads and writes at once, with random pauses on every AXI channel and
random idle/stall on the stream ports, and the throughput of long contiguous transfers.

Reads come from the lower half of a 1 MiB memory filled with random bytes, writes go to the
upper half; every returned beat and flag is checked against the memory image, and after the
writes the whole memory is compared with a model that applied the same segments. A monitor
checks every AR and AW burst: 8-byte INCR, at most ``max_burst`` beats, within one 4 KiB page.
"""

import logging
import random
import warnings

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, with_timeout
from cocotbext.axi import AxiBus, AxiRam

from hdl.axi import BOUNDARY_BYTES, BURST_INCR
from hdl.dma import DmaRequest, dma_done_layout, dma_read_data_layout, dma_request_layout
from sim.cocotb_streams import StreamSink, StreamSource
from sim.layouts import pack, unpack
from sim.runner import Design

# cocotbext-axi 0.1.28 still calls cocotb 1.x APIs that cocotb 2 deprecates; the tests run with
# warnings as errors, so ignore those (and only those) raised from its own code.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi\.")

MEMORY_BYTES = 1 << 20
READ_REGION = (0, MEMORY_BYTES // 2)
WRITE_REGION = (MEMORY_BYTES // 2, MEMORY_BYTES)
AXI_CHANNELS = ("aw", "w", "b", "ar", "r")


class BusMonitor:
    """Watches the AXI port every cycle: checks each AR/AW burst and records the cycles of the
    R and W handshakes."""

    def __init__(self, dut, max_burst):
        self._dut = dut
        self._max_burst = max_burst
        self.cycle = 0
        self.bursts = {"ar": [], "aw": []}
        self.beat_cycles = {"r": [], "w": []}
        self.errors = []

    def _check(self, channel):
        dut = self._dut
        addr = getattr(dut, f"bus__{channel}addr").value.to_unsigned()
        beats = getattr(dut, f"bus__{channel}len").value.to_unsigned() + 1
        size = getattr(dut, f"bus__{channel}size").value.to_unsigned()
        burst = getattr(dut, f"bus__{channel}burst").value.to_unsigned()
        if size != 3 or burst != BURST_INCR or addr % 8:
            self.errors.append(f"{channel}: size {size}, burst {burst}, address {addr:#x}")
        if beats > self._max_burst:
            self.errors.append(f"{channel}: {beats} beats at {addr:#x} > {self._max_burst}")
        if addr % BOUNDARY_BYTES + 8 * beats > BOUNDARY_BYTES:
            self.errors.append(f"{channel}: {beats} beats at {addr:#x} cross 4 KiB")
        self.bursts[channel].append((addr, beats))

    async def run(self):
        dut = self._dut
        while True:
            await FallingEdge(dut.clk)
            await ReadOnly()
            self.cycle += 1
            for channel in ("ar", "aw"):
                if (getattr(dut, f"bus__{channel}valid").value
                        and getattr(dut, f"bus__{channel}ready").value):
                    self._check(channel)
            for channel in ("r", "w"):
                if (getattr(dut, f"bus__{channel}valid").value
                        and getattr(dut, f"bus__{channel}ready").value):
                    self.beat_cycles[channel].append(self.cycle)


def pauses(rng, probability):
    """An endless pause pattern for a cocotbext-axi channel."""
    while True:
        yield rng.random() < probability


def set_pauses(ram, flow, probability):
    """Pause every channel of ``ram`` on each cycle with ``probability``."""
    for interface in (ram.write_if, ram.read_if):
        for channel in AXI_CHANNELS:
            port = getattr(interface, f"{channel}_channel", None)
            if port is not None:
                port.set_pause_generator(pauses(flow, probability) if probability else None)


async def setup(dut, rng):
    """Start the clock, bind an AxiRam filled with random bytes, reset, start the monitor."""
    component = Design.from_env().build()
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    ram = AxiRam(AxiBus.from_prefix(dut, "bus", bus_separator="__"), dut.clk, dut.rst,
                 size=MEMORY_BYTES)
    for interface in (ram.read_if, ram.write_if):
        interface.log.setLevel(logging.WARNING)       # one line per burst otherwise
    ram.write(0, rng.randbytes(MEMORY_BYTES))
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    monitor = BusMonitor(dut, component.max_burst)
    cocotb.start_soon(monitor.run())
    return component, ram, monitor


def random_request(rng, region, tag_width):
    """A random request whose segments all lie in ``region`` (bytes ``[start, end)``)."""
    start, end = region
    while True:
        kind = rng.choice(["long", "strided", "strided", "pixels", "boundary", "boundary",
                           "empty"])
        addr = rng.randrange(start, end)
        if kind == "boundary":
            addr = rng.randrange(start // BOUNDARY_BYTES + 1, end // BOUNDARY_BYTES) \
                * BOUNDARY_BYTES - rng.randrange(1, 300)
        if kind == "long":
            seg_bytes = rng.randrange(256, 2048)
            shape = (seg_bytes, rng.randrange(1, 4), seg_bytes, 1, 0)
        elif kind == "pixels":
            shape = (rng.randrange(1, 9), rng.randrange(1, 40), rng.randrange(1, 49),
                     rng.randrange(1, 4), rng.randrange(0, 3000))
        elif kind == "empty":
            counts = [rng.randrange(3), rng.randrange(3), rng.randrange(3)]
            counts[rng.randrange(3)] = 0
            shape = (counts[0], counts[1], 16, counts[2], 256)
        else:
            seg_bytes = rng.randrange(1, 301)
            shape = (seg_bytes, rng.randrange(1, 4), rng.randrange(0, seg_bytes + 200),
                     rng.randrange(1, 3), rng.randrange(0, 8000))
        seg_bytes, inner_count, inner_stride, outer_count, outer_stride = shape
        request = DmaRequest(addr, seg_bytes, inner_count, inner_stride, outer_count,
                             outer_stride, tag=rng.randrange(1 << tag_width))
        if all(start <= lo and lo + seg_bytes <= end for lo in request.segments()):
            return request


async def read_requests(dut, component, ram, requests, flow, *, idle, stall):
    """Run ``requests`` through the reader; check every beat and completion."""
    request_layout = dma_request_layout(component.addr_width, component.tag_width)
    data_layout = dma_read_data_layout(component.tag_width)
    done_layout = dma_done_layout(component.tag_width)
    want = []
    for request in requests:
        for beat, lo, hi, seg_last, last in request.beats():
            want.append({"data": int.from_bytes(ram.read(8 * beat, 8), "little"), "lo": lo,
                         "hi": hi, "seg_last": int(seg_last), "last": int(last), "err": 0,
                         "tag": request.tag})
    source = StreamSource(dut, "rd_req", dut.clk, rng=flow, idle=idle)
    data = StreamSink(dut, "rd_data", dut.clk, rng=flow, stall=stall)
    done = StreamSink(dut, "rd_done", dut.clk, rng=flow, stall=stall)
    cocotb.start_soon(source.send([pack(request_layout, r.fields()) for r in requests]))
    finished = cocotb.start_soon(done.receive(len(requests), timeout_cycles=50 * len(want)
                                              + 1000))
    got = [unpack(data_layout, word) for word in
           await data.receive(len(want), timeout_cycles=50 * len(want) + 1000)]
    for index, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"read beat {index}: got {g}, expected {w}"
    dones = [unpack(done_layout, word) for word in await finished]
    assert dones == [{"err": 0, "tag": r.tag} for r in requests]
    return len(want)


async def write_requests(dut, component, ram, requests, rng, flow, *, idle, stall):
    """Run ``requests`` through the writer with random data (from ``rng``); return the expected
    image of the memory afterwards."""
    request_layout = dma_request_layout(component.addr_width)
    image = bytearray(ram.read(0, MEMORY_BYTES))
    beats = []
    for request in requests:
        for beat, lo, hi, _, _ in request.beats():
            value = rng.getrandbits(64)
            beats.append(value)
            image[8 * beat + lo:8 * beat + hi] = value.to_bytes(8, "little")[lo:hi]
    requests_in = StreamSource(dut, "wr_req", dut.clk, rng=flow, idle=idle)
    data_in = StreamSource(dut, "wr_data", dut.clk, rng=flow, idle=idle)
    done = StreamSink(dut, "wr_done", dut.clk, rng=flow, stall=stall)
    cocotb.start_soon(requests_in.send([pack(request_layout, r.fields()) for r in requests]))
    cocotb.start_soon(data_in.send(beats))
    dones = await done.receive(len(requests), timeout_cycles=50 * len(beats) + 1000)
    assert [unpack(dma_done_layout(), word)["err"] for word in dones] == [0] * len(requests)
    return image, len(beats)


def check_monitor(monitor, component, reads, writes):
    assert not monitor.errors, "\n".join(monitor.errors[:10])
    for channel, requests in (("ar", reads), ("aw", writes)):
        want = [(8 * beat, beats) for r in requests for beat, beats in
                r.bursts(component.max_burst)]
        assert monitor.bursts[channel] == want, f"{channel} bursts differ from split_bursts"


#: Rounds of the random test: probabilities per cycle of an AXI channel pause, of an idle cycle
#: before a stream transfer and of a stalled stream sink.
ROUNDS = ((0.5, 0.3, 0.5), (0.1, 0.0, 0.0))
REQUESTS_PER_ROUND = 30


@cocotb.test()
async def random_reads_and_writes(dut):
    """Random strided requests in both directions at once, in rounds without a reset between
    them: heavy random pauses and stalls, then light ones."""
    rng = random.Random(cocotb.RANDOM_SEED)
    flow = random.Random(cocotb.RANDOM_SEED + 1000)     # flow control only
    component, ram, monitor = await setup(dut, rng)
    all_reads, all_writes = [], []
    for pause, idle, stall in ROUNDS:
        set_pauses(ram, flow, pause)
        reads = [random_request(rng, READ_REGION, component.tag_width)
                 for _ in range(REQUESTS_PER_ROUND)]
        writes = [random_request(rng, WRITE_REGION, 0) for _ in range(REQUESTS_PER_ROUND)]
        start = monitor.cycle
        read_task = cocotb.start_soon(read_requests(dut, component, ram, reads, flow,
                                                    idle=idle, stall=stall))
        image, written = await write_requests(dut, component, ram, writes, rng, flow,
                                              idle=idle, stall=stall)
        read = await read_task
        await ClockCycles(dut.clk, 2)
        assert ram.read(0, MEMORY_BYTES) == bytes(image), "memory differs after the writes"
        dut._log.info("AXI pause %.1f, stream idle %.1f, stall %.1f: %d read beats, "
                      "%d written beats in %d cycles", pause, idle, stall, read, written,
                      monitor.cycle - start)
        all_reads += reads
        all_writes += writes
    check_monitor(monitor, component, all_reads, all_writes)


async def measure(dut, monitor, channel, run):
    """Run the coroutine ``run``; return beats per cycle on R or W between the first and last
    beat."""
    await run
    cycles = monitor.beat_cycles[channel]
    rate = len(cycles) / (cycles[-1] - cycles[0] + 1)
    dut._log.info("%s: %d beats in %d cycles: %.3f beats/cycle", channel, len(cycles),
                  cycles[-1] - cycles[0] + 1, rate)
    return rate


@cocotb.test()
async def read_throughput(dut):
    """A contiguous read of 2049 beats, unaligned and across four 4 KiB boundaries, streams at
    least 0.9 beats per cycle from a memory without pauses."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    component, ram, monitor = await setup(dut, rng)
    request = DmaRequest(0x10004, 8 * 2048)
    run = read_requests(dut, component, ram, [request], rng, idle=0.0, stall=0.0)
    rate = await measure(dut, monitor, "r", with_timeout(run, 100, "us"))
    check_monitor(monitor, component, [request], [])
    assert rate >= 0.9, f"read throughput {rate:.3f} beats/cycle"


@cocotb.test()
async def write_throughput(dut):
    """A contiguous write of 2049 beats streams at least 0.9 beats per cycle."""
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    component, ram, monitor = await setup(dut, rng)
    request = DmaRequest(WRITE_REGION[0] + 0x1003, 8 * 2048)

    async def write_and_check():
        image, _ = await write_requests(dut, component, ram, [request], rng, rng, idle=0.0,
                                        stall=0.0)
        await ClockCycles(dut.clk, 2)
        assert ram.read(0, MEMORY_BYTES) == bytes(image), "memory differs after the write"

    rate = await measure(dut, monitor, "w", with_timeout(write_and_check(), 100, "us"))
    check_monitor(monitor, component, [], [request])
    assert rate >= 0.9, f"write throughput {rate:.3f} beats/cycle"
