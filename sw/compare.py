"""Layer-by-layer comparison of the golden models with TFLite's reference kernels.

Each input runs through both runtimes; every operator's output tensor is compared element by
element. Two views are kept: ``chained`` (the golden model runs the whole network on its own,
so an early error would propagate) and ``isolated`` (each golden operator is fed LiteRT's own
input tensors, so a mismatch is charged to the operator that made it).
"""

import time
from dataclasses import dataclass, field

import numpy as np

from .golden import prepare, run_graph, run_op
from .litert import ReferenceRuntime
from .tflite_import import load_model

__all__ = [
    "LayerComparison",
    "ModelComparison",
    "compare_with_litert",
    "format_comparisons",
    "random_input",
]


def random_input(tensor, rng):
    """A uniformly random input of the tensor's integer dtype and shape."""
    info = np.iinfo(tensor.dtype)
    return rng.integers(info.min, info.max, tensor.shape, endpoint=True).astype(tensor.dtype)


@dataclass
class LayerComparison:
    """Mismatch counts of one operator over all compared inputs."""

    name: str
    kind: str
    elements: int = 0
    chained_mismatches: int = 0
    isolated_mismatches: int = 0


@dataclass
class ModelComparison:
    """The result of :func:`compare_with_litert` for one model."""

    model: str
    inputs: int
    layers: list = field(default_factory=list)
    golden_seconds: float = 0.0
    litert_seconds: float = 0.0
    output_mismatches: int = 0

    @property
    def mismatches(self):
        return sum(layer.chained_mismatches + layer.isolated_mismatches for layer in self.layers)

    @property
    def elements(self):
        return sum(layer.elements for layer in self.layers)


def compare_with_litert(model, inputs=10, seed=0, graph=None):
    """Run ``inputs`` seeded random inputs through the golden model and LiteRT; count
    mismatching elements per layer. ``graph`` may be given to compare a modified graph."""
    graph = graph if graph is not None else load_model(model)
    reference = ReferenceRuntime(model)
    rng = np.random.default_rng(seed)
    parameters = prepare(graph)
    result = ModelComparison(model, inputs,
                             [LayerComparison(op.name, op.kind) for op in graph.ops])
    for _ in range(inputs):
        x = random_input(graph.input, rng)
        start = time.perf_counter()
        y, runs = run_graph(graph, x, parameters)
        result.golden_seconds += time.perf_counter() - start
        start = time.perf_counter()
        y_ref = reference.run(x)
        result.litert_seconds += time.perf_counter() - start
        result.output_mismatches += int(np.sum(y != y_ref))
        for layer, run in zip(result.layers, runs, strict=True):
            expected = reference.tensor(run.op.output)
            feeds = {name: reference.tensor(name) for name in run.op.inputs
                     if not graph.tensor(name).is_constant}
            isolated = run_op(graph, run.op, feeds, parameters)
            layer.elements += expected.size
            layer.chained_mismatches += int(np.sum(run.output != expected))
            layer.isolated_mismatches += int(np.sum(isolated != expected))
    return result


def format_comparisons(results):
    """Markdown table of :class:`ModelComparison` results."""
    lines = ["| model | operators | inputs | elements compared | mismatches | golden ms/inference "
             "| LiteRT ms/inference |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.model} | {len(r.layers)} | {r.inputs} | {r.elements:,} | "
                     f"{r.mismatches + r.output_mismatches} | "
                     f"{r.golden_seconds / r.inputs * 1e3:.1f} | "
                     f"{r.litert_seconds / r.inputs * 1e3:.1f} |")
    return "\n".join(lines)
