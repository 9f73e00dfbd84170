"""Modulo scheduling: the initiation interval (II), the wrapped schedule and its verification.

``II`` starts at the larger of the resource bound (``res_mii``: the busiest slot's operations
per iteration; the seed's MII) and the recurrence bound (``rec_mii``: every loop-carried cycle
of dependences must fit in its iteration distance). For each candidate ``II`` the iteration is
list-scheduled against modulo resource tables (:mod:`.schedule`), so the wrapped schedule has
no collisions by construction; it is then *verified* independently by :func:`verify`, which
checks every rule again on the times alone, including everything that crosses iterations:

* one operation per slot and row; ``set.w`` and ``set.i`` never in one row (read port A);
* every read exactly 2 cycles before its set (so each read latch is consumed on arrival and
  the hold rule cannot break);
* every edge of the task graph with its iteration distance: the next iteration's register
  loads after this iteration's macs, the hand-off to ACT and its replacement, ``wr`` before
  ``rd``, and the write-after-read edges of the circular buffer (:func:`memory_edges`) for the
  chosen ring depth.

The first ``II`` whose schedule verifies is kept; the single-iteration (flat) schedule always
verifies at ``II`` = its length, which bounds the search (seed Sec. 5.2 wraps at MII and stops).
"""

import math
from dataclasses import dataclass

from .schedule import ResourceTable, place_acts, place_writes, schedule_core
from .taskgraph import WRITE_READ, Edge

__all__ = ["Schedule", "flat_schedule", "memory_edges", "modulo_schedule", "rec_mii",
           "res_mii", "ring_depth", "verify"]


@dataclass(frozen=True)
class Schedule:
    """A verified schedule of one iteration: ``times[op id]`` (cycles, the earliest operation at
    0), ``ii`` (cycles between iteration starts), ``ring`` (stored-column slots of the circular
    buffer, in iterations) and ``flat`` (True for the non-overlapped single-iteration schedule,
    whose ``ii`` is its length)."""

    times: dict
    ii: int
    ring: int
    flat: bool

    @property
    def span(self):
        """Cycles from the first to the last operation of one iteration."""
        return max(self.times.values()) + 1

    @property
    def stages(self):
        """Iterations in flight in the steady state (``ceil(span / ii)``)."""
        return -(-self.span // self.ii)


def res_mii(graph):
    """Resource bound on II: the most operations any slot issues per iteration."""
    return max(graph.count(slot) for slot in ("mema", "memb", "wreg", "ireg", "vmac", "act"))


def _dag_order(n, edges):
    indeg = [0] * n
    out = [[] for _ in range(n)]
    for e in edges:
        out[e.src].append(e)
        indeg[e.dst] += 1
    order = [i for i in range(n) if indeg[i] == 0]
    for i in order:
        for e in out[i]:
            indeg[e.dst] -= 1
            if indeg[e.dst] == 0:
                order.append(e.dst)
    if len(order) != n:
        raise AssertionError("the intra-iteration edges form a cycle")
    return order, out


def rec_mii(graph):
    """Recurrence bound on II: for every edge to a later iteration (``dist > 0``), the longest
    intra-iteration path back from its destination to its source plus its latency, over its
    distance. A lower bound (cycles through several such edges are checked by :func:`verify`)."""
    n = len(graph.ops)
    intra = [e for e in graph.edges if e.dist == 0]
    order, out = _dag_order(n, intra)
    entered = {e.dst for e in intra}  # no path reaches the others (the writes, for one)
    best, memo = 1, {}
    for e in graph.edges:
        if e.dist <= 0 or (e.src not in entered and e.src != e.dst):
            continue
        if e.dst not in memo:
            dist = [-math.inf] * n
            dist[e.dst] = 0
            for i in order:
                if dist[i] > -math.inf:
                    for f in out[i]:
                        dist[f.dst] = max(dist[f.dst], dist[i] + f.lat)
            memo[e.dst] = dist
        path = memo[e.dst][e.src]
        if path > -math.inf:
            best = max(best, -(-(path + e.lat) // e.dist))
    return best


def ring_depth(graph, times, ii):
    """Stored-column slots (iterations) the circular buffer needs so that no write overwrites a
    word before its last read: at least the deepest read back, at least 1, and for every
    write/read pair of a word ``delta + ceil((t_rd - t_wr + 1) / ii)``."""
    depth = max(1, max((op.delta for op in graph.ops if op.name == "rd"), default=0))
    for e in graph.edges:
        if e.why == WRITE_READ:
            need = e.dist + -(-(times[e.dst] - times[e.src] + 1) // ii)
            depth = max(depth, need)
    return depth


def memory_edges(graph, ring):
    """The write-after-read edges of a circular buffer of ``ring`` iterations: the write that
    reuses a slot (``ring`` iterations after the slot's writer) comes at least 1 cycle after
    every read of the slot's word (a read in the cycle of the write would see the new word)."""
    return [Edge(e.dst, e.src, 1, ring - e.dist, "rd before the ring slot is rewritten")
            for e in graph.edges if e.why == WRITE_READ]


def verify(graph, times, ii, ring):
    """Every rule the wrapped schedule must satisfy (module docstring); returns the list of
    violations as messages (empty: the schedule is correct)."""
    ops = graph.ops
    problems = []
    if set(times) != {op.id for op in ops}:
        problems.append("not every operation has a time")
        return problems
    rows = {}
    for op in ops:
        key = (op.slot, times[op.id] % ii)
        if key in rows:
            problems.append(f"{op.slot} row {key[1]}: ops {rows[key]} and {op.id} collide")
        rows[key] = op.id
    set_w = {times[op.id] % ii for op in ops if op.slot == "wreg" and op.name == "set"}
    for op in ops:
        if op.slot == "ireg" and op.name == "set" and times[op.id] % ii in set_w:
            problems.append(f"row {times[op.id] % ii}: set.w and set.i share read port A")
        if op.name == "rd" and times[op.target] - times[op.id] != 2:
            problems.append(f"read {op.id} is {times[op.target] - times[op.id]} cycles before "
                            f"its set {op.target}, not 2")
    for e in list(graph.edges) + memory_edges(graph, ring):
        if times[e.dst] + ii * e.dist < times[e.src] + e.lat:
            problems.append(f"{e.why}: op {e.dst} at {times[e.dst]} (+{e.dist} iterations of "
                            f"{ii}) is less than {e.lat} after op {e.src} at {times[e.src]}")
    return problems


def _normalised(times):
    low = min(times.values())
    return {i: t - low for i, t in times.items()}


def flat_schedule(graph):
    """The single-iteration schedule (iterations do not overlap; seed Sec. 4.3, Fig. 17/24):
    core ops bottom-up, writes ALAP within the iteration, acts in the next iteration. Its
    ``ii`` is the iteration length (every operation but the acts)."""
    times, table = schedule_core(graph)
    place_writes(graph, times, table)
    length = max(times.values()) - min(times.values()) + 1
    times = _normalised(times)
    table = ResourceTable(length)
    for i, t in times.items():
        table.take(graph.ops[i].slot, t, i)
    if not place_acts(graph, times, table, length):
        raise AssertionError("no act cycle in a flat schedule")
    ring = ring_depth(graph, times, length)
    problems = verify(graph, times, length, ring)
    if problems:
        raise AssertionError("flat schedule does not verify: " + "; ".join(problems[:3]))
    return Schedule(times, length, ring, True)


def modulo_schedule(graph, flat=None):
    """The modulo schedule of the smallest verifying II from ``max(res_mii, rec_mii)`` below
    the flat schedule's length; the flat schedule (``flat``, computed if not given) if none
    verifies."""
    flat = flat or flat_schedule(graph)
    for ii in range(max(res_mii(graph), rec_mii(graph)), flat.ii):
        core = schedule_core(graph, ii)
        if core is None:
            continue
        times, table = core
        if not place_writes(graph, times, table):
            continue
        if not place_acts(graph, times, table, ii):
            continue
        times = _normalised(times)
        ring = ring_depth(graph, times, ii)
        if not verify(graph, times, ii, ring):
            return Schedule(times, ii, ring, False)
    return flat
