"""Data formats shared by the compiler, the golden models and the accelerators.

``docs/formats.md`` is the prose of this module; every statement there is exercised by
``tests/test_hls_ref_formats.py``. External memory is seen as 64-bit little-endian beats.

* :class:`TensorLayout` -- activation tensors: HWC, densely packed sub-words (16 x int4,
  8 x int8 or 4 x int16 per beat), each pixel's channel vector aligned so that a beat never
  straddles two pixels unless whole pixels share it, each row starting on a beat.
* :class:`BlockedLayout` -- activation tensors, channel-blocked: each row is its channel
  blocks (the channels of one beat) one after the other, each block the row's pixels in order;
  :func:`make_layout` picks either by name.
* :func:`conv_weight_blob`, :func:`depthwise_weight_blob`, :func:`fc_weight_blob` -- weights
  pre-arranged by the compiler as the PE array consumes them: one 16-bit ST ``B`` operand per
  PE per cycle, already in the crossed slot order.
* :func:`fc_stream_blob` -- the FC datapath's weights, streamed from memory as its PEs consume
  them: dense weight rows (:class:`FCRows`), no unused bits.
* :class:`QuantBlock` -- per-layer and per-output-channel requantization parameters (and the
  FC datapath's shared-scale layout).
* :func:`accumulator_bound` -- the no-overflow proof the compiler runs on the real weights.
"""

import struct
from dataclasses import dataclass

import numpy as np

from .precision import Precision
from .st import pack_weights, signed_field

__all__ = [
    "BEAT_BITS",
    "LAYOUTS",
    "OUTPUT_WIDTHS",
    "BlockedLayout",
    "FCRows",
    "QuantBlock",
    "TensorLayout",
    "accumulator_bound",
    "conv_weight_blob",
    "depthwise_weight_blob",
    "fc_stream_blob",
    "fc_stream_weights",
    "fc_weight_blob",
    "fold_input_zero_point",
    "make_layout",
]

BEAT_BITS = 64
OUTPUT_WIDTHS = (4, 8, 16)
LAYOUTS = ("hwc", "blocked")


def _check_bits(bits):
    if bits not in OUTPUT_WIDTHS:
        raise ValueError(f"element width must be one of {OUTPUT_WIDTHS} bits, not {bits}")


@dataclass(frozen=True)
class TensorLayout:
    """Where element ``(h, w, c)`` of an ``H x W x C`` tensor of ``bits``-bit values lives.

    ``channel_stride`` is C rounded up to a multiple of the elements per beat, or, when C is
    smaller than a beat, to the next power of two (so several whole pixels share one beat);
    ``row_stride`` (elements) is ``W * channel_stride`` rounded up to a whole beat. Element
    index ``h * row_stride + w * channel_stride + c`` occupies bits
    ``[index * bits, (index + 1) * bits)`` of the little-endian beat stream. Filler elements
    are zero.
    """

    height: int
    width: int
    channels: int
    bits: int

    kind = "hwc"

    def __post_init__(self):
        _check_bits(self.bits)
        for name in ("height", "width", "channels"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")

    @property
    def per_beat(self):
        """Elements per 64-bit beat."""
        return BEAT_BITS // self.bits

    @property
    def channel_stride(self):
        c, n = self.channels, self.per_beat
        if c >= n:
            return -(-c // n) * n
        return 1 << (c - 1).bit_length()

    @property
    def row_stride(self):
        n = self.per_beat
        return -(-self.width * self.channel_stride // n) * n

    @property
    def beats(self):
        """Size of the tensor in beats."""
        return self.height * self.row_stride // self.per_beat

    @property
    def bytes(self):
        return self.beats * BEAT_BITS // 8

    def element_index(self, h, w, c):
        return h * self.row_stride + w * self.channel_stride + c

    def pack(self, x):
        """HWC signed integers -> uint64 beats."""
        x = np.asarray(x, np.int64)
        if x.shape != (self.height, self.width, self.channels):
            raise ValueError(f"tensor shape {x.shape} does not match the layout "
                             f"{(self.height, self.width, self.channels)}")
        low, high = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if x.size and (x.min() < low or x.max() > high):
            raise ValueError(f"values must fit signed {self.bits} bits")
        grid = np.zeros((self.height, self.row_stride), np.uint64)
        rows = grid[:, :self.width * self.channel_stride].reshape(
            self.height, self.width, self.channel_stride)
        rows[..., :self.channels] = (x & ((1 << self.bits) - 1)).astype(np.uint64)
        fields = grid.reshape(-1, self.per_beat)
        shifts = (np.arange(self.per_beat, dtype=np.uint64) * np.uint64(self.bits))
        return np.bitwise_or.reduce(fields << shifts, axis=1)

    def unpack(self, beats):
        """uint64 beats -> HWC int64 values (filler elements ignored)."""
        beats = np.asarray(beats, np.uint64)
        if beats.shape != (self.beats,):
            raise ValueError(f"expected {self.beats} beats, got {beats.shape}")
        shifts = np.arange(self.per_beat, dtype=np.uint64) * np.uint64(self.bits)
        mask = np.uint64((1 << self.bits) - 1)
        fields = ((beats[:, None] >> shifts) & mask).astype(np.int64)
        fields = np.where(fields >= 1 << (self.bits - 1), fields - (1 << self.bits), fields)
        grid = fields.reshape(self.height, self.row_stride)
        rows = grid[:, :self.width * self.channel_stride].reshape(
            self.height, self.width, self.channel_stride)
        return rows[..., :self.channels]


@dataclass(frozen=True)
class BlockedLayout:
    """Channel-blocked activation tensor: where element ``(h, w, c)`` of an ``H x W x C``
    tensor of ``bits``-bit values lives (``docs/formats.md`` section 1b).

    A *block* is the channels of one 64-bit beat (``64 / bits``: 4 at 16 bits, 8 at 8 bits,
    16 at 4 bits); a tensor has ``blocks = ceil(C / block)`` of them, the last one zero-filled.
    Row ``h`` holds block 0 of every pixel of the row, then block 1 of every pixel, and so on:
    element ``(h, w, c)`` has index ``((h * blocks + c // block) * W + w) * block + c % block``
    and occupies bits ``[index * bits, (index + 1) * bits)`` of the little-endian beat stream.
    Every pixel's block is one beat, so a band of rows is contiguous, and so is a range of
    channel blocks inside one row (one DMA segment per row, where HWC needs one per pixel).
    """

    height: int
    width: int
    channels: int
    bits: int

    kind = "blocked"

    def __post_init__(self):
        _check_bits(self.bits)
        for name in ("height", "width", "channels"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")

    @property
    def per_beat(self):
        """Elements per 64-bit beat (= channels per block)."""
        return BEAT_BITS // self.bits

    @property
    def block(self):
        return self.per_beat

    @property
    def blocks(self):
        return -(-self.channels // self.block)

    @property
    def channel_stride(self):
        """Channels a pixel occupies, fillers included (whole blocks)."""
        return self.blocks * self.block

    @property
    def row_stride(self):
        """Elements per row (always whole beats)."""
        return self.blocks * self.width * self.block

    @property
    def block_stride(self):
        """Elements from one channel block of a row to the next."""
        return self.width * self.block

    @property
    def beats(self):
        return self.height * self.row_stride // self.per_beat

    @property
    def bytes(self):
        return self.beats * BEAT_BITS // 8

    def element_index(self, h, w, c):
        return ((h * self.blocks + c // self.block) * self.width + w) * self.block \
            + c % self.block

    def pack(self, x):
        """HWC signed integers -> uint64 beats."""
        x = np.asarray(x, np.int64)
        if x.shape != (self.height, self.width, self.channels):
            raise ValueError(f"tensor shape {x.shape} does not match the layout "
                             f"{(self.height, self.width, self.channels)}")
        low, high = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if x.size and (x.min() < low or x.max() > high):
            raise ValueError(f"values must fit signed {self.bits} bits")
        padded = np.zeros((self.height, self.width, self.channel_stride), np.uint64)
        padded[..., :self.channels] = (x & ((1 << self.bits) - 1)).astype(np.uint64)
        grid = padded.reshape(self.height, self.width, self.blocks, self.block)
        fields = grid.transpose(0, 2, 1, 3).reshape(-1, self.per_beat)
        shifts = np.arange(self.per_beat, dtype=np.uint64) * np.uint64(self.bits)
        return np.bitwise_or.reduce(fields << shifts, axis=1)

    def unpack(self, beats):
        """uint64 beats -> HWC int64 values (filler channels ignored)."""
        beats = np.asarray(beats, np.uint64)
        if beats.shape != (self.beats,):
            raise ValueError(f"expected {self.beats} beats, got {beats.shape}")
        shifts = np.arange(self.per_beat, dtype=np.uint64) * np.uint64(self.bits)
        mask = np.uint64((1 << self.bits) - 1)
        fields = ((beats[:, None] >> shifts) & mask).astype(np.int64)
        fields = np.where(fields >= 1 << (self.bits - 1), fields - (1 << self.bits), fields)
        grid = fields.reshape(self.height, self.blocks, self.width, self.block)
        hwc = grid.transpose(0, 2, 1, 3).reshape(self.height, self.width, self.channel_stride)
        return hwc[..., :self.channels]


def make_layout(kind, height, width, channels, bits):
    """The layout named ``kind`` (``"hwc"``: :class:`TensorLayout`, ``"blocked"``:
    :class:`BlockedLayout`) of an ``height x width x channels`` tensor of ``bits``-bit
    elements."""
    if kind == "hwc":
        return TensorLayout(height, width, channels, bits)
    if kind == "blocked":
        return BlockedLayout(height, width, channels, bits)
    raise ValueError(f"layout must be one of {LAYOUTS}, not {kind!r}")


def _words_to_blob(words):
    """16-bit words (in order) -> uint64 beats, word ``i`` at bits ``[16*(i%4), ...)`` of beat
    ``i//4``; the last beat is zero-filled."""
    words = np.asarray(words, np.uint64).ravel()
    words = np.concatenate([words, np.zeros(-len(words) % 4, np.uint64)])
    return np.bitwise_or.reduce(words.reshape(-1, 4) << (np.arange(4, dtype=np.uint64) * 16),
                                axis=1)


def _pe_blocks(values, pes):
    """Split the leading (output) axis into blocks of ``pes``, zero-filling the last one."""
    count = values.shape[0]
    blocks = -(-count // pes)
    padded = np.zeros((blocks * pes, *values.shape[1:]), np.int64)
    padded[:count] = values
    return padded.reshape(blocks, pes, *values.shape[1:])


def conv_weight_blob(w, precision, pes):
    """Conv2D weights (OHWI) -> beats, in PE-array order.

    Output channels are split into blocks of ``pes`` (one per PE, the last block zero-filled);
    within a block the order is ``(kh, kw, input-channel group, pe)``: each group of ``lanes``
    consecutive input channels is one ST ``B`` word per PE. Four words per beat.
    """
    precision = Precision.parse(precision)
    blocks = _pe_blocks(np.asarray(w, np.int64), pes)        # (B, P, kh, kw, C)
    words = pack_weights(blocks, precision)                    # (B, P, kh, kw, G)
    return _words_to_blob(words.transpose(0, 2, 3, 4, 1))


def depthwise_weight_blob(w, precision, pes):
    """Depthwise weights (HWC) -> beats: channels in blocks of ``pes``; the ``kh * kw`` taps
    of a channel (row-major) grouped ``lanes`` at a time into ST words; order
    ``(block, tap group, pe)``."""
    precision = Precision.parse(precision)
    kh, kw, c = np.asarray(w).shape
    taps = np.asarray(w, np.int64).reshape(kh * kw, c).T     # (C, taps)
    words = pack_weights(_pe_blocks(taps, pes), precision)    # (B, P, G)
    return _words_to_blob(words.transpose(0, 2, 1))


def fc_weight_blob(w, precision, pes):
    """FullyConnected weights ``[out, in]`` -> beats: outputs in blocks of ``pes``, inputs
    grouped ``lanes`` at a time; order ``(block, input group, pe)``."""
    precision = Precision.parse(precision)
    words = pack_weights(_pe_blocks(np.asarray(w, np.int64), pes), precision)   # (B, P, G)
    return _words_to_blob(words.transpose(0, 2, 1))


@dataclass(frozen=True)
class FCRows:
    """The weight rows of one FC command on a datapath of ``pes`` PEs of ``st_units`` ST
    multipliers (``docs/formats.md`` section 2).

    A *unit word* is the ST ``B`` operand of ``lanes`` consecutive inputs with the unused high
    bits of each slot removed: ``lanes * weight_bits`` bits (16, or 8 at a8w4 and a16w8), the
    weight of input ``g * lanes + k`` at bits ``[(lanes - 1 - k) * weight_bits, ...)``. A
    *weight row* is ``pes * st_units`` unit words, PE after PE, each PE's ``st_units`` words
    consecutive: what the PEs consume in one step. Outputs go in blocks of ``pes``, inputs in
    *steps* of ``st_units * lanes``; a command's blob is its rows in the order ``(block,
    step)``.
    """

    precision: Precision
    pes: int
    st_units: int
    inputs: int
    outputs: int

    @property
    def unit_bits(self):
        """Bits of one unit word."""
        return self.precision.lanes * self.precision.weight_bits

    @property
    def row_bits(self):
        return self.pes * self.st_units * self.unit_bits

    @property
    def row_beats(self):
        """64-bit beats of one weight row."""
        return self.row_bits // BEAT_BITS

    @property
    def step_inputs(self):
        """Inputs of one step (``st_units`` ST words)."""
        return self.st_units * self.precision.lanes

    @property
    def steps(self):
        return -(-self.inputs // self.step_inputs)

    @property
    def blocks(self):
        return -(-self.outputs // self.pes)

    @property
    def block_beats(self):
        """Beats of one output block's rows (a contiguous DMA segment)."""
        return self.steps * self.row_beats

    @property
    def beats(self):
        return self.blocks * self.block_beats


def _compact_words(words, precision):
    """ST ``B`` words -> unit words: each slot's low ``weight_bits`` bits, slot after slot."""
    p = precision
    words = np.asarray(words, np.int64)
    out = np.zeros(words.shape, np.int64)
    for k in range(p.lanes):
        field = (words >> (k * p.slot_bits)) & ((1 << p.weight_bits) - 1)
        out |= field << (k * p.weight_bits)
    return out


def fc_stream_blob(w, precision, pes, st_units):
    """FullyConnected weights ``[out, in]`` -> beats of the FC datapath's weight stream
    (:class:`FCRows`): outputs in blocks of ``pes`` and inputs in steps of ``st_units * lanes``,
    both zero-filled; rows in the order ``(block, step)``, unit words packed densely."""
    precision = Precision.parse(precision)
    w = np.asarray(w, np.int64)
    rows = FCRows(precision, pes, st_units, w.shape[1], w.shape[0])
    padded = np.zeros((rows.blocks * pes, rows.steps * rows.step_inputs), np.int64)
    padded[:w.shape[0], :w.shape[1]] = w
    words = _compact_words(pack_weights(padded, precision), precision)  # (O, steps * U)
    words = words.reshape(rows.blocks, pes, rows.steps, st_units).transpose(0, 2, 1, 3)
    words = words.reshape(-1, BEAT_BITS // rows.unit_bits).astype(np.uint64)
    shifts = np.arange(words.shape[1], dtype=np.uint64) * np.uint64(rows.unit_bits)
    return np.bitwise_or.reduce(words << shifts, axis=1)


def fc_stream_weights(beats, rows):
    """The weights ``[blocks * pes, steps * st_units * lanes]`` that the beats of a weight
    stream (:class:`FCRows` ``rows``) hold: the inverse of :func:`fc_stream_blob`, zero-filled
    parts included."""
    p = rows.precision
    beats = np.asarray(beats, np.uint64)
    per_beat = BEAT_BITS // rows.unit_bits
    shifts = np.arange(per_beat, dtype=np.uint64) * np.uint64(rows.unit_bits)
    words = ((beats[:, None] >> shifts) & np.uint64((1 << rows.unit_bits) - 1)).astype(np.int64)
    words = words.reshape(rows.blocks, rows.steps, rows.pes, rows.st_units)
    words = words.transpose(0, 2, 1, 3).reshape(rows.blocks * rows.pes, -1)
    lanes = [signed_field(words, (p.lanes - 1 - k) * p.weight_bits, p.weight_bits)
             for k in range(p.lanes)]
    return np.stack(lanes, axis=-1).reshape(words.shape[0], -1)


def fold_input_zero_point(bias, w_by_channel, input_zero_point):
    """Bias with the input zero point folded in: ``bias[o] - zp_in * sum(w[o, ...])``.

    The accelerators multiply raw activations (padding with the zero point) and add this
    bias, which equals TFLite's ``sum((x - zp_in) * w) + bias`` exactly.
    """
    w = np.asarray(w_by_channel, np.int64)
    sums = w.reshape(w.shape[0], -1).sum(axis=1)
    bias = np.zeros(w.shape[0], np.int64) if bias is None else np.asarray(bias, np.int64)
    return bias - input_zero_point * sums


def accumulator_bound(w_by_channel, folded_bias, act_bits):
    """Largest |accumulator| any input can produce, per output channel.

    ``|bias| + 2**(act_bits-1) * sum(|w|)``: every partial sum, in any order and across any
    input-channel tiling, is bounded by it too. The compiler refuses a layer whose bound
    exceeds the accumulator (int32).
    """
    w = np.abs(np.asarray(w_by_channel, np.int64))
    return np.abs(np.asarray(folded_bias, np.int64)) + (w.reshape(w.shape[0], -1).sum(axis=1)
                                                        << (act_bits - 1))


def _check_field(name, values, bits):
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    bad = [int(v) for v in values if not low <= int(v) <= high]
    if bad:
        raise ValueError(f"{name} {bad[0]} does not fit signed {bits} bits")


def _double_bits(value):
    """The IEEE binary64 bit pattern of ``value``."""
    return struct.unpack("<Q", struct.pack("<d", float(value)))[0]


def _bits_double(bits):
    return struct.unpack("<d", struct.pack("<Q", int(bits)))[0]


@dataclass(frozen=True)
class QuantBlock:
    """Requantization parameters of one layer tile, as the accelerator loads them.

    Layout (64-bit beats): beat 0 is the header -- bits 0-15 output zero point, 16-31 clamp
    minimum, 32-47 clamp maximum (all int16), bit 48 the scaling mode (0 fixed point, 1 double
    precision), bit 49 the shared layout, bits 56-63 the channel count minus one; then two
    beats per output channel: the folded int32 bias (bits 0-31) and the Q31 multiplier (bits
    32-63), then either the int8 shift (fixed point, bits 0-7) or the IEEE binary64 scale
    (double precision).

    The *shared* layout (bits 48 and 49 set; :meth:`pack` with ``shared=True``), which the FC
    datapath reads, has one double-precision scale for every channel: beat 1 is the scale,
    then the folded biases, two per beat (channel ``2j`` in bits 0-31 of beat ``2 + j``,
    ``2j + 1`` in bits 32-63; the last beat's free half is zero).
    """

    zero_point: int
    act_min: int
    act_max: int
    bias: np.ndarray
    multiplier: np.ndarray
    shift: np.ndarray
    real_scale: np.ndarray | None = None

    @property
    def channels(self):
        return len(self.bias)

    def select(self, lo, hi):
        """The block of output channels ``[lo, hi)`` (what one tile's command loads)."""
        return QuantBlock(self.zero_point, self.act_min, self.act_max, self.bias[lo:hi],
                          self.multiplier[lo:hi], self.shift[lo:hi],
                          None if self.real_scale is None else self.real_scale[lo:hi])

    @property
    def shared_scale(self):
        """The one double-precision scale of every channel, or None (fixed-point scaling, or
        scales that differ between channels)."""
        if self.real_scale is None or not len(self.real_scale):
            return None
        scales = np.asarray(self.real_scale, np.float64)
        return float(scales[0]) if np.all(scales == scales[0]) else None

    def pack(self, *, shared=False):
        """-> uint64 beats; a field outside its width raises ``ValueError`` naming it.

        ``shared``: the shared layout (one double-precision scale for every channel)."""
        n = self.channels
        if not 1 <= n <= 256:
            raise ValueError(f"a quantization block holds 1 to 256 channels, not {n}")
        _check_field("zero point", [self.zero_point], 16)
        _check_field("clamp minimum", [self.act_min], 16)
        _check_field("clamp maximum", [self.act_max], 16)
        _check_field("bias", self.bias, 32)
        _check_field("shift", self.shift, 8)
        if any(not 0 <= int(m) < 1 << 31 for m in self.multiplier):
            raise ValueError("multiplier must be a Q31 significand in [0, 2**31)")
        header = ((self.zero_point & 0xFFFF) | (self.act_min & 0xFFFF) << 16
                  | (self.act_max & 0xFFFF) << 32
                  | (int(self.real_scale is not None) << 48) | int(shared) << 49
                  | (n - 1) << 56)
        if shared:
            scale = self.shared_scale
            if scale is None:
                raise ValueError("the shared layout needs one double-precision scale for "
                                 "every channel")
            biases = [int(b) & 0xFFFF_FFFF for b in self.bias] + [0] * (n % 2)
            return np.array([header, _double_bits(scale)]
                            + [lo | hi << 32 for lo, hi in zip(biases[0::2], biases[1::2])],
                            np.uint64)
        beats = [header]
        for c in range(n):
            bias, mult = int(self.bias[c]), int(self.multiplier[c])
            beats.append((bias & 0xFFFF_FFFF) | mult << 32)
            if self.real_scale is None:
                beats.append(int(self.shift[c]) & 0xFF)
            else:
                beats.append(_double_bits(self.real_scale[c]))
        return np.array(beats, np.uint64)

    @classmethod
    def unpack(cls, beats):
        beats = [int(b) for b in np.asarray(beats, np.uint64)]

        def signed(value, bits):
            return value - (1 << bits) if value >> (bits - 1) else value

        header = beats[0]
        n = (header >> 56) + 1
        if header >> 49 & 1:
            if len(beats) != 2 + (n + 1) // 2:
                raise ValueError(f"a shared block of {n} channels has {2 + (n + 1) // 2} "
                                 f"beats, not {len(beats)}")
            halves = [b >> (32 * k) & 0xFFFF_FFFF for b in beats[2:] for k in range(2)]
            zeros = np.zeros(n, np.int64)
            return cls(signed(header & 0xFFFF, 16), signed(header >> 16 & 0xFFFF, 16),
                       signed(header >> 32 & 0xFFFF, 16),
                       np.array([signed(h, 32) for h in halves[:n]], np.int64), zeros, zeros,
                       np.full(n, _bits_double(beats[1])))
        if len(beats) != 1 + 2 * n:
            raise ValueError(f"a block of {n} channels has {1 + 2 * n} beats, not {len(beats)}")
        double = bool(header >> 48 & 1)
        body = beats[1:1 + 2 * n]
        bias = np.array([signed(b & 0xFFFF_FFFF, 32) for b in body[0::2]], np.int64)
        mult = np.array([b >> 32 for b in body[0::2]], np.int64)
        if double:
            scale = np.array([struct.unpack("<d", struct.pack("<Q", b))[0] for b in body[1::2]])
            shift = np.zeros(n, np.int64)
        else:
            scale = None
            shift = np.array([signed(b & 0xFF, 8) for b in body[1::2]], np.int64)
        return cls(signed(header & 0xFFFF, 16), signed(header >> 16 & 0xFFFF, 16),
                   signed(header >> 32 & 0xFFFF, 16), bias, mult, shift, scale)
