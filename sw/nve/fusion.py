"""Feature-map fusion: which output maps of a layer share one loop body (seed Sec. 5.3).

Maps fused into one group compute one output column vector each per iteration, one after the
other, and write the new input columns of the group's inputs once: input maps shared by
several maps of the group are streamed and stored once instead of once per map, and one program
serves all of them. The cost is a longer program, bounded by the instruction buffer, and a
larger ring of stored columns, bounded by the local buffer.

:func:`seed_greedy` is the seed's Algorithm 2 without its two defects: it starts from the
largest program, repeatedly adds the pending map whose input set has the smallest symmetric
difference with the group's (ties: the largest intersection, then the first pending map) and
keeps the combination when its modulo-scheduled program fits both buffers. A combination that
does not fit is caught (the compiler raises :class:`~.errors.NveCompileError`) and closes the
group; the group that is open when no map is left is kept as well (the seed's listing drops
it).

:func:`fuse_layer` runs the greedy and a few cheap alternatives (no fusion, the greedy with at
most ``k`` maps per group, merging the best-matching pair of groups first) and keeps the
grouping with the fewest cycles of the whole layer, then the fewest external words. Every
candidate group is compiled once per structure (maps, input counts and sharing, as
:func:`.compile.compile_layer` shares programs) on a few output columns; the whole-row figures
follow exactly from that program (each further column adds one loop-body execution: II
cycles, the iteration's new input words and its output words). The chosen grouping is
emitted on the whole row from the probes' schedules (a schedule does not depend on the row
length), which confirms those figures.
"""

from dataclasses import dataclass, field, replace
from itertools import combinations

from hls_ref.nve.isa import DEFAULT_CONFIG

from .columns import column_layout, column_steps
from .compile import CompiledLayer, _finish, _signature, compile_group, compile_layer
from .errors import NveCompileError

__all__ = ["Attempt", "Candidate", "FusedLayer", "GroupEstimate", "GroupProbe", "fuse_layer",
           "pair_merging", "partner", "seed_greedy"]

#: Output columns of the short layer a candidate group is compiled on: enough for every
#: program form to have loop-body executions; the row's remaining columns add one each.
PROBE_COLUMNS = 24
#: The label suffix of candidates in half-vector mode (when both modes are searched).
_HALF = " (half vector)"


@dataclass(frozen=True)
class Attempt:
    """One fusion attempt: ``group`` (maps before), ``candidate`` (the map or group added),
    ``fits``; ``reason``: why the combination does not fit (the compiler's message)."""

    group: tuple
    candidate: tuple
    fits: bool
    reason: str = ""


def partner(inputs, pending, inputs_of):
    """The pending map (or group) to combine with a group reading the set ``inputs``: the
    smallest symmetric difference of the input sets, then the largest intersection, then the
    first in ``pending`` (seed Algorithm 2)."""
    best, key = None, None
    for c in pending:
        other = inputs_of(c)
        k = (len(inputs ^ other), -len(inputs & other))
        if key is None or k < key:
            best, key = c, k
    return best


def seed_greedy(maps, inputs_of, size_of, try_group, cap=None):
    """The seed's greedy fusion (Algorithm 2), with the last group flushed and a combination
    that does not fit closing the group.

    ``maps``: the output maps in layer order; ``inputs_of(m)``: the set of input maps of map
    ``m``; ``size_of(m)``: the size of map ``m``'s own program (instructions; the largest
    starts a group, the first of equals); ``try_group(maps)``: ``None`` when the group fits the
    instruction and local buffers, else the reason. ``cap``: close a group when it holds this
    many maps (``None``: only the buffers limit it). Returns ``(groups, attempts)``: tuples of
    maps in the order they joined, and every :class:`Attempt`.
    """
    pending = list(maps)
    groups, attempts = [], []

    def take_largest():
        f = max(pending, key=lambda m: (size_of(m), -pending.index(m)))
        pending.remove(f)
        return (f,)

    group = take_largest()
    while pending:
        if cap is not None and len(group) >= cap:
            groups.append(group)
            group = take_largest()
            continue
        inputs = set().union(*(inputs_of(m) for m in group))
        c = partner(inputs, pending, inputs_of)
        reason = try_group((*group, c))
        attempts.append(Attempt(group, (c,), reason is None, reason or ""))
        if reason is None:
            group += (c,)
            pending.remove(c)
        else:
            groups.append(group)
            group = take_largest()
    groups.append(group)  # the open group when no map is left (missing in the seed's listing)
    return groups, attempts


def pair_merging(maps, inputs_of, try_group):
    """Agglomerative fusion: start from one group per map and repeatedly merge the two groups
    whose input sets have the smallest symmetric difference (then the largest intersection,
    then the earliest groups) among the pairs whose combination fits, until no pair fits.
    Arguments and result as :func:`seed_greedy`."""
    groups = [(m,) for m in maps]
    attempts, refused = [], set()

    def ins(group):
        return frozenset().union(*(inputs_of(m) for m in group))

    while True:
        pairs = sorted(((len(ins(a) ^ ins(b)), -len(ins(a) & ins(b)), i, j)
                        for (i, a), (j, b) in combinations(enumerate(groups), 2)
                        if (a, b) not in refused))
        merged = False
        for _, _, i, j in pairs:
            a, b = groups[i], groups[j]
            reason = try_group(a + b)
            attempts.append(Attempt(a, b, reason is None, reason or ""))
            if reason is None:
                groups = [*groups[:i], a + b, *groups[i + 1:j], *groups[j + 1:]]
                merged = True
                break
            refused.add((a, b))
        if not merged:
            return groups, attempts


@dataclass(frozen=True)
class GroupProbe:
    """A group's program compiled on a short row, and its exact figures on the whole row
    (per band): ``size`` (program instructions), ``ii``, ``lanes``, ``form``, ``cycles`` (=
    instructions executed: a band never stalls when the stream keeps up), ``input_words``
    (stream words without the program), ``output_words``."""

    size: int
    ii: int
    lanes: int
    form: str
    cycles: int
    input_words: int
    output_words: int
    macs_per_iteration: int


@dataclass(frozen=True)
class GroupEstimate:
    """Whole-layer figures of one grouping: ``cycles`` (all bands of all groups),
    ``input_words`` (programs once + every band's stream), ``output_words``; 64-bit words."""

    cycles: int
    input_words: int
    output_words: int

    @property
    def words(self):
        """External words, both directions."""
        return self.input_words + self.output_words


@dataclass(frozen=True)
class Candidate:
    """A grouping :func:`fuse_layer` considered: ``label`` (how it was found), ``groups``,
    ``estimate`` (:class:`GroupEstimate`), ``half_vector`` (the vector mode it was compiled
    in; ``None``: the compiler's choice, the only one for kernels taller than the stride)."""

    label: str
    groups: tuple
    estimate: GroupEstimate
    half_vector: bool | None = None


@dataclass(frozen=True)
class FusedLayer:
    """The outcome of :func:`fuse_layer`: ``compiled`` (the :class:`~.compile.CompiledLayer`
    of the chosen grouping), ``chosen`` (its :class:`Candidate`), every candidate and the
    greedy's attempts (in the chosen vector mode)."""

    compiled: object
    chosen: Candidate
    candidates: tuple
    attempts: tuple = field(default=())

    @property
    def groups(self):
        """The chosen groups of output maps."""
        return self.chosen.groups

    @property
    def greedy(self):
        """The seed greedy's :class:`Candidate` in the chosen vector mode (``None`` when the
        strategy was ``"none"``)."""
        return next((c for c in self.candidates if c.label.removesuffix(_HALF) == "greedy"
                     and c.half_vector == self.chosen.half_vector), None)


class _Prober:
    """Compiles each group structure of a layer once, on a short row, and answers whether a
    group fits and what it costs on the whole row."""

    def __init__(self, layer, name, half_vector, config):
        self.layer, self.name, self.half_vector, self.config = layer, name, half_vector, config
        n = min(layer.out_w, PROBE_COLUMNS)
        self.columns = n
        self.short = replace(layer, out_w=n, in_w=(n - 1) * layer.stride_w + layer.kernel_w,
                             pad=(*layer.pad[:2], 0, 0))
        self.cache = {}  # signature -> GroupProbe, or the reason the group does not fit
        self.scheduled = {}  # signature -> the short row's CompiledGroup

    def probe(self, maps):
        """The :class:`GroupProbe` of ``maps`` (run in this order), or the reason it does
        not fit (a string)."""
        key = _signature(self.layer, maps)
        if key not in self.cache:
            bound = self.size_bound(maps)
            if len(maps) > 1 and bound > self.config.instruction_words:
                self.cache[key] = (
                    f"{self.name}: the program of maps {list(maps)} needs at least {bound} "
                    f"instructions (coefficient words, initial columns and the VMAC operations "
                    f"of one iteration), more than the {self.config.instruction_words} of the "
                    f"instruction buffer")
            else:
                self.cache[key] = self._compile(maps)
        return self.cache[key]

    def size_bound(self, maps):
        """A lower bound on the program size of ``maps`` (instructions) without scheduling:
        the init part writes every coefficient word (at most 4 coefficients of one map each)
        and every stored column the first iteration reads but none writes, one word per
        instruction, and the loop body alone has II >= VMAC operations per iteration rows."""
        layer = self.layer
        per_map = [1 + len(layer.connections[m]) * layer.kernel_h * layer.kernel_w
                   for m in maps]
        inputs = {i for m in maps for i in layer.connections[m]}
        # half-vector mode (one-tap phases) stores fewer words per column: the smaller count
        words = column_layout(layer.kernel_h, layer.stride_h,
                              layer.kernel_h <= layer.stride_h).words
        columns = len(column_steps(layer.kernel_w, layer.stride_w).init_columns())
        return sum(-(-n // 4) for n in per_map) + columns * len(inputs) * words + sum(per_map)

    def _compile(self, maps):
        layer, config = self.layer, self.config
        try:
            g = compile_group(self.short, maps, name=self.name, half_vector=self.half_vector,
                              config=config, check=False)
        except NveCompileError as error:
            return str(error)
        self.scheduled[_signature(layer, maps)] = g
        e, extra = g.emitted, layer.out_w - self.columns
        if extra and not e.loop_count:
            raise AssertionError(f"{self.name}: the probe of maps {list(maps)} has no loop body "
                                 f"at {self.columns} columns")
        if e.loop_count + extra > config.max_iterations:
            return (f"{self.name}: {e.loop_count + extra} loop-body executions per band, more "
                    f"than the {config.max_iterations} of the ITERATIONS register")
        acts = sum(len(a) for a in g.graph.acts)
        return GroupProbe(size=g.program.size, ii=g.ii, lanes=g.lanes, form=e.form,
                          cycles=e.instructions + extra * g.ii,
                          input_words=len(e.stream) + extra * len(g.graph.writes),
                          output_words=len(e.outputs) + extra * acts,
                          macs_per_iteration=g.macs_per_iteration)

    def fits(self, maps):
        """``None`` when the group of ``maps`` fits, else the reason."""
        p = self.probe(maps)
        return p if isinstance(p, str) else None

    def estimate(self, groups):
        """The :class:`GroupEstimate` of a grouping (every group must fit)."""
        cycles = inputs = outputs = 0
        for g in groups:
            p = self.probe(g)
            if isinstance(p, str):
                raise NveCompileError(p)
            bands = -(-self.layer.out_h // p.lanes)
            cycles += bands * p.cycles
            inputs += p.size + bands * p.input_words
            outputs += bands * p.output_words
        return GroupEstimate(cycles, inputs, outputs)

    def compile(self, groups, check):
        """The :class:`~.compile.CompiledLayer` of a grouping (every group must fit), as
        :func:`.compile.compile_layer` builds it, emitted on the whole row from the probes'
        schedules instead of scheduling every structure again."""
        layer, done, out = self.layer, {}, []
        for maps in groups:
            key = _signature(layer, maps)
            if key not in done:
                g = self.scheduled[key]
                done[key] = _finish(layer, g.spec, g.graph, g.schedule, g.flat, self.name,
                                    "auto", self.config, check)
            inputs = tuple(sorted({i for m in maps for i in layer.connections[m]}))
            out.append(replace(done[key], spec=replace(done[key].spec, maps=tuple(maps),
                                                       inputs=inputs)))
        return CompiledLayer(layer, self.name, tuple(out))


def _cost(candidate):
    """Ordering of candidates: fewest cycles, then fewest external words, then fewest groups."""
    e = candidate.estimate
    return (e.cycles, e.words, len(candidate.groups))


def fuse_layer(layer, *, name=None, strategy="best", half_vector=None, config=DEFAULT_CONFIG,
               check=False):
    """Group the output maps of ``layer`` (:class:`hls_ref.nve.layers.NveLayer`) and compile
    the groups.

    ``strategy``: ``"none"`` (one map per group), ``"greedy"`` (the seed's Algorithm 2,
    corrected: :func:`seed_greedy`) or ``"best"`` (the greedy, no fusion, the greedy capped at
    2 ... k-1 maps per group and :func:`pair_merging`, keeping the fewest whole-layer cycles,
    then the fewest external words). For a layer whose kernel phases have one tap each, both
    vector modes are searched unless ``half_vector`` fixes one. ``name`` names the layer in
    errors; ``half_vector``, ``config``, ``check`` as :func:`.compile.compile_layer`. Returns
    a :class:`FusedLayer`. A layer with a map too large for one program is compiled without
    fusion, that map split into partial sums (:mod:`.partial`); :class:`NveCompileError` when
    even that fails.
    """
    if strategy not in ("none", "greedy", "best"):
        raise ValueError(f"strategy must be none, greedy or best, not {strategy!r}")
    if name is None:
        name = (f"{layer.kernel_h}x{layer.kernel_w}/s{layer.stride_h}x{layer.stride_w} layer "
                f"({layer.in_maps} -> {layer.out_maps} maps, {layer.out_h}x{layer.out_w})")
    maps = list(range(layer.out_maps))

    def inputs_of(m):
        return frozenset(layer.connections[m])

    # one-tap layers may run in either vector mode; 16 lanes half empty can beat 8 lanes on a
    # short map, so both are searched unless the caller chose
    one_tap = layer.kernel_h <= layer.stride_h
    modes = (half_vector,) if half_vector is not None or not one_tap else (False, True)
    candidates, attempts, probers, errors = [], {}, {}, []
    for half in modes:
        prober = probers[half] = _Prober(layer, name, half, config)
        reasons = [prober.fits((m,)) for m in maps]
        if any(reasons):  # every map alone must fit, else there is nothing to group
            errors.append(next(r for r in reasons if r))
            continue
        suffix = _HALF if half and len(modes) > 1 else ""

        def size_of(m, prober=prober):
            return prober.probe((m,)).size

        def add(label, groups, prober=prober, half=half, suffix=suffix):
            groups = tuple(tuple(g) for g in groups)
            if all(c.groups != groups or c.half_vector != half for c in candidates):
                candidates.append(Candidate(label + suffix, groups, prober.estimate(groups),
                                            half))

        if strategy == "none":
            add("none", [(m,) for m in maps])
        else:
            groups, attempts[half] = seed_greedy(maps, inputs_of, size_of, prober.fits)
            add("greedy", groups)
            if strategy == "best":
                add("none", [(m,) for m in maps])
                for cap in range(2, max(len(g) for g in groups)):
                    add(f"greedy, at most {cap} maps",
                        seed_greedy(maps, inputs_of, size_of, prober.fits, cap)[0])
                add("pair merging", pair_merging(maps, inputs_of, prober.fits)[0])
    if not candidates:
        # a map too large for one program is split into partial sums: such a layer is
        # compiled unfused (compile_layer splits what does not fit alone)
        compiled = compile_layer(layer, name=name, config=config, check=check)
        if not any(g.part for g in compiled.groups):
            raise NveCompileError(errors[0])
        chosen = Candidate("none, partial sums", tuple(g.spec.maps for g in compiled.groups
                                                       if not g.part or not g.part[0]),
                           GroupEstimate(compiled.instructions, compiled.input_words,
                                         compiled.output_words))
        return FusedLayer(compiled, chosen, (chosen,))
    chosen = min(candidates, key=_cost)
    compiled = probers[chosen.half_vector].compile(chosen.groups, check)
    got = GroupEstimate(compiled.instructions, compiled.input_words, compiled.output_words)
    if got != chosen.estimate:
        raise AssertionError(f"{name}: the compiled grouping gives {got}, its probe "
                             f"{chosen.estimate}")
    return FusedLayer(compiled, chosen, tuple(candidates),
                      tuple(attempts.get(chosen.half_vector, ())))
