"""The per-channel datapath's golden models and contract: any tiling of a global average pool
or an add equals the untiled layer; the pool's division is TFLite's; descriptor lists built by
``sw.perchannel_program`` compute their layer exactly on the socket golden model in every ST
configuration and output width; every check of a per-channel descriptor has its error code;
the real MLPerf Tiny depthwise, pool and add layers are exact (and so LiteRT-exact)."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hls_ref import Precision
from hls_ref.config import DEFAULT_CONFIG, PERCHANNEL_CONFIG, AcceleratorConfig, DepthwiseConfig
from hls_ref.descriptor import DESCRIPTOR_BEATS, DESCRIPTOR_BYTES, Descriptor, ErrorCode, Mode, Op
from hls_ref.invocation import (
    AddAccelerator,
    Command,
    InvocationError,
    Limits,
    add_tiled,
    avg_pool2d_tiled,
)
from hls_ref.layers import AddParams
from hls_ref.perchannel import (
    add_params,
    add_qblock,
    load_requests,
    mac_cycles,
    pool_scale,
    store_request,
)
from hls_ref.quant import multiply_by_quantized_multiplier
from hls_ref.socket import SocketModel
from sw.fixtures import random_splits
from sw.lowering import CompileError
from sw.perchannel_compile import compile_perchannel, lower_perchannel
from sw.perchannel_fixtures import (
    model_perchannel_programs,
    random_add,
    random_depthwise,
    random_pool,
)
from sw.perchannel_program import add_program, avg_pool_program, depthwise_program
from sw.program import ProgramError
from sw.tflite_import import load_model
from sw.tiling.capacity import TilingError

BIG = Limits(pes=64, plm_in=1 << 20, plm_w=1 << 20, plm_acc=1 << 30)
SETTINGS = settings(max_examples=12, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _splits(draw, total):
    candidates = list(range(1, total))
    chosen = draw(st.lists(st.sampled_from(candidates), max_size=3, unique=True)) \
        if candidates else []
    return tuple(sorted(chosen))


# --- invocation level: any tiling equals the untiled layer ---------------------------------

@SETTINGS
@given(st.data())
@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
@pytest.mark.parametrize("out_bits", [4, 8, 16])
def test_any_pool_tiling_equals_the_untiled_layer(precision, out_bits, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    x, qblock, cmd, want = random_pool(rng, precision, out_bits)
    tiled = avg_pool2d_tiled(x, qblock, cmd, out_splits=_splits(data.draw, x.shape[2]),
                             row_splits=_splits(data.draw, x.shape[0]), limits=BIG)
    assert np.array_equal(tiled, want)


@SETTINGS
@given(st.data())
@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
@pytest.mark.parametrize("out_bits", [4, 8, 16])
def test_any_add_tiling_equals_the_untiled_layer(precision, out_bits, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    a, b, qblock, cmd, want = random_add(rng, precision, out_bits)
    tiled = add_tiled(a, b, qblock, cmd, out_splits=_splits(data.draw, a.shape[2]),
                      row_splits=_splits(data.draw, a.shape[0]), limits=BIG)
    assert np.array_equal(tiled, want)


def test_add_block_round_trip_and_refusals():
    params = AddParams(20, (-3, 1 << 30, -1), (7, 3 << 29, -2), (-128, 1 << 30, -19), -128, 100)
    assert add_params(add_qblock(params)) == params
    assert add_params(type(add_qblock(params)).unpack(add_qblock(params).pack())) == params
    accelerator = AddAccelerator(BIG)
    x = np.zeros((2, 2, 3), np.int64)
    with pytest.raises(InvocationError, match=r"^an add has no partial sums"):
        accelerator.invoke(Command(acc_flag=True), x, x, add_qblock(params))
    with pytest.raises(InvocationError, match=r"^inputs \(2, 2, 3\) and \(2, 1, 3\) differ$"):
        accelerator.invoke(Command(), x, x[:, :1], add_qblock(params))


def test_add_computes_in_32_bits():
    """Differences, shifted inputs and the sum wrap modulo 2**32 as the hardware's do."""
    q = add_qblock(AddParams(31, (0, (1 << 31) - 1, 0), (0, (1 << 31) - 1, 0),
                             (0, (1 << 31) - 1, 0), -32768, 32767))
    a = np.array([[[1, 2, 3]]])
    y = AddAccelerator(BIG).invoke(Command(Precision.A16W16, 16), a, a * 0, q)
    # 1 << 31 wraps to -2**31, 3 << 31 to -2**31, 2 << 31 to 0; scaled by ~1; clamped
    assert y.tolist() == [[[-32768, 0, -32768]]]


# --- the pool's division ------------------------------------------------------------------

def _rounded(total, count):
    half = count // 2
    return np.where(total > 0, (total + half) // count, -((half - total) // count))


@pytest.mark.parametrize("act_bits", [4, 8])
def test_pool_division_is_exact_on_every_sum(act_bits):
    """Every sum of every count up to 130 (and the MLPerf Tiny windows), exhaustively."""
    for count in [*range(1, 131), 625, 2304]:
        m, s = pool_scale(count, act_bits)
        total = np.arange(-(count << (act_bits - 1)), count * ((1 << (act_bits - 1)) - 1) + 1)
        assert np.array_equal(multiply_by_quantized_multiplier(total, m, s),
                              _rounded(total, count)), count


@pytest.mark.parametrize("count", [1, 2, 9, 25, 64, 125, 1000])
def test_pool_division_16_bit(count):
    m, s = pool_scale(count, 16)
    total = np.random.default_rng(count).integers(-(count << 15), count << 15, 200_000)
    total = np.concatenate([total, count * np.arange(-32768, 32768) + count // 2])
    total = total[np.abs(total) <= count << 15]
    assert np.array_equal(multiply_by_quantized_multiplier(total, m, s), _rounded(total, count))


def test_pool_division_check_catches_a_wrong_multiplier():
    """The step-point check of ``pool_scale`` sees what an exhaustive one sees: the truncated
    reciprocal of an even count rounds the positive ties down."""
    import hls_ref.perchannel as perchannel

    for count in (6, 10, 64):
        wrong = (1 << 31) // count - (count == 64)
        points = perchannel._division_steps(count, 8)
        total = np.arange(-(count << 7), count * 127 + 1)
        for values in (points, total):
            assert not np.array_equal(multiply_by_quantized_multiplier(values, wrong, 0),
                                      _rounded(values, count)), count
    with pytest.raises(ValueError, match=r"^count must be at least 1, not 0$"):
        pool_scale(0, 8)


# --- descriptor lists on the socket golden model ----------------------------------------------

def _config(lanes):
    return AcceleratorConfig(conv=False, depthwise=DepthwiseConfig(lanes=lanes,
                                                                   plm_pixels=256))


@pytest.mark.parametrize("lanes", [4, 8])
@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
@pytest.mark.parametrize("out_bits", [4, 8, 16])
def test_random_programs_are_exact(lanes, precision, out_bits):
    config = _config(lanes)
    rng = np.random.default_rng([precision.value, out_bits, lanes])
    step = lanes if lanes * out_bits % 8 == 0 and lanes * precision.act_bits % 8 == 0 \
        else 2 * lanes
    for _ in range(3):
        # (pixels start on a byte: a 4-bit tensor has at least two channels)
        c = int(rng.integers(1 + (precision.act_bits == 4), 20))
        x, weights, qb, cmd, want = random_depthwise(rng, precision, out_bits, channels=c)
        ho = want.shape[0]
        program = depthwise_program(x, weights, qb, cmd, config,
                                    out_splits=random_splits(rng, x.shape[2], step),
                                    row_splits=random_splits(rng, ho), relu=False,
                                    seed=int(rng.integers(1 << 30)))
        memory, status = program.run_golden()
        assert status.done and np.array_equal(program.output(memory), want)
        assert status.mac_cycles == sum(mac_cycles(d) for d in program.descriptors)

        x, qb, cmd, want = random_pool(rng, precision, out_bits, channels=c)
        program = avg_pool_program(x, qb, cmd, config,
                                   out_splits=random_splits(rng, x.shape[2], step),
                                   row_splits=random_splits(rng, x.shape[0]))
        memory, status = program.run_golden()
        assert status.done and np.array_equal(program.output(memory), want)

        a, b, qb, cmd, want = random_add(rng, precision, out_bits, channels=c)
        program = add_program(a, b, qb, cmd, config,
                              out_splits=random_splits(rng, a.shape[2], step),
                              row_splits=random_splits(rng, a.shape[0]))
        memory, status = program.run_golden()
        assert status.done and np.array_equal(program.output(memory), want)
        assert status.mac_cycles == 0


def test_pixels_must_start_on_a_byte():
    rng = np.random.default_rng(1)
    x, qb, cmd, _ = random_pool(rng, Precision.A4W4, 8, channels=1)
    with pytest.raises(ProgramError, match=r"^the pixels of a 1-channel 4-bit tensor do not "
                                           r"start on a byte"):
        avg_pool_program(x, qb, cmd, _config(8))


def test_relu_clamps_at_the_output_zero_point():
    config = _config(8)
    rng = np.random.default_rng(3)
    a, b, qb, cmd, want = random_add(rng, Precision.A8W8, 8, channels=8, size=(3, 4))
    program = add_program(a, b, qb, cmd, config, relu=True)
    memory, status = program.run_golden()
    assert status.done
    out = program.output(memory)
    assert np.array_equal(out, np.maximum(want, qb.zero_point))


# --- checks ---------------------------------------------------------------------------------

def _valid(config):
    rng = np.random.default_rng(5)
    x, weights, qb, cmd, _ = random_depthwise(rng, Precision.A8W8, 8, channels=8,
                                              kernel=(3, 3), size=(6, 5), stride=(1, 1),
                                              pad=(1, 1, 1, 1))
    return depthwise_program(x, weights, qb, cmd, config, row_splits=(3,))


def invalid_changes(section, desc):
    """One field change per error code a per-channel descriptor can fail with before it
    touches memory (``WEIGHTS_TOO_LARGE`` and ``ROW_TOO_WIDE`` never apply: the weight PLM
    holds the largest kernel, and no row limit but the PLM's)."""
    return {
        ErrorCode.BAD_OP: dict(mode=3),
        ErrorCode.BAD_PRECISION: dict(precision=7),
        ErrorCode.BAD_OUT_WIDTH: dict(out_width=3),
        ErrorCode.ZERO_DIM: dict(in_c=0),
        ErrorCode.BAD_KERNEL: dict(kernel_h=section.max_kernel[0] + 1),
        ErrorCode.BAD_STRIDE: dict(stride_w=section.max_stride + 1),
        ErrorCode.BAD_PADDING: dict(pad_bottom=3),
        ErrorCode.TOO_MANY_CHANNELS: dict(out_c=section.lanes + 1, in_c=section.lanes + 1),
        ErrorCode.TILE_TOO_SMALL: dict(in_h=1, pad_top=0, pad_bottom=0),
        ErrorCode.INPUT_TOO_LARGE: dict(in_h=section.plm_pixels // desc.in_w + 1),
        # 15x17 pixels fit the input PLM; with two rows and columns of padding on each side
        # the 17x19 outputs do not fit the output buffer
        ErrorCode.OUTPUT_TOO_LARGE: dict(in_h=15, in_w=17, pad_top=2, pad_bottom=2,
                                         pad_left=2, pad_right=2),
        ErrorCode.BAD_LAYOUT: dict(out_c=desc.out_c - 1),
        ErrorCode.ACC_STATE: dict(acc_flag=1),
    }


def check(desc, config, acc_shape=None):
    """The code the socket golden model's engine for ``desc.op`` gives (BAD_OP without one)."""
    engine = SocketModel(config).engines.get(desc.op)
    if engine is None:
        return ErrorCode.BAD_OP
    engine.acc_shape = acc_shape
    return engine.check(desc)


def test_every_check_has_its_code():
    config = _config(8)
    program = _valid(config)
    desc = program.descriptors[1]
    assert check(desc, config) == ErrorCode.NONE
    for code, change in invalid_changes(config.depthwise, desc).items():
        assert check(replace(desc, **change), config) == code, (code, change)
        # the list stops at the command, with its index; the one before completes
        broken = program.memory.copy()
        addr = program.desc_addr + DESCRIPTOR_BYTES
        broken[addr:addr + DESCRIPTOR_BYTES] = np.frombuffer(
            replace(desc, **change).to_bytes(), np.uint8)
        status = SocketModel(config).run(broken, program.desc_addr, program.count)
        assert (status.error, status.code, status.index, status.progress) == (True, code, 1, 1)
    # layouts: 16-bit inputs on an odd byte, a pixel that does not start on a byte
    assert check(replace(desc, precision=Precision.A16W16.value, in_addr=desc.in_addr + 1),
                 config) == ErrorCode.BAD_LAYOUT
    assert check(replace(desc, precision=Precision.A4W4.value, in_pixel_stride=9),
                 config) == ErrorCode.BAD_LAYOUT
    # ops and builds
    assert check(replace(desc, op=Op.CONV2D), config) == ErrorCode.BAD_OP
    assert check(desc, DEFAULT_CONFIG) == ErrorCode.BAD_OP
    # an add's second input follows the input's rules; a pool ignores the kernel fields
    add_desc = replace(desc, mode=Mode.ADD, precision=Precision.A16W16.value, in_addr=0,
                  w_addr=desc.w_addr + 1)
    assert check(add_desc, config) == ErrorCode.BAD_LAYOUT
    pool = replace(desc, mode=Mode.AVGPOOL, kernel_h=0, stride_h=0, pad_top=9)
    assert check(pool, config) == ErrorCode.NONE
    assert check(replace(pool, acc_flag=1), config, (1, 1)) == ErrorCode.NONE
    assert check(replace(pool, in_h=129, in_w=2), config) == ErrorCode.INPUT_TOO_LARGE
    assert check(replace(add_desc, w_addr=0, in_h=65, in_w=2), config) == ErrorCode.INPUT_TOO_LARGE


def test_pool_partial_sums_survive_lists_and_other_datapaths_only():
    """A pool's partial sums stay across lists and while the conv2d datapath runs in between;
    a depthwise command or an add in between, or an error, ends them (the next ``acc_flag``
    pool fails with ``ACC_STATE``)."""
    from sw.fixtures import random_conv
    from sw.program import conv2d_program

    config = AcceleratorConfig(depthwise=DepthwiseConfig(lanes=8, plm_pixels=256))
    rng = np.random.default_rng(9)
    x, qb, cmd, want = random_pool(rng, Precision.A8W8, 8, channels=8, size=(6, 3))
    pool = avg_pool_program(x, qb, cmd, config, row_splits=(2,))
    conv = conv2d_program(*random_conv(rng, Precision.A8W8, 8, cin=4, cout=8, kernel=(1, 1),
                                       size=(2, 3), stride=(1, 1), pad=(0, 0, 0, 0))[:4],
                          config)
    dw = _valid(config)

    def second_half(between):
        model = SocketModel(config)
        memory = pool.memory.copy()
        assert model.run(memory, pool.desc_addr, 1).done
        for program, count in between:
            model.run(program.memory.copy(), program.desc_addr, count)
        return memory, model.run(memory, pool.desc_addr + DESCRIPTOR_BYTES, 1)

    for between in ([], [(pool, 0)], [(conv, conv.count)]):
        memory, status = second_half(between)
        assert status.done and np.array_equal(pool.output(memory), want)
    bad = replace(dw, memory=dw.memory.copy())
    bad.memory[dw.desc_addr] = 0                       # op 0: BAD_OP
    for between in ([(dw, 1)], [(bad, 1)]):
        _, status = second_half(between)
        assert (status.code, status.index) == (ErrorCode.ACC_STATE, 0)


def test_bus_errors_name_the_failing_command():
    config = _config(8)
    rng = np.random.default_rng(2)
    a, b, qb, cmd, _ = random_add(rng, Precision.A8W8, 8, channels=8, size=(4, 3))
    program = add_program(a, b, qb, cmd, config, row_splits=(2,))
    d1 = program.descriptors[1]
    for addr, code in ((d1.w_addr + 8, ErrorCode.AXI_READ), (d1.in_addr, ErrorCode.AXI_READ),
                       (d1.out_addr, ErrorCode.AXI_WRITE)):
        memory = program.memory.copy()
        status = SocketModel(config).run(memory, program.desc_addr, program.count,
                                         faults=[(addr, addr + 1)])
        assert (status.code, status.index, status.progress) == (code, 1, 1)
    corrupt = program.memory.copy()
    corrupt[d1.q_addr + 7] = 7                 # eight entries, not three
    status = SocketModel(config).run(corrupt, program.desc_addr, program.count)
    assert (status.code, status.index) == (ErrorCode.BAD_QBLOCK, 0)


# --- the compiler -----------------------------------------------------------------------------

def test_the_compiler_refuses_what_the_datapath_or_the_build_cannot_run():
    graph = load_model("vww")
    op = next(o for o in graph.ops if o.name == "03_depthwise_conv_2d")
    x = np.zeros(graph.tensor(op.inputs[0]).shape[1:], np.int64)
    small = AcceleratorConfig(conv=False, depthwise=DepthwiseConfig(lanes=8, max_kernel=(2, 2)))
    with pytest.raises(TilingError, match=r"^03_depthwise_conv_2d: its 3x3 kernel is above "
                                          r"max_kernel \(2, 2\); smallest build: "
                                          r"DepthwiseConfig\(.*max_kernel=\(3, 3\)"):
        compile_perchannel(graph, op, [x], small)
    narrow = AcceleratorConfig(conv=False, depthwise=DepthwiseConfig(lanes=8, max_stride=1))
    with pytest.raises(TilingError, match=r"stride 2 is above max_stride 1; smallest build: "
                                          r"DepthwiseConfig\(.*max_stride=2"):
        compile_perchannel(graph, op, [x], narrow)
    tiny = AcceleratorConfig(conv=False, depthwise=DepthwiseConfig(lanes=8, plm_pixels=100))
    with pytest.raises(TilingError, match=r"needs 144 pixels of the input PLM, the build has "
                                          r"plm_pixels 100; smallest build: .*plm_pixels=144"):
        compile_perchannel(graph, op, [x], tiny)
    short = AcceleratorConfig(conv=False, depthwise=DepthwiseConfig(lanes=8, acc_pixels=16))
    with pytest.raises(TilingError, match=r"one output row needs 24 pixels of the output "
                                          r"buffer, the build has acc_pixels 16; smallest "
                                          r"build: .*acc_pixels=24"):
        compile_perchannel(graph, op, [x], short)
    with pytest.raises(TilingError, match=r"^03_depthwise_conv_2d: the build has no per-channel"):
        compile_perchannel(graph, op, [x], DEFAULT_CONFIG)
    conv = next(o for o in graph.ops if o.kind == "conv2d")
    with pytest.raises(CompileError, match="does not run on the per-channel datapath"):
        lower_perchannel(graph, conv)


def test_non_global_pools_run_on_the_host():
    graph = load_model("resnet8")
    pool = next(o for o in graph.ops if o.kind == "avgpool2d")
    with pytest.raises(CompileError, match=r"^12_average_pool_2d: a 2x2 average pool on an? "
                                           r"8x8 input is not global"):
        lower_perchannel(graph, replace(pool, filter=(2, 2), stride=(2, 2)))


@pytest.mark.parametrize("model", ["resnet8", "dscnn", "vww"])
def test_real_layers_are_exact(model):
    """Every depthwise, average-pool and add layer of the MLPerf Tiny models, compiled for the
    8-lane build, equals the golden layer (``hls_ref.layers``, bit-exact with LiteRT)."""
    layers = model_perchannel_programs(model, PERCHANNEL_CONFIG)
    kinds = {"resnet8": 4, "dscnn": 5, "vww": 14}
    assert len(layers) == kinds[model]
    for name, program, _, want in layers:
        memory, status = program.run_golden()
        assert status.done, name
        assert np.array_equal(program.output(memory), want), name


def test_descriptor_field_mode():
    d = Descriptor(op=Op.DEPTHWISE, mode=Mode.ADD)
    assert Descriptor.from_bytes(d.to_bytes()).mode == Mode.ADD


# --- the descriptor-list fuzzer ------------------------------------------------------------

def test_fuzzed_lists_with_both_datapaths_run_on_the_golden_model():
    """Random lists of conv2d and per-channel commands (every mode, every layout the checks
    accept, invalid fields, faults, pool chains): the golden model ends each with a status,
    never an exception; the list's error names a descriptor."""
    from sim.descriptor_fuzz import random_list

    config = AcceleratorConfig(pes=8, plm_in_words=4096, plm_w_words=4096,
                               plm_acc_words=2048, max_width=128,
                               depthwise=DepthwiseConfig(lanes=8, plm_pixels=128))
    rng = np.random.default_rng(21)
    codes, modes, ops = set(), set(), set()
    chained = 0
    for _ in range(80):
        case = random_list(rng, config)
        _, status = case.run_golden()
        assert status.done != status.error, case.describe()
        assert status.progress == (status.index if status.error else case.count)
        codes.add(status.code)
        ops |= {d.op for d in case.descriptors}
        modes |= {d.mode for d in case.descriptors if d.op == Op.DEPTHWISE}
        chained += sum(d.op == Op.DEPTHWISE and d.acc_flag for d in case.descriptors)
    assert ops >= {Op.CONV2D, Op.DEPTHWISE} and modes >= set(Mode) and chained
    assert {ErrorCode.NONE, ErrorCode.AXI_READ, ErrorCode.AXI_WRITE,
            ErrorCode.BAD_LAYOUT} <= codes


def test_the_section_round_trips_and_refuses_bad_values():
    import json

    config = AcceleratorConfig(depthwise=DepthwiseConfig(lanes=8, precisions=("a8w8",),
                                                         max_kernel=[5, 3]))
    assert AcceleratorConfig.from_dict(json.loads(json.dumps(config.as_dict()))) == config
    assert config.ops == (Op.CONV2D, Op.DEPTHWISE) and config.section(Op.DEPTHWISE).lanes == 8
    assert config.depthwise.limits().max_kernel == (5, 3)
    for change, message in ((dict(lanes=6), r"^lanes must be a multiple of 4, not 6$"),
                            (dict(plm_pixels=0), r"^plm_pixels must be a positive integer"),
                            (dict(max_kernel=(3,)), r"^max_kernel must be \(h, w\)")):
        with pytest.raises(ValueError, match=message):
            DepthwiseConfig(**change)


def test_adds_whose_32_bit_intermediates_could_wrap_are_refused(monkeypatch):
    """The hardware's add wraps at 32 bits; the compiler refuses parameters for which an
    input less its zero point, shifted (and scaled up by a positive shift), or the sum of the
    scaled inputs (shifted by a positive output shift) can leave int32."""
    import sw.perchannel_compile as compiler

    graph = load_model("resnet8")
    op = next(o for o in graph.ops if o.kind == "add")
    real = compiler._derived(graph, op)
    assert compiler.lower_perchannel(graph, op).mode == Mode.ADD       # TFLite's: fits
    one = (0, (1 << 31) - 1, 0)
    cases = (
        (replace(real, left_shift=24), r"shifted left by 24 overflows 32 bits"),
        (replace(real, input1=(real.input1[0], real.input1[1], 4)),
         r"shifted left by 24 overflows 32 bits"),
        (replace(real, left_shift=23, input1=one, input2=one),
         r"the sum of the scaled inputs can reach \d+, beyond 32 bits"),
        (replace(real, output=(0, 1 << 30, 5)), r"\(shifted left by 5\), beyond 32 bits"),
    )
    for params, message in cases:
        monkeypatch.setattr(compiler, "_derived", lambda graph, op, params=params: params)
        with pytest.raises(CompileError, match=rf"^{op.name}: .*{message}"):
            compiler.lower_perchannel(graph, op)


def test_the_schedule_estimate_overlaps_what_the_banks_allow():
    """With two banks the compute-bound DS-CNN depthwise layer costs its first load, its
    first command's compute, the others' operations (each follows the previous one's
    without its overhead) and its last store; with one bank each command's loads and store
    add."""
    from sw.conv2d_cycles import REQUEST_CYCLES
    from sw.perchannel_compile import COMMAND_OVERHEAD, FOLLOW_CYCLES, schedule_cycles

    graph = load_model("dscnn")
    op = next(o for o in graph.ops if o.kind == "dwconv2d")
    x = np.zeros(graph.tensor(op.inputs[0]).shape[1:], np.int64)
    two, one = (AcceleratorConfig(conv=False, depthwise=DepthwiseConfig(lanes=8, banks=banks))
                for banks in (2, 1))
    program, tiling, _ = compile_perchannel(graph, op, [x], two)
    descs = program.descriptors
    # 8 channel blocks of 2 row stripes (13 and 12 of the 25 output rows)
    assert len(descs) == 16 and tiling.cycles == schedule_cycles(program, two.depthwise)

    def cost(requests):
        return sum(len(r.beats()) + REQUEST_CYCLES for r in requests if r is not None)

    # each output 5 operations (9 taps in tap pairs), 5 outputs a row
    compute = [5 * 5 * rows + COMMAND_OVERHEAD for rows in [13, 12] * 8]
    assert [mac_cycles(d) + COMMAND_OVERHEAD for d in descs] == compute
    loads = [DESCRIPTOR_BEATS + cost(load_requests(d, two.depthwise)) for d in descs]
    stores = [cost([store_request(d)]) for d in descs]
    assert max(loads + stores) < min(compute) - COMMAND_OVERHEAD
    assert schedule_cycles(program, two.depthwise) == loads[0] + compute[0] + sum(
        c - COMMAND_OVERHEAD + FOLLOW_CYCLES for c in compute[1:]) + stores[-1]
    assert schedule_cycles(program, one.depthwise) == loads[0] + sum(
        c + max(load, store) for c, load, store in zip(compute, loads[1:], stores)) \
        + compute[-1] + stores[-1]
    with pytest.raises(ValueError, match=r"^banks must be 1 or 2, not 3$"):
        DepthwiseConfig(banks=3)
