"""The FC datapath's PE array: one output neuron per PE, ``st_units`` ST multipliers each, and
one accumulator per input vector of a batch.

Every cycle the core issues one op to all PEs: ``st_units`` consecutive ST words of one input
vector (``a``, shared by the PEs) and every PE's ``st_units`` weight words (``b``: word
``pe * st_units + unit``, a row of ``hdl.fc.weights``). PE ``p`` sums its units' products and
adds them to its accumulator of vector ``batch``; ``clear`` starts that sum from ``init[p]``
instead (the folded bias, or the partial sums a previous command left), ``last`` sends the
new sums out. A batch's vectors take turns (the core holds a weight row for ``batch``
cycles), so each accumulator is a register of its own: an op never waits for the previous
one's sum.

There is no back-pressure: the array is a fixed pipeline (the core issues an op only when
everything it needs is there, and whatever takes the sums always can).
"""

from amaranth.hdl import Array, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH, Precision

from ..params import check_int, check_multiplier, check_precisions
from ..st_multiplier import STMultiplier

__all__ = ["FCPEArray"]

_ACC = 32


class FCPEArray(wiring.Component):
    """``pes`` PEs of ``st_units`` ST multipliers (see the module docstring).

    Parameters
    ----------
    pes, st_units : int
        PEs, and ST multipliers per PE.
    max_batch : int
        Accumulators per PE (input vectors per command).
    precisions : collection of Precision
        The ST configurations.
    stages : int
        Pipeline stages of the ST multipliers.
    multiplier : str
        How the ST multipliers are built: ``"lut"``, ``"dsp4"``, ``"dsp2"`` or ``"dsp1"``
        (see :class:`hdl.st_multiplier.STMultiplier`; the latency is ``stages`` in each).
    user_width : int
        Side-band bits carried from an op to its sums.

    Members
    -------
    i : ``In(stream.Signature(input_layout, always_ready=True))``
        One op: ``a``, ``b``, ``precision``, ``batch`` (the accumulator), ``clear``,
        ``last``, ``user``.
    init : ``In(data.ArrayLayout(signed(32), pes))``
        Starting sums of the op that entered :attr:`init_delay` cycles before (read only when
        that op has ``clear``).
    o : ``Out(stream.Signature(output_layout, always_ready=True))``
        ``sums`` of every PE (32-bit, wrapping), ``batch`` and ``user``, :attr:`latency`
        cycles after an op with ``last``.
    """

    def __init__(self, *, pes=4, st_units=2, max_batch=8, precisions=tuple(Precision),
                 stages=4, multiplier="lut", user_width=0):
        self._pes = check_int("pes", pes, minimum=1)
        self._units = check_int("st_units", st_units, minimum=1)
        self._max_batch = check_int("max_batch", max_batch, minimum=1)
        self._precisions = check_precisions(precisions)
        self._stages = check_int("stages", stages, minimum=1, maximum=4)
        self._multiplier = check_multiplier(multiplier)
        self._user_width = check_int("user_width", user_width, minimum=0)
        super().__init__({
            "i": In(stream.Signature(self.input_layout, always_ready=True)),
            "init": In(data.ArrayLayout(signed(_ACC), pes)),
            "o": Out(stream.Signature(self.output_layout, always_ready=True)),
        })

    @property
    def latency(self):
        """Cycles from an op to its sums."""
        return self._stages + 2

    @property
    def init_delay(self):
        """Cycles from an op to the cycle its ``init`` is read."""
        return self._stages + 1

    @property
    def input_layout(self):
        return data.StructLayout({
            "a": data.ArrayLayout(unsigned(OPERAND_WIDTH), self._units),
            "b": data.ArrayLayout(unsigned(OPERAND_WIDTH), self._pes * self._units),
            "precision": Precision,
            "batch": range(self._max_batch),
            "clear": 1,
            "last": 1,
            "user": unsigned(self._user_width),
        })

    @property
    def output_layout(self):
        return data.StructLayout({
            "sums": data.ArrayLayout(signed(_ACC), self._pes),
            "batch": range(self._max_batch),
            "user": unsigned(self._user_width),
        })

    def elaborate(self, platform):
        m = Module()
        op = self.i.payload
        side = data.StructLayout({"batch": range(self._max_batch), "clear": 1, "last": 1,
                                  "user": unsigned(self._user_width)})
        # the op's side fields follow the multipliers' pipeline
        valid, fields = self.i.valid, Signal(side)
        m.d.comb += [fields.batch.eq(op.batch), fields.clear.eq(op.clear),
                     fields.last.eq(op.last), fields.user.eq(op.user)]
        for n in range(self._stages):
            valid_next = Signal(name=f"valid_s{n + 1}")
            fields_next = Signal(side, name=f"side_s{n + 1}", reset_less=True)
            m.d.sync += [valid_next.eq(valid), fields_next.eq(fields)]
            valid, fields = valid_next, fields_next

        products = []
        for pe in range(self._pes):
            row = []
            for unit in range(self._units):
                mul = STMultiplier(precisions=self._precisions, stages=self._stages,
                                   multiplier=self._multiplier)
                m.submodules[f"st{pe}_{unit}"] = mul
                m.d.comb += [mul.i.valid.eq(self.i.valid), mul.i.payload.a.eq(op.a[unit]),
                             mul.i.payload.b.eq(op.b[pe * self._units + unit]),
                             mul.i.payload.precision.eq(op.precision), mul.o.ready.eq(1)]
                row.append(mul.o.payload.product)
            products.append(row)

        # the units' products summed (a register), then accumulated
        sum_valid = Signal()
        sum_fields = Signal(side, reset_less=True)
        m.d.sync += [sum_valid.eq(valid), sum_fields.eq(fields)]
        sums = []
        for pe, row in enumerate(products):
            total = Signal(signed(_ACC + 2), name=f"units{pe}", reset_less=True)
            m.d.sync += total.eq(sum(row))
            sums.append(total)

        out = self.o.payload
        m.d.sync += [self.o.valid.eq(sum_valid & sum_fields.last),
                     out.batch.eq(sum_fields.batch), out.user.eq(sum_fields.user)]
        for pe, total in enumerate(sums):
            accumulators = Array(Signal(signed(_ACC), name=f"acc{pe}_{b}", reset_less=True)
                                 for b in range(self._max_batch))
            current = accumulators[sum_fields.batch]
            base = Mux(sum_fields.clear, self.init[pe], current)
            new = Signal(signed(_ACC), name=f"new{pe}")
            m.d.comb += new.eq(base + total)
            with m.If(sum_valid):
                m.d.sync += current.eq(new)
            m.d.sync += out.sums[pe].eq(new)
        return m
