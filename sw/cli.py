"""The ``tessera`` command line.

``tessera demo``        the README's main job: the ST multiplier and PE on the RTL against the
                        golden model, the golden models against TFLite on the MLPerf Tiny
                        models, a real ResNet-8 layer on the conv2d accelerator RTL, and the
                        synthesis table.
``tessera bench``       cycle benchmarks from simulation (``--write-results``: docs/results.md,
                        with the NVE report).
``tessera run MODEL``   run a model (built-in name or .tflite file) on the golden models or
                        (``--backend rtl``) on the RTL SoC.
``tessera compile MODEL -o DIR``  compile a model into an image for the SoC.
``tessera board run MODEL --port PORT | --sim``  run a model on a board (or the simulated
                        board) over its UART; ``tessera board program`` loads the bitstream.
``tessera tile MODEL``  tile a network for the accelerators: DMA traffic, calls and cost.
``tessera nve compile|report NETWORK``  the NVE code generator on the seed-003 networks.
``tessera precisions``  the ST configurations.
"""

import argparse
import sys

from hls_ref import Precision

__all__ = ["main"]


def _precision_table():
    lines = ["| config | code | activation x weight | products per ST op | result bits |",
             "|---|---:|---|---:|---:|"]
    for p in sorted(Precision, key=lambda p: -p.act_bits * 16 - p.weight_bits):
        lines.append(f"| {p.label} | {p.value:03b} | {p.geometry} | {p.lanes} | "
                     f"{p.product_bits} |")
    return "\n".join(lines)


def _bench_table(runs):
    baseline = {(run.multiplier, run.channels): run.cycles for run in runs
                if run.precision is Precision.A16W16}
    lines = ["| multiplier | config | channels | PEs | DSP blocks | cycles | MACs/cycle | "
             "MACs/DSP/cycle | utilisation | speed-up vs a16w16 | bit-exact |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for run in runs:
        speedup = baseline.get((run.multiplier, run.channels), run.cycles) / run.cycles
        per_dsp = "-" if run.macs_per_dsp_cycle is None else f"{run.macs_per_dsp_cycle:.2f}"
        lines.append(f"| {run.multiplier} | {run.precision.label} | {run.channels} | "
                     f"{run.pes} | {run.dsp_blocks} | {run.cycles} | "
                     f"{run.macs_per_cycle:.2f} | {per_dsp} | {run.utilisation:.1%} | "
                     f"{speedup:.2f}x | {'yes' if run.correct else 'NO'} |")
    return "\n".join(lines)


#: The PE rows ``tessera bench`` measures: one (and a LUT unit), two and four DSP blocks per ST
#: multiplier, all at the conv2d build's 4 stages.
BENCH_ROWS = (("dsp1", 4), ("dsp2", 4), ("dsp4", 4))


def _measure(channels_list, pes):
    from .pe_bench import run_dot_product

    order = (Precision.A16W16, Precision.A16W8, Precision.A8W8, Precision.A8W4,
             Precision.A4W4)
    return [run_dot_product(p, channels, pes=pes, stages=stages, multiplier=multiplier,
                            seed=channels)
            for multiplier, stages in BENCH_ROWS for channels in channels_list for p in order]


def cmd_precisions(args):
    print(_precision_table())
    return 0


def cmd_bench(args):
    runs = _measure(args.channels, args.pes) if args.pe else []
    table = _bench_table(runs)
    if args.pe:
        print(table)
    if args.write_results and args.pe:
        from sim.results import write_results_section

        write_results_section("bench-pe", "\n".join([
            "## PE row throughput by precision (RTL simulation)",
            "",
            "Regenerate with `make bench` (`tessera bench --write-results`). One dot product "
            f"per PE on a {args.pes}-PE row (input stage, 4 multiplier stages, accumulator), "
            "operands streamed back to back, cycles counted in the Amaranth simulator from "
            "the first operand to valid sums (pipeline latency included), sums checked "
            "against numpy. Three builds of the row: `dsp1` (each ST multiplier one 18x18 DSP "
            "block doing one 16x16, 16x8 or 8x8 product, or two 4x4 products packed, per "
            "cycle, and LUT nibble products for the other 8-bit lane or 4-bit pair), `dsp2` "
            "(two such DSP blocks) and `dsp4` (four 9x9 products, one DSP block each; the "
            "default conv2d build). "
            "MACs/DSP/cycle counts the row's DSP blocks only (the LUT unit's MACs included).",
            "",
            table]))
    conv2d_exact = True
    if args.conv2d:
        from .conv2d_bench import main as conv2d_bench

        print("\nConv2D accelerator RTL (Verilator), cycles from its own counters:")
        conv2d_exact = conv2d_bench(write_results=args.write_results, groups=args.conv2d)
    fc_exact = True
    if args.fc:
        from .fc_bench import main as fc_bench

        print("\nFC datapath RTL (Verilator), cycles from the accelerator's counters:")
        fc_exact = fc_bench(write_results=args.write_results)
    perchannel_exact = True
    if args.perchannel:
        from .perchannel_bench import main as perchannel_bench

        print("\nPer-channel datapath RTL (Verilator), cycles from the accelerator's counters:")
        perchannel_exact = perchannel_bench(write_results=args.write_results)
    nve_ok = True
    if args.write_results if args.nve is None else args.nve:
        from .nve.cli import BENCH_BANDS, bench_report

        print(f"\nNVE code generator on the seed-003 networks (tessera nve report all "
              f"--simulate-bands {BENCH_BANDS}):")
        nve_ok = bench_report(args.write_results) == 0
    soc_ok = True
    soc_models = args.soc
    if soc_models is None:
        from .soc_bench import MODELS

        soc_models = list(MODELS) if args.write_results else []
    if soc_models:
        from .soc_bench import soc_bench

        print("\nWhole networks on the RTL SoC (Verilator):")
        soc_ok = soc_bench(soc_models, write_results=args.write_results)
    comparisons, comparison_table = _compare_models(args.inputs) if args.golden else ([], "")
    if args.write_results and args.golden:
        from sim.results import write_results_section

        write_results_section("golden", "\n".join([
            "## Golden models against TFLite reference kernels",
            "",
            "Regenerate with `make bench`. Every layer output of each MLPerf Tiny model, for "
            f"{args.inputs} seeded random inputs, compared element by element with LiteRT "
            "2.3's reference kernels (`BUILTIN_REF`), both chained (the golden model runs the "
            "whole network) and isolated (each layer fed LiteRT's own inputs); times are per "
            "inference on the machine that ran the command.",
            "",
            comparison_table]))
        print("\nwrote docs/results.md")
    exact = all(c.mismatches + c.output_mismatches == 0 for c in comparisons)
    ok = (all(run.correct for run in runs) and exact and conv2d_exact and fc_exact
          and perchannel_exact and nve_ok and soc_ok)
    return 0 if ok else 1


def _compare_models(inputs):
    from .compare import compare_with_litert, format_comparisons
    from .models import BUILTIN_MODELS

    print(f"\nGolden models against TFLite's reference kernels (LiteRT BUILTIN_REF) on the "
          f"MLPerf Tiny models,\nevery layer's output compared (chained and isolated), "
          f"{inputs} seeded random inputs per model:")
    comparisons = [compare_with_litert(m, inputs=inputs, seed=0) for m in BUILTIN_MODELS]
    table = format_comparisons(comparisons)
    print(table)
    return comparisons, table


def cmd_demo(args):
    from boards.synth import DEMO, format_table, precision_cost, synthesize

    print("Tessera: sum-together (ST) precision-scalable multiplier and PE\n")
    print("ST configurations (one 16-bit activation operand x one 16-bit weight operand):")
    print(_precision_table())
    print("\nDot products on a 16-PE row, RTL in simulation, checked against numpy:")
    runs = _measure([256], 16)
    print(_bench_table(runs))
    comparisons, _ = _compare_models(args.inputs)
    if not args.no_synth:
        print("\nSynthesis (Yosys + nextpnr, out of context; PE rows: make synth-report):")
        results = [synthesize(block, device) for device, blocks in DEMO.items()
                   for block in blocks]
        print(format_table(results))
        print("\nCost of precision scalability:")
        print(precision_cost(results))
    layer_ok = True
    if not args.no_conv2d:
        from .conv2d_bench import demo_layer

        print("\nA real ResNet-8 conv layer on the conv2d accelerator RTL (Verilator, 16 PEs):")
        layer_ok = demo_layer()
    soc_ok = True
    if args.soc:
        from .soc_bench import demo_models

        print("\nWhole MLPerf Tiny models on the RTL SoC (Minerva RV32IM + one accelerator with "
              "the conv2d, per-channel and FC datapaths,\nVerilator; first run: the SoC's "
              "build, several minutes), every layer compared with LiteRT's reference kernels:")
        soc_ok = demo_models(args.soc)
    ok = all(run.correct for run in runs)
    exact = all(c.mismatches + c.output_mismatches == 0 for c in comparisons)
    print("\nall sums bit-exact" if ok else "\nMISMATCH against the golden model")
    if not layer_ok:
        print("MISMATCH between the conv2d RTL and the golden model")
    print("whole models on the RTL SoC bit-exact with LiteRT, bus bytes as predicted"
          if soc_ok else "MISMATCH on the RTL SoC (LiteRT or the predicted bus bytes)")
    ok = ok and layer_ok and soc_ok
    print("golden models bit-exact with TFLite on every layer" if exact
          else "MISMATCH between the golden models and TFLite")
    ok = ok and exact
    return 0 if ok else 1


def _soc_config(name):
    from hls_ref.config import SOC_BUILDS

    if name not in SOC_BUILDS:
        raise ValueError(f"unknown SoC build {name!r}; available: {', '.join(SOC_BUILDS)}")
    return SOC_BUILDS[name]


def cmd_run(args):
    from .run import run_model
    from .soc_run import RunError

    rtl = {}
    if args.backend == "rtl":
        rtl = dict(soc=_soc_config(args.soc), pause=args.backpressure,
                   pause_seed=args.backpressure_seed, plot=args.plot, verbose=args.verbose)
    elif args.plot:
        print("tessera run: --plot needs --backend rtl (the golden backend has no cycles)",
              file=sys.stderr)
        return 2
    try:
        mismatches = run_model(args.model, backend=args.backend, input_path=args.input,
                               output_path=args.output, dump_dir=args.dump_layers,
                               seed=args.seed, compare_litert=args.compare_litert, **rtl)
    except RunError as error:
        print(f"tessera run: the hardware reported an error: {error}", file=sys.stderr)
        return 3
    except (ValueError, OSError) as error:
        # bad model names, unsupported operators, inputs of the wrong shape, corrupted
        # images: one clear line
        print(f"tessera run: error: {error}", file=sys.stderr)
        return 2
    return 1 if mismatches else 0


def cmd_compile(args):
    from .soc_image import compile_model

    try:
        image = compile_model(args.model, _soc_config(args.soc),
                              reuse_buffers=not args.keep_buffers)
    except (ValueError, OSError) as error:
        print(f"tessera compile: error: {error}", file=sys.stderr)
        return 2
    directory = image.save(args.output)
    print(f"{image.model}: {len(image.layers)} layers, {len(image.data):,} bytes of constants "
          f"(checksum {image.header['checksum_a']:08x}{image.header['checksum_b']:08x}), "
          f"{image.header['buffer_bytes']:,} bytes of activation buffers")
    inp = image.tensors[image.input]
    if inp.unfold is not None:
        lay = inp.layout
        print(f"input {image.input}: written unfolded for its convolution ({lay.height} x "
              f"{lay.width} x {lay.channels}, {lay.bytes:,} bytes; docs/formats.md section 1c)")
    print("| # | layer | op | engine | descriptors | tiling / why on the processor |")
    print("|---:|---|---|---|---:|---|")
    for i, layer in enumerate(image.layers):
        if layer.accelerator is not None:
            engine, detail = image.soc.label(layer.accelerator), layer.tiling
        else:
            engine, detail = "cpu", layer.why
        print(f"| {i} | {layer.name} | {layer.op.name.lower()} | {engine} | "
              f"{layer.desc_count or '—'} | {detail} |")
    print(f"wrote {directory}/image.bin and image.json")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tessera", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="the main job: whole MLPerf Tiny models on the RTL SoC checked against "
        "LiteRT, the ST multiplier and PE row on the RTL, golden models against TFLite, a real "
        "ResNet-8 layer on the conv2d accelerator RTL, the synthesis table")
    demo.add_argument("--no-synth", action="store_true", help="skip the synthesis table")
    demo.add_argument("--no-conv2d", action="store_true",
                      help="skip the conv2d accelerator run (its Verilator build takes minutes)")
    demo.add_argument("--inputs", type=int, default=20,
                      help="random inputs per model for the TFLite comparison")
    from hls_ref.config import SOC_BUILDS

    from .soc_bench import DEMO_MODELS
    from .soc_bench import MODELS as SOC_MODELS

    soc_builds = list(SOC_BUILDS)
    demo.add_argument("--soc", nargs="*", default=list(DEMO_MODELS), choices=SOC_MODELS,
                      metavar="MODEL",
                      help=f"whole models on the RTL SoC (default: {' '.join(DEMO_MODELS)}; "
                           "none: skip)")
    demo.set_defaults(run=cmd_demo)
    bench = commands.add_parser("bench", help="cycle benchmarks from simulation")
    bench.add_argument("--channels", type=int, nargs="+", default=[64, 1024],
                       help="dot-product lengths")
    bench.add_argument("--pes", type=int, default=16, help="PEs in the row")
    bench.add_argument("--pe", action=argparse.BooleanOptionalAction, default=True,
                       help="the PE row's dot products (--no-pe: skip them)")
    bench.add_argument("--golden", action=argparse.BooleanOptionalAction, default=True,
                       help="the golden models against LiteRT on the MLPerf Tiny models "
                            "(--no-golden: skip it)")
    bench.add_argument("--inputs", type=int, default=100,
                       help="random inputs per model for the TFLite comparison")
    from .conv2d_bench import GROUPS as CONV2D_GROUPS

    bench.add_argument("--conv2d", nargs="*", default=list(CONV2D_GROUPS),
                       choices=CONV2D_GROUPS, metavar="GROUP",
                       help=f"conv2d RTL benchmark groups ({', '.join(CONV2D_GROUPS)}; "
                            "none: skip it)")
    bench.add_argument("--fc", action=argparse.BooleanOptionalAction, default=True,
                       help="the FC datapath's RTL benchmark (every MLPerf Tiny FC layer; "
                            "the autoencoder at a8w8 and a8w4, batch 1 and 8)")
    bench.add_argument("--perchannel", action=argparse.BooleanOptionalAction, default=True,
                       help="the per-channel datapath's RTL benchmark (every DS-CNN / VWW "
                            "depthwise layer, the pools and ResNet-8's adds)")
    bench.add_argument("--nve", action=argparse.BooleanOptionalAction, default=None,
                       help="also compile the NVE networks and simulate row bands (about "
                            "30 s; default: with --write-results)")
    bench.add_argument("--soc", nargs="*", default=None, choices=SOC_MODELS, metavar="MODEL",
                       help="whole models on the RTL SoC (default: all four with "
                            "--write-results, else none)")
    bench.add_argument("--write-results", action="store_true",
                       help="rewrite the benchmark section of docs/results.md")
    bench.set_defaults(run=cmd_bench)
    compile_ = commands.add_parser("compile", help="compile a model into an image for the SoC")
    compile_.add_argument("model", help="built-in name (resnet8, dscnn, vww, autoencoder) or a "
                                        ".tflite file")
    compile_.add_argument("-o", "--output", required=True, metavar="DIR",
                          help="directory for image.bin and image.json")
    compile_.add_argument("--soc", default="default", choices=soc_builds,
                          help="SoC build: default (Minerva + one accelerator with the conv2d, "
                               "per-channel and FC datapaths), conv (the conv2d datapath "
                               "alone) or cpu (the processor alone)")
    compile_.add_argument("--keep-buffers", action="store_true",
                          help="every tensor its own buffer (all readable after a run)")
    compile_.set_defaults(run=cmd_compile)
    run = commands.add_parser("run", help="run a model on the golden models or the RTL SoC")
    run.add_argument("model", help="built-in name (resnet8, dscnn, vww, autoencoder), a "
                                   ".tflite file, or (rtl) a directory from tessera compile")
    run.add_argument("--backend", choices=["golden", "rtl"], default="golden",
                     help="golden: the network-level golden models; rtl: the SoC in Verilator")
    run.add_argument("--soc", default="default", choices=soc_builds,
                     help="(rtl) SoC build: default, conv or cpu")
    run.add_argument("--backpressure", type=float, default=0.0, metavar="P",
                     help="(rtl) random back-pressure: each memory channel pauses with "
                          "probability P per cycle")
    run.add_argument("--backpressure-seed", type=int, default=1, metavar="N",
                     help="(rtl) seed of the back-pressure pattern")
    run.add_argument("--plot", metavar="FILE",
                     help="(rtl) draw the per-layer cycles and utilisation (PNG)")
    run.add_argument("--verbose", action="store_true", help="(rtl) report every layer")
    run.add_argument("--input", metavar="X.npy",
                     help="the model's input tensor (its dtype and shape); default: seeded "
                          "random")
    run.add_argument("--output", metavar="Y.npy", help="save the output tensor")
    run.add_argument("--dump-layers", metavar="DIR", help="save every layer's output tensor")
    run.add_argument("--seed", type=int, default=0, help="seed of the random input")
    run.add_argument("--compare-litert", action="store_true",
                     help="also run TFLite's reference kernels and count mismatches per layer")
    run.set_defaults(run=cmd_run)
    from .tiling.cli import add_parser as add_tile_parser

    add_tile_parser(commands)
    from .nve.cli import add_parser as add_nve_parser

    add_nve_parser(commands)
    from .board_cli import add_parser as add_board_parser

    add_board_parser(commands)
    precisions = commands.add_parser("precisions", help="list the ST configurations")
    precisions.set_defaults(run=cmd_precisions)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
