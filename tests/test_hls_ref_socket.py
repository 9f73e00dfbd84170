"""The descriptor format and the socket golden model: descriptor lists built by
``sw.program`` compute the layer exactly, touch nothing outside their output region, and stop
with the documented error code on every invalid field or bus error."""

from dataclasses import replace

import numpy as np
import pytest

from hls_ref import Precision
from hls_ref.config import DEFAULT_CONFIG, FC_CONFIG, ICE40_CONFIG, AcceleratorConfig
from hls_ref.descriptor import (
    DESCRIPTOR_BYTES,
    FIELDS,
    Descriptor,
    ErrorCode,
    check,
)
from hls_ref.dma import DmaRequest, dma_request
from hls_ref.formats import TensorLayout
from hls_ref.invocation import Command
from hls_ref.registers import MAGIC, Access, register_map
from hls_ref.socket import SocketModel, load_requests
from sw.fixtures import random_conv, random_splits
from sw.program import ProgramError, conv2d_program


def changed_outside(before, after, program):
    """Byte addresses outside the output region that the run changed."""
    addr, size = program.regions["output"]
    diff = np.flatnonzero(before != after)
    return diff[(diff < addr) | (diff >= addr + size)]


# --- the descriptor format ------------------------------------------------------------------

def test_descriptor_round_trip_and_field_widths():
    rng = np.random.default_rng(1)
    for _ in range(200):
        values = {}
        for name, _, _, width, is_signed, _ in FIELDS:
            lo = -(1 << (width - 1)) if is_signed else 0
            values[name] = int(rng.integers(lo, lo + (1 << width)))
        d = Descriptor(**values)
        assert Descriptor.from_bytes(d.to_bytes()) == d
        assert len(d.to_bytes()) == DESCRIPTOR_BYTES
    with pytest.raises(ValueError, match=r"^descriptor field kernel_h = 16 does not fit "
                                         r"unsigned 4 bits$"):
        Descriptor(kernel_h=16)
    # fields do not overlap
    used = {}
    for name, beat, lsb, width, _, _ in FIELDS:
        for bit in range(lsb, lsb + width):
            assert (beat, bit) not in used, (name, used.get((beat, bit)))
            used[beat, bit] = name


def test_register_map_from_config():
    regs = register_map(ICE40_CONFIG)
    assert regs["ID"].reset_value == MAGIC
    assert regs["PES"].reset_value == 4
    assert regs.decode("GEOMETRY", regs["GEOMETRY"].reset_value) == {
        "max_kernel_h": 10, "max_kernel_w": 10, "max_stride": 2, "banks": 2}
    assert regs["PRECISIONS"].reset_value == 0b11111
    assert regs["STATUS"].field("done").access is Access.W1C
    assert regs.encode("CTRL", start=1, irq_enable=1) == 0x101
    assert "`0x044` | `STATUS`" in regs.markdown()


def test_register_map_fc_constants():
    """A host reads the FC datapath's shape from the build; a build without it reads 0."""
    fc = FC_CONFIG.fc
    regs = register_map(FC_CONFIG)
    assert regs.decode("FC_SHAPE", regs["FC_SHAPE"].reset_value) == {
        "pes": fc.pes, "st_units": fc.st_units, "max_batch": fc.max_batch,
        "codes": sum(1 << p.value for p in fc.precisions)}
    assert regs["FC_PLM_IN_WORDS"].reset_value == fc.plm_in_words
    assert regs["FC_PLM_ACC_WORDS"].reset_value == fc.acc_words
    assert regs["FC_MAX_OUTPUTS"].reset_value == 256
    assert regs["PES"].reset_value == (FC_CONFIG.pes if FC_CONFIG.conv else 0)
    wide = AcceleratorConfig.from_dict(FC_CONFIG.as_dict() | {
        "fc": fc.as_dict() | {"pes": 8, "st_units": 4, "max_batch": 4, "plm_in_words": 1024}})
    assert register_map(wide).decode("FC_SHAPE", register_map(wide)["FC_SHAPE"].reset_value)[
        "st_units"] == 4
    plain = register_map(ICE40_CONFIG)
    assert ICE40_CONFIG.fc is None
    for name in ("FC_SHAPE", "FC_PLM_IN_WORDS", "FC_PLM_ACC_WORDS", "FC_MAX_OUTPUTS"):
        assert plain[name].reset_value == 0


# --- descriptor lists compute the layer -----------------------------------------------------

@pytest.mark.parametrize("config", [DEFAULT_CONFIG, ICE40_CONFIG], ids=["p16", "p4"])
@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
@pytest.mark.parametrize("out_bits", [4, 8, 16])
def test_random_tiled_layers_are_exact(config, precision, out_bits):
    rng = np.random.default_rng([precision.value, out_bits, config.pes])
    for trial in range(4):
        x, weights, qb, cmd, want = random_conv(rng, precision, out_bits)
        cout, cin = weights.shape[0], weights.shape[3]
        # output blocks must start on a byte of the output tensor
        step = config.pes if (config.pes * out_bits) % 8 == 0 else 2 * config.pes
        program = conv2d_program(
            x, weights, qb, cmd, config,
            out_splits=random_splits(rng, cout, step),
            row_splits=random_splits(rng, want.shape[0]),
            in_splits=random_splits(rng, cin, precision.lanes), seed=trial)
        memory, status = program.run_golden()
        assert status.done and not status.error, status
        assert status.tiles == program.count
        np.testing.assert_array_equal(program.output(memory), want)
        assert not len(changed_outside(program.memory, memory, program))


@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
def test_strided_pointwise_layers_load_only_the_pixels_used(precision):
    """A 1x1 convolution of stride 2 without padding is addressed as a stride-1 one over the
    input's subsampled view: exact, and it reads a quarter of the input the strided
    descriptors read (every other row and pixel)."""
    rng = np.random.default_rng([precision.value, 11])
    cin = 4 * precision.lanes            # whole 16-bit words per pixel
    for stride, size in (((2, 2), (9, 12)), ((2, 1), (8, 5)), ((1, 2), (3, 7))):
        x, weights, qb, cmd, want = random_conv(rng, precision, 8, cin=cin, cout=20,
                                                kernel=(1, 1), size=size, stride=stride,
                                                pad=(0, 0, 0, 0))
        program = conv2d_program(x, weights, qb, cmd, row_splits=(2,),
                                 in_splits=(2 * precision.lanes,))
        assert all((d.stride_h, d.stride_w) == (1, 1) for d in program.descriptors)
        memory, status = program.run_golden()
        assert status.done and not status.error, status
        np.testing.assert_array_equal(program.output(memory), want)
        assert not len(changed_outside(program.memory, memory, program))
        # the input bytes the same commands would load with the layer's stride over whole
        # rows of the input
        h, w = size

        def input_bytes(d, config=program.config):
            x_req = load_requests(d, config)[0]
            return x_req.seg_bytes * x_req.inner_count * x_req.outer_count

        view = sum(input_bytes(d) for d in program.descriptors)
        strided = sum(input_bytes(replace(
            d, stride_h=stride[0], stride_w=stride[1], in_w=w,
            in_h=(d.in_h - 1) * stride[0] + 1, in_row_stride=d.in_row_stride // stride[0],
            in_pixel_stride=d.in_pixel_stride // stride[1])) for d in program.descriptors)
        used = -(-h // stride[0]) * -(-w // stride[1]) * cin * precision.act_bits // 8
        assert view == used * 2           # two output-channel blocks of 16 PEs
        assert strided > view


@pytest.mark.parametrize("precision", [Precision.A8W8, Precision.A8W4, Precision.A4W4],
                         ids=lambda p: p.label)
def test_narrow_inputs_pair_kernel_taps(precision):
    """A layer whose narrow input pixels fill an ST word two at a time (one channel at 8
    bits, two at 4 bits) and whose horizontal stride is a multiple of two is
    addressed through its tap-paired view: exact (padding on both sides, any lead), and
    fewer operand cycles per output pixel than pixel by pixel."""
    from sw.program import compiler_program, pair_view

    rng = np.random.default_rng([precision.value, 27])
    cin = 2 if precision is Precision.A4W4 else 1     # two pixels per ST word
    cases = [((10, 4), (2, 2), (4, 5, 1, 1), (13, 8)),
             ((3, 3), (1, 2), (1, 1, 0, 2), (6, 4)),
             ((2, 5), (1, 2), (0, 1, 3, 4), (5, 6))]
    for kernel, stride, pad, size in cases:
        x, weights, qb, cmd, want = random_conv(rng, precision, 8, cin=cin, cout=20,
                                                kernel=kernel, size=size, stride=stride,
                                                pad=pad)
        view = pair_view(cmd, TensorLayout(*size, cin, precision.act_bits))
        assert view is not None, (kernel, stride, pad)
        program = conv2d_program(x, weights, qb, cmd, row_splits=(2,))
        assert all(d.kernel_w == view.kernel_w < kernel[1] for d in program.descriptors)
        memory, status = program.run_golden()
        assert status.done and not status.error, status
        np.testing.assert_array_equal(program.output(memory), want)
        assert not len(changed_outside(program.memory, memory, program))
        plain = conv2d_program(x, weights, qb, cmd, row_splits=(2,), pair_taps=False)
        assert plain.run_golden()[1].mac_cycles > status.mac_cycles
        # the compiler tiles the view
        program, _ = compiler_program(x, weights, qb, cmd)
        assert all(d.kernel_w == view.kernel_w for d in program.descriptors)
        memory, status = program.run_golden()
        np.testing.assert_array_equal(program.output(memory), want)


def test_pair_view_refuses_what_it_cannot_address():
    """No view where it would not pay or cannot be addressed: whole-word pixels, an odd
    stride or width, a one-column kernel, four 4-bit pixels per word (a stride of 4)."""
    from sw.program import pair_view

    def view(cin, kernel, stride, pad, w, precision=Precision.A8W8):
        cmd = Command(precision, 8, kernel, stride, pad, 0)
        return pair_view(cmd, TensorLayout(8, w, cin, precision.act_bits))

    assert view(1, (3, 4), (2, 2), (1, 1, 1, 1), 10) is not None
    assert view(2, (3, 4), (2, 2), (1, 1, 1, 1), 10) is None       # a whole word per pixel
    assert view(1, (3, 4), (2, 1), (1, 1, 1, 1), 10) is None       # odd stride
    assert view(1, (3, 4), (2, 2), (1, 1, 1, 1), 11) is None       # odd width
    assert view(1, (3, 1), (2, 2), (1, 1, 0, 0), 10) is None       # one column: no gain
    assert view(1, (3, 4), (2, 2), (1, 1, 1, 1), 12, Precision.A4W4) is None


def test_narrow_inputs_and_byte_rounded_rows():
    """One- and two-channel inputs below 16 bits (pixels narrower than an ST word) and 4-bit
    one-channel outputs (half-byte pixels, rows rounded to whole bytes)."""
    rng = np.random.default_rng(7)
    for precision, cin, cout, out_bits in [(Precision.A8W8, 1, 5, 8), (Precision.A4W4, 1, 1, 4),
                                           (Precision.A4W4, 2, 3, 4), (Precision.A8W4, 1, 1, 4)]:
        x, weights, qb, cmd, want = random_conv(rng, precision, out_bits, cin=cin, cout=cout,
                                                size=(7, 9), kernel=(3, 2), stride=(1, 2))
        program = conv2d_program(x, weights, qb, cmd, row_splits=(2,))
        memory, status = program.run_golden()
        assert status.done, status
        np.testing.assert_array_equal(program.output(memory), want)
        assert not len(changed_outside(program.memory, memory, program))


def test_relu_flag_clamps_at_the_output_zero_point():
    rng = np.random.default_rng(3)
    x, weights, qb, cmd, want = random_conv(rng, Precision.A8W8, 8)
    memory, _ = conv2d_program(x, weights, qb, cmd, relu=True).run_golden()
    got = conv2d_program(x, weights, qb, cmd).output(memory)
    np.testing.assert_array_equal(got, np.maximum(want, qb.zero_point))


def test_real_resnet8_layers_match_litert():
    from sw.golden import run_graph
    from sw.lowering import lower_layer
    from sw.tflite_import import load_model

    graph = load_model("resnet8")
    x = np.random.default_rng(4).integers(-128, 128, graph.input.shape).astype(np.int8)
    _, runs = run_graph(graph, x)
    values = {graph.input.name: x} | {r.op.output: r.output for r in runs}
    convs = [op for op in graph.ops if op.kind == "conv2d"]
    assert len(convs) >= 7
    for op in convs:
        layer = lower_layer(graph, op)
        inp = np.asarray(values[op.inputs[0]])[0]
        program = conv2d_program(inp, layer.weights, layer.qblock, layer.command,
                                 row_splits=range(8, values[op.output].shape[1], 8))
        memory, status = program.run_golden()
        assert status.done, (op.name, status)
        np.testing.assert_array_equal(program.output(memory), values[op.output][0], op.name)


# --- errors ---------------------------------------------------------------------------------

def _two_command_program():
    rng = np.random.default_rng(11)
    x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, 8, cin=4, cout=8, kernel=(3, 3),
                                         size=(8, 8), stride=(1, 1), pad=(1, 1, 1, 1))
    return conv2d_program(x, weights, qb, cmd, row_splits=(4,))


INVALID = {
    ErrorCode.BAD_OP: dict(op=0),
    ErrorCode.BAD_PRECISION: dict(precision=7),
    ErrorCode.BAD_OUT_WIDTH: dict(out_width=3),
    ErrorCode.ZERO_DIM: dict(in_c=0),
    ErrorCode.BAD_KERNEL: dict(kernel_w=11),
    ErrorCode.BAD_STRIDE: dict(stride_h=3),
    ErrorCode.BAD_PADDING: dict(pad_left=3),
    ErrorCode.TOO_MANY_CHANNELS: dict(out_c=17),
    ErrorCode.ROW_TOO_WIDE: dict(in_w=2049),
    ErrorCode.TILE_TOO_SMALL: dict(in_h=1, pad_top=0, pad_bottom=0),
    ErrorCode.INPUT_TOO_LARGE: dict(in_h=2000, in_w=2000),
    ErrorCode.WEIGHTS_TOO_LARGE: dict(in_c=400),
    ErrorCode.OUTPUT_TOO_LARGE: dict(in_w=600),
    ErrorCode.BAD_LAYOUT: dict(in_addr=0x1001),
    ErrorCode.ACC_STATE: dict(acc_flag=1, in_h=4),   # 3 output rows, not 4
}


@pytest.mark.parametrize("code", list(INVALID), ids=lambda c: c.name)
def test_invalid_descriptor_stops_the_list_without_writing(code):
    program = _two_command_program()
    bad = replace(program.descriptors[1], **INVALID[code])
    assert check(bad, DEFAULT_CONFIG, acc_shape=None) == code
    addr = program.desc_addr + DESCRIPTOR_BYTES
    program.memory[addr:addr + DESCRIPTOR_BYTES] = np.frombuffer(bad.to_bytes(), np.uint8)
    memory, status = program.run_golden()
    assert status.error and not status.done
    assert (status.code, status.index, status.progress) == (code, 1, 1)
    # the first command stored its rows; the failing one wrote nothing
    assert [i for i, _ in status.outputs] == [0]
    good, _ = _two_command_program().run_golden()
    out_addr, size = program.regions["output"]
    half = program.descriptors[1].out_addr
    np.testing.assert_array_equal(memory[out_addr:half], good[out_addr:half])
    np.testing.assert_array_equal(memory[half:out_addr + size],
                                  program.memory[half:out_addr + size])
    # the model accepts the next list
    _, status2 = _two_command_program().run_golden()
    assert status2.done


def test_layout_rules():
    program = _two_command_program()
    d = program.descriptors[0]
    for change in (dict(in_pixel_stride=3), dict(in_c=9), dict(w_addr=d.w_addr + 4),
                   dict(q_addr=d.q_addr + 2), dict(out_seg=9), dict(out_c=8, out_seg=4),
                   dict(in_row_stride=d.in_row_stride + 1)):
        assert check(replace(d, **change), DEFAULT_CONFIG) == ErrorCode.BAD_LAYOUT, change
    assert check(d, DEFAULT_CONFIG) == ErrorCode.NONE
    narrow = replace(d, precision=Precision.A4W4.value, in_c=1, in_pixel_stride=1)
    assert check(narrow, DEFAULT_CONFIG) == ErrorCode.NONE
    assert check(replace(narrow, in_addr=d.in_addr + 2), DEFAULT_CONFIG) == ErrorCode.BAD_LAYOUT
    small = AcceleratorConfig(precisions=("a8w8",))
    assert check(replace(d, precision=Precision.A4W4.value), small) == ErrorCode.BAD_PRECISION


def test_bad_quantization_block_and_bus_errors():
    program = _two_command_program()
    q = program.descriptors[1].q_addr
    bad = program.memory.copy()
    bad[q + 7] ^= 1                                   # channel count in the header
    _, status = _run(program, bad)
    assert (status.code, status.index) == (ErrorCode.BAD_QBLOCK, 0)
    w = program.descriptors[1].w_addr
    _, status = program.run_golden(faults=[(w + 8, w + 9)])
    assert (status.code, status.index) == (ErrorCode.AXI_READ, 0)
    d1 = program.desc_addr + DESCRIPTOR_BYTES
    _, status = program.run_golden(faults=[(d1, d1 + 1)])
    assert (status.code, status.index) == (ErrorCode.AXI_READ, 1)
    o = program.descriptors[1].out_addr
    _, status = program.run_golden(faults=[(o, o + 1)])
    assert (status.code, status.index) == (ErrorCode.AXI_WRITE, 1)


def _run(program, memory):
    memory = memory.copy()
    status = SocketModel(program.config).run(memory, program.desc_addr, program.count)
    return memory, status


def test_program_refuses_unaddressable_tiles():
    rng = np.random.default_rng(5)
    x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, 8, cin=8)
    with pytest.raises(ProgramError, match="multiples of 2 channels at a8w8"):
        conv2d_program(x, weights, qb, cmd, in_splits=(3,))


# --- DMA requests and counters --------------------------------------------------------------

def test_dma_request_merges_contiguous_segments():
    assert dma_request(64, 16, 10, 16, 4, 160) == DmaRequest(64, 640)
    assert dma_request(64, 16, 10, 32, 4, 320) == DmaRequest(64, 16, 10, 32, 4, 320)
    assert dma_request(64, 16, 10, 16, 4, 168) == DmaRequest(64, 160, 1, 0, 4, 168)
    assert len(DmaRequest(6, 4).beats()) == 2 and len(DmaRequest(0, 8, 3, 12).beats()) == 4
    # a merge never exceeds the 16-bit segment length
    assert dma_request(0, 40000, 2, 40000, 1, 0).inner_count == 2


def test_beat_count_is_the_number_of_beats():
    """``beat_count`` (the counters' and the compilers' estimate) against the listed beats:
    random requests, strides of whole beats and not, empty ones, addresses that wrap."""
    rng = np.random.default_rng(11)
    for n in range(400):
        base = (1 << 32) - (1 << 12) if n % 4 == 0 else 0      # segments past 2**32 wrap
        request = DmaRequest(base + int(rng.integers(0, 1 << 20)), int(rng.integers(0, 70)),
                             int(rng.integers(0, 6)), int(rng.integers(0, 40)) * (
                                 8 if rng.random() < 0.5 else 1),
                             int(rng.integers(0, 5)), int(rng.integers(0, 400)))
        assert request.beat_count() == len(request.beats()), request


def test_counters_count_requests_beats():
    """Counted by hand for the two-command program: each command fetches its descriptor
    (64 B), five input rows of 8 pixels x 4 int8 channels, contiguous (160 B, 20 beats),
    3x3x2 words x 16 PEs of weights (576 B) and a 16-channel quantization block (17 beats),
    and stores 4 rows of 8 pixels x 8 channels (256 B)."""
    program = _two_command_program()
    _, status = program.run_golden()
    assert status.bytes_read == 2 * (64 + 160 + 576 + 8 * 17)
    assert status.bytes_written == 2 * 256
    assert status.mac_cycles == 2 * 4 * 8 * 3 * 3 * 2    # pixels x taps x ST words per pixel


# --- settled corner cases and the list fuzzer -----------------------------------------------

def test_unaligned_descriptor_list_is_refused_before_any_fetch():
    program = _two_command_program()
    for offset in (8, 32, 63):
        memory = program.memory.copy()
        status = SocketModel(program.config).run(memory, program.desc_addr + offset, 2)
        assert (status.error, status.code, status.index) == (True, ErrorCode.BAD_DESC_ADDR, 0)
        assert (status.bytes_read, status.progress) == (0, 0)
        np.testing.assert_array_equal(memory, program.memory)


def test_sixteen_bit_outputs_need_an_even_address():
    rng = np.random.default_rng(8)
    x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, 16, cin=4, cout=8,
                                         kernel=(1, 1), size=(2, 3), stride=(1, 1),
                                         pad=(0, 0, 0, 0))
    d = conv2d_program(x, weights, qb, cmd).descriptors[0]
    for offset in range(8):
        code = check(replace(d, out_addr=d.out_addr + offset), DEFAULT_CONFIG)
        assert code == (ErrorCode.BAD_LAYOUT if offset % 2 else ErrorCode.NONE), offset
        code = check(replace(d, out_width=1, out_addr=d.out_addr + offset), DEFAULT_CONFIG)
        assert code == ErrorCode.NONE, offset


def test_addresses_wrap_around_the_address_space():
    """A row stride of 2**32 bytes more reads the same rows; a tile at the top of the address
    space is beyond memory and answers with an error response, it does not raise."""
    rng = np.random.default_rng(9)
    x, weights, qb, cmd, _ = random_conv(rng, Precision.A16W16, 8, cin=3, cout=8,
                                         kernel=(3, 3), size=(6, 5), stride=(1, 1),
                                         pad=(1, 1, 1, 1))
    program = conv2d_program(x, weights, qb, cmd)
    want, status = program.run_golden()
    assert status.done
    wrapped = [replace(d, in_row_stride=d.in_row_stride + (1 << 31))
               for d in program.descriptors]
    memory = program.memory.copy()
    raw = b"".join(d.to_bytes() for d in wrapped)
    memory[program.desc_addr:program.desc_addr + len(raw)] = np.frombuffer(raw, np.uint8)
    got = memory.copy()
    status = SocketModel(program.config).run(got, program.desc_addr, program.count)
    assert status.done
    out, size = program.regions["output"]
    np.testing.assert_array_equal(got[out:out + size], want[out:out + size])
    top = replace(program.descriptors[0], in_addr=(1 << 32) - 16)
    memory[program.desc_addr:program.desc_addr + DESCRIPTOR_BYTES] = \
        np.frombuffer(top.to_bytes(), np.uint8)
    status = SocketModel(program.config).run(memory, program.desc_addr, 1)
    assert (status.code, status.index) == (ErrorCode.AXI_READ, 0)


def test_output_width_narrows_a_wider_clamp():
    rng = np.random.default_rng(10)
    x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, 4, cin=8, cout=8,
                                         kernel=(1, 1), size=(3, 3), stride=(1, 1),
                                         pad=(0, 0, 0, 0))
    wide = replace(qb, act_min=-32768, act_max=32767, shift=np.full(8, 6))
    for relu in (False, True):
        program = conv2d_program(x, weights, wide, cmd, relu=relu)
        memory, status = program.run_golden()
        values = program.output(memory)
        assert status.done and values.min() >= (qb.zero_point if relu else -8)
        assert values.max() == 7                        # large scales saturate


def test_fuzzed_lists_run_on_the_golden_model():
    """Random lists over every accepted layout, invalid fields and faults: the golden model
    ends each with a status, never an exception, and every list error names a descriptor
    that fails on its own or in its list position."""
    from sim.descriptor_fuzz import random_list

    config = AcceleratorConfig(pes=8, plm_in_words=4096, plm_w_words=4096,
                               plm_acc_words=2048, max_width=128)
    rng = np.random.default_rng(11)
    codes = set()
    for _ in range(120):
        case = random_list(rng, config)
        _, status = case.run_golden()
        assert status.done != status.error
        assert status.progress == (status.index if status.error else case.count)
        codes.add(status.code)
    assert {ErrorCode.NONE, ErrorCode.AXI_READ, ErrorCode.AXI_WRITE,
            ErrorCode.BAD_LAYOUT} <= codes
