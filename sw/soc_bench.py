"""Whole networks on the RTL SoC for ``tessera demo`` and ``tessera bench``: every model
compiled for the default build, run in Verilator on a seeded random input, every layer
compared with LiteRT's reference kernels and every accelerator layer's bus bytes with the
compiler's prediction."""

import time
from dataclasses import dataclass

import numpy as np

__all__ = ["DEMO_MODELS", "MODELS", "ModelResult", "demo_models", "run_model_on_soc", "soc_bench",
           "summary_table"]

#: The MLPerf Tiny models, fastest first.
MODELS = ("resnet8", "dscnn", "autoencoder", "vww")
#: Those ``tessera demo`` runs: all four (on the default build, whose accelerator runs every
#: layer but Softmax, VWW takes seconds too).
DEMO_MODELS = MODELS

#: Published MLPerf Tiny latencies (ms; docs/results.md cites them), per model.
PUBLISHED = {
    "resnet8": "fpgaConvNet ZC706 0.147, ZedBoard 0.411; GAP9 0.616; RA8D1 8.48",
    "dscnn": "fpgaConvNet ZedBoard 0.324; GAP9 0.475; NDP9120 1.48; STM32H7A3 11.3",
    "vww": "fpgaConvNet ZC706 0.72; GAP9 1.12; RA8D1 13.4",
    "autoencoder": "hls4ml AD08 0.019 (open); GAP9 0.176; STM32H7 1.23",
}


@dataclass
class ModelResult:
    """One model's RTL run, checked."""

    model: str
    image: object
    run: object
    prediction: object
    mismatches: int          # elements differing from LiteRT, over every layer output
    elements: int
    bytes_exact: int         # accelerator layers whose bus bytes equal the prediction
    accelerator_layers: int
    wall: float              # seconds, compile + golden + simulation

    @property
    def accelerator_cycles(self):
        return sum(r.acc_cycles or 0 for r in self.run.records)

    @property
    def processor_cycles(self):
        return sum(r.cycles for layer, r in zip(self.image.layers, self.run.records)
                   if layer.accelerator is None)

    @property
    def sequencing_cycles(self):
        """Whole-network cycles the accelerators are not busy: the processor's layers and its
        work between layers and around each list (registers, interrupt, counters)."""
        return self.run.cycles - self.accelerator_cycles

    @property
    def busy_ratio(self):
        """Whole-network cycles over the accelerators' busy cycles (the target: 1.05 or
        less); None without accelerator layers."""
        busy = self.accelerator_cycles
        return self.run.cycles / busy if busy else None

    @property
    def ok(self):
        return self.mismatches == 0 and self.bytes_exact == self.accelerator_layers


def run_model_on_soc(model, *, seed=0, soc=None, log=None):
    """Compile ``model``, run it on the RTL SoC and check it (see the module docstring)."""
    from hls_ref.config import DEFAULT_SOC

    from .compare import random_input
    from .litert import ReferenceRuntime
    from .soc_image import compile_model
    from .soc_run import run_golden, run_rtl
    from .tflite_import import load_model

    start = time.monotonic()
    image = compile_model(model, soc or DEFAULT_SOC, reuse_buffers=False)
    graph = load_model(model)
    x = random_input(graph.input, np.random.default_rng(seed))
    prediction = run_golden(image, x, graph=graph)
    run = run_rtl(image, x, log=log)
    reference = ReferenceRuntime(model)
    reference.run(x)
    mismatches = sum(int(np.sum(np.asarray(t) != reference.tensor(name)))
                     for name, t in run.tensors.items())
    elements = sum(np.asarray(t).size for t in run.tensors.values())
    pairs = [(r.bus_read, r.bus_written) == (p.bus_read, p.bus_written)
             for layer, r, p in zip(image.layers, run.records, prediction.records)
             if layer.accelerator is not None]
    return ModelResult(model, image, run, prediction, mismatches, elements, sum(pairs),
                       len(pairs), time.monotonic() - start)


def summary_table(results):
    """One row per model (Markdown)."""
    clocks = {r.image.soc.clock_hz for r in results} or {100_000_000}
    mhz = "/".join(f"{c / 1e6:g}" for c in sorted(clocks))
    lines = [f"| model | layers (accelerator / processor) | cycles | ms at {mhz} MHz | "
             "accelerator busy | processor layers | processor and sequencing | "
             "cycles / busy | MACs/cycle | bus bytes = prediction | "
             "LiteRT mismatches | simulated cycles/s | wall s | published (ms) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    for r in results:
        image, run = r.image, r.run
        accel = sum(layer.accelerator is not None for layer in image.layers)
        macs = sum(layer.macs for layer in image.layers)
        clock = image.soc.clock_hz
        ratio = "—" if r.busy_ratio is None else f"{r.busy_ratio:.3f}"
        lines.append(
            f"| {r.model} | {accel} / {len(image.layers) - accel} | {run.cycles:,} | "
            f"{run.cycles / clock * 1e3:.2f} | {r.accelerator_cycles:,} | "
            f"{r.processor_cycles:,} | {r.sequencing_cycles:,} | {ratio} | "
            f"{macs / run.cycles:.2f} | "
            f"{r.bytes_exact} of {r.accelerator_layers} layers | "
            f"{r.mismatches} of {r.elements:,} | "
            f"{run.sim_cycles / max(run.seconds, 1e-9) / 1e3:.0f} k | {r.wall:.0f} | "
            f"{PUBLISHED.get(r.model, '')} |")
    return "\n".join(lines)


def demo_models(models=MODELS, out=print):
    """``tessera demo``'s whole-network part: returns True when every model is bit-exact with
    LiteRT on every layer and every accelerator layer's bytes equal the prediction."""
    results = []
    for model in models:
        out(f"  {model} ...")
        result = run_model_on_soc(model, log=None)
        out(f"  {model}: {result.run.cycles:,} cycles, LiteRT mismatches {result.mismatches} "
            f"of {result.elements:,}, simulated in {result.run.seconds:.0f} s")
        results.append(result)
    out(summary_table(results))
    return all(r.ok for r in results)


def soc_bench(models=MODELS, *, write_results=False, out=print):
    """``tessera bench``'s whole-network rows: the summary, each model's per-layer table and
    (with ``write_results``) a per-layer figure in docs/img/ and the section of
    docs/results.md. Returns True when every run checked out."""
    from sim.toolchain import PROJECT_ROOT

    from .soc_plot import plot_layers
    from .soc_run import format_table

    results = []
    sections = []
    for model in models:
        out(f"whole network on the RTL SoC: {model}")
        result = run_model_on_soc(model)
        results.append(result)
        table = format_table(result.image, result.run, prediction=result.prediction)
        out(table)
        sections.append((model, table))
        if write_results:
            path = PROJECT_ROOT / "docs" / "img" / f"soc_{model}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            plot_layers(result.image, result.run, path)
    summary = summary_table(results)
    out(summary)
    mhz = "/".join(f"{c / 1e6:g}" for c in sorted({r.image.soc.clock_hz for r in results}))
    if write_results:
        from sim.results import write_results_section

        text = ["## Whole networks on the RTL SoC (Verilator)", "",
                "Regenerate with `make bench` (`tessera bench --write-results`; one model: "
                "`tessera run MODEL --backend rtl --compare-litert`). The default SoC build "
                "(Minerva RV32IM + one accelerator with the 16-PE conv2d, 8-lane per-channel "
                "and 4-PE FC datapaths, `docs/soc.md`) runs each model on a seeded random "
                "input: the accelerator runs every layer but Softmax (the processor's) and "
                "Reshape (a view of its input). Cycles are the firmware's per layer (from the "
                "previous layer's end to this one's: they add up to the whole network's, the "
                "firmware's work between layers included); accelerator busy is the sum of the "
                "accelerator's own CYCLES counter over the layers (each list from its start "
                "to its end); processor and sequencing = whole-network cycles - busy (the "
                "processor's layers, its work between layers, register writes and the "
                "interrupt); cycles / busy is the 5% target's ratio (1.05 or less). "
                "Utilisation = MACs / (cycles x the datapath's ST multipliers x 2 products: "
                "16 conv2d PEs, 8 per-channel lanes, 4 FC PEs x 2 units); DRAM bytes are "
                "counted on the external-memory port, next to the compiler's prediction (the "
                "same image executed on the golden models). Latency is cycles at the "
                f"{mhz} MHz the build is timed for: the SoC's own Fmax is not measured (the "
                "conv2d datapath's build alone: the section \"Synthesis: conv2d\" below; "
                "the FC datapath's 63.1 MHz: the section \"FC datapath\").", "",
                summary]
        for model, table in sections:
            text += ["", f"**{model}** (`docs/img/soc_{model}.png`)", "", table]
        write_results_section("bench-soc", "\n".join(text))
    return all(r.ok for r in results)
