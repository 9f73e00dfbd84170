"""The FC datapath's contract in the golden models: the weight stream (``docs/formats.md``
section 2), the shared-scale quantization block (section 3), the FC descriptor's checks and
the socket model running FC lists (``docs/accelerator.md``)."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hls_ref import Precision
from hls_ref.config import AcceleratorConfig, FCConfig
from hls_ref.descriptor import DESCRIPTOR_BYTES, Descriptor, ErrorCode, Op, check_fc
from hls_ref.formats import FCRows, QuantBlock, fc_stream_blob, fc_stream_weights
from hls_ref.invocation import Command, FCAccelerator, fully_connected_tiled
from hls_ref.quant import scale_by_double, scale_by_double_integer
from hls_ref.socket import SocketModel, fc_load_requests
from hls_ref.socket import check_descriptor as check
from sw.fixtures import random_fc, random_splits
from sw.program import fc_program

#: The default FC datapath (4 PEs of 2 ST units), and two other shapes of 8 ST units.
FC_SHAPES = {"p4u2": FCConfig(), "p8u1": FCConfig(pes=8, st_units=1, plm_in_words=2048),
             "p2u4": FCConfig(pes=2, st_units=4)}


def fc_build(fc=None, **kwargs):
    return AcceleratorConfig(conv=False, fc=fc or FCConfig(**kwargs))


# --- 2. the weight stream ---------------------------------------------------------------------

@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
@pytest.mark.parametrize("shape", list(FC_SHAPES), ids=str)
def test_fc_stream_blob_positions(precision, shape):
    """Weight ``w[o, i]`` sits in unit word ``(pe, unit)`` of row ``(block, step)``, at bit
    ``(lanes - 1 - k) * weight_bits`` of it, rows dense: nothing but zero-filled parts."""
    fc = FC_SHAPES[shape]
    rng = np.random.default_rng([precision.value, fc.pes])
    p = precision
    outputs, inputs = int(rng.integers(1, 20)), int(rng.integers(1, 40))
    w = rng.integers(-(1 << (p.weight_bits - 1)), 1 << (p.weight_bits - 1), (outputs, inputs))
    rows = FCRows(p, fc.pes, fc.st_units, inputs, outputs)
    beats = fc_stream_blob(w, p, fc.pes, fc.st_units)
    assert beats.dtype == np.uint64 and len(beats) == rows.beats
    assert rows.row_bits == fc.pes * fc.st_units * p.lanes * p.weight_bits
    stream = int.from_bytes(beats.tobytes(), "little")
    for o in range(rows.blocks * fc.pes):
        for i in range(rows.steps * rows.step_inputs):
            block, pe = divmod(o, fc.pes)
            step, j = divmod(i, rows.step_inputs)
            unit, k = divmod(j, p.lanes)
            row = block * rows.steps + step
            word = row * fc.pes * fc.st_units + pe * fc.st_units + unit
            bit = word * rows.unit_bits + (p.lanes - 1 - k) * p.weight_bits
            value = (stream >> bit) & ((1 << p.weight_bits) - 1)
            want = int(w[o, i]) if o < outputs and i < inputs else 0
            assert value == want & ((1 << p.weight_bits) - 1), (o, i)
    back = fc_stream_weights(beats, rows)
    np.testing.assert_array_equal(back[:outputs, :inputs], w)
    assert not back[outputs:].any() and not back[:, inputs:].any()


def test_fc_stream_blob_density():
    """4-bit weights take half the bytes of 8-bit ones (the ST ``B`` word of a8w4 has two
    unused nibbles; the stream does not)."""
    w = np.ones((128, 128), np.int64)
    a8w8 = fc_stream_blob(w, Precision.A8W8, 4, 2)
    a8w4 = fc_stream_blob(w, Precision.A8W4, 4, 2)
    assert (len(a8w8), len(a8w4)) == (128 * 128 // 8, 128 * 128 // 16)


def test_fc_config_refuses_rows_of_partial_beats():
    with pytest.raises(ValueError, match=r"^st_units must be 1, 2 or 4 "):
        FCConfig(st_units=3)
    with pytest.raises(ValueError, match=r"^pes \* st_units must make a weight row of whole "
                                         r"64-bit beats at a8w4 \(a multiple of 8\), not 4$"):
        FCConfig(pes=2, st_units=2)
    assert FCConfig(pes=2, st_units=2, precisions=("a8w8", "a4w4")).units == 4


# --- 3. the shared quantization block ---------------------------------------------------------

def test_shared_quantization_block_layout():
    qb = QuantBlock(-3, -128, 100, np.array([5, -6, 7]), np.zeros(3, np.int64),
                    np.zeros(3, np.int64), np.full(3, 0.125))
    beats = qb.pack(shared=True)
    assert len(beats) == 2 + 2
    assert int(beats[0]) >> 48 & 3 == 3 and int(beats[0]) >> 56 == 2
    assert int(beats[1]) == 0x3FC0000000000000                    # 0.125
    assert int(beats[2]) == 5 | (-6 & 0xFFFF_FFFF) << 32
    assert int(beats[3]) == 7
    back = QuantBlock.unpack(beats)
    np.testing.assert_array_equal(back.bias, qb.bias)
    assert back.shared_scale == 0.125 and back.zero_point == -3 and back.act_max == 100
    with pytest.raises(ValueError, match=r"^the shared layout needs one double-precision "
                                         r"scale for every channel$"):
        replace(qb, real_scale=np.array([0.1, 0.2, 0.1])).pack(shared=True)


# --- 4. the FC rule ----------------------------------------------------------------------------

def test_saturating_integer_scaling_equals_double_precision():
    """The engine's requantization (the integer algorithm, saturated) equals LiteRT's
    ``round(double(acc) * scale)`` wherever that fits int32, and saturates beyond."""
    rng = np.random.default_rng(2)
    acc = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 500),
                          [-(1 << 31), (1 << 31) - 1, 0, 1, -1]])
    for scale in (1e-9, 3.1e-4, 0.5, 0.999, 1.0):
        np.testing.assert_array_equal(scale_by_double_integer(acc, scale, limit=1 << 31),
                                      scale_by_double(acc, scale))
    np.testing.assert_array_equal(
        scale_by_double_integer(np.array([3, -3, 0]), 2.0 ** 600, limit=1 << 31),
        [1 << 31, -(1 << 31), 0])
    # in the engine, a huge scale clamps
    qb = QuantBlock(5, -100, 100, np.zeros(2, np.int64), np.zeros(2, np.int64),
                    np.zeros(2, np.int64), np.full(2, 2.0 ** 600))
    got = FCAccelerator().invoke(Command(out_bits=16), np.array([1, 0]),
                                 np.array([[1, 0], [-1, 0]]), qb)
    np.testing.assert_array_equal(got, [100, -100])


# --- FC commands on the socket model -----------------------------------------------------------

def changed_outside(before, after, program):
    addr, size = program.regions["output"]
    diff = np.flatnonzero(before != after)
    return diff[(diff < addr) | (diff >= addr + size)]


@pytest.mark.parametrize("shape", list(FC_SHAPES), ids=str)
@pytest.mark.parametrize("precision", list(Precision), ids=lambda p: p.label)
@pytest.mark.parametrize("out_bits", [4, 8, 16])
def test_fc_lists_are_exact_under_any_tiling(shape, precision, out_bits):
    """Any tiling (vectors, outputs, inputs) of a random layer equals the untiled layer, and
    writes nothing outside the output tensor."""
    config = fc_build(FC_SHAPES[shape])
    rng = np.random.default_rng([precision.value, out_bits, config.fc.pes])
    for trial in range(3):
        x, w, qb, cmd, want = random_fc(rng, precision, out_bits)
        per_beat = 64 // precision.act_bits
        program = fc_program(x, w, qb, cmd, config,
                             out_splits=random_splits(rng, w.shape[0], 2),
                             in_splits=random_splits(rng, w.shape[1], per_beat),
                             batch_splits=random_splits(rng, x.shape[0]), seed=trial)
        memory, status = program.run_golden()
        assert status.done and not status.error, status
        np.testing.assert_array_equal(program.output(memory)[:, 0], want)
        assert not len(changed_outside(program.memory, memory, program))
        rows = [FCRows(precision, config.fc.pes, config.fc.st_units, d.in_c, d.out_c)
                for d in program.descriptors]
        assert status.mac_cycles == sum(r.blocks * r.steps * d.in_h
                                        for r, d in zip(rows, program.descriptors))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_fully_connected_tiled_batches(seed):
    """The invocation model's FC engine takes a batch; any tiling equals the untiled layer."""
    rng = np.random.default_rng(seed)
    precision = Precision(int(rng.integers(5)))
    x, w, qb, cmd, want = random_fc(rng, precision, 8)
    outs = sorted(set(random_splits(rng, w.shape[0])) | set(range(16, w.shape[0], 16)))
    got = np.stack([fully_connected_tiled(row, w, qb, cmd, out_splits=outs,
                                          in_splits=random_splits(rng, w.shape[1],
                                                                  precision.lanes))
                    for row in x])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(FCAccelerator().invoke(cmd, x, w[:16], qb.select(0, 16)),
                                  want[:, :16] if w.shape[0] >= 16 else want)


def _one_command(config, **changes):
    rng = np.random.default_rng(9)
    x, w, qb, cmd, _ = random_fc(rng, Precision.A8W8, 8, vectors=2, inputs=40, outputs=12)
    program = fc_program(x, w, qb, cmd, config, in_splits=(16,))
    return program


def fc_invalid_changes(config, desc):
    """One field change per error code that ``check_fc`` finds before touching memory."""
    fc = config.fc
    return {
        ErrorCode.BAD_OP: dict(op=Op.DEPTHWISE),
        ErrorCode.BAD_PRECISION: dict(precision=7),
        ErrorCode.BAD_OUT_WIDTH: dict(out_width=3),
        ErrorCode.ZERO_DIM: dict(in_h=0),
        ErrorCode.TOO_MANY_CHANNELS: dict(out_c=257, out_seg=257, out_row_stride=512),
        ErrorCode.INPUT_TOO_LARGE: dict(in_c=fc.plm_in_words * 2, in_row_stride=1 << 16),
        ErrorCode.OUTPUT_TOO_LARGE: dict(in_h=fc.max_batch + 1),
        ErrorCode.BAD_LAYOUT: dict(in_addr=desc.in_addr + 2),
        ErrorCode.ACC_STATE: dict(acc_flag=1, out_c=desc.out_c - 1),
    }


def test_fc_checks_in_order():
    config = fc_build()
    program = _one_command(config)
    good = program.descriptors[1]
    assert check(good, config, (2, 12)) == ErrorCode.NONE
    for code, change in fc_invalid_changes(config, good).items():
        assert check(replace(good, **change), config, (2, 12)) == code, code
    layout = [dict(in_row_stride=good.in_row_stride + 1), dict(in_row_stride=good.in_c - 8),
              dict(w_addr=good.w_addr + 4), dict(q_addr=good.q_addr + 1),
              dict(out_seg=good.out_c - 1), dict(out_row_stride=good.out_seg - 1),
              dict(out_width=2, out_addr=good.out_addr + 1),
              dict(out_width=0, out_row_stride=15)]
    for change in layout:
        assert check_fc(replace(good, **change), config.fc, (2, 12)) == ErrorCode.BAD_LAYOUT, \
            change
    # the conv-only fields mean nothing to an FC command
    assert check(replace(good, kernel_h=0, stride_w=0, pad_top=9, in_w=0), config,
                 (2, 12)) == ErrorCode.NONE
    # a build without the conv2d datapath refuses conv2d commands
    assert check(replace(good, op=Op.CONV2D), config) == ErrorCode.BAD_OP


def _run(program, memory=None, faults=()):
    memory = program.memory.copy() if memory is None else memory
    status = SocketModel(program.config).run(memory, program.desc_addr, program.count,
                                             faults=faults)
    return memory, status


def test_fc_errors_stop_the_list():
    """Invalid descriptors, bad quantization blocks and bus errors: the list stops at the
    failing command, commands before it complete, nothing after it is written."""
    config = fc_build()
    rng = np.random.default_rng(4)
    x, w, qb, cmd, want = random_fc(rng, Precision.A8W4, 8, vectors=2, inputs=32, outputs=20)
    program = fc_program(x, w, qb, cmd, config, out_splits=(10,))
    _, d1 = program.descriptors
    good_memory, _ = _run(program)
    first = program.out_addr, program.out_addr + 10     # the first tile's first row

    def expect(memory, status, code, index):
        assert (status.error, status.code, status.index) == (True, code, index)
        assert status.progress == index
        if index == 1:          # the first command's outputs are written
            np.testing.assert_array_equal(memory[slice(*first)], good_memory[slice(*first)])
        else:
            np.testing.assert_array_equal(memory[slice(*first)], program.memory[slice(*first)])

    for code, change in fc_invalid_changes(config, d1).items():
        broken = program.memory.copy()
        addr = program.desc_addr + DESCRIPTOR_BYTES
        broken[addr:addr + DESCRIPTOR_BYTES] = np.frombuffer(
            replace(d1, **change).to_bytes(), np.uint8)
        memory, status = _run(program, broken)
        expect(memory, status, code, 1)
    for name, byte, value in (("channel count", 7, 0x20), ("mode", 6, 0x01),
                              ("scale sign", 15, 0xBF), ("scale exponent", 14, 0x00)):
        broken = program.memory.copy()
        broken[d1.q_addr + byte] = value
        if name == "scale exponent":
            broken[d1.q_addr + 15] = 0
        memory, status = _run(program, broken)
        expect(memory, status, ErrorCode.BAD_QBLOCK, 1)
    x_req, w_req, q_req = fc_load_requests(d1, config.fc)
    # (both commands read the same vectors)
    for _, addr, index in (("input", x_req.addr + 8, 0), ("weights", w_req.addr + 40, 1),
                              ("qblock", q_req.addr + 16, 1),
                              ("descriptor", program.desc_addr + 70, 1)):
        memory, status = _run(program, faults=[(addr, addr + 1)])
        expect(memory, status, ErrorCode.AXI_READ, index)
    # (the beat of the second row's last bytes holds outputs of the second tile only)
    last = program.out_addr + 40
    memory, status = _run(program, faults=[(last, last + 1)])
    expect(memory, status, ErrorCode.AXI_WRITE, 1)
    # MAC cycles: a command computes while its weights stream, not when its input or block
    # failed (or the block is bad)
    macs = _run(program)[1].mac_cycles // 2
    for addr, counted in ((w_req.addr, True), (q_req.addr + 16, False)):
        _, status = _run(program, faults=[(addr, addr + 1)])
        assert status.mac_cycles == macs * (1 + counted), addr
    broken = program.memory.copy()
    broken[d1.q_addr + 7] = 0x20
    _, status = _run(program, broken, faults=[(w_req.addr, w_req.addr + 1)])
    assert (status.code, status.mac_cycles) == (ErrorCode.AXI_READ, macs)
    np.testing.assert_array_equal(program.output(good_memory)[:, 0], want)


def test_fc_partial_sums_chain_across_lists_and_reset_on_errors():
    config = fc_build()
    program = _one_command(config)
    model = SocketModel(config)
    memory = program.memory.copy()
    assert model.run(memory, program.desc_addr, 1).done
    assert model.run(memory, program.desc_addr + DESCRIPTOR_BYTES, 1).done
    want, _ = _run(program)
    np.testing.assert_array_equal(memory, want)
    # after an error the partial sums are gone
    model.run(memory, program.desc_addr, 1)
    status = model.run(memory, program.desc_addr + 3, 1)           # BAD_DESC_ADDR
    assert status.code == ErrorCode.BAD_DESC_ADDR
    status = model.run(memory, program.desc_addr + DESCRIPTOR_BYTES, 1)
    assert (status.code, status.index) == (ErrorCode.ACC_STATE, 0)


def test_fc_counters():
    """Bytes read: the descriptor, every vector in whole beats, the shared block and the
    weight stream; MAC cycles: one per (block, step, vector)."""
    config = fc_build()
    desc = Descriptor(op=Op.FC, precision=Precision.A8W8.value, in_h=3, in_c=20, out_c=9,
                      in_row_stride=24, out_seg=9, out_row_stride=16, in_addr=0x1000,
                      w_addr=0x2000, q_addr=0x3000, out_addr=0x4000)
    x, w, q = fc_load_requests(desc, config.fc)
    assert (x.bytes, w.bytes, q.bytes) == (3 * 24, 3 * 5 * 16, 8 * (2 + 5))


def test_fuzzed_fc_lists_run_on_the_golden_model():
    """The fuzzer's FC lists (``sim.descriptor_fuzz``): the golden model runs them all,
    reaching every outcome the RTL is compared on."""
    from sim.descriptor_fuzz import random_list

    config = fc_build(plm_in_words=1024)
    rng = np.random.default_rng(12)
    codes = set()
    for _ in range(150):
        case = random_list(rng, config, ops=[Op.FC])
        _, status = case.run_golden()
        codes.add(status.code)
        if status.code == ErrorCode.AXI_WRITE:
            assert case.run_unfaulted().mac_cycles >= status.mac_cycles
    assert {ErrorCode.NONE, ErrorCode.AXI_READ, ErrorCode.AXI_WRITE, ErrorCode.BAD_QBLOCK,
            ErrorCode.BAD_LAYOUT} <= codes


def test_fuzzed_lists_of_two_datapaths_run_on_the_golden_model():
    """A build with conv2d and FC: the fuzzer's lists switch between the two datapaths, and
    the golden model runs every one of them."""
    from sim.descriptor_fuzz import random_list

    config = AcceleratorConfig(pes=4, plm_in_words=2048, plm_w_words=2048, plm_acc_words=1024,
                               max_width=256, fc=FCConfig(plm_in_words=1024))
    rng = np.random.default_rng(13)
    ops, codes = set(), set()
    for _ in range(60):
        case = random_list(rng, config, commands=(2, 6))
        ops |= {d.op for d in case.descriptors}
        codes.add(case.run_golden()[1].code)
    assert ops >= {Op.CONV2D, Op.FC} and ErrorCode.NONE in codes


@pytest.mark.parametrize("vectors", [1, 3])
@pytest.mark.parametrize("model", ["resnet8", "dscnn", "vww", "autoencoder"])
def test_real_fc_layers_on_the_socket_model(model, vectors):
    """Every FullyConnected layer of the four MLPerf Tiny models, with its real weights and
    quantization, tiled by the FC tiling compiler and run as a descriptor list on the socket
    model, equals the golden network run's output of the layer (bit-exact with LiteRT),
    for one vector and for a batch."""
    from sw.fixtures import model_fc_programs

    config = fc_build(plm_in_words=1024)
    programs = model_fc_programs(model, config, vectors=vectors)
    assert programs
    for name, program, _, want in programs:
        memory, status = program.run_golden()
        assert status.done and not status.error, (name, status)
        np.testing.assert_array_equal(program.output(memory)[:, 0, :], want, name)
