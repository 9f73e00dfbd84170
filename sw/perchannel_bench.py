"""Cycle benchmark of the per-channel datapath RTL (Verilator), for ``tessera bench``.

Every DepthwiseConv2D of DS-CNN and VWW and the AveragePool2D and Add layers of ResNet-8,
DS-CNN and VWW, with their real weights and inputs from golden runs of the networks, compiled
by ``sw.perchannel_compile`` for :data:`BENCH_CONFIG` and run from their descriptor lists
through ``sim/tb_conv2d_bench.py`` (memory answering one 64-bit beat per cycle after AxiRam's
latency). The accelerator's counters give cycles, MAC cycles and bytes; every run's memory
image is compared with the golden model's.

Definitions (per layer): *MACs* are the layer's multiply-accumulates (depthwise: outputs x
channels x kernel taps; pool: inputs; add: none); *utilisation* = MACs / (cycles x lanes x
products per ST operation), the issue's definition; *core utilisation* = the same over the
cycles from the first to the last MAC only; *idle* = cycles between the first and the last
MAC in which no MAC issued (command overhead and window starts).
"""

from dataclasses import dataclass, field

import numpy as np

from hls_ref.config import PERCHANNEL_CONFIG
from hls_ref.descriptor import Mode
from hls_ref.precision import Precision
from sim.runner import Design

from .perchannel_compile import CYCLE_SLACK
from .perchannel_fixtures import model_perchannel_programs

__all__ = ["BENCH_CONFIG", "PerChannelBenchCase", "main", "perchannel_cases"]

#: The benchmark's build: the per-channel datapath alone, 8 lanes.
BENCH_CONFIG = PERCHANNEL_CONFIG

#: Models and the kinds of their layers in the benchmark.
MODELS = (("dscnn", None), ("vww", None), ("resnet8", None))


@dataclass
class PerChannelBenchCase:
    model: str
    layer: str
    mode: Mode
    precision: Precision
    macs: int
    program: object
    reference_exact: bool = True
    result: dict = field(default=None)

    @property
    def name(self):
        return f"{self.model} {self.layer}"

    def _slots(self, cycles):
        return cycles * BENCH_CONFIG.depthwise.lanes * self.precision.lanes

    @property
    def utilisation(self):
        return self.macs / self._slots(self.result["cycles"])

    @property
    def core_utilisation(self):
        span = self.result["mac_span"]
        return self.macs / self._slots(span) if span else 0.0

    @property
    def idle(self):
        return self.result["mac_span"] - self.result["mac_cycles"]


def _macs(program):
    """The multiply-accumulates of a layer's descriptor list (``hls_ref.perchannel``)."""
    from hls_ref.perchannel import geometry

    total = 0
    for d in program.descriptors:
        geo = geometry(d)
        if geo.mode == Mode.DEPTHWISE:
            total += geo.out_h * geo.out_w * d.out_c * d.kernel_h * d.kernel_w
        elif geo.mode == Mode.AVGPOOL:
            total += geo.pixels * d.out_c
    return total


def perchannel_cases(config=BENCH_CONFIG):
    """The benchmark's cases (see the module docstring)."""
    cases = []
    for model, _ in MODELS:
        for name, program, _, want in model_perchannel_programs(model, config):
            memory, _ = program.run_golden()
            exact = np.array_equal(program.output(memory), want)
            d = program.descriptors[0]
            cases.append(PerChannelBenchCase(model, name, Mode(d.mode), Precision(d.precision),
                                             _macs(program), program, exact))
    return cases


def _design(config):
    s = config.depthwise
    name = f"perchannel_l{s.lanes}_p{s.plm_pixels}_a{s.acc_pixels}"
    return Design(name, "hdl.accelerator:accelerator", {"config": config.as_dict()})


def run_cases(cases, config=BENCH_CONFIG, *, log=print):
    """Run every case on Verilator; fills ``case.result``."""
    from .conv2d_bench import run_on_design

    return run_on_design(_design(config), cases, datapath="depthwise", log=log)


def _exact(case):
    return "yes" if case.result["exact"] and case.reference_exact else "NO"


def layer_table(cases):
    lines = ["| model | layer | mode | commands | MACs | cycles | MAC cycles | idle | "
             "utilisation | core utilisation | bytes read | bytes written | bit-exact |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        r = c.result
        util = f"{c.utilisation:.1%}" if c.macs else "-"
        core = f"{c.core_utilisation:.1%}" if c.macs else "-"
        lines.append(f"| {c.model} | {c.layer} | {c.mode.name.lower()} | {r['tiles']} | "
                     f"{c.macs:,} | {r['cycles']:,} | {r['mac_cycles']:,} | {c.idle:,} | "
                     f"{util} | {core} | {r['bytes_read']:,} | {r['bytes_written']:,} | "
                     f"{_exact(c)} |")
    return "\n".join(lines)


def main(*, write_results=False):
    """Run the benchmark, print the table, optionally rewrite docs/results.md. Returns True
    if every run was bit-exact."""
    cases = run_cases(perchannel_cases())
    table = layer_table(cases)
    print(table + "\n")
    if write_results:
        from sim.results import write_results_section

        write_results_section("bench-perchannel", _section(table))
        print("wrote docs/results.md")
    return all(_exact(c) == "yes" for c in cases)


def _section(table):
    s = BENCH_CONFIG.depthwise
    return "\n".join([
        "## Per-channel datapath: cycles on the RTL (Verilator)", "",
        "Regenerate with `make bench` (`tessera bench --write-results`). A build of the "
        f"per-channel datapath alone ({s.lanes} lanes, {s.banks} bank(s) of input PLM of "
        f"{s.plm_pixels} pixels and of output buffer of {s.acc_pixels} pixels, a store of "
        f"{s.store_elements} requantizers); every layer compiled by "
        "`sw.perchannel_compile` and run from its descriptor list, with AxiRam answering one "
        "64-bit beat per cycle after its latency; cycles, MAC cycles, commands and bytes are "
        "the accelerator's own counters (one list per layer). MACs = outputs x channels x "
        "kernel taps (a pool: its inputs); utilisation = MACs / (cycles x lanes x products per "
        "ST operation); core utilisation: the same over the cycles from the first to the last "
        "MAC; idle = cycles in that span without a MAC. "
        + ("With two banks a command's loads overlap the previous command's compute and its "
           "compute the previous command's store, and a depthwise command's window fills "
           "while the previous depthwise command drains; the compiler estimates that overlap "
           "(`sw.perchannel_compile.schedule_cycles`) and takes the row stripe that reads "
           f"the fewest beats among those within {CYCLE_SLACK:.0%} of the fewest estimated "
           "cycles. "
           if s.banks == 2 else
           "With one bank a command's loads overlap the previous command's store only; its "
           "compute waits for that store. ")
        + "Bit-exact: the memory image and counters equal the golden model's and the "
        "golden output equals the golden network run's (itself LiteRT-exact).", "",
        table])
