"""The 2D-convolution compute core: PLM addresses -> ST PE row -> accumulator PLM.

One command computes an ``out_h x out_w`` output tile for the ``pes`` output channels of the
weight bank, from the input tile in the input bank (``in_h x in_w`` pixels of ``groups``
16-bit ST words each, dense, row-major, as the input loader writes them). The loop nest,
innermost last, is::

    for oy < out_h, ox < out_w:              # one output pixel per PE sum
        for ky < kernel_h, kx < kernel_w, g < groups:
            a = input[(oy*sh - pad_top + ky, ox*sw - pad_left + kx), g]  or pad_word
            b[pe] = weights[(ky*kernel_w + kx)*groups + g][pe]
            acc[pe] += st(a, b[pe])           # one ST MAC per PE per cycle

so the PE row receives one operand pair per cycle from the first cycle to the last without a
bubble, also across output pixels. Every sum leaves the PE row into the accumulate stage,
which adds the folded bias (``acc_flag`` 0) or the partial sum the accumulator PLM holds for
that pixel (``acc_flag`` 1) and writes the result back: one pixel per cycle, so nothing ever
waits and the core needs no back-pressure.

Addresses advance by additions only: the word address within a kernel row is contiguous
across ``kx`` and ``g``, and the strides between kernel rows, output pixels and output rows
(``row_words = in_w * groups`` and its multiples) are computed once per command. Addresses of
padded taps may wrap; they are never used (the pad flag comes from the tap's coordinates).
"""

import itertools

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH, Precision

from .dsp import PipelinedMultiplier, shift_add_product
from .params import address_bits, check_int, check_multiplier
from .pe import PERow
from .replica import Replicas
from .st_multiplier import MAX_STAGES

__all__ = ["ACC_BITS", "ConvCore", "core_command_layout"]

ACC_BITS = 32
_DIM = 16          # descriptor width of tile dimensions



def core_command_layout(in_words):
    """What the core needs of one command (the sequencer derives it from the descriptor).

    ``groups`` is ST words per input pixel; ``pad_word`` the padding value replicated into
    every ST slot; the ``*_bank`` bits select the PLM banks."""
    return data.StructLayout({
        "precision": Precision,
        "kernel_h": unsigned(4),
        "kernel_w": unsigned(4),
        "stride_h": unsigned(2),
        "stride_w": unsigned(2),
        "pad_top": unsigned(4),
        "pad_left": unsigned(4),
        "in_h": unsigned(_DIM),
        "in_w": unsigned(_DIM),
        "groups": unsigned(address_bits(in_words + 1)),
        "out_h": unsigned(_DIM),
        "out_w": unsigned(_DIM),
        "pad_word": unsigned(OPERAND_WIDTH),
        "acc_flag": unsigned(1),
        "in_bank": unsigned(1),
        "w_bank": unsigned(1),
        "acc_bank": unsigned(1),
    })


class ConvCore(wiring.Component):
    """Runs one convolution command over the PLMs (see the module docstring).

    Parameters
    ----------
    pes : int
        Processing elements (output channels per command).
    in_words : int
        Input PLM bank size, 16-bit words.
    w_rows : int
        Weight PLM bank size, rows of ``pes`` words.
    acc_rows : int
        Accumulator PLM bank size, rows of ``pes`` 32-bit sums (output pixels).
    precisions : collection of Precision
        Configurations the PE row implements.
    stages : int
        Pipeline stages of the ST multipliers.
    multiplier : str
        How the ST multipliers are built: ``"lut"``, ``"dsp4"`` or ``"dsp2"`` (see
        :class:`~hdl.st_multiplier.STMultiplier`).

    Members
    -------
    start : ``In(1)``
        Pulse: run ``cmd`` (held stable until ``done``).
    cmd : ``In(core_command_layout(in_words))``
    bias : ``In(ArrayLayout(signed(32), pes))``
        Folded bias per PE, used when ``cmd.acc_flag`` is 0.
    busy : ``Out(1)``
    done : ``Out(1)``
        Pulse when the last sum of the command is in the accumulator PLM.
    mac : ``Out(1)``
        High on every cycle an operand pair enters the PE row (useful MAC cycles).
    in_rd : ``In(ReadPort.Signature)``
        Input PLM, one 16-bit word, bank bit on top of the word address; the word arrives
        ``in_latency`` cycles (1 or 2) after its address.
    w_rd : ``In(ReadPort.Signature)``
        Weight PLM, ``pes`` words, bank bit on top of the row address; the row arrives the
        cycle after its address (with ``in_latency`` 2 the core registers it once more).
    acc_rd, acc_wr : ``In(ReadPort.Signature)``, ``In(WritePort.Signature)``
        Accumulator PLM, ``pes`` sums, bank bit on top of the row address; the read data
        arrives ``acc_latency`` cycles (1 or 2) after its address (the core adds a cycle to
        its accumulate stage with 2).
    """

    def __init__(self, *, pes=16, in_words=16384, w_rows=1024, acc_rows=512,
                 precisions=tuple(Precision), stages=2, multiplier="lut", in_latency=1,
                 acc_latency=1):
        self._pes = check_int("pes", pes, minimum=1)
        self._in_words = check_int("in_words", in_words, minimum=1)
        self._w_rows = check_int("w_rows", w_rows, minimum=1)
        self._acc_rows = check_int("acc_rows", acc_rows, minimum=1)
        self._precisions = tuple(Precision.parse(p) for p in precisions)
        self._stages = check_int("stages", stages, minimum=0, maximum=MAX_STAGES)
        self._multiplier = check_multiplier(multiplier)
        self._in_latency = check_int("in_latency", in_latency, minimum=1, maximum=2)
        self._acc_latency = check_int("acc_latency", acc_latency, minimum=1, maximum=2)
        words = data.ArrayLayout(unsigned(OPERAND_WIDTH), pes)
        sums = data.ArrayLayout(signed(ACC_BITS), pes)
        super().__init__({
            "start": In(1),
            "cmd": In(core_command_layout(in_words)),
            "bias": In(sums),
            "busy": Out(1),
            "done": Out(1),
            "mac": Out(1),
            "in_rd": In(memory.ReadPort.Signature(addr_width=address_bits(in_words) + 1,
                                                  shape=unsigned(OPERAND_WIDTH))),
            "w_rd": In(memory.ReadPort.Signature(addr_width=address_bits(w_rows) + 1, shape=words)),
            "acc_rd": In(memory.ReadPort.Signature(addr_width=address_bits(acc_rows) + 1,
                                                   shape=sums)),
            "acc_wr": In(memory.WritePort.Signature(addr_width=address_bits(acc_rows) + 1,
                                                    shape=sums)),
        })

    @property
    def pes(self):
        return self._pes

    @property
    def in_latency(self):
        """Cycles from an input PLM address to its word (1 or 2)."""
        return self._in_latency

    @property
    def acc_latency(self):
        """Cycles from an accumulator PLM read address to its data (1 or 2)."""
        return self._acc_latency

    def elaborate(self, platform):
        m = Module()
        cmd = self.cmd
        in_bits = address_bits(self._in_words)
        w_bits = address_bits(self._w_rows)
        acc_bits = address_bits(self._acc_rows)
        m.submodules.pes = pe_row = PERow(pes=self._pes, precisions=self._precisions,
                                          stages=self._stages, acc_width=ACC_BITS,
                                          multiplier=self._multiplier)

        # --- per-command constants (setup cycles 1-3; the fourth starts the loops) --------
        # The two wide products come out of DSP blocks with their own operand and product
        # registers (``PipelinedMultiplier``), two cycles after the start: a DSP block
        # between fabric registers is a long path wherever the placer puts it. The narrow
        # factors (strides, pads) multiply by shifts and additions, from registers of their
        # own copied in the first setup cycle, and the sums using products come a cycle later.
        wide = max(len(cmd.in_w), len(cmd.groups), len(cmd.out_h), len(cmd.out_w)) + 1
        m.submodules.row_words_mul = row_words_mul = PipelinedMultiplier(wide)
        m.submodules.pixels_mul = pixels_mul = PipelinedMultiplier(wide)
        m.d.comb += [row_words_mul.x.eq(cmd.in_w), row_words_mul.y.eq(cmd.groups),
                     pixels_mul.x.eq(cmd.out_h), pixels_mul.y.eq(cmd.out_w),
                     row_words_mul.enable.eq(1), pixels_mul.enable.eq(1)]
        factors = {name: Signal.like(getattr(cmd, name), name=f"factor_{name}")
                   for name in ("groups", "stride_w", "stride_h", "pad_left", "pad_top")}
        row_words = Signal(in_bits + 1)          # words per input row
        row_step = Signal(in_bits + 2)           # words between output rows' windows
        pix_step = Signal(in_bits + 2)           # words between output pixels' windows
        top = Signal(in_bits)                    # pad_top * row_words (modulo the PLM size)
        left = Signal(in_bits)                   # pad_left * groups (modulo the PLM size)
        last_pixel = Signal(2 * _DIM)            # out_h * out_w, then out_h * out_w - 1
        setup = Signal(range(5))                 # 1..4 while setting up, 0 otherwise
        running = Signal()

        # --- loop counters (stage A: the tap whose operands are being read) ----------------
        g = Signal.like(cmd.groups)
        kx = Signal(4)
        ky = Signal(4)
        ox = Signal(_DIM)
        oy = Signal(_DIM)
        ix_base = Signal(signed(_DIM + 2))       # input column of the window's left edge
        iy_base = Signal(signed(_DIM + 2))       # input row of the window's top edge
        ix = Signal(signed(_DIM + 2))
        iy = Signal(signed(_DIM + 2))
        row_base = Signal(in_bits)
        pix_base = Signal(in_bits)
        tap_base = Signal(in_bits)
        addr = Signal(in_bits)
        wrow = Signal(w_bits)

        # busy from ``start`` until the last sum is written (``done``)
        active = Signal()
        m.d.comb += self.busy.eq(active)
        with m.If(self.start & ~active):
            m.d.sync += [setup.eq(1), active.eq(1)]
        # Whether each loop counter is at its last value is a register of its own
        # (``at_last``), kept up to date as the counter steps: its comparison and the four
        # loops' chain of conditions would otherwise head every counter's and the input PLM
        # address's next value. A counter stepping from value v is at its last value next
        # when v == count - 2, or, wrapping to 0, when count == 1; both constants are
        # registered during the setup (``cmd`` holds still).
        loops = (("g", cmd.groups), ("kx", cmd.kernel_w), ("ky", cmd.kernel_h),
                 ("ox", cmd.out_w), ("oy", cmd.out_h))
        before_last, single, at_last = {}, {}, {}
        for name, count in loops:
            before_last[name] = Signal((count - 2).shape(), name=f"{name}_before_last")
            single[name] = Signal(name=f"{name}_single")
            at_last[name] = Signal(name=f"{name}_at_last")
            with m.If(setup == 1):
                m.d.sync += [before_last[name].eq(count - 2), single[name].eq(count == 1)]
        with m.If(setup == 1):
            m.d.sync += [factor.eq(getattr(cmd, name)) for name, factor in factors.items()]
            m.d.sync += setup.eq(2)
        f = factors
        with m.If(setup == 2):
            # (the DSP products of the command as it was at the start)
            m.d.sync += [row_words.eq(row_words_mul.product),
                         last_pixel.eq(pixels_mul.product),
                         pix_step.eq(shift_add_product(f["stride_w"], f["groups"])),
                         left.eq(shift_add_product(f["pad_left"], f["groups"])), setup.eq(3)]
        with m.If(setup == 3):
            m.d.sync += [
                row_step.eq(shift_add_product(f["stride_h"], row_words)),
                top.eq(shift_add_product(f["pad_top"], row_words)),
                last_pixel.eq(last_pixel - 1),
                setup.eq(4),
            ]
        # word address of the window of pixel (0, 0); padded taps' addresses may wrap
        origin = (-top - left)[:in_bits]
        counters = {"g": g, "kx": kx, "ky": ky, "ox": ox, "oy": oy}
        # ``wraps[name]``: this loop and every inner one are at their last values (registers
        # too, kept from the flags' next values, so that the loops' chain of conditions is no
        # chain of gates in front of the counters and the PLM address; the innermost loop's
        # is its own flag)
        names = [name for name, _ in loops]
        wraps = {name: Signal(name=f"{name}_wraps") for name in names[1:]}
        wraps["g"] = at_last["g"]
        # a loop steps when every inner loop is at its last value
        steps = {"g": running}
        for inner, outer in itertools.pairwise(names):
            steps[outer] = running & wraps[inner]
        at_next = {name: Mux(steps[name], Mux(at_last[name], single[name],
                                              counters[name] == before_last[name]),
                             at_last[name])
                   for name in names}

        def cumulative(flags):
            result, total = [], flags["g"]
            for name in names[1:]:
                total = total & flags[name]
                result.append(wraps[name].eq(total))
            return result

        with m.If(setup == 4):
            m.d.sync += [at_last[name].eq(single[name]) for name in names]
            m.d.sync += cumulative(single)
            m.d.sync += [
                g.eq(0), kx.eq(0), ky.eq(0), ox.eq(0), oy.eq(0), wrow.eq(0),
                ix_base.eq(-cmd.pad_left), ix.eq(-cmd.pad_left),
                iy_base.eq(-cmd.pad_top), iy.eq(-cmd.pad_top),
                row_base.eq(origin), pix_base.eq(origin), tap_base.eq(origin), addr.eq(origin),
                setup.eq(0), running.eq(1),
            ]
        with m.If(running):
            m.d.sync += [at_last[name].eq(at_next[name]) for name in names]
            m.d.sync += cumulative(at_next)
            # the loops' updates, outermost last: a later assignment overrides an earlier one
            m.d.sync += [g.eq(g + 1), addr.eq(addr + 1), wrow.eq(wrow + 1)]
            with m.If(wraps["g"]):
                m.d.sync += [g.eq(0), kx.eq(kx + 1), ix.eq(ix + 1)]
            with m.If(wraps["kx"]):
                next_tap = tap_base + row_words
                m.d.sync += [kx.eq(0), ix.eq(ix_base), ky.eq(ky + 1), iy.eq(iy + 1),
                             tap_base.eq(next_tap), addr.eq(next_tap)]
            with m.If(wraps["ky"]):
                next_pix = pix_base + pix_step
                m.d.sync += [ky.eq(0), iy.eq(iy_base), wrow.eq(0),
                             ox.eq(ox + 1), ix_base.eq(ix_base + cmd.stride_w),
                             ix.eq(ix_base + cmd.stride_w),
                             pix_base.eq(next_pix), tap_base.eq(next_pix),
                             addr.eq(next_pix)]
            with m.If(wraps["ox"]):
                next_row = row_base + row_step
                m.d.sync += [ox.eq(0), ix_base.eq(-cmd.pad_left),
                             ix.eq(-cmd.pad_left),
                             oy.eq(oy + 1), iy_base.eq(iy_base + cmd.stride_h),
                             iy.eq(iy_base + cmd.stride_h),
                             row_base.eq(next_row), pix_base.eq(next_row),
                             tap_base.eq(next_row), addr.eq(next_row)]
            with m.If(wraps["oy"]):
                m.d.sync += running.eq(0)

        # --- stage B: PLM data arrives; operands enter the PE row a cycle later ----------
        padded = (iy < 0) | (iy >= cmd.in_h) | (ix < 0) | (ix >= cmd.in_w)
        m.d.comb += [
            self.in_rd.addr.eq(addr | (cmd.in_bank << in_bits)),
            self.w_rd.addr.eq(wrow | (cmd.w_bank << w_bits)),
            self.mac.eq(running),
        ]
        valid_b = Signal()
        padded_b = Signal()
        clear_b = Signal()
        last_b = Signal()
        m.d.sync += [
            valid_b.eq(running),
            padded_b.eq(padded),
            clear_b.eq((g == 0) & (kx == 0) & (ky == 0)),
            last_b.eq(wraps["ky"]),
        ]
        # a registered input PLM (``in_latency`` 2): the tap's flags and weight row wait a
        # cycle for its word, and the weight PLM's output meets a register with no logic
        w_row = self.w_rd.data
        if self._in_latency == 2:
            tap = (valid_b, padded_b, clear_b, last_b)
            delayed = [Signal.like(s, name=f"{s.name}2") for s in tap]
            w_row = Signal.like(self.w_rd.data, name="w_row2")
            m.d.sync += [d.eq(s) for d, s in zip(delayed, tap)]
            m.d.sync += w_row.eq(self.w_rd.data)
            valid_b, padded_b, clear_b, last_b = delayed
        # the operands are registered before the PE row: the block RAMs' clock-to-output delay
        # and the lane and pad multiplexers would otherwise add to the multipliers' first stage
        operands = Signal.like(pe_row.i.payload, reset_less=True)
        valid_op = Signal()
        m.d.sync += [
            valid_op.eq(valid_b),
            operands.a.eq(Mux(padded_b, cmd.pad_word, self.in_rd.data)),
            operands.b.eq(w_row),
            operands.precision.eq(cmd.precision),
            operands.clear.eq(clear_b),
            operands.last.eq(last_b),
        ]
        m.d.comb += [
            pe_row.i.valid.eq(valid_op),
            pe_row.i.payload.eq(operands),
            pe_row.o.ready.eq(1),
        ]

        # --- accumulate stages: read the pixel's partial sums, add, write back ------------
        # C: the accumulator PLM delivers the partial sums of ``pixel_c``; they (or the bias)
        # are registered with the sums. D: the addition and the write. The PLM's 5.6 ns
        # clock-to-output, the bank multiplexer, a 32-bit carry chain and the write-data setup
        # would otherwise be one path. Each pixel is read once and written once per command and
        # the next command starts after ``done``, so no read can see a write still in flight.
        pixel = Signal(acc_bits)                 # output pixel of the next PE-row sum
        sums_c = Signal.like(pe_row.o.payload, reset_less=True)
        valid_c = Signal()
        pixel_c = Signal(acc_bits)
        # read every cycle: the address holds until the next sum, so the data is the partial
        # sum of ``pixel_c`` when it is used (an enable would fan out to every read-data bit)
        m.d.comb += [
            self.acc_rd.addr.eq(pixel | (cmd.acc_bank << acc_bits)),
            self.acc_rd.en.eq(1),
        ]
        m.d.sync += [valid_c.eq(pe_row.o.valid), sums_c.eq(pe_row.o.payload),
                     pixel_c.eq(pixel)]
        with m.If(pe_row.o.valid):
            m.d.sync += pixel.eq(pixel + 1)
        if self._acc_latency == 2:
            # a registered accumulator PLM: the sums wait a cycle more for their partial sums
            delayed = (Signal.like(valid_c, name="valid_c2"),
                       Signal.like(sums_c, name="sums_c2", reset_less=True),
                       Signal.like(pixel_c, name="pixel_c2"))
            m.d.sync += [d.eq(s) for d, s in zip(delayed, (valid_c, sums_c, pixel_c))]
            valid_c, sums_c, pixel_c = delayed
        sums_d = Signal.like(sums_c, reset_less=True)
        base_d = Signal.like(self.acc_wr.data, reset_less=True)
        valid_d = Signal()
        pixel_d = Signal(acc_bits)
        m.d.sync += [valid_d.eq(valid_c), sums_d.eq(sums_c), pixel_d.eq(pixel_c)]
        # Whether to add the partial sum or the bias is a flag of the command that selects
        # every bit of every sum: one copy per PE (registered at the start; the first sum
        # comes many cycles later), so no single flip-flop drives 32 x ``pes`` selects.
        m.submodules.acc_flags = acc_flags = Replicas(1, self._pes)
        m.d.comb += [acc_flags.d.eq(cmd.acc_flag), acc_flags.enable.eq(self.start & ~active)]
        for pe in range(self._pes):
            m.d.sync += base_d[pe].eq(Mux(acc_flags.q[pe], self.acc_rd.data[pe], self.bias[pe]))
        total = Signal.like(self.acc_wr.data)
        for pe in range(self._pes):
            m.d.comb += total[pe].eq(base_d[pe] + sums_d[pe])
        m.d.comb += [
            self.acc_wr.addr.eq(pixel_d | (cmd.acc_bank << acc_bits)),
            self.acc_wr.data.eq(total),
            self.acc_wr.en.eq(valid_d),
        ]

        # done when the command's last pixel has been written
        finishing = valid_d & (pixel_d == last_pixel)
        m.d.comb += self.done.eq(finishing)
        with m.If(finishing):
            m.d.sync += [pixel.eq(0), active.eq(0)]
        return m
