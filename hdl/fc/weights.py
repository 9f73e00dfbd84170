"""Weight rows: the FC weight stream's beats -> one row of ST ``B`` words per PE step.

Ref: ``docs/formats.md`` section 2 (the FC datapath's weight stream, ``hls_ref.formats.FCRows``).
A weight row is ``units`` unit words (``pes * st_units``), ``unit_bits`` each: 16, or 8 at
a8w4 and a16w8, so a row is ``units / 4`` or ``units / 8`` beats. Unit word ``j`` sits at bits
``[j * unit_bits, ...)`` of the row (its beats little-endian); an 8-bit unit word is widened
to the ST word ``B[3:0] = u[3:0]``, ``B[11:4] = u[7:4] u[7:4]``: a8w4 reads its two 4-bit
slots at bits 0 and 8, a16w8 its 8-bit slot at bit 0, and the ST multiplier ignores the other
bits of either.

Each command's rows are announced (``cmd``: whether its unit words are 8-bit, and how many
rows) when its weight stream is requested, in stream order, so that the beats of the next
command can be assembled while the core is still on the last row of the previous one.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..params import check_int

__all__ = ["ROW_COUNT_WIDTH", "WeightRows", "rows_command_layout"]

_BEAT = 64
#: Width of a command's row count.
ROW_COUNT_WIDTH = 24


def rows_command_layout():
    """A command's weight stream: ``narrow`` (8-bit unit words) and its ``rows``."""
    return data.StructLayout({"narrow": unsigned(1), "rows": unsigned(ROW_COUNT_WIDTH)})


class WeightRows(wiring.Component):
    """Assembles weight rows from stream beats (see the module docstring).

    Parameters
    ----------
    units : int
        Unit words per row (``pes * st_units``), a multiple of 8 (so that a row of 8-bit unit
        words is a whole number of beats).

    Members
    -------
    cmd : ``In(stream.Signature(rows_command_layout()))``
        The next command's weight stream, in stream order.
    beats : ``In(stream.Signature(64))``
        The weight stream's beats.
    rows : ``Out(stream.Signature(data.ArrayLayout(16, units)))``
        Rows of ST ``B`` words, word ``pe * st_units + unit``.
    """

    def __init__(self, *, units=8):
        self._units = check_int("units", units, minimum=8)
        if units % 8:
            raise ValueError(f"units must be a multiple of 8, not {units}")
        super().__init__({
            "cmd": In(stream.Signature(rows_command_layout())),
            "beats": In(stream.Signature(_BEAT)),
            "rows": Out(stream.Signature(data.ArrayLayout(16, units))),
        })

    @property
    def units(self):
        return self._units

    def elaborate(self, platform):
        m = Module()
        units = self._units
        wide_beats = units // 4                 # beats of a row of 16-bit unit words
        narrow_beats = units // 8
        m.submodules.queue = queue = SyncFIFOBuffered(width=rows_command_layout().size, depth=4)
        m.d.comb += [queue.w_data.eq(self.cmd.payload), queue.w_en.eq(self.cmd.valid),
                     self.cmd.ready.eq(queue.w_rdy)]
        head = data.View(rows_command_layout(), queue.r_data)

        active = Signal()                       # a command's rows are being assembled
        narrow = Signal()
        rows_left = Signal(ROW_COUNT_WIDTH)
        last_beat = Signal(range(wide_beats))   # beats of a row, minus one
        held = [Signal(_BEAT, name=f"held{k}") for k in range(wide_beats - 1)]
        count = Signal(range(wide_beats))       # beats of the current row held so far
        out = self.rows
        taking = self.beats.valid & self.beats.ready
        completes = count == last_beat          # this beat completes a row
        m.d.comb += self.beats.ready.eq(active & (~completes | ~out.valid | out.ready))
        m.d.comb += queue.r_en.eq(~active)
        with m.If(~active & queue.r_rdy):
            m.d.sync += [active.eq(head.rows != 0), narrow.eq(head.narrow),
                         rows_left.eq(head.rows), count.eq(0),
                         last_beat.eq(Mux(head.narrow, narrow_beats, wide_beats) - 1)]

        with m.If(out.valid & out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(taking):
            with m.If(completes):
                beat = self.beats.payload
                wide_row = Cat(*held[:wide_beats - 1], beat)
                narrow_row = Cat(*held[:narrow_beats - 1], beat)
                words = []
                for j in range(units):
                    unit = narrow_row[8 * j:8 * j + 8]
                    spread = Cat(unit[:4], unit[4:8], unit[4:8], Const(0, 4))
                    words.append(Mux(narrow, spread, wide_row[16 * j:16 * j + 16]))
                m.d.sync += [out.payload.eq(Cat(*words)), out.valid.eq(1), count.eq(0),
                             rows_left.eq(rows_left - 1)]
                with m.If(rows_left == 1):
                    m.d.sync += active.eq(0)
            with m.Else():
                m.d.sync += count.eq(count + 1)
                with m.Switch(count):
                    for k, register in enumerate(held):
                        with m.Case(k):
                            m.d.sync += register.eq(self.beats.payload)
        return m
