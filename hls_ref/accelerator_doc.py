"""Render the generated tables of ``docs/accelerator.md`` from their single definitions.

``python -m hls_ref.accelerator_doc --write`` rewrites the sections between
``<!-- BEGIN name -->`` and ``<!-- END name -->`` markers: the register map of the default
build (:func:`hls_ref.registers.register_map`), the descriptor fields
(:data:`hls_ref.descriptor.FIELDS`) and the error codes (:class:`hls_ref.descriptor.ErrorCode`).
A test fails when the file is out of date.
"""

import argparse
import sys
from pathlib import Path

from .config import DEFAULT_CONFIG
from .descriptor import DESCRIPTOR_BYTES, FIELDS, ErrorCode
from .registers import register_map

__all__ = ["DOC_PATH", "doc_command", "render_sections", "update"]

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "accelerator.md"

# why each code is raised, in the order the hardware checks
_ERROR_TEXT = {
    ErrorCode.NONE: "no error",
    ErrorCode.BAD_OP: "no datapath of the build runs `op` (`DATAPATHS`), or a per-channel "
                      "`mode` is 3",
    ErrorCode.BAD_PRECISION: "`precision` is not a configuration the PE array implements "
                             "(`PRECISIONS`)",
    ErrorCode.BAD_OUT_WIDTH: "`out_width` is 3",
    ErrorCode.ZERO_DIM: "`in_h`, `in_w`, `in_c`, `out_c` or `out_seg` is 0",
    ErrorCode.BAD_KERNEL: "a kernel side is 0 or above `GEOMETRY.max_kernel_*`",
    ErrorCode.BAD_STRIDE: "a stride is 0 or above `GEOMETRY.max_stride`",
    ErrorCode.BAD_PADDING: "a padding is not below the kernel side of its axis",
    ErrorCode.TOO_MANY_CHANNELS: "`out_c` is above `PES`",
    ErrorCode.ROW_TOO_WIDE: "`in_w` is above `MAX_WIDTH`",
    ErrorCode.TILE_TOO_SMALL: "the padded tile is smaller than the kernel",
    ErrorCode.INPUT_TOO_LARGE: "`in_h * in_w * groups` is above `PLM_IN_WORDS`",
    ErrorCode.WEIGHTS_TOO_LARGE: "`kernel_h * kernel_w * groups * PES` is above `PLM_W_WORDS`",
    ErrorCode.OUTPUT_TOO_LARGE: "`out_h * out_w * PES` is above `PLM_ACC_WORDS`",
    ErrorCode.BAD_LAYOUT: "an address or stride breaks the alignment rules below",
    ErrorCode.ACC_STATE: "`acc_flag` is set but the accumulators hold no partial sums of this "
                         "output size (after reset, an error, or a different tile)",
    ErrorCode.BAD_QBLOCK: "the quantization block's channel count is not `out_c`, or its "
                          "layout is not the datapath's (conv2d: fixed point; FC: the shared "
                          "layout with a positive normal scale)",
    ErrorCode.AXI_READ: "a read (descriptor or operand) got SLVERR or DECERR",
    ErrorCode.AXI_WRITE: "a write of the output got SLVERR or DECERR",
    ErrorCode.BAD_DESC_ADDR: "`DESC_ADDR` is not 64-byte aligned (found at the start, before "
                             "any fetch; `ERR_INDEX` 0)",
}


def _fields_table():
    lines = [f"A descriptor is {DESCRIPTOR_BYTES} bytes (eight 64-bit beats).", "",
             "| beat | bits | field | signed | meaning |", "|---|---|---|---|---|"]
    for name, beat, lsb, width, is_signed, doc in FIELDS:
        bits = f"{lsb}" if width == 1 else f"{lsb + width - 1}:{lsb}"
        lines.append(f"| {beat} | {bits} | `{name}` | {'yes' if is_signed else ''} | {doc} |")
    return "\n".join(lines)


def _errors_table():
    lines = ["| code | name | raised when |", "|---:|---|---|"]
    for code in ErrorCode:
        lines.append(f"| {code.value} | `{code.name}` | {_ERROR_TEXT[code]} |")
    return "\n".join(lines)


def render_sections(config=DEFAULT_CONFIG):
    """``{section name: markdown}`` of the generated parts."""
    return {"registers": register_map(config).markdown(), "descriptor": _fields_table(),
            "errors": _errors_table()}


def update(text, sections):
    """``text`` with every section marked ``<!-- BEGIN name -->`` ... ``<!-- END name -->``
    replaced by ``sections[name]``; ValueError if a marker is missing."""
    for name, body in sections.items():
        begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
        if begin not in text or end not in text:
            raise ValueError(f"no section {name!r}")
        text = text[:text.index(begin)] + f"{begin}\n{body}\n{end}" + \
            text[text.index(end) + len(end):]
    return text


def doc_command(argv, *, path, render, module, description):
    """The command line of a document whose tables are generated: ``--write`` rewrites the
    generated sections of ``path`` with ``render()``; otherwise (or with ``--check``) the
    command fails when they are stale. ``module`` is named in the hint. Returns the exit
    status."""
    parser = argparse.ArgumentParser(description=description)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"rewrite {path.name}")
    mode.add_argument("--check", action="store_true",
                      help=f"fail if {path.name} is stale (the default)")
    args = parser.parse_args(argv)
    current = path.read_text()
    try:
        new = update(current, render())
    except ValueError as e:
        print(f"{path.name}: {e}", file=sys.stderr)
        return 1
    if args.write:
        path.write_text(new)
    elif new != current:
        print(f"{path.name} is out of date: run python -m {module} --write", file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    return doc_command(argv, path=DOC_PATH, render=render_sections,
                       module="hls_ref.accelerator_doc", description=__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
