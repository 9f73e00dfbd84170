"""Cycle benchmark of the conv2d accelerator RTL (Verilator), for ``tessera bench``.

Every case is a descriptor list built by ``sw.program`` with the tile sizes the tiling
compiler chooses for the build, run on the RTL through ``sim/tb_conv2d_bench.py`` with memory
that answers one beat per cycle after AxiRam's latency. The accelerator's own counters give
the figures; every run's memory image is compared with the golden model's.

* **MLPerf Tiny conv layers** -- every Conv2D of ResNet-8, DS-CNN and VWW with its real
  weights and an input from a golden run of the network, on the default build (16 PEs), on
  the builds with the four-block PE array's DSP budget (32 PEs of ``dsp2``,
  ``DSP_BUDGET_CONFIG``; 64 of ``dsp1``, ``DSP1_BUDGET_CONFIG``), with each model's
  whole-network figures;
* **precision sweep** -- one compute-bound layer (ResNet-8's 32x32x16 -> 16, 3x3; for the
  32-PE build its 16x16x32 -> 32, 3x3) with random data in all five ST configurations:
  utilisation, MACs per DSP block and cycle, and the speed-up over 16 bits; the same sweep on
  the 16-PE build with one-block multipliers (``DSP1_CONFIG``: a DSP block and a LUT unit per
  PE) and on 64 of them (``DSP1_BUDGET_CONFIG``, 16x16x64 -> 64, 3x3);
* **seed 002 Table 5.1** -- its three test layers on builds with the thesis's PE counts and
  PLM sizes, next to the thesis's cycle counts.

Definitions (per case): ``MACs`` are the layer's multiply-accumulates; utilisation is ``MACs
/ (cycles x PEs x products per ST operation)``; MACs per DSP block per cycle divide the MACs
per cycle by every DSP block of the build (:attr:`AcceleratorConfig.dsp_blocks`); the
per-command overhead is the PE array's idle cycles between its first and its last MAC per
command boundary (watched on the core's ``mac`` output), and fill + drain the cycles before
the first and after the last MAC.
"""

import json
import pickle
from dataclasses import dataclass

import numpy as np

from hls_ref.config import (
    DEFAULT_CONFIG,
    DSP1_BUDGET_CONFIG,
    DSP1_CONFIG,
    DSP2_CONFIG,
    DSP_BUDGET_CONFIG,
    AcceleratorConfig,
)
from hls_ref.descriptor import geometry
from hls_ref.precision import Precision
from sim.runner import Design, run_cocotb
from sim.toolchain import BUILD_ROOT

from .fixtures import model_conv_programs, random_conv
from .program import compiler_program

__all__ = ["GROUPS", "BenchCase", "demo_layer", "main", "run_cases"]

#: seed 002 Table 5.1, HW clock cycles per row: rows 1-12 are derived from the printed
#: speed-ups (the HW column is missing), rows 13-27 are printed (row 13's cell is suspect;
#: its speed-ups imply about 52.4M). See the seed 002 digest, section 7.4.
THESIS_HW_CYCLES = {
    1: 201_500, 2: 193_600, 3: 193_000, 4: 385_900, 5: 375_100, 6: 373_200,
    7: 1_491_000, 8: 1_485_000, 9: 4_440_000, 10: 17_460_000, 11: 8_740_000,
    12: 4_440_000, 13: 76_913_244, 14: 35_403_581, 15: 17_692_218, 16: 104_644_738,
    17: 69_765_942, 18: 35_216_349, 19: 208_236_894, 20: 140_916_813, 21: 69_986_943,
    22: 47_893_013, 23: 47_642_604, 24: 47_519_053, 25: 187_780_605, 26: 189_312_157,
    27: 189_011_585,
}
_PRECISION_OF_BITS = {16: Precision.A16W16, 8: Precision.A8W8, 4: Precision.A4W4}


@dataclass
class BenchCase:
    """One program to run and what is needed to report it."""

    group: str
    name: str
    program: object
    config: AcceleratorConfig
    precision: Precision
    macs: int
    reference_exact: bool = True     # the golden model's output equals the reference
    thesis_row: int | None = None
    refused: str | None = None       # why the compiler cannot tile it (then it is not run)
    result: dict | None = None

    @property
    def utilisation(self):
        r = self.result
        return self.macs / (r["cycles"] * self.config.pes * self.precision.lanes)

    @property
    def operand_fill(self):
        """MACs / (MAC cycles x PEs x products per ST operation): the share of the PE
        array's products that are the layer's while it computes (below 1 when a layer's
        channels leave ST slots or PEs empty); utilisation = fill x MAC cycles / cycles."""
        r = self.result
        return self.macs / (r["mac_cycles"] * self.config.pes * self.precision.lanes)

    @property
    def macs_per_dsp_cycle(self):
        """MACs per cycle per DSP block of the whole build."""
        return self.macs / (self.result["cycles"] * self.config.dsp_blocks)

    @property
    def overhead(self):
        """Idle cycles of the PE array between its first and last MAC, per command boundary:
        what each further command costs once the pipeline is running."""
        r = self.result
        return (r["mac_span"] - r["mac_cycles"]) / max(1, r["tiles"] - 1)

    @property
    def fill_drain(self):
        """Cycles before the first and after the last MAC (first loads, last store)."""
        r = self.result
        return r["cycles"] - r["mac_span"]


def _layer_macs(program):
    """The layer's MACs (:attr:`sw.program.Program.macs`), else per command: output pixels x
    kernel taps x input x output channels (the channels the command really has, not the PE
    array's)."""
    if program.macs is not None:
        return program.macs
    total = 0
    for d in program.descriptors:
        geo = geometry(d)
        total += geo.out_h * geo.out_w * d.kernel_h * d.kernel_w * d.in_c * d.out_c
    return total


def _case(group, name, program, config, precision, want, **fields):
    """A case whose golden run is checked against the layer's reference output ``want``."""
    memory, status = program.run_golden()
    return BenchCase(group, name, program, config, precision, _layer_macs(program),
                     reference_exact=bool(status.done and np.array_equal(
                         program.output(memory), want)), **fields)


def _random_case(group, name, config, precision, out_bits, shape, *, pad, seed,
                 min_row_tiles=1, **fields):
    """A random ``(H, W, Cin, Cout, k)`` layer, stride 1, tiled by the compiler."""
    h, w, cin, cout, k = shape
    x, weights, qb, cmd, want = random_conv(np.random.default_rng(seed), precision, out_bits,
                                            cin=cin, cout=cout, kernel=(k, k), size=(h, w),
                                            stride=(1, 1), pad=(pad,) * 4)
    program, _ = compiler_program(x, weights, qb, cmd, config, name=group,
                                  min_row_tiles=min_row_tiles)
    return _case(group, name, program, config, precision, want, **fields)


def mlperf_cases(config=DEFAULT_CONFIG, models=("resnet8", "dscnn", "vww")):
    return [_case("mlperf", f"{model} {name}", program, config, Precision.A8W8, want)
            for model in models
            for name, program, _, want in model_conv_programs(model, config)]


def precision_cases(config=DEFAULT_CONFIG, shape=(32, 32, 16, 16, 3), row_tiles=8):
    return [_random_case("precision", p.label, config, p, p.act_bits, shape,
                         pad=shape[4] // 2, seed=7, min_row_tiles=row_tiles)
            for p in (Precision.A16W16, Precision.A16W8, Precision.A8W8, Precision.A8W4,
                      Precision.A4W4)]


def overhead_cases(config=DEFAULT_CONFIG, shape=(32, 32, 16, 16, 3), row_tiles=(8, 16, 32)):
    """The precision sweep's layer at a8w8 cut into more and more row stripes: the fill and
    drain shrink while the idle cycles per command boundary stay (the layer stays
    compute-bound, so loads and stores stay hidden)."""
    return [_random_case("overhead", f"{tiles} row stripes", config, Precision.A8W8, 8, shape,
                         pad=shape[4] // 2, seed=7, min_row_tiles=tiles)
            for tiles in row_tiles]


def thesis_cases():
    """Table 5.1's rows on builds with the row's PEs and PLM sizes; a row the compiler
    cannot tile becomes a case with ``refused`` set to the compiler's reason."""
    from sw.tiling.capacity import TilingError
    from sw.tiling.thesis import TABLE_5_1, plm_limits
    from sw.workloads.seed_layers import THESIS_LAYERS

    cases = []
    for row, (name, label, pe, bits, _, _) in enumerate(TABLE_5_1, 1):
        limits = plm_limits(label, pe)
        config = AcceleratorConfig(pes=pe, plm_in_words=-(-limits.plm_in // 4) * 4,
                                   plm_w_words=-(-limits.plm_w // pe) * pe,
                                   plm_acc_words=-(-limits.plm_out // pe) * pe,
                                   max_width=128)
        p = _PRECISION_OF_BITS[bits]
        title = f"{name} {label} PE{pe} {bits}-bit"
        try:
            cases.append(_random_case("thesis", title, config, p, bits, THESIS_LAYERS[name],
                                      pad=0, seed=row, thesis_row=row))
        except TilingError as error:
            cases.append(BenchCase("thesis", title, None, config, p, 0, thesis_row=row,
                                   refused=str(error)))
    return cases


def demo_layer(layer="01_conv_2d", config=DEFAULT_CONFIG):
    """Run one ResNet-8 conv layer (real weights, compiler tiling) on the RTL; print its
    figures and return whether it was bit-exact."""
    name, program, tiling, want = next(
        entry for entry in model_conv_programs("resnet8", config) if entry[0] == layer)
    case = _case("demo", f"resnet8 {name}", program, config, Precision.A8W8, want)
    run_cases([case])
    r = case.result
    print(f"layer {name}: {program.count} commands (tiles of {tiling.rows} rows, "
          f"{tiling.out_channels} output and {tiling.in_channels} input channels), "
          f"{case.macs:,} MACs in {r['cycles']:,} cycles: utilisation {case.utilisation:.1%}, "
          f"{r['bytes_read']:,} bytes read, {r['bytes_written']:,} written; memory image "
          f"{'bit-exact with' if r['exact'] else 'DIFFERENT from'} the golden model, output "
          f"{'bit-exact with' if case.reference_exact else 'DIFFERENT from'} the LiteRT-exact "
          f"reference")
    return bool(r["exact"] and case.reference_exact)


def _design(config):
    name = (f"conv2d_p{config.pes}_i{config.plm_in_words}_w{config.plm_w_words}"
            f"_a{config.plm_acc_words}_m{config.max_width}_{config.pe_multiplier}")
    return Design(name, "hdl.accelerator:accelerator", {"config": config.as_dict()})


def run_on_design(design, cases, *, datapath=None, log=print):
    """Run ``cases`` (each with ``name`` and ``program``) on ``design`` in Verilator with the
    bench testbench (``sim/tb_conv2d_bench.py``; ``datapath``: its ``TESSERA_BENCH_DATAPATH``,
    None for conv2d); fills each ``case.result``. The conv2d, FC and per-channel benches share
    it."""
    work = BUILD_ROOT / "bench" / design.name
    work.mkdir(parents=True, exist_ok=True)
    with open(work / "cases.pkl", "wb") as f:
        pickle.dump([(c.name, c.program) for c in cases], f)
    log(f"running {len(cases)} programs on {design.name} (Verilator) ...")
    env = {"TESSERA_BENCH_CASES": str(work / "cases.pkl"),
           "TESSERA_BENCH_RESULTS": str(work / "results.json")}
    if datapath is not None:
        env["TESSERA_BENCH_DATAPATH"] = datapath
    run_cocotb(design, "sim.tb_conv2d_bench", sim="verilator", extra_env=env)
    results = json.loads((work / "results.json").read_text())
    for case, result in zip(cases, results, strict=True):
        assert result["name"] == case.name
        case.result = result
    return cases


def run_cases(cases, *, log=print):
    """Run every case on Verilator (one build per configuration); fills ``case.result``."""
    by_config = {}
    for case in (c for c in cases if c.refused is None):
        by_config.setdefault(case.config, []).append(case)
    for config, group in by_config.items():
        run_on_design(_design(config), group, log=log)
    return cases


def _exact(case):
    return "yes" if case.result["exact"] and case.reference_exact else "NO"


def mlperf_table(cases):
    lines = ["| layer | commands | MACs | cycles | MAC cycles | operand fill | utilisation | "
             "MACs/DSP/cycle | idle between commands | fill + drain | bytes read | "
             "bytes written | bit-exact |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        r = c.result
        lines.append(f"| {c.name} | {r['tiles']} | {c.macs:,} | {r['cycles']:,} | "
                     f"{r['mac_cycles']:,} | {c.operand_fill:.1%} | {c.utilisation:.1%} | "
                     f"{c.macs_per_dsp_cycle:.2f} | "
                     f"{c.overhead:.1f} | {c.fill_drain:,} | {r['bytes_read']:,} | "
                     f"{r['bytes_written']:,} | {_exact(c)} |")
    return "\n".join(lines) + "\n\n" + network_table(cases)


def network_table(cases):
    """Whole-network figures per model: every conv layer run back to back (the sum of the
    layers' cycles; the layers between them run elsewhere)."""
    lines = ["| model (all conv layers) | PEs | DSP blocks | MACs | cycles | utilisation | "
             "MACs/DSP/cycle |", "|---|---:|---:|---:|---:|---:|---:|"]
    models = {}
    for c in cases:
        models.setdefault(c.name.split()[0], []).append(c)
    for model, group in models.items():
        config = group[0].config
        macs = sum(c.macs for c in group)
        cycles = sum(c.result["cycles"] for c in group)
        capacity = sum(c.result["cycles"] * config.pes * c.precision.lanes for c in group)
        lines.append(f"| {model} | {config.pes} | {config.dsp_blocks} | {macs:,} | "
                     f"{cycles:,} | {macs / capacity:.1%} | "
                     f"{macs / (cycles * config.dsp_blocks):.2f} |")
    return "\n".join(lines)


def precision_table(cases):
    base = next(c for c in cases if c.precision is Precision.A16W16).result["cycles"]
    lines = ["| config | commands | cycles | MAC cycles | utilisation | MACs/DSP/cycle | "
             "MACs/DSP/cycle (PE array) | idle between commands | fill + drain | speed-up vs "
             "a16w16 | bit-exact |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        r = c.result
        array = c.macs / (r["cycles"] * c.config.pe_dsp_blocks)
        lines.append(f"| {c.name} | {r['tiles']} | {r['cycles']:,} | {r['mac_cycles']:,} | "
                     f"{c.utilisation:.1%} | {c.macs_per_dsp_cycle:.2f} | {array:.2f} | "
                     f"{c.overhead:.1f} | {c.fill_drain:,} | "
                     f"{base / r['cycles']:.2f}x | {_exact(c)} |")
    return "\n".join(lines)


def overhead_table(cases):
    lines = ["| row stripes | commands | cycles | MAC cycles | idle between commands | "
             "fill + drain | utilisation | bit-exact |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        r = c.result
        lines.append(f"| {c.name} | {r['tiles']} | {r['cycles']:,} | {r['mac_cycles']:,} | "
                     f"{c.overhead:.1f} | {c.fill_drain:,} | {c.utilisation:.1%} | "
                     f"{_exact(c)} |")
    return "\n".join(lines)


def thesis_table(cases):
    lines = ["| # | layer, PLM (thesis label), PEs, bits | thesis HW cycles | commands | "
             "cycles | speed-up | utilisation | bit-exact |",
             "|---:|---|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        r = c.result
        thesis = THESIS_HW_CYCLES[c.thesis_row]
        approx = "≈" if c.thesis_row <= 12 else ""
        if c.refused:
            lines.append(f"| {c.thesis_row} | {c.name} | {approx}{thesis:,} | - | - | - | - | "
                         f"not run: {c.refused} |")
            continue
        lines.append(f"| {c.thesis_row} | {c.name} | {approx}{thesis:,} | {r['tiles']} | "
                     f"{r['cycles']:,} | {thesis / r['cycles']:,.0f}x | {c.utilisation:.1%} "
                     f"| {_exact(c)} |")
    return "\n".join(lines)


GROUPS = ("mlperf", "mlperf-p32", "precision", "precision-p32", "precision-dsp1",
          "precision-dsp1-p64", "mlperf-p64", "overhead", "thesis")

#: The sections of docs/results.md, each written when all of its groups have run: name ->
#: (groups, heading or None; the first section also carries the definitions).
SECTIONS = {
    "bench-conv2d": (("mlperf",), "## Conv2D accelerator: cycles on the RTL (Verilator)"),
    "bench-conv2d-sweeps": (("precision", "overhead", "thesis"), None),
    "bench-conv2d-p32": (("mlperf-p32", "precision-p32"),
                         "## Conv2D accelerator with 32 PEs (the four-block build's PE-array DSP "
                         "blocks): cycles on the RTL (Verilator)"),
    "bench-conv2d-dsp1": (("precision-dsp1", "precision-dsp1-p64", "mlperf-p64"),
                          "## Conv2D accelerator with one-block PEs (a DSP block and a LUT unit "
                          "each): cycles on the RTL (Verilator)"),
}

#: The 32-PE sweep's layer: ResNet-8's 16x16x32 -> 32, 3x3, in 4 row stripes.
P32_SWEEP = {"shape": (16, 16, 32, 32, 3), "row_tiles": 4}

#: The 64-PE sweep's layer: 16x16x64 -> 64, 3x3 (ResNet-8's last layers' channels on its
#: middle layers' rows: every PE has an output channel), in 8 row stripes.
P64_SWEEP = {"shape": (16, 16, 64, 64, 3), "row_tiles": 8}


def main(*, write_results=False, groups=GROUPS):
    """Run the benchmark groups, print the tables, optionally rewrite docs/results.md.
    Returns True if every run was bit-exact."""
    builders = {"mlperf": lambda: mlperf_cases(DSP2_CONFIG), "precision": precision_cases,
                "mlperf-p32": lambda: mlperf_cases(DSP_BUDGET_CONFIG),
                "precision-p32": lambda: precision_cases(DSP_BUDGET_CONFIG, **P32_SWEEP),
                "precision-dsp1": lambda: precision_cases(DSP1_CONFIG),
                "precision-dsp1-p64": lambda: precision_cases(DSP1_BUDGET_CONFIG, **P64_SWEEP),
                "mlperf-p64": lambda: mlperf_cases(DSP1_BUDGET_CONFIG),
                "overhead": overhead_cases, "thesis": thesis_cases}
    cases = {g: builders[g]() for g in groups}
    run_cases([c for group in cases.values() for c in group])
    tables = {"mlperf": mlperf_table, "precision": precision_table,
              "mlperf-p32": mlperf_table, "precision-p32": precision_table,
              "precision-dsp1": precision_table, "precision-dsp1-p64": precision_table,
              "mlperf-p64": mlperf_table,
              "overhead": overhead_table, "thesis": thesis_table}
    text = []
    for g in groups:
        table = tables[g](cases[g])
        print(table + "\n")
        text.append((g, table))
    if write_results:
        from sim.results import write_results_section

        tables = dict(text)
        for name, (members, heading) in SECTIONS.items():
            if all(g in tables for g in members):
                write_results_section(name, _section({g: tables[g] for g in members}, heading,
                                                     intro=name == "bench-conv2d"))
                print(f"wrote the {name} section of docs/results.md")
    return all(c.result["exact"] and c.reference_exact
               for group in cases.values() for c in group if c.refused is None)


def _section(tables, heading, *, intro):
    parts = [] if heading is None else [heading]
    if intro:
        parts += [
             "", "Regenerate with `make bench` (`tessera bench --write-results`). Every program "
             "is tiled by the tiling compiler for the build it runs on (its row stripes chosen "
             "for the accelerator's pipeline by `sw/conv2d_cycles.py`, unless a sweep caps "
             "them) and executed by the RTL "
             "from its descriptor list, with AxiRam answering one 64-bit beat per cycle after "
             "its latency; cycles, MAC cycles, commands and bytes are the accelerator's own "
             "counters. Utilisation = MACs / (cycles x PEs x products per ST operation); "
             "operand fill = MACs / (MAC cycles x PEs x products per ST operation), the "
             "share of the PE array's products that are the layer's while it computes (a "
             "layer whose channels leave ST slots or PEs empty has less than 100%); "
             "MACs/DSP/cycle = MACs / (cycles x every DSP block of the build); "
             "idle between commands = the PE array's idle cycles between its first and last "
             "MAC per command boundary; fill + drain = cycles before the first and after the "
             "last MAC. A layer named `unfolded` reads the network input unfolded, as the "
             "model image has it (`sw/unfold.py`: a 1x1 convolution over every output "
             "pixel's receptive field, or of `group` adjacent pixels'); its MACs are the "
             "layer's, not counting the unfolded layer's zero weights. Bit-exact: the memory "
             "image after the run equals the golden model's (and the golden output equals the "
             "reference: LiteRT-exact golden models for the MLPerf layers, numpy otherwise)."]
    default, budget = DEFAULT_CONFIG, DSP_BUDGET_CONFIG
    if "mlperf" in tables:
        parts += ["", f"### MLPerf Tiny conv layers ({DSP2_CONFIG.pes} PEs of "
                  f"{DSP2_CONFIG.pe_multiplier}, {DSP2_CONFIG.dsp_blocks} DSP blocks, a8w8, real "
                  f"weights; the default build's {default.pe_multiplier} PEs take the same "
                  f"cycles with {default.dsp_blocks} blocks)", "", tables["mlperf"]]
    if "mlperf-p32" in tables:
        parts += ["", f"### MLPerf Tiny conv layers on the same DSP budget as the four-block "
                  f"build ({budget.pes} PEs of {budget.pe_multiplier}, {budget.dsp_blocks} DSP "
                  "blocks, a8w8, real weights)", "",
                  "The same PE array DSP blocks as 16 PEs of four blocks each; a layer with "
                  "fewer output channels than PEs leaves the others idle (an unfolded first "
                  "layer fewer: its adjacent output pixels share the array).", "",
                  tables["mlperf-p32"]]
    if "precision" in tables:
        parts += ["", "### Precision sweep: 32x32x16 -> 16, 3x3 (ResNet-8's second layer "
                  f"shape), random data, {default.pes} PEs, {default.dsp_blocks} DSP blocks",
                  "",
                  "The compiler's tiles capped at 4 output rows, so that the 8 commands "
                  "pipeline (its own choice, 2 commands of 16 rows, leaves the first load and "
                  "the last 8192-value store outside the pipeline). MACs/DSP/cycle counts "
                  "every DSP block of the build; the PE array's column only its own.", "",
                  tables["precision"]]
    if "precision-p32" in tables:
        h, w, cin, cout, k = P32_SWEEP["shape"]
        parts += ["", f"### Precision sweep: {h}x{w}x{cin} -> {cout}, {k}x{k} (ResNet-8's "
                  f"fifth layer shape), random data, {budget.pes} PEs, {budget.dsp_blocks} "
                  "DSP blocks", "",
                  f"Tiles capped at {h // P32_SWEEP['row_tiles']} output rows.", "",
                  tables["precision-p32"]]
    if "precision-dsp1" in tables:
        one = DSP1_CONFIG
        parts += ["", "### Precision sweep: 32x32x16 -> 16, 3x3 (ResNet-8's second layer "
                  f"shape), random data, {one.pes} PEs of {one.pe_multiplier}, "
                  f"{one.dsp_blocks} DSP blocks ({one.pe_dsp_blocks} in the PE array)", "",
                  "The default sweep's layer and tiles on the build whose ST multipliers are "
                  "one DSP block (one 16x16, 16x8 or 8x8 product, or a packed pair of 4x4 "
                  "products, per cycle) and a LUT unit (the other 8-bit product or 4-bit "
                  "pair). MACs/DSP/cycle counts every DSP block of the build (the store's "
                  "requantizers and the front end's included); the PE array's column only "
                  "its own; the LUT unit's MACs are counted in both.", "",
                  tables["precision-dsp1"]]
    if "precision-dsp1-p64" in tables:
        wide = DSP1_BUDGET_CONFIG
        h, w, cin, cout, k = P64_SWEEP["shape"]
        parts += ["", f"### Precision sweep: {h}x{w}x{cin} -> {cout}, {k}x{k}, random data, "
                  f"{wide.pes} PEs of {wide.pe_multiplier}, {wide.dsp_blocks} DSP blocks "
                  f"({wide.pe_dsp_blocks} in the PE array)", "",
                  f"The four-block build's {DEFAULT_CONFIG.pe_dsp_blocks} PE-array DSP "
                  "blocks spent on one-block "
                  "multipliers: four times the PEs, so the blocks outside the PE array (the "
                  "store's requantizers, the front end's) weigh a quarter as much per MAC. "
                  f"Tiles capped at {h // P64_SWEEP['row_tiles']} output rows. The build does "
                  "not fit the ECP5-85F's LUTs (`docs/pe.md`): these are its cycles only.",
                  "",
                  tables["precision-dsp1-p64"]]
    if "mlperf-p64" in tables:
        wide = DSP1_BUDGET_CONFIG
        parts += ["", f"### MLPerf Tiny conv layers on {wide.pes} PEs of {wide.pe_multiplier} "
                  f"({wide.dsp_blocks} DSP blocks, a8w8, real weights)", "",
                  "The same layers as the first table, tiled by the compiler for the 64-PE "
                  "build; a layer with fewer output channels than PEs leaves the others "
                  "idle (an unfolded first layer fewer: its adjacent output pixels share the "
                  "array).", "", tables["mlperf-p64"]]
    if "overhead" in tables:
        parts += ["", "### Per-command overhead: the a8w8 sweep layer in more and more row "
                  "stripes", "",
                  "Smaller tiles shorten the fill and drain; the PE array's idle time per "
                  "command boundary stays the same: the cost of one more descriptor in a "
                  "pipelined list.", "",
                  tables["overhead"]]
    if "thesis" in tables:
        parts += ["", "### Seed 002 Table 5.1 layers on builds with the thesis's PEs and PLM "
                  "sizes", "",
                  "Each build's PLM banks hold the thesis's word counts, but a Tessera word is "
                  "one 16-bit ST word (2 or 4 channels at 8 or 4 bits), and every build is "
                  "double-buffered, so the compiler needs fewer commands than the thesis's "
                  "tiles. Thesis rows 1-12 are derived from its printed speed-ups (marked ≈).",
                  "", tables["thesis"]]
    return "\n".join(parts)
