"""Render the generated tables of ``docs/nve.md`` from :mod:`hls_ref.nve.isa`.

``python -m hls_ref.nve.nve_doc --write`` rewrites the sections between
``<!-- BEGIN name -->`` and ``<!-- END name -->``: the sizes (:class:`~.isa.NveConfig`), the
instruction fields (:func:`~.isa.instruction_fields`), the opcodes (:data:`~.isa.OPS`,
:data:`~.isa.OP_DOC`), the latencies (:data:`~.isa.LATENCIES`), the host registers
(:func:`~.isa.host_registers`) and the error codes (:data:`~.isa.ERROR_DOC`). ``--check``
exits with status 1 when the file is stale.
"""

import sys
from dataclasses import fields
from pathlib import Path

from ..accelerator_doc import doc_command
from .isa import (
    DEFAULT_CONFIG,
    ERROR_DOC,
    HOST_LUT_OFFSET,
    LATENCIES,
    OP_DOC,
    OPS,
    SLOT_NAMES,
    SLOTS,
    host_registers,
    instruction_fields,
)
from .numerics import LUT_ENTRIES

__all__ = ["DOC_PATH", "main", "render_sections"]

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "nve.md"


def _bits(lsb, width):
    return f"{lsb}" if width == 1 else f"{lsb + width - 1}:{lsb}"


def _sizes(config):
    lines = ["| parameter | default | meaning | chosen by |", "|---|---:|---|---|"]
    for f in fields(config):
        lines.append(f"| `{f.name}` | {getattr(config, f.name)} | {f.metadata['doc']} | "
                     f"{f.metadata['origin']} |")
    lines += [
        "",
        "Derived: the image register has `lanes + ri_extra` = "
        f"{config.ri_size} entries; a word holds {config.pixels_per_word} int8 pixels or "
        f"{config.coefficients_per_word} int16 coefficients; addresses, offsets, updates and "
        f"AGU registers are {config.addr_bits} bits, the AGU mode {config.mode_bits} bits, a "
        f"pc {config.pc_bits} bits; an instruction is {config.instruction_bits} bits.",
    ]
    return "\n".join(lines)


def _fields(config):
    lines = ["| bits | slot | field | width | meaning |", "|---|---|---|---:|---|"]
    for f in instruction_fields(config):
        lines.append(f"| {_bits(f.lsb, f.width)} | {SLOT_NAMES[f.slot]} | `{f.name}` | "
                     f"{f.width} | {f.meaning} |")
    spare = config.word_bits - config.instruction_bits
    if spare:
        lines.append(f"| {_bits(config.instruction_bits, spare)} | - | - | {spare} | "
                     f"unused, must be 0 |")
    return "\n".join(lines)


def _opcodes():
    lines = ["| slot | code | operation | assembly | from | semantics |",
             "|---|---:|---|---|---|---|"]
    for slot in SLOTS:
        for code, op in enumerate(OPS[slot]):
            if op == "nop":
                lines.append(f"| {SLOT_NAMES[slot]} | {code} | `nop` | (left out) | | idle |")
                continue
            syntax, origin, meaning = OP_DOC[(slot, op)]
            lines.append(f"| {SLOT_NAMES[slot]} | {code} | `{op}` | `{syntax}` | {origin} | "
                         f"{meaning} |")
    return "\n".join(lines)


def _latencies():
    lines = ["| from | to | cycles (at least) | source |", "|---|---|---:|---|"]
    lines += [f"| {a} | {b} | {d} | {src} |" for a, b, d, src in LATENCIES]
    return "\n".join(lines)


def _registers(config):
    end = HOST_LUT_OFFSET + LUT_ENTRIES - 4
    return (host_registers(config).markdown() +
            f"\n| `{HOST_LUT_OFFSET:#05x}`-`{end:#05x}` | `LUT` | 31:0 | 4 entries | rw | "
            f"| activation LUT, entry `4r+k` in bits `8k+7:8k` of register `r` (int8) |")


def _errors():
    lines = ["| code | name | hazard | meaning | RTL |", "|---:|---|---|---|---|"]
    lines += [f"| {code.value} | `{code.name}` | {rule} | {meaning} | {rtl} |"
              for code, (rule, meaning, rtl) in ERROR_DOC.items()]
    return "\n".join(lines)


def render_sections(config=DEFAULT_CONFIG):
    """``{section name: markdown}`` of the generated parts of ``docs/nve.md``."""
    return {"sizes": _sizes(config), "fields": _fields(config), "opcodes": _opcodes(),
            "latencies": _latencies(), "registers": _registers(config), "errors": _errors()}


def main(argv=None):
    return doc_command(argv, path=DOC_PATH, render=render_sections,
                       module="hls_ref.nve.nve_doc", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
