"""The MLPerf Tiny models as shape-only networks, read from their ``.tflite`` files."""

from sw import graph as g
from sw.tflite_import import load_model

from .shapes import Layer, Network

__all__ = ["mlperf_network", "network_from_graph"]


def network_from_graph(graph):
    """Shape-only :class:`Network` of a graph IR model.

    Reshape is a view (its consumers read its producer); Softmax runs on the host on the
    classifier's few outputs and is left out, as the traffic floors of the MLPerf Tiny models
    leave it out.
    """
    # layers are named after their operators (``03_conv_2d``); inputs by producing layer
    alias = {name: "input" if len(graph.inputs) == 1 else name for name in graph.inputs}

    def source(tensor):
        return alias[tensor]

    def hwc(tensor):
        shape = graph.tensor(tensor).shape
        if len(shape) == 4:
            return tuple(int(s) for s in shape[1:])
        size = int(graph.tensor(tensor).size)
        return (1, 1, size)

    layers = []
    for op in graph.ops:
        x = source(op.inputs[0])
        if isinstance(op, (g.Reshape, g.Softmax)):
            alias[op.output] = x
            continue
        out = hwc(op.output)
        if isinstance(op, (g.Conv2D, g.DepthwiseConv2D)):
            _, kh, kw, _ = graph.tensor(op.inputs[1]).shape
            kind = "conv" if isinstance(op, g.Conv2D) else "depthwise"
            layer = Layer(op.name, kind, (x,), hwc(op.inputs[0]), out, (int(kh), int(kw)),
                          tuple(op.stride), op.padding, bias=len(op.inputs) > 2)
        elif isinstance(op, g.FullyConnected):
            n = int(graph.tensor(op.inputs[1]).shape[1])
            layer = Layer(op.name, "fc", (x,), (1, 1, n), out, bias=len(op.inputs) > 2)
        elif isinstance(op, g.Add):
            layer = Layer(op.name, "add", tuple(source(t) for t in op.inputs),
                          hwc(op.inputs[0]), out)
        elif isinstance(op, g._Pool2D):
            kind = "avgpool" if isinstance(op, g.AveragePool2D) else "maxpool"
            layer = Layer(op.name, kind, (x,), hwc(op.inputs[0]), out, tuple(op.filter),
                          tuple(op.stride), op.padding)
        else:  # pragma: no cover - the importer only produces the operators above
            raise TypeError(f"no shape description for operator {op.kind}")
        alias[op.output] = op.name
        layers.append(layer)
    inputs = {alias[name]: hwc(name) for name in graph.inputs}
    return Network(graph.name, inputs, layers, source="MLPerf Tiny reference model (.tflite)")


def mlperf_network(name):
    """``resnet8``, ``dscnn``, ``vww`` or ``autoencoder`` as a shape-only network."""
    return network_from_graph(load_model(name))
