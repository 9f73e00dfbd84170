"""NVE programs for the simulator and the RTL lockstep: one per hazard the simulator refuses,
and random legal bundle sequences generated from the instruction set's rules.

:data:`HAZARDS` holds one small program per :class:`hls_ref.nve.isa.ErrorCode` a run can
raise (several for the rules with several cases), each with the cycle and pc the fault must be
reported at. The simulator's tests check each against its own result; the RTL's lockstep test
runs each and compares the hardware's status with the simulator's (``ERROR_DOC`` says where
the hardware behaves otherwise: a stall for an exhausted input, no check for a word never
written).

:func:`random_program` builds a random program that the simulator runs without a fault
(:mod:`tests` check that it does): see its docstring for how legality is kept.
"""

from dataclasses import dataclass

from hls_ref.nve.asm import assemble
from hls_ref.nve.isa import ErrorCode, coefficients_to_word, pixels_to_word

__all__ = ["COEF", "DATA", "HAZARDS", "PIX_HI", "PIX_LO", "PREFIX", "Hazard"]

COEF = coefficients_to_word([100, 3, -2, 7])  # [bias w1 w2 w3]
PIX_LO = pixels_to_word([1, -2, 3, -4, 5, -6, 7, -8])
PIX_HI = pixels_to_word([10, 20, 30, 40, 50, 60, 70, 80])
DATA = (COEF, PIX_LO, PIX_HI)

# Cycles 0-6: words 0 (coefficients), 1 and 2 (pixels) written, read, and loaded into rw and
# ri; the setrb at cycle 6 sets every accumulator to the bias (its hand-off of the never-set
# accumulators is not live). The ri entries 16..22 stay invalid.
PREFIX = """\
wr.a 0
wr.a 1
wr.a 2
rd.a 0
rd.a 1 | rd.b 2
set.w
set.i | setrb
"""
_HANDOFF = "sh.w | mac\nsetrb\n"  # the setrb at cycle 8 hands off one mac (live)
_STEP = _HANDOFF + "nop\nnop\nact.lo out\nact.hi out\n"  # both halves activated at 11, 12


@dataclass(frozen=True)
class Hazard:
    """A program that breaks one rule: ``text`` (assembly), ``data`` (input words), the
    :class:`~hls_ref.nve.isa.ErrorCode` the simulator raises and the ``cycle`` and ``pc`` it
    reports."""

    name: str
    text: str
    data: tuple
    code: ErrorCode
    cycle: int
    pc: int

    @property
    def program(self):
        """The assembled :class:`~hls_ref.nve.isa.Program` (not strict: an AGU update may
        wrap)."""
        return assemble(self.text, strict=False)


def _h(name, body, code, cycle, pc, prefix=PREFIX, data=DATA):
    return Hazard(name, prefix + body, tuple(data), code, cycle, pc)


#: One program per rule (and case) a run can break; every ErrorCode a run raises is covered.
HAZARDS = (
    _h("port_a_conflict", "set.w | set.i\n", ErrorCode.PORT_A_CONFLICT, 5, 5,
       prefix="wr.a 0\nwr.a 1\nnop\nrd.a 0 | rd.b 1\nrd.a 1\n"),
    _h("set_before_arrival", "", ErrorCode.READ_NOT_READY, 3, 3,
       prefix="wr.a 0\nnop\nrd.a 0\nset.w\n"),
    _h("set_never_read", "", ErrorCode.READ_NOT_READY, 0, 0, prefix="setsh.i\n"),
    _h("set_consumed_twice", "set.w\nnop\nset.w\n", ErrorCode.READ_NOT_READY, 6, 6,
       prefix="wr.a 0\nnop\nrd.a 0\nnop\n"),
    _h("set_i_needs_port_b", "set.i\n", ErrorCode.READ_NOT_READY, 4, 4,
       prefix="wr.a 0\nnop\nrd.a 0\nnop\n"),
    _h("read_port_hold", "nop\nset.w\n", ErrorCode.READ_OVERWRITE, 3, 3,
       prefix="wr.a 0\nwr.a 1\nrd.a 0\nrd.a 1\n"),
    _h("read_port_hold_b", "nop\nsetsh.i\n", ErrorCode.READ_OVERWRITE, 3, 3,
       prefix="wr.a 0\nwr.a 1\nrd.b 0\nrd.b 1\n"),
    _h("read_one_after_write", "", ErrorCode.READ_TOO_EARLY, 1, 1, prefix="wr.a 0\nrd.b 0\n"),
    _h("read_same_cycle_as_write", "", ErrorCode.READ_TOO_EARLY, 0, 0,
       prefix="wr.a 0 | rd.b 0\n"),
    _h("read_after_ro_write", _STEP + "wr.b 9\nrd.a 9\n", ErrorCode.READ_TOO_EARLY, 14, 14),
    _h("read_unwritten", "", ErrorCode.READ_UNWRITTEN, 0, 0, prefix="rd.b 7\n"),
    _h("address_range", "", ErrorCode.ADDRESS_RANGE, 0, 0, prefix="wr.a 2047+1\n"),
    _h("address_range_agu", "", ErrorCode.ADDRESS_RANGE, 2, 1,
       prefix=".loop 1 1 3\n.agu 1 1000 2000\nnop\nwr.a 1000+100@1\n"),
    _h("write_conflict", _STEP + "wr.a 9 | wr.b 9\n", ErrorCode.WRITE_CONFLICT, 13, 13,
       data=(*DATA, 0)),
    _h("input_exhausted", "", ErrorCode.INPUT_EXHAUSTED, 2, 2,
       prefix="wr.a 0\nwr.a 1\nwr.a 2\n", data=DATA[:2]),
    _h("ro_empty", "", ErrorCode.RO_EMPTY, 0, 0, prefix="wr.b 0\n"),
    _h("rw_invalid_mac", "set.w | mac\n", ErrorCode.RW_INVALID, 4, 4,
       prefix="wr.a 0\nnop\nrd.a 0\nnop\n"),
    _h("rw_invalid_setrb", "set.w | setrb\n", ErrorCode.RW_INVALID, 4, 4,
       prefix="wr.a 0\nnop\nrd.a 0\nnop\n"),
    _h("rw_shifted_out", "sh.w\nsh.w\nsh.w\nsh.w\nmach\n", ErrorCode.RW_INVALID, 11, 11),
    _h("act_without_handoff", "nop\nact.hi\n", ErrorCode.ACT_NO_HANDOFF, 8, 8),
    _h("act_ps_without_handoff", "act.ps\n", ErrorCode.ACT_NO_HANDOFF, 7, 7),
    _h("act_too_early", _HANDOFF + "nop\nact.lo\n", ErrorCode.ACT_INVALID_LANES, 10, 10),
    _h("act_poisoned_lane", "sh.w | sh.i\nmac\nsetrb\nnop\nnop\nact.hi\n",
       ErrorCode.ACT_INVALID_LANES, 12, 12),
    _h("act_ps_poisoned_half", "sh.w | sh.i\nmac\nsetrb\nnop\nnop\nact.ps\nact.ps\n",
       ErrorCode.ACT_INVALID_LANES, 13, 13),
    _h("handoff_replaced", _HANDOFF + "setrb\nnop\nnop\nnop\n", ErrorCode.RESULTS_LOST, 9, 9),
    _h("handoff_half_replaced", _HANDOFF + "nop\nnop\nact.lo\nsetrb\nnop\nnop\nnop\n",
       ErrorCode.RESULTS_LOST, 12, 12),
    _h("handoff_ps_incomplete", _HANDOFF + "nop\nnop\n" + "act.ps\n" * 7 + "setrb\nnop\nnop\n"
       "nop\n", ErrorCode.RESULTS_LOST, 18, 18),
    _h("end_with_live_handoff", _HANDOFF, ErrorCode.RESULTS_LOST, 9, 8),
    _h("end_with_pending_handoff", _STEP + "sh.w | mac\nsetrb\n", ErrorCode.RESULTS_LOST, 15,
       14),
    _h("end_with_macs", "sh.w | mac\n", ErrorCode.RESULTS_LOST, 8, 7),
)
