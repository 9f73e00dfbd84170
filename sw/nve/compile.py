"""Compiling a layer: output maps -> groups -> scheduled, allocated, emitted programs.

For every group of output maps (one map per group unless ``groups`` says otherwise) the code
generator builds the iteration's task graph for each candidate coefficient layout, modulo
schedules it, keeps the layout with the smallest II (then the shortest iteration span), places
the data in the local buffer and emits the program: the ``standard`` form when it fits the
instruction buffer, else the ``compact`` one (:mod:`.emit`). Every program is checked before it
is returned: the memory side symbolically at the layer's row length (:func:`.emit.check_memory`)
and, with ``check=True``, one band of random data on the instruction-set simulator against the
golden layer model, with the same program text at a few iterations.

Groups with the same structure (maps, input counts and sharing) get the same program, so a
layer of 80 alike maps is scheduled once.
"""

from dataclasses import dataclass, replace

import numpy as np

from hls_ref.nve import numerics
from hls_ref.nve.isa import DEFAULT_CONFIG
from hls_ref.nve.iss import Nve
from hls_ref.nve.layers import NveLayer, conv_layer, pad_maps, random_layer_data

from .alloc import allocate
from .bands import band_stream, coefficient_words, padded_input, place_outputs
from .columns import column_layout
from .emit import FormError, check_memory, emit
from .errors import NveCompileError
from .layout import candidate_layouts
from .modulo import flat_schedule, modulo_schedule
from .taskgraph import PLANES, GroupSpec, build_graph, forbidden_starts

__all__ = ["EXACT_LIMIT", "CompiledGroup", "CompiledLayer", "band_run", "check_data",
           "compile_group", "compile_layer", "run_group", "short_band", "spread_shift"]

_FORMS = ("auto", "standard", "compact")
_CHECK_SEED = 3003


@dataclass(frozen=True)
class CompiledGroup:
    """One group's program and everything needed to run it band by band.

    ``spec``: the group (maps, inputs, geometry); ``graph``: its task graph with the chosen
    coefficient layout; ``schedule``: the verified modulo schedule; ``flat``: the
    single-iteration schedule before modulo scheduling; ``plan``: the local-buffer plan;
    ``emitted``: program, stream and output plans for ``layer.out_w`` iterations per band.
    ``part``: ``(index, count)`` when the group is one of the programs a map too large for one
    program is split into (partial sums, :mod:`.partial`), else ``()``.
    """

    spec: GroupSpec
    graph: object
    schedule: object
    flat: object
    plan: object
    emitted: object
    bands: int
    part: tuple = ()

    @property
    def program(self):
        """The :class:`hls_ref.nve.isa.Program` (identity LUT, shift 0; a run sets both)."""
        return self.emitted.program

    @property
    def lanes(self):
        """Output rows per band (16; 8 in half-vector mode)."""
        return self.spec.columns.lanes

    @property
    def ii(self):
        """Loop-body cycles per output column (initiation interval)."""
        return self.schedule.ii

    @property
    def flat_length(self):
        """Cycles per output column of the single-iteration schedule (no overlap)."""
        return self.flat.ii

    @property
    def macs_per_iteration(self):
        """``mac`` operations per output column vector."""
        return self.graph.mac_count

    @property
    def steady_mac_per_instruction(self):
        """Useful lane MACs per loop-body instruction in the steady state:
        ``lanes * macs / II`` (the seed's Table 5 metric; 8 useful lanes in half-vector
        mode)."""
        return self.lanes * self.macs_per_iteration / self.ii

    @property
    def layouts(self):
        """Coefficients per ``set.w`` of every map (chunk sizes)."""
        return self.graph.layouts

    @property
    def instructions_per_band(self):
        """Instructions one band executes."""
        return self.emitted.instructions

    def coefficient_words(self, weights, bias):
        """The coefficient words of this group for the layer's ``weights`` (list per output
        map) and ``bias``."""
        return coefficient_words(self.graph, [weights[m] for m in self.spec.maps],
                                 [bias[m] for m in self.spec.maps])


@dataclass(frozen=True)
class CompiledLayer:
    """The compiled groups of a layer and the layer-level figures derived from them (exact:
    every band of a group executes the same instructions)."""

    layer: NveLayer
    name: str
    groups: tuple

    @property
    def maps(self):
        """The compiled output maps (a map split into partial sums once)."""
        return tuple(dict.fromkeys(m for g in self.groups for m in g.spec.maps))

    @property
    def macs(self):
        """Useful MACs of the compiled maps over the whole layer."""
        layer = self.layer
        pairs = sum(len(layer.connections[m]) for m in self.maps)
        return layer.out_h * layer.out_w * layer.kernel_h * layer.kernel_w * pairs

    @property
    def instructions(self):
        """Instructions of all bands of all groups."""
        return sum(g.bands * g.instructions_per_band for g in self.groups)

    @property
    def steady_mac_per_instruction(self):
        """Useful lane MACs per loop-body instruction over the layer's steady state
        (``sum lanes * macs * bands / sum II * bands``)."""
        num = sum(g.bands * g.lanes * g.macs_per_iteration for g in self.groups)
        return num / sum(g.bands * g.ii for g in self.groups)

    @property
    def layer_mac_per_instruction(self):
        """Layer MACs per executed instruction, partial bands, init parts, prologues and
        epilogues included."""
        return self.macs / self.instructions

    @property
    def input_words(self):
        """Input-stream words: each program once, then every band's data words."""
        return sum(g.program.size + g.bands * len(g.emitted.stream) for g in self.groups)

    @property
    def output_words(self):
        """Output-stream words of all bands (discarded words included)."""
        return sum(g.bands * len(g.emitted.outputs) for g in self.groups)


def _group_inputs(layer, maps):
    """``(inputs, connections)`` of a group: the input maps it reads (local-buffer order) and
    for every map the positions in ``inputs`` of the maps it reads (the layer's order)."""
    inputs = tuple(sorted({i for m in maps for i in layer.connections[m]}))
    return inputs, tuple(tuple(inputs.index(i) for i in layer.connections[m]) for m in maps)


def _signature(layer, maps):
    """What a group's program depends on besides the layer geometry."""
    inputs, connections = _group_inputs(layer, maps)
    return len(inputs), connections


def _spec(layer, maps, half, name, reload=False, partial_out=False):
    inputs, connections = _group_inputs(layer, maps)
    columns = column_layout(layer.kernel_h, layer.stride_h, half, name)
    return GroupSpec(tuple(maps), inputs, connections, layer.kernel_h, layer.kernel_w,
                     layer.stride_h, layer.stride_w, columns, reload, partial_out)


def _best_schedule(spec):
    """``(graph, modulo schedule, flat schedule)`` of the candidate coefficient layout with
    the smallest II, then the shortest span, then the fewest coefficient words."""
    per_map = [candidate_layouts(1 + len(spec.mac_taps(p)), forbidden_starts(spec, p))
               for p in range(len(spec.maps))]
    best = None
    for k in range(max(len(c) for c in per_map)):
        layouts = [c[min(k, len(c) - 1)] for c in per_map]
        graph = build_graph(spec, layouts)
        flat = flat_schedule(graph)
        schedule = modulo_schedule(graph, flat=flat)
        key = (schedule.ii, schedule.span, len(graph.coef_words))
        if best is None or key < best[0]:
            best = (key, graph, schedule, flat)
    return best[1:]


def compile_group(layer, maps, *, name="layer", half_vector=None, form="auto",
                  config=DEFAULT_CONFIG, check=True, reload=False, partial_out=False):
    """The :class:`CompiledGroup` of output maps ``maps`` of ``layer`` sharing one loop body.

    ``half_vector``: ``None`` chooses (for one-tap phases, the better of both modes by steady
    MAC/instruction), ``True``/``False`` forces. ``form``: ``"auto"`` (standard if it fits the
    instruction buffer, else compact), ``"standard"`` or ``"compact"``. ``check``: also run one
    band of random data on the ISS. ``config``: the NVE's memory sizes, AGU modes and
    iteration limit (the datapath must be the seed's). ``reload`` / ``partial_out``: the
    partial-sum roles of :class:`~.taskgraph.GroupSpec` (16 lanes only). Raises
    :class:`NveCompileError` naming ``name`` when the group cannot be mapped.
    """
    if form not in _FORMS:
        raise ValueError(f"form must be one of {_FORMS}, not {form!r}")
    if config.word_bits != DEFAULT_CONFIG.word_bits:  # NveConfig ties the datapath to it
        raise ValueError(f"the code generator targets the seed's datapath (16 lanes, "
                         f"{DEFAULT_CONFIG.word_bits}-bit words); a config may change the "
                         f"memory sizes, AGU modes and iteration limit, not word_bits "
                         f"{config.word_bits}")
    maps = tuple(maps)
    if reload or partial_out:  # act.ps words and plane reads need both halves
        modes = (False,)
    elif half_vector is None:
        one_tap = layer.kernel_h <= layer.stride_h
        modes = (False, True) if one_tap else (False,)
    else:
        modes = (bool(half_vector),)
    options = []
    for half in modes:
        spec = _spec(layer, maps, half, name, reload, partial_out)
        graph, schedule, flat = _best_schedule(spec)
        options.append((spec.columns.lanes * graph.mac_count / schedule.ii, -half, spec, graph,
                        schedule, flat))
    _, _, spec, graph, schedule, flat = max(options, key=lambda o: o[:2])
    return _finish(layer, spec, graph, schedule, flat, name, form, config, check)


def _finish(layer, spec, graph, schedule, flat, name, form, config, check):
    plan = allocate(graph, schedule, config, name)
    n = layer.out_w
    forms = ("standard", "compact") if form == "auto" else (form,)
    emitted, sizes = None, []
    for f in forms:
        try:
            emitted = emit(graph, schedule, plan, n, f, config)
            break
        except FormError as error:
            if error.size is not None:
                sizes.append(f"{f} {error.size}")
    if emitted is None:
        raise NveCompileError(
            f"{name}: the program of maps {list(spec.maps)} (II {schedule.ii}, "
            f"{plan.coef_words} coefficient words, init + prologue + body + epilogue) needs "
            f"{' / '.join(sizes) or 'no emittable form'} instructions, more than the "
            f"{config.instruction_words} of the instruction buffer", too_large=True)
    if emitted.loop_count > config.max_iterations:
        raise NveCompileError(f"{name}: {emitted.loop_count} loop-body executions per band, "
                              f"more than the {config.max_iterations} of the ITERATIONS register")
    problems = check_memory(emitted, config)
    if problems:
        raise AssertionError(f"{name}: memory check failed: {problems[:3]}")
    bands = -(-layer.out_h // spec.columns.lanes)
    group = CompiledGroup(spec, graph, schedule, flat, plan, emitted, bands)
    if check:
        _iss_check(group, config)
    return group


def spread_shift(accumulators):
    """The smallest activation shift at which no accumulator reaches either end of the LUT
    (indices 0 and 1023 also stand for every clipped value): random data then reaches the
    LUT with every accumulator bit the shift keeps, where a saturated output would hide a
    wrong accumulator."""
    peak = int(np.abs(np.asarray(accumulators, dtype=np.int64)).max(initial=0))
    shift = 0
    while (peak + ((1 << shift) >> 1)) >> shift > 510:  # numerics.lut_index's rounding
        shift += 1
    return shift


#: Largest |accumulator| of the exact check's data: the identity LUT is one-to-one on
#: -128 ... 127 at shift 0, so every output pixel is its accumulator.
EXACT_LIMIT = 127
_EXACT_BIAS = 7


def check_data(layer, rng, *, exact=False):
    """Data for checking ``layer`` on the simulator: ``(inputs, weights, bias, shift, lut)``.

    Realistic (``exact`` False): full-range random int8 pixels and int16 coefficients, a
    random LUT and the smallest shift that keeps the accumulators inside the LUT
    (:func:`spread_shift`); the shift drops low accumulator bits, so an error of a few units
    in one product can go unseen. Exact: pixels in -1 ... 1, per output map at most
    ``EXACT_LIMIT - 7`` coefficients +-1 (the others 0) and a bias in -7 ... 7, so no
    accumulator leaves -127 ... 127; shift 0 and the identity LUT make each output pixel equal
    to its accumulator, so a wrong weight, pixel or bias (any +-1) changes the outputs.
    """
    if not exact:
        inputs, weights, bias = random_layer_data(layer, rng)
        lut = rng.integers(-128, 128, 1024)
        _, acc = conv_layer(inputs, weights, bias, layer, 0, lut)
        return inputs, weights, bias, spread_shift(acc), lut
    inputs = rng.integers(-1, 2, layer.in_shape).astype(np.int8)
    weights = []
    for m in range(layer.out_maps):
        w = np.zeros(layer.weight_shape(m), np.int16)
        flat = w.reshape(-1)
        chosen = rng.permutation(flat.size)[:EXACT_LIMIT - _EXACT_BIAS]
        flat[chosen] = rng.choice(np.array([-1, 1], np.int16), chosen.size)
        weights.append(w)
    bias = rng.integers(-_EXACT_BIAS, _EXACT_BIAS + 1, layer.out_maps).astype(np.int16)
    return inputs, weights, bias, 0, numerics.identity_lut()


def short_band(group, config):
    """The group's program on a short row: ``(probe, layer)``, a :class:`CompiledGroup` whose
    program text is the group's (fewer loop iterations, its own maps renumbered 0 ...) and the
    one-band layer it computes. The fewest iterations with two body executions that keep the
    text (the same remainder modulo the ring depth), or the row itself when it is that
    short."""
    spec, full = group.spec, group.emitted
    low, ring = full.minimum_iterations + 1, group.plan.ring
    n = low + (full.iterations - low) % ring if full.iterations >= low else full.iterations
    emitted = full if n == full.iterations else emit(group.graph, group.schedule, group.plan,
                                                      n, full.form, config)
    if emitted.program.words != full.program.words:
        raise AssertionError("the self-check program differs from the compiled one")
    lanes = spec.columns.lanes
    small = NveLayer(len(spec.inputs), (lanes - 1) * spec.stride_h + spec.kernel_h,
                     (n - 1) * spec.stride_w + spec.kernel_w, lanes, n, spec.kernel_h,
                     spec.kernel_w, spec.stride_h, spec.stride_w, spec.connections)
    probe = replace(group, emitted=emitted, bands=1,
                    spec=replace(spec, maps=tuple(range(len(spec.maps))),
                                 inputs=tuple(range(len(spec.inputs)))))
    return probe, small


def _expected(spec, layer, inputs, weights, bias, shift, lut):
    """The golden outputs of a group's run on ``layer`` (its maps renumbered 0 ...): pixels
    ``[maps, out_h, out_w]``, or with ``partial_out`` the partial-sum digits
    ``[maps, 4, out_h, out_w]``; a reloaded partial sum is the value of the digit planes at
    the first tap of each output (:func:`.partial.plane_values`)."""
    if not (spec.reload or spec.partial_out):
        return conv_layer(inputs, weights, bias, layer, shift, lut)[0]
    from .partial import plane_values

    planes = PLANES if spec.reload else 0
    real = replace(layer, connections=tuple(c[:len(c) - planes] for c in layer.connections))
    weights = [np.asarray(w)[:len(w) - planes] for w in weights]
    acc = conv_layer(inputs, weights, bias, real, 0, numerics.identity_lut())[1]
    acc = acc.astype(np.int64)
    if spec.reload:
        for m, connection in enumerate(layer.connections):
            acc[m] += plane_values(pad_maps(np.asarray(inputs), layer.pad),
                                   connection[-planes:], layer)
    acc = numerics.wrap_acc(acc)
    if spec.partial_out:
        return numerics.partial_digits(acc).transpose(1, 0, 2, 3)
    return numerics.activate(acc, shift, lut)


def _iss_check(group, config):
    """Run the group's program text on one band of a short row on the ISS, with realistic
    and with exact data (:func:`check_data`), and compare every output pixel (or partial-sum
    digit) with the golden layer model."""
    probe, small = short_band(group, config)
    spec = group.spec
    rng = np.random.default_rng(_CHECK_SEED)
    for exact in (False, True):
        inputs, weights, bias, shift, lut = check_data(small, rng, exact=exact)
        if spec.reload:  # the planes' weights are the reload's, their pixels any digits
            from .partial import with_plane_weights
            weights = with_plane_weights(weights, small)
            if exact:
                inputs[-PLANES:] = 0
        expected = _expected(spec, small, inputs, weights, bias, shift, lut)
        got, _ = run_group(probe, small, inputs, weights, bias, shift, lut, config=config)
        if not np.array_equal(got, expected):
            bad = np.argwhere(got != expected)
            kind = "exact" if exact else "realistic"
            raise AssertionError(f"ISS self-check ({kind} data) of maps {list(group.spec.maps)} "
                                 f"differs from the golden model at {len(bad)} outputs, first "
                                 f"{bad[0].tolist()}")


def band_run(group, layer, inputs, weights, bias, shift, lut, band, padded=None):
    """``(program, data words)`` of one band of ``group``: the program with the run's shift
    and LUT, and the input stream the host sends it (:func:`run_group` runs exactly this).
    ``padded``: the group's input maps already padded (default: ``inputs`` of the group's
    input maps, padded as the layer says)."""
    spec = group.spec
    if padded is None:
        padded = padded_input(np.asarray(inputs)[list(spec.inputs)], layer.pad)
    coef = group.coefficient_words(weights, bias)
    program = replace(group.program,
                      settings=replace(group.program.settings, shift=int(shift), lut=lut))
    return program, band_stream(group.emitted.stream, coef, padded, spec.columns, band)


def run_group(group, layer, inputs, weights, bias, shift, lut, *, bands=None,
              config=DEFAULT_CONFIG, out=None, padded=None):
    """Run every band (or ``bands``) of ``group`` of ``layer`` on one ISS (program loaded
    once). Returns ``(outputs, per-band RunResults)``: outputs ``[out_maps, out_h, out_w]``
    int8, or for a group that sends partial sums out the digits ``[out_maps, 4, out_h,
    out_w]``; writes into ``out`` when given. ``padded`` as :func:`band_run`."""
    spec = group.spec
    if out is None:
        shape = layer.out_shape
        if spec.partial_out:
            shape = (shape[0], PLANES, *shape[1:])
        out = np.zeros(shape, dtype=np.int8)
    nve = Nve(config)
    results = []
    for band in range(group.bands) if bands is None else bands:
        program, data = band_run(group, layer, inputs, weights, bias, shift, lut, band,
                                 padded)
        if nve.program is None:
            nve.load(program)
        result = nve.run(data)
        if result.inputs_used != len(data) or len(result.outputs) != len(group.emitted.outputs):
            raise AssertionError("the run consumed or produced another number of words than "
                                 "the program's plan")
        place_outputs(out, result.outputs, group.emitted.outputs, spec.maps, spec.columns, band)
        results.append(result)
    return out, results


def compile_layer(layer, maps=None, *, groups=None, name=None, half_vector=None, form="auto",
                  config=DEFAULT_CONFIG, check=True, partial=True):
    """Compile ``layer`` (:class:`hls_ref.nve.layers.NveLayer`) into one program per group.

    ``maps``: the output maps to compile, one group each (default: all); ``groups``: explicit
    groups of maps that share one loop body (fusion), instead of ``maps``. ``name`` names the
    layer in errors (default: its geometry). ``partial``: a map whose program does not fit
    the buffers alone is split into partial sums (:func:`.partial.split_map`; its parts
    follow one another in ``groups``). Other options as :func:`compile_group`. Returns a
    :class:`CompiledLayer`.
    """
    if name is None:
        name = (f"{layer.kernel_h}x{layer.kernel_w}/s{layer.stride_h}x{layer.stride_w} layer "
                f"({layer.in_maps} -> {layer.out_maps} maps, {layer.out_h}x{layer.out_w})")
    if groups is None:
        groups = [(m,) for m in (range(layer.out_maps) if maps is None else maps)]
    elif maps is not None:
        raise ValueError(f"{name}: give maps or groups, not both")
    seen = set()
    for g in groups:
        for m in g:
            if not 0 <= m < layer.out_maps or m in seen:
                raise ValueError(f"{name}: output map {m} is out of range or in two groups")
            seen.add(m)
    cache, compiled = {}, []
    for g in groups:
        key = _signature(layer, g)
        if key not in cache:
            try:
                cache[key] = compile_group(layer, g, name=name, half_vector=half_vector,
                                           form=form, config=config, check=check)
            except NveCompileError as error:
                if not (partial and error.too_large and len(g) == 1):
                    raise
                from .partial import split_map
                cache[key] = split_map(layer, g[0], name=name, config=config, form=form,
                                       check=check)
        base = cache[key]
        if isinstance(base, tuple):  # the parts of a split map, on this map's inputs
            from .partial import part_inputs
            compiled += [replace(p, spec=replace(p.spec, maps=tuple(g),
                                                 inputs=part_inputs(layer, g[0], *p.part)))
                         for p in base]
            continue
        spec = replace(base.spec, maps=tuple(g), inputs=_group_inputs(layer, g)[0])
        compiled.append(replace(base, spec=spec))
    return CompiledLayer(layer, name, tuple(compiled))
