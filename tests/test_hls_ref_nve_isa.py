"""The NVE instruction word, programs, the assembler and the generated tables of docs/nve.md."""

import os
import random
from dataclasses import replace

import pytest

from hls_ref.nve import nve_doc
from hls_ref.nve.asm import (
    assemble,
    assemble_instruction,
    disassemble,
    disassemble_instruction,
)
from hls_ref.nve.isa import (
    DEFAULT_CONFIG,
    HOST_LUT_OFFSET,
    OPS,
    SLOTS,
    ErrorCode,
    Instruction,
    MemOp,
    NveConfig,
    NveError,
    Program,
    Settings,
    check_program,
    coefficients_to_word,
    decode,
    encode,
    host_registers,
    instruction_fields,
    named_lut,
    pixels_to_word,
    word_to_coefficients,
    word_to_pixels,
)

SEED = int(os.environ.get("TESSERA_SEED", "20261121"))


def rng(salt):
    print(f"seed {SEED} + {salt}")
    return random.Random(SEED * 1000 + salt)


def random_instruction(r, config=DEFAULT_CONFIG):
    def mem(slot):
        op = r.choice(OPS[slot])
        if op == "nop":
            return MemOp()
        return MemOp(op, r.randrange(1 << config.addr_bits), r.randrange(1 << config.addr_bits),
                     r.randrange(config.agu_modes))
    act = r.choice(OPS["act"])
    return Instruction(mem("mema"), mem("memb"), r.choice(OPS["wreg"]), r.choice(OPS["ireg"]),
                       r.choice(OPS["vmac"]), act, act != "nop" and r.random() < 0.5)


# ---- the instruction word


def test_default_word_is_64_bits_in_slot_order():
    f = instruction_fields()
    assert DEFAULT_CONFIG.instruction_bits == 64
    widths = {slot: sum(x.width for x in f if x.slot == slot) for slot in SLOTS}
    assert widths == {"mema": 27, "memb": 27, "wreg": 2, "ireg": 3, "vmac": 2, "act": 3}
    covered = 0
    for x in f:
        mask = ((1 << x.width) - 1) << x.lsb
        assert not covered & mask, x
        covered |= mask
    assert covered == (1 << 64) - 1
    assert (f[0].slot, f[0].name, f[0].lsb) == ("mema", "op", 62)
    assert (f[-1].slot, f[-1].name, f[-1].lsb) == ("act", "out", 0)
    assert [x.width for x in f if x.name in ("offset", "update", "mode")] == [11, 11, 3] * 2


def test_sizes_derive_from_the_config():
    small = NveConfig(local_words=512, agu_modes=4, instruction_words=100)
    assert (small.addr_bits, small.mode_bits, small.pc_bits) == (9, 2, 7)
    assert small.instruction_bits == 64 - 2 * (2 + 2 + 1)  # offset, update, mode per port
    ins = Instruction(MemOp("rd", 511, 3, 3), act="hi", out=True)
    word = encode(ins, small)
    assert word >> small.instruction_bits == 0
    assert decode(word, small) == ins
    with pytest.raises(NveError, match="bits above 53 must be zero"):
        decode(1 << 60, small)
    with pytest.raises(NveError, match=r"MEMA offset 512 is outside 0 \.\.\. 511"):
        encode(Instruction(MemOp("wr", 512)), small)


@pytest.mark.parametrize("kwargs, message", [
    ({"lanes": 12}, r"^lanes must be 2 \* act_lanes = 16"),
    ({"act_lanes": 4}, r"^act_lanes must be word_bits / 8 = 8"),
    ({"rw_depth": 2}, r"^rw_depth must be word_bits / 16 = 4"),
    ({"ri_extra": 6}, r"^ri_extra must be word_bits / 8 - 1 = 7"),
    ({"word_bits": 72}, r"^word_bits must be a multiple of 16"),
    ({"local_words": 4096}, r"^the instruction word needs 68 bits"),
    ({"agu_modes": 1}, r"^agu_modes must be at least 2"),
    ({"instruction_words": 0}, r"^instruction_words must be a positive integer"),
])
def test_config_rejects_inconsistent_sizes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NveConfig(**kwargs)


def test_encode_decode_round_trip_random_instructions():
    r = rng(1)
    for _ in range(3000):
        ins = random_instruction(r)
        word = encode(ins)
        assert 0 <= word < 1 << 64
        assert decode(word) == ins


def test_every_word_decodes_exactly_or_is_refused():
    # Random words with the opcode fields drawn from the defined codes most of the time, so
    # both valid and invalid words are frequent.
    r = rng(2)
    fields = instruction_fields()
    valid = invalid = 0
    for _ in range(20000):
        word = r.getrandbits(64)
        for f in fields:
            if f.name == "op" and r.random() < 0.9:
                code = r.randrange(len(OPS[f.slot]))
                word = (word & ~(((1 << f.width) - 1) << f.lsb)) | code << f.lsb
            if f.slot in ("mema", "memb") and f.name != "op" and r.random() < 0.3:
                word &= ~(((1 << f.width) - 1) << f.lsb)
        try:
            ins = decode(word)
        except NveError:
            invalid += 1
            continue
        valid += 1
        assert encode(ins) == word
    assert valid > 1000 and invalid > 1000, (valid, invalid)


@pytest.mark.parametrize("word, message", [
    (3 << 62, "MEMA opcode 3 is not defined"),
    (5 << 5, "IREG opcode 5 is not defined"),
    (3 << 8, "WREG opcode 3 is not defined"),
    (1 << 51, "MEMA nop must have offset, update and mode 0"),
    (1 << 10, "MEMB nop must have offset, update and mode 0"),
    (1, r"ACT out needs an act \(act.lo, act.hi or act.ps\)"),
    (1 << 64, "does not fit 64 bits"),
])
def test_invalid_words_are_refused(word, message):
    with pytest.raises(NveError, match=message) as error:
        decode(word)
    assert error.value.code is ErrorCode.ILLEGAL_INSTRUCTION


def test_word_helpers_put_element_k_at_the_low_end():
    word = pixels_to_word([1, -1, 2, -2, 3, -3, 127, -128])
    assert word & 0xFF == 1 and (word >> 8) & 0xFF == 0xFF and word >> 56 == 0x80
    assert word_to_pixels(word) == (1, -1, 2, -2, 3, -3, 127, -128)
    word = coefficients_to_word([-2, 300, -32768, 32767])
    assert word & 0xFFFF == 0xFFFE and (word >> 16) & 0xFFFF == 300 and word >> 48 == 0x7FFF
    assert word_to_coefficients(word) == (-2, 300, -32768, 32767)
    with pytest.raises(ValueError, match="int8 pixels"):
        pixels_to_word([128] * 8)
    with pytest.raises(ValueError, match="4 int16 coefficients"):
        coefficients_to_word([1, 2, 3])


# ---- assembly


def test_disassembly_round_trips_every_random_word():
    r = rng(3)
    for _ in range(3000):
        word = encode(random_instruction(r))
        text = disassemble_instruction(word)
        assert encode(assemble_instruction(text)) == word, text
        assert disassemble_instruction(assemble_instruction(text)) == text


def test_canonical_syntax():
    ins = Instruction(MemOp("rd", 3, 2, 1), MemOp("rd", 12), "set", "setsh", "mac", "lo", True)
    assert disassemble_instruction(ins) == "rd.a 3+2@1 | rd.b 12 | set.w | setsh.i | mac | " \
        "act.lo out"
    assert disassemble_instruction(Instruction()) == "nop"
    assert disassemble_instruction(Instruction(memb=MemOp("wr", 4, 5))) == "wr.b 4+5"
    assert disassemble_instruction(Instruction(mema=MemOp("wr", 4, 0, 2))) == "wr.a 4+0@2"
    # other spellings of the same instruction
    for text in ("rd.a 3 + 2 @ 1 | rd.b 12 | set.w | setsh.i | mac | act.lo out",
                 "RD.A 3+2@1|rd.b\t12|-|SET.W|setsh.i|mac|act.lo  out",
                 "rd.a 3+2@1 | rd.b 12+0 | - | set.w | setsh.i | - | mac | act.lo out"):
        assert assemble_instruction(text) == ins, text
    assert assemble_instruction("wr.a 4@2") == Instruction(mema=MemOp("wr", 4, 0, 2))
    assert assemble_instruction(" NOP ") == Instruction()  # names are case-insensitive


def random_program(r):
    size = r.randrange(1, 40)
    instructions = [random_instruction(r) for _ in range(size)]
    # an AGU pair a memory op uses must bring its update back to 0: inc 1, toggle 2047
    used = set()
    for i, ins in enumerate(instructions):
        for slot in ("mema", "memb"):
            m = getattr(ins, slot)
            if m.mode:
                used.add(m.mode)
                instructions[i] = ins = replace(ins, **{slot: replace(m, update=m.update % 2047)})
    agu = [(1, 2047) if mode in used else (0, 0) if r.random() < 0.3 else
           (r.randrange(2048), r.randrange(2048)) for mode in range(1, 8)]
    start = r.randrange(size)
    end = r.randrange(start, size)
    if r.random() < 0.5:
        lut = named_lut(r.choice(["identity", "relu", "tanh"]))
    else:
        lut = [r.randrange(-128, 128) for _ in range(1024)]
    settings = Settings(start, end, r.randrange(1 << 16), agu, r.randrange(32), lut)
    return Program([encode(ins) for ins in instructions], settings)


def test_programs_round_trip_through_text():
    r = rng(4)
    for _ in range(100):
        program = random_program(r)
        text = disassemble(program)
        assert assemble(text) == program
        assert disassemble(assemble(text)) == text


EXAMPLE = """\
# a comment line
.agu 2 3 9          # mode 2: inc 3, toggle 9
.loop body last 2
.shift 6
.lut relu
.lut 1020 -1 -2 -3 -4
wr.a 0
body: wr.a 3+6@2 | - | - | - | - | -
nop
last:
  rd.a 3+3@2 | rd.b 4+0@2 | sh.w
setrb           # final part
"""


def test_directives_labels_and_comments():
    program = assemble(EXAMPLE)
    s = program.settings
    assert program.size == 5
    assert (s.loop_start, s.loop_end, s.iterations, s.shift) == (1, 3, 2, 6)
    assert s.agu == ((0, 0), (3, 9))
    lut = list(named_lut("relu"))
    lut[1020:] = [-1, -2, -3, -4]
    assert s.lut == tuple(lut)
    text = disassemble(program)
    assert text.splitlines()[:4] == [".loop 1 3 2", ".agu 2 3 9", ".shift 6", ".lut 0 0 0 0 0 "
                                     "0 0 0 0 0 0 0 0 0 0 0 0"]
    assert "# loop body: pc 1" in text and "# final: pc 4" in text
    assert assemble(text) == program
    # without directives: the whole program once, shift 0, identity LUT
    words = [encode(assemble_instruction(t)) for t in ("wr.a 0", "rd.a 3+3 | setrb", "nop")]
    assert disassemble(words) == "wr.a 0\nrd.a 3+3 | setrb\nnop\n"
    bare = assemble(disassemble(words))
    assert bare.words == tuple(words)
    assert bare.settings == Settings(0, 2, 1, (), 0, named_lut("identity"))


@pytest.mark.parametrize("text, message", [
    ("nop\nmacc\n", r"^line 2: unknown operation 'macc'$"),
    ("mac | setrb\n", r"^line 1: two VMAC operations$"),
    ("mac | rd.a 1\n", r"^line 1: MEMA operation 'rd.a' after a VMAC one; slots go in"),
    ("rd.a\n", r"^line 1: rd.a needs an address OFFSET\[\+UPDATE\]\[@MODE\], not ''"),
    ("rd.a 1+x\n", r"^line 1: rd.a needs an address"),
    ("rd.a 2048\n", r"^line 1: offset 2048 is outside 0 \.\.\. 2047$"),
    ("rd.a 1+1@8\n", r"^line 1: mode 8 is outside 0 \.\.\. 7$"),
    ("set.w 3\n", r"^line 1: set.w takes no operand, not '3'$"),
    ("act.lo later\n", r"^line 1: act.lo takes only the flag 'out', not 'later'$"),
    ("mac ||setrb\n", r"^line 1: empty slot between"),
    ("a: nop\na: nop\n", r"^line 2: label 'a' defined twice$"),
    ("nop\n.loop 0 5 1\n", r"^line 2: pc 5 is outside the program \(0 \.\.\. 0\)$"),
    ("nop\nnop\n.loop 1 0 1\n", r"^line 3: the loop starts at pc 1 after its end 0$"),
    ("nop\n.loop 0 0 65536\n", r"^line 2: iterations must be 0 \.\.\. 65535"),
    ("nop\n.loop x 0 1\n", r"^line 2: a loop bound \(pc or label\) must be a decimal"),
    ("nop\n.loop 0 0\n", r"^line 2: \.loop START END ITERATIONS$"),
    ("nop\n.shift 32\n", r"^line 2: the shift must be 0 \.\.\. 31, not 32$"),
    ("nop\n.shift 1\n.shift 2\n", r"^line 3: \.shift given twice$"),
    ("nop\n.agu 0 1 3\n", r"^line 2: AGU mode must be 1 \.\.\. 7, not 0$"),
    ("nop\n.agu 1 1 2048\n", r"^line 2: inc and toggle must be 0 \.\.\. 2047$"),
    ("nop\n.agu 1 1 3\n.agu 1 1 3\n", r"^line 3: AGU mode 1 given twice$"),
    ("nop\n.lut sigmoid\n", r"^line 2: the first LUT index must be a decimal number"),
    ("nop\n.lut 1023 1 2\n", r"^line 2: LUT index 1024 is outside 0 \.\.\. 1023$"),
    ("nop\n.lut 0 128\n", r"^line 2: LUT entry 128 is not int8$"),
    ("nop\n.lut 0 1\n.lut 0 1\n", r"^line 3: LUT entry 0 given twice$"),
    ("nop\n.lut relu\n.lut tanh\n", r"^line 3: a second named LUT$"),
    ("nop\n.origin 4\n", r"^line 2: unknown directive '\.origin'$"),
    ("", r"^settings: a program has 1 \.\.\. 512 instructions"),
    ("rd.a 0+1@1\n", r"^settings: pc 0, MEMA rd uses AGU mode 1, whose increment is 0$"),
])
def test_syntax_errors_name_the_line(text, message):
    with pytest.raises(NveError, match=message):
        assemble(text)


# ---- program checks


def nops(n):
    return (0,) * n


@pytest.mark.parametrize("program, message", [
    (Program(nops(513)), r"^settings: a program has 1 \.\.\. 512 instructions .* not 513$"),
    (Program(nops(4), Settings(3, 2)), r"^settings: the loop body 3 \.\.\. 2 must satisfy"),
    (Program(nops(4), Settings(0, 4)), r"^settings: the loop body 0 \.\.\. 4 must satisfy"),
    (Program(nops(4), Settings(iterations=1 << 16)), r"^settings: iterations must be 0"),
    (Program(nops(4), Settings(shift=32)), r"^settings: shift must be 0 \.\.\. 31, not 32$"),
    (Program(nops(4), Settings(lut=[0] * 1023)), r"^settings: the LUT has 1024 int8"),
    (Program(nops(4), Settings(agu=[(1, 1)] * 8)), r"^settings: there are 7 AGU pairs"),
    (Program(nops(4), Settings(agu=[(1, 2048)])), r"^settings: AGU mode 1: inc 1 and toggle"),
    (Program((0, 5 << 5)), r"^pc 1: instruction word 0x00000000000000a0: IREG opcode 5"),
    (Program((encode(Instruction(MemOp("rd", 0, 4, 1))),), Settings(agu=[(1, 3)])),
     r"^settings: pc 0, MEMA rd: update 4 never reaches toggle 3 of AGU mode 1 in steps of 1$"),
    (Program((encode(Instruction(memb=MemOp("wr", 0, 2, 1))),), Settings(agu=[(3, 9)])),
     r"^settings: pc 0, MEMB wr: update 2 never reaches toggle 9 of AGU mode 1 in steps of 3$"),
    # update 1 reaches toggle 3 in steps of 2, but after the wrap 0, 2, 4, ... never does
    (Program((encode(Instruction(MemOp("rd", 0, 1, 1))),), Settings(agu=[(2, 3)])),
     r"^settings: pc 0, MEMA rd: update 0 \(after the wrap\) never reaches toggle 3 of AGU mode "
     r"1 in steps of 2$"),
])
def test_check_program_refuses_bad_settings(program, message):
    with pytest.raises(NveError, match=message):
        check_program(program)


def test_check_program_codes_follow_the_hardware_order():
    illegal = 5 << 5
    with pytest.raises(NveError) as error:  # the settings are checked before the words
        check_program(Program((0, illegal), Settings(2, 1)))
    assert (error.value.code, error.value.pc) == (ErrorCode.SETTINGS, None)
    with pytest.raises(NveError) as error:
        check_program(Program((0, illegal)))
    assert (error.value.code, error.value.pc) == (ErrorCode.ILLEGAL_INSTRUCTION, 1)
    # the rotation rule is a lint of strict loads: the hardware wraps the update instead
    program = Program((encode(Instruction(MemOp("rd", 0, 4, 1))),), Settings(agu=[(1, 3)]))
    with pytest.raises(NveError) as error:
        check_program(program)
    assert error.value.code is ErrorCode.AGU_ROTATION
    assert len(check_program(program, strict=False)) == 1


def test_settings_have_one_spelling():
    assert Settings(agu=[(3, 9), (0, 0)]) == Settings(agu=((3, 9),))
    assert Program(nops(3)).settings.loop_end == 2
    assert replace(Settings(), shift=3).pair(5) == (0, 0)


# ---- host registers and the generated documentation


def test_host_registers_leave_room_for_the_lut():
    regs = host_registers()
    assert max(r.offset for r in regs) < HOST_LUT_OFFSET
    assert regs["LOOP_END"].fields[0].width == DEFAULT_CONFIG.pc_bits
    assert regs["AGU7_TOGGLE"].offset == 0x074
    assert regs["PROGRAM_SIZE"].fields[0].width == 10  # holds 512
    assert regs["ERROR"].field("pc").width == DEFAULT_CONFIG.pc_bits
    assert max(ErrorCode) < 1 << regs["ERROR"].field("code").width
    assert regs["LOCAL_WORDS"].reset_value == DEFAULT_CONFIG.local_words


def test_docs_are_current():
    assert nve_doc.main(["--check"]) == 0


def test_docs_check_detects_a_stale_table(tmp_path, monkeypatch, capsys):
    stale = nve_doc.DOC_PATH.read_text().replace("| MEMA | 1 | `rd` |", "| MEMA | 9 | `rd` |")
    path = tmp_path / "nve.md"
    path.write_text(stale)
    monkeypatch.setattr(nve_doc, "DOC_PATH", path)
    assert nve_doc.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert nve_doc.main(["--write"]) == 0
    assert nve_doc.main(["--check"]) == 0
    path.write_text("no markers")
    assert nve_doc.main(["--check"]) == 1
