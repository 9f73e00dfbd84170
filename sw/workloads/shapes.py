"""Shape-only network descriptions: what the tiling compiler needs to know about a layer.

A :class:`Network` is a list of :class:`Layer` objects in execution order. Every layer names
its producers (``inputs``), so the layer-fusion strategy sees branches and residual adds. Shapes
are ``(height, width, channels)`` of one image (batch 1), padding is explicit
(:class:`sw.graph.Padding`), and the sizes of weights and biases are in elements; the element
width in bits comes from the precision the compiler is asked to tile for.

:class:`NetworkBuilder` writes descriptions compactly: it tracks the current shape of every
named tensor and derives output shapes and TFLite-style SAME padding.
"""

from dataclasses import dataclass, field

from sw.graph import Padding, conv_output_size, same_padding

__all__ = ["KINDS", "Layer", "Network", "NetworkBuilder", "ShapeError"]

# Operators with weights run on the accelerators; the others move data (the host or a vector
# unit runs them) but still read and write external memory in a layer-by-layer schedule.
KINDS = ("conv", "depthwise", "fc", "maxpool", "avgpool", "add", "concat", "upsample")
WEIGHTED = ("conv", "depthwise", "fc")


class ShapeError(ValueError):
    """A layer description whose shapes do not fit together (the layer is named)."""


@dataclass(frozen=True)
class Layer:
    """One layer of a network, by shape.

    ``in_shape`` is the (H, W, C) of the first input (all inputs of ``add`` have this shape;
    ``concat`` joins its inputs along channels). ``kernel``/``stride`` are (h, w). For ``fc``
    the input is flattened: ``in_shape = (1, 1, N)`` and ``out_shape = (1, 1, M)``.
    ``connections`` is the number of (input channel, output channel) pairs a ``conv`` connects,
    for the sparse connection tables of seed 003 (``None``: every pair, ``Cin * Cout``).
    """

    name: str
    kind: str
    inputs: tuple
    in_shape: tuple
    out_shape: tuple
    kernel: tuple = (1, 1)
    stride: tuple = (1, 1)
    padding: Padding = field(default_factory=Padding)
    connections: int | None = None
    bias: bool = True

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ShapeError(f"layer {self.name}: unknown kind {self.kind!r}; one of {KINDS}")
        for what in ("in_shape", "out_shape"):
            shape = getattr(self, what)
            if len(shape) != 3 or min(shape) < 1:
                raise ShapeError(f"layer {self.name}: {what} {shape} must be three positive "
                                 f"sizes (H, W, C)")

    @property
    def weighted(self):
        return self.kind in WEIGHTED

    @property
    def in_channels(self):
        return self.in_shape[2]

    @property
    def out_channels(self):
        return self.out_shape[2]

    @property
    def weight_elements(self):
        """Weights (elements), 0 for operators without weights."""
        kh, kw = self.kernel
        if self.kind == "conv":
            pairs = self.connections or self.in_channels * self.out_channels
            return pairs * kh * kw
        if self.kind == "depthwise":
            return self.out_channels * kh * kw
        if self.kind == "fc":
            return self.in_channels * self.out_channels
        return 0

    @property
    def bias_elements(self):
        return self.out_channels if self.weighted and self.bias else 0

    @property
    def macs(self):
        """Multiply-accumulates for one image."""
        ho, wo, _ = self.out_shape
        kh, kw = self.kernel
        if self.kind == "conv":
            pairs = self.connections or self.in_channels * self.out_channels
            return ho * wo * pairs * kh * kw
        if self.kind == "depthwise":
            return ho * wo * self.out_channels * kh * kw
        if self.kind == "fc":
            return self.in_channels * self.out_channels
        return 0

    def input_elements(self, shapes):
        """Elements this layer reads from its producers (``shapes``: name -> (H, W, C))."""
        return sum(_size(shapes[name]) for name in self.inputs)

    @property
    def output_elements(self):
        return _size(self.out_shape)


def _size(shape):
    h, w, c = shape
    return h * w * c


@dataclass
class Network:
    """A network: its inputs (name -> (H, W, C)) and layers in execution order."""

    name: str
    inputs: dict
    layers: list
    description: str = ""
    source: str = ""

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Check names are unique and every layer's producers exist before it with the shape
        the layer expects; raises :class:`ShapeError` naming the layer."""
        shapes = dict(self.inputs)
        for layer in self.layers:
            if layer.name in shapes:
                raise ShapeError(f"layer {layer.name}: the name is used twice")
            for name in layer.inputs:
                if name not in shapes:
                    raise ShapeError(f"layer {layer.name}: input {name!r} is not produced "
                                     f"before it")
            first = shapes[layer.inputs[0]]
            if layer.kind == "fc":
                if _size(first) != layer.in_channels:
                    raise ShapeError(f"layer {layer.name}: FC expects {layer.in_channels} "
                                     f"inputs, {layer.inputs[0]} has {_size(first)}")
            elif layer.kind == "concat":
                parts = [shapes[name] for name in layer.inputs]
                if any(p[:2] != layer.out_shape[:2] for p in parts) or sum(
                        p[2] for p in parts) != layer.out_channels:
                    raise ShapeError(f"layer {layer.name}: inputs {parts} do not concatenate "
                                     f"to {layer.out_shape}")
            else:
                for name in layer.inputs:
                    if tuple(shapes[name]) != tuple(layer.in_shape):
                        raise ShapeError(f"layer {layer.name}: input {name} has shape "
                                         f"{shapes[name]}, the layer expects {layer.in_shape}")
            shapes[layer.name] = layer.out_shape
        return shapes

    @property
    def shapes(self):
        """Name -> (H, W, C) of every tensor (network inputs and layer outputs)."""
        return self.validate()

    @property
    def outputs(self):
        """Layers whose output no other layer reads."""
        used = {name for layer in self.layers for name in layer.inputs}
        return [layer.name for layer in self.layers if layer.name not in used]

    def layer(self, name):
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"network {self.name} has no layer {name!r}")

    @property
    def macs(self):
        return sum(layer.macs for layer in self.layers)

    @property
    def weight_elements(self):
        return sum(layer.weight_elements for layer in self.layers)


def _pair(value):
    if isinstance(value, int):
        return (value, value)
    return tuple(value)


@dataclass
class NetworkBuilder:
    """Builds a :class:`Network` layer by layer; each method returns the new tensor's name.

    ``padding`` is ``"same"`` (TFLite SAME: the odd element after), ``"valid"``, an int (the
    same on every side), a (h, w) pair or an explicit :class:`Padding`.
    """

    name: str
    inputs: dict
    layers: list = field(default_factory=list)

    def __post_init__(self):
        self.inputs = {name: tuple(shape) for name, shape in self.inputs.items()}
        self._shapes = dict(self.inputs)

    def shape(self, tensor):
        return self._shapes[tensor]

    def _add(self, layer):
        self.layers.append(layer)
        self._shapes[layer.name] = layer.out_shape
        return layer.name

    def _spatial(self, name, x, kernel, stride, padding):
        h, w, _ = self._shapes[x]
        (kh, kw), (sh, sw) = _pair(kernel), _pair(stride)
        if padding == "same":
            (top, bottom), (left, right) = same_padding(h, kh, sh, 1), same_padding(w, kw, sw, 1)
            pad = Padding(top, bottom, left, right)
        elif padding == "valid":
            pad = Padding()
        elif isinstance(padding, Padding):
            pad = padding
        else:
            ph, pw = _pair(padding)
            pad = Padding(ph, ph, pw, pw)
        ho = conv_output_size(h + pad.top + pad.bottom, kh, sh, 1, same=False)
        wo = conv_output_size(w + pad.left + pad.right, kw, sw, 1, same=False)
        if ho < 1 or wo < 1:
            raise ShapeError(f"layer {name}: kernel {kh}x{kw} does not fit the {h}x{w} input")
        return (kh, kw), (sh, sw), pad, ho, wo

    def conv(self, name, x, out_channels, kernel=3, stride=1, padding="same", *,
             connections=None, bias=True):
        kernel, stride, pad, ho, wo = self._spatial(name, x, kernel, stride, padding)
        return self._add(Layer(name, "conv", (x,), self._shapes[x], (ho, wo, out_channels),
                               kernel, stride, pad, connections, bias))

    def depthwise(self, name, x, kernel=3, stride=1, padding="same", *, bias=True):
        kernel, stride, pad, ho, wo = self._spatial(name, x, kernel, stride, padding)
        c = self._shapes[x][2]
        return self._add(Layer(name, "depthwise", (x,), self._shapes[x], (ho, wo, c), kernel,
                               stride, pad, bias=bias))

    def pool(self, name, x, kernel=2, stride=None, padding="valid", *, kind="maxpool"):
        stride = kernel if stride is None else stride
        kernel, stride, pad, ho, wo = self._spatial(name, x, kernel, stride, padding)
        c = self._shapes[x][2]
        return self._add(Layer(name, kind, (x,), self._shapes[x], (ho, wo, c), kernel, stride,
                               pad))

    def global_pool(self, name, x, *, kind="avgpool"):
        h, w, _ = self._shapes[x]
        return self.pool(name, x, (h, w), (h, w), "valid", kind=kind)

    def fc(self, name, x, out_features, *, bias=True):
        n = _size(self._shapes[x])
        return self._add(Layer(name, "fc", (x,), (1, 1, n), (1, 1, out_features), bias=bias))

    def add(self, name, *xs):
        shape = self._shapes[xs[0]]
        return self._add(Layer(name, "add", tuple(xs), shape, shape))

    def concat(self, name, *xs):
        shapes = [self._shapes[x] for x in xs]
        h, w, _ = shapes[0]
        return self._add(Layer(name, "concat", tuple(xs), shapes[0],
                               (h, w, sum(s[2] for s in shapes))))

    def upsample(self, name, x, factor=2):
        h, w, c = self._shapes[x]
        return self._add(Layer(name, "upsample", (x,), (h, w, c), (h * factor, w * factor, c),
                               kernel=(1, 1), stride=(1, 1)))

    def build(self, description="", source=""):
        return Network(self.name, dict(self.inputs), list(self.layers), description, source)
