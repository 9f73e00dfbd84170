"""The NVE RTL on the code generator's row bands: cycles next to the simulator's.

``python -m sim.nve_rtl_bands [--sim verilator] [--write-results]`` runs the first and the
last whole row band of every distinct program the code generator emits for the seed's two
networks on the RTL (``hdl.nve``, in lockstep with :mod:`hls_ref.nve.iss`: every retire
record and output word compared), and prints per band the simulator's cycles, the RTL's
``CYCLES`` (which must equal them) and ``BUSY_CYCLES`` (start to ``done``: the instruction
load, the pipeline's fill and drain). ``--write-results`` rewrites the ``nve-rtl`` section of
``docs/results.md``.
"""

import argparse
import json
import pickle
import sys
import tempfile
import time
from pathlib import Path

from hls_ref.nve.iss import run

from .nve_programs import cached_band_jobs
from .runner import Design, run_cocotb

__all__ = ["main", "table"]

DESIGN = Design("nve_trace", "hdl.nve:nve", {"trace": True}, "ecp5")


def table(jobs, summary):
    """Markdown: per band, the simulator's cycles, the RTL's CYCLES and BUSY_CYCLES."""
    lines = ["| band | program | ISS cycles | RTL CYCLES | equal | RTL BUSY_CYCLES | "
             "overhead |", "|---|---:|---:|---:|---|---:|---:|"]
    for job, (name, cycles, busy, _, _) in zip(jobs, summary["cycles"]):
        iss = run(job.program, job.data).cycles
        lines.append(f"| {name} | {job.program.size} | {iss:,} | {cycles:,} | "
                     f"{'yes' if cycles == iss else 'NO'} | {busy:,} | {busy - cycles:,} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.nve_rtl_bands", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sim", default="verilator", choices=("verilator", "icarus"))
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    jobs = (cached_band_jobs("face-detection", short=False) +
            cached_band_jobs("speed-sign", short=False))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "jobs.pkl", Path(tmp) / "summary.json"
        path.write_bytes(pickle.dumps(jobs))
        run_cocotb(DESIGN, "tests.cocotb.tb_nve", sim=args.sim, testcase="lockstep",
                   extra_env={"TESSERA_NVE_JOBS": str(path), "TESSERA_NVE_SUMMARY": str(out)})
        summary = json.loads(out.read_text())
    seconds = time.perf_counter() - start
    text = table(jobs, summary)
    print(text)
    print(f"\n{summary['records']:,} retire records compared, {summary['mismatches']} "
          f"mismatches ({args.sim}, {seconds:.0f} s)")
    if args.write_results:
        from boards.synth import write_results_section
        write_results_section("nve-rtl", "\n".join([
            "## NVE RTL on the networks' row bands",
            "",
            f"Regenerate with `python -m sim.nve_rtl_bands --write-results` ({args.sim}). The "
            "first and the last whole row band of every distinct program the code generator "
            "emits for the seed's networks, run on `hdl.nve` in lockstep with the "
            "instruction-set simulator (every retire record and output word compared: "
            f"{summary['records']:,} records, {summary['mismatches']} mismatches). *RTL "
            "CYCLES* counts from the first issued instruction to the last, as the simulator "
            "does; *BUSY_CYCLES* from the start to `done`, so *overhead* is the program load "
            "(one cycle per instruction word), the pipeline's fill and drain and the last "
            "output word.",
            "",
            text]))
        print("wrote docs/results.md")
    return 0 if summary["mismatches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
