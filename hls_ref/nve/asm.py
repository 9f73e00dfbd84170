"""NVE assembly: text <-> :class:`~.isa.Program`, exact in both directions.

One line is one instruction: the operations of the used slots in slot order (MEMA, MEMB, WREG,
IREG, VMAC, ACT) separated by ``|``; an idle slot is left out (or written ``-``), an idle
instruction is ``nop``. ``docs/nve.md`` gives the grammar; an example::

    .loop body last 9          # loop body pcs body ... last, 9 iterations
    .agu 1 3 9                 # AGU mode 1: inc 3, toggle 9
    .shift 6
    .lut tanh
    wr.a 0                     # pc 0
    body: rd.a 3+6@1 | rd.b 4+6@1 | sh.w | setsh.i | mac
    last: rd.b 5 | set.w | sh.i | mac | act.hi out

:func:`disassemble` prints the canonical text: ``assemble(disassemble(p)) == p`` for every
valid program and ``disassemble(assemble(t)) == t`` for canonical text ``t``.
"""

import re

from .isa import (
    DEFAULT_CONFIG,
    LUT_NAMES,
    SLOT_NAMES,
    SLOTS,
    Instruction,
    MemOp,
    NveError,
    Program,
    Settings,
    check_program,
    decode,
    encode,
    named_lut,
)
from .numerics import LUT_ENTRIES, MAX_SHIFT

__all__ = ["assemble", "assemble_instruction", "disassemble", "disassemble_instruction"]

# Assembly name of each (slot, op); the suffix names the slot where op names repeat.
_MNEMONIC = {
    ("mema", "rd"): "rd.a", ("mema", "wr"): "wr.a",
    ("memb", "rd"): "rd.b", ("memb", "wr"): "wr.b",
    ("wreg", "set"): "set.w", ("wreg", "sh"): "sh.w",
    ("ireg", "set"): "set.i", ("ireg", "setsh"): "setsh.i", ("ireg", "sh"): "sh.i",
    ("ireg", "seth"): "seth.i",
    ("vmac", "setrb"): "setrb", ("vmac", "mac"): "mac", ("vmac", "mach"): "mach",
    ("act", "lo"): "act.lo", ("act", "hi"): "act.hi", ("act", "ps"): "act.ps",
}
_BY_MNEMONIC = {m: key for key, m in _MNEMONIC.items()}
_ADDRESS = re.compile(r"(\d+)(?:\+(\d+))?(?:@(\d+))?")
_NUMBER = re.compile(r"-?\d+")
_LABEL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):")
_LINE_WIDTH = 16  # LUT entries per explicit .lut line


def _format_address(m):
    if m.mode:
        return f"{m.offset}+{m.update}@{m.mode}"
    return f"{m.offset}+{m.update}" if m.update else f"{m.offset}"


def disassemble_instruction(ins, config=DEFAULT_CONFIG):
    """The canonical text of one :class:`~.isa.Instruction` or instruction word."""
    if not isinstance(ins, Instruction):
        ins = decode(ins, config)
    parts = []
    for slot in SLOTS:
        value = getattr(ins, slot)
        if slot in ("mema", "memb"):
            if value.op != "nop":
                parts.append(f"{_MNEMONIC[(slot, value.op)]} {_format_address(value)}")
        elif value != "nop":
            text = _MNEMONIC[(slot, value)]
            parts.append(f"{text} out" if slot == "act" and ins.out else text)
    return " | ".join(parts) if parts else "nop"


def _number(text, what, line):
    if not _NUMBER.fullmatch(text):
        raise NveError(f"line {line}: {what} must be a decimal number, not {text!r}")
    return int(text)


def assemble_instruction(text, config=DEFAULT_CONFIG, line=1):
    """The :class:`~.isa.Instruction` of one line of text (no label, no comment)."""
    ops = {}
    last = -1
    items = [item.strip() for item in text.split("|")]
    if [item.lower() for item in items] == ["nop"]:
        return Instruction()
    for item in items:
        if item == "-":
            continue
        if not item:
            raise NveError(f"line {line}: empty slot between '|' (write '-' or leave it out)")
        name, _, operand = item.replace("\t", " ").partition(" ")
        name, operand = name.lower(), operand.replace(" ", "")
        if name not in _BY_MNEMONIC:
            raise NveError(f"line {line}: unknown operation {name!r}")
        slot, op = _BY_MNEMONIC[name]
        index = SLOTS.index(slot)
        if slot in ops:
            raise NveError(f"line {line}: two {SLOT_NAMES[slot]} operations")
        if index < last:
            raise NveError(f"line {line}: {SLOT_NAMES[slot]} operation {name!r} after a "
                           f"{SLOT_NAMES[SLOTS[last]]} one; slots go in the order "
                           f"{' '.join(SLOT_NAMES[s] for s in SLOTS)}")
        last = index
        if slot in ("mema", "memb"):
            ops[slot] = _memory_operand(op, name, operand, config, line)
        elif slot == "act":
            if operand not in ("", "out"):
                raise NveError(f"line {line}: {name} takes only the flag 'out', "
                               f"not {operand!r}")
            ops["act"], ops["out"] = op, operand == "out"
        elif operand:
            raise NveError(f"line {line}: {name} takes no operand, not {operand!r}")
        else:
            ops[slot] = op
    return Instruction(**ops)


def _memory_operand(op, name, operand, config, line):
    match = _ADDRESS.fullmatch(operand)
    if not match:
        raise NveError(f"line {line}: {name} needs an address OFFSET[+UPDATE][@MODE], "
                       f"not {operand!r}")
    offset, update, mode = (int(g) if g else 0 for g in match.groups())
    for what, value, limit in (("offset", offset, 1 << config.addr_bits),
                               ("update", update, 1 << config.addr_bits),
                               ("mode", mode, config.agu_modes)):
        if value >= limit:
            raise NveError(f"line {line}: {what} {value} is outside 0 ... {limit - 1}")
    return MemOp(op, offset, update, mode)


def _strip(raw):
    return raw.split("#", 1)[0].strip()


def assemble(text, config=DEFAULT_CONFIG, *, strict=True):
    """The :class:`~.isa.Program` of assembly ``text``; :class:`~.isa.NveError` naming the line
    on a syntax error or a setting out of range (``strict``: also the AGU rotation lint of
    :func:`~.isa.check_program`)."""
    words, labels, directives = [], {}, []
    for number, raw in enumerate(text.splitlines(), 1):
        line = _strip(raw)
        while (match := _LABEL.match(line)) is not None:
            name = match.group(1)
            if name in labels:
                raise NveError(f"line {number}: label {name!r} defined twice")
            labels[name] = len(words)
            line = line[match.end():].strip()
        if not line:
            continue
        if line.startswith("."):
            directives.append((number, line.split()))
            continue
        words.append(encode(assemble_instruction(line, config, number), config))
    settings = _settings(directives, labels, len(words), config)
    program = Program(tuple(words), settings, config)
    check_program(program, strict=strict)
    return program


def _settings(directives, labels, size, config):
    values = {}
    agu = {}
    lut_base, lut_set = None, {}  # a named base LUT, explicit entries on top of it

    def once(key, number):
        if key in values:
            raise NveError(f"line {number}: {key} given twice")

    def pc(token, number):
        if token in labels:
            value = labels[token]
        else:
            value = _number(token, "a loop bound (pc or label)", number)
        if not 0 <= value < max(size, 1):
            raise NveError(f"line {number}: pc {value} is outside the program "
                           f"(0 ... {size - 1})")
        return value

    for number, tokens in directives:
        name, args = tokens[0], tokens[1:]
        if name == ".loop":
            if len(args) != 3:
                raise NveError(f"line {number}: .loop START END ITERATIONS")
            once(".loop", number)
            start, end = pc(args[0], number), pc(args[1], number)
            iterations = _number(args[2], "the iteration count", number)
            if start > end:
                raise NveError(f"line {number}: the loop starts at pc {start} after its end "
                               f"{end}")
            if not 0 <= iterations <= config.max_iterations:
                raise NveError(f"line {number}: iterations must be 0 ... "
                               f"{config.max_iterations}, not {iterations}")
            values[".loop"] = (start, end, iterations)
        elif name == ".agu":
            if len(args) != 3:
                raise NveError(f"line {number}: .agu MODE INC TOGGLE")
            mode, inc, toggle = (_number(a, "an .agu value", number) for a in args)
            if not 1 <= mode < config.agu_modes:
                raise NveError(f"line {number}: AGU mode must be 1 ... "
                               f"{config.agu_modes - 1}, not {mode}")
            if mode in agu:
                raise NveError(f"line {number}: AGU mode {mode} given twice")
            limit = 1 << config.addr_bits
            if not (0 <= inc < limit and 0 <= toggle < limit):
                raise NveError(f"line {number}: inc and toggle must be 0 ... {limit - 1}")
            agu[mode] = (inc, toggle)
        elif name == ".shift":
            if len(args) != 1:
                raise NveError(f"line {number}: .shift N")
            once(".shift", number)
            values[".shift"] = _number(args[0], "the shift", number)
            if not 0 <= values[".shift"] <= MAX_SHIFT:
                raise NveError(f"line {number}: the shift must be 0 ... {MAX_SHIFT}, "
                               f"not {values['.shift']}")
        elif name == ".lut":
            if len(args) == 1 and args[0] in LUT_NAMES:
                if lut_base is not None:
                    raise NveError(f"line {number}: a second named LUT")
                lut_base = args[0]
                continue
            if not args:
                raise NveError(f"line {number}: .lut NAME or .lut FIRST VALUE... "
                               f"(NAME one of {', '.join(LUT_NAMES)})")
            first = _number(args[0], "the first LUT index", number)
            for i, token in enumerate(args[1:], first):
                value = _number(token, "a LUT entry", number)
                if not 0 <= i < LUT_ENTRIES:
                    raise NveError(f"line {number}: LUT index {i} is outside "
                                   f"0 ... {LUT_ENTRIES - 1}")
                if not -128 <= value <= 127:
                    raise NveError(f"line {number}: LUT entry {value} is not int8")
                if i in lut_set:
                    raise NveError(f"line {number}: LUT entry {i} given twice")
                lut_set[i] = value
        else:
            raise NveError(f"line {number}: unknown directive {name!r}")
    lut = list(named_lut(lut_base or "identity"))
    for i, value in lut_set.items():
        lut[i] = value
    start, end, iterations = values.get(".loop", (0, None, 1))
    pairs = [agu.get(mode, (0, 0)) for mode in range(1, max(agu, default=0) + 1)]
    return Settings(start, end, iterations, tuple(pairs), values.get(".shift", 0), tuple(lut))


def _lut_lines(lut):
    for name in LUT_NAMES:
        if tuple(lut) == named_lut(name):
            return [f".lut {name}"]
    return [f".lut {i} " + " ".join(str(v) for v in lut[i:i + _LINE_WIDTH])
            for i in range(0, len(lut), _LINE_WIDTH)]


def disassemble(program, config=DEFAULT_CONFIG):
    """Canonical assembly of a :class:`~.isa.Program` (directives, then the instructions with a
    comment at the start of each part) or of a sequence of instruction words (instructions
    only)."""
    if not isinstance(program, Program):
        return "".join(disassemble_instruction(w, config) + "\n" for w in program)
    s, config = program.settings, program.config
    lines = [f".loop {s.loop_start} {program.loop_end} {s.iterations}"]
    lines += [f".agu {mode} {inc} {toggle}" for mode, (inc, toggle) in enumerate(s.agu, 1)
              if (inc, toggle) != (0, 0)]
    lines.append(f".shift {s.shift}")
    lines += _lut_lines(s.lut)
    # a later part starting at the same pc (an empty init part) replaces the earlier name
    starts = {0: "init", s.loop_start: "loop body", program.loop_end + 1: "final"}
    for pc, word in enumerate(program.words):
        if pc in starts:
            lines.append(f"# {starts[pc]}: pc {pc}")
        lines.append(disassemble_instruction(word, config))
    return "\n".join(lines) + "\n"
