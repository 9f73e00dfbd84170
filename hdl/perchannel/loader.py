"""The per-channel datapath's input loader: DMA read beats -> input PLM rows, one per pixel.

A per-channel command loads its tile (and an add's second input) as pixels of
``seg_bytes = ceil(in_c * act_bits / 8)`` bytes (``hls_ref.perchannel.load_requests``: one DMA
segment per pixel, or rows and blocks of contiguous pixels merged into one segment). The loader
cuts the bytes of the beats into pixels -- a beat may end one pixel and start the next, or hold
several -- and writes each pixel as one PLM row of ``lanes`` 16-bit elements: the ``in_c``
elements sign-extended from ``act_bits``, zeros after them, pixel ``(y, x)`` at row
``base + (y >> 1) * in_w + x`` of the memory of its row's parity (``hdl.perchannel.window``
reads these rows, two vertically adjacent pixels a cycle). It takes one beat a cycle while
its bytes stay within one pixel, and a cycle per pixel boundary otherwise.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import Precision

from ..dma import dma_read_data_layout
from ..params import check_int

__all__ = ["PixelLoader", "pixel_loader_config"]


def pixel_loader_config(addr_width, lanes):
    """The loader's command: first PLM row (bank bit included), pixels per row, bytes and
    channels of a pixel, the precision (its activation width)."""
    return data.StructLayout({
        "base": unsigned(addr_width), "in_w": unsigned(16), "seg_bytes": unsigned(6),
        "in_c": unsigned(lanes.bit_length()), "precision": Precision,
    })


class PixelLoader(wiring.Component):
    """DMA beats of one request -> one PLM row per pixel.

    Members
    -------
    start : ``In(1)``
        Start ``cfg`` (the first beat may come in the same cycle's successor).
    cfg : ``In(pixel_loader_config(addr_width, lanes))``
    beats : ``In(stream.Signature(dma_read_data_layout()))``
    wr_addr, wr_data, wr_en, wr_memory : ``Out``
        The PLM's write port (``lanes`` 16-bit elements per row; ``wr_memory`` the memory:
        the parity of the pixel's row).
    done : ``Out(1)``
        The request's last beat has been taken and its last pixel written (a pulse).
    """

    def __init__(self, *, lanes=16, addr_width=11):
        self._lanes = check_int("lanes", lanes, minimum=1)
        self._addr_width = check_int("addr_width", addr_width, minimum=1)
        super().__init__({
            "start": In(1),
            "cfg": In(pixel_loader_config(addr_width, lanes)),
            "beats": In(stream.Signature(dma_read_data_layout())),
            "wr_addr": Out(addr_width),
            "wr_data": Out(lanes * 16),
            "wr_en": Out(1),
            "wr_memory": Out(1),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = self._lanes
        row_bytes = 2 * lanes                      # the largest pixel: 16-bit elements
        cfg = Signal(self.cfg.shape())
        with m.If(self.start):
            m.d.sync += cfg.eq(self.cfg)

        pixel = Signal(8 * row_bytes)             # the bytes of the pixel being assembled
        filled = Signal(range(row_bytes + 1))     # its bytes so far
        skip = Signal(4)                          # bytes of the held beat already taken
        row = Signal(self._addr_width)            # base + (y >> 1) * in_w
        x = Signal(16)
        odd = Signal()                            # y & 1
        with m.If(self.start):
            m.d.sync += [filled.eq(0), skip.eq(0), row.eq(self.cfg.base), x.eq(0), odd.eq(0)]

        beat = self.beats.payload
        lo = beat.lo + skip
        avail = beat.hi - lo                      # bytes of the beat still to take
        need = cfg.seg_bytes - filled             # bytes the pixel still needs
        ends_pixel = self.beats.valid & (avail >= need)
        used = Mux(ends_pixel, need, avail)       # bytes taken this cycle
        rest = avail - used
        m.d.comb += self.beats.ready.eq(rest == 0)

        # byte j of the pixel takes byte lo + j - filled of the beat, when that is in range
        merged = Signal(8 * row_bytes)
        for j in range(row_bytes):
            byte = pixel[8 * j:8 * j + 8]
            for k in range(8):
                byte = Mux(self.beats.valid & (lo + j - filled == k) & (j >= filled)
                           & (j < filled + used), beat.data[8 * k:8 * k + 8], byte)
            m.d.comb += merged[8 * j:8 * j + 8].eq(byte)

        with m.If(self.beats.valid):
            with m.If(ends_pixel):
                m.d.sync += [filled.eq(0), pixel.eq(0)]
            with m.Else():
                m.d.sync += [filled.eq(filled + used), pixel.eq(merged)]
            m.d.sync += skip.eq(Mux(rest == 0, 0, skip + used))

        # a whole pixel: its elements, sign-extended, zero beyond in_c, written next cycle
        elements = []
        for e in range(lanes):
            nibble = merged.word_select(e, 4) if 4 * e < len(merged) else 0
            byte = merged.word_select(e, 8)
            half = merged.word_select(e, 16)
            value = Mux(cfg.precision == Precision.A4W4, nibble.as_signed(),
                        Mux((cfg.precision == Precision.A8W8)
                            | (cfg.precision == Precision.A8W4), byte.as_signed(),
                            half.as_signed()))
            elements.append(Mux(e < cfg.in_c, value, 0)[:16])
        m.d.sync += [self.wr_en.eq(ends_pixel), self.wr_data.eq(Cat(*elements)),
                     self.wr_addr.eq(row + x), self.wr_memory.eq(odd)]
        with m.If(ends_pixel):
            with m.If(x != cfg.in_w - 1):
                m.d.sync += x.eq(x + 1)
            with m.Else():
                m.d.sync += [x.eq(0), odd.eq(~odd)]
                with m.If(odd):
                    m.d.sync += row.eq(row + cfg.in_w)
        m.d.sync += self.done.eq(self.beats.valid & self.beats.ready & beat.last)
        return m
