"""cocotb regression of the NVE RTL (``hdl.nve``) on Icarus and Verilator: in lockstep with the
instruction-set simulator on the hazard programs, random legal programs and the code
generator's programs for the seed's networks, and its host interface
(``tests/cocotb/tb_nve.py``).

The design is built with its retire trace and elaborated for the ECP5 (each lane's multiplier
a MULT18X18D with its registers, the local buffer DP16KD blocks, simulated with their
models), as synthesis builds it. Both simulators run 20,000 random bundles in the CI tier;
Icarus, several times slower than Verilator, runs the networks' programs only in the slow
tier, which also runs a million random bundles on each simulator (in seeded parts that
pytest-xdist runs in parallel) and the first and last whole row band of every network program
on both.
"""

import json
import pickle
import random

import pytest

from sim.nve_programs import Job, cached_band_jobs, directed_jobs, hazard_jobs, random_program
from sim.runner import Design, default_seed, run_cocotb

pytestmark = pytest.mark.cocotb

DESIGN = Design("nve_trace", "hdl.nve:nve", {"trace": True}, "ecp5")

#: Random bundles (executed instructions) per simulator in the CI tier and the slow tier. Icarus,
#: the slower simulator, runs half as many in the CI tier (about 45 s less of its 20-minute
#: budget); the slow tier runs a million on each.
RANDOM_BUNDLES = {"verilator": 20_000, "icarus": 10_000}
SLOW_BUNDLES = {"verilator": 1_000_000, "icarus": 1_000_000}
#: The slow tier's random bundles come in this many parts, each its own test with its own
#: seed, so that ``make test-full``'s workers share them.
SLOW_PARTS = 10


def random_jobs(bundles, seed, *, flow_control=True):
    """Random legal programs (straight-line and loops) until ``bundles`` instructions; every
    fourth with random idle input and refused output cycles."""
    rng = random.Random(seed)
    jobs, total = [], 0
    while total < bundles:
        k = len(jobs)
        program, data = random_program(rng, loop=k % 3 == 2)
        flow = flow_control and k % 4 == 3
        jobs.append(Job(f"random {seed}/{k}", program, data, strict=False,
                        idle=0.3 if flow else 0.0, stall=0.3 if flow else 0.0))
        s = program.settings
        body = program.loop_end + 1 - s.loop_start
        total += program.size - body + body * s.iterations
    return jobs, total


def _band_jobs(short):
    return (cached_band_jobs("face-detection", short=short) +
            cached_band_jobs("speed-sign", short=short))


def _run(sim, tmp_path, jobs):
    path, summary = tmp_path / "jobs.pkl", tmp_path / "summary.json"
    path.write_bytes(pickle.dumps(list(jobs)))
    run_cocotb(DESIGN, "tests.cocotb.tb_nve", sim=sim, testcase="lockstep",
               extra_env={"TESSERA_NVE_JOBS": str(path), "TESSERA_NVE_SUMMARY": str(summary)})
    return json.loads(summary.read_text())


def test_nve_lockstep(sim, tmp_path):
    """Every hazard program, the directed corners and random legal programs, and on Verilator
    every program of both networks on a short row (realistic and exact data): 0
    mismatches."""
    randoms, bundles = random_jobs(RANDOM_BUNDLES[sim], default_seed())
    jobs = hazard_jobs() + directed_jobs(random.Random(default_seed())) + randoms
    if sim == "verilator":
        jobs += _band_jobs(True)
    result = _run(sim, tmp_path, jobs)
    print(f"{sim}: {len(jobs)} jobs, {result['records']} retire records compared, "
          f"{result['mismatches']} mismatches")
    assert result["mismatches"] == 0 and result["jobs"] == len(jobs)
    assert bundles >= RANDOM_BUNDLES[sim]


def test_nve_host_interface(sim):
    assert run_cocotb(DESIGN, "tests.cocotb.tb_nve", sim=sim, testcase="host_interface") == 1


@pytest.mark.slow
@pytest.mark.parametrize("part", range(SLOW_PARTS))
def test_nve_lockstep_random_million(sim, part, tmp_path):
    """Part ``part`` of the slow tier's random bundles (seed: the CI tier's + 1 + part)."""
    wanted = SLOW_BUNDLES[sim] // SLOW_PARTS
    randoms, bundles = random_jobs(wanted, default_seed() + 1 + part)
    result = _run(sim, tmp_path, randoms)
    print(f"{sim} part {part}: {bundles} random bundles, {result['records']} records "
          f"compared, {result['mismatches']} mismatches")
    assert result["mismatches"] == 0 and result["jobs"] == len(randoms)
    assert bundles >= wanted


@pytest.mark.slow
def test_nve_lockstep_networks(sim, tmp_path):
    """Every distinct program of both networks on a short row and on the first and last
    whole row band of its layer."""
    result = _run(sim, tmp_path, _band_jobs(True) + _band_jobs(False))
    print(f"{sim}: {result['records']} records compared, {result['mismatches']} mismatches")
    assert result["mismatches"] == 0
