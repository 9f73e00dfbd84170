"""Scheduling one iteration: reverse list scheduling with a resource table per slot.

The iteration's *core* (VMAC, weight- and image-register operations with the reads their sets
consume) is scheduled bottom-up from the last ``mac`` at time 0 (seed Algorithm 1, done as a
proper list scheduler): an operation becomes ready when every operation that depends on it is
placed, its latest start is the minimum over those dependences, and it goes to the latest cycle
at or before that where its slot and, for a ``set``, the read port(s) two cycles earlier are
free. The port-A conflict of ``set.w`` and ``set.i`` is the MEMA read slot they both need.
Because every operation is placed only after all its successors and never moves afterwards,
there is nothing to propagate again: the result satisfies every intra-iteration edge.

With ``ii`` the tables are modulo tables (a cycle ``t`` occupies row ``t mod ii``), which is how
the wrapped (modulo) schedule is built without collisions; without it they are plain cycle
tables (the seed's single-iteration schedule). Then:

* the writes of the new stored columns go ALAP into free MEMA cycles (seed Sec. 4.3), no later
  than 2 cycles before the first read of their word;
* the acts go ASAP after the ``setrb`` that hands their map to ACT (3 cycles), and no later
  than 2 cycles after the ``setrb`` that replaces it.
"""

import heapq

from .taskgraph import HAND_OFF, REPLACED, WRITE_READ

__all__ = ["ResourceTable", "place_acts", "place_writes", "schedule_core"]


class ResourceTable:
    """Which cycles each slot is busy: rows ``t mod ii`` (modulo) or cycles ``t`` (flat)."""

    def __init__(self, ii=None):
        self.ii = ii
        self.busy = {}

    def _key(self, slot, t):
        return (slot, t % self.ii if self.ii else t)

    def free(self, slot, t):
        return self._key(slot, t) not in self.busy

    def take(self, slot, t, op_id):
        key = self._key(slot, t)
        assert key not in self.busy, key
        self.busy[key] = op_id


def _fits(table, op, ops, t):
    if not table.free(op.slot, t):
        return False
    return all(table.free(ops[r].slot, t - 2) for r in op.reads)


def schedule_core(graph, ii=None):
    """Times (cycles, the last mac at 0, all others <= 0) of the core operations, reads
    included, and the :class:`ResourceTable` they occupy; ``None`` when a modulo table has no
    free row for some operation or a loop-carried edge between core operations fails at
    ``ii``."""
    ops = graph.ops
    core = {op.id for op in ops if op.slot != "act" and op.name not in ("wr", "rd")}
    succ = {i: [] for i in core}
    pred = {i: [] for i in core}
    for e in graph.edges:
        if e.dist == 0 and e.src in core and e.dst in core:
            succ[e.src].append(e)
            pred[e.dst].append(e)
    waiting = {i: len(succ[i]) for i in core}
    table = ResourceTable(ii)
    times = {}
    heap = [(0, -i) for i in core if waiting[i] == 0]  # (-latest start, -id): latest first
    heapq.heapify(heap)
    search = ii if ii else 1 << 20
    while heap:
        neg_latest, neg_id = heapq.heappop(heap)
        latest, i = -neg_latest, -neg_id
        op = ops[i]
        for t in range(latest, latest - search, -1):
            if _fits(table, op, ops, t):
                break
        else:
            return None
        times[i] = t
        table.take(op.slot, t, i)
        for r in op.reads:
            times[r] = t - 2
            table.take(ops[r].slot, t - 2, r)
        for e in pred[i]:
            waiting[e.src] -= 1
            if waiting[e.src] == 0:
                t_max = min(times[f.dst] - f.lat for f in succ[e.src])
                heapq.heappush(heap, (-t_max, -e.src))
    if len(times) != len(core) + sum(len(ops[i].reads) for i in core):
        raise AssertionError("the intra-iteration edges of the core form a cycle")
    if ii:
        for e in graph.edges:
            if e.dist and e.src in times and e.dst in times:
                if times[e.dst] + ii * e.dist < times[e.src] + e.lat:
                    return None
    return times, table


def place_writes(graph, times, table):
    """Place the writes ALAP into free MEMA cycles (modulo rows with a modulo table), latest
    deadline first: 2 cycles before the earliest read of the word (reads ``delta`` iterations
    later count ``ii * delta`` later; with a flat table only the reads of the writing
    iteration count). Updates ``times`` and ``table``; returns False if a modulo table has no
    free MEMA row."""
    ii = table.ii
    deadline = {}
    for e in graph.edges:
        if e.why == WRITE_READ and (ii or not e.dist):
            t = times[e.dst] + (ii or 0) * e.dist - e.lat
            deadline[e.src] = min(deadline.get(e.src, t), t)
    search = ii if ii else 1 << 20
    for i in sorted(deadline, key=lambda w: (deadline[w], w), reverse=True):
        for t in range(deadline[i], deadline[i] - search, -1):
            if table.free("mema", t):
                break
        else:
            return False
        times[i] = t
        table.take("mema", t, i)
    return True


def place_acts(graph, times, table, ii):
    """Place every act ASAP in a free ACT cycle (row) at or after 3 cycles past the ``setrb``
    that hands its map off and at most 2 cycles past the one that replaces it, for an
    initiation interval ``ii``. Returns False when some act has no free cycle in its window."""
    window = {}
    for e in graph.edges:
        if e.why == HAND_OFF:
            window.setdefault(e.dst, [None, None])[0] = times[e.src] + e.lat - ii * e.dist
        elif e.why == REPLACED:
            window.setdefault(e.src, [None, None])[1] = times[e.dst] + ii * e.dist - e.lat
    for acts in graph.acts:
        for op in acts:
            low, high = window[op.id]
            t = next((t for t in range(low, high + 1) if table.free("act", t)), None)
            if t is None:
                return False
            times[op.id] = t
            table.take("act", t, op.id)
    return True
