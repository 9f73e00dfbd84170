"""Replay a :class:`~sw.tiling.schedule.Schedule` on the invocation-level golden model.

The validator builds the external memory the schedule assumes -- every tensor at its region's
address in the formats of ``docs/formats.md``, with seeded random activations, weights and
quantization parameters -- and executes the steps: each DMA transfer copies bytes with its own
addresses and strides between that memory and on-chip banks of the capacity the schedule was
made for; each command reads its operands from the banks (activations unpacked from the bytes
there; weights and quantization blocks compared with what the command must see), runs on
``hls_ref.invocation`` (PLM limits and flags checked) and leaves its output tile in the
accumulator bank; stores copy it out. The output region is then compared with the untiled
layer computed by ``hls_ref.layers``. So a schedule with a wrong address, stride, flag,
padding, missing load or overflowing tile fails, however cheap it is.
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
    conv2d_acc,
    depthwise_conv2d,
    depthwise_conv2d_acc,
    fully_connected,
    max_pool2d,
)

from .capacity import Capacity
from .schedule import qparam_chunks, weight_chunks

__all__ = ["ValidationError", "ValidationReport", "validate_layer", "validate_schedule"]


class ValidationError(AssertionError):
    """A schedule that does not compute its layer (the message says where and why)."""


@dataclass
class ValidationReport:
    layers: list = field(default_factory=list)      # (layer, commands, elements, problem)

    @property
    def ok(self):
        return all(problem is None for *_, problem in self.layers)

    def summary(self):
        lines = []
        for name, commands, elements, problem in self.layers:
            status = "ok" if problem is None else f"FAILED: {problem}"
            lines.append(f"validate {name}: {commands} commands, {elements} outputs: {status}")
        bad = sum(problem is not None for *_, problem in self.layers)
        lines.append(f"validated {len(self.layers)} layers, {bad} failed")
        return "\n".join(lines)


def _random_layer(layer, capacity, rng):
    """Seeded operands of a layer whose accumulators cannot overflow int32."""
    p = capacity.precision
    a_bits, w_bits, o_bits = p.act_bits, p.weight_bits, capacity.out_bits
    h, w, c = layer.in_shape
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
    x = rng.integers(-(1 << (a_bits - 1)), 1 << (a_bits - 1), (h, w, c))
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
    return x, weights, zp_in, bias, qblock, requant


def _golden(layer, x, weights, zp_in, bias, requant):
    if layer.kind == "conv":
        return conv2d(x, weights, bias, zp_in, requant, stride=layer.stride,
                      padding=astuple(layer.padding))
    if layer.kind == "depthwise":
        return depthwise_conv2d(x, weights, bias, zp_in, requant, stride=layer.stride,
                                padding=astuple(layer.padding))
    return fully_connected(x.reshape(1, -1), weights, bias, zp_in, requant).reshape(1, 1, -1)


class _Memory:
    """External memory and banks as byte arrays; transfers copy with their strides."""

    def __init__(self, size, capacity):
        self.dram = np.zeros(size, np.uint8)
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

    def bank(self, buffer, bank):
        key = (buffer, bank)
        if key not in self.banks:
            self.banks[key] = np.zeros(self.bank_bytes[buffer], np.uint8)
        return self.banks[key]

    @staticmethod
    def _indices(base, rows, row_stride, pixels, pixel_stride, seg):
        r = np.arange(rows)[:, None, None] * row_stride
        p = np.arange(pixels)[None, :, None] * pixel_stride
        return (base + r + p + np.arange(seg)[None, None, :]).ravel()

    def transfer(self, t, region):
        d = self._indices(t.addr, t.rows, t.row_stride, t.pixels, t.pixel_stride,
                          t.segment_bytes)
        b = self._indices(t.offset, t.rows, t.bank_row_stride, t.pixels, t.bank_pixel_stride,
                          t.segment_bytes)
        if d.min() < region.addr or d.max() >= region.addr + region.bytes:
            raise ValidationError(f"{t.direction} of {t.tensor} reaches outside its region "
                                  f"[{region.addr:#x}, {region.addr + region.bytes:#x})")
        bank = self.bank(t.buffer, t.bank)
        key = (t.buffer, t.bank)
        if t.direction == "load":
            self.extent[key] = int(b.max()) + 1
        if b.max() >= len(bank):
            raise ValidationError(f"{t.direction} of {t.tensor} needs {b.max() + 1} bytes of "
                                  f"the {t.buffer} bank, which holds {len(bank)}")
        if t.direction == "load":
            bank[b] = self.dram[d]
        else:
            self.dram[d] = bank[b]


def _beats_bytes(beats):
    return np.asarray(beats, np.uint64).view(np.uint8)


def _bytes_beats(data, layout):
    n = layout.bytes
    return np.frombuffer(np.ascontiguousarray(data[:n]).tobytes(), np.uint64)


def _blob(layer, weights, capacity, z, k):
    p, pes = capacity.precision, capacity.pes
    if layer.kind == "conv":
        return conv_weight_blob(weights[z[0]:z[1], :, :, k[0]:k[1]], p, pes)
    if layer.kind == "depthwise":
        return depthwise_weight_blob(weights[:, :, z[0]:z[1]], p, pes)
    return fc_weight_blob(weights[z[0]:z[1], k[0]:k[1]], p, pes)


def validate_layer(schedule, layer_schedule, layer, capacity, rng):
    """Replay one accelerated layer; returns (commands, outputs) or raises
    :class:`ValidationError`."""
    regions = schedule.regions
    mem = _Memory(max(r.addr + r.bytes for r in regions.values()), capacity)
    x, weights, zp_in, bias, qblock, requant = _random_layer(layer, capacity, rng)
    in_region = regions[layer.inputs[0]]
    in_layout = capacity.layout(layer.in_shape)
    mem.dram[in_region.addr:in_region.addr + in_layout.bytes] = _beats_bytes(in_layout.pack(x))
    w_region = regions[f"{layer.name}.weights"]
    expected_w = {}
    for z, k, off, size in weight_chunks(layer, capacity, layer_schedule.tiling):
        blob = _beats_bytes(_blob(layer, weights, capacity, z, k))
        if len(blob) != size:
            raise ValidationError(f"weight chunk {z}x{k} is {len(blob)} bytes, the layout "
                                  f"says {size}")
        mem.dram[w_region.addr + off:w_region.addr + off + size] = blob
        expected_w[(z, k)] = blob
    q_region = regions[f"{layer.name}.qparams"]
    for z, off, size in qparam_chunks(layer, layer_schedule.tiling):
        mem.dram[q_region.addr + off:q_region.addr + off + size] = _beats_bytes(
            qblock.select(*z).pack())
    out_region = regions[layer.name]
    out_layout = capacity.layout(layer.out_shape, capacity.out_bits)
    guard = np.frombuffer(rng.bytes(out_region.bytes), np.uint8)
    mem.dram[out_region.addr:out_region.addr + out_region.bytes] = guard
    accelerator = {"conv": ConvAccelerator, "depthwise": DepthwiseAccelerator,
                   "fc": FCAccelerator}[layer.kind]
    limits = capacity.config.limits()
    if capacity.ocm_bytes is not None:
        share = capacity.ocm_bytes // capacity.banks
        limits = type(limits)(limits.pes, share // 2, share // 2, share // 4, limits.max_kernel)
    accumulators = {}
    out_tiles = {}
    p = capacity.precision
    commands = 0
    tiling = layer_schedule.tiling
    wo = layer.out_shape[1]
    for s, step in enumerate(layer_schedule.steps):
        try:
            for t in step.loads:
                mem.transfer(t, regions[t.tensor])
            mem.check_shared(step)
            for cmd in step.commands:
                commands += 1
                _run_command(layer, cmd, mem, tiling, capacity, p, limits, accelerator,
                             accumulators, out_tiles, weights, zp_in, wo)
            for t in step.stores:
                tile = out_tiles.pop(t.bank, None)
                if tile is None:
                    raise ValidationError(f"store of {t.tensor} from an accumulator bank no "
                                          f"command has written")
                layout, values = tile
                bank = mem.bank("acc", t.bank)
                packed = _beats_bytes(layout.pack(values))
                bank[:len(packed)] = packed
                mem.transfer(t, regions[t.tensor])
        except (ValidationError, InvocationError) as e:
            raise ValidationError(f"step {s}: {e}") from None
    got = out_layout.unpack(_bytes_beats(mem.dram[out_region.addr:], out_layout))
    want = _golden(layer, x, weights, zp_in, bias, requant)
    bad = int(np.count_nonzero(got != want))
    if bad:
        raise ValidationError(f"{bad} of {want.size} outputs differ from the untiled layer")
    tail = mem.dram[out_region.addr + out_layout.bytes:out_region.addr + out_region.bytes]
    if not np.array_equal(tail, guard[out_layout.bytes:]):
        raise ValidationError("bytes after the output tensor were overwritten")
    return commands, want.size


def _run_command(layer, cmd, mem, tiling, capacity, p, limits, accelerator, accumulators,
                 out_tiles, weights, zp_in, wo):
    o0, o1 = cmd.out_channels
    z0 = (o0 // tiling.out_channels) * tiling.out_channels
    z = (z0, min(z0 + tiling.out_channels, layer.out_channels))
    k = tuple(cmd.in_channels)
    a, b = cmd.in_rows
    r0, r1 = cmd.out_rows
    if layer.kind == "fc":
        in_layout = TensorLayout(1, 1, k[1] - k[0], p.act_bits)
    else:
        in_layout = TensorLayout(b - a, layer.in_shape[1], k[1] - k[0], p.act_bits)
    x_tile = in_layout.unpack(_bytes_beats(mem.bank("in", cmd.in_bank), in_layout))
    blob = _beats_bytes(_blob(layer, weights, capacity, (o0, o1), k))
    held = mem.bank("w", cmd.w_bank)[cmd.w_offset:cmd.w_offset + len(blob)]
    if not np.array_equal(held, blob):
        raise ValidationError(f"command for channels {cmd.out_channels} x {k} finds the wrong "
                              f"weights in bank {cmd.w_bank} at {cmd.w_offset}")
    q_beats = 1 + 2 * (z[1] - z[0])
    q_held = mem.bank("q", cmd.q_bank)
    qblock = QuantBlock.unpack(np.frombuffer(q_held[:q_beats * 8].tobytes(), np.uint64))
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
    command = Command(p, capacity.out_bits, layer.kernel, layer.stride, tuple(cmd.padding),
                      zp_in, cmd.acc_flag, cmd.q_flag)
    key = (cmd.acc_bank, cmd.acc_offset)
    acc = accumulators.setdefault(key, accelerator(limits))
    y = acc.invoke(command, x_in, w_block, qblock)
    if cmd.q_flag:
        _, values = out_tiles.setdefault(cmd.acc_bank, (
            TensorLayout(r1 - r0, wo, z[1] - z[0], capacity.out_bits),
            np.zeros((r1 - r0, wo, z[1] - z[0]), np.int64)))
        values[:, :, o0 - z[0]:o1 - z[0]] = y.reshape(r1 - r0, wo, o1 - o0)


def _stand_in(layer, inputs, weights, padding):
    """A layer's values on rows of its inputs, with the given (top, bottom, left, right)
    padding: integer arithmetic kept in int8 range so that values stay informative."""
    x = inputs[0]
    if layer.kind in ("conv", "depthwise"):
        fn = conv2d_acc if layer.kind == "conv" else depthwise_conv2d_acc
        acc = fn(x, weights, None, 0, stride=layer.stride, padding=padding)
        return np.clip(acc >> 4, -128, 127)
    if layer.kind == "maxpool":
        return max_pool2d(x, layer.kernel, layer.stride, padding, -128, 127)
    if layer.kind == "avgpool":
        return avg_pool2d(x, layer.kernel, layer.stride, padding, -128, 127)
    if layer.kind == "add":
        return np.clip(sum(inputs), -128, 127)
    if layer.kind == "concat":
        return np.concatenate(inputs, axis=2)
    if layer.kind == "upsample":
        f = layer.out_shape[0] // layer.in_shape[0]
        return np.repeat(np.repeat(x, f, axis=0), f, axis=1)
    acc = weights @ x.reshape(-1)
    return np.clip(acc >> 4, -128, 127).reshape(1, 1, -1)


def _band_rows(layer, o0, o1, h):
    """Input rows [a, b) and the band's (top, bottom) padding for output rows [o0, o1)."""
    if layer.kind in ("add", "concat"):
        return o0, o1, 0, 0
    if layer.kind == "upsample":
        f = layer.out_shape[0] // layer.in_shape[0]
        return o0 // f, -(-o1 // f), 0, 0
    if layer.kind == "fc":
        return 0, h, 0, 0
    kh, sh, top = layer.kernel[0], layer.stride[0], layer.padding.top
    first, last = o0 * sh - top, (o1 - 1) * sh + kh - top
    return max(first, 0), min(last, h), max(-first, 0), max(last - h, 0)


def validate_group(ls, network, capacity, rng):
    """Replay a fused tile group pass by pass: every layer computes its new rows from the rows
    of its inputs that are on chip in that pass (checked), and the rows equal the layer computed
    on whole tensors; the group's largest pass must fit the on-chip memory."""
    plan = ls.group
    if plan["peak_bytes"] > capacity.total_bytes:
        raise ValidationError(f"the group needs {plan['peak_bytes']} bytes on chip, there are "
                              f"{capacity.total_bytes}")
    shapes = network.shapes
    layers = [network.layer(name) for name in plan["layers"]]
    full = {x: rng.integers(-128, 128, shapes[x]) for x in plan["inputs"]}
    weights = {}
    for layer in layers:
        if layer.kind == "conv":
            kh, kw = layer.kernel
            weights[layer.name] = rng.integers(-2, 3, (layer.out_channels, kh, kw,
                                                       layer.in_channels))
        elif layer.kind == "depthwise":
            weights[layer.name] = rng.integers(-2, 3, (*layer.kernel, layer.in_channels))
        elif layer.kind == "fc":
            weights[layer.name] = rng.integers(-2, 3, (layer.out_channels, layer.in_channels))
        pad = astuple(layer.padding)
        full[layer.name] = _stand_in(layer, [full[x] for x in layer.inputs],
                                     weights.get(layer.name), pad)
    ends, starts = plan["ends"], plan["starts"]
    done = {x: 0 for x in ends}
    for p in range(plan["passes"]):
        for x in plan["inputs"]:
            done[x] = ends[x][p]
        for layer in layers:
            o0, o1 = (ends[layer.name][p - 1] if p else 0), ends[layer.name][p]
            if o1 <= o0:
                continue
            band_inputs = []
            for x in layer.inputs:
                a, b, top, bottom = _band_rows(layer, o0, o1, shapes[x][0])
                held = (starts[x][p], done[x])
                if a < held[0] or b > held[1]:
                    raise ValidationError(f"pass {p}: {layer.name} needs rows [{a}, {b}) of "
                                          f"{x}, the chip holds [{held[0]}, {held[1]})")
                band_inputs.append(full[x][a:b])
            pad = (top, bottom, layer.padding.left, layer.padding.right)
            got = _stand_in(layer, band_inputs, weights.get(layer.name), pad)
            if layer.kind == "upsample":    # the band starts on a whole input row
                skip = o0 - a * (layer.out_shape[0] // layer.in_shape[0])
                got = got[skip:skip + o1 - o0]
            if not np.array_equal(got, full[layer.name][o0:o1]):
                raise ValidationError(f"pass {p}: rows [{o0}, {o1}) of {layer.name} differ "
                                      f"from the whole-tensor result")
            done[layer.name] = o1
    missing = [x for x in plan["outputs"] if done[x] != shapes[x][0]]
    if missing:
        raise ValidationError(f"outputs {missing} are not complete after the last pass")
    return 0, sum(int(np.prod(shapes[x])) for x in plan["outputs"])


def validate_schedule(schedule, network, *, seed=0, layers=None):
    """Replay every accelerated layer and fused group (or the layers named in ``layers``)
    with seeded data."""
    capacity = Capacity.from_dict(schedule.capacity)
    report = ValidationReport()
    rng = np.random.default_rng(seed)
    for ls in schedule.layers:
        if ls.group is not None:
            if layers is None or set(ls.group["layers"]) & set(layers):
                try:
                    report.layers.append((ls.layer, *validate_group(ls, network, capacity,
                                                                    rng), None))
                except ValidationError as e:
                    report.layers.append((ls.layer, 0, 0, str(e)))
            continue
        if ls.tiling is None or (layers is not None and ls.layer not in layers):
            continue
        try:
            commands, elements = validate_layer(schedule, ls, network.layer(ls.layer),
                                                capacity, rng)
            report.layers.append((ls.layer, commands, elements, None))
        except ValidationError as e:
            report.layers.append((ls.layer, sum(1 for _ in ls.commands()), 0, str(e)))
    return report
