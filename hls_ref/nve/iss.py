"""Cycle-accurate instruction-set simulator (ISS) of the NVE, with every hazard checked.

The NVE has an exposed pipeline: no interlocks, so a program that reads a register or a word
too early would silently compute garbage in hardware. The simulator instead raises
:class:`~.isa.NveError` on every broken rule (``docs/nve.md``, "Hazards"), naming the cycle,
the pc, the slot and the rule, e.g. ``cycle 17, pc 5, IREG set: port-A read data already
consumed by the set at cycle 16``.

Timing model, per issued instruction (one per cycle when the machine does not stall):

* every operation reads the state as it was at the start of the cycle; its results commit at
  the end (a register op at t is seen at t+1; a ``mac`` and a register op overwriting its
  operand may share a cycle);
* ``rd`` at t puts the word in the port's read latch at t+2 (:data:`~.isa.READ_LATENCY`);
  ``wr`` at t makes the word readable from t+2 (:data:`~.isa.WRITE_TO_READ`);
* ``setrb`` at t hands the accumulators to ACT, readable by an ``act`` from t+3
  (:data:`~.isa.HANDOFF_LATENCY`);
* a stall (input word not yet available, output not accepted) freezes the whole machine, so
  all latencies count issued instructions; stall cycles only add to :attr:`RunResult.cycles`.
  Cycle numbers in messages and traces are wall cycles (stalls included), starting at 0.

Every :class:`~.isa.NveError` of a run carries the :class:`~.isa.ErrorCode`, cycle and pc the
hardware reports for the same fault, and ``run(..., retire=True)`` records one
:class:`Retire` per issued instruction (its memory operations and the register state after
it), the trace the RTL's lockstep co-simulation is compared with.
"""

import struct
from collections import deque
from dataclasses import dataclass
from itertools import chain, repeat
from typing import NamedTuple

import numpy as np

from . import numerics
from .asm import disassemble_instruction
from .isa import (
    ACT_LATENCY,
    DEFAULT_CONFIG,
    HANDOFF_LATENCY,
    OPS,
    READ_LATENCY,
    WRITE_TO_READ,
    ErrorCode,
    NveError,
    check_program,
    word_to_pixels,
)

__all__ = ["Nve", "PartCounts", "Retire", "RunResult", "run"]

# Opcodes as small ints for the hot loop (indices into isa.OPS).
_RD, _WR = OPS["mema"].index("rd"), OPS["mema"].index("wr")
_W_SET, _W_SH = OPS["wreg"].index("set"), OPS["wreg"].index("sh")
_I_SET, _I_SETSH, _I_SH, _I_SETH = (OPS["ireg"].index(op) for op in ("set", "setsh", "sh",
                                                                     "seth"))
_SETRB, _MAC, _MACH = (OPS["vmac"].index(op) for op in ("setrb", "mac", "mach"))
_HALF = {OPS["act"].index("lo"): 0, OPS["act"].index("hi"): 1}
_PS = OPS["act"].index("ps")
_HALF_NAME = ("lo", "hi")

# A decoded instruction is one flat tuple, unpacked once per cycle:
# (MEMA op, offset, update, mode, inc, toggle, MEMB op, offset, update, mode, inc, toggle,
#  WREG op, IREG op, VMAC op, ACT op, out)
_MEMA_UPDATE, _MEMB_UPDATE, _VMAC_OP = 2, 8, 14


@dataclass(frozen=True)
class PartCounts:
    """Instructions and ``mac`` operations one program part executed."""

    instructions: int
    mac_ops: int
    lanes: int

    @property
    def mac_per_instruction(self):
        """Lane MACs per instruction (``lanes * mac_ops / instructions``), 0 if empty."""
        return self.lanes * self.mac_ops / self.instructions if self.instructions else 0.0


class Retire(NamedTuple):
    """One issued instruction and what it wrote back (``run(..., retire=True)``).

    ``cycle`` (wall) and ``pc``; per memory slot the opcode (:data:`~.isa.OPS` index), the
    word address (0 for a ``nop``) and the word written (0 unless ``wr``); then the state at
    the end of the cycle, packed little-endian as the hardware holds it: ``rw`` (4 x int16,
    entry ``k`` at bits ``16k``), ``ri`` (23 x int8 at bits ``8k``), ``acc`` (16 x int32 at
    bits ``32j``, wrapped), ``ro`` (the latest ``act`` result, 0 before any) and ``out`` (the
    instruction pushed ``ro`` to the output stream)."""

    cycle: int
    pc: int
    mema_op: int
    mema_addr: int
    mema_data: int
    memb_op: int
    memb_addr: int
    memb_data: int
    rw: int
    ri: int
    acc: int
    ro: int
    out: bool


@dataclass(frozen=True)
class RunResult:
    """What one run did.

    ``cycles``: wall cycles (``instructions + stall_cycles``); ``instructions``: instructions
    issued; ``mac_ops``: ``mac`` and ``mach`` operations; ``lane_macs``: multiply-accumulates
    on lanes whose ``ri`` entry was valid; ``outputs``: the output-stream words as int8
    pixels, shape ``(words, act_lanes)``; ``output_words``: the same as unsigned 64-bit ints;
    ``inputs_used``: input-stream data words consumed; ``parts``: counts of the ``"init"``,
    ``"loop"`` and ``"final"`` parts; ``local_buffer``: the local-buffer words after the run
    (uint64) and ``written`` which of them were ever written; ``trace``: one line per cycle if
    asked for; ``retire``: one :class:`Retire` per instruction if asked for.
    """

    cycles: int
    instructions: int
    stall_cycles: int
    mac_ops: int
    lane_macs: int
    lanes: int
    outputs: np.ndarray
    output_words: tuple
    inputs_used: int
    parts: dict
    local_buffer: np.ndarray
    written: np.ndarray
    trace: tuple | None = None
    retire: tuple | None = None

    @property
    def mac_per_instruction(self):
        """Lane MACs per instruction over the whole run (``lanes * mac_ops / instructions``),
        the seed's hardware-utilisation metric (at most ``lanes``)."""
        return self.lanes * self.mac_ops / self.instructions if self.instructions else 0.0


def _error(wall, pc, what, rule, code):
    return NveError(f"cycle {wall}, pc {pc}, {what}: {rule}", code, cycle=wall, pc=pc)


def _timing_model(model, what):
    """``model`` (None, a sequence or a callable of the word index) as a callable or None."""
    if model is None or callable(model):
        return model
    values = [int(v) for v in model]

    def lookup(k):
        if k >= len(values):
            raise NveError(f"the {what} model gives no cycle for word {k}")
        return values[k]
    return lookup


class Nve:
    """One NVE: an instruction buffer, a local buffer that keeps its contents between runs, and
    the setting registers of the loaded program.

    ``load(program)`` checks and loads a :class:`~.isa.Program`; ``run(data)`` executes it once
    (and can be called again, e.g. for the next band: the AGU updates restart from the loaded
    instruction fields, registers and latches start invalid, the local buffer is kept).
    """

    def __init__(self, config=DEFAULT_CONFIG):
        self.config = config
        self.program = None
        self._mem = [0] * config.local_words
        self._written = [False] * config.local_words

    @property
    def local_buffer(self):
        """The local-buffer words (uint64 array, ``config.local_words``)."""
        return np.array(self._mem, dtype=np.uint64)

    @property
    def written(self):
        """Which local-buffer words were ever written (bool array)."""
        return np.array(self._written, dtype=bool)

    def load(self, program, *, strict=True):
        """Check ``program`` (:func:`~.isa.check_program`, ``strict`` as there) and load it.
        A program that fails the check leaves no program loaded, as a failed load in the
        hardware leaves ``LOADED`` 0."""
        if program.config != self.config:
            raise NveError("the program was built for another NveConfig")
        self.program = None
        instructions = check_program(program, strict=strict)
        s = program.settings
        decoded = []
        for ins in instructions:
            row = []
            for slot in ("mema", "memb"):
                m = getattr(ins, slot)
                inc, toggle = s.pair(m.mode) if m.mode else (0, 0)
                row += [OPS[slot].index(m.op), m.offset, m.update, m.mode, inc, toggle]
            row += [OPS[slot].index(getattr(ins, slot)) for slot in ("wreg", "ireg", "vmac",
                                                                    "act")]
            row.append(ins.out)
            decoded.append(tuple(row))
        self.program = program
        self._decoded = decoded
        self._text = [disassemble_instruction(ins, self.config) for ins in instructions]
        self._lut = np.asarray(s.lut, dtype=np.int8)
        # what each part executes depends on the program only (no branches, no data)
        macs = [row[_VMAC_OP] in (_MAC, _MACH) for row in decoded]
        spans = {"init": (0, s.loop_start, 1),
                 "loop": (s.loop_start, program.loop_end + 1, s.iterations),
                 "final": (program.loop_end + 1, program.size, 1)}
        self._parts = {name: PartCounts((b - a) * n, sum(macs[a:b]) * n, self.config.lanes)
                       for name, (a, b, n) in spans.items()}

    def run(self, data=(), *, arrival=None, output_accept=None, trace=False, retire=False):
        """Execute the loaded program once and return a :class:`RunResult`.

        ``data``: the input-stream data words (unsigned 64-bit ints), consumed one per MEMA
        ``wr`` in execution order. ``arrival``: optional input timing, a sequence or a callable
        giving for data word ``k`` the earliest wall cycle it is available; a ``wr`` issued
        earlier stalls the machine until then. ``output_accept``: the same for the output
        stream (earliest wall cycle output word ``k`` is accepted). ``trace``: record one text
        line per cycle in :attr:`RunResult.trace`; ``retire``: one :class:`Retire` per
        instruction in :attr:`RunResult.retire` (a list that is also attached to the
        :class:`~.isa.NveError` of a failing run as ``error.retire``, what ran before the
        fault).
        """
        # The cycle loop keeps the whole machine state in local variables and inlines the
        # common operations: attribute look-ups and calls per operation would halve its speed.
        if self.program is None:
            raise NveError("no program loaded", ErrorCode.NO_PROGRAM)
        records = [] if retire else None
        try:
            return self._run(data, arrival, output_accept, trace, records)
        except NveError as error:
            error.retire = records
            raise

    def _run(self, data, arrival, output_accept, trace, records):
        cfg, s = self.config, self.program.settings
        words = [int(w) for w in data]
        for k, w in enumerate(words):
            if not 0 <= w < 1 << cfg.word_bits:
                raise NveError(f"input data word {k} = {w} does not fit {cfg.word_bits} bits "
                               f"unsigned")
        arrival = _timing_model(arrival, "input arrival")
        accept = _timing_model(output_accept, "output accept")
        lanes, half_lanes = cfg.lanes, cfg.act_lanes
        lane_mask, half_mask = (1 << lanes) - 1, (1 << half_lanes) - 1
        ri_size, rw_depth = cfg.ri_size, cfg.rw_depth
        n_pix = cfg.pixels_per_word
        unpack_pixels = struct.Struct(f"<{n_pix}b").unpack
        unpack_coefficients = struct.Struct(f"<{cfg.coefficients_per_word}h").unpack
        pack_rw = struct.Struct(f"<{rw_depth}h").pack
        pack_ri = struct.Struct(f"<{ri_size}b").pack
        pack_acc = struct.Struct(f"<{lanes}I").pack
        word_bytes = cfg.word_bits // 8
        local_words = cfg.local_words
        update_mask = (1 << cfg.addr_bits) - 1
        shift, lut = s.shift, self._lut
        decoded, text = self._decoded, self._text
        # the AGU state memory, reloaded from the instruction fields at every start
        upd_a = [row[_MEMA_UPDATE] for row in decoded]
        upd_b = [row[_MEMB_UPDATE] for row in decoded]

        mem = self._mem
        written = self._written
        # ready[a]: first issue index at which word a may be read (None: never written);
        # words written by earlier runs are readable at once.
        ready = [0 if w else None for w in written]
        wrote_at = [0] * local_words  # wall cycle of the latest write, for messages

        # every start: registers 0 and invalid, no hand-off, ro empty (docs/nve.md, reset)
        rw, rw_valid = [0] * rw_depth, 0
        ri, ri_valid = [0] * ri_size, 0
        acc, acc_poison, acc_macs = [0] * lanes, lane_mask, 0  # never set: all lanes invalid
        pend_a, pend_b = deque(), deque()  # (arrival issue index, word, wall, pc) in flight
        # read latches: [word, fresh, wall of its rd, pc of its rd, wall of the consuming set]
        latch_a, latch_b = [0, False, None, None, None], [0, False, None, None, None]
        hand_pend = deque()  # setrb hand-offs not yet visible to ACT
        # visible: [acc, poison, had_mac, wall, pc, activated lo, activated hi, next ps word]
        visible = None
        ro = None
        ro_seen = deque([None] * ACT_LATENCY, maxlen=ACT_LATENCY)  # ro after the last cycles
        outputs = []
        lines = [] if trace else None
        next_in = 0
        t = wall = stall_cycles = 0
        mac_ops = lane_macs = 0

        def take(latch, pend, port, wall, pc, what):
            """The word of a read latch for a set, which consumes it."""
            if not latch[1]:
                if pend:
                    rule = f"the port-{port} read data of the rd at cycle {pend[0][2]}, pc " \
                           f"{pend[0][3]} arrives {READ_LATENCY} cycles after it"
                elif latch[2] is None:
                    rule = f"no rd on port {port} has delivered data"
                else:
                    rule = f"port-{port} read data already consumed by the set at cycle " \
                           f"{latch[4]} (rd at cycle {latch[2]}, pc {latch[3]})"
                raise _error(wall, pc, what, rule, ErrorCode.READ_NOT_READY)
            latch[1], latch[4] = False, wall
            return latch[0]

        def land(pend, latch, port, t):
            """Move the read that completes at issue index t into the latch."""
            _, word, rd_wall, rd_pc = pend.popleft()
            if latch[1]:
                raise _error(rd_wall, rd_pc, f"MEM{port} rd",
                             f"its data would overwrite the port-{port} read data of the rd at "
                             f"cycle {latch[2]}, pc {latch[3]}, which no set consumed "
                             f"(read-port hold rule)", ErrorCode.READ_OVERWRITE)
            latch[:] = [word, True, rd_wall, rd_pc, None]

        def check_live(h, wall, pc, what):
            """Raise if a live half of hand-off ``h`` was never activated: results lost."""
            _, poison, had_mac, h_wall, h_pc, done_lo, done_hi = h[:7]
            for half, done in ((0, done_lo), (1, done_hi)):
                if had_mac and not done and not (poison >> (half * half_lanes)) & half_mask:
                    rule = f"the {_HALF_NAME[half]} half of the hand-off of the setrb at cycle " \
                           f"{h_wall}, pc {h_pc} was never activated (results lost)"
                    if what == "VMAC setrb":
                        rule = "replaces a hand-off too early: " + rule
                    raise _error(wall, pc, what, rule, ErrorCode.RESULTS_LOST)

        def address(off, upd, mode, inc, toggle, where, pc, wall):
            a = off + upd[pc]
            if mode:  # the update wraps modulo 2**addr_bits (docs/nve.md, AGU)
                u = (upd[pc] + inc) & update_mask
                upd[pc] = 0 if u == toggle else u
            if a >= local_words:
                raise _error(wall, pc, where, f"address {off}+{a - off} = {a} is outside the "
                             f"local buffer ({local_words} words)", ErrorCode.ADDRESS_RANGE)
            return a

        def read(a, where, pc, wall, t):
            r = ready[a]
            if r is None:
                raise _error(wall, pc, where, f"word {a} was never written",
                             ErrorCode.READ_UNWRITTEN)
            if r > t:
                raise _error(wall, pc, where, f"word {a} was written at cycle {wrote_at[a]}; "
                             f"a rd may issue {WRITE_TO_READ} cycles after the wr",
                             ErrorCode.READ_TOO_EARLY)
            return mem[a]

        loop_start, loop_end = s.loop_start, self.program.loop_end
        pcs = chain(range(0, loop_start),
                    chain.from_iterable(repeat(range(loop_start, loop_end + 1), s.iterations)),
                    range(loop_end + 1, self.program.size))
        pc = 0
        for pc in pcs:
            (ma, ma_off, _, ma_mode, ma_inc, ma_tog, mb, mb_off, _, mb_mode, mb_inc, mb_tog,
             w_op, i_op, v_op, a_op, out) = decoded[pc]

            # ---- stalls: the whole machine waits, so issue indices do not advance
            if (ma == _WR and arrival is not None) or (out and accept is not None):
                start = wall
                if ma == _WR and arrival is not None and next_in < len(words):
                    start = max(start, arrival(next_in))
                if out and accept is not None:
                    start = max(start, accept(len(outputs)))
                if start > wall:
                    if lines is not None:
                        lines.append(f"{wall:7d}    -  stall {start - wall} cycles")
                    stall_cycles += start - wall
                    wall = start

            # ---- start of cycle: read data and hand-offs that arrive now
            if pend_a and pend_a[0][0] == t:
                land(pend_a, latch_a, "A", t)
            if pend_b and pend_b[0][0] == t:
                land(pend_b, latch_b, "B", t)
            if hand_pend and hand_pend[0][0] == t:
                h = hand_pend.popleft()
                if visible is not None:
                    check_live(visible, h[4], h[5], "VMAC setrb")
                visible = [*h[1:], False, False, 0]
            if lines is not None:
                lines.append(f"{wall:7d} {pc:4d}  {text[pc]}")

            # ---- VMAC (reads rw[0], ri, acc before the register ops below change them)
            if v_op:
                if not rw_valid & 1:
                    raise _error(wall, pc, f"VMAC {OPS['vmac'][v_op]}",
                                 "rw[0] holds no valid coefficient", ErrorCode.RW_INVALID)
                w = rw[0]
                if v_op == _SETRB:
                    hand_pend.append([t + HANDOFF_LATENCY, numerics.wrap_acc(acc).tolist(),
                                      acc_poison, acc_macs > 0, wall, pc])
                    acc, acc_poison, acc_macs = [w] * lanes, 0, 0
                else:
                    if v_op == _MAC:
                        acc = [a + w * p for a, p in zip(acc, ri)]
                    else:  # mach: the product's upper digits, for partial-sum reloads
                        acc = [a + ((w * p) << 16) for a, p in zip(acc, ri)]
                    invalid = ~ri_valid & lane_mask
                    if invalid:
                        acc_poison |= invalid
                    acc_macs += 1
                    mac_ops += 1
                    lane_macs += lanes - invalid.bit_count()

            # ---- register ops (consume the read latches)
            if w_op == _W_SET:
                rw = list(unpack_coefficients(take(latch_a, pend_a, "A", wall, pc, "WREG set")
                                       .to_bytes(word_bytes, "little")))
                rw_valid = (1 << rw_depth) - 1
            elif w_op == _W_SH:
                rw = [*rw[1:], 0]
                rw_valid >>= 1
            if i_op:
                if i_op == _I_SET:
                    if w_op == _W_SET:
                        raise _error(wall, pc, "IREG set", "port-A read data is also taken by "
                                     "WREG set in this cycle (set.w and set.i both need "
                                     "port A)", ErrorCode.PORT_A_CONFLICT)
                    wa = take(latch_a, pend_a, "A", wall, pc, "IREG set")
                    wb = take(latch_b, pend_b, "B", wall, pc, "IREG set")
                    ri[0:n_pix] = unpack_pixels(wa.to_bytes(word_bytes, "little"))
                    ri[n_pix:lanes] = unpack_pixels(wb.to_bytes(word_bytes, "little"))
                    ri_valid |= lane_mask
                elif i_op == _I_SETSH:
                    wb = take(latch_b, pend_b, "B", wall, pc, "IREG setsh")
                    ri = ri[1:lanes] + list(unpack_pixels(wb.to_bytes(word_bytes, "little")))
                    # ri[0..14] <- ri[1..15]; ri[15..22] <- the 8 new pixels
                    ri_valid = ((ri_valid >> 1) & (lane_mask >> 1)) | \
                        (((1 << n_pix) - 1) << (lanes - 1))
                elif i_op == _I_SH:
                    ri = [*ri[1:], 0]
                    ri_valid >>= 1
                else:  # seth: half-vector mode, only ri[8..15] from port B
                    wb = take(latch_b, pend_b, "B", wall, pc, "IREG seth")
                    ri[n_pix:lanes] = unpack_pixels(wb.to_bytes(word_bytes, "little"))
                    ri_valid |= lane_mask & ~half_mask

            # ---- local buffer: addresses (and AGU steps), then writes, then reads, so a read
            # of a word written in this cycle fails
            if ma:
                a_a = address(ma_off, upd_a, ma_mode, ma_inc, ma_tog,
                              "MEMA wr" if ma == _WR else "MEMA rd", pc, wall)
            if mb:
                a_b = address(mb_off, upd_b, mb_mode, mb_inc, mb_tog,
                              "MEMB wr" if mb == _WR else "MEMB rd", pc, wall)
            if ma == _WR:
                if next_in >= len(words):
                    raise _error(wall, pc, "MEMA wr", f"input stream exhausted after "
                                 f"{len(words)} data words", ErrorCode.INPUT_EXHAUSTED)
                mem[a_a] = words[next_in]
                next_in += 1
                ready[a_a], wrote_at[a_a], written[a_a] = t + WRITE_TO_READ, wall, True
            if mb == _WR:
                stored = ro_seen[0]  # ro after cycle t - ACT_LATENCY
                if stored is None:
                    raise _error(wall, pc, "MEMB wr", f"ro holds no activation result (no act "
                                 f"issued {ACT_LATENCY} or more cycles before)",
                                 ErrorCode.RO_EMPTY)
                if ma == _WR and a_b == a_a:
                    raise _error(wall, pc, "MEMB wr", f"port A writes word {a_b} in the same "
                                 f"cycle", ErrorCode.WRITE_CONFLICT)
                mem[a_b] = stored
                ready[a_b], wrote_at[a_b], written[a_b] = t + WRITE_TO_READ, wall, True
            if ma == _RD:
                pend_a.append((t + READ_LATENCY, read(a_a, "MEMA rd", pc, wall, t), wall, pc))
            if mb == _RD:
                pend_b.append((t + READ_LATENCY, read(a_b, "MEMB rd", pc, wall, t), wall, pc))
            if lines is not None and (ma or mb):
                lines[-1] += "  ;" + (f" A={a_a}" if ma else "") + (f" B={a_b}" if mb else "")

            # ---- ACT (after MEMB wr, which stores the ro of an earlier act)
            if a_op:
                ps = a_op == _PS
                what = "ACT ps" if ps else f"ACT {_HALF_NAME[_HALF[a_op]]}"
                if visible is None:
                    rule = f"no accumulator hand-off is visible (a setrb at cycle t is " \
                           f"activated from t+{HANDOFF_LATENCY})"
                    if hand_pend:
                        rule += f"; the setrb at cycle {hand_pend[0][4]} is not yet"
                    raise _error(wall, pc, what, rule, ErrorCode.ACT_NO_HANDOFF)
                word = visible[7]
                half = word & 1 if ps else _HALF[a_op]
                poison = (visible[1] >> (half * half_lanes)) & half_mask
                if poison:
                    bad = [half * half_lanes + j for j in range(half_lanes) if poison >> j & 1]
                    raise _error(wall, pc, what, f"lanes {bad} of the hand-off of the setrb at "
                                 f"cycle {visible[3]} hold no valid result (invalid ri entries "
                                 f"or accumulators never set)", ErrorCode.ACT_INVALID_LANES)
                lo = half * half_lanes
                values = visible[0][lo:lo + half_lanes]
                if ps:
                    # word n: digit n // 2 of half n % 2; a half counts as activated with its
                    # top digit (word 6 or 7)
                    digit = word >> 1
                    result = numerics.partial_digits(values)[digit]
                    visible[7] = (word + 1) % (2 * numerics.PARTIAL_DIGITS)
                    if digit == numerics.PARTIAL_DIGITS - 1:
                        visible[5 + half] = True
                else:
                    # numerics.activate without re-checking the LUT (check_program did)
                    result = lut[numerics.lut_index(values, shift)]
                    visible[5 + half] = True
                ro = int.from_bytes(result.astype(np.int8).tobytes(), "little")
                if out:
                    outputs.append(ro)
            if records is not None:
                records.append(Retire(
                    wall, pc, ma, a_a if ma else 0, mem[a_a] if ma == _WR else 0,
                    mb, a_b if mb else 0, mem[a_b] if mb == _WR else 0,
                    int.from_bytes(pack_rw(*rw), "little"),
                    int.from_bytes(pack_ri(*ri), "little"),
                    int.from_bytes(pack_acc(*(a & 0xFFFFFFFF for a in acc)), "little"),
                    ro or 0, bool(out)))
            ro_seen.append(ro)
            t += 1
            wall += 1

        # ---- end of run: results that never reached ACT are lost
        for h in ([visible] if visible is not None else []) + \
                [[*h[1:], False, False] for h in hand_pend]:
            check_live(h, wall, pc, "end of run")
        clean_halves = [not (acc_poison >> (half * half_lanes)) & half_mask for half in (0, 1)]
        if acc_macs and any(clean_halves):
            raise _error(wall, pc, "end of run", f"the accumulators hold the results of "
                         f"{acc_macs} mac(s) that no setrb handed to ACT (results lost)",
                         ErrorCode.RESULTS_LOST)

        out_arr = np.array([word_to_pixels(w, cfg) for w in outputs],
                           dtype=np.int8).reshape(-1, n_pix)
        return RunResult(
            cycles=wall, instructions=t, stall_cycles=stall_cycles, mac_ops=mac_ops,
            lane_macs=lane_macs, lanes=lanes, outputs=out_arr, output_words=tuple(outputs),
            inputs_used=next_in, parts=dict(self._parts), local_buffer=self.local_buffer,
            written=self.written, trace=tuple(lines) if lines is not None else None,
            retire=tuple(records) if records is not None else None)


def run(program, data=(), *, strict=True, **options):
    """Load ``program`` into a fresh :class:`Nve` (``strict`` as :meth:`Nve.load`) and run it
    once (options of :meth:`Nve.run`)."""
    nve = Nve(program.config)
    nve.load(program, strict=strict)
    return nve.run(data, **options)
