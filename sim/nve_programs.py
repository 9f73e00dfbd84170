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
from hls_ref.nve.isa import (
    ACT_LATENCY,
    DEFAULT_CONFIG,
    ErrorCode,
    Instruction,
    MemOp,
    Program,
    Settings,
    coefficients_to_word,
    encode,
    named_lut,
    pixels_to_word,
)
from hls_ref.nve.iss import run

__all__ = [
    "COEF",
    "DATA",
    "DIRECTED",
    "HAZARDS",
    "PARTIAL_SUM_RELOAD",
    "PIX_HI",
    "PIX_LO",
    "PREFIX",
    "REGION",
    "Hazard",
    "Job",
    "band_jobs",
    "directed_jobs",
    "hazard_jobs",
    "partial_sum_jobs",
    "random_program",
]

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
class Job:
    """One run for the lockstep test: a ``program`` (:class:`~hls_ref.nve.isa.Program`) and
    its ``data`` words; ``strict``: the simulator's load lint; ``idle`` / ``stall``: random
    idle input cycles / refused output cycles (probability per cycle); ``load``: stream the
    program (else rerun the loaded one)."""

    name: str
    program: object
    data: tuple
    strict: bool = True
    idle: float = 0.0
    stall: float = 0.0
    load: bool = True


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


def hazard_jobs():
    """A :class:`Job` per hazard program."""
    return [Job(f"hazard {h.name}", h.program, h.data, strict=False) for h in HAZARDS]


# ---------------------------------------------------------------------------------------------
# Random legal programs

#: Local-buffer words the random programs use (all written first, so reads find data).
REGION = 64
_RD, _WR = "rd", "wr"


def _random_word(rng):
    kind = rng.random()
    if kind < 0.4:
        return pixels_to_word([rng.randint(-128, 127) for _ in range(8)])
    if kind < 0.7:
        return coefficients_to_word([rng.randint(-32768, 32767) for _ in range(4)])
    return rng.getrandbits(64)


class _Builder:
    """Builds a straight-line instruction sequence that keeps every rule of ``docs/nve.md``,
    cycle by cycle, with the simulator's bookkeeping: read data in flight and in the latches
    (a ``rd`` that would land on unconsumed data obliges a set to consume it the cycle
    before), ``rw``/``ri`` validity, poisoned lanes, the hand-offs in the VMAC pipeline and the
    acts a replaced hand-off still owes (a ``setrb`` is issued only when they fit)."""

    def __init__(self, rng, agu):
        self.rng = rng
        self.agu = agu  # mode -> (inc, toggle): how an address is split into offset + update
        # words reads take and MEMA / MEMB writes go to (a loop body keeps them apart, so
        # that the addresses its AGUs step to in later iterations stay legal)
        self.zones = {"rd": (0, REGION), "mema": (0, REGION), "memb": (0, REGION)}
        self.t = 0
        self.rows = []
        self.data = []
        self.ready = {}  # word -> first cycle a rd may read it
        self.fresh = [False, False]
        self.pend = [[], []]  # landing cycles of reads in flight
        self.due = [None, None]  # cycle by which the latch's data must be consumed
        self.rw_valid = self.ri_valid = 0
        self.acc_live, self.acc_poison = False, 0xFFFF
        self.hand = []  # [landing, live, poison]
        self.vis = None  # {"live", "poison", "done": [lo, hi], "count"}
        self.act_due = {}  # cycle -> half the visible hand-off must activate then
        self.first_act = None  # a MEMB wr stores the ro of an act 2 or more cycles old

    # -- helpers
    def _clean(self, h, half):
        return not (h["poison"] >> (8 * half)) & 0xFF

    def _needed(self, h):
        if not h["live"]:
            return []
        return [half for half in (0, 1) if not h["done"][half] and self._clean(h, half)]

    def _address(self, zone, address):
        """``(offset, update, mode)`` of ``address``: a fixed address or, half the time, an
        AGU pair whose every address (``offset + u``, ``u < toggle``) lies in ``zone``."""
        lo, hi = self.zones[zone]
        options = []
        for mode, (inc, toggle) in self.agu.items():
            # the update steps by inc from a multiple of inc, so it meets the toggle
            first, last = max(0, address - (hi - toggle)), min(toggle - 1, address - lo)
            updates = range(-(-first // inc) * inc, last + 1, inc)
            if updates:
                options.append((mode, updates))
        if options and self.rng.random() < 0.5:
            mode, updates = self.rng.choice(options)
            update = self.rng.choice(updates)
            return (address - update, update, mode)
        return (address, 0, 0)

    def _land(self):
        """The start of a cycle: read data and hand-offs that land now."""
        t = self.t
        for p in (0, 1):
            if self.pend[p] and self.pend[p][0] == t:
                self.pend[p].pop(0)
                self.fresh[p] = True
        if self.hand and self.hand[0][0] == t:
            _, live, poison = self.hand.pop(0)
            self.vis = {"live": live, "poison": poison, "done": [False, False], "count": 0}

    def step(self, *, drain=False, memory=True):
        rng, t = self.rng, self.t
        row = {}
        self._land()
        # ---- ACT
        forced = self.act_due.pop(t, None)
        needed = self._needed(self.vis) if self.vis else []
        act = None
        if forced is not None:
            act = ("lo", "hi")[forced]
        elif self.vis and drain and needed:
            act = ("lo", "hi")[needed[0]]
        elif self.vis and not drain and rng.random() < 0.35:
            count = self.vis["count"]
            options = [op for op, half in (("lo", 0), ("hi", 1), ("ps", count & 1))
                       if self._clean(self.vis, half)]
            if options:
                act = rng.choice(options)
        if act:
            if act == "ps":
                count = self.vis["count"]
                if count >> 1 == 3:
                    self.vis["done"][count & 1] = True
                self.vis["count"] = (count + 1) % 8
            else:
                self.vis["done"][act == "hi"] = True
            row["act"] = act
            row["out"] = rng.random() < 0.6
        # ---- VMAC (reads rw[0] before this cycle's register ops)
        vmac = None
        if self.rw_valid & 1:
            if drain:
                if self.acc_live and self._setrb_fits():
                    vmac = "setrb"
            else:
                r = rng.random()
                if r < 0.45:
                    vmac = "mac" if rng.random() < 0.8 else "mach"
                elif r < 0.6 and self._setrb_fits():
                    vmac = "setrb"
        if vmac == "setrb":
            self._schedule_acts()
            self.hand.append([t + 3, self.acc_live, self.acc_poison])
            self.acc_live, self.acc_poison = False, 0
        elif vmac:
            self.acc_live = True
            self.acc_poison |= ~self.ri_valid & 0xFFFF
        if vmac:
            row["vmac"] = vmac
        # ---- register ops: obligations first
        must = [self.due[p] == t for p in (0, 1)]
        wreg = ireg = None
        if must[0] and must[1] and self.fresh[0] and self.fresh[1] and rng.random() < 0.5:
            ireg = "set"
        elif must[0]:
            wreg = "set"
        if must[1] and ireg is None:
            ireg = rng.choice(["setsh", "seth"])
        if drain and self.acc_live and not self.rw_valid & 1 and self.fresh[0] and not ireg:
            wreg = "set"
        if not drain:
            if wreg is None:
                r = rng.random()
                if r < 0.25 and self.fresh[0] and ireg != "set":
                    wreg = "set"
                elif r < 0.6:
                    wreg = "sh"
            if ireg is None:
                r = rng.random()
                if r < 0.25 and self.fresh[0] and self.fresh[1] and wreg != "set":
                    ireg = "set"
                elif r < 0.45 and self.fresh[1]:
                    ireg = rng.choice(["setsh", "seth"])
                elif r < 0.6:
                    ireg = "sh"
        if wreg == "set":
            self.fresh[0], self.due[0], self.rw_valid = False, None, 0xF
        elif wreg == "sh":
            self.rw_valid >>= 1
        if ireg == "set":
            self.fresh[0] = self.fresh[1] = False
            self.due = [None, None]
            self.ri_valid |= 0xFFFF
        elif ireg == "setsh":
            self.fresh[1], self.due[1] = False, None
            self.ri_valid = ((self.ri_valid >> 1) & 0x7FFF) | (0xFF << 15)
        elif ireg == "seth":
            self.fresh[1], self.due[1] = False, None
            self.ri_valid |= 0xFF00
        elif ireg == "sh":
            self.ri_valid >>= 1
        if wreg:
            row["wreg"] = wreg
        if ireg:
            row["ireg"] = ireg
        # ---- memory: writes, then reads of words written 2 or more cycles before
        written_now = set()
        if memory and not drain:
            if rng.random() < 0.3:
                address = rng.randrange(*self.zones["mema"])
                row["mema"] = (_WR, *self._address("mema", address))
                self.data.append(_random_word(rng))
                written_now.add(address)
            if (self.first_act is not None and self.first_act <= t - ACT_LATENCY
                    and rng.random() < 0.15):
                address = rng.randrange(*self.zones["memb"])
                if address not in written_now:
                    row["memb"] = (_WR, *self._address("memb", address))
                    written_now.add(address)
        want_rd = [False, False]
        if drain:
            want_rd[0] = (self.acc_live and not self.rw_valid & 1 and not self.fresh[0]
                          and not self.pend[0])
        elif memory:
            want_rd = [rng.random() < 0.45, rng.random() < 0.45]
        lo, hi = self.zones["rd"]
        readable = [a for a, r in self.ready.items()
                    if r <= t and a not in written_now and lo <= a < hi]
        for p, slot in ((0, "mema"), (1, "memb")):
            if not want_rd[p] or slot in row or not readable:
                continue
            waiting = self.fresh[p]
            landing = bool(self.pend[p]) and self.pend[p][0] == t + 1
            if (waiting and landing) or self.due[p] is not None:
                continue
            if waiting or landing:
                self.due[p] = t + 1  # a set must take it before this read lands
            self.pend[p].append(t + 2)
            row[slot] = (_RD, *self._address("rd", rng.choice(readable)))
        for address in written_now:
            self.ready[address] = t + 2
        if act and self.first_act is None:
            self.first_act = t
        self.rows.append(row)
        self.t += 1

    def _setrb_fits(self):
        """Whether the hand-off this setrb replaces at t+3 can still get its acts."""
        t = self.t
        if self.act_due:
            return False
        target = None
        if self.vis is not None:
            target = (t, self.vis)
        for landing, live, poison in self.hand:
            if landing <= t + 2:
                target = (landing, {"live": live, "poison": poison, "done": [False, False]})
        if target is None:
            return True
        landing, h = target
        cycles = list(range(max(landing, t + 1), t + 3))
        return len(self._needed(h)) <= len(cycles)

    def _schedule_acts(self):
        t = self.t
        target = (t, self.vis) if self.vis is not None else None
        for landing, live, poison in self.hand:
            if landing <= t + 2:
                target = (landing, {"live": live, "poison": poison, "done": [False, False]})
        if target is None:
            return
        landing, h = target
        cycles = list(range(max(landing, t + 1), t + 3))
        for cycle, half in zip(cycles, self._needed(h)):
            self.act_due[cycle] = half

    def quiet(self):
        """Whether nothing is in flight and no result is owed (the end of a run or of a
        loop body that may repeat)."""
        return (not self.acc_live and not self.hand and not self.act_due
                and not any(self.pend) and self.due == [None, None]
                and not (self.vis and self._needed(self.vis)))

    def drain(self, limit=40):
        for _ in range(limit):
            if self.quiet():
                return
            self.step(drain=True)
        raise AssertionError("the random program did not drain")

    def canonical(self):
        """From a quiet state, bring ``rw``, ``ri`` and the accumulators to one state (all
        valid, accumulators set, nothing owed), so that a loop body that starts and ends
        with it can repeat: set.w, setsh.i and set.i from four reads, then a setrb."""
        words = [a for a, r in self.ready.items() if r <= self.t]
        a, b = self.rng.choice(words), self.rng.choice(words)
        plan = [{"mema": (_RD, a, 0, 0), "memb": (_RD, b, 0, 0)},
                {"mema": (_RD, b, 0, 0), "memb": (_RD, a, 0, 0)},
                {"wreg": "set", "ireg": "setsh"},
                {"ireg": "set", "vmac": "setrb"}]
        for p in (0, 1):  # data left in a latch is consumed first
            if self.fresh[p]:
                self._forced({"wreg": "set"} if p == 0 else {"ireg": "setsh"})
        for row in plan:
            self._forced(row)
        while not self.quiet():
            self._forced({})

    def _forced(self, row):
        """Append ``row`` as given, keeping the bookkeeping (no act is owed: quiet state)."""
        t = self.t
        self._land()
        if row.get("vmac") == "setrb":
            self.hand.append([t + 3, self.acc_live, self.acc_poison])
            self.acc_live, self.acc_poison = False, 0
        if row.get("wreg") == "set":
            self.fresh[0], self.rw_valid = False, 0xF
        if row.get("ireg") == "setsh":
            self.fresh[1] = False
            self.ri_valid = ((self.ri_valid >> 1) & 0x7FFF) | (0xFF << 15)
        elif row.get("ireg") == "set":
            self.fresh = [False, False]
            self.ri_valid |= 0xFFFF
        for p, slot in ((0, "mema"), (1, "memb")):
            if slot in row:
                self.pend[p].append(t + 2)
        self.rows.append(row)
        self.t += 1

    def fill(self):
        """Write every word of the region, so any read finds data."""
        for address in range(REGION):
            self.rows.append({"mema": (_WR, address, 0, 0)})
            self.data.append(_random_word(self.rng))
            self.ready[address] = self.t + 2
            self.t += 1


def _instruction(row):
    fields = {}
    for slot in ("mema", "memb"):
        if slot in row:
            fields[slot] = MemOp(*row[slot])
    for slot in ("wreg", "ireg", "vmac", "act", "out"):
        if slot in row:
            fields[slot] = row[slot]
    return Instruction(**fields)


def _agu_pairs(rng, config):
    pairs = {}
    for mode in range(1, config.agu_modes):
        inc = rng.randint(1, 4)
        pairs[mode] = (inc, inc * rng.randint(1, REGION // (4 * inc)))
    return pairs


def random_program(rng, *, instructions=None, loop=False, config=DEFAULT_CONFIG):
    """A random program that the simulator runs without a fault, and its data words.

    ``rng`` (:class:`random.Random`). Straight-line (``loop`` False): the region's words are
    written, then random bundles built by :class:`_Builder` (every slot busy about half the
    time, AGU fields and pairs random), then a drain that hands off and activates what is
    left; about ``instructions`` in all (default: random, up to the buffer). With ``loop``: a
    prefix, a loop body repeated a random number of times, and a final part; the body starts
    and ends in one state (nothing in flight or owed, :meth:`_Builder.canonical`), reads only
    the first half of the region and writes only the second (its AGU-stepped addresses move
    each iteration within them), so that every iteration is as legal as the first. A random
    LUT and shift. Returns ``(Program, data words)``.
    """
    agu = _agu_pairs(rng, config)
    b = _Builder(rng, agu)
    b.fill()
    budget = instructions or rng.randint(100, config.instruction_words - 80)
    if not loop:
        while b.t < budget:
            b.step()
        b.drain()
        return _assemble(rng, b.rows, agu, 0, len(b.rows) - 1, 1, config), tuple(b.data)
    for _ in range(rng.randint(0, 60)):
        b.step()
    b.drain()
    b.canonical()
    start, data_before = len(b.rows), len(b.data)
    # the body: reads from the first half of the region, writes to the second (port A, then
    # B), no act on a hand-off made before it; it ends as it starts
    half, quarter = REGION // 2, REGION // 4
    b.zones = {"rd": (0, half), "mema": (half, half + quarter), "memb": (half + quarter, REGION)}
    b.vis = None
    for _ in range(rng.randint(1, 60)):
        b.step()
    b.drain()
    b.canonical()
    end, body_data = len(b.rows) - 1, len(b.data) - data_before
    b.zones = {"rd": (0, REGION), "mema": (0, REGION), "memb": (0, REGION)}
    for _ in range(rng.randint(0, 40)):
        b.step()
    b.drain()
    rows = b.rows
    iterations = rng.randint(1, 40)
    data = (b.data[:data_before] +
            [_random_word(rng) for _ in range(body_data * iterations)] +
            b.data[data_before + body_data:])
    return _assemble(rng, rows, agu, start, end, iterations, config), tuple(data)


def _assemble(rng, rows, agu, start, end, iterations, config):
    lut = [rng.randint(-128, 127) for _ in range(1024)] if rng.random() < 0.7 else \
        list(named_lut("identity"))
    settings = Settings(start, end, iterations, tuple(agu[m] for m in sorted(agu)),
                        rng.randint(0, 31), tuple(lut))
    return Program(tuple(encode(_instruction(row), config) for row in rows), settings, config)


def _sources_digest():
    """A digest of what the code generator's programs depend on (``sw``, ``hls_ref`` and this
    file's sources)."""
    import hashlib

    from .toolchain import PROJECT_ROOT

    hasher = hashlib.sha256()
    for tree in ("sw", "hls_ref", "sim/nve_programs.py"):
        root = PROJECT_ROOT / tree
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            hasher.update(str(path.relative_to(PROJECT_ROOT)).encode())
            hasher.update(path.read_bytes())
    return hasher.hexdigest()[:16]


def cached_band_jobs(network, *, short=True):
    """:func:`band_jobs` with the default options, cached under ``build/nve-jobs`` by a
    digest of the sources (compiling a network takes seconds; the tests of both simulators
    use the same jobs)."""
    import pickle

    from .runner import _locked
    from .toolchain import BUILD_ROOT

    directory = BUILD_ROOT / "nve-jobs"
    path = directory / f"{network}-{'short' if short else 'bands'}-{_sources_digest()}.pkl"
    with _locked(directory):
        if not path.exists():
            path.write_bytes(pickle.dumps(band_jobs(network, short=short)))
        return pickle.loads(path.read_bytes())


def band_jobs(network, *, short=True, seed=3003, config=DEFAULT_CONFIG):
    """A :class:`Job` per distinct program the code generator emits for ``network``
    (``face-detection`` or ``speed-sign``, fused as ``tessera nve compile`` does). ``short``:
    one band of the compiler's self-check row (the same program text with the fewest loop
    iterations), once with realistic random data and once with the exact check's data
    (:func:`sw.nve.compile.check_data`); else the first and the last whole row band of the
    layer, realistic data."""
    import numpy as np

    from sw.nve.compile import band_run, check_data, short_band
    from sw.nve.network import compile_network

    rng = np.random.default_rng(seed)
    jobs = []
    for result in compile_network(network, check=False, config=config).layers:
        for k, summary in enumerate(result.programs()):
            group = summary.members[0]
            name = f"{network} {result.name} p{k}"
            if short:
                probe, small = short_band(group, config)
                for exact in (False, True):
                    data = check_data(small, rng, exact=exact)
                    program, words = band_run(probe, small, *data, band=0)
                    jobs.append(Job(f"{name} short {'exact' if exact else 'random'}", program,
                                    tuple(words)))
            else:
                data = check_data(result.layer, rng)
                for band in sorted({0, group.bands - 1}):
                    program, words = band_run(group, result.layer, *data, band=band)
                    jobs.append(Job(f"{name} band {band}", program, tuple(words)))
    return jobs


# ---------------------------------------------------------------------------------------------
# Directed programs: the corners of the sequencer, the AGU and partial sums

_FILL = "".join(f"wr.a {a}\n" for a in range(12))  # words 0 ... 11, pcs 0 ... 11

#: (name, assembly, data words, strict) of each directed program.
DIRECTED = (
    # the update misses its toggle (inc 5 never meets 2 below 2048): it wraps at 2^11
    ("agu wrap", ".loop 0 0 420\n.agu 1 5 2\nwr.a 0+0@1\n", tuple(range(420)), False),
    # a one-instruction body stepping both ports (the AGU state is forwarded from X)
    ("one-instruction loop", ".loop 14 14 40\n.agu 1 1 8\n.agu 2 3 12\n" + _FILL +
     "rd.b 0\nrd.b 3\nwr.a 16+0@1 | rd.b 0+6@2 | setsh.i\nnop\n", tuple(range(52)), True),
    # a two-instruction body (the AGU state is forwarded from the previous X)
    ("two-instruction loop", ".loop 14 15 30\n.agu 1 2 8\n.agu 2 1 4\n" + _FILL +
     "rd.b 1\nnop\nrd.b 0+2@1 | setsh.i\nwr.a 20+1@2\n", tuple(range(42)), True),
    ("no iterations", ".loop 2 3 0\nwr.a 0\nwr.a 1\nwr.a 2\nwr.a 3\nwr.a 4\nwr.a 5\n",
     (1, 2, 3, 4), True),
    ("no iterations from pc 0", ".loop 0 1 0\nwr.a 0\nwr.a 1\nwr.a 2\n", (7,), True),
    ("nothing to run", ".loop 0 2 0\nwr.a 0\nwr.a 1\nwr.a 2\n", (), True),
)

#: The 8 partial-sum words at 2 ... 9 (word n: digit n // 2 of half n % 2) come back as four
#: planes with the weights 1, 256 (``mac``) and 1, 256 (``mach``: shifted 16 bits); data:
#: coefficient words [0 0 0 0] and [1 256 1 256], then the 8 words.
PARTIAL_SUM_RELOAD = "".join(f"wr.a {a}\n" for a in range(10)) + """\
rd.a 0
nop
set.w
setrb
rd.a 1
rd.a 2 | rd.b 3
set.w
rd.a 4 | rd.b 5 | set.i
sh.w | mac
rd.a 6 | rd.b 7 | set.i
sh.w | mac
rd.a 8 | rd.b 9 | set.i
sh.w | mach
set.i
mach
setrb
nop
nop
""" + "act.ps out\n" * 8


def partial_sum_jobs(rng, macs=600):
    """Two :class:`Job`\\ s: a run that sends its accumulators out as partial-sum words
    (``bias + macs * w * pixels`` with random pixels, bias -32768 and w 32767, so they wrap),
    and a run that reloads them (:data:`PARTIAL_SUM_RELOAD`) and sends them out again."""
    pixels = [rng.randint(-128, 127) for _ in range(16)]
    data = (coefficients_to_word([-32768, 32767, 0, 0]), pixels_to_word(pixels[:8]),
            pixels_to_word(pixels[8:]))
    program = assemble(f".loop 8 8 {macs}\n" + PREFIX + "sh.w\nmac\nsetrb\nnop\nnop\n" +
                       "act.ps out\n" * 8)
    words = run(program, data).output_words
    coef = (coefficients_to_word([0, 0, 0, 0]), coefficients_to_word([1, 256, 1, 256]))
    return [Job("partial sums out", program, data),
            Job("partial sums reloaded", assemble(PARTIAL_SUM_RELOAD), coef + tuple(words))]


def directed_jobs(rng):
    """A :class:`Job` per :data:`DIRECTED` program and the partial-sum pair."""
    jobs = [Job(name, assemble(text, strict=strict), data, strict=strict)
            for name, text, data, strict in DIRECTED]
    return jobs + partial_sum_jobs(rng)
