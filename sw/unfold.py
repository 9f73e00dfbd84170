"""The network input unfolded for its first convolution (im2col where the input is written).

A first layer has 1-3 input channels: at 8 bits a pixel of one or three fills half or three
quarters of its ST words' slots, so the PE array does 50-75% of the products it could (and a
layer with fewer output channels than PEs leaves PEs idle as well). The network's input is
written by whoever runs the model (the host tool over the UART, the simulation's loader), so
it can be written in the layout the first layer wants: :class:`InputUnfold` writes, for every
output pixel, its whole receptive field (``kh x kw x C`` values, padding included) as one
pixel of an ``out_h x out_w x kh kw C`` tensor, and the layer becomes a 1x1 convolution over
it whose ST words are full. When the layer has fewer output channels than the build has PEs,
``group`` horizontally adjacent output pixels share one unfolded pixel (their fields side by
side, ``kh x ((group - 1) stride + kw) x C`` values) and the 1x1 convolution has ``group``
times the output channels: output channel ``j O + o`` is channel ``o`` of the ``j``-th pixel,
whose weights sit at its own columns of the field (zeros elsewhere). Its output is the same
bytes as the layer's (``(out_h, out_w / group, group O)`` and ``(out_h, out_w, O)`` address
every element alike when both layouts have no channel filler).

The input buffer grows (ResNet-8: 4 KiB to 32 KiB) and the arithmetic is unchanged
(padding is the input zero point, as the layer's; the folded bias is per output channel).
"""

from dataclasses import dataclass, replace

import numpy as np

from hls_ref.formats import QuantBlock, TensorLayout
from hls_ref.precision import Precision

__all__ = ["InputUnfold", "choose_unfold", "input_reader", "operand_cycles", "unfolded_program"]

#: An unfolded first layer must need at most this share of the plain layer's operand cycles.
WORTH = 0.9


@dataclass(frozen=True)
class InputUnfold:
    """How the input ``(H, W, C)`` of a convolution is unfolded (see the module docstring)."""

    in_shape: tuple      # (H, W, C) of the input
    kernel: tuple        # (kh, kw)
    stride: tuple        # (sh, sw)
    padding: tuple       # (top, bottom, left, right)
    pad_value: int       # the input zero point (raw)
    group: int           # output pixels per unfolded pixel, along a row

    def __post_init__(self):
        if self.group < 1 or self.out_hw[1] % self.group:
            raise ValueError(f"group {self.group} does not divide the {self.out_hw[1]} output "
                             "columns")

    @property
    def out_hw(self):
        """The layer's output rows and columns."""
        h, w, _ = self.in_shape
        (kh, kw), (sh, sw) = self.kernel, self.stride
        top, bottom, left, right = self.padding
        return (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1

    @property
    def window_w(self):
        """Input columns one unfolded pixel covers."""
        return (self.group - 1) * self.stride[1] + self.kernel[1]

    @property
    def shape(self):
        """``(out_h, out_w / group, kh x window_w x C)``: the unfolded tensor."""
        ho, wo = self.out_hw
        return ho, wo // self.group, self.kernel[0] * self.window_w * self.in_shape[2]

    def out_shape(self, out_channels):
        """The 1x1 convolution's output ``(out_h, out_w / group, group x out_channels)``."""
        ho, wo = self.out_hw
        return ho, wo // self.group, self.group * out_channels

    def apply(self, x):
        """The unfolded tensor of input ``x`` ``(H, W, C)`` (raw values)."""
        x = np.asarray(x, np.int64)
        if x.shape != tuple(self.in_shape):
            raise ValueError(f"input shape {x.shape}, not {tuple(self.in_shape)}")
        top, bottom, left, right = self.padding
        (kh, _), (sh, sw) = self.kernel, self.stride
        ho, wo_g, _ = self.shape
        padded = np.pad(x, ((top, bottom), (left, right), (0, 0)),
                        constant_values=self.pad_value)
        step = self.group * sw
        rows = [padded[oy * sh:oy * sh + kh] for oy in range(ho)]
        return np.stack([
            np.stack([row[:, ox * step:ox * step + self.window_w].reshape(-1)
                      for ox in range(wo_g)]) for row in rows])

    def weights(self, weights):
        """The 1x1 convolution's weights ``(group O, 1, 1, kh window_w C)`` from the layer's
        ``(O, kh, kw, C)``."""
        weights = np.asarray(weights, np.int64)
        o, kh, kw, c = weights.shape
        view = np.zeros((self.group, o, kh, self.window_w, c), np.int64)
        for j in range(self.group):
            first = j * self.stride[1]
            view[j, :, :, first:first + kw, :] = weights
        return view.reshape(self.group * o, 1, 1, kh * self.window_w * c)

    def qblock(self, qblock):
        """The layer's quantization block with every output channel ``group`` times."""
        def tile(values):
            return None if values is None else np.tile(np.asarray(values), self.group)
        return QuantBlock(qblock.zero_point, qblock.act_min, qblock.act_max,
                          tile(qblock.bias), tile(qblock.multiplier), tile(qblock.shift),
                          tile(qblock.real_scale))

    def command(self, command):
        """The 1x1, stride-1, unpadded command of the unfolded layer."""
        return replace(command, kernel=(1, 1), stride=(1, 1), padding=(0, 0, 0, 0))

    def as_dict(self):
        return {"in_shape": list(self.in_shape), "kernel": list(self.kernel),
                "stride": list(self.stride), "padding": list(self.padding),
                "pad_value": int(self.pad_value), "group": self.group}

    @classmethod
    def from_dict(cls, d):
        return cls(tuple(d["in_shape"]), tuple(d["kernel"]), tuple(d["stride"]),
                   tuple(d["padding"]), d["pad_value"], d["group"])


def input_reader(graph):
    """The convolution that may read ``graph``'s input unfolded: the input's one reader, when
    that is a Conv2D and the input is not also a graph output; else None."""
    from .graph import Conv2D

    name = graph.inputs[0]
    readers = [op for op in graph.ops if name in op.inputs]
    if len(readers) != 1 or name in graph.outputs or not isinstance(readers[0], Conv2D):
        return None
    return readers[0]


def operand_cycles(command, in_shape, out_channels, pes):
    """The PE array's operand cycles of a conv layer as the accelerator addresses it: output
    pixels x kernel taps x ST words per tap x blocks of ``pes`` output channels (a layer
    with narrow pixels through its tap-paired view, ``sw.program.pair_view``)."""
    from .program import pair_view

    p = Precision.parse(command.precision)
    h, w, c = in_shape
    (kh, kw), (sh, sw) = command.kernel, command.stride
    top, bottom, left, right = command.padding
    ho, wo = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    words = -(-c // p.lanes)
    pairs = pair_view(command, TensorLayout(h, w, c, p.act_bits))
    taps = kh * (pairs.kernel_w if pairs else kw)
    return ho * wo * taps * (1 if pairs else words) * -(-out_channels // pes)


def _same_bytes(out_hw, out_channels, group, bits):
    """Whether ``(out_h, out_w, O)`` and ``(out_h, out_w / group, group O)`` tensors of
    ``bits``-bit values place every element at the same address (group 1: the same tensor)."""
    if group == 1:
        return True
    ho, wo = out_hw
    plain = TensorLayout(ho, wo, out_channels, bits)
    grouped = TensorLayout(ho, wo // group, group * out_channels, bits)
    return (plain.channel_stride == out_channels and grouped.channel_stride
            == group * out_channels and plain.row_stride == grouped.row_stride)


def choose_unfold(command, in_shape, out_channels, pes):
    """The :class:`InputUnfold` of a convolution with input ``in_shape`` ``(H, W, C)`` and
    ``out_channels`` on a build of ``pes`` PEs, or None when unfolding does not take at most
    :data:`WORTH` of the layer's operand cycles (e.g. a 3x3 layer of 8 channels into as many
    outputs as PEs: full ST words already). The group is the one of fewest operand cycles
    (the smallest on a tie) among those whose output keeps its bytes. Operand cycles alone
    decide: the unfolded input is larger (ResNet-8's 8x), its loads hidden behind compute on
    the MLPerf Tiny first layers (``docs/results.md``)."""
    p = Precision.parse(command.precision)
    limit = WORTH * operand_cycles(command, in_shape, out_channels, pes)
    best, best_cycles = None, None
    fields = (tuple(in_shape), tuple(command.kernel), tuple(command.stride),
              tuple(command.padding), int(command.pad_value))
    ho, wo = InputUnfold(*fields, 1).out_hw
    for group in range(1, max(1, pes // out_channels) + 1):
        if wo % group or not _same_bytes((ho, wo), out_channels, group, command.out_bits):
            continue
        unfold = InputUnfold(*fields, group)
        k = unfold.shape[2]
        cycles = ho * (wo // group) * -(-k // p.lanes) * -(-group * out_channels // pes)
        if cycles <= limit and (best is None or cycles < best_cycles):
            best, best_cycles = unfold, cycles
    return best


def unfolded_program(x, layer, config, *, name="layer", seed=0):
    """``(unfold, program, tiling)`` of lowered conv layer ``layer`` (``sw.lowering``) on
    input ``x`` ``(H, W, C)`` unfolded for ``config``, or None when :func:`choose_unfold`
    declines or the unfolded layer does not tile on the build (the plain layer then runs).
    The program's ``macs`` are the layer's."""
    from .program import ProgramError, compiler_program
    from .tiling.capacity import TilingError

    x = np.asarray(x, np.int64)
    unfold = choose_unfold(layer.command, x.shape, layer.weights.shape[0], config.pes)
    if unfold is None:
        return None
    try:
        program, tiling = compiler_program(
            unfold.apply(x), unfold.weights(layer.weights), unfold.qblock(layer.qblock),
            unfold.command(layer.command), config, name=name, seed=seed)
    except (TilingError, ProgramError):
        return None
    # the layer's MACs, not the 1x1 layer's (whose group > 1 has zero weights)
    ho, wo = unfold.out_hw
    o, kh, kw, c = layer.weights.shape
    return unfold, replace(program, macs=ho * wo * kh * kw * c * o), tiling
