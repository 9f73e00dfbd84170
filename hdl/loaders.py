"""Loaders: DMA read beats -> PLM banks and quantization registers.

Each loader consumes the beats of one DMA read request (``hdl.dma``: lane-aligned 64-bit beats,
``lo``/``hi`` marking the bytes that belong to the segment) and writes them where the compute
core and the store unit expect them. A loader is started with its configuration, takes every
beat it is offered and pulses ``done`` with the request's last beat.

* :class:`InputLoader` -- the input tile as dense ST words, pixel after pixel (``groups`` words
  each). In ``words`` mode the DMA segments already hold ST words (a pixel's channels are
  whole 16-bit words in memory): up to four words per cycle, one beat per cycle. In
  ``narrow`` mode a pixel is 4 or 8 bits (one or two channels below 16-bit activations): each
  pixel becomes one ST word, zero-extended, four pixels per cycle; rows are segments.
* :class:`WeightLoader` -- the weight blob into rows of ``pes`` words, one beat (four PEs) per
  cycle (``docs/formats.md`` section 2 orders the blob so that this is a plain copy).
* :class:`QuantLoader` -- the quantization block (``docs/formats.md`` section 3) into
  per-PE registers.
"""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH

from .dma import dma_read_data_layout
from .params import address_bits, check_int
from .plm import LANES, input_write_layout
from .replica import Replicas

__all__ = ["InputLoader", "QuantLoader", "WeightLoader", "input_beat_fields",
           "input_beat_layout", "input_loader_config", "quant_registers_layout"]


def input_loader_config():
    """``narrow`` (pixels of ``pixel_bits`` 4 or 8 bits, one ST word each), ``nibble``
    (``pixel_bits`` is 4), ``in_w`` (pixels per row) and the target ``bank``."""
    return data.StructLayout({
        "narrow": unsigned(1),
        "nibble": unsigned(1),
        "in_w": unsigned(16),
        "bank": unsigned(1),
    })


def input_beat_layout():
    """A DMA read beat (``hdl.dma.dma_read_data_layout``, no tag) as the input loader takes
    it, with three fields derived from it ahead of the loader by :func:`input_beat_fields`:
    ``words`` (3: ST words from ``lo`` to ``hi``, in ``words`` mode), ``last_quarter`` (2: the
    last quarter of the beat that holds a pixel) and ``tail`` (3: its pixels, 1 to 4; both in
    ``narrow`` mode)."""
    fields = dict(dma_read_data_layout().members)
    fields.update(words=unsigned(3), last_quarter=unsigned(2), tail=unsigned(3))
    return data.StructLayout(fields)


def input_beat_fields(beat, cfg):
    """The derived fields of :func:`input_beat_layout` for ``beat`` (a DMA read beat) under
    the loader configuration ``cfg`` (:func:`input_loader_config`), as a dict of values.

    They are computed before a register stage on the loader's way (the read slice), so that
    the loader's ``ready`` and word count, which enable and feed long paths, start from
    registers: in ``narrow`` mode a beat holds ``hi`` (bytes) or ``2*hi`` (nibbles) pixels,
    from pixel 0, taken in quarters of up to four."""
    pixels = Mux(cfg.nibble, beat.hi << 1, beat.hi)
    return {"words": ((beat.hi - beat.lo) >> 1)[:3],
            "last_quarter": ((pixels - 1) >> 2)[:2],
            "tail": (pixels - 1)[:2] + 1}


class InputLoader(wiring.Component):
    """Input tile beats -> :class:`hdl.plm.InputPLM` writes (see the module docstring).

    Parameters
    ----------
    words : int
        Input PLM bank size, words.

    Members
    -------
    start : ``In(1)``
        Pulse: the next beats fill bank ``cfg.bank`` from word 0 (``cfg.in_w`` is taken at
        the pulse).
    cfg : ``In(input_loader_config())``
    beats : ``In(stream.Signature(input_beat_layout()))``
        The request's beats with their derived fields (:func:`input_beat_fields`, under
        ``cfg``).
    wr, wr_en : ``Out(input_write_layout(...))``, ``Out(1)``
    done : ``Out(1)``
        Pulse when the request's last beat has been written.
    """

    def __init__(self, *, words=16384):
        self._words = check_int("words", words, minimum=LANES)
        self._word_bits = address_bits(words)
        super().__init__({
            "start": In(1),
            "cfg": In(input_loader_config()),
            "beats": In(stream.Signature(input_beat_layout())),
            "wr": Out(input_write_layout(self._word_bits + 1)),
            "wr_en": Out(1),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, beat = self.cfg, self.beats.payload
        ptr = Signal(self._word_bits + 1)       # next word address in the bank
        left = Signal(16)                        # pixels of the current row still to write
        sub = Signal(2)                          # quarter of the beat (narrow)
        # min(left, 4) and left <= 4, kept with ``left``: they decide the narrow beats' word
        # count and ``take``, which must not wait for a comparison of ``left``
        left_4 = Signal(3)
        left_le4 = Signal()
        in_w_4 = Mux(cfg.in_w[2:].any(), 4, cfg.in_w[:2])
        new_row = [left.eq(cfg.in_w), left_4.eq(in_w_4), left_le4.eq(cfg.in_w <= 4)]
        with m.If(self.start):
            m.d.sync += [ptr.eq(0), sub.eq(0), *new_row]

        count = Signal(3)
        span = Signal(3)                         # words of the beat (quarter) before the row's end
        limited = Signal()                       # the row ends first: count = left < span
        words = [Signal(OPERAND_WIDTH, name=f"word{k}") for k in range(LANES)]
        take = Signal()                          # the beat is consumed this cycle
        with m.If(~cfg.narrow):
            first = beat.lo[1:]                  # first word of the beat that belongs
            m.d.comb += [span.eq(beat.words), count.eq(span), take.eq(1)]
            for k in range(LANES):
                m.d.comb += words[k].eq(beat.data.word_select(first + k, OPERAND_WIDTH))
        with m.Else():
            # Pixels 4*sub .. 4*sub+3 of the beat; those that belong (before ``hi`` and within
            # the row) form a prefix of ``count`` = min(left, pixels - 4*sub, 4) pixels, and the
            # beat is taken with its last quarter or once the row ends within this one
            # (``left`` <= 4). Both head long paths (``count`` the address and row counters'
            # adders, ``take`` the DMA read slice's ready, which enables its registers), so
            # both come from registers: the beat's last quarter and its pixels arrive with it.
            first = sub * 4
            at_tail = sub == beat.last_quarter
            beat_4 = Mux(at_tail, beat.tail, 4)                 # min(pixels - first, 4)
            m.d.comb += [span.eq(beat_4), limited.eq(left_4 < beat_4),
                         count.eq(Mux(limited, left_4, beat_4)),
                         take.eq(left_le4 | at_tail)]
            for k in range(LANES):
                nibble = beat.data.word_select(first + k, 4)
                byte = beat.data.word_select(first + k, 8)
                m.d.comb += words[k].eq(Mux(cfg.nibble, nibble, byte))
        m.d.comb += [
            self.beats.ready.eq(take),
            self.wr.addr.eq(ptr | (cfg.bank << self._word_bits)),
            self.wr.count.eq(count),
            self.wr_en.eq(self.beats.valid),
            self.done.eq(self.beats.valid & take & beat.last),
        ]
        for k in range(LANES):
            m.d.comb += self.wr.words[k].eq(words[k])
        with m.If(self.beats.valid):
            # a row ends with its last pixel: at the end of its segment, or -- when contiguous
            # rows were merged into one segment -- at a beat boundary inside it. The next
            # address and row count are formed for each of the five spans from the registers
            # alone, and the span (a long path already) only chooses among them; a row ending
            # inside the span (count = left) needs nothing but registers.
            with m.Switch(span):
                for k in range(LANES + 1):
                    # (the span is at most LANES: the last case is the default, so that no
                    # decode of the span enables these registers)
                    with m.Case(k) if k < LANES else m.Default():
                        rest = left - k
                        row_ends = left == k
                        m.d.sync += [
                            ptr.eq(ptr + k),
                            left.eq(Mux(row_ends, cfg.in_w, rest)),
                            left_4.eq(Mux(row_ends, in_w_4,
                                          Mux(left >= k + 4, 4, rest[:3]))),
                            left_le4.eq(Mux(row_ends, cfg.in_w <= 4, left <= k + 4)),
                        ]
            with m.If(limited):
                m.d.sync += [ptr.eq(ptr + left_4), *new_row]
            with m.If(cfg.narrow):
                m.d.sync += sub.eq(Mux(take, 0, sub + 1))
        return m


class WeightLoader(wiring.Component):
    """Weight blob beats -> weight PLM rows of ``pes`` words (four words per beat).

    Members
    -------
    start : ``In(1)``
        Pulse: the next beats fill bank ``bank`` from row 0.
    bank : ``In(1)``
    beats : ``In(stream.Signature(dma_read_data_layout()))``
    wr_addr, wr_data, wr_en : the weight PLM write port (``wr_en`` one bit per 16-bit word)
    done : ``Out(1)``
    """

    def __init__(self, *, pes=16, rows=1024):
        self._pes = check_int("pes", pes, minimum=LANES)
        if pes % LANES:
            raise ValueError(f"pes must be a multiple of {LANES} (one beat holds {LANES} "
                             f"weights), not {pes}")
        self._rows = check_int("rows", rows, minimum=1)
        self._row_bits = address_bits(rows)
        super().__init__({
            "start": In(1),
            "bank": In(1),
            "beats": In(stream.Signature(dma_read_data_layout())),
            "wr_addr": Out(self._row_bits + 1),
            "wr_data": Out(OPERAND_WIDTH * pes),
            "wr_en": Out(pes),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        quads = self._pes // LANES
        row = Signal(self._row_bits)
        quad = Signal(range(quads))
        with m.If(self.start):
            m.d.sync += [row.eq(0), quad.eq(0)]
        beat = self.beats.payload
        m.d.comb += [
            self.beats.ready.eq(1),
            self.wr_addr.eq(row | (self.bank << self._row_bits)),
            self.wr_data.eq(beat.data.replicate(quads)),
            self.done.eq(self.beats.valid & beat.last),
        ]
        with m.If(self.beats.valid):
            m.d.comb += self.wr_en.eq(0b1111 << (quad * LANES))
            with m.If(quad == quads - 1):
                m.d.sync += [quad.eq(0), row.eq(row + 1)]
            with m.Else():
                m.d.sync += quad.eq(quad + 1)
        return m


def quant_registers_layout(pes):
    """The quantization parameters of one command, per PE where per channel."""
    return data.StructLayout({
        "zero_point": signed(16),
        "act_min": signed(16),
        "act_max": signed(16),
        "double": unsigned(1),
        "channels": unsigned(9),
        "bias": data.ArrayLayout(signed(32), pes),
        "multiplier": data.ArrayLayout(unsigned(31), pes),
        "shift": data.ArrayLayout(signed(8), pes),
    })


class QuantLoader(wiring.Component):
    """Quantization-block beats -> registers (channels beyond the block read as zero).

    Members
    -------
    start : ``In(1)``
        Pulse: the beats from the next cycle on are a block. The registers read as zero from
        the second cycle after it on, except for what those beats have written (a beat the
        cycle after ``start`` is kept).
    beats : ``In(stream.Signature(dma_read_data_layout()))``
    q : ``Out(quant_registers_layout(pes))``
    done : ``Out(1)``
    """

    def __init__(self, *, pes=16):
        self._pes = check_int("pes", pes, minimum=1)
        super().__init__({
            "start": In(1),
            "beats": In(stream.Signature(dma_read_data_layout())),
            "q": Out(quant_registers_layout(pes)),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        beat = self.beats.payload
        # no reset: the registers matter only after a block (whose start clears them)
        q = Signal(quant_registers_layout(self._pes), reset_less=True)
        # Where the next beat goes, kept as flags rather than decoded from a beat count: the
        # decode (a subtraction and a comparison per PE) would head the write enables of
        # every register. The block is a header beat, then per channel a bias-and-multiplier
        # beat and a shift beat; channels beyond the PEs shift ``channel`` out to zero.
        header = Signal()                        # the next beat is the header
        second = Signal()                        # the next beat is a channel's shift beat
        channel = Signal(self._pes)              # one-hot: the channel of the next beat
        m.d.comb += [self.q.eq(q), self.beats.ready.eq(1),
                     self.done.eq(self.beats.valid & beat.last)]
        # Clearing reaches every register (over a thousand flip-flops for 16 PEs), so it is
        # done a cycle after ``start`` by a copy of the pulse per PE (and one for the block's
        # header fields): no single net fans out to all of them. A beat written in that cycle
        # is assigned after the clear and so overrides it.
        m.submodules.clear = clear = Replicas(1, self._pes + 1)
        m.d.comb += [clear.d.eq(self.start), clear.enable.eq(1)]
        with m.If(clear.q[self._pes]):
            m.d.sync += [q.zero_point.eq(0), q.act_min.eq(0), q.act_max.eq(0), q.double.eq(0),
                         q.channels.eq(0)]
        for pe in range(self._pes):
            with m.If(clear.q[pe]):
                m.d.sync += [q.bias[pe].eq(0), q.multiplier[pe].eq(0), q.shift[pe].eq(0)]
        with m.If(self.start):
            m.d.sync += header.eq(1)
        with m.Elif(self.beats.valid):
            m.d.sync += [header.eq(0), second.eq(~header & ~second)]
            with m.If(header):
                m.d.sync += channel.eq(1)
            with m.Elif(second):
                m.d.sync += channel.eq(channel << 1)
        # Beats are written whatever ``start`` is, so that it enables none of the registers: a
        # beat in the cycle of ``start`` (not part of the block) is removed by the clear.
        with m.If(self.beats.valid):
            d = beat.data
            with m.If(header):
                m.d.sync += [q.zero_point.eq(d[0:16]), q.act_min.eq(d[16:32]),
                             q.act_max.eq(d[32:48]), q.double.eq(d[48]),
                             q.channels.eq(d[56:64] + 1)]
            for pe in range(self._pes):
                with m.If(~header & channel[pe]):
                    with m.If(second):
                        m.d.sync += q.shift[pe].eq(d[0:8])
                    with m.Else():
                        m.d.sync += [q.bias[pe].eq(d[0:32]), q.multiplier[pe].eq(d[32:63])]
        return m
