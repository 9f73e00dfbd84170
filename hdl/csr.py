"""The accelerator's AXI4-Lite register bank, generated from a register map.

:class:`CsrBank` implements any :class:`hls_ref.registers.RegisterMap`: the bus side is an
AXI4-Lite subordinate, and every field that is not a constant becomes a port that the rest of
the accelerator drives or reads (see :func:`port_name`). :func:`csr_bank` builds the bank of an
accelerator build from plain data, for the Verilog generator and the testbenches.
"""

import functools
import operator

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hls_ref.config import AcceleratorConfig
from hls_ref.registers import Access, RegisterMap, register_map

from .axi import RESP_OKAY, RESP_SLVERR, AXI4LiteSignature

__all__ = ["DATA_WIDTH", "CsrBank", "csr_bank", "port_name"]

#: Width of a register and of the bus data, in bits.
DATA_WIDTH = 32


def port_name(register, field):
    """Return the name of the port of ``field`` of ``register``: ``"status_done"`` for field
    ``done`` of ``STATUS``. A ``W1C`` field also has an input named this plus ``"_set"``."""
    return f"{register.lower()}_{field}"


class CsrBank(wiring.Component):
    """An AXI4-Lite register bank implementing ``regmap``.

    Each field of the map behaves as its :class:`~hls_ref.registers.Access` says:

    * ``CONST``: reads return ``field.value``; no port;
    * ``RO``: reads return the input port;
    * ``RW``: the output port holds the value, reset to ``field.reset``, and reads return it;
    * ``W1P``: a write with a bit set raises that bit of the output port for exactly one cycle
      (the cycle the write response becomes valid); reads return 0;
    * ``W1C``: the output port holds a sticky value; a cycle with a bit of the ``_set`` input
      high sets it, a write with that bit set clears it. When both happen in the same cycle the
      set wins, so no event is lost.

    Writes honour ``wstrb``: only bits in strobed bytes are written, pulsed or cleared. Writes to
    ``CONST`` and ``RO`` fields are ignored. A read returns the fields of the register at their
    positions, other bits 0.

    Bus behaviour: addresses are byte addresses whose two low bits are ignored. The write address
    and data channels are accepted independently, in either order or together; the write happens
    once both have been accepted, and produces one write response. One write and one read may be
    in progress at a time, independently of each other; a new address is accepted only once
    the previous response of its direction has been accepted (``bvalid``/``rvalid`` stay high and
    stable while ``bready``/``rready`` are low). An access to an offset with no register
    responds ``SLVERR``: a write changes nothing, a read returns 0. Read data is sampled the
    cycle after the read address is accepted (``rvalid`` rises a cycle after that).

    Parameters
    ----------
    regmap : RegisterMap
        The registers; its ``addr_width`` is the bus address width.

    Members
    -------
    bus : ``In(AXI4LiteSignature(addr_width=regmap.addr_width, data_width=32))``
        The subordinate port.
    <register>_<field> : ``In(width)`` or ``Out(width)``
        One port per non-constant field, named by :func:`port_name`: an input for ``RO``, an
        output for ``RW``, ``W1P`` and ``W1C``.
    <register>_<field>_set : ``In(width)``
        Set inputs of ``W1C`` fields.
    """

    def __init__(self, regmap):
        if not isinstance(regmap, RegisterMap):
            raise TypeError(f"regmap must be a RegisterMap, not {regmap!r}")
        self._regmap = regmap
        members = {"bus": In(AXI4LiteSignature(addr_width=regmap.addr_width,
                                               data_width=DATA_WIDTH))}

        def add(name, member, register, field):
            if name in members:
                raise ValueError(f"port {name!r} of {register.name}.{field.name} is already "
                                 f"used by another port")
            members[name] = member

        for register in regmap:
            for field in register.fields:
                name = port_name(register.name, field.name)
                if field.access is Access.RO:
                    add(name, In(field.width), register, field)
                elif field.access is Access.RW:
                    add(name, Out(field.width, init=field.reset), register, field)
                elif field.access is Access.W1P:
                    add(name, Out(field.width), register, field)
                elif field.access is Access.W1C:
                    add(name, Out(field.width), register, field)
                    add(f"{name}_set", In(field.width), register, field)
        super().__init__(members)

    @property
    def regmap(self):
        """The register map this bank implements."""
        return self._regmap

    def _field(self, register, field):
        try:
            return self._regmap[register].field(field)
        except KeyError:
            raise KeyError(f"the register map has no field {register}.{field}") from None

    def field_port(self, register, field):
        """Return the port of ``field`` of ``register`` (names as in the map, e.g.
        ``bank.field_port("STATUS", "done")``).

        Raises
        ------
        KeyError
            If the map has no such field.
        ValueError
            If the field is a constant, which has no port.
        """
        if self._field(register, field).access is Access.CONST:
            raise ValueError(f"{register}.{field} is a constant and has no port")
        return getattr(self, port_name(register, field))

    def set_port(self, register, field):
        """Return the set input of ``W1C`` field ``field`` of ``register``.

        Raises
        ------
        KeyError
            If the map has no such field.
        ValueError
            If the field is not ``W1C``.
        """
        if self._field(register, field).access is not Access.W1C:
            raise ValueError(f"{register}.{field} is not a W1C field and has no set input")
        return getattr(self, f"{port_name(register, field)}_set")

    def _decode(self, m, address, prefix):
        """Return one signal per register, high when byte address ``address`` selects it, and
        a signal high when any does."""
        hits = []
        for register in self._regmap:
            hit = Signal(name=f"{prefix}_{register.name.lower()}")
            m.d.comb += hit.eq(address[2:] == register.offset >> 2)
            hits.append(hit)
        mapped = Signal(name=f"{prefix}_mapped")
        m.d.comb += mapped.eq(Cat(hits).any())
        return hits, mapped

    def _read_value(self, register):
        """The value a read of ``register`` returns."""
        value = Const(0, DATA_WIDTH)
        for field in register.fields:
            if field.access is Access.CONST:
                value |= Const(field.value, field.width) << field.lsb
            elif field.access is not Access.W1P:
                value |= getattr(self, port_name(register.name, field.name)) << field.lsb
        return value

    def elaborate(self, platform):
        m = Module()
        bus = self.bus

        # Write: hold the address and the data until both have arrived and the previous
        # response has been accepted, then update the fields and respond.
        aw_full = Signal()
        aw_addr = Signal(len(bus.awaddr))
        w_full = Signal()
        w_data = Signal(DATA_WIDTH)
        w_strb = Signal(DATA_WIDTH // 8)
        m.d.comb += [
            bus.awready.eq(~aw_full),
            bus.wready.eq(~w_full),
        ]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(bus.awaddr)]
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]

        do_write = Signal()
        m.d.comb += do_write.eq(aw_full & w_full & ~bus.bvalid)
        write_hits, write_mapped = self._decode(m, aw_addr, "write")
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)
        with m.If(do_write):
            m.d.sync += [
                aw_full.eq(0),
                w_full.eq(0),
                bus.bvalid.eq(1),
                bus.bresp.eq(Mux(write_mapped, RESP_OKAY, RESP_SLVERR)),
            ]

        # The bits of the write data that are in strobed bytes.
        strobed = Cat(bit.replicate(8) for bit in w_strb)
        for register, hit in zip(self._regmap, write_hits):
            for field in register.fields:
                if field.access in (Access.CONST, Access.RO):
                    continue
                port = getattr(self, port_name(register.name, field.name))
                bits = slice(field.lsb, field.lsb + field.width)
                mask = Mux(do_write & hit, strobed[bits], 0)
                ones = w_data[bits] & mask
                if field.access is Access.RW:
                    m.d.sync += port.eq((port & ~mask) | ones)
                elif field.access is Access.W1P:
                    m.d.sync += port.eq(ones)
                else:
                    set_ = getattr(self, f"{port_name(register.name, field.name)}_set")
                    m.d.sync += port.eq(set_ | (port & ~ones))

        # Read: decode the address as it is accepted and register which register it hits,
        # sample the selected register a cycle later (the fields come from all over the
        # design: their multiplexer should not also follow the bus's address decode) and
        # hold the response until it is taken.
        ar_full = Signal()
        address_hits, address_mapped = self._decode(m, bus.araddr, "read")
        read_hits = Signal(len(address_hits))
        read_mapped = Signal()
        # (the address hits one register at most: an OR of the hit registers' values, a flat
        # multiplexer, where a chain of conditional assignments would be a chain of gates)
        read_value = Signal(DATA_WIDTH)
        m.d.comb += read_value.eq(functools.reduce(operator.or_, (
            Mux(hit, self._read_value(register), 0)
            for register, hit in zip(self._regmap, read_hits))))
        m.d.comb += bus.arready.eq(~ar_full & ~bus.rvalid)
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += [ar_full.eq(1), read_hits.eq(Cat(address_hits)),
                         read_mapped.eq(address_mapped)]
        with m.If(ar_full):
            m.d.sync += [
                ar_full.eq(0),
                bus.rvalid.eq(1),
                bus.rdata.eq(read_value),
                bus.rresp.eq(Mux(read_mapped, RESP_OKAY, RESP_SLVERR)),
            ]
        return m


def csr_bank(config):
    """Return the :class:`CsrBank` of the accelerator built from ``config``, an
    :class:`~hls_ref.config.AcceleratorConfig` or its :meth:`~AcceleratorConfig.as_dict`
    (so that it can be described in JSON)."""
    if not isinstance(config, AcceleratorConfig):
        config = AcceleratorConfig(**config)
    return CsrBank(register_map(config))
