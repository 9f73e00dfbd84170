"""The NVE on the SoC (``SocConfig.nve``) in Verilator: the firmware (``firmware/tests/
test_nve.c`` with the driver ``firmware/nve.c``) loads programs the NVE code generator emits
for face-detection's and speed-sign's row bands, streams their input and reads their output
through registers; the host compares every output word with the instruction-set simulator and
the NVE's issue cycles with the simulator's. A program with an illegal word is reported by the
firmware with the NVE's error. Slow tier: the SoC simulator with an NVE is its own Verilator
build (minutes)."""

import pytest

from hls_ref.config import SocConfig
from hls_ref.nve.asm import assemble
from hls_ref.nve.isa import ErrorCode, NveConfig, Program
from sim.nve_programs import cached_band_jobs
from sim.soc_sim import boot_block, build_simulator, run_soc
from sw.firmware import build_firmware
from sw.nve.soc import JOB_TABLE, compare, job_table, read_result

pytestmark = [pytest.mark.cocotb, pytest.mark.slow]

#: A processor-only SoC with the NVE.
NVE_SOC = SocConfig(accelerators=(), nve=NveConfig())


def test_firmware_runs_generated_nve_bands_bit_exact_with_the_iss():
    bands = [job for network in ("face-detection", "speed-sign")
             for job in cached_band_jobs(network)[:2]]
    good = assemble("nop\nnop\nnop\nnop\n")
    bad = Program((*good.words[:2], 5 << 5, *good.words[3:]), good.settings)
    runs = [(job.program, job.data) for job in bands] + [(bad, (1, 2, 3))] + [
        (bands[0].program, bands[0].data)]
    loads, results = job_table(runs)
    firmware = build_firmware(NVE_SOC, "test_nve",
                              {"nve_jobs.h": f"#define NVE_JOBS 0x{JOB_TABLE:x}u\n"})
    simulator = build_simulator(NVE_SOC)
    run = run_soc(simulator, [(0, boot_block(firmware.read_bytes())), *loads], soc=NVE_SOC,
                  dumps={f"r{k}": region for k, region in enumerate(results)},
                  max_cycles=50_000_000)
    print(run.uart)
    assert run.exit_code == 0 and not run.timeout, run.uart
    got = [read_result(run.dumps[f"r{k}"]) for k in range(len(runs))]
    for (program, data), result, job in zip(runs, got, [*bands, None, bands[0]]):
        assert compare(program, data, result) == [], (job and job.name, result)
    for job, result in zip(bands, got):
        assert result.outputs > 0 and result.sent == len(job.program.words) + len(job.data)
        print(f"{job.name}: {result.sent} words in, {result.outputs} out, CYCLES "
              f"{result.cycles} STALLS {result.stalls} BUSY_CYCLES {result.busy_cycles}, "
              f"processor {result.cpu_cycles} cycles")
    refused = got[len(bands)]
    assert (refused.error_code, refused.error_pc) == (ErrorCode.ILLEGAL_INSTRUCTION, 2)
    assert f"job {len(bands)}: 0 words out" in run.uart
    assert f"NVE error {int(ErrorCode.ILLEGAL_INSTRUCTION)} at pc 2 cycle 0" in run.uart
    # the words the refused run left behind did not reach the next (its stalls depend on the
    # processor's timing, its issue cycles do not)
    again = got[-1]
    assert again.words == got[0].words and again.sent == got[0].sent
    assert again.cycles - again.stalls == got[0].cycles - got[0].stalls
