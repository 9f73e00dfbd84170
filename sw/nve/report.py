"""The seed's Table 5 and what bounds a group program's steady state.

Table 5 gives MAC/instruction = useful lane MACs per loop-body instruction in the steady state
(16 x ``mac`` operations / II; 8 useful lanes in the experts' half-vector 1x1 code), for the
seed's generator (with coefficient packing, modulo scheduling and map fusion) and for the
experts' hand-written code. :mod:`.network` sets this compiler's figures next to it.
"""

__all__ = ["TABLE5", "bound"]

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
