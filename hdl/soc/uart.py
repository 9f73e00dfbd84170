"""The UART: ``amaranth_stdio``'s asynchronous serial transceiver (8N1) behind the registers
of ``hls_ref.soc_map.UART``."""

from amaranth.hdl import Cat, Signal
from amaranth.lib.wiring import In, Out

from hls_ref.soc_map import UART

from .peripheral import CsrPeripheral
from .vendor import amaranth_stdio

__all__ = ["Uart"]


class Uart(CsrPeripheral):
    """A UART with a run-time clock divisor.

    Parameters
    ----------
    divisor : int
        Clock cycles per bit after reset (``SocConfig.uart_divisor``).

    Members
    -------
    bus : ``In(csr.Signature(addr_width=4, data_width=8))``
    tx : ``Out(1)``
        Serial output (idle high).
    rx : ``In(1, init=1)``
        Serial input.
    """

    def __init__(self, *, divisor):
        self._divisor = divisor
        super().__init__(UART, {"tx": Out(1, init=1), "rx": In(1, init=1)},
                         inits={"DIVISOR": divisor})

    def elaborate_registers(self, m):
        m.submodules.serial = serial = amaranth_stdio.serial.AsyncSerial(
            divisor=self._divisor, divisor_bits=16)
        tx_reg, rx_reg = self.reg("TX"), self.reg("RX")
        # a received byte waits in a register until the firmware reads it
        rx_valid = Signal()
        rx_data = Signal(8)
        m.d.comb += serial.rx.ack.eq(~rx_valid)
        with m.If(serial.rx.rdy & ~rx_valid):
            m.d.sync += [rx_valid.eq(1), rx_data.eq(serial.rx.data)]
        with m.If(rx_reg.r_stb):
            m.d.sync += rx_valid.eq(0)
        m.d.comb += [
            serial.divisor.eq(self.reg("DIVISOR").data),
            serial.tx.data.eq(tx_reg.w_data),
            serial.tx.ack.eq(tx_reg.w_stb),
            rx_reg.r_data.eq(rx_data),
            self.reg("STATUS").r_data.eq(Cat(serial.tx.rdy, rx_valid)),
            self.tx.eq(serial.tx.o),
            serial.rx.i.eq(self.rx),
        ]
