"""Running a compiled layer band by band on the instruction-set simulator.

Each group's program is loaded once (its instruction words count as input-stream words once)
and run once per band of output rows: the host packs the band's input stream in exactly the
order the program's MEMA writes consume it (:mod:`.bands`), runs it, and puts the output words
back into ``[maps, out_h, out_w]``.
"""

from dataclasses import dataclass

import numpy as np

from hls_ref.nve.isa import DEFAULT_CONFIG

from .compile import compile_layer, run_group
from .partial import run_parts
from .taskgraph import PLANES

__all__ = ["GroupRun", "LayerRun", "run_layer"]

WORD_BYTES = 8  # a stream beat, a local-buffer word and an instruction are 64 bits


@dataclass(frozen=True)
class GroupRun:
    """What the runs of one group did: ``maps``; ``bands`` run; ``cycles``, ``instructions``,
    ``mac_ops`` (``mac`` operations, 16 lanes each) summed over the bands; ``useful_macs``:
    MACs of outputs inside the map; ``input_words`` (program once + data words) and
    ``output_words`` (discarded words included)."""

    maps: tuple
    bands: int
    cycles: int
    instructions: int
    mac_ops: int
    useful_macs: int
    input_words: int
    output_words: int


@dataclass(frozen=True)
class LayerRun:
    """The outputs and statistics of a layer run on the ISS.

    ``outputs``: int8 ``[out_maps, out_h, out_w]`` (maps that were not compiled, and rows of
    bands that were not run, are 0). ``cycles`` (stalls included), ``instructions``,
    ``mac_ops`` (16-lane ``mac`` operations), ``useful_macs`` (multiply-accumulates of output
    pixels inside the maps); ``steady_mac_per_instruction``: useful lane MACs per loop-body
    instruction in the steady state (seed Table 5 metric); ``layer_mac_per_instruction``:
    ``useful_macs / instructions`` (partial bands, init parts, prologues and epilogues
    included); ``input_bytes`` / ``output_bytes``: external data of the streams (instructions,
    coefficients, pixels including padding, zero words; output words including discarded
    ones), 8 bytes per word; ``groups``: one :class:`GroupRun` per group.
    """

    outputs: np.ndarray
    cycles: int
    instructions: int
    mac_ops: int
    useful_macs: int
    steady_mac_per_instruction: float
    layer_mac_per_instruction: float
    input_bytes: int
    output_bytes: int
    groups: tuple


def run_layer(layer, inputs, weights, bias, shift, lut, *, compiled=None, bands=None,
              config=DEFAULT_CONFIG, **compile_options):
    """Compute ``layer`` on the NVE simulator, band by band for every group.

    ``inputs`` int8 ``[in_maps, in_h, in_w]``, ``weights`` one int16 array
    ``[inputs of map m, kernel_h, kernel_w]`` per output map, ``bias`` int16 ``[out_maps]``,
    ``shift`` (bits) and ``lut`` (1024 int8) as :func:`hls_ref.nve.layers.conv_layer` takes
    them. ``compiled``: a :class:`~.compile.CompiledLayer` of ``layer`` (default: compiled here
    with ``compile_options``). ``bands``: band indices to run (default: all; a group skips
    those past its last band: 16-lane groups have half the bands of 8-lane ones). Returns a
    :class:`LayerRun`.
    """
    if compiled is None:
        compiled = compile_layer(layer, config=config, **compile_options)
    if compiled.layer != layer:
        raise ValueError("the compiled layer is not this layer")
    out = np.zeros(layer.out_shape, dtype=np.int8)
    runs = []
    taps = layer.kernel_h * layer.kernel_w
    chains = {}  # the parts of each split map, run together band by band
    for group in compiled.groups:
        if group.part:
            chains.setdefault(group.spec.maps[0], []).append(group)
    part_results = {}
    for m, parts in chains.items():
        chosen = range(parts[0].bands) if bands is None else [b for b in bands
                                                              if 0 <= b < parts[0].bands]
        for band in chosen:
            got, results = run_parts(parts, layer, inputs, weights, bias, shift, lut, band,
                                     config)
            rows = slice(band * parts[0].lanes, (band + 1) * parts[0].lanes)
            out[m, rows] = got[m, rows]
            for group, result in zip(parts, results):
                part_results.setdefault(id(group), []).append((band, result))
    for group in compiled.groups:
        chosen = range(group.bands) if bands is None else [b for b in bands
                                                           if 0 <= b < group.bands]
        if group.part:
            results = [r for _, r in part_results.get(id(group), ())]
            pairs = len(group.spec.connections[0]) - (PLANES if group.spec.reload else 0)
        else:
            _, results = run_group(group, layer, inputs, weights, bias, shift, lut,
                                   bands=chosen, config=config, out=out)
            pairs = sum(len(layer.connections[m]) for m in group.spec.maps)
        rows = sum(min(group.lanes, layer.out_h - b * group.lanes) for b in chosen)
        runs.append(GroupRun(
            maps=group.spec.maps, bands=len(results),
            cycles=sum(r.cycles for r in results),
            instructions=sum(r.instructions for r in results),
            mac_ops=sum(r.mac_ops for r in results),
            useful_macs=rows * layer.out_w * taps * pairs,
            input_words=group.program.size + sum(r.inputs_used for r in results),
            output_words=sum(len(r.output_words) for r in results)))
    instructions = sum(r.instructions for r in runs)
    useful = sum(r.useful_macs for r in runs)
    return LayerRun(
        outputs=out, cycles=sum(r.cycles for r in runs), instructions=instructions,
        mac_ops=sum(r.mac_ops for r in runs), useful_macs=useful,
        steady_mac_per_instruction=compiled.steady_mac_per_instruction,
        layer_mac_per_instruction=useful / instructions if instructions else 0.0,
        input_bytes=WORD_BYTES * sum(r.input_words for r in runs),
        output_bytes=WORD_BYTES * sum(r.output_words for r in runs),
        groups=tuple(runs))
