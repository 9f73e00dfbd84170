"""The UART: ``amaranth_stdio``'s asynchronous serial transceiver (8N1) behind the registers
of ``hls_ref.soc_map.UART``, with a receive FIFO."""

from amaranth.hdl import Cat, Signal
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from hls_ref.soc_map import UART, UART_RX_FIFO

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
        # received bytes wait in a FIFO until the firmware reads them: a burst of bytes (a
        # frame of the board link) is not lost while the firmware is busy for a few byte times
        m.submodules.rx_fifo = rx_fifo = SyncFIFOBuffered(width=8, depth=UART_RX_FIFO)
        tx_reg, rx_reg, status = self.reg("TX"), self.reg("RX"), self.reg("STATUS")
        overflow = Signal()
        # the receiver presents a byte for one cycle (rdy) when it may hand it over (ack)
        m.d.comb += [
            serial.rx.ack.eq(1),
            rx_fifo.w_data.eq(serial.rx.data),
            rx_fifo.w_en.eq(serial.rx.rdy),
            rx_fifo.r_en.eq(rx_reg.r_stb),
        ]
        with m.If(status.r_stb):
            m.d.sync += overflow.eq(0)
        with m.If(serial.rx.rdy & ~rx_fifo.w_rdy):
            m.d.sync += overflow.eq(1)
        m.d.comb += [
            serial.divisor.eq(self.reg("DIVISOR").data),
            serial.tx.data.eq(tx_reg.w_data),
            serial.tx.ack.eq(tx_reg.w_stb),
            rx_reg.r_data.eq(rx_fifo.r_data),
            status.r_data.eq(Cat(serial.tx.rdy, rx_fifo.r_rdy, overflow)),
            self.tx.eq(serial.tx.o),
            serial.rx.i.eq(self.rx),
        ]
