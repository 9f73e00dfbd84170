"""Coefficient layouts: how many coefficients each ``set.w`` loads.

The weight register holds 4 coefficients; the VMAC consumes one per operation (the bias for
``setrb``, one weight per ``mac``), so a map's coefficient sequence ``q_0 = bias, q_1, ...`` is
cut into chunks of 1..4, one local-buffer word and one ``set.w`` each; ``sh.w`` steps through a
chunk. A ``set.w`` issued in the cycle of a ``set.i`` collides on read port A (seed Sec. 3.4),
which costs a VMAC bubble. When the VMAC runs back to back, the register operation that feeds
VMAC operation ``j`` issues in the cycle before it on both register slots, so a chunk that
starts at a position whose image operation is a ``set.i`` collides: such positions are
*forbidden* starts.

Fewer chunks mean fewer port-A reads (the MEMA slot also takes every external write), fewer
forbidden starts mean fewer bubbles. :func:`candidate_layouts` offers the trade-offs; the code
generator schedules every candidate and keeps the best (seed Sec. 5.1 keeps the first
conflict-free one).
"""

__all__ = ["candidate_layouts", "chunk_starts", "conflicts", "fewest_loads", "full_packing",
           "seed_repacking"]


def full_packing(n, depth=4):
    """Chunks of ``depth`` coefficients and a shorter last one (tuple of chunk sizes)."""
    return (depth,) * (n // depth) + ((n % depth,) if n % depth else ())


def chunk_starts(sizes):
    """The sequence positions at which the chunks of ``sizes`` start."""
    starts, position = [], 0
    for size in sizes:
        starts.append(position)
        position += size
    return starts


def conflicts(sizes, forbidden):
    """Chunk starts of ``sizes`` that are in ``forbidden``."""
    return [s for s in chunk_starts(sizes) if s in forbidden]


def seed_repacking(n, forbidden, depth=4):
    """The seed's procedure (Sec. 5.1): start fully packed; while some chunk starts at a
    forbidden position, load one coefficient less in the chunk before it and pack the rest
    fully again. Stops with the conflicts left when the chunk before is a single coefficient."""
    sizes = list(full_packing(n, depth))
    for _ in range(4 * n):
        starts = chunk_starts(sizes)
        bad = next((k for k, s in enumerate(starts) if s in forbidden), None)
        if bad is None or bad == 0 or sizes[bad - 1] == 1:
            break
        sizes[bad - 1] -= 1
        sizes = sizes[:bad] + list(full_packing(n - sum(sizes[:bad]), depth))
    return tuple(sizes)


def fewest_loads(n, forbidden, penalty, depth=4):
    """The layout of least ``chunks + penalty * forbidden starts`` (dynamic programming over
    sequence positions; among equal costs the longer chunk first)."""
    cost = [0] * (n + 1)
    choice = [0] * (n + 1)
    for j in range(n - 1, -1, -1):
        choice[j] = min(range(min(depth, n - j), 0, -1), key=lambda size: cost[j + size])
        cost[j] = cost[j + choice[j]] + 1 + (penalty if j in forbidden else 0)
    sizes, j = [], 0
    while j < n:
        sizes.append(choice[j])
        j += choice[j]
    return tuple(sizes)


def candidate_layouts(n, forbidden, depth=4):
    """Distinct layouts worth scheduling, most packed first: full packing, the seed's
    repacking, the fewest loads with no forbidden start (if any exists), and the fewest loads
    where a forbidden start costs as much as one more load."""
    out = []
    for sizes in (full_packing(n, depth), seed_repacking(n, forbidden, depth),
                  fewest_loads(n, forbidden, 1000.0, depth), fewest_loads(n, forbidden, 1.0,
                                                                          depth)):
        if sizes not in out:
            out.append(sizes)
    return out
