"""The rule checker of the exposed pipeline: the simulator's hazard checks, in hardware.

The NVE has no interlocks: a program that breaks a latency rule computes garbage. This unit
keeps the same bookkeeping as :mod:`hls_ref.nve.iss` (which read data is in flight or waiting
in a latch, which ``rw``/``ri`` entries and accumulator lanes are valid, the hand-offs in the
VMAC pipeline and the visible one with what was activated of it, whether ``ro`` holds a
result, which words the previous instruction wrote), checks the instruction in X against it,
and reports the first broken rule with the :class:`~hls_ref.nve.isa.ErrorCode`, pc and cycle
the simulator's :class:`~hls_ref.nve.isa.NveError` names. Within one instruction the rules are
checked in the simulator's order, so both report the same fault. A ``rd`` of a word never
written is not detected (``docs/nve.md``, "Errors"): it would need a bit per local-buffer word.

Only executed instructions (``x_valid``) move the bookkeeping, so stalls do not disturb it.
The fault is registered: the core sees it in the next cycle, when the faulting instruction is
in M, and kills that instruction's writes and everything behind it. ``end`` checks the rules
of the end of a run (results never activated).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .isa import ActOpcode, Error, IregOpcode, MemOpcode, VmacOpcode, WregOpcode, as_config

__all__ = ["HazardUnit"]

CYCLE_BITS = 32
A, B = 0, 1


def _handoff_layout(lanes, pc_bits):
    """A hand-off in the VMAC pipeline: its lanes' poison, whether a mac went into it, and
    the setrb that made it."""
    return data.StructLayout({"valid": 1, "poison": lanes, "live": 1, "pc": pc_bits,
                              "cycle": CYCLE_BITS})


class HazardUnit(wiring.Component):
    """Checks every executed instruction against the rules of ``docs/nve.md``.

    Members
    -------
    en, clear : ``In(1)``
        Advance; clear (a new run) resets the bookkeeping and the fault.
    x_valid : ``In(1)``
        An instruction executes in X (not killed).
    x_pc, x_cycle : ``In(...)``
        Its pc and cycle (as ``CYCLES`` counts).
    x_mem : ``In(ArrayLayout(MemOpcode, 2))``; x_wreg, x_ireg, x_vmac, x_act : ``In(...)``
        Its operations.
    x_address : ``In(ArrayLayout(addr_bits + 1, 2))``
        Its memory ops' addresses (one bit wider: past the buffer shows).
    end : ``In(1)``
        Check the end-of-run rules now (the last instruction issued in the previous cycle);
        ``end_pc`` is its pc and ``x_cycle`` the cycle the simulator reports.
    fault : ``Out(1)``
        A rule was broken (from the cycle after; held until ``clear``).
    kill : ``Out(1)``
        The faulting instruction moved on into M (its fault was found in an enabled cycle),
        where its writes must be dropped (held until ``clear``).
    code, pc, cycle : ``Out(...)``
        The first broken rule's code, pc and cycle.
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        a, pc = config.addr_bits, config.pc_bits
        super().__init__({
            "en": In(1), "clear": In(1),
            "x_valid": In(1), "x_pc": In(pc), "x_cycle": In(CYCLE_BITS),
            "x_mem": In(data.ArrayLayout(MemOpcode, 2)),
            "x_wreg": In(WregOpcode), "x_ireg": In(IregOpcode), "x_vmac": In(VmacOpcode),
            "x_act": In(ActOpcode),
            "x_address": In(data.ArrayLayout(a + 1, 2)),
            "end": In(1), "end_pc": In(pc),
            "fault": Out(1), "kill": Out(1),
            "code": Out(Error), "pc": Out(pc), "cycle": Out(CYCLE_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        lanes, half = config.lanes, config.act_lanes
        pc_bits = config.pc_bits
        addr = self.x_address

        # ---- bookkeeping (all of it moves only with an executed instruction)
        read_layout = data.StructLayout({"valid": 1, "pc": pc_bits, "cycle": CYCLE_BITS})
        p1 = [Signal(read_layout, name=f"p1_{p}") for p in (A, B)]  # rd issued 1 ago
        p2 = [Signal(read_layout, name=f"p2_{p}") for p in (A, B)]  # rd issued 2 ago: lands
        fresh = [Signal(name=f"fresh_{p}") for p in (A, B)]  # latch holds unconsumed data
        rw_valid = Signal(config.rw_depth)
        ri_valid = Signal(config.ri_size)
        acc_poison = Signal(lanes, init=(1 << lanes) - 1)
        acc_live = Signal()
        handoff = _handoff_layout(lanes, pc_bits)
        s1, s2, s3 = (Signal(handoff, name=f"s{k}") for k in (1, 2, 3))  # setrb 1, 2, 3 ago
        visible = Signal(data.StructLayout({"exists": 1, "poison": lanes, "live": 1,
                                            "done": 2, "count": 3}))
        ro_valid = Signal()  # an act 2 or more instructions ago (ACT_LATENCY): ro for a wr.b
        act_before = Signal()  # the previous instruction had an act
        wrote = [Signal(name=f"wrote_{p}") for p in (A, B)]  # the previous instruction's writes
        wrote_at = [Signal(config.addr_bits + 1, name=f"wrote_at_{p}") for p in (A, B)]

        def lost(poison, live, done):
            """A live hand-off with a clean half that was not activated."""
            return live & ((~done[0] & ~poison[:half].any()) |
                           (~done[1] & ~poison[half:].any()))

        # ---- the instruction in X, in the simulator's order
        land = [p2[p].valid for p in (A, B)]
        fresh_now = [fresh[p] | land[p] for p in (A, B)]
        vis_now = Signal.like(visible)
        with m.If(s3.valid):
            m.d.comb += [vis_now.exists.eq(1), vis_now.poison.eq(s3.poison),
                         vis_now.live.eq(s3.live)]
        with m.Else():
            m.d.comb += vis_now.eq(visible)
        mem_op = [self.x_mem[p] for p in (A, B)]
        rd = [op == MemOpcode.RD for op in mem_op]
        wr = [op == MemOpcode.WR for op in mem_op]
        w_set = self.x_wreg == WregOpcode.SET
        i_set = self.x_ireg == IregOpcode.SET
        i_b_only = (self.x_ireg == IregOpcode.SETSH) | (self.x_ireg == IregOpcode.SETH)
        act = self.x_act != ActOpcode.NOP
        ps = self.x_act == ActOpcode.PS
        act_half = (self.x_act == ActOpcode.HI) | (ps & vis_now.count[0])
        act_poison = Mux(act_half, vis_now.poison[half:], vis_now.poison[:half])
        outside = [(mem_op[p] != MemOpcode.NOP) & (addr[p] >= config.local_words)
                   for p in (A, B)]

        def early(p):
            """A ``rd`` of a word written in this cycle or the previous one."""
            other = 1 - p
            return rd[p] & ((wr[other] & (addr[p] == addr[other])) |
                            (wrote[A] & (addr[p] == wrote_at[A])) |
                            (wrote[B] & (addr[p] == wrote_at[B])))

        here = (self.x_pc, self.x_cycle)
        rules = [  # (broken, code, (pc, cycle))
            (land[A] & fresh[A], Error.READ_OVERWRITE, (p2[A].pc, p2[A].cycle)),
            (land[B] & fresh[B], Error.READ_OVERWRITE, (p2[B].pc, p2[B].cycle)),
            (s3.valid & visible.exists & lost(visible.poison, visible.live, visible.done),
             Error.RESULTS_LOST, (s3.pc, s3.cycle)),
            ((self.x_vmac != VmacOpcode.NOP) & ~rw_valid[0], Error.RW_INVALID, here),
            (w_set & ~fresh_now[A], Error.READ_NOT_READY, here),
            (i_set & w_set, Error.PORT_A_CONFLICT, here),
            (i_set & ~(fresh_now[A] & fresh_now[B]), Error.READ_NOT_READY, here),
            (i_b_only & ~fresh_now[B], Error.READ_NOT_READY, here),
            (outside[A], Error.ADDRESS_RANGE, here),
            (outside[B], Error.ADDRESS_RANGE, here),
            (wr[B] & ~ro_valid, Error.RO_EMPTY, here),
            (wr[A] & wr[B] & (addr[A] == addr[B]), Error.WRITE_CONFLICT, here),
            (early(A), Error.READ_TOO_EARLY, here),
            (early(B), Error.READ_TOO_EARLY, here),
            (act & ~vis_now.exists, Error.ACT_NO_HANDOFF, here),
            (act & vis_now.exists & act_poison.any(), Error.ACT_INVALID_LANES, here),
        ]
        # end of run: the visible hand-off, those still in the VMAC pipeline, the accumulators
        pending = [lost(s.poison, s.live, Const(0, 2)) & s.valid for s in (s3, s2, s1)]
        at_end = (lost(visible.poison, visible.live, visible.done) | Cat(pending).any() |
                  (acc_live & (~acc_poison[:half].any() | ~acc_poison[half:].any())))

        broken = Signal()
        code, pc, cycle = Signal(Error), Signal(pc_bits), Signal(CYCLE_BITS)
        m.d.comb += [broken.eq(0), code.eq(Error.RESULTS_LOST), pc.eq(self.end_pc),
                     cycle.eq(self.x_cycle)]
        with m.If(self.x_valid):
            for condition, rule_code, (rule_pc, rule_cycle) in reversed(rules):
                with m.If(condition):  # the last assignment wins: the first rule in order
                    m.d.comb += [broken.eq(1), code.eq(rule_code), pc.eq(rule_pc),
                                 cycle.eq(rule_cycle)]
        with m.Elif(self.end):
            m.d.comb += broken.eq(at_end)

        with m.If(self.clear):
            m.d.sync += [self.fault.eq(0), self.kill.eq(0), self.code.eq(Error.NONE),
                         self.pc.eq(0), self.cycle.eq(0)]
        with m.Elif(broken & ~self.fault):
            # also while stalled: a faulting instruction waiting for a word never gets it;
            # it moves on into M (and must be killed there) only in an enabled cycle
            m.d.sync += [self.fault.eq(1), self.code.eq(code), self.pc.eq(pc),
                         self.cycle.eq(cycle), self.kill.eq(self.en & self.x_valid)]

        # ---- bookkeeping updates by the executed instruction
        with m.If(self.clear):
            m.d.sync += [
                *(s.eq(0) for s in (*p1, *p2, *fresh, *wrote, s1, s2, s3)),
                rw_valid.eq(0), ri_valid.eq(0), acc_poison.eq((1 << lanes) - 1),
                acc_live.eq(0), visible.eq(0), ro_valid.eq(0), act_before.eq(0),
            ]
        with m.Elif(self.en & self.x_valid):
            for p in (A, B):
                m.d.sync += [p2[p].eq(p1[p]), p1[p].valid.eq(rd[p]), p1[p].pc.eq(self.x_pc),
                             p1[p].cycle.eq(self.x_cycle),
                             wrote[p].eq(wr[p]), wrote_at[p].eq(addr[p])]
            m.d.sync += [
                fresh[A].eq(fresh_now[A] & ~(w_set | i_set)),
                fresh[B].eq(fresh_now[B] & ~(i_set | i_b_only)),
            ]
            with m.Switch(self.x_wreg):
                with m.Case(WregOpcode.SET):
                    m.d.sync += rw_valid.eq(-1)
                with m.Case(WregOpcode.SH):
                    m.d.sync += rw_valid.eq(rw_valid >> 1)
            n = config.pixels_per_word
            with m.Switch(self.x_ireg):
                with m.Case(IregOpcode.SET):
                    m.d.sync += ri_valid[:lanes].eq(-1)
                with m.Case(IregOpcode.SETSH):
                    m.d.sync += ri_valid.eq(Cat(ri_valid[1:lanes], Const(-1, n)))
                with m.Case(IregOpcode.SH):
                    m.d.sync += ri_valid.eq(ri_valid >> 1)
                with m.Case(IregOpcode.SETH):
                    m.d.sync += ri_valid[n:lanes].eq(-1)
            m.d.sync += [s2.eq(s1), s3.eq(s2), s1.valid.eq(0)]
            with m.Switch(self.x_vmac):
                with m.Case(VmacOpcode.SETRB):
                    m.d.sync += [s1.valid.eq(1), s1.poison.eq(acc_poison), s1.live.eq(acc_live),
                                 s1.pc.eq(self.x_pc), s1.cycle.eq(self.x_cycle),
                                 acc_poison.eq(0), acc_live.eq(0)]
                with m.Case(VmacOpcode.MAC, VmacOpcode.MACH):
                    m.d.sync += [acc_poison.eq(acc_poison | ~ri_valid[:lanes]),
                                 acc_live.eq(1)]
            # the visible hand-off after this cycle: what landed, and what this act activated
            done, count = Signal(2), Signal(3)
            m.d.comb += [done.eq(vis_now.done), count.eq(vis_now.count)]
            with m.Switch(self.x_act):
                with m.Case(ActOpcode.LO):
                    m.d.comb += done[0].eq(1)
                with m.Case(ActOpcode.HI):
                    m.d.comb += done[1].eq(1)
                with m.Case(ActOpcode.PS):
                    m.d.comb += count.eq(vis_now.count + 1)
                    with m.If(vis_now.count[1:] == 3):  # the top digit of its half
                        m.d.comb += done.bit_select(vis_now.count[0], 1).eq(1)
            m.d.sync += [visible.eq(vis_now), visible.done.eq(done), visible.count.eq(count),
                         ro_valid.eq(ro_valid | act_before), act_before.eq(act)]
        return m
