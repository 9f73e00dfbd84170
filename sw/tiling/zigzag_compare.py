"""ZigZag's DRAM traffic next to the tiling compiler's, layer by layer.

For every conv, depthwise and FC layer of a network, :func:`compare_layers` tiles the layer with
``optimal_tiling`` and counts its DMA beats with ``evaluate``, then builds ZigZag 3.9.1 inputs
for the same layer on an accelerator with the same on-chip memory, runs
``get_hardware_performance_zigzag`` and reads ZigZag's DRAM accesses. Other layers (pooling,
add, concat, upsample) are skipped: they run on the host. ZigZag (``zigzag-dse``, extra
``peer``) is imported only when a layer is run.

What ZigZag gets (:func:`zigzag_inputs`)
---------------------------------------
* **Workload**, one single-layer workload per layer. Conv:
  ``O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]`` with ``ix = sw*ox + fx``,
  ``iy = sh*oy + fy``, Tessera's explicit padding as ``padding: [[top, bottom], [left, right]]``
  and ``pr_loop_sizes`` the *unpadded* input height and width (ZigZag clips the input tensor to
  ``pr_loop_sizes``; the notes' example gave the padded size, so ZigZag fetched the zero
  border from DRAM, which the Tessera DMA never does). Depthwise: a G dimension,
  ``O[b][g][oy][ox]+=W[g][fy][fx]*I[b][g][iy][ix]``. FC: ``Gemm``, ``O[b][k]+=W[k][c]*I[b][c]``.
  Precisions: the Tessera precision's activation and weight bits, 32-bit partial sums (the
  accumulator PLM) and the final output at ``Capacity.out_bits``. Only W is a constant operand
  (``operand_source: {W: id}``: ZigZag treats an operand whose source is its own layer as
  constant). Sparse connection tables (``Layer.connections``) are not modelled: both sides
  count dense weights.
* **MAC array** ``pes`` x ``lanes`` (16 x 2 at a8w8): D1 unrolls K over Tessera's PEs (one
  output channel each); D2 unrolls C by the ST multiplier's ``lanes`` (it sums ``lanes``
  input-channel products per cycle), so the array peaks at Tessera's ``pes * lanes`` MACs a
  cycle. Depthwise maps G on D1 and OX on D2 (a K x C mapping leaves a depthwise layer at a few
  per cent utilisation; Tessera's ST multiplier sums kernel taps instead, which ZigZag cannot
  express on a flattened kernel). Unrollings larger than the layer are clipped to it.
* **Memories**, innermost first: a weight register (one weight) and an output register (one
  32-bit partial sum) per MAC, as small as ZigZag needs (inputs are read from the buffer
  directly); one on-chip buffer holding I, W and O together, of ``Capacity.total_bytes`` (the
  ``--ocm`` size, or with private PLMs the sum of every bank of the three PLMs); DRAM with one
  64-bit read/write port (Tessera's AXI beat), ``min = max = 64`` bits so ZigZag counts whole
  64-bit words. The buffer shares its *capacity* but has a read and a write port per operand
  (8 to ``pes * 32`` bits), as Tessera has a bank per operand: ZigZag serves one transfer a
  cycle per port, so a single read port feeding both I and W every cycle doubled its latency.
* **Objective** ``opt="energy"`` with every cost zero except DRAM, 1 pJ per 64-bit word read or
  written: ZigZag's energy *is* its DRAM word count, so the mapping it keeps is the one with
  the least DRAM traffic among those it evaluated (its tie-break is latency). ``opt="latency"``
  would keep the fastest mapping whatever its traffic. ZigZag's temporal-mapping engine LOMA
  enumerates loop orders (``lpf_limit`` bounds how many prime-factor loops it permutes) and
  allocates each order greedily, level by level, to minimise accesses to the level above; with
  a low ``lpf_limit`` the search is not exhaustive, unlike ``optimal_tiling``. The default 6
  takes 1-5 s a layer on the MLPerf Tiny models; 8 takes minutes and, when the memory is
  tight, finds less traffic on some layers.
* **Double buffering**: ZigZag memories have ``force_double_buffering``, under which LOMA
  counts every tile that is not the operand's whole remaining tensor twice. It is set from
  ``capacity.config.double_buffer`` (default on), which is close to Tessera's rule that the
  three tiles fit half the shared memory; ``double_buffer=False`` (``--zigzag-single-buffer``)
  gives ZigZag the whole memory for one set of tiles.

Words become bytes as ``words * 64 / 8``: ZigZag's ``memory_word_access`` counts words of the
memory port (``ceil(bits moved per period / port bits)`` per period), read from the last memory
level (DRAM): ``RD_OUT_TO_LOW`` of I and W (and of O when partial sums come back), and
``WR_IN_BY_LOW`` of O.

What is not equivalent
----------------------
* Tessera is output-stationary: partial sums never leave the accumulator PLM and each output
  tile is stored once; tiles are whole output rows x output channels x input channels, and
  only the loop orders ``hzk``/``zhk`` exist. ZigZag chooses any loop order and tiling of
  B, K, C, OY, OX, FY, FX (G) and may spill 32-bit partial sums to DRAM and read them back
  (counted as ZigZag read and written bytes, and shown separately).
* Tessera's tile holds 32-bit accumulators for all its outputs (4 bytes an output in the
  shared memory). ZigZag finishes a reduction in the per-MAC output register whenever its loop
  order allows and then keeps the output in the buffer at ``O_final`` bits (1 byte at a8w8):
  for the same buffer, ZigZag's output tiles are up to 4x smaller.
* Tessera keeps activations and weights as 16-bit ST words (``lanes`` to a word, the last word
  of a pixel zero-filled) and reserves ``pes`` accumulators for a partial PE block; ZigZag
  stores exact element widths. Tessera's external layout rounds a pixel's channels and a row
  up to whole beats (DS-CNN's 49x10x1 input is 784 B in memory, 490 B of data); ZigZag counts
  data only, rounded up to whole words per transfer.
* Tessera reads a quantization block per output-channel tile (``qparams``); ZigZag has no
  biases or requantization parameters. The table shows them apart, and the ratio leaves them
  out.
* Tessera reads whole input rows (every column) of a row band, including rows a stride larger
  than the kernel skips; ZigZag reads only the input elements a tile uses (a 1x1 stride-2
  layer: a quarter of its input), but counts a tile's zero border as data except where the tile
  spans the whole input.
* ``optimal_tiling`` minimises the DMA cost ``T = C + s*p + n*t`` (calls and segments matter,
  ties go to fewer beats); ZigZag minimises words only. ZigZag's latency counts compute,
  on/off-loading and DRAM stalls of a design without a DMA descriptor cost; the compiler's
  cycles are the DMA cost only. They are printed side by side, not compared.
* ZigZag's LOMA is a heuristic (greedy allocation per loop order, orders capped by
  ``lpf_limit``); ``optimal_tiling`` is exact within its model.

Results are cached under ``build/zigzag/`` as JSON, keyed by a SHA-256 of the generated YAML
texts, the run options and the ZigZag version, so a rerun reads them back instantly.

``python -m sw.tiling.zigzag_compare NETWORK [--ocm SIZE] [--precision P] [--layers N]``
prints the table.
"""

import argparse
import hashlib
import json
import logging
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from hls_ref.config import DEFAULT_CONFIG

from .capacity import BEAT_BYTES, Capacity, TilingError
from .cost import DEFAULT_COST, DmaCost
from .layer_tiling import evaluate
from .report import hong_kung_bound
from .search import optimal_tiling

__all__ = ["CompareRow", "ZigZagError", "ZigZagResult", "accelerator_spec", "compare_layers",
           "compulsory_bytes", "format_table", "main", "mapping_spec", "run_zigzag",
           "workload_spec", "zigzag_inputs"]

ZIGZAG_KINDS = ("conv", "depthwise", "fc")
DRAM_PORT_BITS = 64             # Tessera's AXI beat
PSUM_BITS = 32                  # the accumulator PLM's words
DEFAULT_LPF_LIMIT = 6
DEFAULT_OPT = "energy"
CACHE_FORMAT = 1
DEFAULT_CACHE_DIR = Path(__file__).resolve().parents[2] / "build" / "zigzag"


# --- ZigZag inputs ---------------------------------------------------------------------------
def workload_spec(layer, capacity, layer_id=0):
    """The ZigZag workload entry (a dict of the YAML fields) of one Tessera layer."""
    if layer.kind not in ZIGZAG_KINDS:
        raise ValueError(f"layer {layer.name}: ZigZag comparison covers {ZIGZAG_KINDS}, "
                         f"not {layer.kind!r}")
    p = capacity.precision
    entry = {"id": layer_id, "name": layer.name}
    h, w, c = layer.in_shape
    ho, wo, co = layer.out_shape
    kh, kw = layer.kernel
    sh, sw = layer.stride
    pad = layer.padding
    if layer.kind == "fc":
        entry.update(operator_type="Gemm", equation="O[b][k]+=W[k][c]*I[b][c]",
                     loop_dims=["B", "K", "C"], loop_sizes=[1, co, c])
    else:
        if layer.kind == "conv":
            entry.update(operator_type="Conv",
                         equation="O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]",
                         loop_dims=["B", "K", "C", "OY", "OX", "FY", "FX"],
                         loop_sizes=[1, co, c, ho, wo, kh, kw])
        else:
            entry.update(operator_type="Conv",
                         equation="O[b][g][oy][ox]+=W[g][fy][fx]*I[b][g][iy][ix]",
                         loop_dims=["B", "G", "OY", "OX", "FY", "FX"],
                         loop_sizes=[1, co, ho, wo, kh, kw])
        entry.update(dimension_relations=[f"ix={sw}*ox+1*fx", f"iy={sh}*oy+1*fy"],
                     pr_loop_dims=["IY", "IX"], pr_loop_sizes=[h, w],
                     padding=[[pad.top, pad.bottom], [pad.left, pad.right]])
    entry["operand_precision"] = {"W": p.weight_bits, "I": p.act_bits, "O": PSUM_BITS,
                                  "O_final": capacity.out_bits}
    entry["operand_source"] = {"W": layer_id}
    return entry


def mapping_spec(layer, capacity):
    """ZigZag mapping entries: the spatial unrolling of ``layer`` on the ``pes x lanes`` array
    (clipped to the layer's sizes), under the layer's name and as the default."""
    lanes = capacity.lanes
    if layer.kind == "depthwise":
        d1 = f"G, {min(capacity.pes, layer.out_channels)}"
        d2 = f"OX, {min(lanes, layer.out_shape[1])}"
    else:
        d1 = f"K, {min(capacity.pes, layer.out_channels)}"
        d2 = f"C, {min(lanes, layer.in_channels)}"
    entry = {"spatial_mapping": {"D1": [d1], "D2": [d2]},
             "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}
    return [{"name": layer.name, **entry}, {"name": "default", **entry}]


def _port(name, kind, bits_min, bits_max, allocation):
    return {"name": name, "type": kind, "bandwidth_min": bits_min, "bandwidth_max": bits_max,
            "allocation": list(allocation)}


def accelerator_spec(capacity, buffer_bytes=None, double_buffer=None):
    """The ZigZag accelerator (a dict of the YAML fields): ``pes x lanes`` MACs, a weight and a
    partial-sum register per MAC, one buffer of ``buffer_bytes`` (default
    ``capacity.total_bytes``) shared by I, W and O, and DRAM with a 64-bit port. Only DRAM
    words cost energy (1 pJ each)."""
    p = capacity.precision
    buffer_bytes = capacity.total_bytes if buffer_bytes is None else buffer_bytes
    if double_buffer is None:
        double_buffer = capacity.config.double_buffer
    wide = capacity.pes * PSUM_BITS
    free = {"r_cost": 0.0, "w_cost": 0.0, "area": 0.0, "latency": 1}
    memories = {
        "rf_w": {"size": p.weight_bits, **free, "operands": ["I2"],
                 "ports": [_port("r_port_1", "read", p.weight_bits, p.weight_bits, ["I2, tl"]),
                           _port("w_port_1", "write", p.weight_bits, p.weight_bits,
                                 ["I2, fh"])],
                 "served_dimensions": []},
        "rf_o": {"size": PSUM_BITS, **free, "operands": ["O"],
                 "ports": [_port("r_port_1", "read", PSUM_BITS, PSUM_BITS, ["O, tl"]),
                           _port("r_port_2", "read", PSUM_BITS, PSUM_BITS, ["O, th"]),
                           _port("w_port_1", "write", PSUM_BITS, PSUM_BITS, ["O, fh"]),
                           _port("w_port_2", "write", PSUM_BITS, PSUM_BITS, ["O, fl"])],
                 "served_dimensions": []},
        "buffer": {"size": 8 * buffer_bytes, **free, "operands": ["I1", "I2", "O"],
                   "ports": [_port("r_port_1", "read", 8, wide, ["I1, tl"]),
                             _port("r_port_2", "read", 8, wide, ["I2, tl"]),
                             _port("r_port_3", "read", 8, wide, ["O, tl", "O, th"]),
                             _port("w_port_1", "write", 8, wide, ["I1, fh"]),
                             _port("w_port_2", "write", 8, wide, ["I2, fh"]),
                             _port("w_port_3", "write", 8, wide, ["O, fh", "O, fl"])],
                   "served_dimensions": ["D1", "D2"],
                   "force_double_buffering": bool(double_buffer)},
        "dram": {"size": 1 << 40, "r_cost": 1.0, "w_cost": 1.0, "area": 0.0, "latency": 1,
                 "operands": ["I1", "I2", "O"],
                 "ports": [_port("rw_port_1", "read_write", DRAM_PORT_BITS, DRAM_PORT_BITS,
                                 ["I1, fh", "I1, tl", "I2, fh", "I2, tl", "O, fh", "O, tl",
                                  "O, fl", "O, th"])],
                 "served_dimensions": ["D1", "D2"]},
    }
    return {"name": f"tessera_{capacity.pes}x{capacity.lanes}_{buffer_bytes}B",
            "memories": memories,
            "operational_array": {"unit_energy": 0.0, "unit_area": 1.0,
                                  "dimensions": ["D1", "D2"],
                                  "sizes": [capacity.pes, capacity.lanes]}}


def _yaml(data):
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)


def zigzag_inputs(layer, capacity, buffer_bytes=None, double_buffer=None):
    """{file name: YAML text} of the workload, accelerator and mapping for one layer."""
    return {"workload.yaml": _yaml([workload_spec(layer, capacity)]),
            "accelerator.yaml": _yaml(accelerator_spec(capacity, buffer_bytes, double_buffer)),
            "mapping.yaml": _yaml(mapping_spec(layer, capacity))}


# --- running ZigZag --------------------------------------------------------------------------
class ZigZagError(RuntimeError):
    """ZigZag found no mapping of a layer (e.g. the buffer cannot hold its smallest tiles)."""


@dataclass
class ZigZagResult:
    """ZigZag's figures for one layer (bytes are DRAM bytes: 64-bit words x 8)."""

    input_bytes: int
    weight_bytes: int
    psum_read_bytes: int        # partial sums read back from DRAM
    output_bytes: int           # everything written, partial sums included
    latency_cycles: float
    ideal_cycles: float
    spatial_utilization: float
    seconds: float              # ZigZag's run time when the result was computed
    digest: str
    cached: bool = False

    @property
    def read_bytes(self):
        return self.input_bytes + self.weight_bytes + self.psum_read_bytes

    @property
    def written_bytes(self):
        return self.output_bytes


def _zigzag_version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("zigzag-dse")
    except PackageNotFoundError:
        return "missing"


def _digest(files, options):
    blob = json.dumps({"files": files, "options": options, "zigzag": _zigzag_version(),
                       "format": CACHE_FORMAT}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


@contextmanager
def _quiet_zigzag():
    """ZigZag's API calls ``logging.basicConfig(level=INFO)`` and logs every stage: keep the
    root logger as it was and ZigZag's own loggers at WARNING while it runs."""
    root = logging.getLogger()
    placeholder = None
    if not root.handlers:       # basicConfig only configures a root logger without handlers
        placeholder = logging.NullHandler()
        root.addHandler(placeholder)
    zz = logging.getLogger("zigzag")
    level = zz.level
    zz.setLevel(logging.WARNING)
    try:
        yield
    finally:
        zz.setLevel(level)
        if placeholder is not None:
            root.removeHandler(placeholder)


def _extract(cme):
    """DRAM words of each operand from a CostModelEvaluation, as bytes."""
    from zigzag.hardware.architecture.memory_port import DataDirection

    words = {}
    for op, levels in cme.memory_word_access.items():
        mem_op = cme.memory_operand_links.layer_to_mem_op(op)
        top = cme.accelerator.memory_hierarchy.get_operand_top_level(mem_op)
        if len(levels) != len(cme.accelerator.mem_hierarchy_dict[mem_op]) or \
                top.name != "dram":
            raise RuntimeError(f"ZigZag did not reach DRAM for operand {op} "
                               f"({len(levels)} levels, top {top.name})")
        dram = levels[-1]
        words[str(op)] = (int(dram.get(DataDirection.RD_OUT_TO_LOW)),
                          int(dram.get(DataDirection.WR_IN_BY_LOW)))
    per_word = DRAM_PORT_BITS // 8
    return {"input_bytes": words["I"][0] * per_word,
            "weight_bytes": words["W"][0] * per_word,
            "psum_read_bytes": words["O"][0] * per_word,
            "output_bytes": words["O"][1] * per_word}


def run_zigzag(layer, capacity, *, buffer_bytes=None, double_buffer=None,
               lpf_limit=DEFAULT_LPF_LIMIT, opt=DEFAULT_OPT, cache_dir=DEFAULT_CACHE_DIR,
               workdir=None):
    """Run ZigZag on one layer (or read its cached result) -> :class:`ZigZagResult`.

    ``cache_dir=None`` disables the cache; ``workdir`` keeps the YAML inputs and ZigZag's
    outputs there (default: a temporary directory, removed afterwards)."""
    files = zigzag_inputs(layer, capacity, buffer_bytes, double_buffer)
    options = {"opt": opt, "lpf_limit": lpf_limit, "temporal_mapping_type": "uneven"}
    digest = _digest(files, options)
    cache = Path(cache_dir) / f"{digest}.json" if cache_dir is not None else None
    if cache is not None and cache.exists():
        data = json.loads(cache.read_text())
        return ZigZagResult(**data, digest=digest, cached=True)

    from zigzag.api import get_hardware_performance_zigzag

    with tempfile.TemporaryDirectory(prefix="zigzag-") as tmp:
        where = Path(workdir) if workdir is not None else Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (where / name).write_text(text)
        from zigzag.opt.loma.engine import NoValidLoopOrderingFoundException

        start = time.perf_counter()
        try:
            with _quiet_zigzag():
                _, _, cmes = get_hardware_performance_zigzag(
                    workload=str(where / "workload.yaml"),
                    accelerator=str(where / "accelerator.yaml"),
                    mapping=str(where / "mapping.yaml"), opt=opt, lpf_limit=lpf_limit,
                    dump_folder=str(where / "out"), loma_show_progress_bar=False)
        except NoValidLoopOrderingFoundException as error:
            size = capacity.total_bytes if buffer_bytes is None else buffer_bytes
            raise ZigZagError(f"{str(error).splitlines()[0]} (on-chip buffer of {size} B)"
                              ) from error
        seconds = time.perf_counter() - start
        cme = cmes[0][1][0][0]
        data = _extract(cme)
    data.update(latency_cycles=float(cme.latency_total2), ideal_cycles=float(cme.ideal_cycle),
                spatial_utilization=float(cme.mac_spatial_utilization),
                seconds=round(seconds, 3))
    if cache is not None:           # written whole, then renamed: no torn reads
        cache.parent.mkdir(parents=True, exist_ok=True)
        part = cache.with_name(f"{cache.name}.{os.getpid()}.part")
        part.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        part.replace(cache)
    return ZigZagResult(**data, digest=digest)


# --- the comparison --------------------------------------------------------------------------
def _used(size, kernel, stride, before, out):
    """How many of ``size`` input positions a sliding window reads at all."""
    used = set()
    for o in range(out):
        start = o * stride - before
        used.update(range(max(start, 0), min(start + kernel, size)))
    return len(used)


def compulsory_bytes(layer, capacity):
    """(read, written) bytes if every input element the layer uses, every weight and every
    output moved exactly once at its element width, without layout padding: the floor of both
    tools' counts, bar Tessera's quantization blocks. A stride larger than the kernel skips
    input rows and columns, which are not counted."""
    p = capacity.precision
    h, w, c = layer.in_shape
    if layer.kind in ("conv", "depthwise"):
        (kh, kw), (sh, sw), pad = layer.kernel, layer.stride, layer.padding
        h = _used(h, kh, sh, pad.top, layer.out_shape[0])
        w = _used(w, kw, sw, pad.left, layer.out_shape[1])
    read = -(-h * w * c * p.act_bits // 8) + -(-layer.weight_elements * p.weight_bits // 8)
    written = -(-layer.output_elements * capacity.out_bits // 8)
    return read, written


@dataclass
class CompareRow:
    """One layer: the compiler's traffic (``optimal_tiling`` + ``evaluate``) and ZigZag's."""

    layer: str
    kind: str
    tiling: str
    ours_input: int | None
    ours_weights: int | None
    ours_qparams: int | None
    ours_output: int | None
    ours_cycles: float | None
    compulsory_read: int
    compulsory_written: int
    zigzag: ZigZagResult | None
    error: str = ""
    hong_kung: int = 0          # the layer's Hong-Kung-style bound, bytes (report.py)

    @property
    def ours_read(self):
        if self.ours_input is None:
            return None
        return self.ours_input + self.ours_weights + self.ours_qparams

    @property
    def ours_written(self):
        return self.ours_output

    @property
    def zigzag_read(self):
        return None if self.zigzag is None else self.zigzag.read_bytes

    @property
    def zigzag_written(self):
        return None if self.zigzag is None else self.zigzag.written_bytes

    @property
    def zigzag_cycles(self):
        return None if self.zigzag is None else self.zigzag.latency_cycles

    @property
    def ratio(self):
        """Our traffic without quantization blocks over ZigZag's (None if either is missing)."""
        if self.ours_input is None or self.zigzag is None:
            return None
        ours = self.ours_input + self.ours_weights + self.ours_output
        theirs = self.zigzag.read_bytes + self.zigzag.written_bytes
        return ours / theirs if theirs else None

    def as_dict(self):
        d = asdict(self)
        d.update(ours_read=self.ours_read, ours_written=self.ours_written, ratio=self.ratio)
        return d


def _select(network, layers):
    weighted = [layer for layer in network.layers if layer.kind in ZIGZAG_KINDS]
    if layers is None:
        return weighted
    if isinstance(layers, int):
        return weighted[:layers]
    chosen = []
    for item in layers:
        layer = network.layer(item) if isinstance(item, str) else item
        if layer.kind in ZIGZAG_KINDS:
            chosen.append(layer)
    return chosen


def compare_layers(network, capacity, cost=DEFAULT_COST, layers=None, **zigzag_options):
    """[:class:`CompareRow`] for the conv, depthwise and FC layers of ``network`` (a
    :class:`~sw.workloads.shapes.Network` or a name for ``load_network``).

    ``layers``: None (all of them), N (the first N) or layer names / :class:`Layer` objects
    (others are skipped). ``zigzag_options`` go to :func:`run_zigzag` (``buffer_bytes``,
    ``double_buffer``, ``lpf_limit``, ``opt``, ``cache_dir``, ``workdir``)."""
    if isinstance(network, str):
        from sw.workloads import load_network

        network = load_network(network)
    rows = []
    hong_kung = dict(hong_kung_bound(network, capacity))
    for layer in _select(network, layers):
        read, written = compulsory_bytes(layer, capacity)
        row = CompareRow(layer.name, layer.kind, "-", None, None, None, None, None, read,
                         written, None, hong_kung=hong_kung[layer.name])
        errors = []
        try:
            t = optimal_tiling(layer, capacity, cost)
            res = evaluate(layer, capacity, cost, t.rows, t.out_channels, t.in_channels,
                           t.order)
            row.tiling = (f"{t.rows}r x {t.out_channels}co x {t.in_channels}ci {t.order}"
                          if layer.kind != "depthwise"
                          else f"{t.rows}r x {t.out_channels}c {t.order}")
            row.ours_input, row.ours_weights, row.ours_qparams, row.ours_output = (
                int(res.beats[name]) * BEAT_BYTES
                for name in ("input", "weights", "qparams", "output"))
            row.ours_cycles = float(res.cycles)
        except TilingError as error:
            errors.append(f"ours: {error}")
        try:
            row.zigzag = run_zigzag(layer, capacity, **zigzag_options)
        except ZigZagError as error:
            errors.append(f"ZigZag: {error}")
        row.error = "; ".join(errors)
        rows.append(row)
    return rows


def _num(value):
    return "-" if value is None else f"{value:,.0f}"


def format_table(rows):
    """The rows as a markdown table (bytes; ratio = ours without qparams / ZigZag)."""
    lines = ["| layer | op | our tiling | ours read B | of which qparams B | ours written B | "
             "ZigZag read B | ZigZag written B | compulsory read / written B | Hong-Kung B | "
             "ours / ZigZag | ours DMA cycles | ZigZag cycles | ZigZag util |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for r in rows:
        zz = r.zigzag
        psum = f" ({_num(zz.psum_read_bytes)} psum)" if zz and zz.psum_read_bytes else ""
        lines.append(
            f"| {r.layer} | {r.kind} | {r.tiling} | {_num(r.ours_read)} | "
            f"{_num(r.ours_qparams)} | {_num(r.ours_written)} | {_num(r.zigzag_read)}{psum} | "
            f"{_num(r.zigzag_written)} | {r.compulsory_read:,} / {r.compulsory_written:,} | "
            f"{r.hong_kung:,} | "
            f"{'-' if r.ratio is None else f'{r.ratio:.2f}'} | {_num(r.ours_cycles)} | "
            f"{_num(r.zigzag_cycles)} | "
            f"{'-' if zz is None else f'{zz.spatial_utilization:.2f}'} |")
        if r.error:
            notes.append(f"- {r.layer}: {r.error}")
    done = [r for r in rows if r.ours_input is not None and r.zigzag is not None]
    if done:
        ours_r = sum(r.ours_read for r in done)
        ours_q = sum(r.ours_qparams for r in done)
        ours_w = sum(r.ours_written for r in done)
        zz_r = sum(r.zigzag_read for r in done)
        zz_w = sum(r.zigzag_written for r in done)
        c_r = sum(r.compulsory_read for r in done)
        c_w = sum(r.compulsory_written for r in done)
        ratio = (ours_r - ours_q + ours_w) / (zz_r + zz_w) if zz_r + zz_w else None
        lines.append(
            f"| **total** ({len(done)} layers) | | | {ours_r:,} | {ours_q:,} | {ours_w:,} | "
            f"{zz_r:,} | {zz_w:,} | {c_r:,} / {c_w:,} | "
            f"{sum(r.hong_kung for r in done):,} | "
            f"{'-' if ratio is None else f'{ratio:.2f}'} | "
            f"{_num(sum(r.ours_cycles for r in done))} | "
            f"{_num(sum(r.zigzag_cycles for r in done))} | |")
    return "\n".join(lines + (["", *notes] if notes else []))


# --- command line ----------------------------------------------------------------------------
def main(argv=None):
    from .cli import parse_size

    parser = argparse.ArgumentParser(
        prog="python -m sw.tiling.zigzag_compare",
        description="DRAM traffic of the tiling compiler and of ZigZag, layer by layer")
    parser.add_argument("network", help="built-in network name or a .tflite file")
    parser.add_argument("--ocm", metavar="SIZE",
                        help="one shared on-chip memory of SIZE bytes (64K, 2M); default: the "
                             "accelerator's private PLMs, given to ZigZag as one buffer of "
                             "their total size")
    parser.add_argument("--precision", default="a8w8", help="ST configuration (a16w16 ... a4w4)")
    parser.add_argument("--layers", type=int, metavar="N",
                        help="only the first N conv/depthwise/FC layers")
    parser.add_argument("--single-buffer", action="store_true",
                        help="no double buffering, on either side")
    parser.add_argument("--zigzag-single-buffer", action="store_true",
                        help="ZigZag without force_double_buffering (the compiler unchanged)")
    parser.add_argument("--cost", metavar="C,p,t", help="DMA cost model parameters (cycles)")
    parser.add_argument("--lpf-limit", type=int, default=DEFAULT_LPF_LIMIT,
                        help="ZigZag LOMA's loop-prime-factor limit (default %(default)s)")
    parser.add_argument("--opt", choices=("energy", "latency", "EDP"), default=DEFAULT_OPT,
                        help="ZigZag objective (energy = DRAM words here; default)")
    parser.add_argument("--cache-dir", metavar="DIR", default=str(DEFAULT_CACHE_DIR),
                        help="where ZigZag results are cached (default %(default)s)")
    parser.add_argument("--no-cache", action="store_true", help="run ZigZag on every layer")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead")
    args = parser.parse_args(argv)
    try:
        from sw.workloads import load_network

        network = load_network(args.network)
        config = replace(DEFAULT_CONFIG, double_buffer=not args.single_buffer)
        capacity = Capacity(config, args.precision, None,
                            parse_size(args.ocm) if args.ocm else None)
        cost = DmaCost.parse(args.cost) if args.cost else DmaCost()
    except (KeyError, ValueError) as error:
        message = error.args[0] if isinstance(error, KeyError) else error
        print(f"zigzag_compare: error: {message}", file=sys.stderr)
        return 2
    options = {"lpf_limit": args.lpf_limit, "opt": args.opt,
               "cache_dir": None if args.no_cache else Path(args.cache_dir)}
    if args.zigzag_single_buffer:
        options["double_buffer"] = False
    start = time.perf_counter()
    rows = compare_layers(network, capacity, cost, args.layers, **options)
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=1))
        return 0
    zz_db = config.double_buffer and not args.zigzag_single_buffer
    print(f"{network.name}: {capacity.precision.label}, {capacity.describe()}; DMA cost {cost}")
    print(f"ZigZag {_zigzag_version()}: {capacity.pes}x{capacity.lanes} MACs, one "
          f"{capacity.total_bytes:,} B buffer shared by I/W/O"
          f"{' (force_double_buffering)' if zz_db else ''}, 64-bit DRAM port, opt={args.opt}"
          f" (energy = DRAM words), lpf_limit={args.lpf_limit}")
    print()
    print(format_table(rows))
    fresh = [r.zigzag for r in rows if r.zigzag is not None and not r.zigzag.cached]
    where = "not cached" if args.no_cache else f"cache {args.cache_dir}"
    print(f"\n{len(rows)} layers in {elapsed:.1f} s ({len(fresh)} ZigZag runs, "
          f"{sum(z.seconds for z in fresh):.1f} s; {where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
