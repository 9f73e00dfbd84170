"""The boot ROM's program: copy the firmware from the boot block at the start of external
memory into the on-chip RAM and jump to it.

The boot block (written by the host, ``sw.soc_image``) is: ``BOOT_MAGIC``, the firmware's
length in 32-bit words, then the words. Without the magic word the ROM writes
``EXIT_BOOT_FAILED`` to ``SYSCTRL.EXIT`` and stops. The program is a dozen RV32I
instructions, encoded here (:func:`boot_program`) so the SoC's Verilog depends on no
compiler; ``tests/test_hdl_soc.py`` checks the encoding against the assembler of the pinned
``ziglang``.
"""

from hls_ref.soc_map import (
    BOOT_MAGIC,
    DRAM_BASE,
    EXIT_BOOT_FAILED,
    RAM_BASE,
    ROM_BYTES,
    SYSCTRL,
    SYSCTRL_BASE,
    reg,
)

__all__ = ["BOOT_SOURCE", "boot_program"]

# registers by ABI name
_REGS = {"zero": 0, "t0": 5, "t1": 6, "t2": 7, "t3": 28, "t4": 29, "t5": 30, "t6": 31}


def _r(name):
    return _REGS[name]


def _u(opcode, rd, imm):
    return (imm & 0xFFFFF000) | rd << 7 | opcode


def _i(opcode, funct3, rd, rs1, imm):
    return (imm & 0xFFF) << 20 | rs1 << 15 | funct3 << 12 | rd << 7 | opcode


def _s(rs2, rs1, imm):
    imm &= 0xFFF
    return (imm >> 5) << 25 | rs2 << 20 | rs1 << 15 | 0b010 << 12 | (imm & 0x1F) << 7 | 0x23


def _b(funct3, rs1, rs2, offset):
    o = offset & 0x1FFF
    return ((o >> 12) << 31 | ((o >> 5) & 0x3F) << 25 | rs2 << 20 | rs1 << 15 | funct3 << 12
            | ((o >> 1) & 0xF) << 8 | ((o >> 11) & 1) << 7 | 0x63)


def _j(rd, offset):
    o = offset & 0x1FFFFF
    return ((o >> 20) << 31 | ((o >> 1) & 0x3FF) << 21 | ((o >> 11) & 1) << 20
            | ((o >> 12) & 0xFF) << 12 | rd << 7 | 0x6F)


def _hi_lo(value):
    """``(hi, lo)`` with ``hi + sign_extend(lo) == value`` (for LUI + ADDI)."""
    lo = value & 0xFFF
    lo = lo - 0x1000 if lo >= 0x800 else lo
    return (value - lo) & 0xFFFFFFFF, lo


_EXIT = SYSCTRL_BASE + reg(SYSCTRL, "EXIT").offset
_MAGIC_HI, _MAGIC_LO = _hi_lo(BOOT_MAGIC)
_FAIL_HI, _FAIL_LO = _hi_lo(EXIT_BOOT_FAILED)

#: The program in assembly (for the encoding test and for readers); :func:`boot_program` is the
#: same, instruction for instruction.
BOOT_SOURCE = f"""
    lui   t0, {DRAM_BASE >> 12:#x}
    lui   t1, {RAM_BASE >> 12:#x}
    lw    t4, 0(t0)
    lui   t5, {_MAGIC_HI >> 12:#x}
    addi  t5, t5, {_MAGIC_LO}
    bne   t4, t5, fail
    lw    t2, 4(t0)
    addi  t0, t0, 8
copy:
    beq   t2, zero, done
    lw    t3, 0(t0)
    sw    t3, 0(t1)
    addi  t0, t0, 4
    addi  t1, t1, 4
    addi  t2, t2, -1
    jal   zero, copy
done:
    lui   t1, {RAM_BASE >> 12:#x}
    jalr  zero, 0(t1)
fail:
    lui   t6, {_EXIT >> 12:#x}
    lui   t5, {_FAIL_HI >> 12:#x}
    addi  t5, t5, {_FAIL_LO}
    sw    t5, {_EXIT & 0xFFF}(t6)
stop:
    jal   zero, stop
"""


def boot_program():
    """The boot ROM's contents: 32-bit words (``ROM_BYTES`` / 4 of them, zero-filled)."""
    t0, t1, t2, t3, t4, t5, t6 = (_r(n) for n in ("t0", "t1", "t2", "t3", "t4", "t5", "t6"))
    words = [
        _u(0x37, t0, DRAM_BASE),                  # 0  lui t0, DRAM
        _u(0x37, t1, RAM_BASE),                   # 1  lui t1, RAM
        _i(0x03, 0b010, t4, t0, 0),               # 2  lw t4, 0(t0)
        _u(0x37, t5, _MAGIC_HI),                  # 3  lui t5
        _i(0x13, 0b000, t5, t5, _MAGIC_LO),       # 4  addi t5
        _b(0b001, t4, t5, 4 * (17 - 5)),          # 5  bne t4, t5, fail
        _i(0x03, 0b010, t2, t0, 4),               # 6  lw t2, 4(t0)
        _i(0x13, 0b000, t0, t0, 8),               # 7  addi t0, t0, 8
        _b(0b000, t2, 0, 4 * (15 - 8)),           # 8  copy: beq t2, zero, done
        _i(0x03, 0b010, t3, t0, 0),               # 9  lw t3, 0(t0)
        _s(t3, t1, 0),                            # 10 sw t3, 0(t1)
        _i(0x13, 0b000, t0, t0, 4),               # 11 addi t0, t0, 4
        _i(0x13, 0b000, t1, t1, 4),               # 12 addi t1, t1, 4
        _i(0x13, 0b000, t2, t2, -1),              # 13 addi t2, t2, -1
        _j(0, 4 * (8 - 14)),                      # 14 jal zero, copy
        _u(0x37, t1, RAM_BASE),                   # 15 done: lui t1, RAM
        _i(0x67, 0b000, 0, t1, 0),                # 16 jalr zero, 0(t1)
        _u(0x37, t6, _EXIT),                      # 17 fail: lui t6, EXIT
        _u(0x37, t5, _FAIL_HI),                   # 18 lui t5
        _i(0x13, 0b000, t5, t5, _FAIL_LO),        # 19 addi t5
        _s(t5, t6, _EXIT & 0xFFF),                # 20 sw t5, EXIT(t6)
        _j(0, 0),                                 # 21 stop: jal zero, stop
    ]
    return words + [0] * (ROM_BYTES // 4 - len(words))
