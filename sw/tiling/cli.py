"""``tessera tile``: tile a network and print what it costs."""

import re
import sys
from dataclasses import replace

from hls_ref.config import DEFAULT_CONFIG

from .capacity import Capacity, TilingError
from .cost import DmaCost
from .layouts import LAYOUT_CHOICES
from .report import fused_floor, hong_kung_bound, layer_figures, lower_bound, network_totals
from .strategies import STRATEGIES, build_schedule

__all__ = ["add_parser", "parse_size"]

_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20}


def parse_size(text):
    """``"256K"``, ``"2MiB"``, ``"65536"`` -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"memory size must look like 256K, 2M or 65536, not {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def _kib(n):
    return f"{n / 1024:,.1f}"


def _layer_table(figures, network):
    lines = ["| layer | op | tiling | tiles | cmds | on-chip | DMA calls | read KiB | "
             "written KiB | cost (cycles) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for f in figures:
        lines.append(f"| {f.layer} | {f.kind} | {f.tiling} | {f.tiles} | {f.commands} | "
                     f"{f.onchip_use:.0%} | {f.calls} | {_kib(f.read_bytes)} | "
                     f"{_kib(f.written_bytes)} | {f.cycles:,.0f} |")
    tiles, cmds, calls, read, written, cycles = network_totals(figures)
    lines.append(f"| **total** | | | {tiles} | {cmds} | | {calls} | {_kib(read)} | "
                 f"{_kib(written)} | {cycles:,.0f} |")
    return "\n".join(lines)


def compare_strategies(network, capacity, cost, strategies=None, layouts=None):
    """{strategy: [LayerFigures] or an error message}, and the lower bound."""
    results = {}
    for name in strategies or STRATEGIES:
        try:
            results[name] = layer_figures(build_schedule(network, name, capacity, cost,
                                                         layouts), network)
        except TilingError as error:
            results[name] = str(error)
    return results, lower_bound(network, capacity, cost)


def _compare_table(network, capacity, results, bound):
    """Per-layer DRAM traffic and cost of the layer-by-layer strategies and the bound, then
    network totals of every strategy (fused groups span layers, so they appear there)."""
    per_layer = [n for n, r in results.items() if not isinstance(r, str) and n != "fused"]
    hk = hong_kung_bound(network, capacity)
    lines = ["| layer | " + " | ".join(f"{n} KiB | {n} cycles" for n in per_layer)
             + " | bound KiB | bound cycles | Hong-Kung KiB |",
             "|---|" + "---:|---:|" * (len(per_layer) + 1) + "---:|"]
    for i, layer in enumerate(network.layers):
        cells = [f"{_kib(results[n][i].dram_bytes)} | {results[n][i].cycles:,.0f}"
                 for n in per_layer]
        lines.append(f"| {layer.name} | " + " | ".join(cells)
                     + f" | {_kib(bound[i][1])} | {bound[i][2]:,.0f} | {_kib(hk[i][1])} |")
    lines += ["", "| strategy | tiles/passes | DMA calls | DRAM KiB | cost (cycles) | "
              "vs optimal |", "|---|---:|---:|---:|---:|---:|"]
    best = results.get("optimal")
    base = network_totals(best)[5] if not isinstance(best, (str, type(None))) else None
    for n, r in results.items():
        if isinstance(r, str):
            lines.append(f"| {n} | | | | {r} | |")
            continue
        tiles, _, calls, read, written, cycles = network_totals(r)
        ratio = f"{cycles / base:.2f}x" if base else ""
        lines.append(f"| {n} | {tiles} | {calls} | {_kib(read + written)} | {cycles:,.0f} | "
                     f"{ratio} |")
    lines.append(f"| lower bound (layer by layer) | | | {_kib(sum(b[1] for b in bound))} | "
                 f"{sum(b[2] for b in bound):,.0f} | |")
    lines.append(f"| Hong-Kung bound (layer by layer) | | | {_kib(sum(h[1] for h in hk))} | "
                 f"| |")
    lines.append(f"| larger of the two per layer | | | "
                 f"{_kib(sum(max(b[1], h[1]) for b, h in zip(bound, hk)))} | | |")
    lines.append(f"| ideal whole-network fusion | | | "
                 f"{_kib(fused_floor(network, capacity))} | | |")
    return "\n".join(lines)


def capacity_from_args(args):
    config = replace(DEFAULT_CONFIG, double_buffer=not args.single_buffer,
                     **({"pes": args.pes} if args.pes else {}))
    ocm = parse_size(args.ocm) if args.ocm else None
    return Capacity(config, args.precision, None, ocm)


def cmd_tile(args):
    from sw.workloads import load_network

    try:
        network = load_network(args.model)
        capacity = capacity_from_args(args)
        cost = DmaCost.parse(args.cost) if args.cost else DmaCost()
        print(f"{network.name}: {len(network.layers)} layers, {network.macs:,} MACs; "
              f"{capacity.precision.label}, {capacity.describe()}; DMA cost {cost}")
        if args.compare:
            results, bound = compare_strategies(network, capacity, cost, layouts=args.layout)
            print(_compare_table(network, capacity, results, bound))
            return 0
        schedule = build_schedule(network, args.strategy, capacity, cost, args.layout)
        if args.layout != "hwc":
            kinds = [r.layout for r in schedule.regions.values() if r.kind == "activation"]
            print(f"layouts: {kinds.count('hwc')} tensors HWC, {kinds.count('blocked')} "
                  f"channel-blocked")
        print(_layer_table(layer_figures(schedule, network), network))
        if args.json:
            text = schedule.to_json(indent=1)
            if args.json == "-":
                print(text)
            else:
                with open(args.json, "w") as f:
                    f.write(text)
                print(f"schedule written to {args.json}")
        if args.validate:
            from .validate import validate_schedule

            report = validate_schedule(schedule, network, seed=args.seed)
            print(report.summary())
            return 0 if report.ok else 1
    except (KeyError, ValueError) as error:
        message = error.args[0] if isinstance(error, KeyError) else error
        print(f"tessera tile: error: {message}", file=sys.stderr)
        return 2
    return 0


def add_parser(commands):
    tile = commands.add_parser("tile", help="tile a network: DMA traffic, calls and cost")
    tile.add_argument("model", help="built-in network name or a .tflite file")
    tile.add_argument("--strategy", choices=list(STRATEGIES), default="optimal")
    tile.add_argument("--compare", action="store_true",
                      help="every strategy, the compulsory traffic and the Hong-Kung bound side "
                           "by side")
    tile.add_argument("--ocm", metavar="SIZE",
                      help="one shared on-chip memory of SIZE bytes (256K, 2M) instead of the "
                           "accelerator's PLMs")
    tile.add_argument("--precision", default="a8w8", help="ST configuration (a16w16 ... a4w4)")
    tile.add_argument("--pes", type=int, help="PEs (default: the accelerator's)")
    tile.add_argument("--single-buffer", action="store_true", help="no double buffering")
    tile.add_argument("--cost", metavar="C,p,t", help="DMA cost model parameters (cycles)")
    tile.add_argument("--layout", choices=LAYOUT_CHOICES, default="hwc",
                      help="activation layout: HWC (what the accelerators read today), "
                           "channel-blocked, or chosen per tensor (auto)")
    tile.add_argument("--json", metavar="FILE", help="write the schedule as JSON ('-': stdout)")
    tile.add_argument("--validate", action="store_true",
                      help="replay the schedule on the invocation-level golden model")
    tile.add_argument("--seed", type=int, default=0, help="seed of the validator's data")
    tile.set_defaults(run=cmd_tile)
    return tile
