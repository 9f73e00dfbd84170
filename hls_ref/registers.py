"""The accelerator socket's register map, generated from the configuration object.

Every accelerator exposes the same 32-bit registers over AXI4-Lite (``docs/accelerator.md``
renders this module). Read-only constants describe the build (PEs, PLM sizes, limits,
precisions), so software can check a schedule against the hardware it runs on; the control,
status, command-queue and performance-counter registers are the same for every build.

:func:`register_map` is the single definition: the RTL register bank (``hdl.csr``) is built
from it, the host model and tests address registers by name through it, and the docs table
is rendered from it.
"""

import enum
from dataclasses import dataclass

__all__ = ["FORMAT_VERSION", "MAGIC", "Access", "Field", "Register", "RegisterMap",
           "register_map"]

#: Value of the ``ID`` register: ASCII "TESS".
MAGIC = 0x54455353
#: (major, minor) of the register map and descriptor format. 2.0: one socket with several
#: datapaths (``DATAPATHS``) replaces one accelerator kind per build (``VERSION.kind``).
FORMAT_VERSION = (2, 0)


class Access(enum.Enum):
    """How a field behaves on the bus.

    * ``CONST``: read-only constant fixed at build time (from the configuration object);
    * ``RO``: read-only, driven by the hardware;
    * ``RW``: read-write register, reset to ``reset``;
    * ``W1P``: writing 1 produces a one-cycle pulse; reads 0;
    * ``W1C``: sticky bit set by the hardware, cleared by writing 1.
    """

    CONST = "const"
    RO = "ro"
    RW = "rw"
    W1P = "w1p"
    W1C = "w1c"


@dataclass(frozen=True)
class Field:
    """``width`` bits at ``lsb`` of a register; ``value`` is the constant of a ``CONST``
    field, ``reset`` the reset value of an ``RW`` one."""

    name: str
    lsb: int
    width: int
    access: Access
    doc: str = ""
    value: int = 0
    reset: int = 0

    def __post_init__(self):
        if not (0 <= self.lsb and self.width >= 1 and self.lsb + self.width <= 32):
            raise ValueError(f"field {self.name} [{self.lsb}+:{self.width}] does not fit 32 "
                             f"bits")
        for what in ("value", "reset"):
            if not 0 <= getattr(self, what) < 1 << self.width:
                raise ValueError(f"field {self.name}: {what} {getattr(self, what)} does not "
                                 f"fit {self.width} bits")

    @property
    def mask(self):
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    """A 32-bit register at byte ``offset``."""

    name: str
    offset: int
    fields: tuple
    doc: str = ""

    def __post_init__(self):
        if self.offset % 4:
            raise ValueError(f"register {self.name} at {self.offset:#x} is not word-aligned")
        used = 0
        for f in self.fields:
            if used & f.mask:
                raise ValueError(f"register {self.name}: field {f.name} overlaps another")
            used |= f.mask

    def field(self, name):
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}")

    @property
    def reset_value(self):
        """The value a read returns after reset (hardware-driven fields read 0)."""
        return sum((f.value if f.access is Access.CONST else
                    f.reset if f.access is Access.RW else 0) << f.lsb for f in self.fields)


class RegisterMap:
    """An ordered collection of registers, addressable by name."""

    def __init__(self, registers, *, addr_width=12):
        self.registers = tuple(registers)
        self.addr_width = addr_width
        offsets = [r.offset for r in self.registers]
        if len(set(offsets)) != len(offsets):
            raise ValueError("two registers share an offset")
        if max(offsets) >= 1 << addr_width:
            raise ValueError(f"register offsets exceed the {addr_width}-bit address space")
        self._by_name = {r.name: r for r in self.registers}

    def __getitem__(self, name):
        return self._by_name[name]

    def __iter__(self):
        return iter(self.registers)

    def __len__(self):
        return len(self.registers)

    def offset(self, name):
        return self._by_name[name].offset

    def encode(self, name, **fields):
        """The 32-bit value of register ``name`` with the given fields (others 0)."""
        reg = self._by_name[name]
        value = 0
        for key, v in fields.items():
            f = reg.field(key)
            if not 0 <= v < 1 << f.width:
                raise ValueError(f"{name}.{key} = {v} does not fit {f.width} bits")
            value |= v << f.lsb
        return value

    def decode(self, name, value):
        """``{field: value}`` of a 32-bit register value."""
        reg = self._by_name[name]
        return {f.name: (value >> f.lsb) & ((1 << f.width) - 1) for f in reg.fields}

    def markdown(self):
        """The register table of ``docs/accelerator.md``."""
        lines = ["| offset | register | bits | field | access | reset / value | meaning |",
                 "|---|---|---|---|---|---|---|"]
        for reg in self.registers:
            for i, f in enumerate(reg.fields):
                bits = (f"{f.lsb}" if f.width == 1 else f"{f.lsb + f.width - 1}:{f.lsb}")
                shown = (f"{f.value:#x}" if f.access is Access.CONST else
                         f"{f.reset:#x}" if f.access is Access.RW else "")
                head = (f"`{reg.offset:#05x}` | `{reg.name}`" if i == 0 else " | ")
                doc = f.doc or (reg.doc if len(reg.fields) == 1 else "")
                lines.append(f"| {head} | {bits} | `{f.name}` | {f.access.value} | {shown} "
                             f"| {doc} |")
        return "\n".join(lines)


def _const(name, offset, value, doc, width=32):
    return Register(name, offset, (Field("value", 0, width, Access.CONST, doc, value=value),),
                    doc)


def _counter(name, offset, doc):
    """A 64-bit read-only counter as a low and a high word."""
    return [Register(f"{name}_LO", offset, (Field("value", 0, 32, Access.RO, doc),), doc),
            Register(f"{name}_HI", offset + 4,
                     (Field("value", 0, 32, Access.RO, f"{doc} (bits 63:32)"),), doc)]


def register_map(config):
    """The register map of an accelerator built from ``config`` (an
    :class:`hls_ref.config.AcceleratorConfig`). The constants of a datapath the build does
    not have (conv2d's, FC's) read 0."""
    from .config import FC_MAX_OUTPUTS
    from .descriptor import Op

    major, minor = FORMAT_VERSION
    conv = config.section(Op.CONV2D)
    precisions = sum(1 << p.value for p in config.precisions) if conv else 0

    def conv_value(value):
        return value if conv else 0

    fc = config.section(Op.FC)

    def fc_value(name):
        return getattr(fc, name) if fc else 0

    regs = [
        _const("ID", 0x000, MAGIC, 'identifies a Tessera accelerator ("TESS")'),
        Register("VERSION", 0x004, (
            Field("minor", 0, 8, Access.CONST, "format version, minor", value=minor),
            Field("major", 8, 8, Access.CONST, "format version, major", value=major),
        ), "register-map and descriptor format version"),
        _const("PES", 0x008, conv_value(config.pes), "conv2d: processing elements"),
        _const("PLM_IN_WORDS", 0x00C, conv_value(config.plm_in_words),
               "conv2d: input PLM bank, 16-bit words"),
        _const("PLM_W_WORDS", 0x010, conv_value(config.plm_w_words),
               "conv2d: weight PLM bank, 16-bit words"),
        _const("PLM_ACC_WORDS", 0x014, conv_value(config.plm_acc_words),
               "conv2d: accumulator PLM bank, 32-bit words"),
        Register("GEOMETRY", 0x018, (
            Field("max_kernel_h", 0, 8, Access.CONST, "conv2d: largest kernel height",
                  value=conv_value(config.max_kernel[0])),
            Field("max_kernel_w", 8, 8, Access.CONST, "conv2d: largest kernel width",
                  value=conv_value(config.max_kernel[1])),
            Field("max_stride", 16, 8, Access.CONST, "conv2d: largest stride",
                  value=conv_value(config.max_stride)),
            Field("banks", 24, 8, Access.CONST, "conv2d: PLM banks (2: double-buffered)",
                  value=conv_value(config.banks)),
        ), "limits of one conv2d command"),
        _const("MAX_WIDTH", 0x01C, conv_value(config.max_width),
               "conv2d: longest input tile row, pixels"),
        Register("PRECISIONS", 0x020, (
            Field("codes", 0, 8, Access.CONST,
                  "conv2d: bit c set: ST configuration code c is supported",
                  value=precisions),
        ), "supported ST configurations"),
        Register("DATAPATHS", 0x024, (
            Field("ops", 0, 8, Access.CONST,
                  "bit op set: the build runs descriptors of that op (1 conv2d, 2 depthwise, "
                  "3 fc)", value=config.datapath_mask),
        ), "the datapaths of the build"),
        Register("FC_SHAPE", 0x028, (
            Field("pes", 0, 8, Access.CONST, "fc: processing elements (outputs per block)",
                  value=fc_value("pes")),
            Field("st_units", 8, 8, Access.CONST, "fc: ST multipliers per PE",
                  value=fc_value("st_units")),
            Field("max_batch", 16, 8, Access.CONST, "fc: input vectors per command",
                  value=fc_value("max_batch")),
            Field("codes", 24, 8, Access.CONST,
                  "fc: bit c set: ST configuration code c is supported",
                  value=sum(1 << p.value for p in fc.precisions) if fc else 0),
        ), "the FC datapath's PE array"),
        _const("FC_PLM_IN_WORDS", 0x02C, fc_value("plm_in_words"),
               "fc: input PLM bank, 16-bit words (every vector of a command)"),
        _const("FC_PLM_ACC_WORDS", 0x030, fc_value("acc_words"),
               "fc: accumulator PLM bank, 32-bit words"),
        _const("FC_MAX_OUTPUTS", 0x034, FC_MAX_OUTPUTS if fc else 0,
               "fc: most outputs of one command"),
        Register("CTRL", 0x040, (
            Field("start", 0, 1, Access.W1P,
                  "run DESC_COUNT descriptors from DESC_ADDR (ignored while busy)"),
            Field("irq_enable", 8, 1, Access.RW, "raise the interrupt when done or error"),
        ), "control"),
        Register("STATUS", 0x044, (
            Field("busy", 0, 1, Access.RO, "a command list is running"),
            Field("done", 1, 1, Access.W1C, "the last list completed (write 1 to clear)"),
            Field("error", 2, 1, Access.W1C, "the last list stopped on an error "
                  "(write 1 to clear)"),
            Field("code", 8, 8, Access.RO, "error code of the failing descriptor "
                  "(docs/accelerator.md), 0 if none"),
        ), "status"),
        Register("ERR_INDEX", 0x048, (
            Field("value", 0, 32, Access.RO, "index in the list of the failing descriptor"),
        ), "failing descriptor"),
        Register("PROGRESS", 0x04C, (
            Field("value", 0, 32, Access.RO, "descriptors completed in the current list"),
        ), "progress"),
        Register("DESC_ADDR", 0x050, (
            Field("value", 0, 32, Access.RW, "byte address of the descriptor list "
                  "(64-byte aligned)"),
        ), "descriptor list address"),
        Register("DESC_COUNT", 0x054, (
            Field("value", 0, 32, Access.RW, "descriptors in the list"),
        ), "descriptor count"),
        *_counter("CYCLES", 0x060, "cycles busy in the last list"),
        *_counter("MAC_CYCLES", 0x068, "cycles the PE array performed useful MACs"),
        *_counter("BYTES_READ", 0x070, "bytes read from external memory (whole beats)"),
        *_counter("BYTES_WRITTEN", 0x078, "bytes written to external memory (strobed)"),
        Register("TILES", 0x080, (
            Field("value", 0, 32, Access.RO, "commands completed without error in the last "
                  "list (taken at its end)"),
        ), "tiles done"),
    ]
    return RegisterMap(regs)
