"""The NVE instruction word, opcodes and error codes as Amaranth shapes.

Everything here is derived from :mod:`hls_ref.nve.isa`, the one definition the assembler, the
simulator and the code generator use: the opcode enums from :data:`~hls_ref.nve.isa.OPS`, the
instruction layout from :func:`~hls_ref.nve.isa.instruction_fields` and the error codes from
:class:`~hls_ref.nve.isa.ErrorCode`. :func:`legal_word` is the RTL form of
:func:`~hls_ref.nve.isa.decode`'s checks.
"""

import types

from amaranth.hdl import Const, unsigned
from amaranth.lib import data, enum

from hls_ref.nve.isa import (
    DEFAULT_CONFIG,
    ERROR_CODE_BITS,
    OPS,
    ErrorCode,
    NveConfig,
    instruction_fields,
)

__all__ = ["ActOpcode", "Error", "IregOpcode", "MemOpcode", "VmacOpcode", "WregOpcode",
           "as_config", "instruction_layout", "legal_word"]


def _opcodes(name, slot):
    """An ``enum.Enum`` of the operations of ``slot``, in opcode order, as wide as the field."""
    names = OPS[slot]

    def body(namespace):
        for code, op in enumerate(names):
            namespace[op.upper()] = code
    return types.new_class(name, (enum.Enum,), {"shape": (len(names) - 1).bit_length()}, body)


#: MEMA and MEMB operations (both slots have the same ones).
MemOpcode = _opcodes("MemOpcode", "mema")
assert OPS["memb"] == OPS["mema"]
#: WREG, IREG, VMAC and ACT operations.
WregOpcode = _opcodes("WregOpcode", "wreg")
IregOpcode = _opcodes("IregOpcode", "ireg")
VmacOpcode = _opcodes("VmacOpcode", "vmac")
ActOpcode = _opcodes("ActOpcode", "act")

_SLOT_SHAPES = {"mema": MemOpcode, "memb": MemOpcode, "wreg": WregOpcode, "ireg": IregOpcode,
                "vmac": VmacOpcode, "act": ActOpcode}


def _error_enum():
    def body(namespace):
        for code in ErrorCode:
            namespace[code.name] = code.value
    return types.new_class("Error", (enum.Enum,), {"shape": ERROR_CODE_BITS}, body)


#: :class:`hls_ref.nve.isa.ErrorCode` as a shape (the ``ERROR.code`` field).
Error = _error_enum()


def as_config(config):
    """``config`` as an :class:`~hls_ref.nve.isa.NveConfig`: an instance, ``None`` (the
    default) or its fields as a dict (JSON, for :class:`sim.runner.Design`)."""
    if config is None:
        return DEFAULT_CONFIG
    if isinstance(config, NveConfig):
        return config
    if isinstance(config, dict):
        return NveConfig(**config)
    raise TypeError(f"config must be an NveConfig or a dict of its fields, not {config!r}")


def instruction_layout(config=DEFAULT_CONFIG):
    """The ``data.StructLayout`` of one instruction word: a field ``<slot>_<field>`` per
    :func:`~hls_ref.nve.isa.instruction_fields` entry at its bit position (opcodes as their
    enums), and ``unused`` for top bits the fields leave free."""
    fields = {}
    for f in reversed(instruction_fields(config)):
        shape = _SLOT_SHAPES[f.slot] if f.name == "op" else unsigned(f.width)
        fields[f"{f.slot}_{f.name}"] = shape
    spare = config.word_bits - config.instruction_bits
    if spare:
        fields["unused"] = unsigned(spare)
    return data.StructLayout(fields)


def legal_word(word, config=DEFAULT_CONFIG):
    """A 1-bit value: 1 when the instruction ``word`` (a ``data.View`` of
    :func:`instruction_layout` or a plain 64-bit value) decodes, exactly as
    :func:`~hls_ref.nve.isa.decode` accepts it: every opcode defined, the offset, update and
    mode of a memory ``nop`` zero, ``out`` only with an act, unused bits zero."""
    layout = instruction_layout(config)
    if not isinstance(word, data.View):
        word = layout(word)
    checks = []
    for slot, names in OPS.items():
        op = getattr(word, f"{slot}_op").as_value()
        if len(names) < 1 << len(op):
            checks.append(op < len(names))
        if slot in ("mema", "memb"):
            nop = op == 0
            rest = (getattr(word, f"{slot}_offset") | getattr(word, f"{slot}_update") |
                    getattr(word, f"{slot}_mode"))
            checks.append(~nop | (rest == 0))
    checks.append(~word.act_out | (word.act_op.as_value() != 0))
    if "unused" in layout.members:
        checks.append(word.unused == 0)
    value = Const(1, 1)
    for check in checks:
        value = value & check
    return value
