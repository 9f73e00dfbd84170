"""``tessera nve``: compile the seed-003 networks for the NVE and report them next to Table 5.

``tessera nve compile NETWORK [--out DIR]``   every layer fused and compiled; with ``--out``
                                              each program as assembly and binary plus a JSON
                                              summary.
``tessera nve report NETWORK [--simulate-bands N] [--no-fusion] [--write-results]``
                                              the per-layer table next to Table 5, the fusion
                                              choices, the weighted totals and (with N > 0)
                                              row bands run on the simulator.

``NETWORK`` is ``face-detection``, ``speed-sign``, ``all`` or a text description of a network
(:mod:`.netfile`: one line per layer with the seed's fields); a described network has no
Table 5 to be compared with.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from .errors import NveCompileError
from .host import WORD_BYTES
from .netfile import read_network
from .network import (
    NETWORK_NAMES,
    TABLE1_TRANSFER_MB,
    TABLE5_TOTALS,
    compile_layers,
    compile_network,
    simulate_network,
)

__all__ = ["add_parser", "bench_report", "fusion_table", "layer_table", "results_section",
           "simulation_table", "totals_table", "transfer_summary"]

_MIB = 1 << 20
#: Row bands per distinct program that ``make bench`` simulates (about half a minute in all).
BENCH_BANDS = 2


def _networks(name):
    return list(NETWORK_NAMES) if name == "all" else [name]


def _described(results):
    return any(net.name not in NETWORK_NAMES for net in results)


def described_table(results):
    """Markdown: per layer of a described network, the programs and figures (no seed
    columns)."""
    lines = ["| layer | kernel / stride | maps | groups | II | steady MAC/instr | "
             "whole-layer MAC/instr | MACs | cycles | MiB |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for net in results:
        for r in net.layers:
            layer, programs = r.layer, r.programs()
            iis = "/".join(str(ii) for ii in dict.fromkeys(p.ii for p in programs))
            lines.append(
                f"| {net.name} {r.name} | {layer.kernel_h}x{layer.kernel_w} / "
                f"{layer.stride_h}x{layer.stride_w} | {layer.out_maps} | "
                f"{len(r.compiled.groups)} | {iis} | {r.steady:.2f} | {r.whole:.2f} | "
                f"{r.macs:,} | {r.cycles:,} | {r.transfer_bytes / _MIB:.2f} |")
    return "\n".join(lines)


def _groups_text(groups, limit=6):
    """``[0 1 8] [2 3]`` (the first ``limit`` groups, then how many more)."""
    shown = " ".join("[" + " ".join(str(m) for m in g) + "]" for g in groups[:limit])
    return shown + (f" +{len(groups) - limit} more" if len(groups) > limit else "")


def layer_table(results):
    """Markdown: per layer, our MAC/instruction next to Table 5 and the external data."""
    lines = ["| layer | kernel / stride | groups (maps) | II | limit | steady MAC/instr | "
             "whole-layer MAC/instr | seed automatic | seed manual | MiB unfused | MiB fused | "
             "reduction | Table 1 MB |",
             "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for net in results:
        for r in net.layers:
            layer, programs = r.layer, r.programs()
            sizes = sorted({len(g) for p in programs for g in p.groups}, reverse=True)
            iis = "/".join(str(ii) for ii in dict.fromkeys(p.ii for p in programs))
            limits = "/".join(dict.fromkeys(p.limit for p in programs))
            half = " (half vector)" if programs[0].lanes == 8 else ""
            lines.append(
                f"| {net.name} {r.name} | {layer.kernel_h}x{layer.kernel_w} / "
                f"{layer.stride_h}x{layer.stride_w}{half} | {len(r.compiled.groups)} "
                f"({'/'.join(map(str, sizes))}) | {iis} | {limits} | {r.steady:.2f} | "
                f"{r.whole:.2f} | {r.seed_automatic:.2f} | {r.seed_manual:.2f} | "
                f"{r.unfused_bytes / _MIB:.2f} | {r.transfer_bytes / _MIB:.2f} | "
                f"{r.reduction:.0%} | {TABLE1_TRANSFER_MB[net.name][r.name]:.2f} |")
    return "\n".join(lines)


def totals_table(results):
    """Markdown: workload-weighted MAC/instruction of each network under both weightings,
    next to Table 5's totals (printed, and recomputed from its own rows)."""
    lines = ["| network | weights (L1/L2/L3/L4, % of MACs) | ours steady | ours whole layer | "
             "seed manual | seed automatic | network MACs / cycles |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for net in results:
        printed = dict(zip(("seed_automatic", "seed_manual"), TABLE5_TOTALS[net.name]))
        for which, label in (("seed", "Table 5's printed"), ("ours", "Table 1 MAC shares")):
            w = net.weights(which)
            shares = "/".join(f"{100 * w[r.name]:.3g}" for r in net.layers)
            seed_cells = []
            for metric in ("seed_manual", "seed_automatic"):
                value = net.weighted(metric, which)
                seed_cells.append(f"{printed[metric]} (sum {value:.2f})" if which == "seed"
                                  else f"{value:.2f}")
            overall = f"{net.macs / net.cycles:.2f}" if which == "seed" else ""
            lines.append(f"| {net.name} | {label}: {shares} | "
                         f"{net.weighted('steady', which):.2f} | "
                         f"{net.weighted('whole', which):.2f} | {seed_cells[0]} | "
                         f"{seed_cells[1]} | {overall} |")
    return "\n".join(lines)


def fusion_table(results):
    """Markdown: what the seed's greedy picks, what was kept, and what each costs."""
    lines = ["| layer | greedy (Algorithm 2) groups | greedy cycles | greedy MiB | kept | "
             "kept groups | cycles | MiB | candidates |",
             "|---|---|---:|---:|---|---|---:|---:|---:|"]
    for net in results:
        for r in net.layers:
            f = r.fusion
            greedy, kept = f.greedy, f.chosen
            greedy_cells = ("- | - | -" if greedy is None else  # no fusion: no greedy
                            f"{_groups_text(greedy.groups)} | {greedy.estimate.cycles:,} | "
                            f"{WORD_BYTES * greedy.estimate.words / _MIB:.2f}")
            lines.append(
                f"| {net.name} {r.name} | {greedy_cells} | "
                f"{kept.label} | {_groups_text(kept.groups)} | {kept.estimate.cycles:,} | "
                f"{WORD_BYTES * kept.estimate.words / _MIB:.2f} | {len(f.candidates)} |")
    return "\n".join(lines)


def simulation_table(results, sims):
    """Markdown: the simulated bands per layer and the extrapolation to the whole layer."""
    lines = ["| layer | programs | bands simulated | output rows | simulated cycles | "
             "= program's cycles per band | simulated MACs | bit-exact | exact accumulators "
             "| layer cycles (bands x cycles per band) |",
             "|---|---:|---:|---:|---:|---|---:|---|---|---:|"]
    for net in results:
        for r in net.layers:
            runs = sims[net.name][r.name]
            agree = all(b.cycles == b.expected for b in runs)
            exact = all(b.exact for b in runs)
            accumulators = all(b.exact_accumulators for b in runs)
            lines.append(
                f"| {net.name} {r.name} | {len(r.programs())} | {len(runs)} | "
                f"{sum(b.rows for b in runs)} | {sum(b.cycles for b in runs):,} | "
                f"{'yes' if agree else 'NO'} | {sum(b.macs for b in runs):,} | "
                f"{'yes' if exact else 'NO'} | {'yes' if accumulators else 'NO'} | "
                f"{r.cycles:,} |")
    return "\n".join(lines)


def transfer_summary(results):
    """One paragraph: the external data with and without fusion, per network and for the
    layers the seed's claims are about (L1 and L2)."""
    parts = []
    for net in results:
        layers = {r.name: r for r in net.layers}
        per_layer = ", ".join(f"{n} {layers[n].reduction:.0%}" for n in ("L1", "L2")
                              if n in layers)
        parts.append(f"{net.name} {net.unfused_bytes / _MIB:.1f} -> "
                     f"{net.transfer_bytes / _MIB:.1f} MiB "
                     f"({1 - net.transfer_bytes / net.unfused_bytes:.0%} less; {per_layer})")
    return ("Fusion cuts the external data of " + " and ".join(parts) + ". The seed reports "
            "up to 70% less for L1 than its unfused code and up to 65% less for L2 than the "
            "experts' code, which does not fuse L2. Where no maps share inputs (face L3) or "
            "two programs do not fit the instruction buffer together (speed L3), fusion saves "
            "nothing, as in the seed. Every figure stays above Table 1's "
            "every-pixel-once count: a band re-reads the kernel's overlap rows and its "
            "coefficients, and every program streams all its input maps.")


def _simulation_ok(sims):
    return all(b.exact and b.exact_accumulators and b.cycles == b.expected
               for layers in sims.values()
               for runs in layers.values() for b in runs)


def results_section(results, sims, bands, seconds):
    """The docs/results.md section (markdown) for all networks; ``sims``: the
    :func:`.network.simulate_network` runs of ``bands`` bands per program, per network."""
    command = f"tessera nve report all --simulate-bands {bands} --write-results"
    parts = [
        "## NVE code generator: the seed's networks against Table 5",
        "",
        f"Regenerate with `{command}` (part of `make bench`; {seconds:.0f} s on the "
        "machine that ran it). Every layer of both networks is fused, modulo scheduled, "
        "allocated and emitted by `sw/nve`; every distinct program is checked on the "
        "instruction-set simulator against the golden layer model (a few output columns), and "
        f"{bands} row bands per distinct program (first and last band included) are run over "
        "the whole row with random int8 pixels, int16 weights and a random LUT and compared "
        "with `hls_ref.nve.layers.conv_layer` pixel for pixel.",
        "",
        "*Steady MAC/instr* is Table 5's metric: useful lane MACs per loop-body instruction "
        "(16 lanes x `mac` operations / II, 8 lanes in half-vector mode). *Whole-layer* divides "
        "the layer's MACs by every executed instruction: init parts, prologues, epilogues and "
        "the unused rows of each layer's last band (face L2 and speed L2 end with a band of "
        "1 of 16 rows). *Limit*: the slot whose operations per iteration equal II. *MiB*: "
        "both external streams (programs once, coefficients, every band's input columns "
        "including the rows bands share and padding, output words), unfused = one map per "
        "program; Table 1's MB counts every pixel once.",
        "",
        "### Per layer",
        "",
        layer_table(results),
        "",
        "### Weighted totals (Table 5)",
        "",
        "Sum over the layers of weight x MAC/instruction, with Table 5's printed workload "
        "percentages and with each layer's share of the network's MACs (Table 1, reproduced "
        "by the layers). The seed columns are Table 5's printed totals and the same sums over "
        "its rows. The last column is the network's MACs over all its cycles on one NVE.",
        "",
        totals_table(results),
        "",
        "Table 5's figures are steady-state ones; the whole-layer column has no counterpart "
        "in the seed.",
        "",
        "### Feature-map fusion",
        "",
        "The seed's greedy (Algorithm 2, with the last group flushed and a combination that "
        "does not fit closing its group) against the grouping kept: the best of the greedy, "
        "no fusion, the greedy capped at 2 ... k-1 maps per group and merging the "
        "best-matching pair of groups first, by whole-layer cycles, then external words. Maps "
        "run in the listed order within a group.",
        "",
        fusion_table(results),
        "",
        transfer_summary(results),
        "",
        "### Simulated row bands",
        "",
        "A band of a group executes the same instructions whatever its data, without "
        "stalls, so a layer's cycles are the sum over its groups of bands x the program's "
        "instructions per band (last column); every simulated band took exactly that many "
        "cycles. *Exact accumulators*: the same bands run again with pixels in -1 ... 1, at "
        "most 120 coefficients +-1 per map and a bias in -7 ... 7, shift 0 and the identity "
        "LUT, so every output pixel is its accumulator and a wrong product or coefficient "
        "cannot hide in the bits the realistic run's shift drops.",
        "",
        simulation_table(results, sims),
    ]
    return "\n".join(parts)


def _print_layers(results):
    if _described(results):
        print(described_table(results))
        print()
        print(fusion_table(results))
        return
    print(layer_table(results))
    print()
    print(fusion_table(results))
    if all(len(net.layers) == 4 for net in results):
        print()
        print(totals_table(results))


def _compile_all(args):
    fusion = not args.no_fusion
    out = []
    if args.network not in (*NETWORK_NAMES, "all"):
        described = read_network(args.network)
        t = time.perf_counter()
        result = compile_layers(described.name, described.layers, fusion=fusion,
                                layers=args.layers)
        print(f"{described.name}: {len(result.layers)} layers compiled in "
              f"{time.perf_counter() - t:.1f} s", file=sys.stderr)
        return [result]
    for name in _networks(args.network):
        t = time.perf_counter()
        result = compile_network(name, fusion=fusion, layers=args.layers)
        print(f"{name}: {len(result.layers)} layers compiled in {time.perf_counter() - t:.1f} s "
              f"({'fusion' if fusion else 'no fusion'})", file=sys.stderr)
        out.append(result)
    return out


def _write_programs(results, out):
    from hls_ref.nve.asm import disassemble

    out.mkdir(parents=True, exist_ok=True)
    summary = {"networks": []}
    for net in results:
        entry = {"network": net.name, "fusion": net.strategy, "macs": net.macs,
                 "cycles": net.cycles, "layers": []}
        for r in net.layers:
            layer, groups = r.layer, []
            stems = {}
            for k, p in enumerate(r.programs()):
                stem = f"{net.name}_{r.name}_p{k}"
                stems.update({maps: stem for maps in p.groups})
                (out / f"{stem}.asm").write_text(disassemble(p.program))
                (out / f"{stem}.bin").write_bytes(
                    b"".join(w.to_bytes(WORD_BYTES, "little") for w in p.program.words))
            for g in r.compiled.groups:
                groups.append({
                    "maps": list(g.spec.maps), "inputs": list(g.spec.inputs),
                    "program": stems[g.spec.maps], "instructions": g.program.size,
                    "form": g.emitted.form, "ii": g.ii, "lanes": g.lanes, "bands": g.bands,
                    "part": list(g.part) if g.part else None,
                    "cycles_per_band": g.instructions_per_band,
                    "input_words_per_band": len(g.emitted.stream),
                    "output_words_per_band": len(g.emitted.outputs),
                    "loop": [g.program.settings.loop_start, g.program.loop_end,
                             g.program.settings.iterations],
                    "agu": [list(a) for a in g.program.settings.agu]})
            entry["layers"].append({
                "layer": r.name,
                "geometry": {"in": list(layer.in_shape), "out": list(layer.out_shape),
                             "kernel": [layer.kernel_h, layer.kernel_w],
                             "stride": [layer.stride_h, layer.stride_w],
                             "pad": list(layer.pad)},
                "macs": r.macs, "cycles": r.cycles,
                "steady_mac_per_instruction": round(r.steady, 4),
                "layer_mac_per_instruction": round(r.whole, 4),
                "seed_automatic": r.seed_automatic, "seed_manual": r.seed_manual,
                "input_bytes": r.input_bytes, "output_bytes": r.output_bytes,
                "unfused_bytes": r.unfused_bytes,
                "fusion": {"kept": r.fusion.chosen.label,
                           "candidates": [{"label": c.label,
                                           "groups": [list(g) for g in c.groups],
                                           "cycles": c.estimate.cycles,
                                           "words": c.estimate.words}
                                          for c in r.fusion.candidates]},
                "groups": groups})
        summary["networks"].append(entry)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _compile_or_report(args):
    """The compiled networks of ``args``, or None after printing why they cannot be."""
    try:
        return _compile_all(args)
    except (KeyError, ValueError, NveCompileError, OSError) as error:
        message = error.args[0] if isinstance(error, KeyError) else error
        print(f"tessera nve: error: {message}", file=sys.stderr)
        return None


def cmd_compile(args):
    results = _compile_or_report(args)
    if results is None:
        return 2
    for net in results:
        for r in net.layers:
            for k, p in enumerate(r.programs()):
                maps = sum(len(g) for g in p.groups)
                print(f"{net.name} {r.name} p{k}: {len(p.groups)} group(s), {maps} maps, "
                      f"{p.size} instructions ({p.form}), II {p.ii} ({p.limit}), "
                      f"{p.lanes * p.macs / p.ii:.2f} MAC/instr in the loop")
    _print_layers(results)
    if args.out:
        _write_programs(results, Path(args.out))
        print(f"\nprograms and summary.json written to {args.out}")
    return 0


def cmd_report(args):
    if args.simulate_bands < 0:
        print("tessera nve: error: --simulate-bands must be 0 or more", file=sys.stderr)
        return 2
    if args.write_results and (args.network != "all" or args.layers or args.no_fusion
                               or not args.simulate_bands):
        print("tessera nve: error: --write-results needs NETWORK all, every layer, fusion and "
              "--simulate-bands 1 or more", file=sys.stderr)
        return 2
    t = time.perf_counter()
    results = _compile_or_report(args)
    if results is None:
        return 2
    _print_layers(results)
    sims = None
    if args.simulate_bands:
        sims = {net.name: simulate_network(net, bands=args.simulate_bands, seed=args.seed)
                for net in results}
        print()
        print(simulation_table(results, sims))
    ok = sims is None or _simulation_ok(sims)
    if not ok:
        print("\nMISMATCH: a simulated band differs from the golden model or the cycle count"
              + ("; docs/results.md left as it was" if args.write_results else ""))
    elif args.write_results:
        from sim.results import write_results_section

        write_results_section("nve", results_section(results, sims, args.simulate_bands,
                                                     time.perf_counter() - t))
        print("\nwrote docs/results.md")
    return 0 if ok else 1


def bench_report(write_results):
    """The report ``tessera bench`` runs: both networks, fused, :data:`BENCH_BANDS` simulated
    bands per program; rewrites the docs/results.md section when ``write_results``. Returns
    the exit status."""
    return cmd_report(argparse.Namespace(network="all", layers=None, no_fusion=False,
                                         simulate_bands=BENCH_BANDS, seed=3,
                                         write_results=write_results))


def add_parser(commands):
    """Add ``tessera nve`` (``compile`` and ``report``) to the ``tessera`` subcommands."""
    nve = commands.add_parser("nve", help="compile the seed-003 networks for the NVE",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = nve.add_subparsers(dest="nve_command", required=True)
    choices = [*NETWORK_NAMES, "all"]
    compile_ = sub.add_parser("compile", help="fuse and compile every layer; write programs")
    report = sub.add_parser("report", help="per-layer MAC/instruction and data transfer next "
                                           "to the seed's Table 5")
    for p in (compile_, report):
        p.add_argument("network", metavar="NETWORK",
                       help=f"{', '.join(choices)}, or a file describing a network (one line "
                            f"per layer: out HxW kernel KHxKW subsample SHxSW maps N connect "
                            f"...)")
        p.add_argument("--no-fusion", action="store_true", help="one output map per program")
        p.add_argument("--layers", nargs="+", metavar="L",
                       help="only these layers (L1 ... L4; totals need all four)")
    compile_.add_argument("--out", metavar="DIR",
                          help="write each program (.asm, .bin: 64-bit little-endian words) "
                               "and summary.json")
    compile_.set_defaults(run=cmd_compile)
    report.add_argument("--simulate-bands", type=int, default=0, metavar="N",
                        help="run N row bands of every distinct program on the simulator "
                             "against the golden model (0: compile only)")
    report.add_argument("--seed", type=int, default=3, help="seed of the simulated data")
    report.add_argument("--write-results", action="store_true",
                        help="rewrite the NVE section of docs/results.md")
    report.set_defaults(run=cmd_report)
    return nve
