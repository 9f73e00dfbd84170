"""Whole networks on the NVE: every layer fused, compiled and checked, next to the seed's
Table 5.

:func:`compile_network` compiles the four layers of a built-in network (``face-detection`` or
``speed-sign``, the names of :mod:`sw.workloads.nve_networks`) with feature-map fusion
(:mod:`.fusion`), and once more without it for the data-transfer comparison. Every distinct
program is checked on the instruction-set simulator against the golden layer model on a few
output columns (:func:`.compile.compile_layer` with ``check``).

:func:`simulate_network` runs whole row bands (every output column of 16 rows, 8 in half-vector
mode) of every distinct program on the simulator with random int8 pixels, random int16
weights and biases and a random LUT, and compares every output pixel of the band with
:func:`hls_ref.nve.layers.conv_layer`. The whole-layer cycle count is not simulated but exact:
every band of a group runs the same instructions without a stall (the stream is read only by
the program's own writes), so the layer's cycles are the sum over groups of bands x the
program's instructions per band; each simulated band's cycle count is checked against that
figure.

Table 5 weights each layer's MAC/instruction by its share of the network's MACs. Two sets of
weights are used: the seed's printed percentages, and the shares of this compiler's MAC count
(Table 1's MAC column, which the layers reproduce).
"""

from dataclasses import dataclass

import numpy as np

from hls_ref.nve.isa import DEFAULT_CONFIG
from hls_ref.nve.layers import NveLayer, conv_layer, random_layer_data
from sw.nve_layers import nve_layers

from .bands import padded_input
from .compile import _signature, check_data, compile_layer, run_group
from .fusion import fuse_layer
from .host import WORD_BYTES
from .partial import run_parts
from .report import TABLE5, bound
from .taskgraph import PLANES

__all__ = ["SEED_WORKLOAD", "TABLE1_TRANSFER_MB", "TABLE5_TOTALS", "BandRun", "LayerResult",
           "NetworkResult", "ProgramSummary", "compile_layers", "compile_network",
           "simulate_network"]

#: Table 5's workload column: percent of the network's MACs per layer, as printed.
SEED_WORKLOAD = {
    "face-detection": {"L1": 42.0, "L2": 23.0, "L3": 34.0, "L4": 1.0},
    "speed-sign": {"L1": 4.6, "L2": 11.7, "L3": 83.3, "L4": 0.4},
}
#: Table 5's weighted totals as printed: (seed generator, experts' manual code), MAC/instr,
#: in the order of :data:`.report.TABLE5`.
TABLE5_TOTALS = {"face-detection": (13.7, 13.6), "speed-sign": (15.45, 14.86)}
#: Table 1's data-transfer column (MB; every pixel in and out once).
TABLE1_TRANSFER_MB = {
    "face-detection": {"L1": 1.81, "L2": 1.62, "L3": 1.47, "L4": 0.72},
    "speed-sign": {"L1": 2.25, "L2": 2.17, "L3": 4.98, "L4": 4.1},
}
NETWORK_NAMES = tuple(SEED_WORKLOAD)


@dataclass(frozen=True)
class ProgramSummary:
    """One distinct program of a layer: ``members`` (the :class:`~.compile.CompiledGroup`\\ s
    that run it, in layer order), ``ii`` (cycles per output column), ``bound`` (the busiest
    slot's operations per iteration, a lower bound on II) and ``slot`` (that slot), ``form``,
    ``size`` (instructions), ``lanes``, ``macs`` (``mac`` operations per iteration)."""

    members: tuple
    ii: int
    bound: int
    slot: str
    form: str
    size: int
    lanes: int
    macs: int

    @property
    def groups(self):
        """The groups of maps that run the program."""
        return tuple(g.spec.maps for g in self.members)

    @property
    def program(self):
        """The :class:`hls_ref.nve.isa.Program`."""
        return self.members[0].program

    @property
    def limit(self):
        """What limits the steady state: the busiest slot when II equals its count, else
        ``schedule`` (dependences or read-port conflicts keep II above it)."""
        return self.slot if self.ii == self.bound else "schedule"


@dataclass(frozen=True)
class LayerResult:
    """One layer of a network: ``fusion`` (the :class:`~.fusion.FusedLayer`: grouping and
    compiled programs) and ``unfused`` (the :class:`~.compile.CompiledLayer` with one map per
    group, for the data-transfer comparison). Figures: MAC/instruction in the steady state
    (Table 5's metric) and over the whole layer; bytes of the external streams (8 per 64-bit
    word: programs, coefficients, input columns of every band, output words)."""

    network: str
    name: str
    layer: NveLayer
    fusion: object
    unfused: object

    @property
    def compiled(self):
        """The :class:`~.compile.CompiledLayer` of the chosen grouping."""
        return self.fusion.compiled

    @property
    def macs(self):
        """Useful MACs of the layer."""
        return self.layer.macs

    @property
    def cycles(self):
        """Cycles of the whole layer (= instructions: no band stalls)."""
        return self.compiled.instructions

    @property
    def steady(self):
        """Useful lane MACs per loop-body instruction (seed Table 5 metric)."""
        return self.compiled.steady_mac_per_instruction

    @property
    def whole(self):
        """Useful MACs per executed instruction of the whole layer."""
        return self.compiled.layer_mac_per_instruction

    @property
    def seed_automatic(self):
        """Table 5, the seed generator's MAC/instruction (None for another network)."""
        return TABLE5.get((self.network, self.name), (None, None))[0]

    @property
    def seed_manual(self):
        """Table 5, the experts' hand-written code's MAC/instruction (None for another
        network)."""
        return TABLE5.get((self.network, self.name), (None, None))[1]

    @property
    def input_bytes(self):
        """Input-stream bytes with fusion."""
        return WORD_BYTES * self.compiled.input_words

    @property
    def output_bytes(self):
        """Output-stream bytes with fusion."""
        return WORD_BYTES * self.compiled.output_words

    @property
    def transfer_bytes(self):
        """External bytes with fusion (input and output streams)."""
        return self.input_bytes + self.output_bytes

    @property
    def unfused_bytes(self):
        """External bytes with one map per group."""
        return WORD_BYTES * (self.unfused.input_words + self.unfused.output_words)

    @property
    def reduction(self):
        """Fraction of the external bytes fusion saves (0 ... 1)."""
        return 1 - self.transfer_bytes / self.unfused_bytes

    def programs(self):
        """The :class:`ProgramSummary` of every distinct program, in group order."""
        members = {}
        for g in self.compiled.groups:  # one program per structure (and part)
            key = (_signature(self.layer, g.spec.maps), g.part)
            members.setdefault(key, []).append(g)
        return tuple(ProgramSummary(tuple(gs), gs[0].ii, *bound(gs[0]), gs[0].emitted.form,
                                    gs[0].program.size, gs[0].lanes, gs[0].macs_per_iteration)
                     for gs in members.values())


@dataclass(frozen=True)
class NetworkResult:
    """The compiled layers of a network (:class:`LayerResult`, in execution order)."""

    name: str
    layers: tuple
    strategy: str

    @property
    def macs(self):
        return sum(r.macs for r in self.layers)

    @property
    def cycles(self):
        """Cycles of all layers (no stalls; one NVE, layer after layer)."""
        return sum(r.cycles for r in self.layers)

    def weights(self, which):
        """Per-layer weights (fractions summing to about 1): ``"seed"`` Table 5's printed
        workload percentages, ``"ours"`` each layer's share of the network's MACs."""
        if which == "seed":
            return {r.name: SEED_WORKLOAD[self.name][r.name] / 100 for r in self.layers}
        if which == "ours":
            return {r.name: r.macs / self.macs for r in self.layers}
        raise ValueError(f"weights are 'seed' or 'ours', not {which!r}")

    def weighted(self, metric, which):
        """Workload-weighted MAC/instruction: ``metric`` one of ``steady``, ``whole``,
        ``seed_automatic``, ``seed_manual`` (the last two recompute Table 5's totals)."""
        w = self.weights(which)
        return sum(w[r.name] * getattr(r, metric) for r in self.layers)

    @property
    def transfer_bytes(self):
        return sum(r.transfer_bytes for r in self.layers)

    @property
    def unfused_bytes(self):
        return sum(r.unfused_bytes for r in self.layers)


def compile_network(name, *, fusion=True, check=True, layers=None, config=DEFAULT_CONFIG):
    """Compile every layer of network ``name`` (``face-detection`` or ``speed-sign``).

    ``layers``: only these layer names (default: all four; the weighted totals need all).
    ``fusion``: ``True`` (:func:`~.fusion.fuse_layer` with ``strategy="best"``), ``False``
    (one map per group) or a strategy name (``"greedy"``, ``"best"``, ``"none"``). ``check``:
    run every distinct program on the ISS against the golden model (a few output columns).
    Returns a :class:`NetworkResult`. Takes seconds (speed-sign L2's fusion candidates
    dominate).
    """
    return compile_layers(name, nve_layers(name), fusion=fusion, check=check, layers=layers,
                          config=config)


def compile_layers(name, table, *, fusion=True, check=True, layers=None,
                   config=DEFAULT_CONFIG):
    """:func:`compile_network` for any layers: ``table`` is ``{layer name: NveLayer}`` in
    execution order (e.g. :func:`.netfile.read_network`'s), ``name`` names the network."""
    strategy = {True: "best", False: "none"}.get(fusion, fusion)
    unknown = sorted(set(layers or ()) - set(table))
    if unknown:
        raise KeyError(f"{name} has no layer {', '.join(unknown)}; its layers are "
                       f"{', '.join(table)}")
    results = []
    for layer_name, layer in table.items():
        if layers and layer_name not in layers:
            continue
        label = f"{name} {layer_name}"
        fused = fuse_layer(layer, name=label, strategy=strategy, config=config, check=check)
        if strategy == "none":
            unfused = fused.compiled
        else:
            unfused = compile_layer(layer, name=label, config=config, check=False)
        results.append(LayerResult(name, layer_name, layer, fused, unfused))
    return NetworkResult(name, tuple(results), strategy)


@dataclass(frozen=True)
class BandRun:
    """One row band of one group run on the ISS: ``layer``, ``maps``, ``band`` (index),
    ``rows`` (output rows inside the map), ``cycles`` simulated, ``expected`` (the program's
    instructions per band), ``macs`` (useful MACs of the band), ``exact`` (every output pixel
    equals the golden model's, realistic random data), ``exact_accumulators`` (the same with
    the exact check's data, :func:`.compile.check_data`: every output pixel is its
    accumulator)."""

    layer: str
    maps: tuple
    band: int
    rows: int
    cycles: int
    expected: int
    macs: int
    exact: bool
    exact_accumulators: bool


def _shift(layer):
    """An accumulator shift that spreads random data over the LUT: the accumulator's standard
    deviation for uniform int8 pixels and int16 weights, mapped to about 200 LUT steps."""
    taps = layer.kernel_h * layer.kernel_w * max(len(c) for c in layer.connections)
    # standard deviations of uniform int8 and int16 values: 256 / sqrt(12), 65536 / sqrt(12)
    sigma = np.sqrt(taps) * (256 / np.sqrt(12)) * (65536 / np.sqrt(12))
    return int(max(0, round(np.log2(sigma / 200))))


def _band_golden(layer, padded, weights, bias, maps, lanes, band, shift, lut):
    """The golden outputs ``[maps, rows, out_w]`` of one band of ``maps``: the layer cropped to
    the band's input rows."""
    r0 = band * lanes
    rows = min(lanes, layer.out_h - r0)
    h = (rows - 1) * layer.stride_h + layer.kernel_h
    first = r0 * layer.stride_h
    x = padded[:, first:first + h, :]
    sub = NveLayer(layer.in_maps, h, x.shape[2], rows, layer.out_w, layer.kernel_h,
                   layer.kernel_w, layer.stride_h, layer.stride_w,
                   [layer.connections[m] for m in maps])
    out, _ = conv_layer(x, [weights[m] for m in maps], bias[list(maps)], sub, shift, lut)
    return out, r0, rows


def _pick_bands(count, n):
    """``n`` band indices spread evenly over ``0 .. count-1``, first and last included."""
    if n >= count:
        return list(range(count))
    if n == 1:
        return [0]
    return sorted({(count - 1) * k // (n - 1) for k in range(n)})


def simulate_layer(result, bands, rng, config=DEFAULT_CONFIG):
    """Run ``bands`` row bands (spread over the layer, first and last included) of every
    distinct program of ``result`` (a :class:`LayerResult`) on the ISS and compare them with
    the golden model, with realistic random data and with the exact check's data (where each
    output pixel is its accumulator, so no error hides in the bits the shift drops).
    Successive bands use successive groups of the program (so a program shared by many groups
    sees several of them). Returns :class:`BandRun`\\ s."""
    layer = result.layer
    inputs, weights, bias = random_layer_data(layer, rng)
    realistic = (inputs, weights, bias, _shift(layer), rng.integers(-128, 128, 1024))
    exact = check_data(layer, rng, exact=True)
    taps = layer.kernel_h * layer.kernel_w
    runs = []
    for program in result.programs():
        members = program.members
        for k, band in enumerate(_pick_bands(members[0].bands, bands)):
            group = members[k % len(members)]
            matched, cycles = [], []
            parts = [g for g in result.compiled.groups if g.part and
                     g.spec.maps == group.spec.maps]
            for data in (realistic, exact):
                if group.part:  # the map's whole chain of parts, this part's cycles
                    out, results = run_parts(parts, layer, *data, band, config)
                    results = [results[group.part[0]]]
                else:
                    out, results = run_group(group, layer, *data, bands=[band], config=config)
                padded = padded_input(data[0], layer.pad)
                expected, r0, rows = _band_golden(layer, padded, data[1], data[2],
                                                  group.spec.maps, group.lanes, band, *data[3:])
                got = out[list(group.spec.maps), r0:r0 + rows]
                matched.append(bool(np.array_equal(got, expected)))
                cycles.append(results[0].cycles)
            if cycles[0] != cycles[1]:
                raise AssertionError("a band's cycles depend on its data")
            pairs = (len(group.spec.connections[0]) - (PLANES if group.spec.reload else 0)
                     if group.part else sum(len(layer.connections[m])
                                            for m in group.spec.maps))
            runs.append(BandRun(result.name, group.spec.maps, band, rows, cycles[0],
                                group.instructions_per_band, rows * layer.out_w * taps * pairs,
                                *matched))
    return tuple(runs)


def simulate_network(result, bands=2, seed=3, config=DEFAULT_CONFIG):
    """:func:`simulate_layer` for every layer of ``result`` (a :class:`NetworkResult`):
    ``{layer name: (BandRun, ...)}``. ``seed`` seeds the random data."""
    rng = np.random.default_rng(seed)
    return {r.name: simulate_layer(r, bands, rng, config) for r in result.layers}
