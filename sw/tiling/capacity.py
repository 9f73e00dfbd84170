"""The compiler's capacity model: what one tile may occupy on chip, derived from the hardware
configuration object (:class:`hls_ref.config.AcceleratorConfig`).

Two memory organisations are modelled:

* private PLMs (the Tessera accelerators): the input tile, the weight tile (with its
  quantization block) and the accumulator tile must each fit one bank of their PLM;
* one shared on-chip memory of ``ocm_bytes`` (seed 000's OCM, seed 004's 2 MB): the three
  tiles together must fit, twice over when double-buffered.

Sizes are in bytes as the PLMs hold them: activations and weights as 16-bit ST words (``lanes``
channels per word, the last word of a pixel zero-filled), accumulators as 32-bit words for every
PE of a command (a partial output-channel block still occupies ``pes`` accumulators).
"""

from dataclasses import dataclass
from math import lcm

import numpy as np

from hls_ref.config import DEFAULT_CONFIG, AcceleratorConfig
from hls_ref.formats import BEAT_BITS, OUTPUT_WIDTHS, make_layout
from hls_ref.precision import Precision

__all__ = ["Capacity", "TilingError"]

WORD_BYTES = 2          # one ST operand
ACC_BYTES = 4           # one accumulator
BEAT_BYTES = BEAT_BITS // 8
MAX_QBLOCK_CHANNELS = 256   # a quantization block describes at most 256 channels


class TilingError(ValueError):
    """A layer that cannot be tiled: the message names the layer, the limit and, where memory is
    the problem, the smallest memory that would work."""


def _ceil(a, b):
    return -(-a // b)


@dataclass(frozen=True)
class Capacity:
    """Capacity of one accelerator build at one precision (see the module docstring)."""

    config: AcceleratorConfig = DEFAULT_CONFIG
    precision: Precision = Precision.A8W8
    out_bits: int | None = None
    ocm_bytes: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "precision", Precision.parse(self.precision))
        if self.out_bits is None:       # a layer's output is the next layer's input
            object.__setattr__(self, "out_bits", self.precision.act_bits)
        if self.precision not in self.config.precisions:
            raise TilingError(f"the accelerator does not implement {self.precision.label}; "
                              f"it has {', '.join(p.label for p in self.config.precisions)}")
        if self.out_bits not in OUTPUT_WIDTHS:
            raise TilingError(f"output width must be one of {OUTPUT_WIDTHS}, not "
                              f"{self.out_bits}")
        if self.ocm_bytes is not None and self.ocm_bytes < 1:
            raise TilingError(f"on-chip memory must be positive, not {self.ocm_bytes}")

    # --- element widths and channel granularity -------------------------------------------
    @property
    def lanes(self):
        return self.precision.lanes

    @property
    def act_bits(self):
        return self.precision.act_bits

    @property
    def pes(self):
        return self.config.pes

    @property
    def in_step(self):
        """Input-channel tiles are multiples of this (whole beats of activations, so every
        DMA segment starts and ends on a beat), unless one tile holds every channel."""
        return BEAT_BITS // self.act_bits

    @property
    def out_step(self):
        """Output-channel tiles are multiples of this: whole PE blocks and whole output beats."""
        return lcm(self.pes, BEAT_BITS // self.out_bits)

    def layout(self, shape, bits=None, kind="hwc"):
        """External-memory layout (``"hwc"`` or ``"blocked"``) of an (H, W, C) activation
        tensor."""
        h, w, c = shape
        return make_layout(kind, h, w, c, bits or self.act_bits)

    # --- tile footprints (bytes) ------------------------------------------------------------
    def input_tile_bytes(self, rows, width, channels, kind="hwc"):
        """An input tile in its bank: as the DMA writes it (the layout ``kind`` of a ``rows x
        width x channels`` tensor, pixels padded to the layout's channel stride), which is
        never less than its ST words (numpy arrays work element-wise)."""
        per_beat = BEAT_BITS // self.act_bits
        channels = np.asarray(channels, np.int64)
        if kind == "blocked":
            stride = _ceil(channels, per_beat) * per_beat
        else:
            pow2 = np.left_shift(1, np.ceil(np.log2(np.maximum(channels, 1))).astype(np.int64))
            stride = np.where(channels >= per_beat, _ceil(channels, per_beat) * per_beat, pow2)
        row = _ceil(width * stride, per_beat) * per_beat
        return np.maximum(rows * row * self.act_bits // 8,
                          WORD_BYTES * rows * width * _ceil(channels, self.lanes))

    def weight_tile_bytes(self, kind, kernel, out_channels, in_channels):
        """Weights of one tile in PE blocks (the last zero-filled) plus its quantization block."""
        return (self.weight_bytes(kind, kernel, out_channels, in_channels)
                + self.qblock_bytes(out_channels))

    def weight_bytes(self, kind, kernel, out_channels, in_channels):
        """The weight blob of ``out_channels`` (in PE blocks, the last zero-filled) by
        ``in_channels`` (ignored for depthwise), as ``docs/formats.md`` section 2 lays it out."""
        kh, kw = kernel
        blocks = _ceil(out_channels, self.pes) * self.pes
        if kind == "conv":
            words = kh * kw * _ceil(in_channels, self.lanes) * blocks
        elif kind == "depthwise":
            words = _ceil(kh * kw, self.lanes) * blocks
        else:
            words = _ceil(in_channels, self.lanes) * blocks
        return WORD_BYTES * words

    def layer_weight_bytes(self, layer):
        """(weight blob, quantization blocks) bytes of a whole layer in one tile (a block
        describes at most 256 channels: wider layers have several)."""
        co = layer.out_channels
        blocks = _ceil(co, MAX_QBLOCK_CHANNELS)
        return (self.weight_bytes(layer.kind, layer.kernel, co, layer.in_channels),
                BEAT_BYTES * (blocks + 2 * co))

    @staticmethod
    def qblock_bytes(out_channels):
        """Quantization block: a header beat and two beats per output channel."""
        return BEAT_BYTES * (1 + 2 * out_channels)

    def acc_tile_bytes(self, rows, width, out_channels):
        return ACC_BYTES * rows * width * _ceil(out_channels, self.pes) * self.pes

    # --- the constraint ---------------------------------------------------------------------
    @property
    def banks(self):
        return self.config.banks

    @property
    def bank_bytes(self):
        """(input, weight, accumulator) bank sizes in bytes, for private PLMs."""
        c = self.config
        return (WORD_BYTES * c.plm_in_words, WORD_BYTES * c.plm_w_words,
                ACC_BYTES * c.plm_acc_words)

    @property
    def total_bytes(self):
        """All on-chip tile storage (both banks when double-buffered)."""
        return self.ocm_bytes if self.ocm_bytes is not None else self.config.plm_bytes

    def fits(self, in_bytes, w_bytes, acc_bytes):
        """Whether a tile of these footprints fits (numpy arrays work element-wise)."""
        if self.ocm_bytes is not None:
            return self.banks * (in_bytes + w_bytes + acc_bytes) <= self.ocm_bytes
        bi, bw, ba = self.bank_bytes
        return (in_bytes <= bi) & (w_bytes <= bw) & (acc_bytes <= ba)

    def needed(self, in_bytes, w_bytes, acc_bytes):
        """The smallest memory that holds a tile of these footprints, as text."""
        if self.ocm_bytes is not None:
            return f"an on-chip memory of {self.banks * (in_bytes + w_bytes + acc_bytes)} bytes"
        bi, bw, ba = self.bank_bytes
        parts = []
        for name, need, have, unit in (("input", in_bytes, bi, WORD_BYTES),
                                       ("weight", w_bytes, bw, WORD_BYTES),
                                       ("accumulator", acc_bytes, ba, ACC_BYTES)):
            if need > have:
                parts.append(f"{name} PLM banks of {_ceil(need, unit)} words "
                             f"(have {have // unit})")
        return ", ".join(parts) or "no more memory"

    def describe(self):
        if self.ocm_bytes is not None:
            db = "double-buffered" if self.config.double_buffer else "single-buffered"
            return f"{self.ocm_bytes} B shared on-chip memory, {db}"
        c = self.config
        return (f"private PLMs x{c.banks} banks: in {c.plm_in_words} w, w {c.plm_w_words} w, "
                f"acc {c.plm_acc_words} w")

    def as_dict(self):
        return {"config": self.config.as_dict(), "precision": self.precision.label,
                "out_bits": self.out_bits, "ocm_bytes": self.ocm_bytes}

    @classmethod
    def from_dict(cls, d):
        """The inverse of :meth:`as_dict` (a schedule's ``capacity``)."""
        config = dict(d["config"], max_kernel=tuple(d["config"]["max_kernel"]))
        return cls(AcceleratorConfig(**config), d["precision"], d["out_bits"], d["ocm_bytes"])
