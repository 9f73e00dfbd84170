"""The NVE's AXI4-Lite register port: the map of :func:`hls_ref.nve.isa.host_registers` and the
LUT window, with the rules of ``docs/nve.md`` ("Hardware behaviour") for a busy NVE.

Fields behave as their :class:`hls_ref.registers.Access` says (``RW`` registers, ``W1P``
pulses, ``W1C`` sticky bits, ``RO`` and ``CONST`` values). While a run is in progress a write
to a setting register (any ``RW`` field outside ``CTRL``) or to the LUT window, and a LUT
read, answer ``SLVERR`` and change nothing; a ``CTRL`` write then acts only on ``abort``
(``load`` is kept). ``STATUS.done`` and ``STATUS.error`` are set when the core ends a run and
cleared by a start (while idle) or by writing 1. Unmapped offsets answer ``SLVERR``.

Bus behaviour (as :class:`hdl.csr.CsrBank`): the write address and data are accepted
independently, the write happens once both are in and the previous response was taken; one
read at a time, a register's data sampled the cycle after its address is accepted, a LUT word's
a cycle later (the LUT's block RAM output is registered before the read data). Byte strobes apply
to register fields and select the LUT entries written (entry ``4r + k`` is byte ``k`` of word
``r``).
"""

import functools
import operator

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.nve.isa import HOST_LUT_OFFSET, host_registers
from hls_ref.nve.numerics import LUT_ENTRIES, MAX_SHIFT
from hls_ref.registers import Access

from ..axi import RESP_OKAY, RESP_SLVERR, AXI4LiteSignature
from .activation import LUT_WORDS
from .hazards import CYCLE_BITS
from .isa import Error, as_config

__all__ = ["ADDR_WIDTH", "NveHost"]

#: Byte-address width of the register port (the LUT window ends below 0x800).
ADDR_WIDTH = 12
_DATA = 32


class NveHost(wiring.Component):
    """The register bank between the bus and :class:`.core.NveCore`.

    Members
    -------
    bus : ``In(AXI4LiteSignature(addr_width=12, data_width=32))``
    program_size, loop_start, loop_end, iterations, shift, agu_inc, agu_toggle, load : ``Out``
        The setting registers.
    start, abort : ``Out(1)``
        ``CTRL`` pulses.
    busy, done, error, error_pc, error_cycle, cycles, stalls, busy_cycles, loaded : ``In``
        From the core (``done`` a pulse at the end of a run).
    lut_w_address, lut_w_data, lut_w_strobe, lut_w_en, lut_r_address, lut_r_en : ``Out``;
    lut_r_data : ``In(32)``
        The LUT's host port.
    irq : ``Out(1)``
        ``STATUS.done``.
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        self._regmap = host_registers(config)
        size_bits = config.instruction_words.bit_length()
        a, pairs = config.addr_bits, config.agu_modes - 1
        word_address = (LUT_WORDS - 1).bit_length()
        super().__init__({
            "bus": In(AXI4LiteSignature(addr_width=ADDR_WIDTH, data_width=_DATA)),
            "program_size": Out(size_bits), "loop_start": Out(config.pc_bits),
            "loop_end": Out(config.pc_bits),
            "iterations": Out(config.max_iterations.bit_length()),
            "shift": Out(MAX_SHIFT.bit_length()),
            "agu_inc": Out(data.ArrayLayout(a, pairs)),
            "agu_toggle": Out(data.ArrayLayout(a, pairs)),
            "load": Out(1), "start": Out(1), "abort": Out(1),
            "busy": In(1), "done": In(1), "error": In(Error),
            "error_pc": In(config.pc_bits), "error_cycle": In(CYCLE_BITS),
            "cycles": In(32), "stalls": In(32), "busy_cycles": In(32), "loaded": In(size_bits),
            "lut_w_address": Out(word_address), "lut_w_data": Out(32), "lut_w_strobe": Out(4),
            "lut_w_en": Out(1),
            "lut_r_address": Out(word_address), "lut_r_en": Out(1), "lut_r_data": In(32),
            "irq": Out(1),
        })

    @property
    def regmap(self):
        return self._regmap

    def _fields(self):
        """``{(register, field): signal}`` of every field that is not a constant: the storage
        of ``RW`` and ``W1C`` fields, the core's values for ``RO``, pulses for ``W1P``."""
        f = {
            ("CTRL", "start"): self.start, ("CTRL", "load"): self.load,
            ("CTRL", "abort"): self.abort,
            ("STATUS", "busy"): self.busy,
            ("STATUS", "done"): Signal(name="status_done"),
            ("STATUS", "error"): Signal(name="status_error"),
            ("PROGRAM_SIZE", "value"): self.program_size,
            ("LOOP_START", "value"): self.loop_start, ("LOOP_END", "value"): self.loop_end,
            ("ITERATIONS", "value"): self.iterations, ("SHIFT", "value"): self.shift,
            ("CYCLES", "value"): self.cycles, ("STALLS", "value"): self.stalls,
            ("BUSY_CYCLES", "value"): self.busy_cycles,
            ("ERROR", "code"): self.error.as_value(), ("ERROR", "pc"): self.error_pc,
            ("ERROR_CYCLE", "value"): self.error_cycle, ("LOADED", "value"): self.loaded,
        }
        for mode in range(1, self._config.agu_modes):
            f[(f"AGU{mode}_INC", "value")] = self.agu_inc[mode - 1]
            f[(f"AGU{mode}_TOGGLE", "value")] = self.agu_toggle[mode - 1]
        missing = [(r.name, fl.name) for r in self._regmap for fl in r.fields
                   if fl.access is not Access.CONST and (r.name, fl.name) not in f]
        assert not missing, f"register fields without a signal: {missing}"
        return f

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        fields = self._fields()
        lut_end = HOST_LUT_OFFSET + LUT_ENTRIES

        def in_lut(address):
            return (address >= HOST_LUT_OFFSET) & (address < lut_end)

        def hits(address):
            return [address[2:] == register.offset >> 2 for register in self._regmap]

        # ---- write: address and data held until both are in and the response is free
        aw_full, aw_addr = Signal(), Signal(ADDR_WIDTH)
        w_full, w_data, w_strb = Signal(), Signal(_DATA), Signal(_DATA // 8)
        m.d.comb += [bus.awready.eq(~aw_full), bus.wready.eq(~w_full)]
        with m.If(bus.awvalid & bus.awready):
            m.d.sync += [aw_full.eq(1), aw_addr.eq(bus.awaddr)]
        with m.If(bus.wvalid & bus.wready):
            m.d.sync += [w_full.eq(1), w_data.eq(bus.wdata), w_strb.eq(bus.wstrb)]
        do_write = aw_full & w_full & ~bus.bvalid
        write_hits = hits(aw_addr)
        lut_write = in_lut(aw_addr)
        refused = Signal()  # a setting or the LUT while busy
        settings = [r for r in self._regmap if r.name != "CTRL" and
                    any(fl.access is Access.RW for fl in r.fields)]
        m.d.comb += refused.eq(self.busy & (lut_write | functools.reduce(
            operator.or_, (hit for r, hit in zip(self._regmap, write_hits) if r in settings))))
        mapped = lut_write | Cat(write_hits).any()
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)
        with m.If(do_write):
            m.d.sync += [aw_full.eq(0), w_full.eq(0), bus.bvalid.eq(1),
                         bus.bresp.eq(Mux(mapped & ~refused, RESP_OKAY, RESP_SLVERR))]
        m.d.comb += [
            self.lut_w_address.eq(aw_addr[2:2 + len(self.lut_w_address)]),
            self.lut_w_data.eq(w_data), self.lut_w_strobe.eq(w_strb),
            self.lut_w_en.eq(do_write & lut_write & ~refused),
        ]

        strobed = Cat(bit.replicate(8) for bit in w_strb)
        status_done, status_error = fields[("STATUS", "done")], fields[("STATUS", "error")]
        for register, hit in zip(self._regmap, write_hits):
            write = do_write & hit & ~refused
            for fl in register.fields:
                if fl.access in (Access.CONST, Access.RO):
                    continue
                port = fields[(register.name, fl.name)]
                bits = slice(fl.lsb, fl.lsb + fl.width)
                mask = Mux(write, strobed[bits], 0)
                ones = w_data[bits] & mask
                if fl.access is Access.RW:
                    if register.name == "CTRL":  # load is kept while busy
                        mask = Mux(self.busy, 0, mask)
                        ones = ones & ~self.busy.replicate(fl.width)
                    m.d.sync += port.eq((port & ~mask) | ones)
                elif fl.access is Access.W1P:
                    # a cycle after the write, so that a start sees the load bit written with it
                    m.d.sync += port.eq(ones)
                else:  # W1C: STATUS.done / STATUS.error
                    m.d.sync += port.eq(port & ~ones)
        # a start while idle clears both; the end of a run sets them (after, so it wins)
        with m.If(self.start & ~self.busy):
            m.d.sync += [status_done.eq(0), status_error.eq(0)]
        with m.If(self.done):
            m.d.sync += [status_done.eq(1), status_error.eq(self.error != Error.NONE)]
        m.d.comb += self.irq.eq(status_done)

        # ---- read: decoded as accepted, sampled a cycle later, held until taken
        ar_full = Signal()
        read_hits = Signal(len(self._regmap))
        read_lut, read_mapped, read_refused = Signal(), Signal(), Signal()
        m.d.comb += bus.arready.eq(~ar_full & ~bus.rvalid)
        accept = bus.arvalid & bus.arready
        m.d.comb += [self.lut_r_address.eq(bus.araddr[2:2 + len(self.lut_r_address)]),
                     self.lut_r_en.eq(accept & in_lut(bus.araddr) & ~self.busy)]
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        with m.If(accept):
            lut = in_lut(bus.araddr)
            m.d.sync += [ar_full.eq(1), read_hits.eq(Cat(hits(bus.araddr))),
                         read_lut.eq(lut), read_refused.eq(lut & self.busy),
                         read_mapped.eq(lut | Cat(hits(bus.araddr)).any())]

        def value(register):
            v = Const(0, _DATA)
            for fl in register.fields:
                if fl.access is Access.CONST:
                    v |= Const(fl.value, fl.width) << fl.lsb
                elif fl.access is not Access.W1P:
                    v |= fields[(register.name, fl.name)] << fl.lsb
            return v

        registers = functools.reduce(operator.or_, (
            Mux(hit, value(register), 0) for register, hit in zip(self._regmap, read_hits)))
        # a LUT word waits a cycle in `lut_data` (off the block RAM's output, whose clock to
        # output delay leaves no time for the multiplexer in front of the read data)
        lut_data, lut_held = Signal(32), Signal()
        with m.If(ar_full & read_lut & ~lut_held):
            m.d.sync += [lut_held.eq(1), lut_data.eq(self.lut_r_data)]
        with m.Elif(ar_full):
            m.d.sync += [
                ar_full.eq(0), lut_held.eq(0), bus.rvalid.eq(1),
                bus.rdata.eq(Mux(read_lut, Mux(read_refused, 0, lut_data), registers)),
                bus.rresp.eq(Mux(read_mapped & ~read_refused, RESP_OKAY, RESP_SLVERR)),
            ]
        return m
