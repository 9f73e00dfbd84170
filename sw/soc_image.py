"""``tessera compile``: a model as one image for the SoC (``hls_ref.image``, ``docs/soc.md``).

:func:`compile_model` decides for every layer which engine runs it (an accelerator of the
build that runs its op, else the processor, with the reason), plans the activation buffers,
lowers every accelerator layer to its descriptor list through the public builders of
``sw.program`` / ``sw.lowering`` (the compiler's tiling for the build; a first convolution
may read the network input unfolded, ``sw.unfold``, and whoever writes the input writes it
so: :func:`input_bytes`), lays out the processor
layers' parameter blocks, weights and quantization blocks, and writes the layer table, the
layer names and the checksum. :class:`ModelImage` is the result; :meth:`ModelImage.save` writes
``image.bin`` (the constant bytes, loaded at ``IMAGE_BASE``) and ``image.json`` (the layer
table, the buffer plan and the build, for the host).
"""

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hls_ref import image as fmt
from hls_ref.config import DEFAULT_SOC, SocConfig
from hls_ref.descriptor import Mode, Op
from hls_ref.formats import TensorLayout

from . import graph as g
from .unfold import InputUnfold

__all__ = ["ImageError", "LayerInfo", "ModelImage", "TensorInfo", "compile_model",
           "input_bytes", "load_image", "tensor_shape3"]

_ALIGN = fmt.SECTION_ALIGN
_QBLOCK_CHANNELS = 256
_OPS = {g.Conv2D: fmt.LayerOp.CONV2D, g.DepthwiseConv2D: fmt.LayerOp.DEPTHWISE,
        g.FullyConnected: fmt.LayerOp.FC, g.Add: fmt.LayerOp.ADD,
        g.AveragePool2D: fmt.LayerOp.AVGPOOL, g.MaxPool2D: fmt.LayerOp.MAXPOOL,
        g.Softmax: fmt.LayerOp.SOFTMAX, g.Reshape: fmt.LayerOp.RESHAPE}


class ImageError(ValueError):
    """A model the SoC cannot run, or an image file that is not valid (the message says
    which layer or which check)."""


def _align(value, alignment=_ALIGN):
    return -(-value // alignment) * alignment


def tensor_shape3(shape):
    """The (height, width, channels) of a graph tensor shape (batch 1): NHWC as it is,
    ``[1, N]`` as one pixel of N channels."""
    shape = tuple(int(d) for d in shape)
    if len(shape) == 4 and shape[0] == 1:
        return shape[1:]
    if len(shape) == 3 and shape[0] == 1:
        return (1, shape[1], shape[2])
    if len(shape) == 2 and shape[0] == 1:
        return (1, 1, shape[1])
    if len(shape) == 1:
        return (1, 1, shape[0])
    raise ImageError(f"tensor shape {shape} is not a batch-1 activation")


@dataclass
class TensorInfo:
    """An activation tensor in the buffer plan."""

    name: str
    shape: tuple           # the graph's shape
    addr: int              # bus address
    layout: TensorLayout   # of the bytes in the buffer (the unfolded tensor's, if unfolded)
    unfold: InputUnfold | None = None   # the network input, unfolded for its convolution

    def fields(self, prefix):
        lay = self.layout
        return {f"{prefix}_addr": self.addr, f"{prefix}_h": lay.height, f"{prefix}_w": lay.width,
                f"{prefix}_c": lay.channels, f"{prefix}_cs": lay.channel_stride,
                f"{prefix}_rs": lay.row_stride}

    def as_dict(self):
        return {"name": self.name, "shape": list(self.shape), "addr": self.addr,
                "hwc": [self.layout.height, self.layout.width, self.layout.channels],
                "bytes": self.layout.bytes,
                "unfold": self.unfold.as_dict() if self.unfold else None}


@dataclass
class LayerInfo:
    """One row of the layer table, with what the host needs beside it."""

    name: str
    op: fmt.LayerOp
    engine: int                 # fmt.Engine: 0 processor, 1 + k accelerator k
    reason: fmt.Reason
    why: str                    # the reason in words ("" on an accelerator)
    inputs: tuple               # tensor names
    output: str
    macs: int
    desc_addr: int = 0
    desc_count: int = 0
    params: int = 0
    tiling: str = ""

    @property
    def accelerator(self):
        """Index of the accelerator that runs the layer, or None (the processor)."""
        return None if self.engine == fmt.Engine.PROCESSOR else self.engine - fmt.Engine.ACCEL0

    def as_dict(self):
        return {"name": self.name, "op": self.op.name.lower(), "engine": self.engine,
                "reason": self.reason.name.lower(), "why": self.why, "inputs": list(self.inputs),
                "output": self.output, "macs": self.macs, "desc_addr": self.desc_addr,
                "desc_count": self.desc_count, "params": self.params, "tiling": self.tiling}

    @classmethod
    def from_dict(cls, d):
        return cls(d["name"], fmt.LayerOp[d["op"].upper()], d["engine"],
                   fmt.Reason[d["reason"].upper()], d["why"], tuple(d["inputs"]), d["output"],
                   d["macs"], d["desc_addr"], d["desc_count"], d["params"], d["tiling"])


@dataclass
class ModelImage:
    """A compiled model (see the module docstring)."""

    model: str
    soc: SocConfig
    data: bytes                 # the constant image, loaded at fmt.IMAGE_BASE
    header: dict                # fmt.IMAGE_HEADER fields
    layers: list                # LayerInfo per layer
    tensors: dict               # name -> TensorInfo (the buffer plan)
    input: str
    output: str
    reuse_buffers: bool = True
    extra: dict = field(default_factory=dict)

    @property
    def results_bytes(self):
        return fmt.RUN_RECORD.size + len(self.layers) * fmt.LAYER_RESULT.size

    def layer_results(self, data):
        """``(run record, [layer result])`` from the bytes of the results region."""
        record = fmt.RUN_RECORD.unpack(data)
        size = fmt.LAYER_RESULT.size
        start = _align(fmt.RUN_RECORD.size, 8)
        layers = [fmt.LAYER_RESULT.unpack(data, start + k * size)
                  for k in range(len(self.layers))]
        return record, layers

    def verify(self):
        """Raise :class:`ImageError` unless the magic, version and checksum are right."""
        header = fmt.IMAGE_HEADER.unpack(self.data)
        if header["magic"] != fmt.IMAGE_MAGIC or header["version"] != fmt.IMAGE_VERSION:
            raise ImageError("not a Tessera model image of this version")
        if len(self.data) < header["data_bytes"]:
            raise ImageError(f"the image is truncated: {len(self.data)} of "
                             f"{header['data_bytes']} bytes")
        a, b = fmt.fletcher64(self.data[fmt.CHECKSUM_FROM:header["data_bytes"]])
        if (a, b) != (header["checksum_a"], header["checksum_b"]):
            raise ImageError(f"the image's checksum does not match (stored "
                             f"{header['checksum_a']:08x}{header['checksum_b']:08x}, computed "
                             f"{a:08x}{b:08x}): the file is corrupted; refused")

    def save(self, directory):
        """Write ``image.bin`` and ``image.json`` into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "image.bin").write_bytes(self.data)
        meta = {"format": "tessera-model-image", "version": fmt.IMAGE_VERSION,
                "model": self.model, "soc": self.soc.as_dict(), "header": self.header,
                "input": self.input, "output": self.output,
                "reuse_buffers": self.reuse_buffers,
                "layers": [layer.as_dict() for layer in self.layers],
                "tensors": [t.as_dict() for t in self.tensors.values()], **self.extra}
        (directory / "image.json").write_text(json.dumps(meta, indent=1) + "\n")
        return directory


def load_image(directory, *, verify=True):
    """Read an image written by :meth:`ModelImage.save`; with ``verify`` the checksum must
    match (:class:`ImageError` otherwise)."""
    directory = Path(directory)
    try:
        meta = json.loads((directory / "image.json").read_text())
        data = (directory / "image.bin").read_bytes()
    except (OSError, ValueError) as error:
        raise ImageError(f"{directory}: not a compiled model image ({error})") from error
    if meta.get("format") != "tessera-model-image":
        raise ImageError(f"{directory}/image.json: not a Tessera model image")
    tensors = {}
    for t in meta["tensors"]:
        unfold = t.get("unfold")
        tensors[t["name"]] = TensorInfo(t["name"], tuple(t["shape"]), t["addr"],
                                        TensorLayout(*t["hwc"], 8),
                                        InputUnfold.from_dict(unfold) if unfold else None)
    image = ModelImage(meta["model"], SocConfig.from_dict(meta["soc"]), data, meta["header"],
                       [LayerInfo.from_dict(d) for d in meta["layers"]], tensors,
                       meta["input"], meta["output"], meta["reuse_buffers"])
    if verify:
        image.verify()
    return image


class _Builder:
    """Places constant sections after the header, 64-byte aligned."""

    def __init__(self):
        self.chunks = []
        self.top = _align(fmt.IMAGE_HEADER.size)

    def place(self, data):
        data = bytes(data)
        addr = fmt.IMAGE_BASE + self.top
        self.chunks.append((self.top, data))
        self.top = _align(self.top + len(data))
        return addr

    def bytes(self):
        out = bytearray(self.top)
        for offset, data in self.chunks:
            out[offset:offset + len(data)] = data
        return out


def _check_int8(graph, op):
    for name in (*op.inputs[:1], op.output):
        t = graph.tensor(name)
        if t.dtype != np.int8:
            raise ImageError(f"{op.name}: tensor {name!r} is {t.dtype}; the SoC runs int8 "
                             "activations")


def _plan_buffers(graph, aliases, base, reuse, unfold=None):
    """Bus addresses of every activation tensor: a first-fit plan over the tensors' lifetimes
    (layer indices, inclusive), 64-byte aligned; aliased tensors share their source's
    buffer. With ``unfold`` the network input's buffer holds the unfolded tensor. Returns
    ({name: TensorInfo}, bytes used)."""
    def layout(name):
        if unfold is not None and name == graph.inputs[0]:
            return TensorLayout(*unfold.shape, 8)
        return TensorLayout(*tensor_shape3(graph.tensor(name).shape), 8)

    names = [graph.inputs[0]] + [op.output for op in graph.ops]
    birth = {graph.inputs[0]: -1}
    death = {}
    for i, op in enumerate(graph.ops):
        birth.setdefault(op.output, i)
        for name in op.inputs:
            if name in birth:
                death[name] = i
    for name in graph.outputs:
        death[name] = len(graph.ops)

    def root(name):
        while name in aliases:
            name = aliases[name]
        return name

    # an alias keeps its source alive as long as itself
    span = {}
    for name in names:
        r = root(name)
        lo, hi = span.get(r, (birth[name], death.get(name, birth[name])))
        span[r] = (min(lo, birth[name]), max(hi, death.get(name, birth[name])))
    placed = []           # (lo, hi, start, end)
    addrs = {}
    for name in names:
        if name in aliases:
            continue
        size = _align(layout(name).bytes)
        lo, hi = span[name]
        start = 0
        for p_lo, p_hi, p_start, p_end in sorted(placed, key=lambda p: p[2]):
            live_together = not reuse or (p_lo <= hi and lo <= p_hi)
            if live_together and start < p_end and p_start < start + size:
                start = _align(p_end)
        placed.append((lo, hi, start, start + size))
        addrs[name] = base + start
    total = max((p[3] for p in placed), default=0)
    tensors = {}
    for name in names:
        shape = tuple(graph.tensor(name).shape)
        tensors[name] = TensorInfo(name, shape, addrs[root(name)], layout(name),
                                   unfold if name == graph.inputs[0] else None)
    return tensors, total


def _qblock_bytes(qblock):
    """A quantization block of any channel count: blocks of 256 channels, one after another."""
    chunks = [qblock.select(lo, min(lo + _QBLOCK_CHANNELS, qblock.channels)).pack()
              for lo in range(0, qblock.channels, _QBLOCK_CHANNELS)]
    return np.concatenate(chunks).astype("<u8").tobytes()


#: The datapaths whose layers the image compiler lowers (the others' layers stay on the
#: processor, with the reason).
_IMAGE_LOWERS = (Op.CONV2D, Op.FC, Op.DEPTHWISE)


def _accelerator_for(soc, op):
    datapath = fmt.ACCELERATOR_FOR.get(_OPS[type(op)])
    found = soc.find(datapath) if datapath is not None else []
    return datapath, (found[0] if found else None)


def _relocate(program, tensors, op, builder, inputs=None):
    """Place a ``sw.program`` Program's weights, quantization blocks and descriptors in the
    image, its input and output in the tensors' buffers (``inputs``: other regions that are
    tensors, region name -> tensor name); returns (descriptor list address, count)."""
    regions = program.regions
    new_base = {}
    for name, (addr, size) in regions.items():
        if inputs and name in inputs:
            new_base[name] = tensors[inputs[name]].addr
        elif name == "input":
            new_base[name] = tensors[op.inputs[0]].addr
        elif name == "output":
            new_base[name] = tensors[op.output].addr
        elif name != "descriptors":
            new_base[name] = builder.place(program.memory[addr:addr + size].tobytes())

    def move(addr, what):
        for name, (start, size) in regions.items():
            if name in new_base and start <= addr < start + max(size, 1):
                return new_base[name] + addr - start
        raise ImageError(f"{op.name}: a descriptor's {what} {addr:#x} lies in no region of "
                         "its program")

    raw = bytearray()
    for desc in program.descriptors:
        # (an average pool reads no weights: its w_addr is no address)
        pool = desc.op == Op.DEPTHWISE and desc.mode == Mode.AVGPOOL
        moved = {key: move(getattr(desc, key), key)
                 for key in ("in_addr", "w_addr", "q_addr", "out_addr")
                 if not (pool and key == "w_addr")}
        raw += dataclasses.replace(desc, **moved).to_bytes()
    return builder.place(raw), len(program.descriptors)


def _fc_layer(op, layer, config, tensors, builder):
    """Lower a FullyConnected layer onto the FC datapath of ``config`` (one vector: its input
    and output tensors must be laid out as ``fc_program`` lays out a vector; a Reshape before
    it is a view)."""
    from hls_ref.formats import TensorLayout

    from .program import ProgramError, fc_program
    from .tiling.fc import fc_tiling

    n_out, n_in = layer.weights.shape
    cmd = layer.command
    for name, n in ((op.inputs[0], n_in), (op.output, n_out)):
        want = TensorLayout(1, 1, n, cmd.precision.act_bits if name != op.output
                            else cmd.out_bits)
        if tensors[name].layout != want:
            raise ProgramError(f"{op.name}: tensor {name} is not laid out as one vector of "
                               f"{n} (the FC datapath's layout); it has {tensors[name].layout}")
    tiling = fc_tiling(op.name, 1, n_in, n_out, cmd.precision, config)
    program = fc_program(np.zeros((1, n_in), np.int64), layer.weights, layer.qblock, cmd,
                         config, out_splits=tiling.out_splits, in_splits=tiling.in_splits,
                         batch_splits=tiling.batch_splits)
    desc_addr, count = _relocate(program, tensors, op, builder)
    return desc_addr, count, f"{tiling.in_tile} in x {tiling.out_tile} out per command"


def _perchannel_layer(graph, op, config, tensors, builder):
    """Lower a DepthwiseConv2D, AveragePool2D or Add layer onto the per-channel datapath of
    ``config`` (``sw.perchannel_compile``; its input, an add's input B and its output tensors
    must be laid out as the compiler's program lays them out)."""
    from hls_ref.formats import TensorLayout

    from .perchannel_compile import compile_perchannel
    from .program import ProgramError

    count = 2 if isinstance(op, g.Add) else 1
    shapes = [tensor_shape3(graph.tensor(name).shape) for name in op.inputs[:count]]
    program, tiling, layer = compile_perchannel(
        graph, op, [np.zeros(shape, np.int64) for shape in shapes], config)
    bits = layer.command.precision.act_bits
    wanted = {name: TensorLayout(*shape, bits) for name, shape in zip(op.inputs, shapes)}
    wanted[op.output] = program.out_layout
    for name, want in wanted.items():
        if tensors[name].layout != want:
            raise ProgramError(f"{op.name}: tensor {name} is not laid out as the per-channel "
                               f"datapath's program lays it out ({want}); it has "
                               f"{tensors[name].layout}")
    extra = {"input B": op.inputs[1]} if count == 2 else {}
    desc_addr, count = _relocate(program, tensors, op, builder, extra)
    return desc_addr, count, f"{tiling.rows} rows per command, {tiling.commands} commands"


def _accelerator_layer(graph, op, soc, k, tensors, builder):
    """Lower a Conv2D layer onto conv2d accelerator ``k`` (a FullyConnected one onto its FC
    datapath, a depthwise, pool or add layer onto its per-channel one); returns (desc addr,
    count, tiling text) or raises (lowering or tiling errors name the limit)."""
    from .lowering import lower_layer
    from .program import compiler_program
    from .unfold import unfolded_program

    config = soc.accelerators[k]
    if isinstance(op, (g.DepthwiseConv2D, g.AveragePool2D, g.Add)):
        return _perchannel_layer(graph, op, config, tensors, builder)
    layer = lower_layer(graph, op)
    if isinstance(op, g.FullyConnected):
        return _fc_layer(op, layer, config, tensors, builder)
    h, w, c = tensor_shape3(graph.tensor(op.inputs[0]).shape)
    x = np.zeros((h, w, c), np.int64)
    if tensors[op.inputs[0]].unfold is not None:
        # the input is unfolded for this layer (decided before the buffers were planned)
        unfolded = unfolded_program(x, layer, config, name=op.name)
        if unfolded is None or unfolded[0] != tensors[op.inputs[0]].unfold:
            raise ImageError(f"internal: {op.name}: its unfolded input no longer tiles")
        _, program, tiling = unfolded
    else:
        program, tiling = compiler_program(x, layer.weights, layer.qblock, layer.command,
                                           config, name=op.name)
    desc_addr, count = _relocate(program, tensors, op, builder)
    text = (f"{tiling.rows} rows x {tiling.out_channels} out x {tiling.in_channels} in"
            if hasattr(tiling, "rows") else str(tiling))
    return desc_addr, count, text


def _processor_params(graph, op, tensors, derived, builder):
    """The parameter block of a processor layer (and its weights / quantization block)."""
    from .lowering import lower_layer

    out = tensors[op.output]
    x = tensors[op.inputs[0]]
    io = {**x.fields("in"), **out.fields("out")}
    if isinstance(op, g.Conv2D | g.DepthwiseConv2D):
        layer = lower_layer(graph, op)
        weights = np.asarray(layer.weights, np.int8)       # OHWI, or HWC for depthwise
        kh, kw = layer.command.kernel
        top, _, left, _ = layer.command.padding
        sh, sw = layer.command.stride
        params = fmt.CONV_PARAMS.pack(
            **io, kernel_h=kh, kernel_w=kw, stride_h=sh, stride_w=sw, pad_top=top,
            pad_left=left, pad_value=layer.command.pad_value,
            weights=builder.place(weights.tobytes()),
            qblock=builder.place(_qblock_bytes(layer.qblock)))
    elif isinstance(op, g.FullyConnected):
        layer = lower_layer(graph, op)
        weights = np.asarray(layer.weights, np.int8)
        n_out, n_in = weights.shape
        stride = _align(n_in, 4)
        padded = np.zeros((n_out, stride), np.int8)
        padded[:, :n_in] = weights
        if x.layout.height * x.layout.width * x.layout.channels != n_in:
            raise ImageError(f"{op.name}: {n_in} inputs, but its input tensor holds "
                             f"{x.layout.height * x.layout.width * x.layout.channels}")
        params = fmt.FC_PARAMS.pack(**io, in_features=n_in, out_features=n_out,
                                    weights=builder.place(padded.tobytes()), in_stride=stride,
                                    qblock=builder.place(_qblock_bytes(layer.qblock)))
    elif isinstance(op, g.Add):
        p = derived[op.name]
        b = tensors[op.inputs[1]]
        params = fmt.ADD_PARAMS.pack(
            **x.fields("a"), **b.fields("b"), **out.fields("out"), left_shift=p.left_shift,
            a_zero_point=p.input1[0], a_multiplier=p.input1[1], a_shift=p.input1[2],
            b_zero_point=p.input2[0], b_multiplier=p.input2[1], b_shift=p.input2[2],
            out_zero_point=p.output[0], out_multiplier=p.output[1], out_shift=p.output[2],
            act_min=p.act_min, act_max=p.act_max)
    elif isinstance(op, g.AveragePool2D | g.MaxPool2D):
        act_min, act_max = derived[op.name]
        params = fmt.POOL_PARAMS.pack(
            **io, filter_h=op.filter[0], filter_w=op.filter[1], stride_h=op.stride[0],
            stride_w=op.stride[1], pad_top=op.padding.top, pad_left=op.padding.left,
            act_min=act_min, act_max=act_max)
    elif isinstance(op, g.Softmax):
        from hls_ref.softmax import exp_table

        p = derived[op.name]
        # the exponentials of every int8 difference, computed here: the kernel looks them up
        # instead of evaluating gemmlowp's polynomial and barrel on the processor
        table = builder.place(exp_table(p).astype("<i4").tobytes())
        params = fmt.SOFTMAX_PARAMS.pack(**io, multiplier=p.multiplier,
                                         left_shift=p.left_shift, diff_min=p.diff_min,
                                         out_bits=8, exp_table=table)
    elif isinstance(op, g.Reshape):
        params = fmt.COPY_PARAMS.pack(**io)
    else:
        raise ImageError(f"{op.name}: no processor kernel for {op.kind}")
    return builder.place(params)


def _refuse_unsupported(graph):
    """Everything the SoC cannot run, found before anything is built."""
    problems = []
    for op in graph.ops:
        if type(op) not in _OPS:
            problems.append(f"{op.name}: operator {op.kind} is not supported")
            continue
        try:
            _check_int8(graph, op)
        except ImageError as error:
            problems.append(str(error))
        if isinstance(op, g.Conv2D | g.DepthwiseConv2D) and tuple(op.dilation) != (1, 1):
            problems.append(f"{op.name}: dilation {tuple(op.dilation)} is not supported")
        if isinstance(op, g.DepthwiseConv2D) and op.depth_multiplier != 1:
            problems.append(f"{op.name}: depth multiplier {op.depth_multiplier} is not "
                            "supported")
        out = graph.tensor(op.output)
        channels = out.shape[-1] if out.shape else 1
        if isinstance(op, g.Softmax) and channels > fmt.SOFTMAX_MAX:
            problems.append(f"{op.name}: softmax over {channels} values; the processor's "
                            f"kernel takes at most {fmt.SOFTMAX_MAX}")
        if (isinstance(op, g.Conv2D | g.DepthwiseConv2D | g.AveragePool2D | g.MaxPool2D)
                and channels > fmt.MAX_CHANNELS):
            problems.append(f"{op.name}: {channels} channels; the processor's kernels take at "
                            f"most {fmt.MAX_CHANNELS}")
        if isinstance(op, g.FullyConnected):
            inputs = graph.tensor(op.inputs[1]).shape[1]
            if inputs > fmt.FC_MAX_INPUTS:
                problems.append(f"{op.name}: {inputs} inputs; the processor's kernel takes at "
                                f"most {fmt.FC_MAX_INPUTS}")
    if problems:
        raise ImageError("the model cannot run on the SoC:\n  " + "\n  ".join(problems))


def _input_unfold(graph, soc):
    """The :class:`sw.unfold.InputUnfold` of the network input when its one reader is a
    convolution that a conv2d accelerator of ``soc`` runs in fewer operand cycles on it
    unfolded (``sw.unfold.choose_unfold``), else None."""
    from .lowering import CompileError, lower_layer
    from .unfold import input_reader, unfolded_program

    op = input_reader(graph)
    _, k = _accelerator_for(soc, op) if op is not None else (None, None)
    if k is None:
        return None
    try:
        layer = lower_layer(graph, op)
    except CompileError:
        return None
    x = np.zeros(tensor_shape3(graph.input.shape), np.int64)
    unfolded = unfolded_program(x, layer, soc.accelerators[k], name=op.name)
    return unfolded[0] if unfolded else None


def input_bytes(image, x):
    """The bytes of the network input ``x`` (the graph's shape, raw int8 values) as the image
    wants them in its input buffer: HWC, or unfolded for the first layer."""
    info = image.tensors[image.input]
    x = np.asarray(x)
    if tuple(x.shape) != tuple(info.shape):
        raise ValueError(f"the model's input has shape {tuple(info.shape)}, not {x.shape}")
    if info.unfold is not None:
        hwc = info.unfold.apply(x.reshape(info.unfold.in_shape))
    else:
        hwc = x.reshape(info.layout.height, info.layout.width, info.layout.channels)
    return info.layout.pack(hwc).astype("<u8").tobytes()


def compile_model(model, soc=DEFAULT_SOC, *, reuse_buffers=True, log=None):
    """Compile ``model`` (a built-in name, a ``.tflite`` path or a ``sw.graph.Graph``) for SoC
    build ``soc``; returns a :class:`ModelImage`. Raises :class:`ImageError` (or the
    importer's error) naming every unsupported layer before anything is built.

    ``reuse_buffers`` lets tensors whose lifetimes do not overlap share memory (the default);
    without it every tensor keeps its own buffer, so all of them can be read after a run."""
    from .golden import prepare
    from .lowering import CompileError
    from .program import ProgramError
    from .tflite_import import load_model
    from .tiling.capacity import TilingError

    graph = model if isinstance(model, g.Graph) else load_model(model)
    name = model if isinstance(model, str) else getattr(graph, "name", "model")
    _refuse_unsupported(graph)
    derived = prepare(graph)

    # engines first: reshapes whose layouts agree become aliases
    aliases = {}
    for op in graph.ops:
        if isinstance(op, g.Reshape):
            src = TensorLayout(*tensor_shape3(graph.tensor(op.inputs[0]).shape), 8)
            dst = TensorLayout(*tensor_shape3(graph.tensor(op.output).shape), 8)
            if src.channel_stride == dst.channel_stride and src == dst:
                aliases[op.output] = op.inputs[0]

    layer_count = len(graph.ops)
    # the buffers follow the constants, whose size is known only once they are placed: plan
    # them from offset 0, place everything, then place again with the plan moved behind
    unfold = _input_unfold(graph, soc)
    tensors, buffer_bytes = _plan_buffers(graph, aliases, 0, reuse_buffers, unfold)

    layers = []
    pending = []        # (layer index, op) of processor layers, placed after the plan moves
    for i, op in enumerate(graph.ops):
        datapath, k = _accelerator_for(soc, op)
        macs = graph.macs(op)
        info = LayerInfo(op.name, _OPS[type(op)], fmt.Engine.PROCESSOR, fmt.Reason.NONE, "",
                         tuple(n for n in op.inputs if not graph.tensor(n).is_constant),
                         op.output, macs)
        if k is not None and datapath not in _IMAGE_LOWERS:
            # the datapath exists, but the image compiler does not lower these layers for it
            info.reason = fmt.Reason.NO_ACCELERATOR
            info.why = (f"the image compiler does not lower {op.kind} layers for the "
                        f"{datapath.name.lower()} datapath yet")
        elif k is not None:
            info.engine = fmt.Engine.ACCEL0 + k
        elif datapath is not None:
            info.reason = fmt.Reason.NO_ACCELERATOR
            info.why = f"no {datapath.name.lower()} datapath in this build"
        elif isinstance(op, g.Softmax):
            info.reason = fmt.Reason.HOST_OP
            info.why = "softmax stays on the processor (exp and reciprocal, one vector)"
        elif isinstance(op, g.Reshape):
            alias = op.output in aliases
            info.reason = fmt.Reason.ALIAS if alias else fmt.Reason.COPY
            info.why = ("same bytes: nothing to run" if alias
                        else "the layouts differ: the processor copies the elements")
        else:
            info.reason = fmt.Reason.NO_ACCELERATOR
            info.why = f"no accelerator of this build runs {op.kind} yet"
        layers.append(info)
        pending.append((i, op))

    def build(buffer_base):
        """Place every constant section for buffers at ``buffer_base``; returns the builder,
        the moved plan, the layer table's and the names' addresses."""
        builder = _Builder()
        table_addr = builder.place(b"\0" * (layer_count * fmt.LAYER_ENTRY.size))
        name_addrs = [builder.place(op.name.encode() + b"\0") for op in graph.ops]
        moved = {n: dataclasses.replace(t, addr=t.addr + buffer_base)
                 for n, t in tensors.items()}
        for (_, op), info in zip(pending, layers):
            if info.accelerator is not None:
                try:
                    info.desc_addr, info.desc_count, info.tiling = _accelerator_layer(
                        graph, op, soc, info.accelerator, moved, builder)
                    continue
                except (CompileError, TilingError, ProgramError) as error:
                    if getattr(moved.get(op.inputs[0]), "unfold", None) is not None:
                        # the processor's kernels read HWC: an unfolded input cannot fall back
                        raise ImageError(f"internal: {op.name}: its unfolded input was planned "
                                         f"but the layer does not lower ({error})") from error
                    info.engine = fmt.Engine.PROCESSOR
                    info.reason = fmt.Reason.UNSUPPORTED
                    info.why = f"the accelerator cannot run it: {error}"
            info.params = (0 if info.reason == fmt.Reason.ALIAS
                           else _processor_params(graph, op, moved, derived, builder))
        return builder, moved, table_addr, name_addrs

    builder = build(0)[0]
    buffer_base = fmt.IMAGE_BASE + _align(builder.top, 4096)
    builder, tensors, table_addr, name_addrs = build(buffer_base)
    if fmt.IMAGE_BASE + _align(builder.top, 4096) != buffer_base:
        raise ImageError("internal: the image's size changed between its two passes")
    results = _align(buffer_base + buffer_bytes, 4096)
    if results + 8 * 1024 > soc.dram_bytes:
        raise ImageError(f"the model needs {results:#x} bytes of external memory; the build has "
                         f"{soc.dram_bytes:#x}")

    data = builder.bytes()
    table = b"".join(fmt.LAYER_ENTRY.pack(op=info.op, engine=info.engine, reason=info.reason,
                                          name=name_addrs[i], desc_addr=info.desc_addr,
                                          desc_count=info.desc_count, params=info.params)
                     for i, info in enumerate(layers))
    offset = table_addr - fmt.IMAGE_BASE
    data[offset:offset + len(table)] = table
    inp, out = tensors[graph.inputs[0]], tensors[graph.outputs[0]]
    header = dict(magic=fmt.IMAGE_MAGIC, version=fmt.IMAGE_VERSION, data_bytes=len(data),
                  layer_count=layer_count, layers=table_addr, accels=len(soc.accelerators),
                  datapaths=soc.datapaths(), input=inp.addr, input_bytes=inp.layout.bytes,
                  output=out.addr,
                  output_bytes=out.layout.bytes, buffers=buffer_base,
                  buffer_bytes=buffer_bytes, results=results)
    data[:fmt.IMAGE_HEADER.size] = fmt.IMAGE_HEADER.pack(**header)
    a, b = fmt.fletcher64(data[fmt.CHECKSUM_FROM:])
    header.update(checksum_a=a, checksum_b=b)
    data[:fmt.IMAGE_HEADER.size] = fmt.IMAGE_HEADER.pack(**header)
    if log:
        log(f"compiled {name}: {layer_count} layers, {len(data):,} bytes of constants, "
            f"{buffer_bytes:,} bytes of buffers")
    return ModelImage(str(name), soc, bytes(data), header, layers, tensors, graph.inputs[0],
                      graph.outputs[0], reuse_buffers)
