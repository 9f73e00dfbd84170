"""A pipelined signed multiplier that becomes one DSP block with its own registers on the ECP5.

The DSP build of the ST multiplier registers every unit's operands, multiplies, and registers
the product. Described with fabric flip-flops and ``*``, Yosys maps the product to an
unregistered MULT18X18D: every operand and product bit then crosses the routing between a
slice and the DSP column, and nextpnr times flip-flop -> DSP -> flip-flop as one path (the
critical path of a 16-PE row). The ECP5 DSP block has its own input and output registers;
instantiating it with them moves both register stages into the block, so the fabric only
routes to a register's setup and from a register's clock-to-output.

Which form is built depends on the platform the design is elaborated for: an object whose
``family`` is ``"ecp5"`` (Amaranth's Lattice platforms for the ECP5, or
:class:`hdl.target.Target`) gets the primitive; anything else, simulation included, gets the
portable description. The primitive's simulation model (the subset of its behaviour used here)
is ``sim/models/ecp5_mult18x18d.v``, and the cocotb tests run both forms.
"""

from amaranth.hdl import ClockSignal, Const, Instance, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .params import check_int
from .target import is_ecp5

__all__ = ["ECP5_DSP_WIDTH", "PipelinedMultiplier", "shift_add_product"]

#: Operand width of one ECP5 MULT18X18D, in bits.
ECP5_DSP_WIDTH = 18


def shift_add_product(narrow, value):
    """``narrow * value`` (both unsigned) as a sum of shifted copies of ``value``, one per bit
    of ``narrow`` (a few bits): adders in the fabric rather than a DSP block, which Yosys would
    otherwise infer for any ``*`` and leave between fabric registers."""
    return sum(Mux(narrow[bit], value << bit, 0) for bit in range(len(narrow)))


class PipelinedMultiplier(wiring.Component):
    """``product`` is ``x * y`` two clock cycles after the operands: the operands are
    registered, then the product, each register loading only when ``enable`` is high (so the
    two stages hold together under back-pressure). The registers have no reset.

    Parameters
    ----------
    width : int
        Operand width in bits, 2 to :data:`ECP5_DSP_WIDTH`; the product has ``2 * width`` bits.
    is_signed : bool
        Whether the operands and the product are signed (default) or unsigned.

    Members
    -------
    x, y : ``In(signed(width))`` (``unsigned`` if not ``is_signed``)
        Operands.
    enable : ``In(1)``
        Clock enable of both register stages.
    product : ``Out(signed(2 * width))`` (``unsigned`` if not ``is_signed``)
        ``x * y`` of the operands registered two enabled cycles before.
    """

    def __init__(self, width, *, is_signed=True):
        self._width = check_int("width", width, minimum=2, maximum=ECP5_DSP_WIDTH)
        self._signed = bool(is_signed)
        shape = signed if is_signed else unsigned
        self._shape = shape
        super().__init__({
            "x": In(shape(width)),
            "y": In(shape(width)),
            "enable": In(1),
            "product": Out(shape(2 * width)),
        })

    @property
    def width(self):
        """Operand width in bits."""
        return self._width

    def elaborate(self, platform):
        m = Module()
        if is_ecp5(platform):
            self._ecp5_block(m)
            return m
        x = Signal(self._shape(self._width), reset_less=True)
        y = Signal(self._shape(self._width), reset_less=True)
        product = Signal(self._shape(2 * self._width), reset_less=True)
        with m.If(self.enable):
            m.d.sync += [x.eq(self.x), y.eq(self.y), product.eq(x * y)]
        m.d.comb += self.product.eq(product)
        return m

    def _ecp5_block(self, m):
        # Operands extended to the block's 18 bits, in its signed or unsigned mode (the
        # SIGNEDA/SIGNEDB inputs, constant); the input registers and
        # the output register on CLK0 and CE0; the pipeline register bypassed (two stages, as
        # the portable form). C is unused in B_SHIFT mode and left unconnected.
        def pins(prefix, value, count):
            return {f"{prefix}{bit}": value[bit] for bit in range(count)}

        a = Signal(self._shape(ECP5_DSP_WIDTH))
        b = Signal(self._shape(ECP5_DSP_WIDTH))
        p = Signal(self._shape(2 * ECP5_DSP_WIDTH))
        m.d.comb += [a.eq(self.x), b.eq(self.y), self.product.eq(p)]
        registers = {f"p_REG_{name}_{field}": value
                     for name in ("INPUTA", "INPUTB", "OUTPUT")
                     for field, value in (("CLK", "CLK0"), ("CE", "CE0"), ("RST", "RST0"))}
        m.submodules.block = Instance(
            "MULT18X18D",
            **registers,
            p_REG_PIPELINE_CLK="NONE",
            p_REG_INPUTC_CLK="NONE",
            p_SOURCEB_MODE="B_SHIFT",
            p_MULT_BYPASS="DISABLED",
            p_RESETMODE="SYNC",
            p_GSR="DISABLED",
            i_CLK0=ClockSignal(),
            i_CE0=self.enable,
            i_RST0=Const(0),
            i_SIGNEDA=Const(int(self._signed)),
            i_SIGNEDB=Const(int(self._signed)),
            i_SOURCEA=Const(0),
            i_SOURCEB=Const(0),
            **{f"i_{name}": value for name, value in pins("A", a, ECP5_DSP_WIDTH).items()},
            **{f"i_{name}": value for name, value in pins("B", b, ECP5_DSP_WIDTH).items()},
            **{f"o_{name}": value
               for name, value in pins("P", p, 2 * ECP5_DSP_WIDTH).items()},
        )
