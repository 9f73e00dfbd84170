"""The address generators of both local-buffer ports, with their state memory.

Every memory op computes ``address = offset + u`` from its update ``u`` and, when its mode
``m`` is not 0, steps ``u = (u + inc_m) mod 2^addr_bits``, or 0 when that equals
``toggle_m`` (``docs/nve.md``, "AGU"). The current updates live in a state memory with one
entry per pc holding both ports' updates. It is never cleared: the first execution of a pc in
a run (``d_first``) takes the update of its instruction word, and only later executions
(loop-body pcs) read the state memory, which the execution before them wrote.

The state memory is read at the edge that loads the fetch pc, at the address it takes (the
instruction buffer's read, :class:`.sequencer.Sequencer`), so its word is there in F and is
registered into D; the executions before may be too recent to be in it. The one written at
the edge that enters D (in X while the pc is in F) and the one written at the edge that
entered F (then in M) are forwarded into D's register; in D, the one in X (a one-instruction
loop) is forwarded from X's new update. The block RAM's slow output ends at D's register.

Both addresses are computed in D and registered into X, so X's users (the local buffer's M
registers, the rule checker's comparisons) start from flip-flops. Whether a step reaches the
toggle is found without the step's sum: ``u + inc == toggle`` iff ``u == toggle - inc``
(modulo ``2^addr_bits``), whose right side is registered with the mode's pair.
"""

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from .isa import as_config

__all__ = ["Agu"]

PORTS = 2  # MEMA, MEMB


class Agu(wiring.Component):
    """Both ports' AGUs from D to X.

    Parameters
    ----------
    config : NveConfig
        Sizes (``addr_bits``, ``agu_modes``, ``instruction_words``).

    Members
    -------
    en : ``In(1)``
        Advance.
    f_pc : ``In(pc_bits)``
        The pc in F.
    f_next, f_read : ``In(...)``
        The state memory's read (the instruction buffer's): the pc the edge loads into F, and
        whether the port reads.
    d_pc, d_first : ``In(...)``
        The instruction in D: its pc and whether it is the pc's first execution.
    d_offset, d_update, d_mode : ``In(ArrayLayout(..., 2))``
        Its memory ops' fields (MEMA, MEMB).
    x_pc, x_valid : ``In(...)``
        The instruction in X (``x_valid``: one is there; its new updates are written, and
        forwarded, also when it is killed by a fault: nothing after it executes).
    m_pc, m_valid : ``In(...)``
        The instruction in X in the previous enabled cycle and whether it wrote.
    inc, toggle : ``In(ArrayLayout(addr_bits, agu_modes - 1))``
        The AGU setting registers, mode 1 first.
    x_address : ``Out(ArrayLayout(addr_bits + 1, 2))``
        ``offset + update`` of both ports' ops in X (one bit wider than an address, so an
        address past the buffer is seen), registered.
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        a, pc = config.addr_bits, config.pc_bits
        pairs = config.agu_modes - 1
        super().__init__({
            "en": In(1),
            "f_pc": In(pc), "f_next": In(pc), "f_read": In(1),
            "d_pc": In(pc), "d_first": In(1),
            "d_offset": In(data.ArrayLayout(a, PORTS)),
            "d_update": In(data.ArrayLayout(a, PORTS)),
            "d_mode": In(data.ArrayLayout(config.mode_bits, PORTS)),
            "x_pc": In(pc), "x_valid": In(1),
            "m_pc": In(pc), "m_valid": In(1),
            "inc": In(data.ArrayLayout(a, pairs)),
            "toggle": In(data.ArrayLayout(a, pairs)),
            "x_address": Out(data.ArrayLayout(a + 1, PORTS)),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        a = config.addr_bits

        m.submodules.state = state = memory.Memory(
            shape=data.ArrayLayout(a, PORTS), depth=config.instruction_words, init=[])
        read = state.read_port()
        write = state.write_port()
        m.d.comb += [read.addr.eq(self.f_next), read.en.eq(self.f_read)]

        # mode m >= 1 selects pair m - 1; mode 0 never steps (its entry does not matter)
        pairs = range(config.agu_modes - 1)
        inc = Array([0] + [self.inc[i] for i in pairs])
        toggle = Array([0] + [self.toggle[i] for i in pairs])

        new = []  # X's new updates, both ports
        previous = Signal(data.ArrayLayout(a, PORTS))  # the previous X's new updates
        for p in range(PORTS):
            x_update = Signal(a, name=f"x_update{p}")
            x_inc, x_wrap_at = Signal(a, name=f"x_inc{p}"), Signal(a, name=f"x_wrap_at{p}")
            x_step = Signal(name=f"x_step{p}")
            new_update = Signal(a, name=f"new_update{p}")
            m.d.comb += new_update.eq(Mux(x_step, Mux(x_update == x_wrap_at, 0,
                                                      (x_update + x_inc)[:a]), x_update))
            new.append(new_update)

            # F -> D: the state memory's word with the two writes it missed
            d_state = Signal(a, name=f"d_state{p}")
            with m.If(self.en):
                m.d.sync += d_state.eq(
                    Mux(self.x_valid & (self.f_pc == self.x_pc), new_update,
                        Mux(self.m_valid & (self.f_pc == self.m_pc), previous[p],
                            read.data[p])))

            # D: the update this execution uses, and its address
            current = Mux(self.d_first, self.d_update[p],
                          Mux(self.x_valid & (self.d_pc == self.x_pc), new_update, d_state))
            mode = self.d_mode[p]
            with m.If(self.en):
                m.d.sync += [
                    self.x_address[p].eq(self.d_offset[p] + current),
                    x_update.eq(current),
                    x_inc.eq(inc[mode]),
                    x_wrap_at.eq(toggle[mode] - inc[mode]),
                    x_step.eq(mode != 0),
                    previous[p].eq(new_update),
                ]
        m.d.comb += [
            write.addr.eq(self.x_pc),
            write.data.eq(Cat(*new)),
            write.en.eq(self.en & self.x_valid),
        ]
        return m
