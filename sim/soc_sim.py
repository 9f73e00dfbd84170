"""Simulate the SoC (``hdl/soc``) on Verilator with a C++ harness (``sim/soc/harness.cpp``):
the external memory is a model inside the harness, so whole networks run at Verilator's speed
without cocotb.

:func:`build_simulator` Verilates the SoC of a configuration with the harness (cached under
``build/soc/`` by the digest of the generated Verilog, the harness and the flags);
:func:`run_soc` loads a boot block (the firmware) and any other bytes into external memory,
runs until the firmware writes ``SYSCTRL.EXIT`` (or a cycle limit), and returns the exit code,
the cycle count, the UART's output, the bytes each bus manager moved and the memory regions
asked for.
"""

import contextlib
import hashlib
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hls_ref.config import DEFAULT_SOC
from hls_ref.soc_map import BOOT_MAGIC

from .runner import Design, _locked
from .toolchain import BUILD_ROOT, PROJECT_ROOT, tool_env

__all__ = ["SocRun", "SocSimError", "boot_block", "build_simulator", "run_soc", "soc_design",
           "start_soc"]

HARNESS = PROJECT_ROOT / "sim" / "soc" / "harness.cpp"
_VERILATOR_FLAGS = ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-Wno-lint",
                    "-Wno-style", "--x-assign", "fast", "--x-initial", "fast", "-O3",
                    "--output-split", "20000"]
_CXX_FLAGS = "-O2"


class SocSimError(RuntimeError):
    """The simulator did not build or did not run (the message says why)."""


def soc_design(soc=DEFAULT_SOC):
    """The :class:`sim.runner.Design` of the SoC of configuration ``soc``."""
    return Design("soc", "hdl.soc.soc:soc", soc.as_dict())


def _digest(verilog, trace, sources, cflags):
    hasher = hashlib.sha256(verilog.read_bytes())
    for source in sources:
        hasher.update(Path(source).read_bytes())
    hasher.update(HARNESS.read_bytes())
    hasher.update(" ".join([*_VERILATOR_FLAGS, cflags, str(trace)]).encode())
    return hasher.hexdigest()[:16]


def build_simulator(soc=DEFAULT_SOC, *, design=None, sources=(), board=False, clocks=None,
                    trace=False, log=None):
    """Path of the Verilated SoC simulator of ``soc`` (built if not cached; a first build takes
    minutes). ``design``: another top level (a :class:`sim.runner.Design` named ``soc``) with
    extra Verilog ``sources``; ``board``: the top has no external-memory port (the harness is
    built with ``TESSERA_BOARD``); ``clocks``: ``(system Hz, accelerators' Hz)`` when the top
    has an ``accel_clk`` input (the harness then drives it at that ratio). ``log`` receives
    progress lines."""
    start = time.monotonic()
    if log:
        log("generating the SoC's Verilog")
    verilog = (design or soc_design(soc)).verilog()
    cflags = _CXX_FLAGS + (" -DTESSERA_BOARD" if board else "")
    if clocks:
        sync_hz, accel_hz = clocks
        cflags += f" -DTESSERA_SYNC_HZ={int(sync_hz)}ULL -DTESSERA_ACCEL_HZ={int(accel_hz)}ULL"
    # keyed by the Verilog's contents: a change of the Python sources that leaves the netlist
    # alone costs the Verilog's generation, not Verilator's build
    directory = BUILD_ROOT / "soc" / f"soc-{_digest(verilog, trace, sources, cflags)}"
    binary = directory / "soc_sim"
    with _locked(directory):
        if binary.exists():
            return binary
        if log:
            log(f"building the SoC simulator with Verilator (cached in {directory}; "
                "a few minutes)")
        command = ["verilator", "--cc", "--exe", "--build", "-j", "2", str(verilog),
                   *map(str, sources), str(HARNESS), "--top-module", "soc",
                   "--Mdir", str(directory / "obj"), "-o", str(binary), "-CFLAGS", cflags,
                   *_VERILATOR_FLAGS]
        if trace:
            command.append("--trace")
        result = subprocess.run(command, capture_output=True, text=True, env=tool_env())
        (directory / "build.log").write_text(result.stdout + result.stderr)
        if result.returncode or not binary.exists():
            raise SocSimError(f"Verilator did not build the SoC simulator; see "
                              f"{directory / 'build.log'}:\n{result.stderr[-3000:]}")
    if log:
        log(f"SoC simulator built in {time.monotonic() - start:.0f} s")
    return binary


def boot_block(firmware):
    """The boot block the boot ROM reads at bus address 0: ``BOOT_MAGIC``, the firmware's
    length in words, the firmware (``firmware``: bytes, padded to whole words)."""
    data = bytes(firmware)
    data += b"\0" * (-len(data) % 4)
    return struct.pack("<II", BOOT_MAGIC, len(data) // 4) + data


@dataclass
class SocRun:
    """What a run returns."""

    exit_code: int
    cycles: int
    timeout: bool
    uart: str
    progress: int
    managers: dict = field(default_factory=dict)    # index -> (bytes read, bytes written)
    dumps: dict = field(default_factory=dict)       # name -> bytes
    seconds: float = 0.0


def run_soc(binary, loads, *, dumps=None, soc=DEFAULT_SOC, divisor=None, max_cycles=10**9,
            latency=2, pause=0.0, seed=1, faults=(), on_progress=None, vcd=None):
    """Run the simulator ``binary``.

    Parameters
    ----------
    loads : sequence of (int, bytes)
        Bus addresses and contents written into external memory before reset (the boot
        block at 0 among them).
    dumps : dict of str -> (int, int)
        Regions (bus address, bytes) to return after the run, by name.
    divisor : int or None
        The UART divisor the firmware uses (for decoding); the configuration's if None.
    max_cycles : int
        Cycle limit (the run reports a timeout past it).
    latency : int
        Cycles from a memory request to its first response.
    pause, seed : float, int
        Random back-pressure: the probability that each memory channel pauses on a cycle,
        and the seed of that pattern.
    faults : sequence of (int, int)
        Address ranges (start, bytes) that answer with an error response.
    on_progress : callable or None
        Called with each new ``SYSCTRL.PROGRESS`` value while the simulation runs.
    vcd : path or None
        Waveform file (needs a simulator built with ``trace=True``).
    """
    dumps = dumps or {}
    with tempfile.TemporaryDirectory(prefix="soc-run-") as tmp:
        tmp = Path(tmp)
        lines = _job_lines(tmp, loads, soc=soc, divisor=divisor, max_cycles=max_cycles,
                           latency=latency, pause=pause, seed=seed, faults=faults)
        lines.append("progress")
        for name, (addr, size) in dumps.items():
            lines.append(f"dump {addr} {size} {tmp / (name + '.dump')}")
        if vcd:
            lines.append(f"vcd {vcd}")
        job = tmp / "job.txt"
        job.write_text("\n".join(lines) + "\n")
        start = time.monotonic()
        with subprocess.Popen([str(binary), str(job)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) as process:
            for line in process.stdout:
                if line.startswith("progress ") and on_progress:
                    on_progress(int(line.split()[1]))
            stderr = process.stderr.read()
            code = process.wait()
        if code:
            raise SocSimError(f"the SoC simulator failed ({code}): {stderr}")
        seconds = time.monotonic() - start
        result = {}
        managers = {}
        for line in (tmp / "result.txt").read_text().splitlines():
            key, *values = line.split()
            if key == "manager":
                managers[int(values[0])] = (int(values[1]), int(values[2]))
            else:
                result[key] = int(values[0])
        return SocRun(exit_code=result["exit_code"], cycles=result["cycles"],
                      timeout=bool(result["timeout"]),
                      uart=(tmp / "uart.txt").read_bytes().decode("latin-1"),
                      progress=result["progress"], managers=managers,
                      dumps={name: (tmp / (name + ".dump")).read_bytes() for name in dumps},
                      seconds=seconds)


def _job_lines(tmp, loads, *, soc, divisor, max_cycles, latency=2, pause=0.0, seed=1,
               faults=()):
    lines = [f"dram {soc.dram_bytes}", f"result {tmp / 'result.txt'}",
             f"uart {tmp / 'uart.txt'}", f"divisor {divisor or soc.uart_divisor}",
             f"max_cycles {max_cycles}", f"latency {latency}", f"pause {pause} {seed}"]
    for k, (addr, data) in enumerate(loads):
        path = tmp / f"load{k}.bin"
        path.write_bytes(bytes(data))
        lines.append(f"load {addr} {path}")
    for addr, size in faults:
        lines.append(f"fault {addr} {size}")
    return lines


class _Session:
    """A running simulator whose UART is on the pseudo-terminal ``pty``."""

    def __init__(self, process, pty, tmp):
        self.process = process
        self.pty = pty
        self._tmp = tmp

    def result(self):
        """The run's result lines (after the simulation ended) as a dict."""
        path = self._tmp / "result.txt"
        if not path.exists():
            return {}
        return {line.split()[0]: int(line.split()[1])
                for line in path.read_text().splitlines() if not line.startswith("manager")}


@contextlib.contextmanager
def start_soc(binary, loads, *, soc=DEFAULT_SOC, divisor=None, max_cycles=10**10, pty=True,
              latency=2, wait=30.0):
    """Start the simulator ``binary`` in the background with its UART on a pseudo-terminal
    (see :func:`run_soc` for ``loads``, ``divisor``, ``max_cycles`` and ``latency``); yields
    a session whose ``pty`` is the terminal's path. On leaving, the simulation is given
    ``wait`` seconds to end by itself (the firmware's exit), then stopped."""
    if not pty:
        raise ValueError("start_soc runs the simulator with its UART on a pseudo-terminal")
    with tempfile.TemporaryDirectory(prefix="soc-board-") as tmp:
        tmp = Path(tmp)
        lines = _job_lines(tmp, loads, soc=soc, divisor=divisor, max_cycles=max_cycles,
                           latency=latency)
        lines.append("pty")
        job = tmp / "job.txt"
        job.write_text("\n".join(lines) + "\n")
        process = subprocess.Popen([str(binary), str(job)], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        try:
            first = process.stdout.readline().split()
            if len(first) != 2 or first[0] != "pty":
                process.kill()
                raise SocSimError(f"the SoC simulator did not open its serial port: "
                                  f"{' '.join(first)} {process.stderr.read()}")
            yield _Session(process, first[1], tmp)
        finally:
            try:
                process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()
            process.stderr.close()
