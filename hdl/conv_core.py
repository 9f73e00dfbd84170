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
bubble, also across output pixels and across commands: the next command is taken in the
cycle its predecessor reads its last operands, and its first operands follow in the next
cycle while the predecessor's last sums are still in the PE row. Every sum leaves the PE row
into the accumulate stage, which adds the folded bias (``acc_flag`` 0) or the partial sum the
accumulator PLM holds for that pixel (``acc_flag`` 1) and writes the result back: one pixel
per cycle, so nothing ever waits and the core needs no back-pressure.

Addresses advance by additions only: the word address within a kernel row is contiguous
across ``kx`` and ``g``, and the strides between kernel rows, output pixels and output rows
(``row_words = in_w * groups`` and its multiples) come with the command (:func:`core_command`
and the conv2d datapath's front end derive them). Addresses of padded taps may wrap; they are
never used (the pad flag comes from the tap's coordinates).

Two commands may be in the core at once: one reading its operands (the *issue* side), the
one before it leaving the PE row and accumulating. What the later stages need of a command
(pad word and precision; accumulator bank, ``acc_flag``, operand bank of the bias and the last
pixel) travels with its operands and sums, so each stage works on its own command.
"""

import itertools

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH, Precision

from .params import address_bits, check_int, check_multiplier
from .pe import PERow
from .replica import Replicas
from .st_multiplier import MAX_STAGES

__all__ = ["ACC_BITS", "ConvCore", "core_command", "core_command_layout"]

ACC_BITS = 32
_DIM = 16          # descriptor width of tile dimensions
#: A command that adds to the partial sums of the one before it waits for that one's last
#: write if that one has fewer output pixels than this (its sums would still be on their way
#: when the new command reads them).
_ACC_CHAIN_PIXELS = 4


def core_command_layout(in_words, acc_rows):
    """What the core needs of one command (the conv2d front end derives it from the
    descriptor; :func:`core_command` does in Python).

    ``groups`` is ST words per input pixel; ``pad_word`` the padding value replicated into
    every ST slot; ``row_words`` = ``in_w * groups``, ``row_step`` = ``stride_h * row_words``
    and ``pix_step`` = ``stride_w * groups`` are input PLM words between input rows, between
    output rows' windows and between output pixels' windows; ``origin`` is the word address of
    output pixel (0, 0)'s window, ``-(pad_top * row_words + pad_left * groups)`` modulo the
    bank size; ``last_pixel`` = ``out_h * out_w - 1``; the ``*_bank`` bits select the PLM
    banks."""
    in_bits = address_bits(in_words)
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
        "row_words": unsigned(in_bits + 1),
        "row_step": unsigned(in_bits + 2),
        "pix_step": unsigned(in_bits + 2),
        "origin": unsigned(in_bits),
        "last_pixel": unsigned(address_bits(acc_rows)),
        "acc_flag": unsigned(1),
        "in_bank": unsigned(1),
        "w_bank": unsigned(1),
        "acc_bank": unsigned(1),
    })


def core_command(*, in_words, acc_rows, **fields):
    """A core command (a dict for :func:`core_command_layout`) from its geometry: the fields
    the front end derives (``row_words``, ``row_step``, ``pix_step``, ``origin``,
    ``last_pixel``) are computed from the others."""
    in_bits = address_bits(in_words)
    row_words = fields["in_w"] * fields["groups"]
    command = dict(fields)
    command.update(
        row_words=row_words % (1 << (in_bits + 1)),
        row_step=fields["stride_h"] * row_words % (1 << (in_bits + 2)),
        pix_step=fields["stride_w"] * fields["groups"] % (1 << (in_bits + 2)),
        origin=-(fields["pad_top"] * row_words + fields["pad_left"] * fields["groups"])
        % (1 << in_bits),
        last_pixel=(fields["out_h"] * fields["out_w"] - 1) % (1 << address_bits(acc_rows)))
    return command


def _sum_tag_layout(acc_bits):
    """What the accumulate stages need of the command a sum belongs to."""
    return data.StructLayout({"acc_bank": 1, "acc_flag": 1, "in_bank": 1,
                              "last_pixel": unsigned(acc_bits)})


class ConvCore(wiring.Component):
    """Runs convolution commands over the PLMs (see the module docstring).

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
    in_latency : int
        Cycles from an input PLM address to its word (1 or 2).
    w_stages : int
        Registers on the weight PLM's row before the operand register (0 to 2; default
        ``in_latency - 1``, at least that). The input word and its tap's flags wait to match,
        so operands meet ``1 + w_stages`` cycles after their addresses. Two give the placer a
        register it may put between the weight block RAMs and the PE row (nextpnr need not).
    w_latency : int
        Cycles from a weight PLM address to its row (1 or 2, at most ``1 + w_stages``): a PLM
        that registers its row once more (on the ECP5 in the block RAMs' output registers)
        provides one of the ``w_stages`` registers, and the core adds the others.

    Members
    -------
    cmd : ``In(stream.Signature(core_command_layout(in_words, acc_rows)))``
        Commands, taken one at a time: ``ready`` rises in the cycle the running command reads
        its last operands (or when the core is idle), unless the accumulate stages still hold
        a command besides the running one, or the offered command adds to the partial sums
        of a predecessor of fewer than four output pixels whose sums are not all written
        (``ready`` then depends on ``cmd.payload.acc_flag``).
    bias : ``In(ArrayLayout(ArrayLayout(signed(32), pes), 2))``
        Folded bias per PE of each operand bank (the command's ``in_bank`` picks), used when
        its ``acc_flag`` is 0; held from the command's start until its ``done``.
    busy : ``Out(1)``
        A command is in the core.
    done : ``Out(1)``
        Pulse when the last sum of a command is in the accumulator PLM (commands finish in
        the order they were taken).
    mac : ``Out(1)``
        High on every cycle an operand pair enters the PE row (useful MAC cycles).
    in_rd : ``In(ReadPort.Signature)``
        Input PLM, one 16-bit word, bank bit on top of the word address; the word arrives
        ``in_latency`` cycles (1 or 2) after its address.
    w_rd : ``In(ReadPort.Signature)``
        Weight PLM, ``pes`` words, bank bit on top of the row address; the row arrives
        ``w_latency`` cycles after its address, and the core registers it
        ``w_stages + 1 - w_latency`` times more.
    acc_rd, acc_wr : ``In(ReadPort.Signature)``, ``In(WritePort.Signature)``
        Accumulator PLM, ``pes`` sums, bank bit on top of the row address; the read data
        arrives ``acc_latency`` cycles (1 or 2) after its address (the core adds a cycle to
        its accumulate stage with 2).
    """

    def __init__(self, *, pes=16, in_words=16384, w_rows=1024, acc_rows=512,
                 precisions=tuple(Precision), stages=2, multiplier="lut", in_latency=1,
                 w_stages=None, w_latency=1, acc_latency=1):
        self._pes = check_int("pes", pes, minimum=1)
        self._in_words = check_int("in_words", in_words, minimum=1)
        self._w_rows = check_int("w_rows", w_rows, minimum=1)
        self._acc_rows = check_int("acc_rows", acc_rows, minimum=1)
        self._precisions = tuple(Precision.parse(p) for p in precisions)
        self._stages = check_int("stages", stages, minimum=0, maximum=MAX_STAGES)
        self._multiplier = check_multiplier(multiplier)
        self._in_latency = check_int("in_latency", in_latency, minimum=1, maximum=2)
        self._w_stages = check_int("w_stages", in_latency - 1 if w_stages is None else w_stages,
                                   minimum=in_latency - 1, maximum=2)
        self._w_latency = check_int("w_latency", w_latency, minimum=1,
                                    maximum=min(2, 1 + self._w_stages))
        self._acc_latency = check_int("acc_latency", acc_latency, minimum=1, maximum=2)
        words = data.ArrayLayout(unsigned(OPERAND_WIDTH), pes)
        sums = data.ArrayLayout(signed(ACC_BITS), pes)
        super().__init__({
            "cmd": In(stream.Signature(core_command_layout(in_words, acc_rows))),
            "bias": In(data.ArrayLayout(sums, 2)),
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
    def w_stages(self):
        """Registers on the weight row before the operands (0-2), the PLM's own included."""
        return self._w_stages

    @property
    def w_latency(self):
        """Cycles from a weight PLM address to its row at ``w_rd.data`` (1 or 2)."""
        return self._w_latency

    @property
    def operand_latency(self):
        """Cycles from the PLM addresses to the operand register's input: ``1 + w_stages``."""
        return 1 + self._w_stages

    @property
    def acc_latency(self):
        """Cycles from an accumulator PLM read address to its data (1 or 2)."""
        return self._acc_latency

    def elaborate(self, platform):
        m = Module()
        new = self.cmd.payload
        in_bits = address_bits(self._in_words)
        w_bits = address_bits(self._w_rows)
        acc_bits = address_bits(self._acc_rows)
        m.submodules.pes = pe_row = PERow(pes=self._pes, precisions=self._precisions,
                                          stages=self._stages, acc_width=ACC_BITS,
                                          multiplier=self._multiplier)
        accept = Signal()
        m.d.comb += accept.eq(self.cmd.valid & self.cmd.ready)

        # --- stage A: the running command's loop counters and PLM addresses ------------------
        # (the running command's copy; it matters only while ``running``)
        cmd = Signal.like(new, name="running_cmd", reset_less=True)
        running = Signal()
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

        # Whether each loop counter is at its last value is a register of its own
        # (``at_last``), kept up to date as the counter steps: its comparison and the four
        # loops' chain of conditions would otherwise head every counter's and the input PLM
        # address's next value. A counter stepping from value v is at its last value next
        # when v == count - 2, or, wrapping to 0, when count == 1; both are registered when
        # the command is taken.
        loops = (("g", "groups"), ("kx", "kernel_w"), ("ky", "kernel_h"),
                 ("ox", "out_w"), ("oy", "out_h"))
        names = [name for name, _ in loops]
        counters = {"g": g, "kx": kx, "ky": ky, "ox": ox, "oy": oy}
        before_last, single, at_last = {}, {}, {}
        for name, field in loops:
            count = getattr(new, field)
            before_last[name] = Signal((count - 2).shape(), name=f"{name}_before_last")
            single[name] = Signal(name=f"{name}_single")
            at_last[name] = Signal(name=f"{name}_at_last")
        # ``wraps[name]``: this loop and every inner one are at their last values (registers
        # too, kept from the flags' next values, so that the loops' chain of conditions is no
        # chain of gates in front of the counters and the PLM address; the innermost loop's
        # is its own flag)
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

        with m.If(running):
            m.d.sync += [at_last[name].eq(at_next[name]) for name in names]
            m.d.sync += cumulative(at_next)
            # the loops' updates, outermost last: a later assignment overrides an earlier one
            m.d.sync += [g.eq(g + 1), addr.eq(addr + 1), wrow.eq(wrow + 1)]
            with m.If(wraps["g"]):
                m.d.sync += [g.eq(0), kx.eq(kx + 1), ix.eq(ix + 1)]
            with m.If(wraps["kx"]):
                next_tap = tap_base + cmd.row_words
                m.d.sync += [kx.eq(0), ix.eq(ix_base), ky.eq(ky + 1), iy.eq(iy + 1),
                             tap_base.eq(next_tap), addr.eq(next_tap)]
            with m.If(wraps["ky"]):
                next_pix = pix_base + cmd.pix_step
                m.d.sync += [ky.eq(0), iy.eq(iy_base), wrow.eq(0),
                             ox.eq(ox + 1), ix_base.eq(ix_base + cmd.stride_w),
                             ix.eq(ix_base + cmd.stride_w),
                             pix_base.eq(next_pix), tap_base.eq(next_pix),
                             addr.eq(next_pix)]
            with m.If(wraps["ox"]):
                next_row = row_base + cmd.row_step
                m.d.sync += [ox.eq(0), ix_base.eq(-cmd.pad_left),
                             ix.eq(-cmd.pad_left),
                             oy.eq(oy + 1), iy_base.eq(iy_base + cmd.stride_h),
                             iy.eq(iy_base + cmd.stride_h),
                             row_base.eq(next_row), pix_base.eq(next_row),
                             tap_base.eq(next_row), addr.eq(next_row)]
            with m.If(wraps["oy"]):
                m.d.sync += running.eq(0)
        # a command taken starts its loops in the next cycle (overriding the loops' updates
        # when it follows the running command's last operands)
        with m.If(accept):
            singles = {name: getattr(new, field) == 1 for name, field in loops}
            m.d.sync += [before_last[name].eq(getattr(new, field) - 2)
                         for name, field in loops]
            m.d.sync += [single[name].eq(singles[name]) for name in names]
            m.d.sync += [at_last[name].eq(singles[name]) for name in names]
            m.d.sync += cumulative(singles)
            m.d.sync += [
                cmd.eq(new), running.eq(1),
                g.eq(0), kx.eq(0), ky.eq(0), ox.eq(0), oy.eq(0), wrow.eq(0),
                ix_base.eq(-new.pad_left), ix.eq(-new.pad_left),
                iy_base.eq(-new.pad_top), iy.eq(-new.pad_top),
                row_base.eq(new.origin), pix_base.eq(new.origin), tap_base.eq(new.origin),
                addr.eq(new.origin),
            ]

        # --- stage B: PLM data; operands meet 1 + w_stages cycles after their addresses ----
        padded = (iy < 0) | (iy >= cmd.in_h) | (ix < 0) | (ix >= cmd.in_w)
        m.d.comb += [
            self.in_rd.addr.eq(addr | (cmd.in_bank << in_bits)),
            self.w_rd.addr.eq(wrow | (cmd.w_bank << w_bits)),
            self.mac.eq(running),
        ]
        # the tap's flags, and the fields of its command the operand stage needs
        tap_layout = data.StructLayout({"valid": 1, "padded": 1, "clear": 1, "last": 1,
                                        "pad_word": unsigned(OPERAND_WIDTH),
                                        "precision": Precision})
        tap = Signal(tap_layout)
        m.d.sync += [
            tap.valid.eq(running),
            tap.padded.eq(padded),
            tap.clear.eq((g == 0) & (kx == 0) & (ky == 0)),
            tap.last.eq(wraps["ky"]),
            tap.pad_word.eq(cmd.pad_word),
            tap.precision.eq(cmd.precision),
        ]
        # the weight row passes ``w_stages`` registers with no logic between (the block RAMs'
        # clock-to-output and the wire from them to the PE row are then separate paths), the
        # PLM's own output register among them when ``w_latency`` is 2; the tap and the input
        # word wait to match
        w_row = self.w_rd.data
        for n in range(1 + self._w_latency, 2 + self._w_stages):
            registered = Signal.like(self.w_rd.data, name=f"w_row{n}", reset_less=True)
            m.d.sync += registered.eq(w_row)
            w_row = registered
        for n in range(2, 1 + self.operand_latency):
            delayed = Signal(tap_layout, name=f"tap{n}")
            m.d.sync += delayed.eq(tap)
            tap = delayed
        in_word = self.in_rd.data
        for n in range(self._in_latency + 1, 1 + self.operand_latency):
            delayed = Signal.like(self.in_rd.data, name=f"in_word{n}", reset_less=True)
            m.d.sync += delayed.eq(in_word)
            in_word = delayed
        # the operands are registered before the PE row: the block RAMs' clock-to-output delay
        # and the lane and pad multiplexers would otherwise add to the multipliers' first stage
        operands = Signal.like(pe_row.i.payload, reset_less=True)
        valid_op = Signal()
        m.d.sync += [
            valid_op.eq(tap.valid),
            operands.a.eq(Mux(tap.padded, tap.pad_word, in_word)),
            operands.b.eq(w_row),
            operands.precision.eq(tap.precision),
            operands.clear.eq(tap.clear),
            operands.last.eq(tap.last),
        ]
        m.d.comb += [
            pe_row.i.valid.eq(valid_op),
            pe_row.i.payload.eq(operands),
            pe_row.o.ready.eq(1),
        ]

        # --- the commands whose sums are still to come out of the PE row -------------------
        # ``leaving``: the oldest (its sums come out next); ``queued``: one taken while the
        # oldest's sums are on their way. A command is taken only while ``queued`` is free.
        tag_layout = _sum_tag_layout(acc_bits)
        leaving = Signal(tag_layout)
        leaving_valid = Signal()
        queued = Signal(tag_layout)
        queued_valid = Signal()
        new_tag = Signal(tag_layout)
        m.d.comb += [new_tag.acc_bank.eq(new.acc_bank), new_tag.acc_flag.eq(new.acc_flag),
                     new_tag.in_bank.eq(new.in_bank), new_tag.last_pixel.eq(new.last_pixel)]
        pixel = Signal(acc_bits)                 # output pixel of the next PE-row sum
        leaves = pe_row.o.valid & (pixel == leaving.last_pixel)   # the oldest's last sum
        with m.If(pe_row.o.valid):
            m.d.sync += pixel.eq(pixel + 1)
        with m.If(leaves):
            m.d.sync += [pixel.eq(0), leaving.eq(queued), leaving_valid.eq(queued_valid),
                         queued_valid.eq(0)]
        with m.If(accept):
            with m.If(~leaving_valid | leaves):
                m.d.sync += [leaving.eq(new_tag), leaving_valid.eq(1)]
            with m.Else():
                m.d.sync += [queued.eq(new_tag), queued_valid.eq(1)]

        # --- accumulate stages: read the pixel's partial sums, add, write back ------------
        # C: the accumulator PLM delivers the partial sums of the sum's pixel; they (or the
        # bias) are registered with the sums. D: the addition and the write. The PLM's 5.6 ns
        # clock-to-output, the bank multiplexer, a 32-bit carry chain and the write-data setup
        # would otherwise be one path. A command adding to its predecessor's sums reads a pixel
        # as many cycles or more after the predecessor's sum for it leaves the PE row as that
        # one has pixels; it is written 3 cycles after at most (hence ``_ACC_CHAIN_PIXELS``).
        stage_layout = data.StructLayout({"valid": 1, "pixel": unsigned(acc_bits),
                                          "acc_bank": 1, "acc_flag": 1, "in_bank": 1,
                                          "last": 1})
        at_c = Signal(stage_layout)
        sums_c = Signal.like(pe_row.o.payload, reset_less=True)
        # read every cycle: the address holds until the next sum, so the data is the partial
        # sum of the sum's pixel when it is used (an enable would fan out to every data bit)
        m.d.comb += [
            self.acc_rd.addr.eq(pixel | (leaving.acc_bank << acc_bits)),
            self.acc_rd.en.eq(1),
        ]
        m.d.sync += [at_c.valid.eq(pe_row.o.valid), at_c.pixel.eq(pixel),
                     at_c.acc_bank.eq(leaving.acc_bank), at_c.acc_flag.eq(leaving.acc_flag),
                     at_c.in_bank.eq(leaving.in_bank), at_c.last.eq(leaves),
                     sums_c.eq(pe_row.o.payload)]
        # Whether to add the partial sum or the bias, and which bank's bias, select every bit
        # of every sum: one copy per PE, following the sums a stage ahead of the addition,
        # so that no single flip-flop drives 32 x ``pes`` selects.
        m.submodules.selects = selects = Replicas(2, self._pes)
        m.d.comb += selects.enable.eq(1)
        stages = [at_c]
        if self._acc_latency == 2:
            # a registered accumulator PLM: the sums wait a cycle more for their partial sums
            m.d.comb += selects.d.eq(Cat(at_c.acc_flag, at_c.in_bank))
            delayed = Signal(stage_layout, name="at_c2")
            delayed_sums = Signal.like(sums_c, name="sums_c2", reset_less=True)
            m.d.sync += [delayed.eq(at_c), delayed_sums.eq(sums_c)]
            at_c, sums_c = delayed, delayed_sums
            stages.append(at_c)
        else:
            m.d.comb += selects.d.eq(Cat(leaving.acc_flag, leaving.in_bank))
        at_d = Signal(stage_layout)
        sums_d = Signal.like(sums_c, reset_less=True)
        base_d = Signal.like(self.acc_wr.data, reset_less=True)
        m.d.sync += [at_d.eq(at_c), sums_d.eq(sums_c)]
        stages.append(at_d)
        for pe in range(self._pes):
            add_partial, bias_bank = selects.q[pe][0], selects.q[pe][1]
            bias = Mux(bias_bank, self.bias[1][pe], self.bias[0][pe])
            m.d.sync += base_d[pe].eq(Mux(add_partial, self.acc_rd.data[pe], bias))
        total = Signal.like(self.acc_wr.data)
        for pe in range(self._pes):
            m.d.comb += total[pe].eq(base_d[pe] + sums_d[pe])
        m.d.comb += [
            self.acc_wr.addr.eq(at_d.pixel | (at_d.acc_bank << acc_bits)),
            self.acc_wr.data.eq(total),
            self.acc_wr.en.eq(at_d.valid),
            self.done.eq(at_d.valid & at_d.last),
        ]

        # --- taking a command --------------------------------------------------------------
        # ``small``: the last command taken has fewer than ``_ACC_CHAIN_PIXELS`` output pixels
        small = Signal()
        with m.If(accept):
            m.d.sync += small.eq(new.last_pixel < _ACC_CHAIN_PIXELS - 1)
        m.d.comb += [
            self.busy.eq(Cat(running, leaving_valid, *(stage.valid for stage in stages)).any()),
            self.cmd.ready.eq((~running | wraps["oy"]) & ~queued_valid
                              & ~(new.acc_flag & small & self.busy)),
        ]
        return m
