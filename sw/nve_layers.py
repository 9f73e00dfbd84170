"""NVE golden-model layers (:class:`hls_ref.nve.layers.NveLayer`) of the seed-003 networks.

The shape descriptions in :mod:`sw.workloads.nve_networks` carry sizes, kernels, strides and
padding (negative where a layer leaves part of its producer unread), and that module's
``CONNECTIONS`` tables carry the sparse map connectivity; this adapter joins the two into the
geometry :func:`hls_ref.nve.layers.conv_layer` evaluates. It lives in ``sw`` because
``hls_ref`` does not depend on the compiler package.
"""

from hls_ref.nve.layers import NveLayer

from .workloads import nve_networks

__all__ = ["nve_layer", "nve_layers"]


def nve_layer(layer, connections):
    """The :class:`NveLayer` of a ``conv`` :class:`sw.workloads.shapes.Layer`.

    ``connections[m]`` lists the input maps of output map ``m``; it must have one entry per
    output channel and, when the shape layer states its pair count, as many pairs.
    """
    if layer.kind != "conv":
        raise ValueError(f"layer {layer.name}: an NVE layer is a convolution, not {layer.kind}")
    if len(connections) != layer.out_channels:
        raise ValueError(f"layer {layer.name}: {len(connections)} connection entries for "
                         f"{layer.out_channels} output maps")
    pairs = sum(len(inputs) for inputs in connections)
    if layer.connections is not None and pairs != layer.connections:
        raise ValueError(f"layer {layer.name}: the connection table has {pairs} pairs, the "
                         f"shape description {layer.connections}")
    (in_h, in_w, in_maps), (out_h, out_w, _) = layer.in_shape, layer.out_shape
    pad = layer.padding
    return NveLayer(in_maps=in_maps, in_h=in_h, in_w=in_w, out_h=out_h, out_w=out_w,
                    kernel_h=layer.kernel[0], kernel_w=layer.kernel[1],
                    stride_h=layer.stride[0], stride_w=layer.stride[1],
                    connections=connections,
                    pad=(pad.top, pad.bottom, pad.left, pad.right))


def nve_layers(network):
    """The four layers of ``network`` ("face-detection" or "speed-sign") as
    ``{"L1": NveLayer, ..., "L4": NveLayer}``, in execution order; L1 reads the 720 x 1280
    one-map frame."""
    if network not in nve_networks.NETWORKS:
        raise KeyError(f"unknown NVE network {network!r}; one of "
                       f"{', '.join(sorted(nve_networks.NETWORKS))}")
    tables = nve_networks.CONNECTIONS[network]
    return {layer.name: nve_layer(layer, tables[layer.name])
            for layer in nve_networks.NETWORKS[network]().layers}
