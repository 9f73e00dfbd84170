"""The system controller: identification, the cycle counter, the external-memory bus monitor,
and the progress and exit words the firmware shows the host (``hls_ref.soc_map.SYSCTRL``)."""

from amaranth.hdl import Signal
from amaranth.lib.wiring import In, Out

from hls_ref.soc_map import SOC_ID, SYSCTRL

from .peripheral import CsrPeripheral

__all__ = ["SystemController"]


class SystemController(CsrPeripheral):
    """Registers of ``hls_ref.soc_map.SYSCTRL`` for an SoC build.

    Parameters
    ----------
    soc : hls_ref.config.SocConfig
        The build (its accelerators' datapaths and external memory size are constants here).

    Members
    -------
    bus : ``In(csr.Signature(addr_width=6, data_width=8))``
    read_beat : ``In(1)``
        A read data beat passed on the external-memory port this cycle (8 bytes counted).
    write_bytes : ``In(4)``
        Bytes strobed by a write data beat that passed on that port this cycle.
    progress : ``Out(32)``
        The ``PROGRESS`` register.
    exit_valid : ``Out(1)``
        Pulses for one cycle when the firmware writes ``EXIT``; ``exit_code`` holds the value.
    exit_code : ``Out(32)``
    """

    def __init__(self, soc):
        self._soc = soc
        super().__init__(SYSCTRL, {
            "read_beat": In(1), "write_bytes": In(4),
            "progress": Out(32), "exit_valid": Out(1), "exit_code": Out(32),
        })

    def elaborate_registers(self, m):
        cycles = Signal(64)
        bus_read = Signal(64)
        bus_written = Signal(64)
        m.d.sync += [
            cycles.eq(cycles + 1),
            bus_read.eq(bus_read + (self.read_beat << 3)),
            bus_written.eq(bus_written + self.write_bytes),
        ]
        m.d.comb += [
            self.reg("ID").r_data.eq(SOC_ID),
            self.reg("ACCELS").r_data.eq(len(self._soc.accelerators)),
            self.reg("DATAPATHS").r_data.eq(self._soc.datapaths()),
            self.reg("DRAM_BYTES").r_data.eq(self._soc.dram_bytes),
            self.reg("CYCLES").r_data.eq(cycles),
            self.reg("BUS_READ").r_data.eq(bus_read),
            self.reg("BUS_WRITTEN").r_data.eq(bus_written),
            self.progress.eq(self.reg("PROGRESS").data),
        ]
        exit_reg = self.reg("EXIT")
        m.d.sync += self.exit_valid.eq(exit_reg.w_stb)
        with m.If(exit_reg.w_stb):
            m.d.sync += self.exit_code.eq(exit_reg.w_data)
