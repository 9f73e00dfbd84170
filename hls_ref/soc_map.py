"""The SoC's address map and its own registers: the contract between the RTL (``hdl/soc``), the
firmware (``firmware/``, whose header :func:`c_header` generates) and the host.

Processor addresses (bytes):

* ``RAM_BASE``: on-chip RAM (``SocConfig.ram_bytes``): firmware code, data and stack (at 0:
  Minerva's caches can only cover a region that starts at address 0);
* ``ROM_BASE``: the boot ROM (the reset address); it copies the firmware from the boot
  block at the start of external memory into the RAM and jumps to it;
* ``SYSCTRL_BASE``: the system controller (cycle counter, bus monitor, progress and exit);
* ``UART_BASE``: the UART;
* ``ACCEL_BASE + k * ACCEL_STRIDE``: the registers of accelerator ``k`` (``docs/accelerator.md``);
* ``NVE_BASE`` (builds with ``SocConfig.nve``): the NVE's registers and LUT
  (:func:`hls_ref.nve.isa.host_registers`, ``docs/nve.md``), and at ``NVE_BASE +
  NVE_PORT_OFFSET`` its stream port (:data:`NVE_PORT`);
* ``DRAM_BASE``: external memory (``SocConfig.dram_bytes``).

The accelerators address external memory from 0: processor address ``DRAM_BASE + a`` is bus
address ``a``, which is what descriptors and the model image hold.
"""

from dataclasses import dataclass

__all__ = [
    "ACCEL_BASE",
    "ACCEL_STRIDE",
    "BOOT_MAGIC",
    "DRAM_BASE",
    "EXIT_BOOT_FAILED",
    "NVE_BASE",
    "NVE_PORT",
    "NVE_PORT_OFFSET",
    "NVE_WINDOW",
    "RAM_BASE",
    "ROM_BASE",
    "ROM_BYTES",
    "SOC_ID",
    "SYSCTRL",
    "SYSCTRL_BASE",
    "UART",
    "UART_BASE",
    "Reg",
    "c_header",
    "linker_script",
]

RAM_BASE = 0x0000_0000
ROM_BASE = 0x1000_0000
ROM_BYTES = 256
SYSCTRL_BASE = 0x2000_0000
UART_BASE = 0x2000_1000
PERIPH_WINDOW = 0x1000
ACCEL_BASE = 0x2001_0000
ACCEL_STRIDE = 0x1000
DRAM_BASE = 0x4000_0000
#: The NVE's window (``SocConfig.nve``): its register port (4 KB: registers and the LUT), then
#: its stream port at ``NVE_PORT_OFFSET``.
NVE_BASE = 0x2002_0000
NVE_PORT_OFFSET = 0x1000
NVE_WINDOW = 0x2000
#: The external-memory controller's control registers (builds with ``memctrl_bytes``).
MEMCTRL_BASE = 0x3000_0000

#: ``SYSCTRL.ID``: "TSOC".
SOC_ID = 0x54534F43
#: First word of the boot block ("TFW0"); the second is the firmware's length in words.
BOOT_MAGIC = 0x30574654
#: Exit code the boot ROM writes when the boot block has no firmware.
EXIT_BOOT_FAILED = 0xB007


@dataclass(frozen=True)
class Reg:
    """A register: byte offset in its window, width in bits, access and meaning."""

    name: str
    offset: int
    width: int
    access: str          # "r", "w" or "rw"
    doc: str


#: The system controller's registers (64-bit ones read low word first: that read captures the
#: whole value).
SYSCTRL = (
    Reg("ID", 0x00, 32, "r", 'identifies the SoC ("TSOC")'),
    Reg("ACCELS", 0x04, 32, "r", "accelerator instances (count)"),
    Reg("DATAPATHS", 0x08, 32, "r", "byte k: accelerator k's DATAPATHS register (bit op set for "
                                    "each datapath: 1 conv2d, 2 depthwise, 3 fc)"),
    Reg("DRAM_BYTES", 0x0C, 32, "r", "size of external memory, bytes"),
    Reg("CYCLES", 0x10, 64, "r", "cycles since reset"),
    Reg("BUS_READ", 0x18, 64, "r", "bytes read from external memory since reset (8 per beat)"),
    Reg("BUS_WRITTEN", 0x20, 64, "r", "bytes written to external memory since reset (strobed)"),
    Reg("PROGRESS", 0x28, 32, "rw", "firmware progress word, visible to the host"),
    Reg("EXIT", 0x2C, 32, "w", "writing stops the simulation with this exit code"),
)

#: Bytes the UART's receive FIFO holds: a frame header of the board link (14 bytes) arrives
#: whole while the firmware's first pass through its code fills the instruction cache.
UART_RX_FIFO = 16
#: The UART's registers.
UART = (
    Reg("TX", 0x00, 8, "w", "byte to send (write only when STATUS.tx_ready)"),
    Reg("RX", 0x04, 8, "r", "the oldest received byte (reading it removes it from the "
                            "16-byte receive FIFO)"),
    Reg("STATUS", 0x08, 3, "r", "bit 0 tx_ready, bit 1 rx_valid (the FIFO holds a byte), "
                                "bit 2 rx_overflow (a byte was lost to a full FIFO since the "
                                "last read of STATUS)"),
    Reg("DIVISOR", 0x0C, 16, "rw", "clock cycles per bit"),
)

#: The NVE's stream port: the processor writes the input stream's 64-bit words and reads the
#: output stream's, one 32-bit half at a time. A word written while ``STATUS.in_ready`` is 0
#: is dropped (the write never waits: a stopped NVE cannot hang the processor).
NVE_PORT = (
    Reg("IN_LO", 0x00, 32, "w", "bits 31:0 of the next input word (kept until IN_HI)"),
    Reg("IN_HI", 0x04, 32, "w", "bits 63:32 of the next input word; writing it sends the word "
                                "(IN_LO, IN_HI) to the NVE's input stream"),
    Reg("OUT_LO", 0x08, 32, "r", "bits 31:0 of the oldest output word (0 when none)"),
    Reg("OUT_HI", 0x0C, 32, "r", "bits 63:32 of the oldest output word; reading it removes "
                                 "the word"),
    Reg("STATUS", 0x10, 3, "r", "bit 0 in_ready (the input word register is empty: IN_HI may "
                                "send), bit 1 out_valid (an output word waits), bit 2 out_last "
                                "(it is the run's last)"),
    Reg("CLEAR", 0x14, 1, "w", "writing 1 drops the input word not yet taken (after a run "
                               "that ended early)"),
)

def reg(table, name):
    """The register called ``name`` in ``table``."""
    for r in table:
        if r.name == name:
            return r
    raise KeyError(name)


def linker_script(soc):
    """The firmware's ``soc_map.ld``: the RAM the firmware is linked into."""
    return (f"/* Generated by hls_ref.soc_map.linker_script: do not edit. */\n"
            f"RAM_BASE = 0x{RAM_BASE:08x};\nRAM_BYTES = 0x{soc.ram_bytes:08x};\n")


def c_header(soc):
    """The firmware's ``soc_map.h`` for build ``soc`` (a :class:`hls_ref.config.SocConfig`):
    addresses, register offsets, the accelerators' register map (``hls_ref.registers``) and
    the build's constants."""
    from .registers import register_map

    lines = ["/* Generated by hls_ref.soc_map.c_header: do not edit. */",
             "#ifndef TESSERA_SOC_MAP_H", "#define TESSERA_SOC_MAP_H", ""]

    def define(name, value):
        lines.append(f"#define {name} 0x{value:08x}u")

    for name, value in (("ROM_BASE", ROM_BASE), ("RAM_BASE", RAM_BASE),
                        ("RAM_BYTES", soc.ram_bytes), ("SYSCTRL_BASE", SYSCTRL_BASE),
                        ("UART_BASE", UART_BASE), ("ACCEL_BASE", ACCEL_BASE),
                        ("ACCEL_STRIDE", ACCEL_STRIDE), ("DRAM_BASE", DRAM_BASE),
                        ("MEMCTRL_BASE", MEMCTRL_BASE), ("MEMCTRL_BYTES", soc.memctrl_bytes),
                        ("DRAM_BYTES", soc.dram_bytes), ("SOC_ID", SOC_ID),
                        ("BOOT_MAGIC", BOOT_MAGIC), ("EXIT_BOOT_FAILED", EXIT_BOOT_FAILED),
                        ("ACCELS", len(soc.accelerators)), ("CLOCK_HZ", soc.clock_hz)):
        define(name, value)
    lines.append("")
    for prefix, table in (("SYSCTRL", SYSCTRL), ("UART", UART)):
        for r in table:
            define(f"{prefix}_{r.name}", r.offset)
    lines.append("")
    from .descriptor import Op

    for op in Op:
        define(f"DATAPATH_{op.name}", op)
    for k, config in enumerate(soc.accelerators):
        define(f"ACCEL{k}_DATAPATHS", config.datapath_mask)
    lines.append("")
    # every accelerator shares the socket's register layout; the constants' values are per
    # build
    from .config import DEFAULT_CONFIG

    config = soc.accelerators[0] if soc.accelerators else DEFAULT_CONFIG
    lines += _register_defines("ACC", register_map(config))
    if soc.nve is not None:
        lines += ["", *_nve_header(soc.nve)]
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def _register_defines(prefix, regmap):
    """``#define`` lines of a :class:`hls_ref.registers.RegisterMap`: each register's offset
    (``<prefix>_<REGISTER>``), each narrower field's ``_SHIFT`` and ``_MASK``."""
    lines = []
    for r in regmap:
        lines.append(f"#define {prefix}_{r.name} 0x{r.offset:08x}u")
        for f in r.fields:
            if f.width < 32:
                lines.append(f"#define {prefix}_{r.name}_{f.name.upper()}_SHIFT {f.lsb}")
                lines.append(f"#define {prefix}_{r.name}_{f.name.upper()}_MASK "
                             f"0x{(1 << f.width) - 1:x}u")
    return lines


def _nve_header(config):
    """The ``soc_map.h`` lines of an NVE built from ``config`` (an NveConfig): its window, the
    stream port's registers, the NVE's registers with their fields, its sizes."""
    from .config import NVE_IRQ
    from .nve.isa import HOST_LUT_OFFSET, ErrorCode, host_registers

    lines = []
    for name, value in (("NVE_BASE", NVE_BASE), ("NVE_PORT_OFFSET", NVE_PORT_OFFSET),
                        ("NVE_LUT_OFFSET", HOST_LUT_OFFSET), ("NVE_IRQ", NVE_IRQ),
                        ("NVE_WORD_BITS", config.word_bits),
                        ("NVE_AGU_MODES", config.agu_modes)):
        lines.append(f"#define {name} 0x{value:08x}u")
    for r in NVE_PORT:
        lines.append(f"#define NVE_PORT_{r.name} 0x{r.offset:08x}u")
    lines += _register_defines("NVE", host_registers(config))
    for code in ErrorCode:
        lines.append(f"#define NVE_ERROR_{code.name} {int(code)}")
    return lines
