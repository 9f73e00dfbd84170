"""The task graph of one loop iteration of a group of output maps.

A *group* is one or more output maps of a layer that share one loop body: per iteration it
computes one output column vector of every map in turn (one accumulator set, so the maps run
one after the other) and writes the new input columns of all their input maps once. A group of
one map is the unfused program; fusion (seed Sec. 5.3) only chooses larger groups, and then
shared input columns are written once here because writes are made per group input, not per
map.

Operations (seed Sec. 4.2), per map: ``setrb`` and one ``mac`` per (input map, kernel column,
phase, tap); one weight-register operation per VMAC operation (``set.w`` at a chunk start of
the coefficient layout, else ``sh.w``); one image-register operation per ``mac``
(:class:`~.columns.ColumnLayout`); one read per port a ``set`` consumes; the writes of the new
stored columns; two ``act`` per map (one in half-vector mode), with the ``out`` flag.

Edges ``(src, dst, lat, dist)`` mean ``t(dst) + II * dist >= t(src) + lat`` where ``dst`` is in
the iteration ``dist`` after ``src``'s (latencies of ``docs/nve.md``):

* register op -> the VMAC op using it: 1; VMAC op -> the next op on that register
  (anti-dependence): 0; register op -> next op on the same register: 1;
* ``rd`` -> its ``set``: exactly 2 (the schedulers place the read with the set, so the read
  latch is always consumed on arrival and the hold rule holds trivially);
* VMAC op -> next VMAC op: 1 (one accumulator set: every map's macs lie between its ``setrb``
  and the next one, which hands them to ACT);
* ``setrb`` that hands a map off -> its acts: 3; act -> the ``setrb`` after that (which replaces
  the hand-off): -2;
* ``wr`` -> ``rd`` of the same word: 2, ``dist`` = iterations between writer and reader;
* loop-carried: the last VMAC, weight and image operations of an iteration before the first
  ones of the next. The write-after-read edges of the circular buffer depend on its depth and
  are added by :func:`.modulo.memory_edges`.
"""

from dataclasses import dataclass, field
from itertools import pairwise

from .columns import column_steps

__all__ = ["ACT_PARTIAL_WORDS", "HAND_OFF", "PLANES", "PLANE_WEIGHTS", "REPLACED", "WRITE_READ",
           "Edge", "GroupSpec", "Op", "TaskGraph", "build_graph", "forbidden_starts",
           "plane_op"]

# The ``why`` of the edges the schedulers look up by kind (the others only name their rule).
#: ``wr`` -> ``rd`` of the same word.
WRITE_READ = "wr -> rd"
#: ``setrb`` -> an act of the map it hands off to ACT.
HAND_OFF = "setrb -> act of the handed-off map"
#: act -> the ``setrb`` whose hand-off replaces the one it activates.
REPLACED = "act before the hand-off is replaced"


#: Digit planes of a partial sum (``hls_ref.nve.numerics.PARTIAL_DIGITS``) and their reload
#: operations: plane ``k`` enters with weight ``PLANE_WEIGHTS[k]`` through ``mac`` (k < 2) or
#: ``mach`` (the product shifted 16 bits).
PLANES = 4
PLANE_WEIGHTS = (1, 256, 1, 256)
ACT_PARTIAL_WORDS = 8


def plane_op(k):
    """The VMAC operation that reloads digit plane ``k``."""
    return "mac" if k < 2 else "mach"


@dataclass(frozen=True)
class GroupSpec:
    """The geometry of a group: ``maps`` (output maps of the layer, in body order),
    ``inputs`` (input maps, in local-buffer order), ``connections[i]`` the positions in
    ``inputs`` that map ``maps[i]`` reads (in the layer's order), the kernel and strides, and
    the :class:`~.columns.ColumnLayout`.

    Partial sums (one map split across programs, ``docs/nve.md``): with ``reload`` the last
    :data:`PLANES` connections of every map are the digit planes of the partial sum an
    earlier program sent out; each is read at one tap only, kernel row 0 of the first column
    an iteration writes (one ``set.i`` and one ``mac``/``mach``, weight 1 or 256), the other
    taps are skipped. With ``partial_out`` each
    map's accumulators leave as the 8 ``act.ps`` words instead of ``act.lo``/``act.hi``."""

    maps: tuple
    inputs: tuple
    connections: tuple
    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    columns: object
    reload: bool = False
    partial_out: bool = False

    def is_plane(self, position, j):
        """Whether connection ``j`` of map ``maps[position]`` is a digit plane (and which:
        ``j - first plane``), else None."""
        if not self.reload:
            return None
        first = len(self.connections[position]) - PLANES
        return j - first if j >= first else None

    @property
    def steps(self):
        """The :class:`~.columns.ColumnSteps` along the row."""
        return column_steps(self.kernel_w, self.stride_w)

    def mac_taps(self, position):
        """``(j, a, c)`` of every ``mac`` of map ``maps[position]`` in issue order: its ``j``-th
        input, kernel row ``a``, kernel column ``c`` (a digit plane: its first tap only)."""
        cols = self.columns
        out = []
        for j in range(len(self.connections[position])):
            if self.is_plane(position, j) is not None:
                out.append((j, 0, self.steps.first_new))
                continue
            for c in range(self.kernel_w):
                for p in cols.phases:
                    for t in range(cols.taps[p]):
                        out.append((j, cols.stride * t + p, c))
        return out


@dataclass
class Op:
    """One operation of the iteration. ``slot``/``name`` as in ``hls_ref.nve.isa.OPS``
    (``lo``/``hi`` for the acts); ``position``: the group map it belongs to (-1: none);
    ``word``: memory ops' word, ``("coef", n)`` or ``("pix", input, j, k)`` (stored column ``j``,
    word ``k``); ``delta``: iterations from the write of a read's word to the read; ``reads``:
    a set's read ops; ``target``: a read's set; ``coef``: a weight op's coefficient index in its
    map's sequence; ``plane``: a VMAC op that reloads a partial-sum digit plane (not a MAC of
    the layer)."""

    id: int
    slot: str
    name: str
    position: int = -1
    word: tuple | None = None
    delta: int = 0
    reads: tuple = ()
    target: int = -1
    coef: int = -1
    plane: bool = False


@dataclass(frozen=True)
class Edge:
    """``t(dst) + II * dist >= t(src) + lat``; ``why`` names the rule for messages."""

    src: int
    dst: int
    lat: int
    dist: int
    why: str


@dataclass
class TaskGraph:
    """The operations and edges of one iteration of a group, with what emission and the host
    need: ``layouts[i]`` the chunk sizes of map ``i``'s coefficients; ``coef_words[n]`` =
    ``(position, first coefficient, count)`` of coefficient word ``n``; ``vmac`` the VMAC op
    ids in issue order; ``setrbs[i]`` map ``i``'s ``setrb``; ``acts[i]`` its act ops."""

    spec: GroupSpec
    layouts: tuple
    ops: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    coef_words: list = field(default_factory=list)
    vmac: list = field(default_factory=list)
    setrbs: list = field(default_factory=list)
    acts: list = field(default_factory=list)

    def add(self, slot, name, **kw):
        op = Op(len(self.ops), slot, name, **kw)
        self.ops.append(op)
        return op

    def edge(self, src, dst, lat, dist=0, why=""):
        self.edges.append(Edge(src.id, dst.id, lat, dist, why))

    @property
    def mac_count(self):
        """``mac`` (and ``mach``) operations per iteration that are MACs of the layer (the
        reloads of partial-sum planes are not)."""
        return sum(1 for op in self.ops if op.name in ("mac", "mach") and not op.plane)

    def count(self, slot):
        """Operations per iteration in ``slot``."""
        return sum(1 for op in self.ops if op.slot == slot)

    @property
    def writes(self):
        return [op for op in self.ops if op.name == "wr"]


def forbidden_starts(spec, position):
    """Sequence positions of map ``position`` whose image operation uses port A (``set.i``):
    a chunk of coefficients starting there collides with it when the VMAC runs back to back.
    Position 0 is the bias (``setrb`` has no image operation)."""
    cols = spec.columns
    if cols.half:
        return frozenset()
    out, k = set(), 1
    for j in range(len(spec.connections[position])):
        if spec.is_plane(position, j) is not None:
            out.add(k)  # a plane's one tap is a set.i
            k += 1
            continue
        for _ in range(spec.kernel_w):
            for p in cols.phases:
                out.add(k)  # tap 0 of every phase is a set.i
                k += cols.taps[p]
    return frozenset(out)


def build_graph(spec, layouts):
    """The :class:`TaskGraph` of one iteration of group ``spec`` with coefficient chunk sizes
    ``layouts[i]`` for map ``i`` (each summing to 1 + its mac count)."""
    g = TaskGraph(spec, tuple(tuple(s) for s in layouts))
    cols, steps = spec.columns, spec.steps
    acts_per_map = (("ps",) * ACT_PARTIAL_WORDS if spec.partial_out else
                    ("hi",) if cols.half else ("lo", "hi"))
    for pos in range(len(spec.maps)):
        word_of = {}  # coefficient index -> its coefficient word; chunk starts load with set.w
        first = 0
        for size in g.layouts[pos]:
            for q in range(first, first + size):
                word_of[q] = len(g.coef_words)
            g.coef_words.append((pos, first, size))
            first += size
        setrb = g.add("vmac", "setrb", position=pos)
        g.vmac.append(setrb)
        g.setrbs.append(setrb)
        multiplies = []
        for j, _, _ in spec.mac_taps(pos):
            plane = spec.is_plane(pos, j)
            multiplies.append(g.add("vmac", "mac" if plane is None else plane_op(plane),
                                    position=pos, plane=plane is not None))
        vmac_ops = [setrb, *multiplies]
        g.vmac += vmac_ops[1:]
        for q in range(len(vmac_ops)):
            if q == 0 or word_of[q] != word_of[q - 1]:
                w = g.add("wreg", "set", position=pos, coef=q)
                rd = g.add("mema", "rd", word=("coef", word_of[q]), target=w.id)
                w.reads = (rd.id,)
            else:
                g.add("wreg", "sh", position=pos, coef=q)
        for j, inp in enumerate(spec.connections[pos]):
            plane = spec.is_plane(pos, j) is not None
            # a plane is read at one tap: row 0 of the column written in this iteration
            for c in (steps.first_new,) if plane else range(spec.kernel_w):
                delta, jj = steps.reads[c]
                for p in cols.phases[:1] if plane else cols.phases:
                    for name, word_a, word_b in cols.phase_ops(p)[:1 if plane else None]:
                        r = g.add("ireg", name, position=pos)
                        reads = []
                        for slot, word in (("mema", word_a), ("memb", word_b)):
                            if word is not None:
                                rd = g.add(slot, "rd", word=("pix", inp, jj, word),
                                           delta=delta, target=r.id)
                                reads.append(rd.id)
                        r.reads = tuple(reads)
        g.acts.append([g.add("act", half, position=pos) for half in acts_per_map])
    # writes of the new stored columns of every group input, once per group (the words some
    # read takes: a partial-sum plane is read at its first tap only)
    read = {op.word for op in g.ops if op.name == "rd"}
    for j in range(steps.new):
        for inp in range(len(spec.inputs)):
            for k in range(cols.words):
                if ("pix", inp, j, k) in read:
                    g.add("mema", "wr", word=("pix", inp, j, k))
    _edges(g)
    return g


def _edges(g):
    ops = g.ops
    # VMAC order (one accumulator set) and the loop-carried hand-over to the next iteration
    for a, b in pairwise(g.vmac):
        g.edge(a, b, 1, why="VMAC order")
    g.edge(g.vmac[-1], g.vmac[0], 1, 1, "VMAC order (next iteration)")
    for slot in ("wreg", "ireg"):
        regs = [op for op in ops if op.slot == slot]
        users = _users(g, slot)
        for r in regs:
            g.edge(r, users[r.id], 1, why=f"{slot.upper()} op -> its VMAC op")
        for a, b in pairwise(regs):
            g.edge(a, b, 1, why=f"{slot.upper()} order")
            g.edge(users[a.id], b, 0, why=f"VMAC op -> next {slot.upper()} op (anti)")
        g.edge(regs[-1], regs[0], 1, 1, f"{slot.upper()} order (next iteration)")
        g.edge(users[regs[-1].id], regs[0], 0, 1, f"VMAC op -> next {slot.upper()} op "
               "(anti, next iteration)")
    for op in ops:
        if op.name == "rd":
            g.edge(op, ops[op.target], 2, why="rd -> set (exactly 2)")
    # hand-off: map i is handed to ACT by the next setrb and replaced by the one after it
    n = len(g.setrbs)
    for i, acts in enumerate(g.acts):
        d1, h = divmod(i + 1, n)
        d2, r = divmod(i + 2, n)
        for act in acts:
            g.edge(g.setrbs[h], act, 3, -d1, HAND_OFF)
            g.edge(act, g.setrbs[r], -2, d2, REPLACED)
    writes = {op.word: op for op in g.writes}
    for op in ops:
        if op.name == "rd" and op.word[0] == "pix":
            g.edge(writes[op.word], op, 2, op.delta, WRITE_READ)


def _users(g, slot):
    """Register op id -> the VMAC op that uses the register state it makes."""
    users = {}
    if slot == "wreg":
        seq = {}
        for v in g.vmac:
            seq.setdefault(v.position, []).append(v)
        for op in g.ops:
            if op.slot == "wreg":
                users[op.id] = seq[op.position][op.coef]
        return users
    macs = iter(v for v in g.vmac if v.name != "setrb")
    for op in g.ops:
        if op.slot == "ireg":
            users[op.id] = next(macs)
    return users
