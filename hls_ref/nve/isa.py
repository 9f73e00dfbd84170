"""The NVE instruction set: sizes, the 64-bit VLIW instruction word, programs and settings.

The Neuro Vector Engine (seed 003) issues one six-slot VLIW instruction per cycle: two local
buffer ports (MEMA, MEMB), the weight register (WREG), the image register (IREG), the 16-lane
vector MAC (VMAC) and the 8-lane activation stage (ACT). The seed gives the slots and their
operations but no sizes or bit encoding; Tessera fixes them here, in one place that the
assembler (:mod:`.asm`), the instruction-set simulator (:mod:`.iss`) and the generated tables of
``docs/nve.md`` (:mod:`.nve_doc`) all read:

* :class:`NveConfig`: every size; the field widths are derived from it;
* :func:`instruction_fields`: the bit position of every field (MEMA in the top bits);
* :class:`Instruction` / :func:`encode` / :func:`decode`: one instruction word;
* :class:`Settings` / :class:`Program` / :func:`check_program`: the setting registers and a
  loadable program;
* :func:`host_registers`: the AXI-Lite map of the setting registers;
* the word helpers: a 64-bit local-buffer word holds 8 int8 pixels or 4 int16 coefficients,
  element ``k`` in the ``k``-th byte / half-word from the least significant end.
"""

import enum
import functools
import struct
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..registers import Access, Field, Register, RegisterMap
from . import numerics

__all__ = [
    "ACT_LATENCY",
    "DEFAULT_CONFIG",
    "ERROR_CODE_BITS",
    "ERROR_DOC",
    "HANDOFF_LATENCY",
    "HOST_LUT_OFFSET",
    "LATENCIES",
    "LUT_NAMES",
    "NOP_MEM",
    "OPS",
    "OP_DOC",
    "READ_LATENCY",
    "REGISTER_LATENCY",
    "SLOTS",
    "SLOT_NAMES",
    "WRITE_TO_READ",
    "ErrorCode",
    "FieldSpec",
    "Instruction",
    "MemOp",
    "NveConfig",
    "NveError",
    "Program",
    "Settings",
    "check_program",
    "coefficients_to_word",
    "decode",
    "encode",
    "host_registers",
    "instruction_fields",
    "named_lut",
    "pixels_to_word",
    "word_to_coefficients",
    "word_to_pixels",
]


class ErrorCode(enum.IntEnum):
    """Why a run stopped: the ``ERROR.code`` field of the host registers and
    :attr:`NveError.code`. Codes 1 ... 17 are what the hardware reports (some only where the
    hardware can tell, :data:`ERROR_DOC`); the others are refused by the simulator and the
    assembler only."""

    NONE = 0
    SETTINGS = 1
    NO_PROGRAM = 2
    ILLEGAL_INSTRUCTION = 3
    PORT_A_CONFLICT = 4
    READ_NOT_READY = 5
    READ_OVERWRITE = 6
    READ_TOO_EARLY = 7
    READ_UNWRITTEN = 8
    ADDRESS_RANGE = 9
    WRITE_CONFLICT = 10
    INPUT_EXHAUSTED = 11
    RO_EMPTY = 12
    RW_INVALID = 13
    ACT_NO_HANDOFF = 14
    ACT_INVALID_LANES = 15
    RESULTS_LOST = 16
    ABORTED = 17
    AGU_ROTATION = 30
    SYNTAX = 31


#: ErrorCode -> (hazard rule number in docs/nve.md or "", what it means, what the RTL does).
ERROR_DOC = {
    ErrorCode.NONE: ("", "no error", "-"),
    ErrorCode.SETTINGS: ("9", "a start with a setting out of range: `PROGRAM_SIZE` 0 or above "
                         "the buffer, `LOOP_START` > `LOOP_END` or `LOOP_END` >= "
                         "`PROGRAM_SIZE` (the simulator also refuses values no register can "
                         "hold)", "refuses the start; nothing is taken from the stream"),
    ErrorCode.NO_PROGRAM: ("", "a start without `CTRL.load` while `PROGRAM_SIZE` exceeds "
                           "`LOADED` (nothing loaded since reset, or the last load failed)",
                           "refuses the start"),
    ErrorCode.ILLEGAL_INSTRUCTION: ("9", "an instruction word that does not decode",
                                    "takes all `PROGRAM_SIZE` words, then stops; `ERROR.pc` "
                                    "is the first bad word's pc, `LOADED` 0"),
    ErrorCode.PORT_A_CONFLICT: ("1", "`set.w` and `set.i` in one cycle", "detected"),
    ErrorCode.READ_NOT_READY: ("2", "a set whose read data has not arrived, was never read or "
                               "was already consumed", "detected"),
    ErrorCode.READ_OVERWRITE: ("3", "read data landing on unconsumed read data (hold rule); "
                               "cycle and pc are the landing `rd`'s", "detected"),
    ErrorCode.READ_TOO_EARLY: ("4", "a `rd` of a word written less than 2 cycles before",
                               "detected"),
    ErrorCode.READ_UNWRITTEN: ("4", "a `rd` of a word never written", "not detected "
                               "(undefined but safe): the `rd` returns the word's contents, "
                               "zero after configuration"),
    ErrorCode.ADDRESS_RANGE: ("4", "an address `offset + update` at or above `local_words`",
                              "detected"),
    ErrorCode.WRITE_CONFLICT: ("4", "MEMA and MEMB writing one word in one cycle", "detected"),
    ErrorCode.INPUT_EXHAUSTED: ("5", "a MEMA `wr` with the input stream exhausted",
                                "stalls until the word arrives or the host aborts "
                                "(`CTRL.abort`)"),
    ErrorCode.RO_EMPTY: ("5", "a MEMB `wr` before any `act` of the run at least 2 cycles "
                         "old", "detected"),
    ErrorCode.RW_INVALID: ("6", "a `mac`, `mach` or `setrb` while `rw[0]` is invalid",
                           "detected"),
    ErrorCode.ACT_NO_HANDOFF: ("7", "an `act` with no hand-off at least 3 cycles old",
                               "detected"),
    ErrorCode.ACT_INVALID_LANES: ("7", "an `act` over a half with a lane that used an invalid "
                                  "`ri` entry or was never set", "detected"),
    ErrorCode.RESULTS_LOST: ("8", "a live hand-off replaced, or the run ended, before both its "
                             "halves were activated; `mac` results never handed off; cycle "
                             "and pc are the replacing `setrb`'s", "detected"),
    ErrorCode.ABORTED: ("", "the host wrote `CTRL.abort`", "stops at once (see Abort)"),
    ErrorCode.AGU_ROTATION: ("9", "(simulator and assembler, strict load) a memory op whose "
                             "AGU pair cannot rotate its update", "not checked: the update "
                             "wraps modulo 2^addr_bits (defined)"),
    ErrorCode.SYNTAX: ("", "(assembler, encoder) a syntax error or an unencodable value", "-"),
}


class NveError(Exception):
    """Any violation of the NVE rules: a hazard found by the simulator (the message starts with
    ``cycle C, pc P, SLOT op:``), a bad program or setting, an invalid instruction word or an
    assembler syntax error (``line N:``).

    ``code`` (:class:`ErrorCode`) says which rule; ``cycle`` and ``pc`` locate a run-time
    error (the values the hardware's ``ERROR_CYCLE`` and ``ERROR.pc`` report), else None.
    """

    def __init__(self, message, code=ErrorCode.SYNTAX, *, cycle=None, pc=None):
        super().__init__(message)
        self.code = ErrorCode(code)
        self.cycle = cycle
        self.pc = pc


# ---------------------------------------------------------------------------------------------
# Sizes


@dataclass(frozen=True)
class NveConfig:
    """Every size of an NVE instance. The defaults are the seed's datapath (16 MAC lanes, 8
    activation lanes, ``rw[0-3]``, ``ri[0-22]``) and Tessera's memory sizes; each field's
    ``metadata`` holds its meaning (with unit) and whether the seed or Tessera chose it."""

    lanes: int = field(default=16, metadata={
        "doc": "VMAC lanes (32-bit accumulators)", "origin": "seed"})
    act_lanes: int = field(default=8, metadata={
        "doc": "lanes one `act` converts (one output word)", "origin": "seed"})
    rw_depth: int = field(default=4, metadata={
        "doc": "int16 entries of the weight register `rw`", "origin": "seed"})
    ri_extra: int = field(default=7, metadata={
        "doc": "image-register entries beyond the `lanes` that feed the MACs", "origin": "seed"})
    word_bits: int = field(default=64, metadata={
        "doc": "local-buffer word, stream beat and instruction word, bits",
        "origin": "Tessera (the seed's traces imply it)"})
    local_words: int = field(default=2048, metadata={
        "doc": "local-buffer size, words (16 KiB)", "origin": "Tessera"})
    instruction_words: int = field(default=512, metadata={
        "doc": "instruction-buffer size, instructions", "origin": "Tessera"})
    agu_modes: int = field(default=8, metadata={
        "doc": "AGU mode codes: 0 = fixed address, 1 ... 7 = increment/toggle pairs",
        "origin": "Tessera"})
    max_iterations: int = field(default=(1 << 16) - 1, metadata={
        "doc": "largest loop-body iteration count", "origin": "Tessera"})

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{f.name} must be a positive integer, not {value!r}")
        # The datapath wiring of the seed ties these together: one act makes one word of
        # pixels, two acts cover the MAC vector, set rw loads one word of coefficients, set ri
        # loads one word per port, setsh shifts one new word in behind ri[lanes-1].
        if self.word_bits % 16:
            raise ValueError(f"word_bits must be a multiple of 16, not {self.word_bits}")
        if self.act_lanes != self.pixels_per_word:
            raise ValueError(f"act_lanes must be word_bits / 8 = {self.pixels_per_word} (one "
                             f"act makes one word of int8 pixels), not {self.act_lanes}")
        if self.lanes != 2 * self.act_lanes:
            raise ValueError(f"lanes must be 2 * act_lanes = {2 * self.act_lanes} (act.lo and "
                             f"act.hi cover the vector), not {self.lanes}")
        if self.rw_depth != self.word_bits // 16:
            raise ValueError(f"rw_depth must be word_bits / 16 = {self.word_bits // 16} (set.w "
                             f"loads one word of int16 coefficients), not {self.rw_depth}")
        if self.ri_extra != self.pixels_per_word - 1:
            raise ValueError(f"ri_extra must be word_bits / 8 - 1 = {self.pixels_per_word - 1}"
                             f" (setsh.i shifts one new word in), not {self.ri_extra}")
        if self.agu_modes < 2:
            raise ValueError(f"agu_modes must be at least 2 (mode 0 is the fixed address), "
                             f"not {self.agu_modes}")
        if self.instruction_bits > self.word_bits:
            raise ValueError(f"the instruction word needs {self.instruction_bits} bits, more "
                             f"than one {self.word_bits}-bit stream beat: reduce local_words "
                             f"or agu_modes")

    @property
    def pixels_per_word(self):
        """int8 pixels in one local-buffer word."""
        return self.word_bits // 8

    @property
    def coefficients_per_word(self):
        """int16 coefficients in one local-buffer word."""
        return self.word_bits // 16

    @property
    def ri_size(self):
        """Entries of the image register ``ri``."""
        return self.lanes + self.ri_extra

    @property
    def addr_bits(self):
        """Width of the offset and update fields and of the AGU registers, bits."""
        return max(1, (self.local_words - 1).bit_length())

    @property
    def mode_bits(self):
        """Width of the AGU mode field, bits."""
        return (self.agu_modes - 1).bit_length()

    @property
    def pc_bits(self):
        """Width of an instruction address (``LOOP_START``, ``LOOP_END``), bits."""
        return max(1, (self.instruction_words - 1).bit_length())

    @property
    def instruction_bits(self):
        """Bits the fields of one instruction occupy (64 with the defaults)."""
        return sum(f.width for f in _field_layout(self))


# ---------------------------------------------------------------------------------------------
# Latencies (cycles). The ISS enforces them; docs/nve.md renders LATENCIES.

#: ``rd`` at cycle t: the word is in the port's read latch for a ``set`` at t+2 or later.
READ_LATENCY = 2
#: ``wr`` at cycle t: a ``rd`` of the same word may issue at t+2 or later.
WRITE_TO_READ = 2
#: A register op at cycle t is seen by a ``mac``/``setrb`` (or the next op) at t+1.
REGISTER_LATENCY = 1
#: ``setrb`` at cycle t hands the accumulators to ACT; an ``act`` at t+3 or later reads them.
HANDOFF_LATENCY = 3
#: ``act`` at cycle t: its word is in ``ro`` for a MEMB ``wr`` at t+2 or later (the RTL
#: registers the LUT's output before the local buffer's write port).
ACT_LATENCY = 2

#: (from, to, cycles, origin) rows of the latency table.
LATENCIES = (
    ("`rd` (either port)", "`set`/`setsh`/`seth` consuming its data", f"{READ_LATENCY}",
     "seed: \"read operations take two cycles\""),
    ("`wr` (either port)", "`rd` of the same word", f"{WRITE_TO_READ}",
     "seed: \"two cycles to write data into the local buffer before they can be read\""),
    ("register op (`set`/`sh`, WREG or IREG)", "`mac`/`setrb` or register op using it",
     f"{REGISTER_LATENCY}", "seed: \"each of these register operations has a latency of one "
     "cycle\""),
    ("`mac` reading a register", "register op overwriting it", "0",
     "seed traces (Fig. 17: `mac` and `sh rw` share cycles); Tessera: ops read the state at "
     "the start of the cycle"),
    ("`setrb`", "`act` of the handed-off accumulators", f"{HANDOFF_LATENCY}",
     "seed: \"three cycles for the vector MAC to provide results\"; hand-off register: "
     "Tessera"),
    ("`act`", "MEMB `wr` of its result", f"{ACT_LATENCY}", "Tessera (the LUT's output is "
     "registered before the local buffer)"),
)

# ---------------------------------------------------------------------------------------------
# Slots and operations

#: Slot keys in instruction order (MEMA in the most significant bits).
SLOTS = ("mema", "memb", "wreg", "ireg", "vmac", "act")
#: Slot key -> name used in docs and messages.
SLOT_NAMES = {"mema": "MEMA", "memb": "MEMB", "wreg": "WREG", "ireg": "IREG", "vmac": "VMAC",
              "act": "ACT"}
#: Slot key -> operation names; the index is the opcode.
OPS = {
    "mema": ("nop", "rd", "wr"),
    "memb": ("nop", "rd", "wr"),
    "wreg": ("nop", "set", "sh"),
    "ireg": ("nop", "set", "setsh", "sh", "seth"),
    "vmac": ("nop", "setrb", "mac", "mach"),
    "act": ("nop", "lo", "hi", "ps"),
}

#: (slot, op) -> (assembly, origin, meaning) of every operation except nop.
OP_DOC = {
    ("mema", "rd"): ("rd.a ADDR", "seed", "read word ADDR into the port-A read latch "
                     "(for `set.w`, `set.i`)"),
    ("mema", "wr"): ("wr.a ADDR", "seed", "write the next input-stream word to ADDR"),
    ("memb", "rd"): ("rd.b ADDR", "seed", "read word ADDR into the port-B read latch "
                     "(for `set.i`, `setsh.i`, `seth.i`)"),
    ("memb", "wr"): ("wr.b ADDR", "seed", "write `ro` (the latest `act` result) to ADDR"),
    ("wreg", "set"): ("set.w", "seed", "`rw[0..3]` <- the 4 int16 of the port-A latch"),
    ("wreg", "sh"): ("sh.w", "seed", "`rw[k]` <- `rw[k+1]`; `rw[3]` becomes invalid"),
    ("ireg", "set"): ("set.i", "seed", "`ri[0..7]` <- port-A latch, `ri[8..15]` <- port-B "
                      "latch (`ri[16..22]` kept)"),
    ("ireg", "setsh"): ("setsh.i", "seed", "shift `ri[0..15]` ++ port-B latch down by one: "
                        "`ri[0..14]` <- `ri[1..15]`, `ri[15]` <- B[0], `ri[16..22]` <- "
                        "B[1..7]"),
    ("ireg", "sh"): ("sh.i", "seed", "`ri[k]` <- `ri[k+1]`; `ri[22]` becomes invalid"),
    ("ireg", "seth"): ("seth.i", "Tessera", "`ri[8..15]` <- port-B latch (`ri[0..7]`, "
                       "`ri[16..22]` kept): half-vector mode"),
    ("vmac", "setrb"): ("setrb", "seed", "hand `acc[0..15]` to ACT, then `acc[j]` <- "
                        "`rw[0]` (bias)"),
    ("vmac", "mac"): ("mac", "seed", "`acc[j]` += `rw[0]` * `ri[j]`, j = 0..15 (int32, "
                      "wrapping)"),
    ("vmac", "mach"): ("mach", "Tessera", "`acc[j]` += (`rw[0]` * `ri[j]`) << 16 (int32, "
                       "wrapping): reloads the upper digits of a partial sum"),
    ("act", "lo"): ("act.lo [out]", "seed", "`ro` <- LUT of lanes 0..7 of the hand-off; "
                    "`out`: also to the output stream"),
    ("act", "hi"): ("act.hi [out]", "seed", "`ro` <- LUT of lanes 8..15 of the hand-off; "
                    "`out`: also to the output stream"),
    ("act", "ps"): ("act.ps [out]", "Tessera", "`ro` <- the next of the 8 partial-sum words "
                    "of the hand-off (raw int32 digits, no LUT); `out`: also to the output "
                    "stream"),
}


@dataclass(frozen=True)
class FieldSpec:
    """``width`` bits at ``lsb`` of the instruction word: field ``name`` of slot ``slot``."""

    slot: str
    name: str
    lsb: int
    width: int
    meaning: str


def _field_layout(config):
    """Field widths in order from the most significant end, without positions."""
    def op_bits(slot):
        return (len(OPS[slot]) - 1).bit_length()

    layout = []
    for slot in SLOTS:
        layout.append(FieldSpec(slot, "op", 0, op_bits(slot), "opcode (table below)"))
        if slot in ("mema", "memb"):
            layout += [
                FieldSpec(slot, "offset", 0, config.addr_bits, "base address, words"),
                FieldSpec(slot, "update", 0, config.addr_bits,
                          "AGU update: initial value, words (address = offset + update)"),
                FieldSpec(slot, "mode", 0, config.mode_bits,
                          "AGU mode: 0 fixed, m >= 1 steps update by pair m"),
            ]
        if slot == "act":
            layout.append(FieldSpec(slot, "out", 0, 1, "1: also push the result to the "
                                    "output stream"))
    return layout


DEFAULT_CONFIG = NveConfig()


@functools.lru_cache(maxsize=16)
def instruction_fields(config=DEFAULT_CONFIG):
    """The fields of one instruction word, most significant first, with their bit positions;
    the last field ends at bit 0 and unused bits (if any) are at the top and must be zero."""
    layout = _field_layout(config)
    lsb = sum(f.width for f in layout)
    placed = []
    for f in layout:
        lsb -= f.width
        placed.append(replace(f, lsb=lsb))
    return tuple(placed)


@dataclass(frozen=True)
class MemOp:
    """One local-buffer port operation: ``op`` is ``"nop"``, ``"rd"`` or ``"wr"``; the word
    address is ``offset + update`` (words), and ``mode`` selects the AGU pair that steps
    ``update`` after every execution (0: never)."""

    op: str = "nop"
    offset: int = 0
    update: int = 0
    mode: int = 0


NOP_MEM = MemOp()


@dataclass(frozen=True)
class Instruction:
    """One VLIW instruction: one operation per slot (``"nop"`` when idle); ``out`` is the ACT
    slot's output-stream flag."""

    mema: MemOp = NOP_MEM
    memb: MemOp = NOP_MEM
    wreg: str = "nop"
    ireg: str = "nop"
    vmac: str = "nop"
    act: str = "nop"
    out: bool = False


def _check_instruction(ins, config):
    for slot in SLOTS:
        value = getattr(ins, slot)
        op = value.op if slot in ("mema", "memb") else value
        if op not in OPS[slot]:
            raise NveError(f"{SLOT_NAMES[slot]} has no operation {op!r} "
                           f"(one of {', '.join(OPS[slot])})")
    limit = 1 << config.addr_bits
    for slot in ("mema", "memb"):
        m = getattr(ins, slot)
        if m.op == "nop":
            if (m.offset, m.update, m.mode) != (0, 0, 0):
                raise NveError(f"{SLOT_NAMES[slot]} nop must have offset, update and mode 0")
            continue
        for name, high in (("offset", limit), ("update", limit), ("mode", config.agu_modes)):
            v = getattr(m, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < high:
                raise NveError(f"{SLOT_NAMES[slot]} {name} {v!r} is outside 0 ... {high - 1}")
    if ins.out not in (False, True):
        raise NveError(f"ACT out must be a bool, not {ins.out!r}")
    if ins.out and ins.act == "nop":
        raise NveError("ACT out needs an act (act.lo, act.hi or act.ps)")


def encode(ins, config=DEFAULT_CONFIG):
    """The instruction word (unsigned int, ``config.instruction_bits`` wide) of ``ins``."""
    _check_instruction(ins, config)
    word = 0
    for f in instruction_fields(config):
        slot = getattr(ins, f.slot)
        if f.slot in ("mema", "memb"):
            value = OPS[f.slot].index(slot.op) if f.name == "op" else getattr(slot, f.name)
        elif f.name == "out":
            value = int(ins.out)
        else:
            value = OPS[f.slot].index(slot)
        word |= value << f.lsb
    return word


def decode(word, config=DEFAULT_CONFIG):
    """The :class:`Instruction` of an instruction word; :class:`NveError` if the word is not
    valid (undefined opcode, fields of a memory nop not zero, ``out`` without an act, unused
    top bits set). Every valid word satisfies ``encode(decode(w)) == w``."""
    word = int(word)
    illegal = ErrorCode.ILLEGAL_INSTRUCTION
    if not 0 <= word < 1 << config.word_bits:
        raise NveError(f"instruction word {word:#x} does not fit {config.word_bits} bits",
                       illegal)
    if word >> config.instruction_bits:
        raise NveError(f"instruction word {word:#018x}: bits above {config.instruction_bits - 1}"
                       f" must be zero", illegal)
    raw = {}
    for f in instruction_fields(config):
        raw[(f.slot, f.name)] = (word >> f.lsb) & ((1 << f.width) - 1)
    ops = {}
    for slot in SLOTS:
        code = raw[(slot, "op")]
        if code >= len(OPS[slot]):
            raise NveError(f"instruction word {word:#018x}: {SLOT_NAMES[slot]} opcode {code} "
                           f"is not defined", illegal)
        ops[slot] = OPS[slot][code]
    mem = {slot: MemOp(ops[slot], raw[(slot, "offset")], raw[(slot, "update")],
                       raw[(slot, "mode")]) for slot in ("mema", "memb")}
    ins = Instruction(mem["mema"], mem["memb"], ops["wreg"], ops["ireg"], ops["vmac"],
                      ops["act"], bool(raw[("act", "out")]))
    try:
        _check_instruction(ins, config)
    except NveError as e:
        raise NveError(f"instruction word {word:#018x}: {e}", illegal) from None
    return ins


# ---------------------------------------------------------------------------------------------
# Local-buffer words


def _check_ints(values, count, bits, what):
    values = [int(v) for v in np.asarray(values).reshape(-1)]
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if len(values) != count or not all(low <= v <= high for v in values):
        raise ValueError(f"a word holds {count} {what} ({low} ... {high}), not {values}")
    return values


def pixels_to_word(pixels, config=DEFAULT_CONFIG):
    """The local-buffer word (unsigned int) of ``config.pixels_per_word`` int8 pixels; pixel
    ``k`` is byte ``k`` (bits 8k ... 8k+7)."""
    n = config.pixels_per_word
    values = _check_ints(pixels, n, 8, "int8 pixels")
    return int.from_bytes(struct.pack(f"<{n}b", *values), "little")


def word_to_pixels(word, config=DEFAULT_CONFIG):
    """The int8 pixels (tuple, pixel ``k`` from byte ``k``) of a local-buffer word."""
    n = config.pixels_per_word
    return struct.unpack(f"<{n}b", int(word).to_bytes(config.word_bits // 8, "little"))


def coefficients_to_word(coefficients, config=DEFAULT_CONFIG):
    """The local-buffer word of ``config.coefficients_per_word`` int16 coefficients;
    coefficient ``k`` is bits 16k ... 16k+15."""
    n = config.coefficients_per_word
    values = _check_ints(coefficients, n, 16, "int16 coefficients")
    return int.from_bytes(struct.pack(f"<{n}h", *values), "little")


def word_to_coefficients(word, config=DEFAULT_CONFIG):
    """The int16 coefficients (tuple) of a local-buffer word."""
    n = config.coefficients_per_word
    return struct.unpack(f"<{n}h", int(word).to_bytes(config.word_bits // 8, "little"))


# ---------------------------------------------------------------------------------------------
# Setting registers and programs

#: Named activation LUTs: name -> builder in :mod:`.numerics` (default arguments).
LUT_NAMES = {"identity": numerics.identity_lut, "relu": numerics.relu_lut,
             "tanh": numerics.tanh_lut}


def named_lut(name):
    """The LUT (tuple of :data:`numerics.LUT_ENTRIES` ints) of a name in :data:`LUT_NAMES`."""
    return tuple(int(v) for v in LUT_NAMES[name]())


@dataclass(frozen=True)
class Settings:
    """The setting registers of one run (written over AXI-Lite, :func:`host_registers`).

    The program runs pcs ``[0, loop_start)`` once (init part), ``[loop_start, loop_end]``
    ``iterations`` times (loop body, ``loop_end`` inclusive; 0 iterations skip it) and
    ``(loop_end, program_size)`` once (final part). ``agu[m-1]`` is the ``(inc, toggle)`` pair
    of AGU mode ``m`` (words); ``shift`` the accumulator right shift before the LUT (bits);
    ``lut`` the 1024 int8 LUT entries. ``loop_end=None`` means the last instruction, so the
    default runs the whole program once.
    """

    loop_start: int = 0
    loop_end: int | None = None
    iterations: int = 1
    agu: tuple = ()
    shift: int = 0
    lut: tuple = field(default_factory=lambda: named_lut("identity"))

    def __post_init__(self):
        pairs = [tuple(int(x) for x in p) for p in self.agu]
        while pairs and pairs[-1] == (0, 0):  # one spelling per setting: no unset tail
            pairs.pop()
        object.__setattr__(self, "agu", tuple(pairs))
        object.__setattr__(self, "lut", tuple(int(v) for v in np.asarray(self.lut).ravel()))

    def pair(self, mode):
        """``(inc, toggle)`` of AGU mode ``mode`` (>= 1); unset pairs are ``(0, 0)``."""
        return self.agu[mode - 1] if mode - 1 < len(self.agu) else (0, 0)


@dataclass(frozen=True)
class Program:
    """A loadable program: the instruction words (unsigned ints, pc 0 first) and the setting
    registers it runs with."""

    words: tuple
    settings: Settings = field(default_factory=Settings)
    config: NveConfig = DEFAULT_CONFIG

    def __post_init__(self):
        object.__setattr__(self, "words", tuple(int(w) for w in self.words))
        if self.settings.loop_end is None and self.words:
            object.__setattr__(self, "settings",
                               replace(self.settings, loop_end=len(self.words) - 1))

    @property
    def size(self):
        """Instructions in the program (the ``PROGRAM_SIZE`` register)."""
        return len(self.words)

    @property
    def loop_end(self):
        """The inclusive last pc of the loop body (``settings.loop_end`` or the last pc)."""
        end = self.settings.loop_end
        return self.size - 1 if end is None else end


def _setting_error(message, code=ErrorCode.SETTINGS):
    return NveError(f"settings: {message}", code)


def check_program(program, *, strict=True):
    """Raise :class:`NveError` unless ``program`` can be loaded and started; returns the
    decoded instructions.

    In the order the hardware checks a start (``docs/nve.md``, "Hardware behaviour"): the
    program fits the instruction buffer and the loop lies inside it (:attr:`ErrorCode.SETTINGS`;
    the iterations, shift, LUT and AGU pairs must fit their registers, which the hardware's
    cannot fail), then every word decodes (:attr:`ErrorCode.ILLEGAL_INSTRUCTION`, with the pc).
    ``strict`` adds a lint the hardware does not apply (:attr:`ErrorCode.AGU_ROTATION`): every
    AGU pair a memory op uses steps its update back to 0 and round again (the update starts
    below the toggle and reaches it in whole increments, and so does 0 after the wrap, so
    addresses rotate instead of growing); without it an update that misses its toggle wraps
    modulo ``2**addr_bits``, as in the hardware.
    """
    config, s = program.config, program.settings
    size = program.size
    if not 1 <= size <= config.instruction_words:
        raise _setting_error(f"a program has 1 ... {config.instruction_words} instructions "
                             f"(the instruction buffer), not {size}")
    end = program.loop_end
    if not (isinstance(s.loop_start, int) and isinstance(end, int)
            and 0 <= s.loop_start <= end < size):
        raise _setting_error(f"the loop body {s.loop_start} ... {end} must satisfy "
                             f"0 <= loop_start <= loop_end < program size {size}")
    if not (isinstance(s.iterations, int) and 0 <= s.iterations <= config.max_iterations):
        raise _setting_error(f"iterations must be 0 ... {config.max_iterations}, "
                             f"not {s.iterations}")
    if not 0 <= s.shift <= numerics.MAX_SHIFT:
        raise _setting_error(f"shift must be 0 ... {numerics.MAX_SHIFT}, not {s.shift}")
    if len(s.lut) != numerics.LUT_ENTRIES or not all(-128 <= v <= 127 for v in s.lut):
        raise _setting_error(f"the LUT has {numerics.LUT_ENTRIES} int8 entries")
    pairs = config.agu_modes - 1
    if len(s.agu) > pairs:
        raise _setting_error(f"there are {pairs} AGU pairs (modes 1 ... {pairs}), "
                             f"not {len(s.agu)}")
    limit = 1 << config.addr_bits
    for mode, (inc, toggle) in enumerate(s.agu, 1):
        if not (0 <= inc < limit and 0 <= toggle < limit):
            raise _setting_error(f"AGU mode {mode}: inc {inc} and toggle {toggle} must be "
                                 f"0 ... {limit - 1}")
    instructions = []
    for pc, word in enumerate(program.words):
        try:
            instructions.append(decode(word, config))
        except NveError as e:
            raise NveError(f"pc {pc}: {e}", e.code, pc=pc) from None
    if not strict:
        return tuple(instructions)
    for pc, ins in enumerate(instructions):
        for slot in ("mema", "memb"):
            m = getattr(ins, slot)
            if m.op == "nop" or m.mode == 0:
                continue
            inc, toggle = s.pair(m.mode)
            where = f"pc {pc}, {SLOT_NAMES[slot]} {m.op}"
            rotation = ErrorCode.AGU_ROTATION
            if inc == 0:
                raise _setting_error(f"{where} uses AGU mode {m.mode}, whose increment is 0",
                                     rotation)
            # the update starts at m.update and, after every wrap, at 0: both must reach toggle
            for start, when in ((m.update, ""), (0, " (after the wrap)")):
                if not (start < toggle and (toggle - start) % inc == 0):
                    raise _setting_error(f"{where}: update {start}{when} never reaches toggle "
                                         f"{toggle} of AGU mode {m.mode} in steps of {inc}",
                                         rotation)
    return tuple(instructions)


# ---------------------------------------------------------------------------------------------
# Host interface

#: Byte offset of the LUT window in the AXI-Lite map: entry ``i`` is byte ``i`` of the window
#: (four int8 entries per 32-bit register, entry ``4r`` in bits 7:0 of register ``r``).
HOST_LUT_OFFSET = 0x400


#: Width of the ``ERROR.code`` field, bits.
ERROR_CODE_BITS = 5


def host_registers(config=DEFAULT_CONFIG):
    """The AXI-Lite registers of an NVE built from ``config`` (without the LUT window at
    :data:`HOST_LUT_OFFSET`), as a :class:`hls_ref.registers.RegisterMap`. ``docs/nve.md``
    ("Hardware behaviour") says what every field does while a run is in progress."""
    size_bits = config.instruction_words.bit_length()
    iter_bits = config.max_iterations.bit_length()
    shift_bits = numerics.MAX_SHIFT.bit_length()
    regs = [
        Register("CTRL", 0x000, (
            Field("start", 0, 1, Access.W1P, "run the program (ignored while busy)"),
            Field("load", 1, 1, Access.RW, "1: first take PROGRAM_SIZE instruction words "
                  "from the input stream; 0: rerun the loaded program"),
            Field("abort", 2, 1, Access.W1P, "stop the run at once (ERROR.code ABORTED)"),
        ), "control"),
        Register("STATUS", 0x004, (
            Field("busy", 0, 1, Access.RO, "a run is in progress"),
            Field("done", 1, 1, Access.W1C, "a run ended: completed, refused, stopped by an "
                  "error or aborted (write 1 to clear)"),
            Field("error", 2, 1, Access.W1C, "the run that ended was refused, stopped by an "
                  "error or aborted: ERROR says why (write 1 to clear)"),
        ), "status"),
        Register("PROGRAM_SIZE", 0x008, (
            Field("value", 0, size_bits, Access.RW, "instructions in the program "
                  f"(1 ... {config.instruction_words})"),
        ), "program size"),
        Register("LOOP_START", 0x00C, (
            Field("value", 0, config.pc_bits, Access.RW, "first pc of the loop body"),
        ), "loop start"),
        Register("LOOP_END", 0x010, (
            Field("value", 0, config.pc_bits, Access.RW, "last pc of the loop body "
                  "(inclusive)"),
        ), "loop end"),
        Register("ITERATIONS", 0x014, (
            Field("value", 0, iter_bits, Access.RW, "loop-body executions (0 skips it)"),
        ), "iterations"),
        Register("SHIFT", 0x018, (
            Field("value", 0, shift_bits, Access.RW, "accumulator right shift before the "
                  "LUT, bits"),
        ), "activation shift"),
        Register("CYCLES", 0x01C, (
            Field("value", 0, 32, Access.RO, "cycles of the last run from its first issued "
                  "instruction to its last, stalls included (the simulator's cycles)"),
        ), "cycle counter"),
        Register("STALLS", 0x020, (
            Field("value", 0, 32, Access.RO, "stall cycles of the last run (part of CYCLES)"),
        ), "stall counter"),
        Register("BUSY_CYCLES", 0x024, (
            Field("value", 0, 32, Access.RO, "cycles of the last run from the start to its "
                  "end: instruction load, pipeline fill and drain, output wait included"),
        ), "busy counter"),
        Register("ERROR", 0x028, (
            Field("code", 0, ERROR_CODE_BITS, Access.RO, "why the last run stopped (ErrorCode; "
                  "0 none)"),
            Field("pc", 16, config.pc_bits, Access.RO, "pc of the faulting instruction"),
        ), "error"),
        Register("ERROR_CYCLE", 0x02C, (
            Field("value", 0, 32, Access.RO, "cycle (as CYCLES counts) of the faulting "
                  "instruction"),
        ), "error cycle"),
        Register("LOADED", 0x030, (
            Field("value", 0, size_bits, Access.RO, "instructions in the instruction buffer "
                  "(0: none loaded since reset, or the last load failed)"),
        ), "loaded program size"),
        Register("LOCAL_WORDS", 0x034, (
            Field("value", 0, 32, Access.CONST, "local-buffer size, 64-bit words",
                  value=config.local_words),
        ), "local-buffer size"),
        Register("INSTRUCTION_WORDS", 0x038, (
            Field("value", 0, 32, Access.CONST, "instruction-buffer size, instructions",
                  value=config.instruction_words),
        ), "instruction-buffer size"),
    ]
    for mode in range(1, config.agu_modes):
        base = 0x040 + 8 * (mode - 1)
        regs += [
            Register(f"AGU{mode}_INC", base, (
                Field("value", 0, config.addr_bits, Access.RW,
                      f"AGU mode {mode}: update increment, words"),
            ), f"AGU mode {mode} increment"),
            Register(f"AGU{mode}_TOGGLE", base + 4, (
                Field("value", 0, config.addr_bits, Access.RW,
                      f"AGU mode {mode}: update value that wraps to 0, words"),
            ), f"AGU mode {mode} toggle"),
        ]
    return RegisterMap(regs)
