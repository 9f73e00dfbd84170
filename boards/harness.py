"""Out-of-context synthesis harness: measure a core's area and Fmax without its I/O pins.

A core such as a 16-PE row has hundreds of ports, more than a package has pins. The harness
feeds every input of the core from one long shift register (one serial pin) and captures every
output in a register, whose bits are XOR-folded, through one more register, onto one pin. All
core ports are therefore register-to-register paths and no logic can be optimised away, so the
reported Fmax and resources are those of the core.
"""

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SynthHarness"]


class SynthHarness(wiring.Component):
    """Wraps ``core`` (a :class:`wiring.Component`) between a serial-in register chain and an
    XOR-folded output register.

    Members
    -------
    serial_in : ``In(1)``
        Shifted into the register chain that drives every core input.
    serial_out : ``Out(1)``
        XOR of every registered core output.
    """

    serial_in: In(1)
    serial_out: Out(1)

    def __init__(self, core):
        self._core = core
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self._core
        inputs, outputs = [], []
        for _, member, value in core.signature.flatten(core):
            (inputs if member.flow == In else outputs).append(Value.cast(value))

        width = sum(len(value) for value in inputs)
        chain = Signal(max(width, 1))
        m.d.sync += chain.eq(Cat(self.serial_in, chain[:-1]))
        m.d.comb += Cat(*inputs).eq(chain)

        captured = Signal(sum(len(value) for value in outputs))
        m.d.sync += captured.eq(Cat(*outputs))
        m.d.sync += self.serial_out.eq(captured.xor())
        return m
