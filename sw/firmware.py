"""Build the SoC's firmware (``firmware/``) with the C compiler of the pinned PyPI ``ziglang``
(``zig cc -target riscv32-freestanding-none -mcpu=generic_rv32+m``, or ``generic_rv32`` for
a processor without the multiplier and divider, ``SocConfig.muldiv``), through
``firmware/Makefile``; no system cross-compiler.

The headers that describe the build (``soc_map.h``, ``soc_map.ld`` from
:mod:`hls_ref.soc_map`, ``image_format.h`` from :mod:`hls_ref.image`) are generated for each
SoC configuration; a program's binary is cached under ``build/firmware/<digest>/`` by a digest
of the firmware sources, the generated headers, any extra headers and the compiler's version,
so a second build of the same firmware costs nothing.
"""

import hashlib
import os
import subprocess
import sys
from importlib import metadata

from hls_ref import image, soc_map
from sim.toolchain import BUILD_ROOT, PROJECT_ROOT

__all__ = ["FirmwareError", "build_firmware"]

FIRMWARE_DIR = PROJECT_ROOT / "firmware"


class FirmwareError(RuntimeError):
    """The firmware did not build (the message holds the compiler's output)."""


def _headers(soc, extra):
    return {"soc_map.h": soc_map.c_header(soc), "soc_map.ld": soc_map.linker_script(soc),
            "image_format.h": image.c_header(), **(extra or {})}


def _mcpu(soc):
    """zig's ``-mcpu`` for the processor of ``soc``."""
    return "generic_rv32+m" if soc.muldiv else "generic_rv32"


def _digest(program, headers, mcpu="generic_rv32+m"):
    hasher = hashlib.sha256(program.encode())
    if mcpu != "generic_rv32+m":
        hasher.update(mcpu.encode())
    hasher.update(metadata.version("ziglang").encode())
    for path in sorted(FIRMWARE_DIR.rglob("*")):
        if path.is_file() and path.suffix in (".c", ".h", ".S", ".ld", "") :
            hasher.update(str(path.relative_to(FIRMWARE_DIR)).encode())
            hasher.update(path.read_bytes())
    for name, text in sorted(headers.items()):
        hasher.update(name.encode())
        hasher.update(text.encode())
    return hasher.hexdigest()[:16]


def build_firmware(soc, program="main", extra_headers=None, log=None):
    """Build ``program`` (``main``, the model runner; ``board``, the board monitor, which
    needs ``board_link.h`` among ``extra_headers``; or a unit test ``firmware/tests/
    <program>.c``) for SoC build ``soc``; returns the path of its flat binary (loaded at
    ``RAM_BASE``). ``extra_headers`` maps file names to contents placed beside the generated
    headers (test vectors). Raises :class:`FirmwareError` with the compiler's output."""
    headers = _headers(soc, extra_headers)
    directory = BUILD_ROOT / "firmware" / f"{program}-{_digest(program, headers, _mcpu(soc))}"
    binary = directory / f"{program}.bin"
    if binary.exists():
        return binary
    gen = directory / "gen"
    gen.mkdir(parents=True, exist_ok=True)
    for name, text in headers.items():
        # LiteDRAM's generated headers keep their directories (generated/csr.h ...)
        (gen / name).parent.mkdir(parents=True, exist_ok=True)
        (gen / name).write_text(text)
    if log:
        log(f"building firmware {program} with zig cc")
    env = dict(os.environ)
    # keep zig's cache with the project's other build products
    env.setdefault("ZIG_GLOBAL_CACHE_DIR", str(BUILD_ROOT / "zig-cache"))
    env.setdefault("ZIG_LOCAL_CACHE_DIR", str(BUILD_ROOT / "zig-cache"))
    result = subprocess.run(
        ["make", "-s", "-C", str(FIRMWARE_DIR), f"BUILD={directory}", f"GEN={gen}",
         f"PROGRAM={program}", f"PYTHON={sys.executable}", f"MCPU={_mcpu(soc)}"],
        capture_output=True, text=True, env=env)
    if result.returncode or not binary.exists():
        raise FirmwareError(f"firmware {program} did not build:\n{result.stdout}{result.stderr}")
    size = binary.stat().st_size
    if size > soc.ram_bytes:
        raise FirmwareError(f"firmware {program} is {size} bytes, more than the "
                            f"{soc.ram_bytes}-byte RAM")
    return binary
