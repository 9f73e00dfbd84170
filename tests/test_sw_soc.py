"""Whole models on the SoC: the compiler's image (``sw.soc_image``), its golden execution and
the RTL SoC in Verilator (``sw.soc_run``), checked against LiteRT's reference kernels."""

import numpy as np
import pytest

from hls_ref import image as fmt
from hls_ref.config import CONV_SOC, DEFAULT_SOC, AcceleratorConfig, SocConfig
from hls_ref.descriptor import DESCRIPTOR_BYTES, Descriptor, ErrorCode
from sw import graph as g
from sw.compare import random_input
from sw.litert import ReferenceRuntime
from sw.soc_image import ImageError, compile_model, load_image
from sw.soc_run import RunError, run_golden, run_rtl
from sw.tflite_import import load_model

MODELS = ("resnet8", "dscnn", "vww", "autoencoder")


def _input(model, seed):
    graph = load_model(model)
    return graph, random_input(graph.input, np.random.default_rng(seed))


@pytest.mark.parametrize("model", MODELS)
def test_golden_execution_of_the_image_equals_litert_on_every_layer(model):
    """The default build's accelerator runs every layer but Softmax (the processor's) and
    Reshape (a view), and the image's golden execution equals LiteRT on every layer."""
    image = compile_model(model, DEFAULT_SOC, reuse_buffers=False)
    for layer in image.layers:
        if layer.op == fmt.LayerOp.SOFTMAX:
            assert (layer.engine, layer.reason) == (fmt.Engine.PROCESSOR, fmt.Reason.HOST_OP)
        elif layer.op == fmt.LayerOp.RESHAPE:
            assert (layer.engine, layer.reason) == (fmt.Engine.PROCESSOR, fmt.Reason.ALIAS)
        else:
            assert layer.engine == fmt.Engine.ACCEL0 and layer.desc_count > 0, layer.name
    graph, x = _input(model, 3)
    reference = ReferenceRuntime(model)
    reference.run(x)
    run = run_golden(image, x, graph=graph)
    assert len(run.tensors) == len(graph.ops)
    for name, tensor in run.tensors.items():
        assert np.array_equal(tensor, reference.tensor(name)), name
    assert np.array_equal(run.output, reference.tensor(graph.outputs[0]))


def test_engines_and_reasons_follow_the_build():
    image = compile_model("resnet8", CONV_SOC)
    engines = {layer.name: (layer.engine, layer.reason) for layer in image.layers}
    assert engines["01_conv_2d"] == (fmt.Engine.ACCEL0, fmt.Reason.NONE)
    assert engines["03_add"] == (fmt.Engine.PROCESSOR, fmt.Reason.NO_ACCELERATOR)
    assert engines["13_reshape"] == (fmt.Engine.PROCESSOR, fmt.Reason.ALIAS)
    assert engines["14_fully_connected"] == (fmt.Engine.PROCESSOR, fmt.Reason.NO_ACCELERATOR)
    assert engines["15_softmax"] == (fmt.Engine.PROCESSOR, fmt.Reason.HOST_OP)
    processor_only = compile_model("resnet8", SocConfig(accelerators=()))
    assert all(layer.engine == fmt.Engine.PROCESSOR for layer in processor_only.layers)
    assert processor_only.layers[0].why == "no conv2d datapath in this build"
    # a build with the per-channel datapath: its depthwise layers run on it
    perchannel = compile_model("dscnn", SocConfig(accelerators=(
        AcceleratorConfig(depthwise={}),)))
    depthwise = [layer for layer in perchannel.layers if layer.op == fmt.LayerOp.DEPTHWISE]
    assert depthwise and all(layer.engine == fmt.Engine.ACCEL0 for layer in depthwise)
    assert all(layer.desc_count > 0 for layer in depthwise)


def test_buffer_plan_reuses_memory_without_overlapping_live_tensors():
    image = compile_model("resnet8", DEFAULT_SOC)
    kept = compile_model("resnet8", DEFAULT_SOC, reuse_buffers=False)
    assert image.header["buffer_bytes"] < kept.header["buffer_bytes"]
    graph = load_model("resnet8")
    for i, op in enumerate(graph.ops):
        out = image.tensors[op.output]
        for name in op.inputs:
            if name in image.tensors and not (isinstance(op, g.Reshape)):
                src = image.tensors[name]
                disjoint = (src.addr + src.layout.bytes <= out.addr
                            or out.addr + out.layout.bytes <= src.addr)
                assert disjoint, f"layer {i}: {name} and {op.output} overlap"


def test_saved_image_round_trips_and_a_corrupted_one_is_refused(tmp_path):
    image = compile_model("dscnn", DEFAULT_SOC)
    image.save(tmp_path / "img")
    loaded = load_image(tmp_path / "img")
    assert loaded.data == image.data and loaded.layers == image.layers
    data = bytearray(image.data)
    data[len(data) // 2] ^= 0x10
    (tmp_path / "img" / "image.bin").write_bytes(bytes(data))
    with pytest.raises(ImageError, match=r"checksum does not match .*corrupted; refused"):
        load_image(tmp_path / "img")


def test_unsupported_layers_are_refused_before_anything_is_built():
    graph = load_model("resnet8")
    op = next(op for op in graph.ops if isinstance(op, g.Conv2D))
    op.dilation = (2, 2)
    with pytest.raises(ImageError, match=r"00_conv_2d: dilation \(2, 2\) is not supported"):
        compile_model(graph, DEFAULT_SOC)


# ---- the RTL SoC (Verilator) ----

@pytest.mark.cocotb
def test_dscnn_on_the_rtl_soc_is_bit_exact_with_litert():
    """The whole DS-CNN on the default SoC: the accelerator runs the convolutions (conv2d
    datapath), the depthwise layers and the pool (per-channel) and the FC layer, the
    processor the softmax; every layer's output equals LiteRT's reference kernels, and every
    accelerator layer moves exactly the bytes the compiler predicts on the external-memory
    bus."""
    image = compile_model("dscnn", DEFAULT_SOC, reuse_buffers=False)
    graph, x = _input("dscnn", 7)
    reference = ReferenceRuntime("dscnn")
    reference.run(x)
    prediction = run_golden(image, x, graph=graph)
    run = run_rtl(image, x)
    for name, tensor in run.tensors.items():
        assert np.array_equal(tensor, reference.tensor(name)), name
    ops = {layer.op for layer in image.layers if layer.accelerator is not None}
    assert ops == {fmt.LayerOp.CONV2D, fmt.LayerOp.DEPTHWISE, fmt.LayerOp.AVGPOOL, fmt.LayerOp.FC}
    for layer, measured, predicted in zip(image.layers, run.records, prediction.records):
        if layer.accelerator is not None:
            assert (measured.bus_read, measured.bus_written) == (
                predicted.bus_read, predicted.bus_written), layer.name
            assert (measured.acc_bytes_read, measured.acc_mac_cycles) == (
                predicted.acc_bytes_read, predicted.acc_mac_cycles), layer.name
            assert measured.tiles == layer.desc_count
    # a layer's cycles run from the previous layer's end to its own, so they add up to the
    # whole run; an accelerator layer's beyond the accelerator's busy cycles are the
    # firmware's (interrupt, status, the boundary's readings, the next start): about 70 when
    # measured, 550 for the first layer, more for a list shorter than the firmware's work
    assert sum(r.cycles for r in run.records) == run.cycles
    for layer, r in zip(image.layers, run.records):
        if layer.accelerator is not None:
            assert 0 < r.cycles - r.acc_cycles < 1000, (layer.name, r.cycles, r.acc_cycles)


def _with_bad_descriptor(image, layer_index, descriptor_index, **fields):
    """A copy of ``image`` whose descriptor is changed (checksum recomputed: an image compiled
    wrongly, not a corrupted file)."""
    layer = image.layers[layer_index]
    data = bytearray(image.data)
    offset = layer.desc_addr + descriptor_index * DESCRIPTOR_BYTES - fmt.IMAGE_BASE
    desc = Descriptor.from_bytes(bytes(data[offset:offset + DESCRIPTOR_BYTES]))
    import dataclasses

    data[offset:offset + DESCRIPTOR_BYTES] = dataclasses.replace(desc, **fields).to_bytes()
    a, b = fmt.fletcher64(data[fmt.CHECKSUM_FROM:image.header["data_bytes"]])
    header = dict(fmt.IMAGE_HEADER.unpack(data), checksum_a=a, checksum_b=b)
    data[:fmt.IMAGE_HEADER.size] = fmt.IMAGE_HEADER.pack(**header)
    return dataclasses.replace(image, data=bytes(data))


@pytest.mark.cocotb
def test_an_accelerator_error_names_the_layer_the_descriptor_and_the_code():
    """The failing list is the second layer's, which the firmware started at the first
    layer's end (before reading the first layer's counters)."""
    image = compile_model("dscnn", DEFAULT_SOC)
    assert [layer.accelerator for layer in image.layers[:2]] == [0, 0]
    bad = _with_bad_descriptor(image, 1, 3, kernel_h=0)
    _, x = _input("dscnn", 1)
    count = image.layers[1].desc_count  # the row stripes the compiler chose for the build
    assert count > 3
    with pytest.raises(RunError, match=r"^layer 01_depthwise_conv_2d: accelerator 0 stopped "
                                       rf"with error {int(ErrorCode.BAD_KERNEL)} "
                                       rf"\(BAD_KERNEL\) at descriptor 3 of {count}$"):
        run_rtl(bad, x)
    with pytest.raises(RunError,
                       match=rf"layer 01_depthwise_conv_2d: .* at descriptor 3 of {count}"):
        run_golden(bad, x)


@pytest.mark.cocotb
def test_the_firmware_refuses_a_corrupted_image():
    image = compile_model("dscnn", DEFAULT_SOC)
    data = bytearray(image.data)
    data[-100] ^= 1
    import dataclasses

    corrupted = dataclasses.replace(image, data=bytes(data))
    _, x = _input("dscnn", 1)
    with pytest.raises(RunError, match=r"BAD_CHECKSUM; UART: error: the image's checksum does "
                                       r"not match: refused"):
        run_rtl(corrupted, x)


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.parametrize("model", MODELS)
def test_every_model_on_the_rtl_soc_is_bit_exact_with_litert(model):
    image = compile_model(model, DEFAULT_SOC, reuse_buffers=False)
    for seed in (11, 12):
        _, x = _input(model, seed)
        reference = ReferenceRuntime(model)
        reference.run(x)
        run = run_rtl(image, x, pause=0.2 if seed == 12 else 0.0, seed=seed)
        for name, tensor in run.tensors.items():
            assert np.array_equal(tensor, reference.tensor(name)), (model, seed, name)
