# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the input PLM and the loaders: the beats of each descriptor's
DMA requests, from real descriptor lists, land in the PLMs exactly as the compute core and
the golden model expect them (ST words; weight rows; quantization registers)."""

import random

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In
from amaranth.sim import Simulator

from hdl.dma import dma_read_data_layout
from hdl.loaders import InputLoader, QuantLoader, WeightLoader, input_beat_fields
from hdl.plm import InputPLM
from hls_ref import Precision, pack_activations
from hls_ref.config import DEFAULT_CONFIG
from hls_ref.descriptor import geometry
from hls_ref.dma import DmaRequest
from hls_ref.formats import QuantBlock
from hls_ref.socket import input_tile, load_requests
from sw.fixtures import random_conv
from sw.program import conv2d_program


def request_beats(memory_image, request):
    """The beats a DMA reader delivers for ``request``, with their data from the image."""
    return [{"data": int(memory_image[8 * beat:8 * beat + 8].view("<u8")[0]), "lo": lo,
             "hi": hi, "seg_last": int(seg_last), "last": int(last), "err": 0}
            for beat, lo, hi, seg_last, last in request.beats()]


async def feed(ctx, port, beats, rng, idle=0.3):
    """Offer beats with random idle cycles; wait for each to be taken."""
    for beat in beats:
        while rng.random() < idle:
            ctx.set(port.valid, 0)
            await ctx.tick()
        ctx.set(port.payload, beat)
        ctx.set(port.valid, 1)
        await ctx.tick().until(port.ready)
    ctx.set(port.valid, 0)


class InputHarness(wiring.Component):
    """The input loader and PLM, offered plain DMA beats: the loader's derived beat fields
    are formed here, as the accelerator forms them before its read slice."""

    beats: In(stream.Signature(dma_read_data_layout()))

    def __init__(self, words, read_latency, write_latency):
        self.loader = InputLoader(words=words)
        self.plm = InputPLM(words=words, read_latency=read_latency,
                            write_latency=write_latency)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.loader, m.submodules.plm = self.loader, self.plm
        m.d.comb += [self.plm.wr.eq(self.loader.wr), self.plm.wr_en.eq(self.loader.wr_en)]
        target = self.loader.beats
        m.d.comb += [target.valid.eq(self.beats.valid), self.beats.ready.eq(target.ready)]
        for name in dma_read_data_layout().members:
            m.d.comb += getattr(target.payload, name).eq(getattr(self.beats.payload, name))
        fields = input_beat_fields(self.beats.payload, self.loader.cfg)
        m.d.comb += [getattr(target.payload, name).eq(v) for name, v in fields.items()]
        return m


def _programs():
    rng = np.random.default_rng(21)
    cases = [(Precision.A8W8, dict(cin=6)), (Precision.A16W16, dict(cin=3)),
             (Precision.A4W4, dict(cin=10)), (Precision.A8W8, dict(cin=1)),
             (Precision.A4W4, dict(cin=1)), (Precision.A4W4, dict(cin=2)),
             (Precision.A8W4, dict(cin=16)), (Precision.A16W8, dict(cin=5))]
    # rows of 16 one-channel pixels fill whole beats: the DMA merges contiguous rows into one
    # segment and the loader must find the row ends inside it
    cases += [(Precision.A8W8, dict(cin=1, size=(5, 16))),
              (Precision.A4W4, dict(cin=1, size=(5, 16)))]
    for n, (precision, kw) in enumerate(cases):
        kw = {"size": (6, 11), **kw}
        x, w, qb, cmd, _ = random_conv(rng, precision, 8, kernel=(3, 3), stride=(1, 1), **kw)
        splits = (precision.lanes * 2,) if kw["cin"] > 2 * precision.lanes else ()
        # the PLM's two read latencies alternate
        latency = 1 + n % 2
        # and so do its write latencies, in the other order
        write_latency = (n // 2) % 2
        name = (f"{precision.label}_c{kw['cin']}_w{kw['size'][1]}_lat{latency}"
                f"_wlat{write_latency}")
        yield (name, conv2d_program(x, w, qb, cmd, row_splits=(2,), in_splits=splits),
               latency, write_latency)


@pytest.mark.parametrize("name,program,latency,write_latency", list(_programs()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_input_loader_fills_the_plm_with_st_words(name, program, latency, write_latency):
    words = 1024
    dut = InputHarness(words, latency, write_latency)
    rng = random.Random(name)
    checked = []

    async def bench(ctx):
        for n, desc in enumerate(program.descriptors):
            geo = geometry(desc)
            bank = n % 2
            x_req, _, _ = load_requests(desc, DEFAULT_CONFIG)
            ctx.set(dut.loader.cfg, {"narrow": int(geo.narrow),
                                     "nibble": int(geo.narrow and
                                                   desc.in_pixel_stride * geo.precision.act_bits
                                                   == 4),
                                     "in_w": desc.in_w, "bank": bank})
            ctx.set(dut.loader.start, 1)
            await ctx.tick()
            ctx.set(dut.loader.start, 0)
            await feed(ctx, dut.beats, request_beats(program.memory, x_req), rng)
            want = pack_activations(input_tile(program.memory, desc), geo.precision).ravel()
            # one address per cycle; each word arrives ``latency`` ticks after its address
            got = []
            for i in range(len(want) + latency - 1):
                ctx.set(dut.plm.rd.addr, bank * words + min(i, len(want) - 1))
                await ctx.tick()
                if i >= latency - 1:
                    got.append(ctx.get(dut.plm.rd.data))
            np.testing.assert_array_equal(got, want, f"descriptor {n}")
            checked.append(n)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert checked == list(range(program.count))


class WeightHarness(wiring.Component):
    def __init__(self, pes, rows):
        self.loader = WeightLoader(pes=pes, rows=rows)
        self.pes, self.rows = pes, rows
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.loader = self.loader
        self.mem = memory.Memory(shape=16 * self.pes, depth=2 * self.rows, init=[])
        m.submodules.mem = self.mem
        wr = self.mem.write_port(granularity=16)
        m.d.comb += [wr.addr.eq(self.loader.wr_addr), wr.data.eq(self.loader.wr_data),
                     wr.en.eq(self.loader.wr_en)]
        return m


@pytest.mark.parametrize("pes", [4, 16])
def test_weight_loader_writes_pe_rows(pes):
    rng = np.random.default_rng(pes)
    rows = 64
    blob_rows = 37
    words = rng.integers(0, 1 << 16, (blob_rows, pes))
    image = np.zeros(8 * 64 + words.size * 2, np.uint8)
    image[64:64 + words.size * 2] = words.astype("<u2").view(np.uint8).ravel()
    beats = request_beats(image, DmaRequest(64, words.size * 2))
    dut = WeightHarness(pes, rows)

    async def bench(ctx):
        ctx.set(dut.loader.bank, 1)
        ctx.set(dut.loader.start, 1)
        await ctx.tick()
        ctx.set(dut.loader.start, 0)
        await feed(ctx, dut.loader.beats, beats, random.Random(pes))
        await ctx.tick()
        for r in range(blob_rows):
            value = ctx.get(dut.mem.data[rows + r])
            got = [(value >> (16 * k)) & 0xFFFF for k in range(pes)]
            assert got == list(words[r]), r

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_quant_loader_registers():
    """Blocks of several sizes, one after another into the same registers: each reads back
    exactly, channels beyond it as zero (no parameter of a larger block before it is left),
    also when a block's first beat comes the cycle after ``start`` (the clear is a cycle late,
    per PE, and the beat written in that cycle must survive it) and when a stray beat comes
    with ``start``."""
    rng = np.random.default_rng(2)
    pes = 16
    blocks = []
    for channels in (16, 1, 7, 5, 16, 9):
        qb = QuantBlock(channels - 3, -7 * channels, 11 * channels,
                        rng.integers(-1 << 31, 1 << 31, channels),
                        rng.integers(1 << 30, 1 << 31, channels), rng.integers(-31, 31, channels))
        image = np.zeros(8 * (2 + 2 * channels), np.uint8)
        image[8:] = qb.pack().view(np.uint8)
        blocks.append((qb, request_beats(image, DmaRequest(8, 8 * (1 + 2 * channels)))))
    dut = QuantLoader(pes=pes)

    async def bench(ctx):
        for number, (qb, beats) in enumerate(blocks):
            ctx.set(dut.start, 1)
            if number % 3 == 2:
                # a stray beat in the cycle of the start is not part of the block
                ctx.set(dut.beats.payload, dict(beats[1], data=(1 << 64) - 1, last=0))
                ctx.set(dut.beats.valid, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            ctx.set(dut.beats.valid, 0)
            # odd blocks: the first beat right after the start, no idle cycles
            await feed(ctx, dut.beats, beats, random.Random(number), idle=0.3 * (number % 2 == 0))
            await ctx.tick()
            q = ctx.get(dut.q)
            channels = len(qb.bias)
            assert (q.zero_point, q.act_min, q.act_max, q.double, q.channels) == (
                channels - 3, -7 * channels, 11 * channels, 0, channels), number
            zeros = [0] * (pes - channels)
            assert list(q.bias) == [int(v) for v in qb.bias] + zeros
            assert list(q.multiplier) == [int(v) for v in qb.multiplier] + zeros
            assert list(q.shift) == [int(v) for v in qb.shift] + zeros

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
