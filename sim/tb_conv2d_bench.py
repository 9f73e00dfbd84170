"""cocotb module behind ``tessera bench``'s conv2d and FC benchmarks (``sw.conv2d_bench``,
``sw.fc_bench``; ``TESSERA_BENCH_DATAPATH`` names the datapath whose core is watched, default
``conv2d``): runs each
program of a case file on the accelerator with memory that never pauses (one beat per cycle
after AxiRam's latency), checks the memory image against the golden model and records the
accelerator's own counters.

Not a test: ``sw.conv2d_bench`` writes the cases (``TESSERA_BENCH_CASES``, a pickle of
``[(name, Program)]``) and reads the results (``TESSERA_BENCH_RESULTS``, JSON).
"""

import json
import os
import pickle

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly

from sim.accelerator_host import AcceleratorHost
from sim.runner import Design


class MacMonitor:
    """Watches the compute core's ``mac`` output: the cycles from the first to the last MAC
    of a run and how many of them issued a MAC, so the idle cycles *between* commands can be
    told from the pipeline's fill (before the first MAC) and drain (after the last)."""

    def __init__(self, dut):
        datapath = os.environ.get("TESSERA_BENCH_DATAPATH", "conv2d")
        self.mac = getattr(dut.inner, f"datapath_{datapath}").core.mac
        self.clk = dut.clk
        self.reset()

    def reset(self):
        self.cycle = 0
        self.first = self.last = None

    async def run(self):
        while True:
            await FallingEdge(self.clk)
            await ReadOnly()
            self.cycle += 1
            if self.mac.value == 1:
                if self.first is None:
                    self.first = self.cycle
                self.last = self.cycle

    @property
    def span(self):
        return 0 if self.first is None else self.last - self.first + 1


@cocotb.test()
async def measure(dut):
    with open(os.environ["TESSERA_BENCH_CASES"], "rb") as f:
        cases = pickle.load(f)
    component = Design.from_env().build()
    size = max(len(program.memory) for _, program in cases)
    host = AcceleratorHost(dut, component.config, memory_bytes=-(-size // 4096) * 4096)
    await host.reset()
    monitor = MacMonitor(dut)
    cocotb.start_soon(monitor.run())
    results = []
    for name, program in cases:
        memory, status = program.run_golden()
        monitor.reset()
        run = await host.run(program.memory, program.desc_addr, program.count,
                             timeout_cycles=50_000_000)
        results.append({
            "name": name, "cycles": run.cycles, "mac_cycles": run.mac_cycles,
            "tiles": run.tiles, "bytes_read": run.bytes_read, "mac_span": monitor.span,
            "bytes_written": run.bytes_written,
            "exact": bool(run.done and status.done
                          and np.array_equal(run.memory, memory)
                          and (run.mac_cycles, run.bytes_read, run.bytes_written)
                          == (status.mac_cycles, status.bytes_read, status.bytes_written)),
        })
        dut._log.info("%s: %d cycles, exact %s", name, run.cycles, results[-1]["exact"])
    with open(os.environ["TESSERA_BENCH_RESULTS"], "w") as f:
        json.dump(results, f, indent=1)
