# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the per-channel input loader: random pixel layouts (pixels of
one segment each, rows and blocks of contiguous pixels merged into one) in every ST
configuration, beats offered with random gaps; every pixel lands in its PLM row as ``lanes``
sign-extended elements, zeros beyond ``in_c``."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from hdl.perchannel.loader import PixelLoader
from hls_ref import Precision
from hls_ref.dma import dma_request

LANES = 8


def _pixels(precision, x, pixel_stride, row_stride, addr, rng):
    """Memory holding ``x`` (H, W, C) with the given strides (elements) at byte ``addr``; the
    request that loads it, pixel by pixel."""
    bits = precision.act_bits
    h, w, c = x.shape
    size = addr + ((h - 1) * row_stride + w * pixel_stride) * bits // 8 + 16
    memory = rng.integers(0, 256, size, dtype=np.uint8)
    for r in range(h):
        for q in range(w):
            start = addr * 8 + (r * row_stride + q * pixel_stride) * bits
            for k, v in enumerate(x[r, q]):
                bit = start + k * bits
                value = int(v) & ((1 << bits) - 1)
                for b in range(bits):
                    byte, off = divmod(bit + b, 8)
                    memory[byte] = (int(memory[byte]) & ~(1 << off)) | (((value >> b) & 1) << off)
    seg = -(-c * bits // 8)
    request = dma_request(addr, seg, w, pixel_stride * bits // 8, h, row_stride * bits // 8)
    return memory, request, seg


def load(precision, beats, base, w, c, seg, rng):
    """Run the loader on ``beats`` (offered with random gaps); ``({row: data}, done pulses)``."""
    loader = PixelLoader(lanes=LANES, addr_width=6)
    rows, done = {}, []

    async def testbench(ctx):
        ctx.set(loader.cfg, dict(base=base, in_w=w, seg_bytes=seg, in_c=c,
                                 precision=precision))
        ctx.set(loader.start, 1)
        await ctx.tick()
        ctx.set(loader.start, 0)
        index = 0
        for _ in range(20 * len(beats) + 40):
            offer = index < len(beats) and rng.random() < 0.7
            ctx.set(loader.beats.valid, offer)
            if offer:
                data, lo, hi, seg_last, last = beats[index]
                ctx.set(loader.beats.payload, dict(data=data, lo=lo, hi=hi, seg_last=seg_last,
                                                   last=last, err=0))
            if ctx.get(loader.wr_en):
                rows[ctx.get(loader.wr_memory), ctx.get(loader.wr_addr)] = \
                    ctx.get(loader.wr_data)
            done.append(ctx.get(loader.done))
            if offer and ctx.get(loader.beats.ready):
                index += 1
            await ctx.tick()

    sim = Simulator(loader)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return rows, sum(done)


@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
def test_pixels_land_in_their_rows(precision):
    rng = np.random.default_rng(300 + precision.value)
    bits = precision.act_bits
    unit = 8 // bits if bits < 8 else 1
    for case in range(4):
        c = int(rng.integers(1 + (bits == 4), LANES + 1))
        h, w = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        contiguous = case % 2 == 0
        pixel = -(-c // unit) * unit + (0 if contiguous else unit * int(rng.integers(1, 3)))
        row = w * pixel + (0 if contiguous or rng.random() < 0.5 else unit)
        addr = int(rng.integers(0, 16)) * (2 if bits == 16 else 1)
        x = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (h, w, c))
        memory, request, seg = _pixels(precision, x, pixel, row, addr, rng)
        beats = [(int.from_bytes(bytes(memory[8 * b:8 * b + 8]), "little"), lo, hi, sl, last)
                 for b, lo, hi, sl, last in request.beats()]
        base = int(rng.integers(0, 8))
        rows, done = load(precision, beats, base, w, c, seg, rng)
        want = {(y & 1, base + (y >> 1) * w + q):
                sum((int(v) & 0xFFFF) << (16 * lane) for lane, v in enumerate(x[y, q]))
                for y in range(h) for q in range(w)}
        assert rows == want, (case, c, h, w, pixel, row, seg)
        assert done == 1
