"""The network input unfolded for its first convolution (``sw.unfold``): the unfolded 1x1
layer computes the layer's output bytes exactly (random layers: kernels, strides, padding,
groups, precisions), through the accelerator's golden model in fewer operand cycles; the
choice declines where it does not pay; the model image writes, runs and saves the unfolded
input (the whole network still equal to the golden graph, itself LiteRT-exact)."""

import numpy as np
import pytest

from hls_ref import Precision
from hls_ref.config import DEFAULT_CONFIG
from hls_ref.formats import TensorLayout
from hls_ref.invocation import Command
from sw.fixtures import random_conv
from sw.program import conv2d_program
from sw.unfold import InputUnfold, _same_bytes, choose_unfold, operand_cycles

CASES = [  # (size, cin, cout, kernel, stride, padding, group)
    ((9, 10), 3, 16, (3, 3), (1, 1), (1, 1, 1, 1), 1),
    ((12, 8), 3, 8, (3, 3), (2, 2), (0, 1, 0, 1), 2),
    ((11, 10), 1, 20, (5, 4), (2, 2), (2, 2, 1, 1), 1),
    ((7, 12), 2, 4, (3, 2), (1, 1), (1, 1, 0, 1), 4),
    ((6, 9), 3, 5, (2, 3), (1, 3), (0, 1, 2, 0), 1),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("precision", [Precision.A8W8, Precision.A8W4, Precision.A16W8],
                         ids=lambda p: p.label)
def test_unfolded_layer_writes_the_layers_output_bytes(case, precision):
    size, cin, cout, kernel, stride, pad, group = CASES[case]
    rng = np.random.default_rng([case, precision.value])
    print(f"case {case}, {precision.label}")
    x, weights, qb, cmd, want = random_conv(rng, precision, 8, cin=cin, cout=cout,
                                            kernel=kernel, size=size, stride=stride, pad=pad)
    unfold = InputUnfold(x.shape, kernel, stride, pad, int(cmd.pad_value), group)
    ho, wo = unfold.out_hw
    assert want.shape == (ho, wo, cout) and wo % group == 0
    xu = unfold.apply(x)
    assert xu.shape == unfold.shape == (ho, wo // group, kernel[0] * unfold.window_w * cin)
    program = conv2d_program(xu, unfold.weights(weights), unfold.qblock(qb),
                             unfold.command(cmd), row_splits=(2,),
                             out_splits=range(8, group * cout, 8))
    assert all((d.kernel_h, d.kernel_w) == (1, 1) for d in program.descriptors)
    memory, status = program.run_golden()
    assert status.done and not status.error, status
    got = program.output(memory)
    assert got.shape == unfold.out_shape(cout)
    np.testing.assert_array_equal(got.reshape(ho, wo, cout), want)
    # the same bytes as the layer's output tensor
    assert _same_bytes((ho, wo), cout, group, 8)
    written = memory[program.out_addr:program.out_addr + program.out_layout.bytes]
    assert written.tobytes() == TensorLayout(ho, wo, cout, 8).pack(want).astype("<u8").tobytes()


def test_unfold_round_trips_through_its_dictionary():
    unfold = InputUnfold((96, 96, 3), (3, 3), (2, 2), (0, 1, 0, 1), -128, 2)
    assert InputUnfold.from_dict(unfold.as_dict()) == unfold


def test_choice_follows_operand_cycles():
    """The MLPerf Tiny first layers' shapes on 16 PEs: ResNet-8 (3 channels, 16 out) and
    DS-CNN (1 channel, 64 out) unfold alone, VWW (3 channels, 8 out) in pairs of pixels; a
    3x3 layer of 8 channels into 16 (full ST words), or a pointwise one, stays as it is."""
    def choose(shape, cout, kernel, stride, pad, pes=16):
        cmd = Command(Precision.A8W8, 8, kernel, stride, pad, -128)
        return choose_unfold(cmd, shape, cout, pes)

    resnet = choose((32, 32, 3), 16, (3, 3), (1, 1), (1, 1, 1, 1))
    assert (resnet.group, resnet.shape) == (1, (32, 32, 27))
    dscnn = choose((49, 10, 1), 64, (10, 4), (2, 2), (4, 5, 1, 1))
    assert (dscnn.group, dscnn.shape) == (1, (25, 5, 40))
    vww = choose((96, 96, 3), 8, (3, 3), (2, 2), (0, 1, 0, 1))
    assert (vww.group, vww.shape) == (2, (48, 24, 45))
    cmd = Command(Precision.A8W8, 8, (3, 3), (2, 2), (0, 1, 0, 1), -128)
    # operand cycles: 48 x 48 pixels x 9 taps x 2 words, against 48 x 24 x 23 words
    assert operand_cycles(cmd, (96, 96, 3), 8, 16) == 41_472
    assert choose((16, 16, 8), 16, (3, 3), (1, 1), (1, 1, 1, 1)) is None
    assert choose((16, 16, 3), 16, (1, 1), (1, 1), (0, 0, 0, 0)) is None
    # an output with channel filler (12 of 16) unfolds alone; 6 outputs cannot be paired
    # (6 and 12 channels: 8 and 16 bytes a pixel) and unfold alone as well
    assert choose((32, 32, 3), 12, (3, 3), (1, 1), (1, 1, 1, 1)).group == 1
    assert not _same_bytes((32, 32), 6, 2, 8) and _same_bytes((32, 32), 8, 2, 8)
    assert choose((32, 32, 3), 6, (3, 3), (1, 1), (1, 1, 1, 1)).group == 1
    with pytest.raises(ValueError, match="group 3 does not divide the 32 output columns"):
        InputUnfold((32, 32, 3), (3, 3), (1, 1), (1, 1, 1, 1), 0, 3)
    # on 64 PEs the groups that do not divide the output columns are passed over (ResNet-8:
    # 3 of 1-4; VWW: 5 and 7 of 1-8)
    assert choose((32, 32, 3), 16, (3, 3), (1, 1), (1, 1, 1, 1), pes=64).group == 4
    assert choose((96, 96, 3), 8, (3, 3), (2, 2), (0, 1, 0, 1), pes=64).group == 8


@pytest.mark.parametrize("model", ["resnet8", "vww"])
def test_model_image_writes_and_runs_the_unfolded_input(model, tmp_path):
    from sw.golden import run_graph
    from sw.soc_image import compile_model, input_bytes, load_image
    from sw.soc_run import run_golden
    from sw.tflite_import import load_model

    graph = load_model(model)
    image = compile_model(model)
    info = image.tensors[image.input]
    assert info.unfold is not None and info.layout.channels == info.unfold.shape[2]
    first = image.layers[0]
    assert first.accelerator is not None and first.tiling.endswith(
        f"{info.unfold.shape[2]} in")
    x = np.random.default_rng(3).integers(-128, 128, graph.input.shape).astype(np.int8)
    raw = input_bytes(image, x)
    assert len(raw) == info.layout.bytes > int(np.prod(graph.input.shape))
    run = run_golden(image, x, graph=graph)
    np.testing.assert_array_equal(run.output, run_graph(graph, x)[0])
    # the host side reads the unfolding back from the saved image
    loaded = load_image(image.save(tmp_path / model))
    assert loaded.tensors[image.input].unfold == info.unfold
    assert input_bytes(loaded, x) == raw


def test_builds_without_a_conv2d_datapath_keep_the_input(tmp_path, capsys):
    """No conv2d accelerator for the first layer: the input stays HWC; with one, ``tessera
    compile`` says how the input is to be written."""
    from hls_ref.config import SocConfig
    from sw.cli import main
    from sw.soc_image import compile_model

    image = compile_model("resnet8", SocConfig(accelerators=()))
    assert image.tensors[image.input].unfold is None
    assert image.tensors[image.input].layout.bytes == 32 * 32 * 4
    assert main(["compile", "resnet8", "-o", str(tmp_path)]) == 0
    assert ("written unfolded for its convolution (32 x 32 x 27, 32,768 bytes"
            in capsys.readouterr().out)


def test_first_layer_programs_count_the_layers_macs():
    """VWW's unfolded first layer (pairs of pixels: half its products weigh zero) counts the
    layer's MACs, and writes the layer's output."""
    from sw.fixtures import model_conv_programs

    name, program, _, want = model_conv_programs("vww", DEFAULT_CONFIG)[0]
    assert name == "00_conv_2d unfolded"
    assert program.macs == 48 * 48 * 3 * 3 * 3 * 8
    memory, status = program.run_golden()
    assert status.done and not status.error
    np.testing.assert_array_equal(program.output(memory), want)


def test_only_a_lone_convolution_reads_the_input_unfolded():
    """The network input's one reader, a Conv2D: ResNet-8's first layer; not when a second
    layer reads the input too, nor when the input is also a graph output."""
    import dataclasses

    from sw.tflite_import import load_model
    from sw.unfold import input_reader

    graph = load_model("resnet8")
    assert input_reader(graph) is graph.ops[0]
    second = dataclasses.replace(graph.ops[1], inputs=(graph.inputs[0], *graph.ops[1].inputs[1:]))
    assert input_reader(dataclasses.replace(graph, ops=[graph.ops[0], second])) is None
    assert input_reader(dataclasses.replace(graph, outputs=graph.inputs)) is None
