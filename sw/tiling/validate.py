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
  accumulator bank; stores copy it out;
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

from dataclasses import astuple, dataclass, field

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

from .capacity import Capacity
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
        return _indices(t.offset, t.rows, t.bank_row_stride, t.pixels, t.bank_pixel_stride,
                        t.segment_bytes)

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

    def bank(self, buffer, bank):
        key = (buffer, bank)
        if buffer not in self.bank_bytes:
            raise ValidationError(f"an accelerated layer has no {buffer!r} buffer")
        if not 0 <= bank < self.capacity.banks:
            raise ValidationError(f"bank {bank} of {buffer}: there are {self.capacity.banks}")
        if key not in self.banks:
            self.banks[key] = np.zeros(self.bank_bytes[buffer], np.uint8)
        return self.banks[key]

    def transfer(self, t, mem):
        d = mem.check(t)
        b = mem.bank_indices(t)
        bank = self.bank(t.buffer, t.bank)
        if t.direction == "load":
            self.extent[(t.buffer, t.bank)] = int(b.max()) + 1
        if b.max() >= len(bank):
            raise ValidationError(f"{t.direction} of {t.tensor} needs {b.max() + 1} bytes of "
                                  f"the {t.buffer} bank, which holds {len(bank)}")
        if t.direction == "load":
            bank[b] = mem.dram[d]
        else:
            mem.dram[d] = bank[b]

    def check_shared(self, step):
        """With a shared memory, the tiles a step uses must fit one bank's share together."""
        if self.capacity.ocm_bytes is None:
            return
        used = {}
        for cmd in step.commands:
            used[("in", cmd.in_bank)] = True
            used[("w", cmd.w_bank)] = True
            used[("q", cmd.q_bank)] = True
        total = sum(self.extent.get(key, 0) for key in used)
        total += max((self.extent.get(("acc", cmd.acc_bank), 0) for cmd in step.commands),
                     default=0)
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
            for t in step.loads:
                if t.direction != "load":
                    raise ValidationError(f"a load of {t.tensor} that stores")
                banks.transfer(t, mem)
            banks.check_shared(step)
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


def _step_items(ls, network, regions):
    """Per step: {item: rows} written (loaded or computed), used (read or stored), loaded
    and stored. Items are activation tensors (by row of their band) and weight and
    quantization regions (a single row 0)."""
    shapes = network.shapes
    writes, uses, loaded, stored = [], [], [], []

    def rows_of(t):
        if t.buffer in ("w", "q"):
            return {0}
        rb = _row_bytes(own_layout(regions[t.tensor], shapes[t.tensor]))
        b = _Memory.bank_indices(t)
        return set(range(int(b.min()) // rb, int(b.max()) // rb + 1))

    for step in ls.steps:
        w, u, ld, st = {}, {}, {}, {}
        for t in step.loads:
            ld.setdefault(t.tensor, set()).update(rows_of(t))
            w.setdefault(t.tensor, set()).update(rows_of(t))
        for cmd in step.commands:
            layer = network.layer(cmd.layer)
            w.setdefault(layer.name, set()).update(range(*cmd.out_rows))
            for x in layer.inputs:
                u.setdefault(x, set()).update(range(*cmd.in_rows))
            if layer.weighted:
                u.setdefault(f"{layer.name}.weights", set()).add(0)
                u.setdefault(f"{layer.name}.qparams", set()).add(0)
        for t in step.stores:
            st.setdefault(t.tensor, set()).update(rows_of(t))
            u.setdefault(t.tensor, set()).update(rows_of(t))
        writes.append(w)
        uses.append(u)
        loaded.append(ld)
        stored.append(st)
    return writes, uses, loaded, stored


def group_occupancy(ls, network, capacity, regions):
    """On-chip bytes of a fused group at each of its steps, from the steps alone.

    An item (a row of a tensor's band, a layer's weights, its quantization block) occupies
    memory from the step that writes it (a load, or the command computing it) to the last
    step that uses it (a command reading it, a store) before it is written again. With double
    buffering, the loads of the next step arrive while a step computes and the stores of the
    previous step drain, so those items count during the step too. A weighted layer's command
    adds its accumulators: 32 bits per output pixel of its band for one PE block of output
    channels. Returns ``[bytes per step]``."""
    shapes = network.shapes
    writes, uses, loaded, stored = _step_items(ls, network, regions)
    size = {}

    def item_bytes(name):
        if name not in size:
            r = regions[name]
            size[name] = r.bytes if r.kind != "activation" else _row_bytes(
                own_layout(r, shapes[name]))
        return size[name]

    n = len(ls.steps)
    live = [{} for _ in range(n)]       # step -> {item: rows occupying memory}
    events = {}
    for s in range(n):
        for name, rows in writes[s].items():
            for r in rows:
                events.setdefault((name, r), []).append((s, 0))
        for name, rows in uses[s].items():
            for r in rows:
                events.setdefault((name, r), []).append((s, 1))
    for (name, r), evs in events.items():
        start = end = None
        for s, use in sorted(evs):
            if not use:
                if start is not None:
                    _span(live, name, r, start, end if end is not None else start)
                start, end = s, None
            elif start is not None:
                end = s
        if start is not None:
            _span(live, name, r, start, end if end is not None else start)
    double = capacity.banks > 1
    out = []
    for s in range(n):
        held = {k: set(v) for k, v in live[s].items()}
        if double:
            extra = ([loaded[s + 1]] if s + 1 < n else []) + ([stored[s - 1]] if s else [])
            for items in extra:
                for name, rows in items.items():
                    held.setdefault(name, set()).update(rows)
        total = sum(len(rows) * item_bytes(name) for name, rows in held.items())
        acc = 0
        for cmd in ls.steps[s].commands:
            layer = network.layer(cmd.layer)
            if layer.weighted:
                rows = cmd.out_rows[1] - cmd.out_rows[0]
                acc = max(acc, 4 * rows * layer.out_shape[1] * capacity.pes)
        out.append(total + acc)
    return out


def _span(live, name, row, start, end):
    for s in range(start, end + 1):
        live[s].setdefault(name, set()).add(row)


def _replay_group(ls, network, capacity, mem, reference, expected):
    """Replay a fused group; returns (commands, replayed peak bytes)."""
    plan = ls.group
    shapes = network.shapes
    members = set(plan["layers"])
    chip = {}       # item -> (bytes, valid)

    def mirror(name):
        if name not in chip:
            r = mem.regions[name]
            n = r.bytes if r.kind != "activation" else own_layout(r, shapes[name]).bytes
            chip[name] = (np.zeros(n, np.uint8), np.zeros(n, bool))
        return chip[name]

    peak = max(group_occupancy(ls, network, capacity, mem.regions), default=0)
    if peak > capacity.total_bytes:
        raise ValidationError(f"the group occupies {peak} bytes on chip at its fullest "
                              f"(replayed), there are {capacity.total_bytes}")
    commands = 0
    passes = {}
    for s, step in enumerate(ls.steps):
        try:
            for t in step.loads:
                if t.direction != "load":
                    raise ValidationError(f"a load of {t.tensor} that stores")
                d, b = mem.check(t), mem.bank_indices(t)
                data, valid = mirror(t.tensor)
                if b.max() >= len(data):
                    raise ValidationError(f"load of {t.tensor} reaches byte {b.max()} of its "
                                          f"on-chip band, which has {len(data)}")
                data[b] = mem.dram[d]
                valid[b] = True
            for cmd in step.commands:
                commands += 1
                if cmd.layer not in members:
                    raise ValidationError(f"a command for {cmd.layer!r}, not in the group")
                layer = network.layer(cmd.layer)
                p = passes[layer.name] = passes.get(layer.name, -1) + 1
                o0, o1 = cmd.out_rows
                a, b = cmd.in_rows
                inputs = []
                for x in layer.inputs:
                    lay = own_layout(mem.regions[x], shapes[x])
                    rb = _row_bytes(lay)
                    data, valid = mirror(x)
                    if not (0 <= a < b <= shapes[x][0]) or not valid[a * rb:b * rb].all():
                        rows = np.flatnonzero(valid[::rb]) if rb else []
                        held = f"[{rows.min()}, {rows.max() + 1})" if len(rows) else "nothing"
                        raise ValidationError(f"pass {p}: {layer.name} needs rows [{a}, {b}) "
                                              f"of {x}, the chip holds {held}")
                    band = make_layout(lay.kind, b - a, lay.width, lay.channels, lay.bits)
                    inputs.append(band.unpack(_bytes_beats(data[a * rb:b * rb], band)))
                params = reference.params.get(layer.name)
                if layer.weighted:
                    for suffix in (".weights", ".qparams"):
                        data, valid = mirror(layer.name + suffix)
                        if not valid.all() or not np.array_equal(data,
                                                                 expected[layer.name + suffix]):
                            raise ValidationError(f"pass {p}: {layer.name} finds its "
                                                  f"{suffix[1:]} missing or wrong on chip")
                got = compute(layer, inputs, params, tuple(cmd.padding), reference.act_range)
                if layer.kind == "upsample":    # the band starts on a whole input row
                    skip = o0 - a * (layer.out_shape[0] // layer.in_shape[0])
                    got = got[skip:skip + o1 - o0]
                if got.shape[0] != o1 - o0 or not np.array_equal(
                        got, reference.values[layer.name][o0:o1]):
                    raise ValidationError(f"pass {p}: rows [{o0}, {o1}) of {layer.name} differ "
                                          f"from the whole-network result")
                lay = own_layout(mem.regions[layer.name], layer.out_shape)
                rb = _row_bytes(lay)
                band = make_layout(lay.kind, o1 - o0, lay.width, lay.channels, lay.bits)
                data, valid = mirror(layer.name)
                data[o0 * rb:o1 * rb] = _beats_bytes(band.pack(got))
                valid[o0 * rb:o1 * rb] = True
            for t in step.stores:
                _check_store(t, members, mem)
                d, b = mem.check(t), mem.bank_indices(t)
                data, valid = mirror(t.tensor)
                if b.max() >= len(data) or not valid[b].all():
                    raise ValidationError(f"store of {t.tensor} from rows not computed on chip")
                mem.dram[d] = data[b]
        except ValidationError as e:
            raise ValidationError(f"step {s}: {e}") from None
    return commands, peak


# --- the whole network -----------------------------------------------------------------------

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
    from dataclasses import replace

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
        limits = type(limits)(limits.pes, share // 2, share // 2, share // 4, limits.max_kernel)
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
