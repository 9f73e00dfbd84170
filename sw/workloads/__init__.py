"""Built-in networks for the tiling compiler, by name (shape-only descriptions).

``load_network(name)`` returns a :class:`~sw.workloads.shapes.Network` for a built-in name or
for the path of a ``.tflite`` model.
"""

from pathlib import Path

from . import caffepresso, itt_networks, nve_networks, seed_layers
from .mlperf import mlperf_network
from .shapes import Layer, Network, NetworkBuilder, ShapeError

__all__ = ["BUILTIN_NETWORKS", "Layer", "Network", "NetworkBuilder", "ShapeError",
           "load_network"]

_MLPERF = ("resnet8", "dscnn", "vww", "autoencoder")

BUILTIN_NETWORKS = {name: (lambda name=name: mlperf_network(name)) for name in _MLPERF}
for _module in (seed_layers, nve_networks, caffepresso, itt_networks):
    BUILTIN_NETWORKS.update(_module.NETWORKS)


def load_network(name):
    """A built-in network by name, or a ``.tflite`` model by path."""
    if name in BUILTIN_NETWORKS:
        return BUILTIN_NETWORKS[name]()
    if Path(name).suffix == ".tflite" and Path(name).exists():
        from sw.tflite_import import load_model

        from .mlperf import network_from_graph
        return network_from_graph(load_model(name))
    raise KeyError(f"unknown network {name!r}; built-in: {', '.join(sorted(BUILTIN_NETWORKS))}"
                   f" (or the path of a .tflite model)")
