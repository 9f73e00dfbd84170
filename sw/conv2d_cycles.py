"""A cycle estimate of a conv layer's descriptor list on the conv2d accelerator's pipeline,
for choosing its row stripes (``sw.program.compiler_program``).

The tiling compiler minimises DMA traffic; the accelerator also needs the pipeline full. Its
three stages work on different commands at once (loads of command ``i + 1``, compute of ``i``,
store of ``i - 1``), so a list of commands takes about::

    load(0) + sum_i max(compute(i), load(i + 1), store(i - 1)) + store(last)

with, per command (each one loads its own input tile, weights and quantization block):

* ``compute``: output pixels x kernel taps x ST words per pixel, plus :data:`COMMAND_CYCLES`
  (the PE array's idle cycles per command boundary, measured by ``make bench``);
* ``load``: the 64-bit beats of the descriptor, the input tile, the weights and the
  quantization block (the memory answers one beat per cycle), plus :data:`REQUEST_CYCLES`
  for each of these four requests;
* ``store``: one cycle per group of output values of a pixel (the store's requantizers'
  rate, ``hls_ref.config.store_group``), after the last input-channel tile.

A stripe of few rows shortens the first load and the last store, which no other command
hides, but pays a command's loads and overhead more often.
"""

from hls_ref.config import store_group
from sw.tiling.capacity import BEAT_BYTES
from sw.tiling.layer_tiling import row_tiles, splits

__all__ = ["COMMAND_CYCLES", "REQUEST_CYCLES", "best_rows", "list_cycles"]

#: Idle cycles of the PE array per command boundary in a running list (``make bench``: the
#: core takes the next command as the running one reads its last operands).
COMMAND_CYCLES = 0
#: Cycles a load request costs beyond its beats (the memory's latency and the DMA's request
#: handling; fitted to the load-bound ResNet-8 1x1 layer of ``make bench``, 219 cycles per
#: command of 169 beats).
REQUEST_CYCLES = 12
_REQUESTS = 4
_DESCRIPTOR_BEATS = 8


def _beats(nbytes):
    return -(-int(nbytes) // BEAT_BYTES)


def list_cycles(layer, capacity, rows, out_channels, in_channels):
    """Estimated cycles of the layer's descriptor list with tiles of ``rows`` output rows,
    ``out_channels`` and ``in_channels`` channels (see the module docstring)."""
    config, p = capacity.config, capacity.precision
    kh, kw = layer.kernel
    w = layer.in_shape[1]
    wo = layer.out_shape[1]
    blocks = [(b, min(b + config.pes, o1)) for o0, o1 in splits(layer.out_channels,
                                                                out_channels)
              for b in range(o0, o1, config.pes)]
    in_tiles = splits(layer.in_channels, in_channels)
    group = store_group(config.store_elements, capacity.out_bits)
    commands = []
    for b0, b1 in blocks:
        for r0, r1, a, b in row_tiles(layer, rows):
            for k, (i0, i1) in enumerate(in_tiles):
                groups = -(-(i1 - i0) // p.lanes)
                compute = (r1 - r0) * wo * kh * kw * groups + COMMAND_CYCLES
                load = (_REQUESTS * REQUEST_CYCLES + _DESCRIPTOR_BEATS
                        + _beats(capacity.input_tile_bytes(b - a, w, i1 - i0))
                        + _beats(capacity.weight_tile_bytes("conv", layer.kernel, b1 - b0,
                                                            i1 - i0)))
                store = ((r1 - r0) * wo * -(-(b1 - b0) // group)
                         if k == len(in_tiles) - 1 else 0)
                commands.append((compute, load, store))
    total = commands[0][1] + commands[-1][2]
    for i, (compute, _, _) in enumerate(commands):
        following = commands[i + 1][1] if i + 1 < len(commands) else 0
        previous = commands[i - 1][2] if i else 0
        total += max(compute, following, previous)
    return total


def best_rows(layer, capacity, tiling):
    """The row stripe height with the fewest estimated cycles (ties: the taller), among those
    whose tiles fit the PLMs with the tiling's channel tiles."""
    ho, w, wo = layer.out_shape[0], layer.in_shape[1], layer.out_shape[1]
    best = None
    for rows in range(1, ho + 1):
        in_rows = max(b - a for _, _, a, b in row_tiles(layer, rows))
        if not capacity.fits(capacity.input_tile_bytes(in_rows, w, tiling.in_channels),
                             capacity.weight_tile_bytes("conv", layer.kernel,
                                                        tiling.out_channels,
                                                        tiling.in_channels),
                             capacity.acc_tile_bytes(rows, wo, tiling.out_channels)):
            continue
        cycles = list_cycles(layer, capacity, rows, tiling.out_channels, tiling.in_channels)
        if best is None or cycles <= best[0]:
            best = (cycles, rows)
    return tiling.rows if best is None else best[1]
