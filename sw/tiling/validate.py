"""Replay a :class:`~sw.tiling.schedule.Schedule` on the golden models, the whole network chained.

The validator builds the external memory the schedule assumes: every region at its address,
filled with seeded random bytes, then the network inputs (seeded activations), weight blobs
chunk by chunk and quantization blocks written in the formats of ``docs/formats.md``. It then
executes the schedule's entries in order, each reading what the entries before it wrote:

* an accelerated layer: every DMA transfer copies bytes with its own addresses and strides
  between that memory and on-chip banks of the capacity replayed; each command reads its
  operands from the banks (activations unpacked from the bytes there; weights and
  quantization blocks compared with what the command must see), runs on
  ``hls_ref.invocation`` (PLM limits and flags checked) and leaves its tile in the
  accumulator bank at its offset (which must lie inside the bank); stores copy it out. What
  a step occupies is taken from the replay: the bytes its loads wrote into each bank it
  computes from, plus the accumulators its commands write, and with one shared memory they
  must fit one bank's share together. With two banks a step's loads overlap the previous
  step's commands and its commands overlap the previous step's stores, so a load into a bank
  the previous step computes from, or a command into an accumulator bank the previous step
  stores, is an error even though a one-at-a-time replay would compute the right values;
* a fused tile group: its loads copy bands of rows and weight blobs into on-chip copies of
  the tensors, byte for byte and marked valid; each command computes the rows it names from
  rows that are valid on chip (an error names the layer, the pass and the rows if they are
  not) with the golden layer functions; stores copy valid rows out. The on-chip memory the
  group occupies is computed from the replay itself (see :func:`group_occupancy`), never
  taken from the plan;
* a layer the host runs (pooling, add, upsample, a concat's copies): its loads fill host
  buffers, the operator runs on what they hold, its stores write the result.

After each entry, every tensor it produces for later entries is compared with the reference:
the network computed from its input, layer by layer, by the same golden functions. A tensor
that differs is reported and then overwritten with the reference, so that the entries after
it are judged on their own. At the end every tensor is compared again (a later store into an
earlier tensor's region is caught), and the weights must be untouched.
"""

from dataclasses import astuple, dataclass, field, replace

import numpy as np

from hls_ref.formats import (
    QuantBlock,
    TensorLayout,
    conv_weight_blob,
    depthwise_weight_blob,
    fc_weight_blob,
    fold_input_zero_point,
    make_layout,
)
from hls_ref.invocation import (
    Command,
    ConvAccelerator,
    DepthwiseAccelerator,
    FCAccelerator,
    InvocationError,
)
from hls_ref.layers import (
    Requant,
    avg_pool2d,
    conv2d,
    depthwise_conv2d,
    fully_connected,
    max_pool2d,
)

from .capacity import ACC_BYTES, Capacity
from .layer_tiling import splits
from .schedule import fc_input, own_layout, qparam_chunks, region_layout, weight_chunks

__all__ = ["ValidationError", "ValidationReport", "group_occupancy", "validate_schedule"]


class ValidationError(AssertionError):
    """A schedule that does not compute its network (the message says where and why)."""


@dataclass
class ValidationReport:
    layers: list = field(default_factory=list)      # (entry, commands, elements, problem)
    peaks: dict = field(default_factory=dict)       # fused group -> on-chip bytes, replayed

    @property
    def ok(self):
        return all(problem is None for *_, problem in self.layers)

    def summary(self):
        lines = []
        for name, commands, elements, problem in self.layers:
            status = "ok" if problem is None else f"FAILED: {problem}"
            peak = f", {self.peaks[name]:,} B on chip" if name in self.peaks else ""
            lines.append(f"validate {name}: {commands} commands, {elements} outputs{peak}: "
                         f"{status}")
        bad = sum(problem is not None for *_, problem in self.layers)
        lines.append(f"validated {len(self.layers)} layers, {bad} failed")
        return "\n".join(lines)


# --- the reference network -----------------------------------------------------------------

def _random_params(layer, capacity, rng):
    """Seeded weights and requantization of a layer whose accumulators cannot overflow int32,
    for any input in the activation range."""
    p = capacity.precision
    a_bits, w_bits, o_bits = p.act_bits, p.weight_bits, capacity.out_bits
    c = layer.in_channels
    kh, kw = layer.kernel
    co = layer.out_channels
    if layer.kind == "conv":
        taps = kh * kw * c
        wshape = (co, kh, kw, c)
    elif layer.kind == "depthwise":
        taps = kh * kw
        wshape = (kh, kw, c)
    else:
        taps = c
        wshape = (co, c)
    # |acc| <= |bias| + 2**(a-1) * taps * wmax (+ the folded zero point): keep it below 2**30
    wmax = max(1, min((1 << (w_bits - 1)) - 1, (1 << 29) // ((1 << (a_bits - 1)) * taps * 2)))
    weights = rng.integers(-wmax, wmax + 1, wshape)
    zp_in = int(rng.integers(-(1 << (a_bits - 2)), 1 << (a_bits - 2)))
    bias = rng.integers(-(1 << 20), 1 << 20, co)
    if layer.kind == "depthwise":
        by_channel = weights.reshape(kh * kw, c).T
    else:
        by_channel = weights.reshape(co, -1)
    folded = fold_input_zero_point(bias, by_channel, zp_in)
    multiplier = rng.integers(1 << 30, 1 << 31, co)
    # shifts that keep the outputs spread over the output range
    acc_scale = max(1, int(np.sqrt(taps)) * (1 << (a_bits - 1)) * wmax)
    shift = np.full(co, -max(0, acc_scale.bit_length() - o_bits + 1), np.int64)
    real_scale = None
    if layer.kind == "fc":
        real_scale = rng.uniform(0.5, 1.0, co) / (1 << int(-shift[0]))
    zp_out = int(rng.integers(-(1 << (o_bits - 3)), 1 << (o_bits - 3)))
    low, high = -(1 << (o_bits - 1)), (1 << (o_bits - 1)) - 1
    qblock = QuantBlock(zp_out, low, high, folded, multiplier, shift, real_scale)
    requant = Requant(multiplier, shift, zp_out, low, high, real_scale)
    return _Params(weights, zp_in, bias, qblock, requant)


@dataclass
class _Params:
    weights: np.ndarray
    zp_in: int
    bias: np.ndarray
    qblock: QuantBlock
    requant: Requant
    fc_weights: np.ndarray | None = None    # spread over the input's layout (FC only)


def compute(layer, inputs, params, padding, act_range):
    """A layer's values on (bands of) its inputs with (top, bottom, left, right) padding:
    the golden layer functions for weighted layers, integer pooling, add (saturating),
    upsample and concat for the others."""
    x = inputs[0]
    if layer.kind == "conv":
        return conv2d(x, params.weights, params.bias, params.zp_in, params.requant,
                      stride=layer.stride, padding=padding)
    if layer.kind == "depthwise":
        return depthwise_conv2d(x, params.weights, params.bias, params.zp_in, params.requant,
                                stride=layer.stride, padding=padding)
    if layer.kind == "fc":
        return fully_connected(x.reshape(1, -1), params.weights, params.bias, params.zp_in,
                               params.requant).reshape(1, 1, -1)
    low, high = act_range
    if layer.kind == "maxpool":
        return max_pool2d(x, layer.kernel, layer.stride, padding, low, high)
    if layer.kind == "avgpool":
        return avg_pool2d(x, layer.kernel, layer.stride, padding, low, high)
    if layer.kind == "add":
        return np.clip(sum(inputs), low, high)
    if layer.kind == "concat":
        return np.concatenate(inputs, axis=2)
    f = layer.out_shape[0] // layer.in_shape[0]
    return np.repeat(np.repeat(x, f, axis=0), f, axis=1)


class _Reference:
    """Seeded parameters of every weighted layer and the network computed from its input."""

    def __init__(self, network, capacity, rng):
        a = capacity.act_bits
        self.act_range = (-(1 << (a - 1)), (1 << (a - 1)) - 1)
        self.params = {}
        self.values = {x: rng.integers(*self.act_range, shape, endpoint=True)
                       for x, shape in network.inputs.items()}
        for layer in network.layers:
            params = None
            if layer.weighted:
                params = self.params[layer.name] = _random_params(layer, capacity, rng)
            self.values[layer.name] = compute(layer, [self.values[x] for x in layer.inputs],
                                              params, astuple(layer.padding), self.act_range)


# --- external memory and on-chip banks -------------------------------------------------------

def _beats_bytes(beats):
    return np.asarray(beats, np.uint64).view(np.uint8)


def _bytes_beats(data, layout):
    n = layout.bytes
    return np.frombuffer(np.ascontiguousarray(data[:n]).tobytes(), np.uint64)


def _indices(base, rows, row_stride, pixels, pixel_stride, seg):
    r = np.arange(rows)[:, None, None] * row_stride
    p = np.arange(pixels)[None, :, None] * pixel_stride
    return (base + r + p + np.arange(seg)[None, None, :]).ravel()


class _Memory:
    """External memory as bytes; tensors read and written through their regions."""

    def __init__(self, regions, rng):
        size = max(r.addr + r.bytes for r in regions.values())
        self.dram = np.frombuffer(rng.bytes(size), np.uint8).copy()
        self.regions = regions

    def check(self, t):
        """DRAM byte indices of transfer ``t``, which must stay inside its tensor's region."""
        region = self.regions.get(t.tensor)
        if region is None:
            raise ValidationError(f"{t.direction} of {t.tensor}: no such region")
        d = _indices(t.addr, t.rows, t.row_stride, t.pixels, t.pixel_stride, t.segment_bytes)
        if d.min() < region.addr or d.max() >= region.addr + region.bytes:
            raise ValidationError(f"{t.direction} of {t.tensor} reaches outside its region "
                                  f"[{region.addr:#x}, {region.addr + region.bytes:#x})")
        return d

    @staticmethod
    def bank_indices(t):
        """On-chip byte indices of transfer ``t`` (a bank, a host buffer or a group's on-chip
        copy of the tensor), which may not start before it."""
        b = _indices(t.offset, t.rows, t.bank_row_stride, t.pixels, t.bank_pixel_stride,
                     t.segment_bytes)
        if b.min() < 0:
            raise ValidationError(f"{t.direction} of {t.tensor} starts before its {t.buffer} "
                                  f"buffer (byte {b.min()})")
        return b

    def read_tensor(self, name, shape):
        region = self.regions[name]
        root = region_layout(region)
        data = self.dram[region.addr:region.addr + root.bytes]
        c0 = region.channel_offset
        return root.unpack(_bytes_beats(data, root))[..., c0:c0 + shape[2]]

    def write_tensor(self, name, values):
        region = self.regions[name]
        root = region_layout(region)
        data = self.dram[region.addr:region.addr + root.bytes]
        full = root.unpack(_bytes_beats(data, root)).copy()
        c0 = region.channel_offset
        full[..., c0:c0 + values.shape[2]] = values
        data[:] = _beats_bytes(root.pack(full))


# --- accelerated layers ----------------------------------------------------------------------

class _Banks:
    """The private PLM banks (or shares of one on-chip memory) of one layer's replay."""

    def __init__(self, capacity):
        self.capacity = capacity
        if capacity.ocm_bytes is not None:
            # one shared memory: any buffer may use the whole share of a bank; the sum of
            # what a step uses is checked by ``check_shared``
            share = capacity.ocm_bytes // capacity.banks
            in_b = w_b = acc_b = share
        else:
            in_b, w_b, acc_b = capacity.bank_bytes
        self.bank_bytes = {"in": in_b, "w": w_b, "q": w_b, "acc": acc_b}
        self.banks = {}
        self.extent = {}
        self.previous = (set(), set())   # banks the previous step computed from / stored
        self.loaded = set()              # banks the current step has loaded into

    def bank(self, buffer, bank):
        key = (buffer, bank)
        if buffer not in self.bank_bytes:
            raise ValidationError(f"an accelerated layer has no {buffer!r} buffer")
        if not 0 <= bank < self.capacity.banks:
            raise ValidationError(f"bank {bank} of {buffer}: there are {self.capacity.banks}")
        if key not in self.banks:
            self.banks[key] = np.zeros(self.bank_bytes[buffer], np.uint8)
        return self.banks[key]

    def begin_step(self):
        """A new step: none of its loads has happened yet."""
        self.loaded.clear()

    def transfer(self, t, mem):
        d = mem.check(t)
        b = mem.bank_indices(t)
        bank = self.bank(t.buffer, t.bank)
        if t.direction == "load":
            # a bank's extent is the furthest byte any of this step's loads into it reaches
            # (not the last load's: loads into one bank may come in any order); a bank no
            # load of this step touches keeps what an earlier step left in it
            key = (t.buffer, t.bank)
            end = int(b.max()) + 1
            if key in self.loaded:
                end = max(end, self.extent[key])
            self.extent[key] = end
            self.loaded.add(key)
        if b.max() >= len(bank):
            raise ValidationError(f"{t.direction} of {t.tensor} needs {b.max() + 1} bytes of "
                                  f"the {t.buffer} bank, which holds {len(bank)}")
        if t.direction == "load":
            bank[b] = mem.dram[d]
        else:
            mem.dram[d] = bank[b]

    def accumulate(self, cmd, pixels):
        """A command writes ``pixels`` x (its output channels rounded up to a PE block) 32-bit
        accumulators from word ``acc_offset`` of its accumulator bank; they must lie inside it.
        Returns the bank's extent in bytes."""
        pes = self.capacity.pes
        o0, o1 = cmd.out_channels
        end = ACC_BYTES * (cmd.acc_offset + pixels * -(-(o1 - o0) // pes) * pes)
        size = self.bank_bytes["acc"]
        if cmd.acc_offset < 0 or end > size:
            raise ValidationError(f"the accumulators of channels {cmd.out_channels} end at byte "
                                  f"{end} of accumulator bank {cmd.acc_bank}, which holds {size}")
        return end

    def check_overlap(self, step):
        """With two banks the step's loads run while the previous step computes, and its
        commands while the previous step stores: they must use other banks."""
        computed, stored = self.previous
        self.previous = ({(b, cmd_bank) for cmd in step.commands for b, cmd_bank in
                          (("in", cmd.in_bank), ("w", cmd.w_bank), ("q", cmd.q_bank))},
                         {t.bank for t in step.stores})
        if self.capacity.banks < 2:
            return
        for t in step.loads:
            if (t.buffer, t.bank) in computed:
                raise ValidationError(f"a load of {t.tensor} into {t.buffer} bank {t.bank}, "
                                      f"which the previous step computes from meanwhile")
        for cmd in step.commands:
            if cmd.acc_bank in stored:
                raise ValidationError(f"a command into accumulator bank {cmd.acc_bank}, which "
                                      f"the previous step stores meanwhile")

    def check_shared(self, step, acc):
        """With a shared memory, what a step uses must fit one bank's share together: the
        bytes loaded into each bank its commands read and the accumulators they write
        (``acc``: accumulator bank -> extent in bytes)."""
        if self.capacity.ocm_bytes is None:
            return
        used = {key for cmd in step.commands for key in
                (("in", cmd.in_bank), ("w", cmd.w_bank), ("q", cmd.q_bank))}
        total = sum(self.extent.get(key, 0) for key in used) + sum(acc.values())
        share = self.capacity.ocm_bytes // self.capacity.banks
        if total > share:
            raise ValidationError(f"the tiles of this step occupy {total} bytes, one bank's "
                                  f"share of the on-chip memory is {share}")


def _blob(kind, weights, capacity, z, k):
    p, pes = capacity.precision, capacity.pes
    if kind == "conv":
        return conv_weight_blob(weights[z[0]:z[1], :, :, k[0]:k[1]], p, pes)
    if kind == "depthwise":
        return depthwise_weight_blob(weights[:, :, z[0]:z[1]], p, pes)
    return fc_weight_blob(weights[z[0]:z[1], k[0]:k[1]], p, pes)


def _layer_weights(layer, params):
    """The weights as the accelerator holds them (an FC's spread over its input's layout)."""
    return params.fc_weights if layer.kind == "fc" else params.weights


def _replay_layer(ls, layer, capacity, mem, params, limits):
    """Replay one accelerated layer's steps; returns its commands."""
    tiling = ls.tiling
    banks = _Banks(capacity)
    accelerator = {"conv": ConvAccelerator, "depthwise": DepthwiseAccelerator,
                   "fc": FCAccelerator}[layer.kind]
    in_region = mem.regions[layer.inputs[0]]
    out_region = mem.regions[layer.name]
    weights = _layer_weights(layer, params)
    c_in = weights.shape[-1] if layer.kind != "depthwise" else layer.in_channels
    accumulators, out_tiles = {}, {}
    p = capacity.precision
    wo, co = layer.out_shape[1], layer.out_channels
    commands = 0
    for s, step in enumerate(ls.steps):
        try:
            banks.check_overlap(step)
            banks.begin_step()
            for t in step.loads:
                if t.direction != "load":
                    raise ValidationError(f"a load of {t.tensor} that stores")
                banks.transfer(t, mem)
            acc_extent = {}
            for cmd in step.commands:
                pixels = (cmd.out_rows[1] - cmd.out_rows[0]) * wo
                acc_extent[cmd.acc_bank] = max(acc_extent.get(cmd.acc_bank, 0),
                                               banks.accumulate(cmd, pixels))
            banks.check_shared(step, acc_extent)
            for cmd in step.commands:
                commands += 1
                if cmd.op != layer.kind:
                    raise ValidationError(f"a {cmd.op} command in a {layer.kind} layer")
                o0, o1 = cmd.out_channels
                z0 = (o0 // tiling.out_channels) * tiling.out_channels
                z = (z0, min(z0 + tiling.out_channels, co))
                k = tuple(cmd.in_channels)
                a, b = cmd.in_rows
                r0, r1 = cmd.out_rows
                if not (0 <= o0 < o1 <= co and 0 <= k[0] < k[1] <= c_in):
                    raise ValidationError(f"command channels {cmd.out_channels} x {k} are "
                                          f"outside the layer")
                if layer.kind == "fc":
                    in_layout = TensorLayout(1, 1, k[1] - k[0], p.act_bits)
                else:
                    in_layout = own_layout(in_region, (b - a, layer.in_shape[1], k[1] - k[0]))
                x_tile = in_layout.unpack(_bytes_beats(banks.bank("in", cmd.in_bank),
                                                       in_layout))
                blob = _beats_bytes(_blob(layer.kind, weights, capacity, (o0, o1), k))
                held = banks.bank("w", cmd.w_bank)[cmd.w_offset:cmd.w_offset + len(blob)]
                if not np.array_equal(held, blob):
                    raise ValidationError(f"command for channels {cmd.out_channels} x {k} "
                                          f"finds the wrong weights in bank {cmd.w_bank} at "
                                          f"{cmd.w_offset}")
                q_beats = 1 + 2 * (z[1] - z[0])
                q_held = banks.bank("q", cmd.q_bank)
                try:
                    qblock = QuantBlock.unpack(np.frombuffer(q_held[:q_beats * 8].tobytes(),
                                                             np.uint64))
                except ValueError as e:
                    raise ValidationError(f"quantization block in bank {cmd.q_bank}: {e}") \
                        from None
                qblock = qblock.select(o0 - z[0], o1 - z[0])
                if layer.kind == "conv":
                    w_block = weights[o0:o1, :, :, k[0]:k[1]]
                    x_in = x_tile
                elif layer.kind == "depthwise":
                    w_block = weights[:, :, o0:o1]
                    x_in = x_tile[:, :, o0 - k[0]:o1 - k[0]]
                else:
                    w_block = weights[o0:o1, k[0]:k[1]]
                    x_in = x_tile.reshape(-1)
                command = Command(p, capacity.out_bits, layer.kernel, layer.stride,
                                  tuple(cmd.padding), params.zp_in, cmd.acc_flag, cmd.q_flag)
                key = (cmd.acc_bank, cmd.acc_offset)
                acc = accumulators.setdefault(key, accelerator(limits))
                y = acc.invoke(command, x_in, w_block, qblock)
                if cmd.q_flag:
                    _, values = out_tiles.setdefault(cmd.acc_bank, (
                        own_layout(out_region, (r1 - r0, wo, z[1] - z[0])),
                        np.zeros((r1 - r0, wo, z[1] - z[0]), np.int64)))
                    values[:, :, o0 - z[0]:o1 - z[0]] = y.reshape(r1 - r0, wo, o1 - o0)
            for t in step.stores:
                _check_store(t, {layer.name}, mem)
                tile = out_tiles.pop(t.bank, None)
                if tile is None:
                    raise ValidationError(f"store of {t.tensor} from an accumulator bank no "
                                          f"command has written")
                layout, values = tile
                bank = banks.bank("acc", t.bank)
                packed = _beats_bytes(layout.pack(values))
                bank[:len(packed)] = packed
                banks.transfer(t, mem)
        except (ValidationError, InvocationError) as e:
            raise ValidationError(f"step {s}: {e}") from None
    return commands


def _check_store(t, produced, mem):
    if t.direction != "store":
        raise ValidationError(f"a store of {t.tensor} that loads")
    if t.tensor not in produced:
        raise ValidationError(f"a store into {t.tensor}, which this layer does not produce")


# --- layers the host runs --------------------------------------------------------------------

def _replay_host(ls, layer, network, mem, reference):
    shapes = network.shapes
    buffers = {}
    n = len(layer.inputs)
    commands = 0
    for s, step in enumerate(ls.steps):
        try:
            for t in step.loads:
                if t.direction != "load" or t.buffer != "host":
                    raise ValidationError(f"a host layer's load of {t.tensor} into {t.buffer}")
                d, b = mem.check(t), mem.bank_indices(t)
                buf = buffers.setdefault(t.bank, np.zeros(0, np.uint8))
                if b.max() >= len(buf):
                    buf = buffers[t.bank] = np.concatenate(
                        [buf, np.zeros(b.max() + 1 - len(buf), np.uint8)])
                buf[b] = mem.dram[d]
            for cmd in step.commands:
                commands += 1
                if cmd.layer != layer.name or cmd.op != layer.kind:
                    raise ValidationError(f"a {cmd.op} command for {cmd.layer!r}")
                if layer.kind == "concat":
                    out_region = mem.regions[layer.name]
                    h, w, _ = layer.out_shape
                    for i, x in enumerate(layer.inputs):
                        if i in buffers:
                            lay = own_layout(mem.regions[x], shapes[x])
                            values = lay.unpack(_bytes_beats(buffers[i], lay))
                            buffers[n + i] = _beats_bytes(
                                own_layout(out_region, (h, w, shapes[x][2])).pack(values))
                    continue
                inputs = []
                for i, x in enumerate(layer.inputs):
                    lay = own_layout(mem.regions[x], shapes[x])
                    if i not in buffers or len(buffers[i]) < lay.bytes:
                        raise ValidationError(f"{layer.name} runs before input {x} is loaded")
                    inputs.append(lay.unpack(_bytes_beats(buffers[i], lay)))
                y = compute(layer, inputs, None, astuple(layer.padding), reference.act_range)
                buffers[n] = _beats_bytes(own_layout(mem.regions[layer.name],
                                                     layer.out_shape).pack(y))
            for t in step.stores:
                _check_store(t, {layer.name}, mem)
                d, b = mem.check(t), mem.bank_indices(t)
                buf = buffers.get(t.bank)
                if buf is None or b.max() >= len(buf):
                    raise ValidationError(f"store of {t.tensor} from host buffer {t.bank}, "
                                          f"which holds no result")
                mem.dram[d] = buf[b]
        except ValidationError as e:
            raise ValidationError(f"step {s}: {e}") from None
    return commands


# --- fused tile groups -----------------------------------------------------------------------

def _row_bytes(layout):
    return layout.row_stride * layout.bits // 8


def _weight_range(layer, regions, out_channels, pes):
    """Bytes [lo, hi) of a layer's whole-layer weight blob that output channels use."""
    w = regions[f"{layer.name}.weights"]
    blocks = -(-layer.out_channels // pes)
    chunk = w.bytes // blocks
    o0, o1 = out_channels
    return (o0 // pes) * chunk, -(-o1 // pes) * chunk


def _step_items(ls, network, regions, pes):
    """Per step: {(item, key): bytes} written (loaded or computed), used (read or stored),
    loaded and stored. Items are rows of activation tensors (key: the row) and loaded pieces of
    weight and quantization regions (key: their offset)."""
    shapes = network.shapes
    writes, uses, loaded, stored = [], [], [], []
    pieces = {}         # weight region -> {offset: bytes} loaded so far

    def rows_of(t):
        if t.buffer in ("w", "q"):
            return {(t.tensor, t.offset): t.segment_bytes * t.segments}
        rb = _row_bytes(own_layout(regions[t.tensor], shapes[t.tensor]))
        b = _Memory.bank_indices(t)
        return {(t.tensor, r): rb for r in range(int(b.min()) // rb, int(b.max()) // rb + 1)}

    for step in ls.steps:
        w, u, ld, st = {}, {}, {}, {}
        for t in step.loads:
            items = rows_of(t)
            ld.update(items)
            w.update(items)
            if t.buffer in ("w", "q"):
                pieces.setdefault(t.tensor, {})[t.offset] = t.segment_bytes * t.segments
        for cmd in step.commands:
            layer = network.layer(cmd.layer)
            rb = _row_bytes(own_layout(regions[layer.name], layer.out_shape))
            w.update({(layer.name, r): rb for r in range(*cmd.out_rows)})
            for x in layer.inputs:
                rb = _row_bytes(own_layout(regions[x], shapes[x]))
                u.update({(x, r): rb for r in range(*cmd.in_rows)})
            if layer.weighted:
                lo, hi = _weight_range(layer, regions, cmd.out_channels, pes)
                name = f"{layer.name}.weights"
                for off, size in pieces.get(name, {}).items():
                    if off < hi and off + size > lo:
                        u[(name, off)] = size
                name = f"{layer.name}.qparams"
                for off, size in pieces.get(name, {}).items():
                    u[(name, off)] = size
        for t in step.stores:
            items = rows_of(t)
            st.update(items)
            u.update(items)
        writes.append(w)
        uses.append(u)
        loaded.append(ld)
        stored.append(st)
    return writes, uses, loaded, stored


def group_occupancy(ls, network, capacity, regions):
    """On-chip bytes of a fused group at each of its steps, from the steps alone.

    An item (a row of a tensor's band, a loaded piece of a layer's weights, its quantization
    blocks) occupies memory from the step that writes it (a load, or the command computing
    it) to the last step that uses it (a command reading it, a store) before it is written
    again. With double buffering, the loads of the next step arrive while a step computes and
    the stores of the previous step drain, so those items count during the step too. A
    weighted layer's command adds its accumulators: 32 bits per output pixel of its band for
    one PE block of output channels. Returns ``[bytes per step]``."""
    writes, uses, loaded, stored = _step_items(ls, network, regions, capacity.pes)
    size = {}
    n = len(ls.steps)
    live = [{} for _ in range(n)]       # step -> {item: bytes} occupying memory
    events = {}
    for s in range(n):
        for item, b in writes[s].items():
            events.setdefault(item, []).append((s, 0))
            size[item] = b
        for item, b in uses[s].items():
            events.setdefault(item, []).append((s, 1))
            size[item] = b
    for item, evs in events.items():
        start = end = None
        for s, use in sorted(evs):
            if not use:
                if start is not None:
                    _span(live, item, start, end if end is not None else start)
                start, end = s, None
            elif start is not None:
                end = s
        if start is not None:
            _span(live, item, start, end if end is not None else start)
    double = capacity.banks > 1
    out = []
    for s in range(n):
        held = set(live[s])
        if double:
            if s + 1 < n:
                held.update(loaded[s + 1])
            if s:
                held.update(stored[s - 1])
        total = sum(size[item] for item in held)
        acc = 0
        for cmd in ls.steps[s].commands:
            layer = network.layer(cmd.layer)
            if layer.weighted:
                rows = cmd.out_rows[1] - cmd.out_rows[0]
                acc = max(acc, 4 * rows * layer.out_shape[1] * capacity.pes)
        out.append(total + acc)
    return out


def _span(live, item, start, end):
    for s in range(start, end + 1):
        live[s][item] = True


class _Chip:
    """On-chip copies of a group's tensors (in their own layout) and weight regions: bytes and
    which bytes hold loaded or computed data."""

    def __init__(self, mem, shapes):
        self.mem, self.shapes = mem, shapes
        self.items = {}
        self.positions = {}

    def __getitem__(self, name):
        if name not in self.items:
            r = self.mem.regions[name]
            n = r.bytes if r.kind != "activation" else own_layout(r, self.shapes[name]).bytes
            self.items[name] = (np.zeros(n, np.uint8), np.zeros(n, bool))
        return self.items[name]

    def layout(self, name):
        return own_layout(self.mem.regions[name], self.shapes[name])

    def element_bytes(self, name):
        """The byte holding each element (h, w, c) of a tensor's on-chip copy."""
        if name not in self.positions:
            lay = self.layout(name)
            h, w, c = self.shapes[name]
            hh, ww, cc = np.meshgrid(np.arange(h), np.arange(w), np.arange(c), indexing="ij")
            self.positions[name] = lay.element_index(hh, ww, cc) * lay.bits // 8
        return self.positions[name]

    def read_rows(self, name, a, b):
        """Rows [a, b) as values, or None if an element of them is not on chip."""
        data, valid = self[name]
        if not valid[self.element_bytes(name)[a:b]].all():
            return None
        lay = self.layout(name)
        rb = _row_bytes(lay)
        band = make_layout(lay.kind, b - a, lay.width, lay.channels, lay.bits)
        return band.unpack(_bytes_beats(data[a * rb:b * rb], band))

    def write(self, name, rows, channels, values):
        """Values of rows ``rows`` x channels ``channels`` computed on chip."""
        (a, b), (c0, c1) = rows, channels
        data, valid = self[name]
        lay = self.layout(name)
        rb = _row_bytes(lay)
        band = make_layout(lay.kind, b - a, lay.width, lay.channels, lay.bits)
        current = band.unpack(_bytes_beats(data[a * rb:b * rb], band)).copy()
        current[..., c0:c1] = values
        data[a * rb:b * rb] = _beats_bytes(band.pack(current))
        valid[self.element_bytes(name)[a:b, :, c0:c1]] = True


def _replay_group(ls, network, capacity, mem, reference, expected):
    """Replay a fused group; returns (commands, replayed peak bytes)."""
    plan = ls.group
    shapes = network.shapes
    members = set(plan["layers"])
    chip = _Chip(mem, shapes)
    peak = max(group_occupancy(ls, network, capacity, mem.regions), default=0)
    if peak > capacity.total_bytes:
        raise ValidationError(f"the group occupies {peak} bytes on chip at its fullest "
                              f"(replayed), there are {capacity.total_bytes}")
    commands = 0
    passes = {}
    computed = {}
    for s, step in enumerate(ls.steps):
        try:
            for t in step.loads:
                if t.direction != "load":
                    raise ValidationError(f"a load of {t.tensor} that stores")
                d, b = mem.check(t), mem.bank_indices(t)
                data, valid = chip[t.tensor]
                if b.max() >= len(data):
                    raise ValidationError(f"load of {t.tensor} reaches byte {b.max()} of its "
                                          f"on-chip copy, which has {len(data)}")
                data[b] = mem.dram[d]
                valid[b] = True
            for cmd in step.commands:
                commands += 1
                if cmd.layer not in members:
                    raise ValidationError(f"a command for {cmd.layer!r}, not in the group")
                layer = network.layer(cmd.layer)
                if cmd.out_channels[0] == 0:
                    passes[layer.name] = passes.get(layer.name, -1) + 1
                p = passes.get(layer.name, 0)
                o0, o1 = cmd.out_rows
                c0, c1 = cmd.out_channels
                a, b = cmd.in_rows
                if not (0 <= c0 < c1 <= layer.out_channels and 0 <= o0 < o1
                        <= layer.out_shape[0]):
                    raise ValidationError(f"{layer.name}: command rows {cmd.out_rows} or "
                                          f"channels {cmd.out_channels} outside the layer")
                inputs = []
                for x in layer.inputs:
                    rows = chip.read_rows(x, a, b) if 0 <= a < b <= shapes[x][0] else None
                    if rows is None:
                        held = np.flatnonzero(chip[x][1][chip.element_bytes(x)].reshape(
                            shapes[x][0], -1).all(axis=1))
                        have = f"[{held.min()}, {held.max() + 1})" if len(held) else "nothing"
                        raise ValidationError(f"pass {p}: {layer.name} needs rows [{a}, {b}) "
                                              f"of {x}, the chip holds {have}")
                    inputs.append(rows)
                params = reference.params.get(layer.name)
                if layer.weighted:
                    lo, hi = _weight_range(layer, mem.regions, (c0, c1), capacity.pes)
                    for name, (x0, x1) in ((f"{layer.name}.weights", (lo, hi)),
                                           (f"{layer.name}.qparams", (0, None))):
                        data, valid = chip[name]
                        want = expected[name][x0:x1]
                        if not valid[x0:x1].all() or not np.array_equal(data[x0:x1], want):
                            raise ValidationError(f"pass {p}: {layer.name} finds its "
                                                  f"{name.split('.')[1]} for channels "
                                                  f"[{c0}, {c1}) missing or wrong on chip")
                elif (c0, c1) != (0, layer.out_channels):
                    raise ValidationError(f"{layer.name}: a {layer.kind} runs on all channels")
                # the PE blocks of a streamed layer read the same input rows: compute the
                # layer on them once (its weights were checked block by block above)
                key = (layer.name, o0, o1, a, b, tuple(cmd.padding),
                       hash(tuple(x.tobytes() for x in inputs)))
                if key not in computed:
                    computed.clear()
                    computed[key] = compute(layer, inputs, params, tuple(cmd.padding),
                                            reference.act_range)
                got = computed[key][..., c0:c1]
                if layer.kind == "upsample":    # the band starts on a whole input row
                    skip = o0 - a * (layer.out_shape[0] // layer.in_shape[0])
                    got = got[skip:skip + o1 - o0]
                want = reference.values[layer.name][o0:o1, :, c0:c1]
                if got.shape != want.shape or not np.array_equal(got, want):
                    raise ValidationError(f"pass {p}: rows [{o0}, {o1}) of {layer.name} differ "
                                          f"from the whole-network result")
                chip.write(layer.name, (o0, o1), (c0, c1), got)
            for t in step.stores:
                _check_store(t, members, mem)
                d, b = mem.check(t), mem.bank_indices(t)
                data, valid = chip[t.tensor]
                pos = chip.element_bytes(t.tensor)
                rb = _row_bytes(chip.layout(t.tensor))
                rows = (int(b.min()) // rb, int(b.max()) // rb + 1)
                if b.max() >= len(data) or not valid[pos[rows[0]:rows[1]]].all():
                    raise ValidationError(f"store of {t.tensor} from rows not computed on chip")
                mem.dram[d] = data[b]
        except ValidationError as e:
            raise ValidationError(f"step {s}: {e}") from None
    return commands, peak


def _place_weights(schedule, network, capacity, mem, reference):
    """Write every weight and quantization blob; returns {region: bytes} as written."""
    expected = {}
    for ls in schedule.layers:
        names = ls.group["layers"] if ls.group else [ls.layer]
        for name in names:
            layer = network.layer(name)
            if not layer.weighted:
                continue
            params = reference.params[name]
            if layer.kind == "fc":
                region = mem.regions[layer.inputs[0]]
                elements, index = fc_input(region_layout(region) if not region.view_of
                                           else own_layout(region,
                                                           network.shapes[layer.inputs[0]]))
                spread = np.zeros((layer.out_channels, elements), np.int64)
                spread[:, index] = params.weights
                params.fc_weights = spread
            weights = _layer_weights(layer, params)
            c_in = weights.shape[-1] if layer.kind != "depthwise" else layer.in_channels
            tiling = ls.tiling
            if tiling is None:
                z_ranges = [((0, layer.out_channels), (0, c_in))]
                q_ranges = splits(layer.out_channels, 256)
            else:
                eff = layer if layer.kind != "fc" else _with_inputs(layer, c_in)
                z_ranges = [(z, k or (0, c_in)) for z, k, _, _ in
                            weight_chunks(eff, capacity, tiling)]
                q_ranges = [z for z, _, _ in qparam_chunks(eff, tiling)]
            blob = np.concatenate([_beats_bytes(_blob(layer.kind, weights, capacity, z, k))
                                   for z, k in z_ranges])
            q = np.concatenate([_beats_bytes(params.qblock.select(*z).pack())
                                for z in q_ranges])
            for suffix, data in ((".weights", blob), (".qparams", q)):
                region = mem.regions[name + suffix]
                if len(data) != region.bytes:
                    raise ValidationError(f"{name}{suffix}: the blobs are {len(data)} bytes, "
                                          f"the region {region.bytes}")
                mem.dram[region.addr:region.addr + region.bytes] = data
                expected[name + suffix] = data
    return expected


def _with_inputs(layer, elements):
    return replace(layer, in_shape=(1, 1, elements))


def _produced(ls, network, consumers):
    """Tensors an entry writes for later entries (or as network outputs)."""
    if ls.group is None:
        return [ls.layer]
    members = set(ls.group["layers"])
    return [x for x in ls.group["layers"]
            if not consumers.get(x) or any(c not in members for c in consumers[x])]


def validate_schedule(schedule, network, *, seed=0, layers=None, capacity=None):
    """Replay the schedule on the whole network from its input (see the module docstring).

    ``layers``: replay only the entries holding these layers (the others' outputs are
    planted from the reference); ``capacity``: replay on this on-chip memory instead of the
    one the schedule was made for."""
    capacity = capacity or Capacity.from_dict(schedule.capacity)
    report = ValidationReport()
    rng = np.random.default_rng(seed)
    reference = _Reference(network, capacity, rng)
    mem = _Memory(schedule.regions, rng)
    shapes = network.shapes
    consumers = {}
    for layer in network.layers:
        for x in layer.inputs:
            consumers.setdefault(x, []).append(layer.name)
    covered = set()
    for ls in schedule.layers:
        covered.update(ls.group["layers"] if ls.group else [ls.layer])
    missing = [layer.name for layer in network.layers if layer.name not in covered]
    if missing:
        report.layers.append(("schedule", 0, 0, f"layers {missing} are not scheduled"))
    for x in network.inputs:
        if x not in mem.regions:
            report.layers.append(("schedule", 0, 0, f"no region for network input {x}"))
            return report
        mem.write_tensor(x, reference.values[x])
    try:
        expected = _place_weights(schedule, network, capacity, mem, reference)
    except (ValidationError, KeyError, ValueError) as e:
        report.layers.append(("schedule", 0, 0, str(e)))
        return report
    limits = capacity.config.limits()
    if capacity.ocm_bytes is not None:
        share = capacity.ocm_bytes // capacity.banks
        limits = replace(limits, plm_in=share // 2, plm_w=share // 2, plm_acc=share // 4)
    checked = []
    for ls in schedule.layers:
        produced = _produced(ls, network, consumers)
        names = ls.group["layers"] if ls.group else [ls.layer]
        if layers is not None and not set(names) & set(layers):
            for x in produced:
                mem.write_tensor(x, reference.values[x])
            continue
        commands, problem = 0, None
        try:
            if ls.group is not None:
                commands, peak = _replay_group(ls, network, capacity, mem, reference, expected)
                report.peaks[ls.layer] = peak
            elif network.layer(ls.layer).weighted:
                layer = network.layer(ls.layer)
                commands = _replay_layer(ls, layer, capacity, mem, reference.params[ls.layer],
                                         limits)
            else:
                commands = _replay_host(ls, network.layer(ls.layer), network, mem, reference)
        except (ValidationError, ValueError, KeyError) as e:
            problem = str(e)
        for x in produced:
            if not np.array_equal(mem.read_tensor(x, shapes[x]), reference.values[x]):
                bad = int(np.count_nonzero(mem.read_tensor(x, shapes[x]) !=
                                           reference.values[x]))
                problem = problem or (f"{bad} of {reference.values[x].size} values of {x} "
                                      f"differ from the whole-network result")
                mem.write_tensor(x, reference.values[x])      # judge the next ones alone
            checked.append(x)
        report.layers.append((ls.layer, commands,
                              sum(reference.values[x].size for x in produced), problem))
    for x in checked:
        if not np.array_equal(mem.read_tensor(x, shapes[x]), reference.values[x]):
            report.layers.append(("end", 0, 0, f"{x} was overwritten after it was written"))
    for name, data in expected.items():
        r = mem.regions[name]
        if not np.array_equal(mem.dram[r.addr:r.addr + r.bytes], data):
            report.layers.append(("end", 0, 0, f"{name} was overwritten"))
    return report
