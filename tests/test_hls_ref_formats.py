"""Every statement of docs/formats.md, checked (the section each test covers is named)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hls_ref import Precision, pack_activations, pack_weights
from hls_ref.formats import (
    BlockedLayout,
    QuantBlock,
    TensorLayout,
    accumulator_bound,
    conv_weight_blob,
    depthwise_weight_blob,
    fc_weight_blob,
    fold_input_zero_point,
    make_layout,
)
from hls_ref.layers import conv2d_acc


def _field(beats, index, bits):
    """Element ``index`` of a little-endian stream of 64-bit beats, unsigned."""
    per_beat = 64 // bits
    return (int(beats[index // per_beat]) >> (bits * (index % per_beat))) & ((1 << bits) - 1)


# --- 1. Activation tensors ------------------------------------------------------------------


@pytest.mark.parametrize("channels, bits, stride", [
    (3, 8, 4), (1, 8, 1), (2, 4, 2), (5, 4, 8), (8, 8, 8), (10, 8, 16), (16, 4, 16),
    (17, 4, 32), (3, 16, 4), (4, 16, 4), (6, 16, 8), (64, 8, 64)])
def test_channel_stride(channels, bits, stride):
    assert TensorLayout(1, 1, channels, bits).channel_stride == stride


@pytest.mark.parametrize("width, channels, bits, row", [(5, 1, 8, 8), (10, 1, 8, 16),
                                                        (3, 3, 8, 16), (96, 3, 8, 384),
                                                        (7, 16, 4, 112), (5, 64, 8, 320)])
def test_rows_start_on_a_beat(width, channels, bits, row):
    layout = TensorLayout(2, width, channels, bits)
    assert layout.row_stride == row and row % layout.per_beat == 0
    assert layout.beats == 2 * row // layout.per_beat
    assert layout.bytes == 8 * layout.beats


@settings(max_examples=60)
@given(st.integers(1, 6), st.integers(1, 9), st.integers(1, 40), st.sampled_from([4, 8, 16]),
       st.integers(0, 2 ** 32 - 1))
def test_tensor_packing_round_trip_and_bit_positions(h, w, c, bits, seed):
    layout = TensorLayout(h, w, c, bits)
    rng = np.random.default_rng(seed)
    x = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (h, w, c))
    beats = layout.pack(x)
    assert beats.dtype == np.uint64 and beats.shape == (layout.beats,)
    assert np.array_equal(layout.unpack(beats), x)
    for _ in range(5):
        i, j, k = (int(rng.integers(0, n)) for n in (h, w, c))
        index = layout.element_index(i, j, k)
        assert index == i * layout.row_stride + j * layout.channel_stride + k
        assert _field(beats, index, bits) == int(x[i, j, k]) & ((1 << bits) - 1)
    # filler elements are zero
    used = {layout.element_index(i, j, k) for i in range(h) for j in range(w) for k in range(c)}
    fillers = [n for n in range(layout.beats * layout.per_beat) if n not in used]
    assert all(_field(beats, n, bits) == 0 for n in fillers)


def test_int8_example_from_the_document():
    layout = TensorLayout(1, 2, 3, 8)                   # two pixels of three channels
    beats = layout.pack(np.array([[[1, 2, 3], [-1, -2, -3]]]))
    assert beats.tolist() == [0x00FD_FEFF_0003_0201]


@pytest.mark.parametrize("precision", list(Precision))
def test_activation_words_are_st_a_operands(precision):
    """A 16-bit word of a packed activation tensor is the ST ``A`` operand of the channel
    group it holds (when the channel stride is a multiple of the lanes)."""
    rng = np.random.default_rng(precision.value)
    bits = precision.act_bits
    x = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (3, 4, 8))
    beats = TensorLayout(3, 4, 8, bits).pack(x)
    words = beats.view(np.uint16).reshape(3, 4, -1)[..., :8 // precision.lanes]
    assert np.array_equal(words, pack_activations(x, precision))


# --- 1b. Channel-blocked activation tensors --------------------------------------------------


@pytest.mark.parametrize("h, w, c, bits, seed", [(2, 3, 5, 8, 0), (3, 4, 17, 4, 1),
                                                 (1, 7, 9, 16, 2), (4, 2, 16, 8, 3),
                                                 (2, 5, 1, 4, 4), (3, 3, 40, 8, 5)])
def test_blocked_packing_round_trip_and_bit_positions(h, w, c, bits, seed):
    rng = np.random.default_rng(seed)
    lay = BlockedLayout(h, w, c, bits)
    x = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (h, w, c))
    beats = lay.pack(x)
    assert beats.shape == (lay.beats,) and lay.bytes == 8 * lay.beats
    assert np.array_equal(lay.unpack(beats), x)
    block = 64 // bits
    blocks = -(-c // block)
    assert lay.row_stride == blocks * w * block
    for hh, ww, cc in [(0, 0, 0), (h - 1, w - 1, c - 1), (h // 2, w // 2, c // 2)]:
        index = ((hh * blocks + cc // block) * w + ww) * block + cc % block
        assert lay.element_index(hh, ww, cc) == index
        assert _field(beats, index, bits) == int(x[hh, ww, cc]) & ((1 << bits) - 1)
    # fillers of the last block are zero
    for hh in range(h):
        for ww in range(w):
            for cc in range(c, blocks * block):
                assert _field(beats, lay.element_index(hh, ww, cc), bits) == 0


def test_blocked_example_from_the_document():
    # two int8 pixels of 10 channels: block 0 of both pixels, then block 1 of both
    x = np.array([[list(range(1, 11)), list(range(-1, -11, -1))]])
    beats = BlockedLayout(1, 2, 10, 8).pack(x)
    assert [f"{int(b):016X}" for b in beats] == [
        "0807060504030201", "F8F9FAFBFCFDFEFF", "0000000000000A09", "000000000000F6F7"]


def test_blocked_bands_and_channel_blocks_are_contiguous():
    # a band of rows, and a run of channel blocks inside a row, are one contiguous range
    lay = BlockedLayout(4, 3, 20, 8)
    idx = np.array([[[lay.element_index(h, w, c) for c in range(20)] for w in range(3)]
                    for h in range(4)])
    band = np.sort(idx[1:3].ravel())
    assert band[-1] - band[0] + 1 <= 2 * lay.row_stride and set(
        range(lay.row_stride, 3 * lay.row_stride)) >= set(band.tolist())
    blocks = np.sort(idx[2, :, 8:16].ravel())
    assert np.array_equal(blocks, np.arange(blocks[0], blocks[0] + 24))


def test_make_layout_names_both_layouts():
    assert isinstance(make_layout("hwc", 1, 2, 3, 8), TensorLayout)
    assert isinstance(make_layout("blocked", 1, 2, 3, 8), BlockedLayout)
    with pytest.raises(ValueError, match="layout must be one of"):
        make_layout("chw", 1, 2, 3, 8)
    with pytest.raises(ValueError, match="element width"):
        BlockedLayout(1, 1, 1, 2)


def test_bad_layouts_are_refused():
    with pytest.raises(ValueError, match=r"element width must be one of \(4, 8, 16\) bits, "
                                         r"not 2"):
        TensorLayout(1, 1, 1, 2)
    with pytest.raises(ValueError, match=r"channels must be at least 1, not 0"):
        TensorLayout(1, 1, 0, 8)
    with pytest.raises(ValueError, match=r"values must fit signed 4 bits"):
        TensorLayout(1, 1, 1, 4).pack(np.array([[[8]]]))


# --- 2. Weight blobs ------------------------------------------------------------------------


def _words(blob):
    return [(int(b) >> (16 * k)) & 0xFFFF for b in blob for k in range(4)]


@pytest.mark.parametrize("precision", list(Precision))
def test_conv_weight_blob_order(precision):
    rng = np.random.default_rng(3)
    bits = precision.weight_bits
    pes, cout, kh, kw, cin = 4, 6, 2, 3, 5
    w = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), (cout, kh, kw, cin))
    words = _words(conv_weight_blob(w, precision, pes))
    groups = -(-cin // precision.lanes)
    b = pack_weights(w, precision)
    index = 0
    for block in range(2):
        for i in range(kh):
            for j in range(kw):
                for g in range(groups):
                    for pe in range(pes):
                        o = block * pes + pe
                        assert words[index] == (int(b[o, i, j, g]) if o < cout else 0)
                        index += 1
    assert all(word == 0 for word in words[index:]) and len(words) - index < 4


@pytest.mark.parametrize("precision", [Precision.A8W8, Precision.A4W4])
def test_depthwise_and_fc_weight_blob_order(precision):
    rng = np.random.default_rng(5)
    w = rng.integers(-8, 8, (3, 3, 5))
    words = _words(depthwise_weight_blob(w, precision, 4))
    taps = pack_weights(w.reshape(9, 5).T, precision)                  # (C, tap groups)
    groups = taps.shape[1]
    assert words[:groups * 4] == [int(taps[pe, g]) for g in range(groups) for pe in range(4)]
    assert words[groups * 4:groups * 8] == [int(taps[4, g]) if pe == 0 else 0
                                            for g in range(groups) for pe in range(4)]
    fc = rng.integers(-8, 8, (6, 7))
    words = _words(fc_weight_blob(fc, precision, 4))
    packed = pack_weights(fc, precision)
    assert words[:packed.shape[1] * 4] == [int(packed[pe, g]) for g in range(packed.shape[1])
                                           for pe in range(4)]


# --- 3. Quantization block ------------------------------------------------------------------


def test_quant_block_layout():
    q = QuantBlock(-5, -128, 127, np.array([-7, 1 << 20]), np.array([1 << 30, 1234567890]),
                   np.array([-3, 2]))
    beats = q.pack()
    assert len(beats) == 1 + 2 * 2
    header = int(beats[0])
    assert header & 0xFFFF == 0xFFFB                           # zero point -5
    assert (header >> 16) & 0xFFFF == 0xFF80 and (header >> 32) & 0xFFFF == 127
    assert (header >> 48) & 1 == 0 and header >> 56 == 1     # fixed point, 2 channels
    assert int(beats[1]) == (1 << 62) | 0xFFFF_FFF9            # bias -7, multiplier 2**30
    assert int(beats[2]) == 0xFD                               # shift -3
    back = QuantBlock.unpack(beats)
    assert back.zero_point == -5 and back.act_min == -128 and back.act_max == 127
    assert back.bias.tolist() == [-7, 1 << 20] and back.shift.tolist() == [-3, 2]
    assert back.real_scale is None


def test_quant_block_double_precision_mode():
    q = QuantBlock(3, 3, 127, np.array([10]), np.array([1 << 30]), np.array([0]),
                   np.array([0.0123]))
    beats = q.pack()
    assert (int(beats[0]) >> 48) & 1 == 1
    assert beats[2].view(np.float64) == 0.0123
    assert QuantBlock.unpack(beats).real_scale.tolist() == [0.0123]


# --- 4./5. Zero points, padding and the accumulator bound -----------------------------------


@pytest.mark.parametrize("zp", [-128, -3, 0, 77])
def test_folded_bias_with_zero_point_padding_equals_tflite(zp):
    rng = np.random.default_rng(zp + 200)
    x = rng.integers(-128, 128, (6, 5, 3))
    w = rng.integers(-127, 128, (4, 3, 3, 3))
    bias = rng.integers(-1000, 1000, 4)
    padding = (1, 2, 0, 1)
    tflite = conv2d_acc(x, w, bias, zp, padding=padding)
    # raw activations, padded with the zero point, plus the folded bias
    raw = conv2d_acc(np.pad(x, ((1, 2), (0, 1), (0, 0)), constant_values=zp), w,
                     fold_input_zero_point(bias, w, zp), 0)
    assert np.array_equal(raw, tflite)


def test_accumulator_bound_is_sound_and_attained():
    rng = np.random.default_rng(9)
    w = rng.integers(-127, 128, (3, 2, 2, 4))
    folded = rng.integers(-5000, 5000, 3)
    bound = accumulator_bound(w, folded, 8)
    for _ in range(50):
        x = rng.integers(-128, 128, (2, 2, 4))
        acc = np.tensordot(w, x, axes=([1, 2, 3], [0, 1, 2])) + folded
        assert np.all(np.abs(acc) <= bound)
    # the worst input pushes every product the bias's way: the bound is tight up to the
    # asymmetry of two's complement (127 against -128)
    sign = np.where(folded >= 0, 1, -1)[:, None, None, None]
    worst = np.where(w * sign >= 0, 127, -128)
    attained = np.abs((w * worst).reshape(3, -1).sum(axis=1) + folded)
    assert np.all(attained <= bound)
    assert np.all(bound - attained <= np.abs(w).reshape(3, -1).sum(axis=1))


@pytest.mark.parametrize("fields, message", [
    (dict(act_max=40000), r"clamp maximum 40000 does not fit signed 16 bits"),
    (dict(bias=np.array([1 << 33])), r"bias 8589934592 does not fit signed 32 bits"),
    (dict(shift=np.array([200])), r"shift 200 does not fit signed 8 bits"),
    (dict(multiplier=np.array([1 << 31])), r"multiplier must be a Q31 significand"),
])
def test_quant_block_fields_out_of_range_are_refused(fields, message):
    q = dict(zero_point=0, act_min=-128, act_max=127, bias=np.array([1]),
             multiplier=np.array([1 << 30]), shift=np.array([0])) | fields
    with pytest.raises(ValueError, match=message):
        QuantBlock(**q).pack()


def test_quant_block_unpack_checks_its_length():
    beats = QuantBlock(0, -128, 127, np.zeros(2), np.zeros(2), np.zeros(2)).pack()
    with pytest.raises(ValueError, match=r"a block of 2 channels has 5 beats, not 3"):
        QuantBlock.unpack(beats[:3])


@pytest.mark.parametrize("out_bits", [4, 8, 16])
def test_output_width_selects_the_stored_element_width(out_bits):
    """Section 6: requantized outputs are clamped to ``out_bits`` and stored in that layout."""
    from hls_ref.invocation import Command, ConvAccelerator

    rng = np.random.default_rng(out_bits)
    x = rng.integers(-128, 128, (4, 4, 4))
    w = rng.integers(-127, 128, (3, 1, 1, 4))
    q = QuantBlock(0, -(1 << 15), (1 << 15) - 1, np.zeros(3), np.full(3, 1 << 30),
                   np.zeros(3))
    y = ConvAccelerator().invoke(Command(out_bits=out_bits), x, w, q)
    assert y.min() >= -(1 << (out_bits - 1)) and y.max() <= (1 << (out_bits - 1)) - 1
    layout = TensorLayout(4, 4, 3, out_bits)
    assert np.array_equal(layout.unpack(layout.pack(y)), y)


def test_quant_block_channel_count_limits():
    for n in (0, 257):
        q = QuantBlock(0, -128, 127, np.zeros(n), np.zeros(n), np.zeros(n))
        with pytest.raises(ValueError, match=f"holds 1 to 256 channels, not {n}"):
            q.pack()
