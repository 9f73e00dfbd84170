"""The compiler for the per-channel datapath: DepthwiseConv2D, AveragePool2D and Add layers of
a graph lowered to descriptor lists (``hls_ref.perchannel``, ``sw.perchannel_program``).

* :func:`lower_perchannel` turns a layer into what the datapath loads: a depthwise layer's
  weights and quantization block (:func:`sw.lowering.lower_layer`, which proves that no
  accumulator overflows), a global average pool's division as a requantization
  (:func:`hls_ref.perchannel.pool_scale`), an add's three-entry block with the proof that no
  32-bit intermediate wraps. A layer the datapath cannot compute raises
  :class:`sw.lowering.CompileError` naming it (a pool whose window is not the whole input, a
  depth multiplier, an add whose shifted inputs overflow); such layers run on the host.
* :func:`perchannel_tiling` chooses the tiles on a build: channel blocks of the datapath's
  ``lanes``, and among the row stripes the input PLM and output buffer hold, the one that
  moves the fewest beats of those within :data:`CYCLE_SLACK` of the fewest estimated cycles
  (:func:`schedule_cycles`: each command's loads and store over its exact requests at one
  beat a cycle, its compute at the datapath's rate, overlapped as the build's ``banks``
  allow). A layer the build cannot run raises
  :class:`sw.tiling.capacity.TilingError` naming the layer, the limit and the smallest build
  that would run it.
* :func:`compile_perchannel` does both and builds the program.
"""

from dataclasses import dataclass, replace

import numpy as np

from hls_ref import Precision
from hls_ref.descriptor import DESCRIPTOR_BEATS, Mode
from hls_ref.formats import QuantBlock
from hls_ref.invocation import ACC_BITS, Command
from hls_ref.perchannel import (
    add_qblock,
    geometry,
    load_requests,
    mac_cycles,
    pool_scale,
    store_request,
)

from .conv2d_cycles import REQUEST_CYCLES
from .graph import Add, AveragePool2D, DepthwiseConv2D
from .lowering import CompileError, lower_layer
from .perchannel_program import add_program, avg_pool_program, depthwise_program
from .tiling.capacity import TilingError

__all__ = ["PerChannelLayer", "PerChannelTiling", "compile_perchannel", "lower_perchannel",
           "perchannel_tiling", "schedule_cycles"]


@dataclass
class PerChannelLayer:
    """A layer as the per-channel datapath sees it."""

    op: object
    mode: Mode
    in_shape: tuple            # (H, W, C) of each input
    weights: np.ndarray | None  # depthwise: (kh, kw, C)
    qblock: QuantBlock
    command: Command


@dataclass(frozen=True)
class PerChannelTiling:
    """The tiles of a layer on a build: output rows per stripe (input rows for a pool) and
    the figures of the choice."""

    rows: int
    commands: int
    cycles: int                # :func:`schedule_cycles`
    beats: int


def lower_perchannel(graph, op, precision=Precision.A8W8, out_bits=8):
    """Lower ``op`` (DepthwiseConv2D, global AveragePool2D or Add) for the per-channel
    datapath at ``precision``; raises :class:`CompileError` naming the layer when the datapath
    cannot compute it."""
    precision = Precision.parse(precision)
    shape = tuple(graph.tensor(op.inputs[0]).shape[1:])
    if isinstance(op, DepthwiseConv2D):
        layer = lower_layer(graph, op, precision, out_bits)
        return PerChannelLayer(op, Mode.DEPTHWISE, shape, layer.weights, layer.qblock,
                               layer.command)
    if isinstance(op, AveragePool2D):
        return _lower_pool(graph, op, precision, out_bits, shape)
    if isinstance(op, Add):
        return _lower_add(graph, op, precision, out_bits, shape)
    raise CompileError(f"{op.name}: {op.kind} does not run on the per-channel datapath")


def _derived(graph, op):
    from .golden import prepare

    return prepare(graph)[op.name]


def _lower_pool(graph, op, precision, out_bits, shape):
    h, w, c = shape
    pads = (op.padding.top, op.padding.bottom, op.padding.left, op.padding.right)
    if tuple(op.filter) != (h, w) or any(pads):
        raise CompileError(f"{op.name}: a {op.filter[0]}x{op.filter[1]} average pool on a "
                           f"{h}x{w} input is not global (the per-channel datapath pools the "
                           f"whole tile); it runs on the host")
    x, out = graph.tensor(op.inputs[0]), graph.tensor(op.output)
    if x.quant.single() != out.quant.single():
        raise CompileError(f"{op.name}: an average pool's input and output quantization "
                           f"differ ({x.quant.single()} and {out.quant.single()})")
    if (h * w) << (precision.act_bits - 1) >= 1 << (ACC_BITS - 1):
        raise CompileError(f"{op.name}: the sum of {h * w} elements can reach beyond the "
                           f"{ACC_BITS}-bit accumulator")
    try:
        multiplier, shift = pool_scale(h * w, precision.act_bits)
    except ValueError as error:
        raise CompileError(f"{op.name}: {error}") from None
    act_min, act_max = _derived(graph, op)
    qblock = QuantBlock(0, act_min, act_max, np.zeros(c, np.int64), np.full(c, multiplier),
                        np.full(c, shift))
    return PerChannelLayer(op, Mode.AVGPOOL, shape, None, qblock,
                           Command(precision, out_bits))


def _lower_add(graph, op, precision, out_bits, shape):
    params = _derived(graph, op)
    bits = precision.act_bits
    # every intermediate of the hardware's 32-bit arithmetic must stay in range
    # (a positive shift multiplies before the high multiply: that product must fit too)
    worst = 0
    for zero_point, multiplier, shift in (params.input1, params.input2):
        diff = (1 << (bits - 1)) + abs(zero_point)
        shifted = diff << (params.left_shift + max(shift, 0))
        if shifted >= 1 << (ACC_BITS - 1):
            raise CompileError(f"{op.name}: an input less its zero point ({diff}) shifted left "
                               f"by {params.left_shift + max(shift, 0)} overflows {ACC_BITS} "
                               f"bits")
        worst += -(-(diff << params.left_shift) * multiplier // (1 << (31 - shift))) + 1
    output_shift = max(params.output[2], 0)
    if worst << output_shift >= 1 << (ACC_BITS - 1):
        raise CompileError(f"{op.name}: the sum of the scaled inputs can reach {worst}"
                           f"{f' (shifted left by {output_shift})' if output_shift else ''}, "
                           f"beyond {ACC_BITS} bits")
    return PerChannelLayer(op, Mode.ADD, shape, None, add_qblock(params),
                           Command(precision, out_bits))


def _program(layer, inputs, config, rows, out_splits=(), seed=0):
    """The layer's program with stripes of ``rows`` (output rows; input rows for a pool);
    ``seed`` None: its descriptors only."""
    h = layer.in_shape[0]
    if layer.mode == Mode.DEPTHWISE:
        ho = _out_rows(layer)
        return depthwise_program(inputs[0], layer.weights, layer.qblock, layer.command, config,
                                 out_splits=out_splits, row_splits=range(rows, ho, rows),
                                 seed=seed)
    if layer.mode == Mode.AVGPOOL:
        return avg_pool_program(inputs[0], layer.qblock, layer.command, config,
                                out_splits=out_splits, row_splits=range(rows, h, rows),
                                seed=seed)
    return add_program(inputs[0], inputs[1], layer.qblock, layer.command, config,
                       out_splits=out_splits, row_splits=range(rows, h, rows), seed=seed)


def _out_rows(layer):
    h = layer.in_shape[0]
    kh = layer.command.kernel[0]
    top, bottom = layer.command.padding[:2]
    return (h + top + bottom - kh) // layer.command.stride[0] + 1


def _out_cols(layer):
    w = layer.in_shape[1]
    kw = layer.command.kernel[1]
    left, right = layer.command.padding[2:]
    return (w + left + right - kw) // layer.command.stride[1] + 1


def _smallest(section, **changes):
    return repr(replace(section, **changes))


def _check_build(layer, config):
    """TilingError naming the layer, the limit and the smallest build, if ``config`` cannot
    run any tile of the layer."""
    name = layer.op.name
    section = config.depthwise
    if section is None:
        raise TilingError(f"{name}: the build has no per-channel datapath (a DepthwiseConfig "
                          f"section runs it)")
    p = Precision.parse(layer.command.precision)
    if p not in section.precisions:
        raise TilingError(f"{name}: the per-channel datapath does not implement {p.label}; "
                          f"smallest build: "
                          f"{_smallest(section, precisions=(*section.precisions, p))}")
    h, w, _ = layer.in_shape
    inputs = 2 if layer.mode == Mode.ADD else 1
    if layer.mode == Mode.DEPTHWISE:
        kh, kw = layer.command.kernel
        if kh > section.max_kernel[0] or kw > section.max_kernel[1]:
            kernel = (max(kh, section.max_kernel[0]), max(kw, section.max_kernel[1]))
            raise TilingError(f"{name}: its {kh}x{kw} kernel is above max_kernel "
                              f"{section.max_kernel}; smallest build: "
                              f"{_smallest(section, max_kernel=kernel)}")
        stride = max(layer.command.stride)
        if stride > section.max_stride:
            raise TilingError(f"{name}: its stride {stride} is above max_stride "
                              f"{section.max_stride}; smallest build: "
                              f"{_smallest(section, max_stride=stride)}")
        need = min(kh, h) * w              # one output row: up to kh input rows
        out = _out_cols(layer)
    else:
        need = w
        out = 1 if layer.mode == Mode.AVGPOOL else w
    if inputs * need > section.plm_pixels:
        raise TilingError(f"{name}: one row stripe needs {inputs * need} pixels of the input "
                          f"PLM, the build has plm_pixels {section.plm_pixels}; smallest build: "
                          f"{_smallest(section, plm_pixels=inputs * need)}")
    if out > section.acc_pixels:
        raise TilingError(f"{name}: one output row needs {out} pixels of the output buffer, "
                          f"the build has acc_pixels {section.acc_pixels}; smallest build: "
                          f"{_smallest(section, acc_pixels=out)}")


def _stripes(layer, section):
    """The stripe heights that fit the input PLM (output rows; input rows for a pool)."""
    h, w, _ = layer.in_shape
    if layer.mode == Mode.DEPTHWISE:
        kh = layer.command.kernel[0]
        sh = layer.command.stride[0]
        wo = _out_cols(layer)
        fits = []
        for rows in range(1, _out_rows(layer) + 1):
            span = min((rows - 1) * sh + kh, h)
            if span * w <= section.plm_pixels and rows * wo <= section.acc_pixels:
                fits.append(rows)
        return fits
    if layer.mode == Mode.ADD:
        return [rows for rows in range(1, h + 1)
                if 2 * rows * w <= section.plm_pixels and rows * w <= section.acc_pixels]
    return [rows for rows in range(1, h + 1) if rows * w <= section.plm_pixels]


#: Cycles a command's compute takes beyond its operations (hand-offs between the stages,
#: the window's start and the pipeline's drain), for :func:`schedule_cycles`.
COMMAND_OVERHEAD = 20

#: Cycles between the last operation of a depthwise command and the first of the next one
#: when the next one is taken while the first drains (two banks; ``docs/perchannel.md``).
FOLLOW_CYCLES = 1


def _compute_cycles(desc, section):
    """Cycles of one command's compute: its MAC cycles (``hls_ref.perchannel.mac_cycles``),
    an add's ``requantizers / 2`` lanes of a pixel a cycle, and :data:`COMMAND_OVERHEAD`."""
    if desc.mode == Mode.ADD:
        ops = geometry(desc).pixels * -(-2 * section.lanes // section.requantizers)
    else:
        ops = mac_cycles(desc)
    return ops + COMMAND_OVERHEAD


def _request_cycles(requests):
    """The memory answers one beat a cycle, each request after :data:`REQUEST_CYCLES`."""
    return sum(r.beat_count() + REQUEST_CYCLES for r in requests if r is not None)


def schedule_cycles(program, section):
    """Estimated cycles of ``program`` on the per-channel datapath ``section``: each
    command's descriptor fetch and loads, compute (:func:`_compute_cycles`) and store (one
    beat a cycle after :data:`REQUEST_CYCLES`, as conv2d's estimate
    ``sw.conv2d_cycles``), in the order the datapath's stages allow. With ``section.banks``
    2 a command's loads start when the previous command's compute does and its compute once
    the previous command has been handed to the store; with 1, its loads wait for the
    previous compute and its compute for the previous store. With 2, a depthwise command whose
    loads have ended, and whose predecessor's predecessor has been stored, by the time the
    depthwise command before it has read its tile (estimated :data:`COMMAND_OVERHEAD` cycles
    before that one's compute ends) follows it :data:`FOLLOW_CYCLES` after its operations."""
    two = section.banks == 2
    load_end = comp_start = comp_end = handoff = store_end = earlier_store_end = 0
    previous = None
    for desc in program.descriptors:
        loads = DESCRIPTOR_BEATS + _request_cycles(load_requests(desc, section))
        load_start = max(load_end, comp_start if two else handoff)
        load_end = load_start + loads
        compute = _compute_cycles(desc, section)
        read_end = comp_end - COMMAND_OVERHEAD      # the previous command's tile read
        if (two and previous is not None and previous.mode == desc.mode == Mode.DEPTHWISE
                and max(load_end, earlier_store_end) <= read_end):
            comp_start = read_end
            comp_end = comp_end + compute - COMMAND_OVERHEAD + FOLLOW_CYCLES
        else:
            comp_start = max(load_end, handoff if two else store_end)
            comp_end = comp_start + compute
        earlier_store_end = store_end
        previous = desc
        handoff = max(comp_end, store_end)
        store_end = handoff + (_request_cycles([store_request(desc)]) if desc.q_flag else 0)
    return store_end


def _dma_beats(program, section):
    """Beats of every load and store of ``program``."""
    beats = 0
    for desc in program.descriptors:
        requests = [r for r in load_requests(desc, section) if r is not None]
        if desc.q_flag:
            requests.append(store_request(desc))
        beats += sum(r.beat_count() for r in requests)
    return beats


#: Share of the fewest estimated cycles a stripe may exceed and still be chosen for moving
#: fewer beats: smaller stripes hide more of the first load, but each re-reads its halo rows,
#: weights and quantization block (DS-CNN's depthwise layers: 1% more cycles for 26% fewer
#: beats than the fastest stripe).
CYCLE_SLACK = 0.02


def perchannel_tiling(layer, inputs, config):
    """The stripe on ``config`` that moves the fewest beats of those whose estimated cycles
    (:func:`schedule_cycles`) are within :data:`CYCLE_SLACK` of the fewest (ties: fewer
    cycles, then fewer commands), a :class:`PerChannelTiling`."""
    _check_build(layer, config)
    candidates = []
    for rows in _stripes(layer, config.depthwise):
        program = _program(layer, inputs, config, rows, seed=None)
        candidates.append(PerChannelTiling(rows, program.count,
                                           schedule_cycles(program, config.depthwise),
                                           _dma_beats(program, config.depthwise)))
    fewest = min(t.cycles for t in candidates)
    return min((t for t in candidates if t.cycles <= fewest * (1 + CYCLE_SLACK)),
               key=lambda t: (t.beats, t.cycles, t.commands))


def compile_perchannel(graph, op, inputs, config, precision=Precision.A8W8, out_bits=8, *,
                       seed=0):
    """Lower ``op`` and tile it for ``config``: ``(program, tiling, layer)``. ``inputs`` are
    the layer's input tensors as HWC arrays (an add's two)."""
    layer = lower_perchannel(graph, op, precision, out_bits)
    inputs = [np.asarray(v) for v in inputs]
    tiling = perchannel_tiling(layer, inputs, config)
    return _program(layer, inputs, config, tiling.rows, seed=seed), tiling, layer
