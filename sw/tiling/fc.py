"""Tiling of FullyConnected layers for the FC datapath: vectors per command (the batch),
inputs per command, outputs per command.

The FC datapath (``docs/accelerator.md``, FC commands) keeps no weights on chip: each
command streams its weight rows once and uses each row for every vector of its batch, holds
its batch's input vectors in the input PLM (``FCConfig.plm_in_words``: ``batch *
ceil(inputs * act_bits / 64)`` beats) and at most 256 outputs (its quantization block), and
accumulates across input tiles (innermost, ``acc_flag``) in its accumulator PLM. So:

* a larger batch tile means the weights are streamed fewer times (``ceil(vectors / batch)``);
* a larger input tile means fewer commands and fewer partial passes, but fewer vectors fit;
* output tiles of 256 (the most a block allows) read each input vector the fewest times.

:func:`fc_tiling` tries every batch tile, takes the largest input tile that fits with it,
and keeps the one with the fewest estimated cycles: per command, the larger of its bus beats
(descriptor, input vectors, quantization block, weight stream: the datapath reads at one beat
per cycle at best) and its PE cycles (one per (block, step, vector)), plus a fixed
:data:`COMMAND_OVERHEAD` for the hand-off between commands.
"""

from dataclasses import dataclass

from hls_ref.config import FC_MAX_OUTPUTS
from hls_ref.formats import FCRows
from hls_ref.precision import Precision

from .capacity import TilingError

__all__ = ["COMMAND_OVERHEAD", "FCTiling", "fc_tiling"]

#: Cycles between the end of one command's weight stream and the start of the next one's
#: (descriptor fetch, checks, request latency): an estimate that ranks tilings (a list of
#: one 128-output command measures about 280 cycles beside its weight stream, most of them
#: the store's one output per cycle: ``docs/results.md``, FC datapath).
COMMAND_OVERHEAD = 40
_BEAT = 8
_DESCRIPTOR_BEATS = 8


def _tiles(total, size):
    return [(start, min(start + size, total)) for start in range(0, total, size)]


@dataclass(frozen=True)
class FCTiling:
    """A FullyConnected layer's tiles on the FC datapath and their estimate."""

    vectors: int
    inputs: int
    outputs: int
    batch: int                   # vectors per command
    in_tile: int                 # inputs per command
    out_tile: int                # outputs per command
    commands: int
    dram_bytes: int              # bytes read: descriptors, vectors, blocks, weights
    cycles: int                  # estimated cycles

    @property
    def batch_splits(self):
        return tuple(range(self.batch, self.vectors, self.batch))

    @property
    def in_splits(self):
        return tuple(range(self.in_tile, self.inputs, self.in_tile))

    @property
    def out_splits(self):
        return tuple(range(self.out_tile, self.outputs, self.out_tile))


def _estimate(vectors, inputs, outputs, p, fc, batch, in_tile, out_tile):
    per_beat = 64 // p.act_bits
    commands = cycles = beats = 0
    for v0, v1 in _tiles(vectors, batch):
        for o0, o1 in _tiles(outputs, out_tile):
            for k, (i0, i1) in enumerate(_tiles(inputs, in_tile)):
                rows = FCRows(p, fc.pes, fc.st_units, i1 - i0, o1 - o0)
                loads_q = k == 0 or i1 == inputs
                command = (_DESCRIPTOR_BEATS + (v1 - v0) * -(-(i1 - i0) // per_beat)
                           + (2 + (o1 - o0 + 1) // 2) * loads_q + rows.beats)
                compute = rows.blocks * rows.steps * (v1 - v0)
                cycles += max(command, compute) + COMMAND_OVERHEAD
                beats += command
                commands += 1
    return commands, beats * _BEAT, cycles


def fc_tiling(name, vectors, inputs, outputs, precision, config):
    """The tiles of FullyConnected layer ``name`` (``vectors`` input vectors of ``inputs``,
    ``outputs`` neurons) at ``precision`` on ``config``'s FC datapath, as an
    :class:`FCTiling`; :class:`~sw.tiling.capacity.TilingError` naming the layer and the
    limit when it cannot run there. (Output tiles of 256 start on a byte at any output
    width.)"""
    fc = config.fc
    p = Precision.parse(precision)
    if fc is None:
        raise TilingError(f"{name}: the accelerator has no FC datapath")
    if p not in fc.precisions:
        raise TilingError(f"{name}: the FC datapath does not implement {p.label}; it has "
                          f"{', '.join(q.label for q in fc.precisions)}")
    per_beat = 64 // p.act_bits
    rows = fc.plm_in_words // 4                      # input PLM beats
    out_tile = min(outputs, FC_MAX_OUTPUTS)
    best = None
    for batch in range(1, min(vectors, fc.max_batch) + 1):
        beats = rows // batch                        # per vector
        in_tile = min(inputs, beats * per_beat)
        if in_tile < 1:
            continue
        commands, dram, cycles = _estimate(vectors, inputs, outputs, p, fc, batch, in_tile,
                                           out_tile)
        candidate = FCTiling(vectors, inputs, outputs, batch, in_tile, out_tile, commands,
                             dram, cycles)
        if best is None or cycles <= best.cycles:
            best = candidate
    if best is None:
        raise TilingError(f"{name}: an input vector of {inputs} does not fit the FC input PLM "
                          f"({fc.plm_in_words} words) even one beat at a time")
    return best
