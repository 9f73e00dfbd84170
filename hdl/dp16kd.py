"""The ECP5's DP16KD block RAM (16 Kibit, two ports) as an Amaranth ``Instance``.

Cores that instantiate the block rather than let Yosys infer it do so for what inference does
not give: both ports writing (:mod:`hdl.nve.local_buffer`), or the block's own output register
(:class:`hdl.block_ram.DualPortRAM` with ``read_latency`` 2; Yosys's ECP5 memory mapping
always sets ``REGMODE`` to ``NOREG``). The pins follow the mapping Yosys uses for the modes
here (``share/lattice/brams_map_16kd.v``): the word address sits at the top of the 14 address
pins, and in the 1024 x 18 mode the two lowest address pins are the write's byte enables.
The simulation model of the subset used is ``sim/models/ecp5_dp16kd.v``.
"""

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Signal

__all__ = ["DATA_WIDTHS", "dp16kd", "dp16kd_port", "mode_for_depth"]

#: The block's data widths (bits per word), each with its depth (words): one port's geometry.
DATA_WIDTHS = {18: 1024, 9: 2048, 4: 4096, 2: 8192, 1: 16384}


def mode_for_depth(depth):
    """The widest data width (bits) whose depth holds ``depth`` words; ValueError beyond one
    block's 16,384 words."""
    for width, words in DATA_WIDTHS.items():
        if depth <= words:
            return width
    raise ValueError(f"a DP16KD holds at most {DATA_WIDTHS[1]} words, not {depth}")


def dp16kd_port(name, *, width, address, data_in, data_out, clock_enable, write_enable):
    """The pins of port ``name`` (``"A"`` or ``"B"``) in the ``width``-bit mode.

    ``address`` is a word address (at most the mode's address bits); ``data_in`` and
    ``data_out`` are at most ``width`` bits (the rest of the 18 pins are tied to 0 or left
    unread); a write writes all of the word (both byte enables set in the 18-bit mode). The
    port's output register, when its ``REGMODE`` uses it, loads every cycle (``OCE`` high)."""
    address_bits = DATA_WIDTHS[width].bit_length() - 1
    if len(address) > address_bits or len(data_in) > width or len(data_out) > width:
        raise ValueError(f"port {name}: a {width}-bit mode port has {address_bits} address "
                         f"bits and {width} data bits")
    low = Const(0b11, 2) if width == 18 else Const(0, 14 - address_bits)
    pins_address = Cat(low, Const(0, 14 - address_bits - len(low)), address,
                       Const(0, address_bits - len(address)))
    pins_in = Cat(data_in, Const(0, 18 - len(data_in)))
    pins_out = Signal(18, name=f"{name.lower()}_pins_out")
    pins = {f"i_AD{name}{b}": pins_address[b] for b in range(14)}
    pins.update({f"i_DI{name}{b}": pins_in[b] for b in range(18)})
    pins.update({f"o_DO{name}{b}": pins_out[b] for b in range(18)})
    pins.update({f"i_CLK{name}": ClockSignal(), f"i_CE{name}": clock_enable,
                 f"i_OCE{name}": Const(1), f"i_WE{name}": write_enable, f"i_RST{name}": Const(0),
                 **{f"i_CS{name}{b}": Const(0) for b in range(3)}})
    return pins, [data_out.eq(pins_out[:len(data_out)])]


def dp16kd(*, width, port_a, port_b, output_register_b=False):
    """A DP16KD with both ports in the ``width``-bit mode (pins from :func:`dp16kd_port`);
    ``output_register_b`` sets port B's ``REGMODE`` to ``OUTREG`` (its word a cycle later)."""
    return Instance(
        "DP16KD", p_DATA_WIDTH_A=width, p_DATA_WIDTH_B=width, p_REGMODE_A="NOREG",
        p_REGMODE_B="OUTREG" if output_register_b else "NOREG", p_RESETMODE="SYNC",
        p_ASYNC_RESET_RELEASE="SYNC", p_CSDECODE_A="0b000", p_CSDECODE_B="0b000",
        p_WRITEMODE_A="NORMAL", p_WRITEMODE_B="NORMAL", p_GSR="DISABLED", **port_a, **port_b)
