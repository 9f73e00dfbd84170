"""Cycle benchmark of the FC datapath RTL (Verilator), for ``tessera bench``.

Every case is a descriptor list built by ``sw.program.fc_program`` with the tiles the FC
tiling compiler (``sw.tiling.fc``) chooses, run on an FC-only build of the accelerator
(:data:`BENCH_CONFIG`) through ``sim/tb_conv2d_bench.py`` with memory that answers one
64-bit beat per cycle after AxiRam's latency. The accelerator's own counters give the
figures; every run's memory image is compared with the golden model's.

* **MLPerf Tiny FC layers** -- every FullyConnected layer of ResNet-8, DS-CNN, VWW and the
  anomaly-detection autoencoder with its real weights and inputs from golden runs of the
  network (batch 1; the autoencoder also batch 8: eight network inputs);
* **a8w4** -- the autoencoder's layers with 4-bit weights (the real weights divided by 17 and
  rounded, the scale multiplied by 17: the same work on half the weight bytes; the outputs
  are checked against the golden model only, not LiteRT, which has no 4-bit weights).

Definitions (per case): *weight bytes* are the layer's weights at their width (outputs x
inputs x weight bits / 8); *bus efficiency* = weight bytes / (cycles x 8 bytes per beat),
the fraction of the bus limit of one beat of weights per cycle; *PE utilisation* = MAC
cycles / cycles (a MAC cycle is one in which every PE multiplies ``st_units`` ST words).
"""

from dataclasses import dataclass, field, replace

import numpy as np

from hls_ref.config import FC_CONFIG
from hls_ref.formats import QuantBlock
from hls_ref.precision import Precision
from sim.runner import Design

from .fixtures import model_fc_layers
from .program import fc_program

__all__ = ["BENCH_CONFIG", "FCBenchCase", "fc_cases", "main"]

#: The FC-only build of the benchmark: the FC datapath's default section (4 PEs of 2 ST
#: units: 16 products per cycle, one 64-bit beat of 4-bit weights per cycle).
BENCH_CONFIG = FC_CONFIG

#: MLPerf Tiny's published anomaly-detection latencies (v1.0 closed and open division), for
#: context beside the autoencoder's figure.
PUBLISHED_AD_MS = (("GAP9 (closed division)", 0.176), ("STM32H7 (closed division)", 1.23),
                   ("hls4ml AD08 on Pynq-Z2, whole model in fabric (open division)", 0.019))

MODELS = ("resnet8", "dscnn", "vww", "autoencoder")
#: The divisor that takes the real int8 weights to the 4-bit range (127 / 17 < 7.5).
_W4_DIVISOR = 17


@dataclass
class FCBenchCase:
    model: str
    layer: str
    precision: Precision
    batch: int
    program: object
    weight_bytes: int
    reference_exact: bool = True
    result: dict = field(default=None)

    @property
    def name(self):
        return f"{self.model} {self.layer} {self.precision.label} x{self.batch}"

    @property
    def bus_efficiency(self):
        return self.weight_bytes / (self.result["cycles"] * 8)

    @property
    def bus_ceiling(self):
        """Weight bytes / bytes read: the bus efficiency of the list if every cycle moved a
        beat (the descriptor, the input vectors and the quantization block share the bus)."""
        return self.weight_bytes / self.result["bytes_read"]

    @property
    def utilisation(self):
        return self.result["mac_cycles"] / self.result["cycles"]


def _program(x, weights, qblock, cmd, config):
    from .tiling.fc import fc_tiling

    t = fc_tiling("bench", x.shape[0], x.shape[1], weights.shape[0], cmd.precision, config)
    return fc_program(x, weights, qblock, cmd, config, out_splits=t.out_splits,
                      in_splits=t.in_splits, batch_splits=t.batch_splits)


def _a8w4(x, layer, config):
    """The a8w4 program of an a8w8 layer: weights divided by :data:`_W4_DIVISOR` and
    rounded, the bias refolded, the scale multiplied alike."""
    w, qb, zp = layer.weights, layer.qblock, layer.command.pad_value
    w4 = np.clip(np.round(w / _W4_DIVISOR), -8, 7).astype(np.int64)
    bias = qb.bias + zp * w.sum(axis=1) - zp * w4.sum(axis=1)
    q4 = QuantBlock(qb.zero_point, qb.act_min, qb.act_max, bias, qb.multiplier, qb.shift,
                    qb.real_scale * _W4_DIVISOR)
    return _program(x, w4, q4, replace(layer.command, precision=Precision.A8W4), config)


def fc_cases(config=BENCH_CONFIG):
    """The benchmark's cases (see the module docstring)."""
    cases = []
    for model in MODELS:
        for batch in (1, 8) if model == "autoencoder" else (1,):
            for name, x, layer, want in model_fc_layers(model, vectors=batch):
                program = _program(x, layer.weights, layer.qblock, layer.command, config)
                memory, _ = program.run_golden()
                exact = np.array_equal(program.output(memory)[:, 0, :], want)
                size = layer.weights.size
                cases.append(FCBenchCase(model, name, Precision.A8W8, batch, program, size,
                                         exact))
                if model == "autoencoder":
                    cases.append(FCBenchCase(model, name, Precision.A8W4, batch,
                                             _a8w4(x, layer, config), -(-size // 2)))
    return cases


def _design(config):
    fc = config.fc
    name = f"fc_p{fc.pes}_u{fc.st_units}_b{fc.max_batch}_i{fc.plm_in_words}"
    return Design(name, "hdl.accelerator:accelerator", {"config": config.as_dict()})


def run_cases(cases, config=BENCH_CONFIG, *, log=print):
    """Run every case on Verilator; fills ``case.result``."""
    from .conv2d_bench import run_on_design

    return run_on_design(_design(config), cases, datapath="fc", log=log)


def _exact(case):
    return "yes" if case.result["exact"] and case.reference_exact else "NO"


def layer_table(cases):
    lines = ["| model | layer | precision | batch | commands | weight bytes | cycles | "
             "MAC cycles | PE utilisation | bytes read | bus efficiency | bus ceiling | "
             "bit-exact |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        r = c.result
        lines.append(f"| {c.model} | {c.layer} | {c.precision.label} | {c.batch} | "
                     f"{r['tiles']} | {c.weight_bytes:,} | {r['cycles']:,} | "
                     f"{r['mac_cycles']:,} | {c.utilisation:.1%} | {r['bytes_read']:,} | "
                     f"{c.bus_efficiency:.1%} | {c.bus_ceiling:.1%} | {_exact(c)} |")
    return "\n".join(lines)


def autoencoder_totals(cases):
    """``{(precision, batch): (cycles, MAC cycles, weight bytes, worst layer's bus
    efficiency, all exact)}`` over the autoencoder's ten layers."""
    totals = {}
    for c in cases:
        if c.model != "autoencoder":
            continue
        cycles, macs, wbytes, worst, exact = totals.get((c.precision, c.batch),
                                                        (0, 0, 0, 1.0, True))
        totals[c.precision, c.batch] = (cycles + c.result["cycles"],
                                        macs + c.result["mac_cycles"],
                                        wbytes + c.weight_bytes,
                                        min(worst, c.bus_efficiency),
                                        exact and _exact(c) == "yes")
    return totals


def totals_table(totals):
    base = totals.get((Precision.A8W8, 1))
    lines = ["| precision | batch | cycles | cycles per inference | weight bytes | bus "
             "efficiency (whole) | bus efficiency (worst layer) | PE utilisation | "
             "speed-up vs a8w8 | bit-exact |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for (p, batch), (cycles, macs, wbytes, worst, exact) in sorted(
            totals.items(), key=lambda kv: (kv[0][1], kv[0][0].value)):
        same_batch = totals.get((Precision.A8W8, batch), base)
        lines.append(f"| {p.label} | {batch} | {cycles:,} | {cycles / batch:,.0f} | "
                     f"{wbytes:,} | {wbytes / (cycles * 8):.1%} | {worst:.1%} | "
                     f"{macs / cycles:.1%} | {same_batch[0] / cycles:.2f}x | "
                     f"{'yes' if exact else 'NO'} |")
    return "\n".join(lines)


def latency_table(totals, fmax_mhz):
    """The autoencoder's latency per inference at ``fmax_mhz`` beside MLPerf Tiny's published
    anomaly-detection results."""
    lines = ["| system | latency per inference (ms) |", "|---|---:|"]
    for (p, batch), (cycles, *_rest) in sorted(totals.items(),
                                               key=lambda kv: (kv[0][1], kv[0][0].value)):
        lines.append(f"| this FC datapath, {p.label}, batch {batch}, {fmax_mhz:.1f} MHz "
                     f"(ECP5-85F, measured Fmax) | {cycles / batch / (fmax_mhz * 1e3):.3f} |")
    lines += [f"| {name} | {ms} |" for name, ms in PUBLISHED_AD_MS]
    return "\n".join(lines)


def bound_note(cases, target=0.9):
    """A sentence naming the autoencoder's batch-1 layers whose bus ceiling lies below
    ``target``: no datapath reaches the target on them, their lists read too few weight bytes
    beside the descriptor, the input vectors and the quantization block."""
    low = [c for c in cases if c.model == "autoencoder" and c.batch == 1
           and c.bus_ceiling < target]
    if not low:
        return (f"Every autoencoder layer's bus ceiling at batch 1 is at least {target:.0%}.")
    rows = "; ".join(
        f"{c.layer} at {c.precision.label}: {c.weight_bytes:,} weight bytes of "
        f"{c.result['bytes_read']:,} read, ceiling {c.bus_ceiling:.1%}, measured "
        f"{c.bus_efficiency:.1%}" for c in low)
    return (f"Below a {target:.0%} bus ceiling at batch 1 (the target cannot be met on them "
            f"even with a beat every cycle: the descriptor (64 bytes), the input vectors and "
            f"the quantization block (16 bytes + 4 per output) share the bus with few weight "
            f"bytes): {rows}.")


def _fmax():
    """The FC build's measured Fmax on the ECP5-85F (MHz), if ``python -m boards.synth fc``
    has been run for this RTL (its cached result), else None."""
    from boards.synth import synthesize

    result = synthesize("fc", "ecp5-85f", cached_only=True)
    return None if result is None else result.fmax_mhz


def main(*, write_results=False):
    """Run the benchmark, print the tables, optionally rewrite docs/results.md. Returns True
    if every run was bit-exact."""
    cases = run_cases(fc_cases())
    layers = layer_table(cases)
    sums = autoencoder_totals(cases)
    totals = totals_table(sums)
    fmax = _fmax()
    latency = (latency_table(sums, fmax) if fmax else
               "Not measured: no synthesis result of this RTL (`python -m boards.synth fc "
               "--device ecp5-85f`).")
    note = bound_note(cases)
    print(layers + "\n\n" + note + "\n\n" + totals + "\n\n" + latency + "\n")
    if write_results:
        from sim.results import write_results_section

        write_results_section("bench-fc", _section(layers, note, totals, latency))
        print("wrote docs/results.md")
    return all(_exact(c) == "yes" for c in cases)


def _section(layers, note, totals, latency):
    fc = BENCH_CONFIG.fc
    return "\n".join([
        "## FC datapath: cycles on the RTL (Verilator)", "",
        "Regenerate with `make bench` (`tessera bench --write-results`). An FC-only build "
        f"({fc.pes} PEs of {fc.st_units} ST units, batches of up to {fc.max_batch}, input PLM "
        f"of {fc.plm_in_words} words); every layer tiled by the FC tiling compiler and run "
        "from its descriptor list, with AxiRam answering one 64-bit beat per cycle after its "
        "latency; cycles, MAC cycles and commands are the accelerator's own counters (one "
        "list per layer: each row includes the list's start and end). Weight bytes = outputs "
        "x inputs x weight bits / 8; bus efficiency = weight bytes / (cycles x 8); PE "
        "utilisation = MAC cycles / cycles. Bytes read are the accelerator's counter (the "
        "descriptors, input vectors, quantization blocks and weights); bus ceiling = weight "
        "bytes / bytes read, the bus efficiency the list would reach if every cycle moved a "
        "beat. Bit-exact: the memory image equals the golden "
        "model's and, at a8w8, the golden output equals the golden network run's (itself "
        "LiteRT-exact). The a8w4 rows use the real weights divided by 17 and rounded to 4 "
        "bits (the same work on half the bytes; checked against the golden model).", "",
        "### Every FC layer of the MLPerf Tiny models", "", layers, "", note, "",
        "### The autoencoder's ten layers as a whole (sums of the per-layer runs)", "",
        totals, "",
        "### The autoencoder's latency beside MLPerf Tiny's published anomaly-detection "
        "results", "",
        "Cycles per inference at the FC build's Fmax (`python -m boards.synth fc`, nextpnr "
        "seed 1); the published systems run the whole benchmark on their own hardware "
        "(MLPerf Tiny v1.0 results), this row only the ten FC layers' lists on the RTL.", "",
        latency])
