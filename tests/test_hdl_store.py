# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the store unit: random accumulators of real descriptors'
tiles, requantized and packed into lane-aligned beats that, written with the DMA segments'
strobes, give exactly the golden model's memory image (every output width, pixel and row
segments, half-byte pixels, filler channels), under random back-pressure."""

import random
from dataclasses import replace

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import memory, wiring
from amaranth.sim import Simulator

from hdl.store import StoreUnit
from hls_ref import Precision
from hls_ref.config import STORE_ELEMENTS, store_group
from hls_ref.descriptor import geometry
from hls_ref.quant import multiply_by_quantized_multiplier
from hls_ref.socket import store_request, store_tile
from sw.fixtures import random_conv
from sw.program import conv2d_program

#: Cycles of a tile's store beyond one per group of elements (see the throughput test).
STORE_LATENCY = 14


def store_config(desc, acc_bank):
    """The store unit's configuration of a descriptor (what the sequencer derives)."""
    geo = geometry(desc)
    ob = geo.out_bits
    req = store_request(desc)
    row_mode = desc.out_seg == desc.out_pixel_stride
    return {
        "acc_bank": acc_bank, "out_h": geo.out_h, "out_w": geo.out_w, "out_c": desc.out_c,
        "out_seg": desc.out_seg, "out_bits": desc.out_width, "lane": desc.out_addr % 8,
        "row_step": (desc.out_row_stride * ob // 8) % 8,
        "pixel_step": (desc.out_pixel_stride * ob // 8) % 8,
        "pixel_segments": int(not row_mode and req.inner_count > 1),
        "row_segments": int(req.outer_count > 1),
        "row_align": int(row_mode),
    }


def apply_beats(image, desc, beats):
    """Write ``beats`` into ``image`` as the DMA writer does for the store request (only the
    lanes of each beat that belong to its segment)."""
    covered = store_request(desc).beats()
    assert len(beats) == len(covered), "beats do not match the segments"
    for data, (beat, lo, hi, _, _) in zip(beats, covered, strict=True):
        image[8 * beat + lo:8 * beat + hi] = list(data.to_bytes(8, "little"))[lo:hi]


class StoreHarness(wiring.Component):
    """The store unit over a plain memory; with ``acc_latency`` 2 the read data passes a
    register, as the accelerator's accumulator PLM does."""

    def __init__(self, pes, rows, init, acc_latency=1, elements=1):
        self.store = StoreUnit(pes=pes, acc_rows=rows, acc_latency=acc_latency,
                               elements=elements)
        self.init = init
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.store = self.store
        port = self.store.acc_rd
        mem = memory.Memory(shape=port.data.shape(), depth=1 << len(port.addr), init=[])
        mem.data.init = self.init
        m.submodules.mem = mem
        rd = mem.read_port()
        m.d.comb += [rd.addr.eq(port.addr), rd.en.eq(port.en)]
        if self.store.acc_latency == 2:
            m.d.sync += port.data.eq(rd.data)
        else:
            m.d.comb += port.data.eq(rd.data)
        return m


def _programs():
    rng = np.random.default_rng(8)
    for precision, out_bits, kw in [
            (Precision.A8W8, 8, dict(cout=20)), (Precision.A8W8, 4, dict(cout=1)),
            (Precision.A4W4, 4, dict(cout=3)), (Precision.A16W16, 16, dict(cout=6)),
            (Precision.A8W4, 4, dict(cout=37)), (Precision.A16W8, 8, dict(cout=2)),
            (Precision.A8W8, 16, dict(cout=16))]:
        x, w, qb, cmd, _ = random_conv(rng, precision, out_bits, size=(5, 7), kernel=(3, 3),
                                       stride=(1, 1), pad=(1, 1, 1, 1), **kw)
        for pes in (4, 16):
            step = pes if (pes * out_bits) % 8 == 0 else 2 * pes
            splits = tuple(range(step, w.shape[0], step))
            yield (f"{precision.label}-o{out_bits}-c{kw['cout']}-p{pes}",
                   conv2d_program(x, w, qb, cmd, row_splits=(2,), out_splits=splits), pes)


#: The CI tier runs every descriptor with a store of its own (elements and accumulator latency
#: rotating); the slow tier runs every program with every number of requantizers.
_ELEMENT_CHOICES = [None] + [pytest.param(e, marks=pytest.mark.slow) for e in STORE_ELEMENTS]


@pytest.mark.parametrize("elements", _ELEMENT_CHOICES, ids=lambda e: f"e{e or 'rotating'}")
@pytest.mark.parametrize("name,program,pes", list(_programs()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_store_unit_writes_the_golden_image(name, program, pes, elements):
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    prng = random.Random(name)
    rows = 64
    expected = program.memory.copy()
    got = program.memory.copy()
    stores = 0
    for n, desc in enumerate(program.descriptors):
        if not desc.q_flag:
            continue
        stores += 1
        geo = geometry(desc)
        bank = n % 2
        acc = rng.integers(-1 << 31, 1 << 31, (geo.out_h, geo.out_w, pes))
        mult = rng.integers(1 << 30, 1 << 31, pes)
        shift = rng.integers(-12, 2, pes)
        top = (1 << (geo.out_bits - 1)) - 1
        zp, low, high = int(rng.integers(-top, top)), -top - 1, top
        y = np.clip(multiply_by_quantized_multiplier(acc, mult, shift) + zp, low, high)
        store_tile(expected, desc, y)

        init = [[0] * pes for _ in range(2 * rows)]
        for r, row in enumerate(acc.reshape(-1, pes)):
            init[bank * rows + r] = [int(v) for v in row]
        rotating = STORE_ELEMENTS[(stores + pes // 4) % len(STORE_ELEMENTS)]
        dut = StoreHarness(pes, rows, init, acc_latency=1 + (n // 2) % 2,
                           elements=elements or rotating)
        beats = []

        async def bench(ctx, dut=dut, desc=desc, bank=bank, beats=beats, mult=mult,
                        shift=shift, zp=zp, low=low, high=high):
            store = dut.store
            ctx.set(store.cfg, store_config(desc, bank))
            ctx.set(store.q, {"zero_point": zp, "low": low, "high": high,
                              "multiplier": [int(v) for v in mult],
                              "shift": [int(v) for v in shift]})
            ctx.set(store.start, 1)
            await ctx.tick()
            ctx.set(store.start, 0)
            cycles = 0
            while ctx.get(store.busy):
                ready = prng.random() > 0.3
                ctx.set(store.beats.ready, ready)
                if ready and ctx.get(store.beats.valid):
                    beats.append(ctx.get(store.beats.payload))
                await ctx.tick()
                cycles += 1
                assert cycles < 50000

        sim = Simulator(dut)
        sim.add_clock(1e-8)
        sim.add_testbench(bench)
        sim.run()
        apply_beats(got, desc, beats)
    diff = np.flatnonzero(got != expected)
    assert not len(diff), f"{len(diff)} bytes differ, first at {diff[0]:#x}"


def _custom_descriptors():
    """Strides no TensorLayout produces but descriptors allow: pixel segments that start
    inside a beat, and merged rows of half-byte pixels that must be byte-aligned."""
    rng = np.random.default_rng(9)
    x, w, qb, cmd, _ = random_conv(rng, Precision.A8W8, 8, cout=4, size=(4, 6), kernel=(3, 3),
                                   stride=(1, 1), pad=(1, 1, 1, 1))
    program = conv2d_program(x, w, qb, cmd)
    d = program.descriptors[0]
    yield "pixel-stride-12", program, replace(d, out_pixel_stride=12, out_seg=4,
                                                out_row_stride=12 * 6 + 4)
    # pixels of 8 channels every 12 bytes: every other pixel starts at lane 4, so a group
    # of 8 ends its segment past the beat (two beats from one group)
    x, w, qb, cmd, _ = random_conv(rng, Precision.A8W8, 8, cout=8, size=(4, 6), kernel=(3, 3),
                                   stride=(1, 1), pad=(1, 1, 1, 1))
    program = conv2d_program(x, w, qb, cmd)
    yield "pixel-stride-12-c8", program, replace(program.descriptors[0], out_pixel_stride=12,
                                                 out_row_stride=12 * 6 + 4)
    x, w, qb, cmd, _ = random_conv(rng, Precision.A4W4, 4, cout=1, size=(4, 7), kernel=(3, 3),
                                   stride=(1, 1), pad=(1, 1, 1, 1))
    program = conv2d_program(x, w, qb, cmd)
    yield "merged-nibble-rows", program, replace(program.descriptors[0], out_row_stride=8)
    # merged rows that end 56 bits into a beat, where the next row goes on in the same beat
    # (the packer must not take the rounded-up position for a full beat)
    for precision, bits, width in ((Precision.A4W4, 4, 14), (Precision.A4W4, 4, 13),
                                   (Precision.A8W8, 8, 7)):
        x, w, qb, cmd, _ = random_conv(rng, precision, bits, cout=1, size=(4, width),
                                       kernel=(3, 3), stride=(1, 1), pad=(1, 1, 1, 1))
        program = conv2d_program(x, w, qb, cmd)
        row = -(-width * bits // 8) * 8 // bits           # a row, rounded up to a byte
        yield (f"merged-rows-o{bits}-w{width}", program,
               replace(program.descriptors[0], out_row_stride=row))


@pytest.mark.parametrize("elements", STORE_ELEMENTS)
@pytest.mark.parametrize("name,program,desc", list(_custom_descriptors()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_store_unit_custom_strides(name, program, desc, elements):
    from hls_ref.config import DEFAULT_CONFIG
    from hls_ref.descriptor import ErrorCode, check
    assert check(desc, DEFAULT_CONFIG) == ErrorCode.NONE
    pes, rows = 16, 64
    geo = geometry(desc)
    rng = np.random.default_rng(1)
    image = np.concatenate([program.memory, rng.integers(0, 256, 4096, dtype=np.uint8)])
    expected, got = image.copy(), image.copy()
    acc = rng.integers(-1 << 20, 1 << 20, (geo.out_h, geo.out_w, pes))
    mult = np.full(pes, 1 << 30)
    shift = np.full(pes, -8)
    top = (1 << (geo.out_bits - 1)) - 1
    y = np.clip(multiply_by_quantized_multiplier(acc, mult, shift), -top - 1, top)
    store_tile(expected, desc, y)
    init = [[int(v) for v in row] for row in acc.reshape(-1, pes)] + \
        [[0] * pes for _ in range(2 * rows - geo.out_h * geo.out_w)]
    dut = StoreHarness(pes, rows, init, elements=elements)
    beats = []

    async def bench(ctx):
        store = dut.store
        ctx.set(store.cfg, store_config(desc, 0))
        ctx.set(store.q, {"zero_point": 0, "low": -top - 1, "high": top,
                          "multiplier": [int(v) for v in mult], "shift": [int(v) for v in shift]})
        ctx.set(store.start, 1)
        await ctx.tick()
        ctx.set(store.start, 0)
        ctx.set(store.beats.ready, 1)
        cycles = 0
        while ctx.get(store.busy):
            if ctx.get(store.beats.valid):
                beats.append(ctx.get(store.beats.payload))
            await ctx.tick()
            cycles += 1
            assert cycles < 50000, "the store unit did not finish"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    apply_beats(got, desc, beats)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("elements", STORE_ELEMENTS)
@pytest.mark.parametrize("acc_latency", [1, 2])
@pytest.mark.parametrize("out_bits,cout", [(8, 16), (16, 5), (4, 3)])
def test_store_unit_sends_a_group_per_cycle(out_bits, cout, acc_latency, elements):
    """With a writer that is always ready, a tile of N groups (``ceil(out_seg / group)`` per
    pixel, fillers included) takes N cycles plus a fixed latency: nothing stalls between
    groups or pixels (none of these tiles ends a segment with a group past its beat)."""
    rng = np.random.default_rng(out_bits)
    precision = Precision.A16W16 if out_bits == 16 else Precision.A8W8
    x, w, qb, cmd, _ = random_conv(rng, precision, out_bits, cout=cout, size=(6, 9),
                                   kernel=(3, 3), stride=(1, 1), pad=(1, 1, 1, 1))
    desc = conv2d_program(x, w, qb, cmd).descriptors[0]
    geo = geometry(desc)
    pes, rows = 16, 64
    group = store_group(elements, out_bits)
    groups = geo.out_h * geo.out_w * -(-desc.out_seg // group)
    dut = StoreHarness(pes, rows, [[0] * pes for _ in range(2 * rows)], acc_latency, elements)
    cycles = []

    async def bench(ctx):
        store = dut.store
        ctx.set(store.cfg, store_config(desc, 0))
        ctx.set(store.q, {"zero_point": 0, "low": -8, "high": 7,
                          "multiplier": [1 << 30] * pes, "shift": [0] * pes})
        ctx.set(store.beats.ready, 1)
        ctx.set(store.start, 1)
        await ctx.tick()
        ctx.set(store.start, 0)
        count = 1
        while ctx.get(store.busy):
            await ctx.tick()
            count += 1
            assert count < 50000, "the store unit did not finish"
        cycles.append(count)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # the latency: decision -> PLM read -> sums register (or the PLM's own, with acc_latency
    # 2) -> element register -> requantizer -> FIFO -> packer -> the last beat's acceptance
    assert cycles[0] - groups == STORE_LATENCY, (cycles[0], groups)
