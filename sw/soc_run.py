"""Run a compiled model image (``sw.soc_image``) on a backend and report it per layer.

* ``golden``: the image executed in Python, as the firmware walks it: accelerator layers on
  the socket golden model (``hls_ref.socket``: the descriptor lists, with the counters the
  hardware must reproduce), processor layers on the network-level golden models
  (``sw.golden``). Untimed; its byte counts are the compiler's prediction.
* ``rtl``: the SoC on Verilator (``sim.soc_sim``): the firmware (``firmware/``) boots, checks
  the image, starts each accelerator layer and waits for its interrupt, runs the processor
  layers in C, and records per layer the cycles, the accelerator's counters and the bytes
  the bus monitor saw on the external-memory port.

Both return a :class:`ModelRun` with the output, every layer's output tensor (when the image
keeps its buffers) and the per-layer records; :func:`format_table` prints them beside the
prediction and LiteRT's reference kernels.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from hls_ref import image as fmt
from hls_ref.descriptor import ErrorCode
from hls_ref.socket import SocketModel

from .soc_image import input_bytes

__all__ = ["LayerRecord", "ModelRun", "RunError", "format_table", "layer_multipliers",
           "layer_records", "run_golden", "run_rtl"]


class RunError(RuntimeError):
    """A run that did not complete: the message names the layer, the descriptor and the
    error code (accelerator errors), or what else went wrong."""

    def __init__(self, message, run=None):
        super().__init__(message)
        self.run = run


@dataclass
class LayerRecord:
    """What one layer did on a backend (None: not measured by this backend)."""

    cycles: int | None = None
    bus_read: int | None = None
    bus_written: int | None = None
    acc_cycles: int | None = None
    acc_mac_cycles: int | None = None
    acc_bytes_read: int | None = None
    acc_bytes_written: int | None = None
    tiles: int | None = None


@dataclass
class ModelRun:
    """The result of a run of an image."""

    backend: str
    output: np.ndarray
    tensors: dict                      # layer output name -> array (graph shape)
    records: list                      # LayerRecord per layer
    cycles: int | None = None          # the whole layer loop (rtl)
    check_cycles: int | None = None    # the firmware's checksum verification (rtl)
    sim_cycles: int | None = None      # every simulated cycle, boot included (rtl)
    seconds: float = 0.0               # wall time of the run itself
    uart: str = ""
    extra: dict = field(default_factory=dict)


def _to_graph_shape(values, info):
    return np.asarray(values, np.int64).reshape(info.shape).astype(np.int8)


def _decode(raw, info):
    """The tensor ``info`` from its bytes ``raw``, in the graph's shape."""
    beats = np.frombuffer(bytes(raw[:info.layout.bytes]), "<u8")
    return _to_graph_shape(info.layout.unpack(beats), info)


def _read_tensor(memory, info):
    return _decode(memory[info.addr:info.addr + info.layout.bytes], info)


def _layer_tensors(image, read):
    """Every layer output that still holds its values at the end of a run (all of them
    when the image does not reuse buffers; else the output only)."""
    names = [layer.output for layer in image.layers]
    if image.reuse_buffers:
        names = [image.output]
    return {name: read(image.tensors[name]) for name in names}


def _graph(image):
    from .tflite_import import load_model

    return load_model(image.model)


def run_golden(image, x, *, graph=None):
    """Execute ``image`` on input ``x`` in Python (see the module docstring)."""
    from .golden import prepare, run_op

    graph = graph or _graph(image)
    derived = prepare(graph)
    ops = {op.name: op for op in graph.ops}
    memory = np.zeros(image.header["results"] + image.results_bytes, np.uint8)
    memory[fmt.IMAGE_BASE:fmt.IMAGE_BASE + len(image.data)] = np.frombuffer(image.data, np.uint8)
    inp = image.tensors[image.input]
    raw = input_bytes(image, x)
    memory[inp.addr:inp.addr + len(raw)] = np.frombuffer(raw, np.uint8)
    records = []
    start = time.monotonic()
    for layer in image.layers:
        record = LayerRecord()
        if layer.accelerator is not None:
            config = image.soc.accelerators[layer.accelerator]
            status = SocketModel(config).run(memory, layer.desc_addr, layer.desc_count)
            record.acc_mac_cycles = status.mac_cycles
            record.acc_bytes_read = record.bus_read = status.bytes_read
            record.acc_bytes_written = record.bus_written = status.bytes_written
            record.tiles = status.tiles
            if status.error:
                raise RunError(_accelerator_error(layer, status.code, status.index))
        elif layer.reason != fmt.Reason.ALIAS:
            op = ops[layer.name]
            values = {name: _read_tensor(memory, image.tensors[name]) for name in layer.inputs}
            y = run_op(graph, op, values, derived)
            out = image.tensors[layer.output]
            hwc = np.asarray(y, np.int64).reshape(out.layout.height, out.layout.width,
                                                  out.layout.channels)
            raw = out.layout.pack(hwc).astype("<u8").tobytes()
            memory[out.addr:out.addr + len(raw)] = np.frombuffer(raw, np.uint8)
        records.append(record)
    seconds = time.monotonic() - start
    output = _read_tensor(memory, image.tensors[image.output])
    tensors = _layer_tensors(image, lambda info: _read_tensor(memory, info))
    return ModelRun("golden", output, tensors, records, seconds=seconds)


def _accelerator_error(layer, code, index):
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = "unknown"
    return (f"layer {layer.name}: accelerator {layer.accelerator} stopped with error "
            f"{code} ({name}) at descriptor {index} of {layer.desc_count}")


#: Firmware run options (``RunBlock.flags``).
VERIFY_CHECKSUM, PRINT_LAYERS = 1, 2
#: The UART divisor the firmware sets in simulation (fast enough to print a line per layer).
SIM_UART_DIVISOR = 8


def run_rtl(image, x, *, pause=0.0, seed=1, latency=2, verify=True, print_layers=False,
            max_cycles=2_000_000_000, log=None, on_progress=None, faults=()):
    """Run ``image`` on input ``x`` on the SoC in Verilator (see the module docstring).

    ``pause``/``seed``: random back-pressure of the memory model (probability per cycle and
    channel); ``latency``: its response latency in cycles; ``verify``: the firmware checks the
    image's checksum first; ``faults``: bus address ranges answering with an error response.
    Raises :class:`RunError` if the firmware reports an error (layer, descriptor, code)."""
    from sim.soc_sim import boot_block, build_simulator, run_soc

    from .firmware import build_firmware

    soc = image.soc
    firmware = build_firmware(soc, "main", log=log)
    binary = build_simulator(soc, log=log)
    flags = (VERIFY_CHECKSUM if verify else 0) | (PRINT_LAYERS if print_layers else 0)
    run_block = fmt.RUN_BLOCK_STRUCT.pack(magic=fmt.RUN_MAGIC, uart_divisor=SIM_UART_DIVISOR,
                                          flags=flags)
    inp = image.tensors[image.input]
    loads = [(0, boot_block(firmware.read_bytes())), (fmt.RUN_BLOCK, run_block),
             (fmt.IMAGE_BASE, image.data), (inp.addr, input_bytes(image, x))]
    buffers = image.header["buffers"]
    dumps = {"buffers": (buffers, image.header["buffer_bytes"]),
             "results": (image.header["results"], image.results_bytes)}
    if log:
        log(f"running {image.model} on the RTL SoC (Verilator)")
    run = run_soc(binary, loads, dumps=dumps, soc=soc, divisor=SIM_UART_DIVISOR,
                  max_cycles=max_cycles, latency=latency, pause=pause, seed=seed,
                  faults=faults, on_progress=on_progress)
    record, results = image.layer_results(run.dumps["results"])

    def read(info):
        return _decode(run.dumps["buffers"][info.addr - buffers:], info)

    records = layer_records(image, results)
    model_run = ModelRun("rtl", None, {}, records, cycles=record["cycles"],
                         check_cycles=record["check_cycles"] if verify else None,
                         sim_cycles=run.cycles, seconds=run.seconds, uart=run.uart)
    if run.timeout:
        raise RunError(f"the run did not finish within {max_cycles:,} cycles (layer "
                       f"{record['layer']}); UART: {run.uart.strip()}", model_run)
    status = fmt.RunStatus(record["status"]) if record["done"] else None
    if status is None or run.exit_code != 0:
        if status == fmt.RunStatus.ACCEL_ERROR:
            layer = image.layers[record["layer"]]
            raise RunError(_accelerator_error(layer, record["code"], record["index"]), model_run)
        what = status.name if status is not None else f"exit code {run.exit_code:#x}"
        raise RunError(f"the firmware stopped: {what}; UART: {run.uart.strip()}", model_run)
    model_run.output = read(image.tensors[image.output])
    model_run.tensors = _layer_tensors(image, read)
    return model_run


def layer_records(image, results):
    """The :class:`LayerRecord` of each layer from the firmware's results
    (``image.layer_results``); a processor layer has no accelerator counters."""
    records = [LayerRecord(**{k: r[k] for k in ("cycles", "bus_read", "bus_written",
                                                "acc_cycles", "acc_mac_cycles",
                                                "acc_bytes_read", "acc_bytes_written",
                                                "tiles")})
               for r in results]
    for layer, rec in zip(image.layers, records):
        if layer.accelerator is None:
            rec.acc_cycles = rec.acc_mac_cycles = rec.acc_bytes_read = None
            rec.acc_bytes_written = rec.tiles = None
    return records


def _fmt(value, width=0):
    return "—" if value is None else f"{value:,}"


def layer_multipliers(image, layer):
    """Products per cycle of the datapath that runs accelerator layer ``layer`` of ``image``
    at a8w8 (its ST multipliers, two products each): the denominator of its utilisation."""
    config = image.soc.accelerators[layer.accelerator]
    return 2 * config.multipliers(fmt.ACCELERATOR_FOR[layer.op])


def format_table(image, run, *, prediction=None, reference=None, graph=None):
    """The per-layer table (Markdown) of ``run``; ``prediction`` is the golden backend's run
    of the same image (its bytes are the compiler's prediction), ``reference`` a
    ``sw.litert.ReferenceRuntime`` that ran the same input (mismatching elements per layer)."""
    header = ["#", "layer", "op", "engine", "cycles", "MACs", "utilisation",
              "DRAM read B (bus)", "predicted", "DRAM written B (bus)", "predicted"]
    if reference is not None:
        header.append("LiteRT mismatches")
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if h not in ("layer", "op", "engine") else "---"
                            for h in header) + "|"]
    for i, (layer, rec) in enumerate(zip(image.layers, run.records)):
        if layer.accelerator is not None:
            engine = image.soc.label(layer.accelerator)
            units = layer_multipliers(image, layer)
            util = (f"{layer.macs / (rec.cycles * units):.1%}"
                    if rec.cycles and units and layer.macs else "—")
        else:
            engine = "cpu" if layer.reason != fmt.Reason.ALIAS else "—"
            util = "—"
        pred = prediction.records[i] if prediction is not None else LayerRecord()
        row = [str(i), layer.name, layer.op.name.lower(), engine, _fmt(rec.cycles),
               f"{layer.macs:,}", util, _fmt(rec.bus_read), _fmt(pred.bus_read),
               _fmt(rec.bus_written), _fmt(pred.bus_written)]
        if reference is not None:
            want = reference.tensor(layer.output)
            got = run.tensors.get(layer.output)
            row.append("—" if got is None else str(int(np.sum(np.asarray(got) != want))))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)
