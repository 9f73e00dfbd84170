"""Processing elements: an ST multiplier feeding an accumulator, and a row of them."""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH, Precision

from .params import check_int, check_multiplier, check_precisions
from .replica import Replicas
from .st_multiplier import MAX_STAGES, STMultiplier

__all__ = ["PERow", "ProcessingElement"]

#: Largest accumulator supported, in bits (the golden model computes in int64).
MAX_ACC_WIDTH = 63


def _check_acc_width(acc_width, precisions):
    check_int("acc_width", acc_width, maximum=MAX_ACC_WIDTH)
    widest = max(precisions, key=lambda p: p.product_bits)
    if acc_width < widest.product_bits:
        raise ValueError(
            f"acc_width must be at least {widest.product_bits} (the width of one "
            f"{widest.label} product), not {acc_width}")
    return acc_width


class _PEParameters:
    """Validated parameters and derived layouts shared by a PE and a PE row."""

    def _init_parameters(self, precisions, stages, acc_width, multiplier):
        self._multiplier = check_multiplier(multiplier)
        self._precisions = check_precisions(precisions)
        self._stages = check_int("stages", stages, minimum=0, maximum=MAX_STAGES)
        self._acc_width = _check_acc_width(acc_width, self._precisions)

    @property
    def precisions(self):
        """Supported configurations, as a tuple of :class:`Precision`."""
        return self._precisions

    @property
    def stages(self):
        """Pipeline stages of the multiplier."""
        return self._stages

    @property
    def multiplier(self):
        """How the multipliers are built: ``"lut"``, ``"dsp4"``, ``"dsp2"`` or ``"dsp1"`` (see
        :class:`~hdl.st_multiplier.STMultiplier`)."""
        return self._multiplier

    @property
    def acc_width(self):
        """Accumulator width, in bits."""
        return self._acc_width

    @property
    def latency(self):
        """Cycles from a ``last`` input transfer to its sum(s) on ``o`` without back-pressure."""
        return self._stages + 1

    def _input_layout(self, weight_shape):
        return data.StructLayout({
            "a": unsigned(OPERAND_WIDTH),
            "b": weight_shape,
            "precision": Precision,
            "clear": unsigned(1),
            "last": unsigned(1),
        })


class ProcessingElement(_PEParameters, wiring.Component):
    """One ST multiplier and an accumulator: sums ST results over a sequence of transfers.

    An input transfer with ``clear`` set starts a new sum (``acc := product``); otherwise the
    product is added (``acc := acc + product``). A transfer with ``last`` set emits the sum that
    includes it on ``o``. The accumulator wraps modulo ``2**acc_width``, exactly as
    :func:`hls_ref.pe_accumulate`; the compiler proves that real layers never wrap.

    Parameters
    ----------
    precisions : collection of Precision or str
        Configurations the multiplier supports (default: all five).
    stages : int
        Pipeline stages of the multiplier (see :class:`~hdl.st_multiplier.STMultiplier`). The
        accumulator adds one more, so a sum leaves ``stages + 1`` cycles after its last product.
    acc_width : int
        Accumulator width in bits (default 32); at least the widest product.
    multiplier : str
        ``"lut"`` (default), ``"dsp4"``, ``"dsp2"`` or ``"dsp1"``: how the multiplier is built (see
        :class:`~hdl.st_multiplier.STMultiplier`).

    Members
    -------
    i : ``In(stream.Signature(input_layout))``
        ``a``, ``b``, ``precision``, ``clear`` and ``last``.
    o : ``Out(stream.Signature(signed(acc_width)))``
        One accumulated sum per ``last`` transfer.
    """

    def __init__(self, *, precisions=tuple(Precision), stages=2, acc_width=32,
                 multiplier="lut"):
        self._init_parameters(precisions, stages, acc_width, multiplier)
        super().__init__({
            "i": In(stream.Signature(self.input_layout)),
            "o": Out(stream.Signature(signed(self._acc_width))),
        })

    @property
    def input_layout(self):
        """Layout of an input transfer."""
        return self._input_layout(unsigned(OPERAND_WIDTH))

    def elaborate(self, platform):
        m = Module()
        m.submodules.multiplier = multiplier = STMultiplier(
            precisions=self._precisions, stages=self._stages, user_width=2,
            multiplier=self._multiplier)

        m.d.comb += [
            multiplier.i.valid.eq(self.i.valid),
            multiplier.i.payload.a.eq(self.i.payload.a),
            multiplier.i.payload.b.eq(self.i.payload.b),
            multiplier.i.payload.precision.eq(self.i.payload.precision),
            multiplier.i.payload.user.eq(self.i.payload.clear | (self.i.payload.last << 1)),
            self.i.ready.eq(multiplier.i.ready),
        ]

        product = multiplier.o.payload.product
        clear = multiplier.o.payload.user[0]
        last = multiplier.o.payload.user[1]
        acc = Signal(signed(self._acc_width), reset_less=True)   # cleared by ``clear``
        total = Signal(signed(self._acc_width))
        m.d.comb += total.eq(Mux(clear, 0, acc) + product)

        # The output register holds one sum; products keep flowing while it is free or drained.
        m.d.comb += multiplier.o.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(multiplier.o.valid & multiplier.o.ready):
            m.d.sync += acc.eq(total)
            with m.If(last):
                m.d.sync += [
                    self.o.payload.eq(total),
                    self.o.valid.eq(1),
                ]
        return m


class PERow(_PEParameters, wiring.Component):
    """A row of processing elements in lock-step: one activation operand for all, one weight
    operand each (the 2D-convolution arrangement: one output channel per PE). An input
    register stage gives every PE its own copy of the operands (a cycle of latency more than a
    single :class:`ProcessingElement`).

    Parameters
    ----------
    pes : int
        Number of processing elements.
    precisions, stages, acc_width, multiplier
        As for :class:`ProcessingElement`.

    Members
    -------
    i : ``In(stream.Signature(input_layout))``
        ``a``, ``b`` (one operand per PE), ``precision``, ``clear``, ``last``.
    o : ``Out(stream.Signature(ArrayLayout(signed(acc_width), pes)))``
        One sum per PE for each ``last`` transfer.
    """

    def __init__(self, *, pes=16, precisions=tuple(Precision), stages=2, acc_width=32,
                 multiplier="lut"):
        self._pes = check_int("pes", pes, minimum=1)
        self._init_parameters(precisions, stages, acc_width, multiplier)
        super().__init__({
            "i": In(stream.Signature(self.input_layout)),
            "o": Out(stream.Signature(data.ArrayLayout(signed(self._acc_width), pes))),
        })

    @property
    def pes(self):
        """Number of processing elements."""
        return self._pes

    @property
    def input_layout(self):
        """Layout of an input transfer."""
        return self._input_layout(data.ArrayLayout(unsigned(OPERAND_WIDTH), self._pes))

    def elaborate(self, platform):
        m = Module()
        # Every element sees the same handshakes, so their control state is identical and the
        # first element's ready/valid speak for the whole row.
        elements = [ProcessingElement(precisions=self._precisions, stages=self._stages,
                                      acc_width=self._acc_width,
                                      multiplier=self._multiplier)
                    for _ in range(self._pes)]
        for index, element in enumerate(elements):
            m.submodules[f"pe{index}"] = element

        # The input stage: every PE registers its own copy of the shared fields (a
        # hdl.replica.Replicas each), so that no flip-flop inside the PEs is common to the row
        # and the broadcast crosses the array between two registers.
        payload = self.i.payload
        load = Signal()
        shared = Signal(data.StructLayout({"a": unsigned(OPERAND_WIDTH), "precision": Precision,
                                           "clear": 1, "last": 1}))
        m.submodules.shared = shared_copies = Replicas(shared.shape().size, self._pes)
        m.submodules.valid = valid_copies = Replicas(1, self._pes, reset=True)
        m.d.comb += [
            shared.a.eq(payload.a), shared.precision.eq(payload.precision),
            shared.clear.eq(payload.clear), shared.last.eq(payload.last),
            shared_copies.d.eq(shared), shared_copies.enable.eq(load),
            valid_copies.d.eq(self.i.valid), valid_copies.enable.eq(load),
            load.eq(~valid_copies.q[0] | elements[0].i.ready),
            self.i.ready.eq(load),
        ]
        for index, element in enumerate(elements):
            b = Signal(OPERAND_WIDTH, name=f"b{index}", reset_less=True)
            with m.If(load):
                m.d.sync += b.eq(payload.b[index])
            copy = data.View(shared.shape(), shared_copies.q[index])
            m.d.comb += [
                element.i.valid.eq(valid_copies.q[index]),
                element.i.payload.a.eq(copy.a),
                element.i.payload.b.eq(b),
                element.i.payload.precision.eq(copy.precision),
                element.i.payload.clear.eq(copy.clear),
                element.i.payload.last.eq(copy.last),
                element.o.ready.eq(self.o.ready),
                self.o.payload[index].eq(element.o.payload),
            ]
        m.d.comb += self.o.valid.eq(elements[0].o.valid)
        return m

