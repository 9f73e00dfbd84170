"""``tessera run``: run a model on a backend, print its output and a per-layer summary.

``--backend golden`` runs the graph on the network-level golden models (``sw.golden``);
``--backend rtl`` compiles the model for the SoC (``sw.soc_image``), runs the image on the RTL
SoC in Verilator (``sw.soc_run``) and prints the per-layer table of cycles, utilisation and
DRAM bytes (measured on the bus, beside the compiler's prediction). Both take the same
arguments and write the same files (``--output``, ``--dump-layers``)."""

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


BACKENDS = ("golden", "rtl")


def run_model(model, backend="golden", input_path=None, output_path=None, dump_dir=None,
              seed=0, compare_litert=False, out=print, **rtl_options):
    """Run ``model`` once; returns the number of elements that differ from LiteRT (0 when not
    compared). Prints through ``out``. ``rtl_options`` go to :func:`run_model_rtl`."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
    if backend == "rtl":
        return run_model_rtl(model, input_path=input_path, output_path=output_path,
                             dump_dir=dump_dir, seed=seed, compare_litert=compare_litert,
                             out=out, **rtl_options)
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
    _save_outputs(out, x, y, {run.op.name: run.output for run in runs}, output_path, dump_dir)
    return mismatches


def _save_outputs(out, x, y, tensors, output_path, dump_dir):
    """Write the output (``--output``) and the input and every layer's output, by layer name
    (``--dump-layers``): the same files whatever the backend."""
    if output_path is not None:
        np.save(output_path, y)
        out(f"wrote {output_path}")
    if dump_dir is not None:
        directory = Path(dump_dir)
        directory.mkdir(parents=True, exist_ok=True)
        np.save(directory / "input.npy", x)
        for name, value in tensors.items():
            np.save(directory / f"{name}.npy", value)
        out(f"wrote {len(tensors) + 1} tensors to {directory}/")


def run_model_rtl(model, *, input_path=None, output_path=None, dump_dir=None, seed=0,
                  compare_litert=False, out=print, soc=None, pause=0.0, pause_seed=1,
                  plot=None, verbose=False, image_dir=None):
    """``tessera run MODEL --backend rtl``: compile (or load a compiled image directory),
    predict with the golden backend, run on the RTL SoC, print the per-layer table. Returns
    the LiteRT mismatches (0 when not compared). Raises ``sw.soc_run.RunError`` when the
    hardware reports an error."""
    import time

    from hls_ref.config import DEFAULT_SOC

    from .soc_image import compile_model, load_image
    from .soc_run import format_table, run_golden, run_rtl

    start = time.monotonic()
    if image_dir is not None or (isinstance(model, str) and Path(model).is_dir()):
        image = load_image(image_dir or model)
        out(f"loaded the compiled image {image_dir or model} ({image.model}); checksum ok")
    else:
        image = compile_model(model, soc or DEFAULT_SOC, reuse_buffers=False)
    graph = load_model(image.model)
    x, source = _load_input(graph, input_path, seed)
    prediction = run_golden(image, x, graph=graph)
    reference = None
    if compare_litert:
        from .litert import ReferenceRuntime

        reference = ReferenceRuntime(image.model)
        reference.run(x)
    layers = len(image.layers)

    def progress(layer):
        if layer and (verbose or layer == layers or layer % max(1, layers // 4) == 0):
            out(f"  simulating: layer {layer}/{layers} ({time.monotonic() - start:.0f} s)")

    run = run_rtl(image, x, pause=pause, seed=pause_seed, log=out, on_progress=progress)
    accels = ", ".join(f"{image.soc.label(k)}: "
                       f"{'+'.join(op.name.lower() for op in config.ops)} ({config.pes} PEs)"
                       for k, config in enumerate(image.soc.accelerators))
    out(f"model {image.model}: {layers} layers, input {graph.input.dtype} "
        f"{_shape(graph.input.shape)} ({source}), backend rtl: Minerva RV32IM + "
        f"{accels or 'no accelerator'}" + (f", memory back-pressure {pause}" if pause else ""))
    out(format_table(image, run, prediction=prediction, reference=reference))
    clock = image.soc.clock_hz
    acc_busy = sum(r.acc_cycles or 0 for r in run.records)
    cpu_cycles = sum(r.cycles for layer, r in zip(image.layers, run.records)
                     if layer.accelerator is None)
    macs = sum(layer.macs for layer in image.layers)
    ratio = f" (cycles / busy {run.cycles / acc_busy:.3f})" if acc_busy else ""
    out(f"total: {run.cycles:,} cycles ({run.cycles / clock * 1e3:.3f} ms at "
        f"{clock / 1e6:.0f} MHz), {macs / run.cycles:.2f} MACs/cycle; accelerators busy "
        f"{acc_busy:,} cycles{ratio}, processor layers {cpu_cycles:,} cycles, processor and "
        f"sequencing {run.cycles - acc_busy:,} cycles; image check "
        f"{run.check_cycles or 0:,} cycles")
    exact = [(r.bus_read, r.bus_written) == (p.bus_read, p.bus_written)
             for layer, r, p in zip(image.layers, run.records, prediction.records)
             if layer.accelerator is not None]
    if exact:
        out(f"DRAM bytes on the bus equal the compiler's prediction on {sum(exact)} of "
            f"{len(exact)} accelerator layers")
    out(f"simulation: {run.sim_cycles:,} cycles in {run.seconds:.1f} s "
        f"({run.sim_cycles / max(run.seconds, 1e-9) / 1e3:.0f} k cycles/s); wall "
        f"{time.monotonic() - start:.1f} s")
    y = run.output
    values = np.array2string(y.ravel(), max_line_width=96, threshold=32)
    out(f"output {graph.output.dtype} {_shape(y.shape)}: {values}")
    if y.size <= 64:
        out(f"top index: {int(np.argmax(y.ravel()))}")
    mismatches = 0
    if reference is not None:
        mismatches = sum(int(np.sum(np.asarray(t) != reference.tensor(name)))
                         for name, t in run.tensors.items())
        elements = sum(np.asarray(t).size for t in run.tensors.values())
        out(f"LiteRT reference kernels: {mismatches} mismatching elements over {elements:,} "
            f"in {len(run.tensors)} layer outputs")
    golden_mismatch = int(np.sum(prediction.output != y))
    if golden_mismatch:
        out(f"MISMATCH: {golden_mismatch} output elements differ from the golden backend")
    if plot is not None:
        from .soc_plot import plot_layers

        plot_layers(image, run, plot)
        out(f"wrote {plot}")
    by_layer = {layer.name: run.tensors[layer.output] for layer in image.layers
                if layer.output in run.tensors}
    _save_outputs(out, x, y, by_layer, output_path, dump_dir)
    return mismatches + golden_mismatch
