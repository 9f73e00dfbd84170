"""``docs/results.md`` is written by commands (benchmarks, synthesis, proofs), each owning a
section between ``<!-- BEGIN name -->`` and ``<!-- END name -->``: this is the one writer."""

from .toolchain import PROJECT_ROOT

__all__ = ["RESULTS", "write_results_section"]

#: The results page.
RESULTS = PROJECT_ROOT / "docs" / "results.md"


def write_results_section(name, body, path=RESULTS):
    """Replace the section between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` of
    ``path`` (``docs/results.md``) with ``body``, appending the section if it is missing."""
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    text = path.read_text() if path.exists() else "# Results\n"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
