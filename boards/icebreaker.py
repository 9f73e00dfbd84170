"""The SoC on an iCEBreaker (iCE40UP5K: 5,280 LUT4s, 30 block RAMs, 8 DSP blocks, four 32 KB
SPRAM blocks, a 12 MHz oscillator): the smallest build that fits.

::

    12 MHz oscillator -> sync (the SoC runs at 12 MHz: no PLL)
    Minerva RV32I (no caches, no multiplier/divider) <-> 64 KB firmware RAM: SPRAM blocks 0, 1
    Soc.mem (AXI4, 64-bit) -> SpramAxiMemory: 64 KB of external memory, SPRAM blocks 2, 3
    boot ROM: receives the board monitor (firmware/board.c) over the UART (SocConfig.boot)
    Soc.uart_tx / uart_rx -> FTDI UART (pins 9 / 6: the host link, 115200 baud)
    LEDs: red = the firmware exited, green = heartbeat, the break-off board's five LEDs = the
          low bits of SYSCTRL.PROGRESS

SPRAM has no initial contents, so the bitstream cannot carry the firmware (40 KB of code and
data: more than the 30 block RAMs' 15 KB): the boot ROM waits for it on the UART and the host
tool sends it first (``sw.board.boot_over_uart``). The external memory is the SoC's usual 2 MB
window with the 64 KB of SPRAM aliased across it: the model image at ``IMAGE_BASE`` (1 MB)
lands at its start and the run block just below 1 MB at its end, so an image whose buffers
end below ``IMAGE_BASE + MEMORY_BYTES - 64`` fits (:func:`check_image_fits`).
"""

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In, Out, connect

from hdl.soc.soc import Soc
from hdl.soc.spram import SpramAxiMemory
from hls_ref.config import SPRAM_BLOCK_BYTES, SocConfig
from hls_ref.image import IMAGE_BASE, RUN_BLOCK

__all__ = ["CLOCK_HZ", "MEMORY_BYTES", "IcebreakerSoc", "IcebreakerTop", "check_image_fits",
           "icebreaker_sim_design", "icebreaker_soc", "icebreaker_soc_config"]

#: The iCEBreaker's oscillator, which clocks the SoC.
CLOCK_HZ = 12_000_000
UART_BAUD = 115_200
#: SPRAM behind the SoC's external-memory port (two blocks).
MEMORY_BYTES = 2 * SPRAM_BLOCK_BYTES
#: The SoC's external-memory window (the smallest ``SocConfig.dram_bytes``); the SPRAM is
#: aliased across it.
WINDOW_BYTES = 1 << 21


def icebreaker_soc_config(*, clock_hz=CLOCK_HZ, uart_divisor=None):
    """The iCEBreaker build's SoC: no accelerator (none fits beside the processor:
    ``docs/board.md``), Minerva RV32I without caches, 64 KB of firmware RAM in SPRAM loaded
    over the UART; ``uart_divisor`` defaults to 115200 baud at ``clock_hz``."""
    return SocConfig(accelerators=(), ram_bytes=2 * SPRAM_BLOCK_BYTES, dram_bytes=WINDOW_BYTES,
                     cache_bytes=0, clock_hz=clock_hz,
                     uart_divisor=uart_divisor or round(clock_hz / UART_BAUD),
                     muldiv=False, ram="spram", boot="uart")


def check_image_fits(image):
    """Raise ``ValueError`` if ``image`` (a compiled ``sw.soc_image`` image) does not fit the
    iCEBreaker's external memory: from ``IMAGE_BASE`` to the end of its results, below the run
    block's alias at the top of the SPRAM."""
    end = image.header["results"] + image.results_bytes - IMAGE_BASE
    limit = (RUN_BLOCK % MEMORY_BYTES)
    if end > limit:
        raise ValueError(f"the image needs {end:,} bytes of external memory from IMAGE_BASE; "
                         f"the iCEBreaker has {limit:,} (its {MEMORY_BYTES // 1024} KB of SPRAM "
                         f"less the run block)")


class IcebreakerSoc(wiring.Component):
    """The SoC of ``config`` with the SPRAM external memory on its memory port: everything of
    the bitstream but the pins (the board-level simulation's top level as well).

    Members
    -------
    uart_tx : ``Out(1)``, uart_rx : ``In(1)``
        The UART's lines.
    progress : ``Out(32)``, exit_valid : ``Out(1)``, exit_code : ``Out(32)``
        As :class:`hdl.soc.soc.Soc` has them.
    """

    def __init__(self, config=None):
        self._soc = Soc(config or icebreaker_soc_config())
        self._memory = SpramAxiMemory(size=MEMORY_BYTES,
                                      signature=Soc.mem_signature(self._soc.config))
        super().__init__({"uart_tx": Out(1, init=1), "uart_rx": In(1, init=1),
                          "progress": Out(32), "exit_valid": Out(1), "exit_code": Out(32)})

    @property
    def soc(self):
        return self._soc

    def elaborate(self, platform):
        m = Module()
        m.submodules.soc = soc = self._soc
        m.submodules.memory = memory = self._memory
        connect(m, soc.mem, memory.axi)
        m.d.comb += [
            self.uart_tx.eq(soc.uart_tx), soc.uart_rx.eq(self.uart_rx),
            self.progress.eq(soc.progress), self.exit_valid.eq(soc.exit_valid),
            self.exit_code.eq(soc.exit_code),
        ]
        return m


def icebreaker_soc(**config):
    """:class:`IcebreakerSoc` from the SoC configuration's dictionary (the factory of the
    board-level simulation's ``sim.runner.Design``)."""
    return IcebreakerSoc(SocConfig.from_dict(config) if config else None)


class IcebreakerTop(Elaboratable):
    """The top level of the iCEBreaker bitstream (see the module docstring): the platform's
    12 MHz clock domain (``sync``, with its power-on reset), the UART and the LEDs."""

    def __init__(self, config=None):
        self.config = config or icebreaker_soc_config()
        self.board = IcebreakerSoc(self.config)
        self.soc = self.board.soc

    def elaborate(self, platform):
        m = Module()
        m.submodules.board = board = self.board
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
        m.submodules.uart_rx = uart_rx = io.Buffer("i", uart.rx)
        m.d.comb += [uart_tx.o.eq(board.uart_tx), board.uart_rx.eq(uart_rx.i)]
        exited = Signal()
        with m.If(board.exit_valid):
            m.d.sync += exited.eq(1)
        half = self.config.clock_hz // 2
        heartbeat = Signal(range(half))
        beat = Signal()
        m.d.sync += heartbeat.eq(heartbeat + 1)
        with m.If(heartbeat == half - 1):
            m.d.sync += [heartbeat.eq(0), beat.eq(~beat)]
        for k, value in enumerate((exited, beat, *board.progress[:5])):
            m.submodules[f"led_{k}"] = led = io.Buffer("o", platform.request("led", k, dir="-"))
            m.d.comb += led.o.eq(value)
        return m


def icebreaker_sim_design(config):
    """The board-level simulation's :class:`sim.runner.Design` (top level ``soc``): the
    iCEBreaker build's :class:`IcebreakerSoc` for ``config``, the SPRAM blocks by their
    behavioural model (``hdl.soc.spram.SpramBlock`` off an iCE40)."""
    from sim.runner import Design

    return Design("soc", "boards.icebreaker:icebreaker_soc", config.as_dict())
