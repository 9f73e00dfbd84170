"""``tessera run``: run a model on a backend, print its output and a per-layer summary."""

from pathlib import Path

import numpy as np

from .compare import random_input
from .golden import run_graph
from .tflite_import import load_model

__all__ = ["run_model"]


def _shape(shape):
    return "x".join(str(d) for d in shape)


def _load_input(graph, path, seed):
    if path is None:
        x = random_input(graph.input, np.random.default_rng(seed))
        return x, f"seeded random (seed {seed})"
    x = np.load(path)
    want = graph.input
    if x.shape != want.shape or x.dtype != want.dtype:
        raise ValueError(f"{path}: the model's input is {want.dtype} of shape {want.shape}, "
                         f"the file holds {x.dtype} of shape {x.shape}")
    return x, str(path)


def run_model(model, backend="golden", input_path=None, output_path=None, dump_dir=None,
              seed=0, compare_litert=False, out=print):
    """Run ``model`` once; returns the number of elements that differ from LiteRT (0 when not
    compared). Prints through ``out``."""
    if backend != "golden":
        raise ValueError(f"unknown backend {backend!r}; available: golden")
    graph = load_model(model)
    x, source = _load_input(graph, input_path, seed)
    y, runs = run_graph(graph, x)

    reference = None
    if compare_litert:
        from .litert import ReferenceRuntime

        reference = ReferenceRuntime(model)
        reference.run(x)

    out(f"model {model}: {len(graph.ops)} operators, input {graph.input.dtype} "
        f"{_shape(graph.input.shape)} ({source}), backend {backend}")
    header = "| # | operator | output | MACs | time (ms) |"
    rule = "|---:|---|---|---:|---:|"
    if reference is not None:
        header += " LiteRT mismatches |"
        rule += "---:|"
    out(header)
    out(rule)
    mismatches = 0
    for i, run in enumerate(runs):
        t = graph.tensor(run.op.output)
        row = (f"| {i} | {run.op.name} | {t.dtype} {_shape(t.shape)} | "
               f"{graph.macs(run.op):,} | {run.seconds * 1e3:.2f} |")
        if reference is not None:
            bad = int(np.sum(run.output != reference.tensor(run.op.output)))
            mismatches += bad
            row += f" {bad} |"
        out(row)
    total_macs = sum(graph.macs(op) for op in graph.ops)
    total_ms = sum(run.seconds for run in runs) * 1e3
    out(f"total: {total_macs:,} MACs, {total_ms:.1f} ms")
    scale, zero_point = graph.output.quant.single()
    values = np.array2string(y.ravel(), max_line_width=96, threshold=32)
    out(f"output {graph.output.dtype} {_shape(y.shape)}: {values}")
    if y.size <= 64:
        real = scale * (y.astype(np.float64) - zero_point)
        out(f"dequantized: {np.array2string(real.ravel(), precision=4, max_line_width=96)}")
        out(f"top index: {int(np.argmax(y.ravel()))}")
    if reference is not None:
        out(f"LiteRT reference kernels: {mismatches} mismatching elements over "
            f"{sum(r.output.size for r in runs):,} in {len(runs)} layer outputs")
    if output_path is not None:
        np.save(output_path, y)
        out(f"wrote {output_path}")
    if dump_dir is not None:
        directory = Path(dump_dir)
        directory.mkdir(parents=True, exist_ok=True)
        np.save(directory / "input.npy", x)
        for run in runs:
            np.save(directory / f"{run.op.name}.npy", run.output)
        out(f"wrote {len(runs) + 1} tensors to {directory}/")
    return mismatches
