"""The boot ROM's programs: copy the firmware from the boot block at the start of external
memory into the on-chip RAM and jump to it (``SocConfig.boot == "memory"``), or receive it
from the UART (``"uart"``: :data:`UART_BOOT_SOURCE`).

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
    UART,
    UART_BASE,
    reg,
)

__all__ = ["BOOT_SOURCE", "UART_BOOT_SOURCE", "boot_program"]

# registers by ABI name
_REGS = {"zero": 0, "ra": 1, "a0": 10, "t0": 5, "t1": 6, "t2": 7, "t3": 28, "t4": 29,
         "t5": 30, "t6": 31}


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


_STATUS = reg(UART, "STATUS").offset
_RX = reg(UART, "RX").offset

#: The UART boot program in assembly (:func:`boot_program` with ``"uart"`` is the same,
#: instruction for instruction): bytes are shifted into ``t3`` from the top until it holds
#: ``BOOT_MAGIC`` (so the ROM finds the frame after any stray bytes), then the firmware's
#: length in words and the words (little-endian) are stored from ``RAM_BASE``, which it jumps
#: to. ``byte`` waits for a received byte (``STATUS.rx_valid``) and returns it in ``t4``.
UART_BOOT_SOURCE = f"""
    lui   t0, {UART_BASE >> 12:#x}
    lui   t5, {_MAGIC_HI >> 12:#x}
    addi  t5, t5, {_MAGIC_LO}
sync:
    jal   ra, byte
    srli  t3, t3, 8
    slli  t4, t4, 24
    or    t3, t3, t4
    bne   t3, t5, sync
    jal   t6, word
    addi  t2, t3, 0
    lui   t1, {RAM_BASE >> 12:#x}
copy:
    beq   t2, zero, done
    jal   t6, word
    sw    t3, 0(t1)
    addi  t1, t1, 4
    addi  t2, t2, -1
    jal   zero, copy
done:
    lui   t1, {RAM_BASE >> 12:#x}
    jalr  zero, 0(t1)
word:
    addi  a0, zero, 4
next:
    jal   ra, byte
    srli  t3, t3, 8
    slli  t4, t4, 24
    or    t3, t3, t4
    addi  a0, a0, -1
    bne   a0, zero, next
    jalr  zero, 0(t6)
byte:
    lw    t4, {_STATUS}(t0)
    andi  t4, t4, 2
    beq   t4, zero, byte
    lw    t4, {_RX}(t0)
    andi  t4, t4, 255
    jalr  zero, 0(ra)
"""


def _r_type(funct3, rd, rs1, rs2, funct7=0):
    return funct7 << 25 | rs2 << 20 | rs1 << 15 | funct3 << 12 | rd << 7 | 0x33


def _uart_boot():
    ra, a0, t0, t1, t2, t3, t4, t5, t6 = (_r(n) for n in ("ra", "a0", "t0", "t1", "t2", "t3",
                                                          "t4", "t5", "t6"))

    def shift_in():
        # t3 = t3 >> 8 | t4 << 24
        return [_i(0x13, 0b101, t3, t3, 8), _i(0x13, 0b001, t4, t4, 24),
                _r_type(0b110, t3, t3, t4)]

    return [
        _u(0x37, t0, UART_BASE),                  # 0  lui t0, UART
        _u(0x37, t5, _MAGIC_HI),                  # 1  lui t5
        _i(0x13, 0b000, t5, t5, _MAGIC_LO),       # 2  addi t5
        _j(ra, 4 * (27 - 3)),                     # 3  sync: jal ra, byte
        *shift_in(),                                # 4-6
        _b(0b001, t3, t5, 4 * (3 - 7)),           # 7  bne t3, t5, sync
        _j(t6, 4 * (19 - 8)),                     # 8  jal t6, word
        _i(0x13, 0b000, t2, t3, 0),               # 9  addi t2, t3, 0
        _u(0x37, t1, RAM_BASE),                   # 10 lui t1, RAM
        _b(0b000, t2, 0, 4 * (17 - 11)),          # 11 copy: beq t2, zero, done
        _j(t6, 4 * (19 - 12)),                    # 12 jal t6, word
        _s(t3, t1, 0),                            # 13 sw t3, 0(t1)
        _i(0x13, 0b000, t1, t1, 4),               # 14 addi t1, t1, 4
        _i(0x13, 0b000, t2, t2, -1),              # 15 addi t2, t2, -1
        _j(0, 4 * (11 - 16)),                     # 16 jal zero, copy
        _u(0x37, t1, RAM_BASE),                   # 17 done: lui t1, RAM
        _i(0x67, 0b000, 0, t1, 0),                # 18 jalr zero, 0(t1)
        _i(0x13, 0b000, a0, 0, 4),                # 19 word: addi a0, zero, 4
        _j(ra, 4 * (27 - 20)),                    # 20 next: jal ra, byte
        *shift_in(),                                # 21-23
        _i(0x13, 0b000, a0, a0, -1),              # 24 addi a0, a0, -1
        _b(0b001, a0, 0, 4 * (20 - 25)),          # 25 bne a0, zero, next
        _i(0x67, 0b000, 0, t6, 0),                # 26 jalr zero, 0(t6)
        _i(0x03, 0b010, t4, t0, _STATUS),         # 27 byte: lw t4, STATUS(t0)
        _i(0x13, 0b111, t4, t4, 2),               # 28 andi t4, t4, 2
        _b(0b000, t4, 0, 4 * (27 - 29)),          # 29 beq t4, zero, byte
        _i(0x03, 0b010, t4, t0, _RX),             # 30 lw t4, RX(t0)
        _i(0x13, 0b111, t4, t4, 255),             # 31 andi t4, t4, 255
        _i(0x67, 0b000, 0, ra, 0),                # 32 jalr zero, 0(ra)
    ]


def boot_program(boot="memory"):
    """The boot ROM's contents for ``boot`` (``SocConfig.boot``): 32-bit words
    (``ROM_BYTES`` / 4 of them, zero-filled)."""
    if boot == "uart":
        words = _uart_boot()
        return words + [0] * (ROM_BYTES // 4 - len(words))
    if boot != "memory":
        raise ValueError(f"boot must be memory or uart, not {boot!r}")
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
