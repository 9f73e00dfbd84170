"""The activation stage: shift, round, saturate and the 1024-entry LUT, or partial-sum digits.

An ``act`` in X reads half of the hand-off register (``docs/nve.md``) and makes one word of 8
int8 pixels in ``ro``, valid from X+3 (stage R) until the next ``act``'s (so a MEMB ``wr``
issued 2 cycles after the ``act``, which writes in its M stage, stores it:
:data:`hls_ref.nve.isa.ACT_LATENCY`):

* when a ``setrb`` writes the hand-off register, a scaled copy ``t = (2 acc) >> SHIFT`` (33
  bits, so ``(t + 1) >> 1`` is ``acc / 2^SHIFT`` rounded half up) is written with it: the
  shifter works between the accumulators and that copy, off the path of an ``act``;
* X: every lane of the scaled copy rounded, ``(t + 1) >> 1``, and whether it lies outside
  -512 ... 511 (both from registers); the half's 8 lanes of those (``act.lo``/``act.hi``) or
  of the hand-off register itself (``act.ps``) registered;
* M: LUT path: the rounded value saturated to -512 ... 511, plus 512, addresses the lane's LUT
  copy (each lane has its own: 8 reads per cycle); digit path: byte ``k`` of
  ``acc + R_k`` for the digit ``k`` of the word (:data:`hls_ref.nve.numerics.PARTIAL_ROUNDING`);
* W: each LUT copy's 32-bit word is registered with the byte the index selects (the block
  RAM's output is slow, about 5.8 ns on the ECP5: its path ends at a register);
* R: ``ro`` is the selected bytes or the digits.

The LUT copies are 256 x 32-bit block RAMs holding 4 entries per word, written by the host
4 entries at a time with byte strobes; while the NVE is idle copy 0's read port serves host
reads. ``act.ps`` counts the partial-sum words of the visible hand-off: the count restarts
when a ``setrb`` writes the hand-off register.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.nve.numerics import (
    LUT_ENTRIES,
    MAX_SHIFT,
    PARTIAL_DIGITS,
    PARTIAL_ROUNDING,
    identity_lut,
)

from .isa import ActOpcode, as_config

__all__ = ["LUT_WORDS", "Activation"]

ENTRIES_PER_WORD = 4
#: 32-bit words of a LUT copy.
LUT_WORDS = LUT_ENTRIES // ENTRIES_PER_WORD
ACC_BITS = 32
_INDEX_LIMIT = LUT_ENTRIES // 2  # indices -512 ... 511 before the offset


def _lut_init():
    entries = [int(v) & 0xFF for v in identity_lut()]
    return [sum(entries[4 * r + k] << (8 * k) for k in range(ENTRIES_PER_WORD))
            for r in range(LUT_WORDS)]


class Activation(wiring.Component):
    """``act_lanes`` activation lanes and the LUT.

    Members
    -------
    en, clear : ``In(1)``
        Advance; clear (a new run) makes ``ro`` 0 until the run's first result and restarts
        the partial-sum count.
    busy : ``In(1)``
        A run is in progress: the LUT's ports belong to the lanes.
    x_op : ``In(ActOpcode)``
        The ACT operation of the instruction in X (``NOP`` when it does not execute).
    shift : ``In(5)``
        The ``SHIFT`` setting.
    handoff : ``In(ArrayLayout(signed(32), lanes))``
        The hand-off register.
    acc : ``In(ArrayLayout(signed(32), lanes))``
        The accumulators: what the hand-off register takes when ``w_handoff`` is high.
    w_handoff : ``In(1)``
        The hand-off register is written at the end of this cycle.
    ro : ``Out(word_bits)``
        The latest result (0 before the run's first), from stage R.
    lut_w_address, lut_w_data, lut_w_strobe, lut_w_en : ``In(...)``
        Host write of LUT word ``lut_w_address`` (entries ``4a ... 4a+3``), per-entry strobes.
    lut_r_address, lut_r_en : ``In(...)``; lut_r_data : ``Out(32)``
        Host read of a LUT word, data one cycle after ``lut_r_en`` (only while idle).
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        word_address = (LUT_WORDS - 1).bit_length()
        super().__init__({
            "en": In(1), "clear": In(1), "busy": In(1),
            "x_op": In(ActOpcode),
            "shift": In(MAX_SHIFT.bit_length()),
            "handoff": In(data.ArrayLayout(signed(ACC_BITS), config.lanes)),
            "acc": In(data.ArrayLayout(signed(ACC_BITS), config.lanes)),
            "w_handoff": In(1),
            "ro": Out(config.word_bits),
            "lut_w_address": In(word_address), "lut_w_data": In(32),
            "lut_w_strobe": In(ENTRIES_PER_WORD), "lut_w_en": In(1),
            "lut_r_address": In(word_address), "lut_r_en": In(1), "lut_r_data": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        n = config.act_lanes
        wide = ACC_BITS + 1

        # ---- the scaled copy of the hand-off register, written with it (not cleared with a
        # new run, so that its only enable is the write: an act before the run's first setrb
        # faults, and what it makes is never seen)
        # (the shifter outside the write's condition: a comb assignment under it would put
        # the write enable, a function of the stall, into the shifter's logic)
        scaled = Signal(data.ArrayLayout(signed(wide), config.lanes))
        for j in range(config.lanes):
            doubled = Signal(signed(wide), name=f"doubled{j}")
            shifted = Signal(signed(wide), name=f"shifted{j}")
            m.d.comb += [doubled.eq(self.acc[j] << 1), shifted.eq(doubled >> self.shift)]
            with m.If(self.w_handoff):
                m.d.sync += scaled[j].eq(shifted)

        # ---- X: every lane of the scaled copy rounded (``(t + 1) >> 1``) and its saturation
        # found, from registers; then the half's lanes, rounded (LUT) or as they are (digits)
        count = Signal(range(2 * PARTIAL_DIGITS))  # next partial-sum word of the hand-off
        ps = self.x_op == ActOpcode.PS
        half = (self.x_op == ActOpcode.HI) | (ps & count[0])
        digit = count[1:]
        saturation = data.StructLayout({"over": 1, "under": 1})
        m_t = Signal(data.ArrayLayout(signed(wide), n))  # rounded value, or a digit's lane
        m_sat = Signal(data.ArrayLayout(saturation, n))
        m_op = Signal(ActOpcode)
        m_digit = Signal.like(digit)
        rounded, sat = [], []
        for j in range(config.lanes):
            value = Signal(signed(ACC_BITS), name=f"rounded{j}")
            flags = Signal(saturation, name=f"saturation{j}")
            # in range iff the bits above the index's all equal the sign (no comparator)
            high = value[(_INDEX_LIMIT - 1).bit_length():]
            negative = value[-1]
            m.d.comb += [value.eq((scaled[j] + 1) >> 1),
                         flags.over.eq(~negative & high.any()),
                         flags.under.eq(negative & ~high.all())]
            rounded.append(value)
            sat.append(flags)
        with m.If(self.clear):
            m.d.sync += [m_op.eq(ActOpcode.NOP), count.eq(0)]
        with m.Elif(self.en):
            for j in range(n):
                m.d.sync += [
                    m_t[j].eq(Mux(ps, Mux(half, self.handoff[n + j], self.handoff[j]),
                                  Mux(half, rounded[n + j], rounded[j]))),
                    m_sat[j].eq(Mux(half, sat[n + j], sat[j])),
                ]
            m.d.sync += [m_op.eq(self.x_op), m_digit.eq(digit)]
            with m.If(self.w_handoff):
                m.d.sync += count.eq(0)
            with m.Elif(ps):
                m.d.sync += count.eq(count + 1)

        # ---- M: LUT indices (read addresses) or the digit bytes
        # (a Mux chain, not an Array: Icarus would not evaluate the Array's process before
        # m_digit first changes)
        rounding = Const(0, wide)
        for k, r in enumerate(PARTIAL_ROUNDING):
            rounding = Mux(m_digit == k, Const(r, wide), rounding)
        lut_read = self.en & ((m_op == ActOpcode.LO) | (m_op == ActOpcode.HI))
        w_select = Signal(data.ArrayLayout(2, n))
        w_digits = Signal(data.ArrayLayout(8, n))
        w_ps = Signal()
        w_act = Signal()
        with m.If(self.clear):
            m.d.sync += w_act.eq(0)
        with m.Elif(self.en):
            m.d.sync += w_act.eq(m_op != ActOpcode.NOP)
            with m.If(m_op != ActOpcode.NOP):
                m.d.sync += w_ps.eq(m_op == ActOpcode.PS)

        copies = []
        for j in range(n):
            index = Signal(range(LUT_ENTRIES), name=f"index{j}")
            summed = Signal(signed(wide), name=f"summed{j}")
            m.d.comb += [
                index.eq(Mux(m_sat[j].over, LUT_ENTRIES - 1,
                             Mux(m_sat[j].under, 0, m_t[j] ^ _INDEX_LIMIT))),
                summed.eq(m_t[j] + rounding),
            ]
            with m.If(self.en & (m_op == ActOpcode.PS)):
                m.d.sync += w_digits[j].eq(summed.word_select(m_digit, 8))
            with m.If(lut_read):
                m.d.sync += w_select[j].eq(index[:2])

            copy = memory.Memory(shape=32, depth=LUT_WORDS, init=_lut_init())
            m.submodules[f"lut{j}"] = copy
            write = copy.write_port(granularity=8)
            read = copy.read_port()
            m.d.comb += [
                write.addr.eq(self.lut_w_address), write.data.eq(self.lut_w_data),
                write.en.eq(Mux(self.lut_w_en, self.lut_w_strobe, 0)),
            ]
            if j == 0:  # also the host's read port while idle
                m.d.comb += [
                    read.addr.eq(Mux(self.busy, index[2:], self.lut_r_address)),
                    read.en.eq(Mux(self.busy, lut_read, self.lut_r_en)),
                    self.lut_r_data.eq(read.data),
                ]
            else:
                m.d.comb += [read.addr.eq(index[2:]), read.en.eq(lut_read)]
            copies.append(read.data)

        # ---- W: the LUT words registered with their byte selects; R: ro
        r_words = Signal(data.ArrayLayout(32, n))
        r_select = Signal.like(w_select)
        r_digits = Signal(8 * n)
        r_ps, has_result = Signal(), Signal()
        with m.If(self.clear):
            m.d.sync += has_result.eq(0)
        with m.Elif(self.en & w_act):
            m.d.sync += [
                *(r_words[j].eq(copies[j]) for j in range(n)), r_select.eq(w_select),
                r_digits.eq(w_digits), r_ps.eq(w_ps), has_result.eq(1),
            ]
        r_looked_up = Cat(r_words[j].word_select(r_select[j], 8) for j in range(n))
        m.d.comb += self.ro.eq(Mux(has_result, Mux(r_ps, r_digits, r_looked_up), 0))
        return m
