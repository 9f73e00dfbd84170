"""The code generator on the seed's eight layers, next to the seed's Table 5.

Table 5 gives MAC/instruction = useful lane MACs per loop-body instruction in the steady state
(16 x ``mac`` operations / II; 8 useful lanes in the experts' half-vector 1x1 code), for the
seed's generator (with coefficient packing, modulo scheduling and map fusion) and for the
experts' hand-written code. :func:`seed_layers_report` compiles every layer (one map per group
unless ``groups`` fuses some) and returns, per layer, the steady-state and whole-layer figures,
the II of every distinct group program and what bounds it.
"""

from dataclasses import dataclass

from sw.nve_layers import nve_layers

from .compile import compile_layer

__all__ = ["TABLE5", "LayerReport", "bound", "format_report", "seed_layers_report"]

#: (network, layer) -> (seed generator, experts), MAC/instruction, seed Table 5.
TABLE5 = {
    ("face-detection", "L1"): (13.39, 13.71),
    ("face-detection", "L2"): (12.06, 10.95),
    ("face-detection", "L3"): (15.53, 15.53),
    ("face-detection", "L4"): (4.87, 5.89),
    ("speed-sign", "L1"): (13.39, 13.71),
    ("speed-sign", "L2"): (13.6, 13.67),
    ("speed-sign", "L3"): (15.88, 15.13),
    ("speed-sign", "L4"): (4.9, 6.26),
}


def bound(group):
    """``(cycles, slot)``: the largest per-iteration operation count of any slot of the
    group's task graph, i.e. the resource bound on II of this mapping; the slot names what
    limits the steady state when II equals it. MEMA counts external writes, port-A image reads
    and coefficient reads."""
    graph = group.graph
    counts = {slot: graph.count(slot) for slot in ("vmac", "mema", "memb", "wreg", "ireg")}
    slot = max(counts, key=lambda s: (counts[s], s == "vmac"))
    return counts[slot], slot.upper()


@dataclass(frozen=True)
class LayerReport:
    """One layer: steady-state and whole-layer useful MAC/instruction, Table 5's two values,
    and per distinct group program ``(maps, II, mac ops per iteration, useful lanes, bound
    cycles, bounding slot, form, program instructions)``; ``input_bytes`` / ``output_bytes``
    of the whole layer's streams."""

    network: str
    layer: str
    steady: float
    whole: float
    seed: float
    experts: float
    programs: tuple
    input_bytes: int
    output_bytes: int


def seed_layers_report(groups=None, check=False):
    """A :class:`LayerReport` per seed layer; ``groups[(network, layer)]`` optionally fuses
    maps (lists of map lists). Compile only (``check`` also runs the ISS self-check)."""
    out = []
    for network in ("face-detection", "speed-sign"):
        for name, layer in nve_layers(network).items():
            g = (groups or {}).get((network, name))
            compiled = compile_layer(layer, groups=g, name=f"{network} {name}", check=check)
            programs = {}
            for group in compiled.groups:
                key = (group.ii, group.macs_per_iteration, group.lanes, group.program.size)
                cycles, slot = bound(group)
                programs.setdefault(key, [[], group.ii, group.macs_per_iteration, group.lanes,
                                          cycles, slot, group.emitted.form,
                                          group.program.size])[0].append(group.spec.maps)
            seed, experts = TABLE5[(network, name)]
            out.append(LayerReport(network, name, compiled.steady_mac_per_instruction,
                                   compiled.layer_mac_per_instruction, seed, experts,
                                   tuple(tuple(p) for p in programs.values()),
                                   8 * compiled.input_words, 8 * compiled.output_words))
    return out


def format_report(reports):
    """A plain-text table of :func:`seed_layers_report` rows."""
    lines = [f"{'layer':<18} {'steady':>7} {'layer':>7} {'seed':>6} {'expert':>6} "
             f"{'in MiB':>7} {'out MiB':>7}  programs (maps x II / macs x lanes / bound slot "
             f"/ form / instructions)"]
    for r in reports:
        progs = "; ".join(f"{len(p[0])}x II {p[1]} / {p[2]}x{p[3]} / {p[4]} {p[5]} / {p[6]} / "
                          f"{p[7]}" for p in r.programs)
        lines.append(f"{r.network + ' ' + r.layer:<18} {r.steady:7.2f} {r.whole:7.2f} "
                     f"{r.seed:6.2f} {r.experts:6.2f} {r.input_bytes / 2**20:7.2f} "
                     f"{r.output_bytes / 2**20:7.2f}  {progs}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_report(seed_layers_report()))
