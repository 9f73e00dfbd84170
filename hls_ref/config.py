"""The accelerator configuration object: one instance describes one accelerator build.

The same object sizes the RTL's memories and loops, gives the invocation-level golden model its
limits (:meth:`AcceleratorConfig.limits`) and gives the tiling compiler its capacity model
(``sw.tiling.capacity``). ``docs/tiling.md`` lists what each field constrains.

An accelerator is a socket with one or more datapaths (``docs/accelerator.md``): the conv2d
datapath's parameters are the top-level fields (``conv`` says whether it is built), the other
datapaths' are sections of their own (:class:`DepthwiseConfig`, :class:`FCConfig`), absent
(None) when the build has no such datapath. :attr:`AcceleratorConfig.ops` lists the
datapaths, in the order the socket holds them.
"""

import dataclasses
from dataclasses import InitVar, asdict, dataclass, field

from .descriptor import Op
from .formats import BEAT_BITS
from .precision import Precision

__all__ = [
    "BOOT_SOURCES",
    "CONV_SOC",
    "CPU_SOC",
    "DEFAULT_CONFIG",
    "DEFAULT_SOC",
    "DSP1_BUDGET_CONFIG",
    "DSP1_CONFIG",
    "DSP2_CONFIG",
    "DSP_BUDGET_CONFIG",
    "FC_CONFIG",
    "FC_MAX_OUTPUTS",
    "ICE40_CONFIG",
    "MAX_SOC_ACCELERATORS",
    "OTHER_DSP_BLOCKS",
    "PERCHANNEL_CONFIG",
    "PE_MULTIPLIERS",
    "RAM_KINDS",
    "REQUANT_DSP_BLOCKS",
    "SOC_ACCELERATOR_CONFIG",
    "SOC_BUILDS",
    "SPRAM_BLOCK_BYTES",
    "STORE_ELEMENTS",
    "AcceleratorConfig",
    "DepthwiseConfig",
    "FCConfig",
    "Limits",
    "SocConfig",
    "store_group",
]

ALL_PRECISIONS = tuple(Precision)

#: How the ST multipliers of the PE array can be built, and the DSP blocks each one takes:
#: ``lut`` from LUTs alone (the iCE40 build), ``dsp4`` from four 9x9 products (one 18x18 DSP
#: block each), ``dsp2`` from two 18x18 products (a 16x16, 16x8 or 8x8 product, or a pair of
#: 4x4 products summed, per block and cycle), ``dsp1`` from one 18x18 product (the first unit
#: of ``dsp2``) and LUT nibble products for the second unit's lanes (an 8x8 or 8x4 product,
#: or a pair of 4x4 products). See :class:`hdl.st_multiplier.STMultiplier`.
PE_MULTIPLIERS = {"lut": 0, "dsp4": 4, "dsp2": 2, "dsp1": 1}

#: DSP blocks of the conv2d accelerator outside its PE array and its store's requantizers (the
#: front end's shared multiplier), when its multipliers may use DSP blocks;
#: ``tests/test_hdl_conv2d_dsp_count.py`` counts the blocks the netlist instantiates.
OTHER_DSP_BLOCKS = 1

#: DSP blocks of one requantizer (:class:`hdl.requant.Requantizer`: four 16 x 16 products).
REQUANT_DSP_BLOCKS = 4

#: Elements a store unit can requantize per cycle (its requantizers; ``hdl.store``).
STORE_ELEMENTS = (1, 2, 4, 8)


def store_group(elements, out_bits):
    """Elements of one output pixel a store with ``elements`` requantizers requantizes per
    cycle, for ``out_bits``-bit outputs (4, 8 or 16): at most a 64-bit beat's worth."""
    return min(elements, BEAT_BITS // out_bits)


def _store_elements(value):
    if value not in STORE_ELEMENTS or isinstance(value, bool):
        raise ValueError(f"store_elements must be one of {STORE_ELEMENTS}, not {value!r}")


def _positive(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")


def _precisions(value):
    return tuple(Precision.parse(p) for p in value)


@dataclass(frozen=True)
class DepthwiseConfig:
    """The per-channel datapath of a build: depthwise convolution, global average pooling and
    the element-wise add (``hls_ref.perchannel``, ``docs/accelerator.md``).

    * ``lanes``: channels per command, one PE each (a multiple of 4: a beat of the weight
      blob or of the quantization block holds four PEs' words);
    * ``precisions``: the ST configurations its PEs implement;
    * ``plm_pixels``: input PLM bank, in pixels of ``lanes`` elements (an add's two inputs
      share it);
    * ``acc_pixels``: output buffer bank, in pixels of ``lanes`` 32-bit sums (a command's
      output tile; the store requantizes from it, as conv2d's does from its accumulator PLM);
    * ``max_kernel``: largest depthwise (h, w) kernel (the window registers' size);
    * ``max_stride``: largest depthwise stride;
    * ``requantizers``: input elements an add scales per cycle (each input element is
      scaled by its multiplier before the sum);
    * ``store_elements``: output elements the store requantizes per cycle (its requantizers,
      one of :data:`STORE_ELEMENTS`; at most 64 bits of output a cycle, so four at 16 bits);
    * ``pe_dsp``: the ST multipliers are built from DSP blocks (see
      :class:`hdl.st_multiplier.STMultiplier`);
    * ``banks``: banks of the input PLM (with the weight and quantization registers) and of
      the output buffer, 1 or 2; each bank holds one command's tile (``plm_pixels``,
      ``acc_pixels``). With two, a command's loads overlap the previous command's compute
      and its compute the previous command's store.
    """

    lanes: int = 16
    precisions: tuple = field(default=tuple(Precision))
    plm_pixels: int = 1024
    acc_pixels: int = 256
    max_kernel: tuple = (3, 3)
    max_stride: int = 2
    requantizers: int = 4
    store_elements: int = 8
    pe_dsp: bool = True
    banks: int = 2

    def __post_init__(self):
        for name in ("lanes", "plm_pixels", "acc_pixels", "max_stride", "requantizers"):
            _positive(name, getattr(self, name))
        _store_elements(self.store_elements)
        if self.banks not in (1, 2):
            raise ValueError(f"banks must be 1 or 2, not {self.banks!r}")
        if self.lanes % 4:
            raise ValueError(f"lanes must be a multiple of 4, not {self.lanes!r}")
        if len(self.max_kernel) != 2:
            raise ValueError(f"max_kernel must be (h, w), not {self.max_kernel!r}")
        for size in self.max_kernel:
            _positive("max_kernel", size)
        if not isinstance(self.pe_dsp, bool):
            raise ValueError(f"pe_dsp must be a bool, not {self.pe_dsp!r}")
        object.__setattr__(self, "max_kernel", tuple(self.max_kernel))
        object.__setattr__(self, "precisions", _precisions(self.precisions))

    @property
    def weight_rows(self):
        """Rows of the weight PLM bank (``lanes`` words each): the taps of the largest kernel
        at one tap per word (16-bit activations)."""
        return self.max_kernel[0] * self.max_kernel[1]

    def limits(self):
        """The invocation-level golden model's limits for one command: the input PLM as
        ``plm_pixels`` rows of ``lanes`` words, the weight PLM as :attr:`weight_rows` rows,
        the output buffer as ``acc_pixels`` rows of ``lanes`` sums."""
        return Limits(pes=self.lanes, plm_in=self.plm_pixels * self.lanes,
                      plm_w=self.weight_rows * self.lanes, plm_acc=self.acc_pixels * self.lanes,
                      max_kernel=self.max_kernel, max_stride=self.max_stride)

    def as_dict(self):
        return asdict(self) | {"precisions": [p.label for p in self.precisions],
                               "max_kernel": list(self.max_kernel)}


#: Most output neurons of one FC command: a quantization block describes at most 256 channels.
FC_MAX_OUTPUTS = 256


@dataclass(frozen=True)
class FCConfig:
    """The fully-connected datapath of a build (``docs/accelerator.md``, FC commands).

    * ``pes``: processing elements, one output neuron each: a command's outputs are computed
      in blocks of ``pes``;
    * ``st_units``: ST multipliers per PE (1, 2 or 4): every cycle a PE multiplies
      ``st_units`` consecutive ST words of one input vector by its neuron's weights;
    * ``max_batch``: input vectors per command (accumulators per PE): each weight row is
      used once per vector;
    * ``plm_in_words``: input PLM bank, in 16-bit words (every vector of a command, each in
      whole 64-bit beats);
    * ``precisions``: the ST configurations the PEs implement.

    ``pes * st_units`` ST words of weights are one *weight row* (``docs/formats.md``), a whole
    number of 64-bit beats in every configuration built: a multiple of 4 words, or of 8 when
    a configuration with 8-bit weight words (a8w4, a16w8) is built.
    """

    pes: int = 4
    st_units: int = 2
    max_batch: int = 8
    plm_in_words: int = 4096
    precisions: tuple = field(default=tuple(Precision))

    def __post_init__(self):
        for name in ("pes", "max_batch", "plm_in_words"):
            _positive(name, getattr(self, name))
        if self.st_units not in (1, 2, 4):
            raise ValueError(f"st_units must be 1, 2 or 4 (the ST words of one step lie in "
                             f"one 64-bit beat), not {self.st_units!r}")
        if self.plm_in_words % 4:
            raise ValueError(f"plm_in_words must be a multiple of 4 (whole beats), not "
                             f"{self.plm_in_words!r}")
        object.__setattr__(self, "precisions", _precisions(self.precisions))
        # an output block's weight rows are one DMA segment (at most 65535 bytes): up to
        # plm_in_words / st_units steps of pes * st_units 16-bit unit words
        if 2 * self.plm_in_words * self.pes > (1 << 16) - 1:
            raise ValueError(f"plm_in_words * pes must be below 32768 (an output block's "
                             f"weights are one DMA segment), not "
                             f"{self.plm_in_words * self.pes}")
        units = self.pes * self.st_units
        for p in self.precisions:
            if (units * p.lanes * p.weight_bits) % BEAT_BITS:
                raise ValueError(f"pes * st_units must make a weight row of whole 64-bit "
                                 f"beats at {p.label} (a multiple of "
                                 f"{BEAT_BITS // (p.lanes * p.weight_bits)}), not {units}")

    @property
    def units(self):
        """ST multipliers of the datapath (``pes * st_units``)."""
        return self.pes * self.st_units

    @property
    def acc_words(self):
        """Accumulator PLM bank, in 32-bit words: every output of a command, for every vector
        (the outputs in whole blocks of ``pes``)."""
        return -(-FC_MAX_OUTPUTS // self.pes) * self.pes * self.max_batch

    def as_dict(self):
        return asdict(self) | {"precisions": [p.label for p in self.precisions]}


#: The section class of each datapath that is not conv2d, by descriptor ``op``.
SECTIONS = {Op.DEPTHWISE: ("depthwise", DepthwiseConfig), Op.FC: ("fc", FCConfig)}


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
    * ``pe_multiplier``: how each PE's ST multiplier is built, a key of
      :data:`PE_MULTIPLIERS` (see :class:`hdl.st_multiplier.STMultiplier`); the arithmetic,
      cycles and capacities are the same whichever is chosen, only the area differs.
    * ``store_elements``: output elements the store requantizes per cycle (its
      requantizers, one of :data:`STORE_ELEMENTS`, four DSP blocks each; at most 64 bits of
      output a cycle, so four at 16 bits);
    * ``conv``: the build has the conv2d datapath (the fields above are its parameters);
    * ``depthwise``, ``fc``: the per-channel and fully-connected datapaths' sections
      (:class:`DepthwiseConfig`, :class:`FCConfig`, or their ``as_dict``), None without them.

    ``pe_dsp`` (not a field, not in :meth:`as_dict`) reads configurations written before
    ``pe_multiplier``: ``False`` is ``pe_multiplier="lut"``, ``True`` a DSP-built multiplier
    (``pe_multiplier`` as given, which must then not be ``"lut"``).
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
    pe_multiplier: str = "dsp4"
    store_elements: int = 4
    conv: bool = True
    depthwise: DepthwiseConfig | None = None
    fc: FCConfig | None = None
    pe_dsp: InitVar[bool | None] = None

    def __post_init__(self, pe_dsp):
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
        if pe_dsp is not None:
            if not isinstance(pe_dsp, bool):
                raise ValueError(f"pe_dsp must be a bool, not {pe_dsp!r}")
            if pe_dsp and self.pe_multiplier == "lut":
                raise ValueError("pe_dsp=True contradicts pe_multiplier='lut'")
            if not pe_dsp:
                object.__setattr__(self, "pe_multiplier", "lut")
        if self.pe_multiplier not in PE_MULTIPLIERS:
            raise ValueError(f"pe_multiplier must be one of "
                             f"{', '.join(map(repr, PE_MULTIPLIERS))}, not "
                             f"{self.pe_multiplier!r}")
        _store_elements(self.store_elements)
        if not isinstance(self.conv, bool):
            raise ValueError(f"conv must be a bool, not {self.conv!r}")
        for name, section in SECTIONS.values():
            value = getattr(self, name)
            if isinstance(value, dict):
                object.__setattr__(self, name, section(**value))
            elif value is not None and not isinstance(value, section):
                raise ValueError(f"{name} must be a {section.__name__}, a dict of its fields "
                                 f"or None, not {value!r}")
        if not self.ops:
            raise ValueError("a build needs at least one datapath (conv, depthwise or fc)")
        object.__setattr__(self, "max_kernel", tuple(self.max_kernel))
        object.__setattr__(self, "precisions", _precisions(self.precisions))

    @property
    def ops(self):
        """The datapaths of the build, as descriptor ``op`` values, in the socket's order."""
        ops = [Op.CONV2D] if self.conv else []
        return tuple(ops + [op for op, (name, _) in SECTIONS.items()
                            if getattr(self, name) is not None])

    @property
    def datapath_mask(self):
        """The ``DATAPATHS`` register's value: bit ``op`` set for each datapath."""
        return sum(1 << op for op in self.ops)

    def section(self, op):
        """The parameters of datapath ``op``: this object for conv2d, else its section (None
        if the build has no such datapath)."""
        if op == Op.CONV2D:
            return self if self.conv else None
        return getattr(self, SECTIONS[op][0])

    def multipliers(self, op):
        """ST multipliers of datapath ``op`` (an ``Op``): conv2d's PEs, the per-channel
        datapath's lanes, the FC datapath's PEs times their ST units; 0 without it."""
        section = self.section(op)
        if section is None:
            return 0
        return {Op.CONV2D: lambda: section.pes, Op.DEPTHWISE: lambda: section.lanes,
                Op.FC: lambda: section.units}[op]()

    @property
    def banks(self):
        """PLM banks: 2 with double buffering, else 1."""
        return 2 if self.double_buffer else 1

    @property
    def plm_bytes(self):
        """Total on-chip PLM storage in bytes (every bank of the three PLMs)."""
        return self.banks * (2 * self.plm_in_words + 2 * self.plm_w_words
                             + 4 * self.plm_acc_words)

    @property
    def pe_dsp_blocks(self):
        """DSP blocks of the PE array: PEs times the blocks of one ST multiplier. A build of
        one precision has no ST multiplier whatever ``pe_multiplier`` says: its PEs multiply
        each of the precision's products on its own, and synthesis maps each to a block."""
        if len(self.precisions) == 1:
            (precision,) = self.precisions
            return self.pes * precision.lanes
        return self.pes * PE_MULTIPLIERS[self.pe_multiplier]

    @property
    def dsp_blocks(self):
        """DSP blocks of the whole conv2d accelerator built for a device with DSP blocks (the
        PE array's, the store's requantizers' and :data:`OTHER_DSP_BLOCKS`)."""
        return (self.pe_dsp_blocks + REQUANT_DSP_BLOCKS * self.store_elements
                + OTHER_DSP_BLOCKS)

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
                "precisions": [p.label for p in self.precisions],
                "pe_multiplier": self.pe_multiplier,
                "store_elements": self.store_elements,
                "conv": self.conv,
                **{name: None if getattr(self, name) is None else getattr(self, name).as_dict()
                   for name, _ in SECTIONS.values()}}

    @classmethod
    def from_dict(cls, spec):
        """The inverse of :meth:`as_dict`."""
        spec = dict(spec)
        spec["max_kernel"] = tuple(spec["max_kernel"])
        spec["precisions"] = tuple(spec["precisions"])
        return cls(**spec)


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


# The default build keeps the four-block multipliers until a whole accelerator with two- or
# one-block ones is placed and routed at its Fmax (Yosys maps the 16-PE two-block accelerator
# since boards.synth makes wire names ending in ']' plain; see docs/pe.md).
DEFAULT_CONFIG = AcceleratorConfig()
# The 16-PE build with two-block multipliers: the same cycles, half the PE array's blocks.
DSP2_CONFIG = AcceleratorConfig(pe_multiplier="dsp2")
# The PE array of the 16-PE build with four-block multipliers (64 DSP blocks), spent on
# two-block multipliers: twice the PEs for the same DSP blocks.
DSP_BUDGET_CONFIG = AcceleratorConfig(pes=32, pe_multiplier="dsp2")
# The 16-PE build with one-block multipliers (a DSP block and a LUT unit each): the same
# cycles, a quarter of the four-block PE array's blocks.
DSP1_CONFIG = AcceleratorConfig(pe_multiplier="dsp1")
# The four-block PE array's 64 DSP blocks spent on one-block multipliers: four times the PEs.
DSP1_BUDGET_CONFIG = AcceleratorConfig(pes=64, pe_multiplier="dsp1")
# The iCE40UP5K build: 4 PEs, PLMs that fit its embedded RAM, LUT multipliers (its eight
# DSP blocks cannot hold the 16 products of four DSP-built PEs).
ICE40_CONFIG = AcceleratorConfig(pes=4, plm_in_words=2048, plm_w_words=2048,
                                 plm_acc_words=1024, max_width=256, pe_multiplier="lut",
                                 store_elements=1)
# A build with the per-channel datapath alone (8 lanes), for its tests and benchmarks.
PERCHANNEL_CONFIG = AcceleratorConfig(conv=False, depthwise=DepthwiseConfig(lanes=8))


#: The FC-only build: the socket with the FC datapath's default section (benchmarks,
#: synthesis).
FC_CONFIG = AcceleratorConfig(conv=False, fc=FCConfig())


#: What an SoC's on-chip RAM can be built from (``SocConfig.ram``).
RAM_KINDS = ("block", "spram")
#: Bytes of one iCE40UP5K SPRAM block (SB_SPRAM256KA: 16K words of 16 bits).
SPRAM_BLOCK_BYTES = 32 * 1024
#: Where the boot ROM can take the firmware from (``SocConfig.boot``).
BOOT_SOURCES = ("memory", "uart")

#: ``SocConfig``'s processor and RAM options and their defaults.
_SOC_OPTIONS = {"muldiv": True, "ram": "block", "boot": "memory", "accel_clock_hz": 0}

#: Accelerators an SoC can hold: ``SYSCTRL.DATAPATHS`` has a byte for each.
MAX_SOC_ACCELERATORS = 4
#: The processor's fast interrupt the NVE's ``irq`` drives (the accelerators' are 0 ... 3).
NVE_IRQ = MAX_SOC_ACCELERATORS


def _nve_config(spec):
    """``SocConfig.nve`` from its dictionary (None stays None)."""
    if spec is None:
        return None
    from .nve.isa import NveConfig

    return NveConfig(**spec)


@dataclass(frozen=True)
class SocConfig:
    """One SoC build: the processor's memories and clock, and its accelerators.

    * ``accelerators``: one :class:`AcceleratorConfig` per accelerator instance (its
      datapaths are its ``ops``); instance ``k`` has its registers at the ``k``-th
      accelerator window of the address map (``hls_ref.soc_map``) and its interrupt on the
      processor's fast interrupt ``k``. An empty tuple is a processor-only build; at most
      :data:`MAX_SOC_ACCELERATORS`;
    * ``ram_bytes``: on-chip RAM for the firmware's code, data and stack (a power of two);
    * ``dram_bytes``: the external memory the processor and the accelerators share (a power
      of two; the simulation's memory model has this size);
    * ``cache_bytes``: the processor's instruction and data caches, bytes each (two ways,
      32-byte lines; they cache the on-chip RAM only); 0: no caches (a RAM that answers in
      one cycle needs none);
    * ``clock_hz``: the clock the build is timed for (latency = cycles / clock);
    * ``uart_divisor``: the UART's reset clock divisor (clock / baud rate); the firmware may
      set another at run time;
    * ``memctrl_bytes``: a window of this many bytes for the external-memory controller's
      control registers (a board's SDRAM controller, whose initialisation the firmware runs);
      0 (simulation builds: the memory model needs none) or a power of two;
    * ``muldiv``: the processor's multiplier and divider (RV32IM); False: RV32I, the firmware
      built for it (its multiplications and divisions are library calls);
    * ``ram``: what the on-chip RAM is built from: ``"block"`` (block RAM, two ports: fetch
      and data; initialised from the bitstream) or ``"spram"`` (the iCE40UP5K's single-port
      SPRAM, 16-bit blocks of 32 KB side by side, one access per cycle shared between fetch
      and data; nothing initialises it, so the firmware arrives over the UART: ``boot``);
    * ``boot``: where the boot ROM takes the firmware from: ``"memory"`` (the boot block in
      external memory, written by the host: the SoC simulation) or ``"uart"`` (the UART:
      ``BOOT_MAGIC``, the length in words, the words, all little-endian; the host tool sends
      them). A build with firmware in its RAM from configuration starts there instead.
    * ``accel_clock_hz``: 0 (the default): the accelerators run on the processor's clock
      (``sync``); otherwise they run in a clock domain ``accel`` of this frequency (Hz), which
      the SoC's parent provides, and their bus ports, registers and interrupts cross into
      ``sync`` through asynchronous FIFOs (``hdl/soc/clock_crossing.py``).

    * ``nve``: an NVE vector core (``docs/nve.md``) as a peripheral, built from this
      :class:`hls_ref.nve.isa.NveConfig` (its registers, LUT and stream port in the window at
      ``NVE_BASE``, ``hls_ref.soc_map``; its ``irq`` on the processor's fast interrupt
      :data:`NVE_IRQ`); None (the default): no NVE.
    """

    accelerators: tuple = (DEFAULT_CONFIG,)
    ram_bytes: int = 64 * 1024
    dram_bytes: int = 16 * 1024 * 1024
    cache_bytes: int = 4096
    clock_hz: int = 100_000_000
    uart_divisor: int = 868
    memctrl_bytes: int = 0
    muldiv: bool = True
    ram: str = "block"
    boot: str = "memory"
    nve: object = None
    accel_clock_hz: int = 0

    def __post_init__(self):
        accelerators = tuple(self.accelerators)
        for config in accelerators:
            if not isinstance(config, AcceleratorConfig):
                raise ValueError(f"accelerators must be AcceleratorConfig objects, "
                                 f"not {config!r}")
        if len(accelerators) > MAX_SOC_ACCELERATORS:
            raise ValueError(f"accelerators must be at most {MAX_SOC_ACCELERATORS} "
                             f"(SYSCTRL.DATAPATHS has a byte each), not {len(accelerators)}")
        object.__setattr__(self, "accelerators", accelerators)
        for name, low, high in (("ram_bytes", 4096, 1 << 19), ("dram_bytes", 1 << 21, 1 << 30),
                                ("cache_bytes", 1024, 1 << 16)):
            value = getattr(self, name)
            if name == "cache_bytes" and value == 0 and not isinstance(value, bool):
                continue
            if (not isinstance(value, int) or isinstance(value, bool) or value & (value - 1)
                    or not low <= value <= high):
                raise ValueError(f"{name} must be a power of two from {low} to {high}, "
                                 f"not {value!r}")
        _positive("clock_hz", self.clock_hz)
        # False equals 0 but is not a clock
        if self.accel_clock_hz != 0 or isinstance(self.accel_clock_hz, bool):
            _positive("accel_clock_hz", self.accel_clock_hz)
        if not isinstance(self.uart_divisor, int) or not 5 <= self.uart_divisor < 1 << 16:
            raise ValueError(f"uart_divisor must be an integer from 5 to 65535, "
                             f"not {self.uart_divisor!r}")
        m = self.memctrl_bytes
        if (not isinstance(m, int) or isinstance(m, bool) or m < 0 or m & (m - 1)
                or (m and not 1024 <= m <= 1 << 24)):
            raise ValueError(f"memctrl_bytes must be 0 or a power of two from 1024 to "
                             f"16777216, not {m!r}")
        if not isinstance(self.muldiv, bool):
            raise ValueError(f"muldiv must be True or False, not {self.muldiv!r}")
        if self.ram not in RAM_KINDS:
            raise ValueError(f"ram must be one of {', '.join(RAM_KINDS)}, not {self.ram!r}")
        if self.ram == "spram" and not (SPRAM_BLOCK_BYTES * 2 <= self.ram_bytes
                                        <= SPRAM_BLOCK_BYTES * 4):
            raise ValueError(f"an SPRAM RAM is two or four {SPRAM_BLOCK_BYTES}-byte blocks "
                             f"(ram_bytes {2 * SPRAM_BLOCK_BYTES} or "
                             f"{4 * SPRAM_BLOCK_BYTES}), not {self.ram_bytes}")
        if self.nve is not None:
            from .nve.isa import NveConfig

            if not isinstance(self.nve, NveConfig):
                raise ValueError(f"nve must be None or an NveConfig, not {self.nve!r}")
        if self.boot not in BOOT_SOURCES:
            raise ValueError(f"boot must be one of {', '.join(BOOT_SOURCES)}, "
                             f"not {self.boot!r}")

    def datapaths(self):
        """``SYSCTRL.DATAPATHS``: byte ``k`` is accelerator ``k``'s ``DATAPATHS`` register
        (bit ``op`` set when it runs that op)."""
        return sum(config.datapath_mask << (8 * k) for k, config in enumerate(self.accelerators))

    def find(self, op):
        """Indices of the accelerator instances with a datapath for ``op`` (an ``Op``)."""
        return [k for k, config in enumerate(self.accelerators) if op in config.ops]

    def label(self, k):
        """A short name of accelerator ``k`` for tables: ``accel0``."""
        return f"accel{k}"

    def as_dict(self):
        return {"accelerators": [config.as_dict() for config in self.accelerators],
                "ram_bytes": self.ram_bytes, "dram_bytes": self.dram_bytes,
                "cache_bytes": self.cache_bytes, "clock_hz": self.clock_hz,
                "uart_divisor": self.uart_divisor, "memctrl_bytes": self.memctrl_bytes,
                # the processor and RAM options only when not the defaults: a default build's
                # dictionary (and the digests of the simulators built from it) stays as it was
                **{name: getattr(self, name) for name, default in _SOC_OPTIONS.items()
                   if getattr(self, name) != default},
                **({"nve": asdict(self.nve)} if self.nve is not None else {})}

    @classmethod
    def from_dict(cls, spec):
        """The inverse of :meth:`as_dict`."""
        return cls(accelerators=tuple(AcceleratorConfig.from_dict(c)
                                      for c in spec["accelerators"]),
                   ram_bytes=spec["ram_bytes"], dram_bytes=spec["dram_bytes"],
                   cache_bytes=spec["cache_bytes"], clock_hz=spec["clock_hz"],
                   uart_divisor=spec["uart_divisor"],
                   memctrl_bytes=spec.get("memctrl_bytes", 0),
                   nve=_nve_config(spec.get("nve")),
                   **{name: spec.get(name, default) for name, default in _SOC_OPTIONS.items()})


#: The accelerator of the default SoC: the 16-PE conv2d datapath (``DEFAULT_CONFIG``), an
#: 8-lane per-channel datapath (depthwise, average pooling, add) and a 4-PE FC datapath behind
#: one socket, so every layer of the four MLPerf Tiny models but Softmax runs on it
#: (``docs/soc.md`` says why these sizes).
SOC_ACCELERATOR_CONFIG = dataclasses.replace(DEFAULT_CONFIG, depthwise=DepthwiseConfig(lanes=8),
                                             fc=FCConfig())
#: The default SoC: the processor beside one accelerator with the three datapaths.
DEFAULT_SOC = SocConfig(accelerators=(SOC_ACCELERATOR_CONFIG,))
#: The SoC with the conv2d datapath alone (the default before the per-channel and FC
#: datapaths joined it).
CONV_SOC = SocConfig(accelerators=(DEFAULT_CONFIG,))
#: The processor-only SoC.
CPU_SOC = SocConfig(accelerators=())
#: The SoC builds the command line offers by name (``tessera run --soc NAME``).
SOC_BUILDS = {"default": DEFAULT_SOC, "conv": CONV_SOC, "cpu": CPU_SOC}
