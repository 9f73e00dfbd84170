"""Registers that synthesis keeps as separate copies: one value registered once per consumer.

A value that every PE of a row uses (the shared activation, the precision, the handshake) is
registered by each PE from the same source. Yosys merges flip-flops with identical inputs, so
those registers become one flip-flop whose output crosses the whole PE array before any PE's
logic (in a routed 16-PE accelerator, 7 ns of a 13 ns critical path were that fan-out).
:class:`Replicas` registers a value ``copies`` times, each copy a flip-flop of its own next to
its consumer: the broadcast is then a flip-flop to flip-flop path with a whole cycle to cross
the array, and nothing after it is shared.

On the ECP5 (a platform whose ``family`` is ``"ecp5"``, see :func:`hdl.target.is_ecp5`) each
bit of each copy is a Lattice flip-flop primitive (``FD1P3AX``, or ``FD1P3IX`` with the domain's
synchronous reset), which Yosys does not merge; elsewhere, simulation included, the copies are
plain registers of the same behaviour. The primitives' simulation model is
``sim/models/ecp5_ff.v``.
"""

from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .params import check_int
from .target import is_ecp5

__all__ = ["Replicas"]


class Replicas(wiring.Component):
    """``q[k]`` is ``d`` as it was at the last clock edge with ``enable`` high, for every copy
    ``k``; with ``reset`` the copies return to 0 on the domain's reset (which takes priority
    over ``enable``), otherwise they have no reset.

    Parameters
    ----------
    width : int
        Bits of the value.
    copies : int
        Number of copies.
    reset : bool
        Whether the copies follow the domain's reset.

    Members
    -------
    d : ``In(width)``
    enable : ``In(1)``
        Clock enable of every copy.
    q : ``Out(ArrayLayout(width, copies))``
    """

    def __init__(self, width, copies, *, reset=False):
        self._width = check_int("width", width, minimum=1)
        self._copies = check_int("copies", copies, minimum=1)
        self._reset = bool(reset)
        super().__init__({
            "d": In(width),
            "enable": In(1),
            "q": Out(data.ArrayLayout(unsigned(width), copies)),
        })

    def elaborate(self, platform):
        m = Module()
        for k in range(self._copies):
            if is_ecp5(platform):
                self._ecp5_copy(m, k)
            else:
                copy = Signal(self._width, name=f"copy{k}", reset_less=not self._reset)
                with m.If(self.enable):
                    m.d.sync += copy.eq(self.d)
                m.d.comb += self.q[k].eq(copy)
        return m

    def _ecp5_copy(self, m, k):
        # FD1P3AX: D flip-flop with clock enable (SP); FD1P3IX adds a synchronous clear (CD)
        # that overrides the enable. GSR disabled: the global set/reset plays no part.
        for bit in range(self._width):
            ports = dict(p_GSR="DISABLED", i_CK=ClockSignal(), i_SP=self.enable,
                         i_D=self.d[bit], o_Q=self.q[k][bit])
            if self._reset:
                ports["i_CD"] = ResetSignal()
            primitive = "FD1P3IX" if self._reset else "FD1P3AX"
            m.submodules[f"copy{k}_{bit}"] = Instance(primitive, **ports)
