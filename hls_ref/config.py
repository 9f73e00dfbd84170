"""The accelerator configuration object: one instance describes one accelerator build.

The same object sizes the RTL's memories and loops, gives the invocation-level golden model its
limits (:meth:`AcceleratorConfig.limits`) and gives the tiling compiler its capacity model
(``sw.tiling.capacity``). ``docs/tiling.md`` lists what each field constrains.
"""

from dataclasses import dataclass, field

from .formats import BEAT_BITS
from .precision import Precision

__all__ = ["DEFAULT_CONFIG", "ICE40_CONFIG", "AcceleratorConfig", "Limits"]

ALL_PRECISIONS = tuple(Precision)


def _positive(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")


@dataclass(frozen=True)
class AcceleratorConfig:
    """Capacities and limits of one accelerator build.

    PLM sizes are per bank: one tile must fit one bank. With ``double_buffer`` every PLM has
    two banks (ping-pong), so the load of the next tile and the store of the previous one can
    overlap the compute of this one; without it, one bank.

    * ``pes``: processing elements (output channels, channels or neurons per command);
    * ``plm_in_words``, ``plm_w_words``: input and weight PLM banks, in 16-bit ST words (the
      weight bank also holds the tile's quantization block);
    * ``plm_acc_words``: accumulator PLM bank, in 32-bit words;
    * ``max_kernel``: largest (h, w) kernel; ``max_stride``: largest stride;
    * ``max_width``: longest input tile row (pixels), the bound of the row loops;
    * ``bus_bits``: width of the external-memory data bus (bits per beat);
    * ``precisions``: the ST configurations the PE array implements;
    * ``pe_dsp``: the ST multipliers are built from DSP blocks (four 9x9 products per PE)
      rather than from LUTs (see :class:`hdl.st_multiplier.STMultiplier`); the arithmetic,
      cycles and capacities are the same either way.
    """

    pes: int = 16
    plm_in_words: int = 16384
    plm_w_words: int = 16384
    plm_acc_words: int = 8192
    max_kernel: tuple = (10, 10)
    max_stride: int = 2
    max_width: int = 2048
    bus_bits: int = BEAT_BITS
    double_buffer: bool = True
    precisions: tuple = field(default=ALL_PRECISIONS)
    pe_dsp: bool = True

    def __post_init__(self):
        for name in ("pes", "plm_in_words", "plm_w_words", "plm_acc_words", "max_stride",
                     "max_width"):
            _positive(name, getattr(self, name))
        if len(self.max_kernel) != 2:
            raise ValueError(f"max_kernel must be (h, w), not {self.max_kernel!r}")
        for size in self.max_kernel:
            _positive("max_kernel", size)
        if self.bus_bits != BEAT_BITS:
            raise ValueError(f"bus_bits must be {BEAT_BITS} (the tensor formats are defined "
                             f"in {BEAT_BITS}-bit beats), not {self.bus_bits!r}")
        if not isinstance(self.pe_dsp, bool):
            raise ValueError(f"pe_dsp must be a bool, not {self.pe_dsp!r}")
        object.__setattr__(self, "max_kernel", tuple(self.max_kernel))
        object.__setattr__(self, "precisions",
                           tuple(Precision.parse(p) for p in self.precisions))

    @property
    def banks(self):
        """PLM banks: 2 with double buffering, else 1."""
        return 2 if self.double_buffer else 1

    @property
    def plm_bytes(self):
        """Total on-chip PLM storage in bytes (every bank of the three PLMs)."""
        return self.banks * (2 * self.plm_in_words + 2 * self.plm_w_words
                             + 4 * self.plm_acc_words)

    def limits(self):
        """The invocation-level golden model's limits for one command (one bank)."""
        return Limits(pes=self.pes, plm_in=self.plm_in_words, plm_w=self.plm_w_words,
                      plm_acc=self.plm_acc_words, max_kernel=self.max_kernel,
                      max_stride=self.max_stride)

    def as_dict(self):
        return {"pes": self.pes, "plm_in_words": self.plm_in_words,
                "plm_w_words": self.plm_w_words, "plm_acc_words": self.plm_acc_words,
                "max_kernel": list(self.max_kernel), "max_stride": self.max_stride,
                "max_width": self.max_width, "bus_bits": self.bus_bits,
                "double_buffer": self.double_buffer,
                "precisions": [p.label for p in self.precisions], "pe_dsp": self.pe_dsp}


@dataclass(frozen=True)
class Limits:
    """Capacities of one command of a build, as the invocation-level golden model
    (``hls_ref.invocation``) checks them: :meth:`AcceleratorConfig.limits` derives them from
    the build (the fields below default to the default build's).

    ``pes``: processing elements (output channels, channels or neurons per command);
    ``plm_in``, ``plm_w``: input and weight PLM bank capacity in 16-bit ST words;
    ``plm_acc``: accumulator PLM bank capacity in 32-bit words; ``max_kernel``: (h, w) maximum;
    ``max_stride``: largest stride.
    """

    pes: int = AcceleratorConfig.pes
    plm_in: int = AcceleratorConfig.plm_in_words
    plm_w: int = AcceleratorConfig.plm_w_words
    plm_acc: int = AcceleratorConfig.plm_acc_words
    max_kernel: tuple = AcceleratorConfig.max_kernel
    max_stride: int = AcceleratorConfig.max_stride


DEFAULT_CONFIG = AcceleratorConfig()
# The iCE40UP5K build: 4 PEs, PLMs that fit its embedded RAM, LUT multipliers (its eight
# DSP blocks cannot hold the 16 products of four DSP-built PEs).
ICE40_CONFIG = AcceleratorConfig(pes=4, plm_in_words=2048, plm_w_words=2048,
                                 plm_acc_words=1024, max_width=256, pe_dsp=False)
