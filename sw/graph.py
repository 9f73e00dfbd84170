"""Tessera's graph IR: quantized tensors and the operators the accelerators and the host run.

The IR keeps TFLite's conventions so that a model can be checked against TFLite without any
reordering: activations are NHWC with batch 1, Conv2D weights are OHWI, DepthwiseConv2D weights
are 1HWC (``C = input channels x depth multiplier``), FullyConnected weights are ``[out, in]``.
Every quantized value is ``real = scale * (q - zero_point)``; per-channel parameters run along
``QuantParams.axis`` of the tensor.

Padding is explicit (``Padding(top, bottom, left, right)``, in elements), resolved from TFLite's
SAME/VALID by :func:`same_padding` so that asymmetric padding on stride 2 is visible to the
compiler and the hardware.
"""

import enum
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Activation",
    "Add",
    "AveragePool2D",
    "Conv2D",
    "DepthwiseConv2D",
    "FullyConnected",
    "Graph",
    "MaxPool2D",
    "Op",
    "Padding",
    "QuantParams",
    "Reshape",
    "Softmax",
    "Tensor",
    "conv_output_size",
    "same_padding",
]


class Activation(enum.Enum):
    """Fused activation of an operator (TFLite's ``ActivationFunctionType`` subset)."""

    NONE = "none"
    RELU = "relu"
    RELU6 = "relu6"
    RELU_N1_TO_1 = "relu_n1_to_1"


@dataclass(frozen=True)
class QuantParams:
    """Affine quantization ``real = scale * (q - zero_point)``.

    ``scale`` (float32) and ``zero_point`` (int64) hold one entry per tensor, or one per index
    of dimension ``axis`` for per-channel quantization.
    """

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int = 0

    @property
    def per_channel(self):
        return self.scale.size > 1

    def single(self):
        """The (scale, zero_point) of a per-tensor quantized tensor, as Python numbers."""
        if self.per_channel:
            raise ValueError("per-channel quantization has no single scale")
        return float(self.scale[0]), int(self.zero_point[0])


@dataclass
class Tensor:
    """A tensor of the graph; constant tensors (weights, biases) carry ``data``."""

    name: str
    shape: tuple
    dtype: np.dtype
    quant: QuantParams | None = None
    data: np.ndarray | None = field(default=None, repr=False)

    @property
    def is_constant(self):
        return self.data is not None

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass(frozen=True)
class Padding:
    """Zero-point padding around the spatial dimensions, in elements."""

    top: int = 0
    bottom: int = 0
    left: int = 0
    right: int = 0

    def __str__(self):
        return f"{self.top},{self.bottom},{self.left},{self.right}"


def conv_output_size(size, kernel, stride, dilation, same):
    """Output length of a TFLite convolution or pooling along one dimension."""
    effective = (kernel - 1) * dilation + 1
    if same:
        return (size + stride - 1) // stride
    return (size - effective + stride) // stride


def same_padding(size, kernel, stride, dilation):
    """(before, after) padding of TFLite's SAME along one dimension.

    The total is what the output size needs; the odd element goes after (bottom/right), which
    is why stride-2 layers on even inputs pad asymmetrically.
    """
    effective = (kernel - 1) * dilation + 1
    out = conv_output_size(size, kernel, stride, dilation, same=True)
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


@dataclass
class Op:
    """Base of all operators: a name, input and output tensor names."""

    name: str
    inputs: tuple
    outputs: tuple

    kind = "op"

    @property
    def output(self):
        return self.outputs[0]


@dataclass
class _Convolution(Op):
    """Fields shared by the convolutions: (h, w) stride and dilation, padding, activation."""

    stride: tuple = (1, 1)
    dilation: tuple = (1, 1)
    padding: Padding = Padding()
    activation: Activation = Activation.NONE


@dataclass
class Conv2D(_Convolution):
    """2D convolution: inputs (x, weights OHWI, bias int32 or absent)."""

    kind = "conv2d"


@dataclass
class DepthwiseConv2D(_Convolution):
    """Depthwise convolution: inputs (x, weights 1HWC, bias); C = Cin x depth_multiplier."""

    depth_multiplier: int = 1

    kind = "dwconv2d"


@dataclass
class FullyConnected(Op):
    """Fully connected: inputs (x flattened to [rows, in], weights [out, in], bias)."""

    activation: Activation = Activation.NONE

    kind = "fc"


@dataclass
class Add(Op):
    """Element-wise addition of two same-shape tensors, each with its own quantization."""

    activation: Activation = Activation.NONE

    kind = "add"


@dataclass
class _Pool2D(Op):
    """Fields shared by the poolings: (h, w) window and stride, padding, activation."""

    filter: tuple = (1, 1)
    stride: tuple = (1, 1)
    padding: Padding = Padding()
    activation: Activation = Activation.NONE


@dataclass
class AveragePool2D(_Pool2D):
    """Average pooling; the average counts only the elements inside the input."""

    kind = "avgpool2d"


@dataclass
class MaxPool2D(_Pool2D):
    """Max pooling; padded positions never win."""

    kind = "maxpool2d"


@dataclass
class Reshape(Op):
    """Reshape (the data are unchanged; only the output tensor's shape differs)."""

    kind = "reshape"


@dataclass
class Softmax(Op):
    """Softmax over the last dimension, ``exp(beta * x)`` normalised."""

    beta: float = 1.0

    kind = "softmax"


@dataclass
class Graph:
    """A model: tensors by name, operators in execution order, graph inputs and outputs."""

    name: str
    tensors: dict
    ops: list
    inputs: tuple
    outputs: tuple

    def tensor(self, name):
        return self.tensors[name]

    @property
    def input(self):
        return self.tensors[self.inputs[0]]

    @property
    def output(self):
        return self.tensors[self.outputs[0]]

    def macs(self, op):
        """Multiply-accumulates of one operator (0 for operators without weights)."""
        out = self.tensors[op.output]
        if isinstance(op, Conv2D):
            _, kh, kw, c = self.tensors[op.inputs[1]].shape
            return out.size * kh * kw * c
        if isinstance(op, DepthwiseConv2D):
            _, kh, kw, _ = self.tensors[op.inputs[1]].shape
            return out.size * kh * kw
        if isinstance(op, FullyConnected):
            return out.size * self.tensors[op.inputs[1]].shape[1]
        return 0
