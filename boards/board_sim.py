"""The board-level simulation: the ULX3S build's SoC as it goes into the bitstream -- the board
monitor in its on-chip RAM, the external memory behind LiteDRAM's controller on the SoC's AXI
port and its control window -- with LiteDRAM's model of the PHY and the SDRAM chip in place of
the pins (``litedram_core(..., sim=True)``), on Verilator with the UART on a pseudo-terminal.

What differs from the bitstream: the PLL (the harness drives the system clock and, when the
build has an accelerators' domain ``accel``, its clock at the configured frequencies' ratio,
each edge at its own time; the crossings carry every signal between the two), the SDRAM
clock's output register and the LEDs, which have no simulation models. What it adds to the
SoC simulation (``sim.soc_sim``): the boot from on-chip RAM, the SDRAM initialisation through
the control window, and LiteDRAM's controller (its latency, refresh and bank timing) between
the accelerators and the memory.
"""

from amaranth.hdl import ClockDomain, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out

from hdl.soc.soc import Soc
from hls_ref.config import AcceleratorConfig, SocConfig
from sim.runner import Design

from .sdram import controller_headers, litedram_core
from .ulx3s import (
    ACCEL_CLOCK_HZ,
    BOARD_ACCELERATOR,
    CLOCK_HZ,
    board_soc_config,
    controller_ports,
    controller_spec,
)

__all__ = ["BoardSimTop", "board_sim_design", "board_sim_top", "build_board_simulator"]


class BoardSimTop(wiring.Component):
    """The SoC of ``config`` with ``firmware`` in its RAM and the LiteDRAM simulation core
    (module ``litedram_core``, ``address_bits`` of user-port address) on its memory ports.

    Members
    -------
    uart_tx : ``Out(1)``, uart_rx : ``In(1)``
        The UART's lines.
    progress : ``Out(32)``, exit_valid : ``Out(1)``, exit_code : ``Out(32)``
        As :class:`hdl.soc.soc.Soc` has them.
    accel_clk : ``In(1)``
        The accelerators' clock, when ``config.accel_clock_hz`` (their reset is the system
        reset, synchronised into their domain, as on the board).
    """

    def __init__(self, config, firmware, address_bits):
        self._soc = Soc(config, firmware=firmware)
        self._address_bits = address_bits
        members = {"uart_tx": Out(1, init=1), "uart_rx": In(1, init=1),
                   "progress": Out(32), "exit_valid": Out(1), "exit_code": Out(32)}
        if config.accel_clock_hz:
            members["accel_clk"] = In(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.soc = soc = self._soc
        if soc.config.accel_clock_hz:
            m.domains.accel = accel = ClockDomain("accel")
            m.d.comb += accel.clk.eq(self.accel_clk)
            m.submodules.reset_sync_accel = ResetSynchronizer(ResetSignal("sync"),
                                                              domain="accel")
        init_done, init_error = Signal(), Signal()
        m.submodules.sdram_core = Instance(
            "litedram_core", **controller_ports(soc, self._address_bits, init_done=init_done,
                                                init_error=init_error))
        m.d.comb += [
            self.uart_tx.eq(soc.uart_tx), soc.uart_rx.eq(self.uart_rx),
            self.progress.eq(soc.progress), self.exit_valid.eq(soc.exit_valid),
            self.exit_code.eq(soc.exit_code),
        ]
        return m


def board_sim_top(config, firmware, address_bits):
    """:class:`BoardSimTop` from JSON-serialisable parameters (the configuration's dict, the
    firmware in hex), the factory of :func:`board_sim_design`."""
    return BoardSimTop(SocConfig.from_dict(config), bytes.fromhex(firmware), address_bits)


def board_sim_design(config, firmware, core):
    """The :class:`sim.runner.Design` (top level ``soc``) of the board-level simulation."""
    return Design("soc", "boards.board_sim:board_sim_top",
                  {"config": config.as_dict(), "firmware": bytes(firmware).hex(),
                   "address_bits": core.address_bits})


def build_board_simulator(accelerators=(BOARD_ACCELERATOR,), *, clock_hz=CLOCK_HZ,
                          accel_clock_hz=ACCEL_CLOCK_HZ, uart_divisor, log=None):
    """Build (or reuse) the board-level simulator of the ULX3S build with ``accelerators``
    (:class:`AcceleratorConfig` each; in their own clock domain when ``accel_clock_hz``);
    the board monitor sets ``uart_divisor``. Returns ``(path of the simulator, the SoC's
    configuration)``."""
    from sim.soc_sim import build_simulator
    from sw.board import board_firmware

    if not all(isinstance(a, AcceleratorConfig) for a in accelerators):
        raise TypeError("accelerators must be AcceleratorConfig objects")
    config = board_soc_config(clock_hz, tuple(accelerators), accel_clock_hz=accel_clock_hz)
    core = litedram_core(controller_spec(config), sim=True)
    firmware = board_firmware(config, uart_divisor=uart_divisor,
                              extra_headers=controller_headers(core), log=log).read_bytes()
    design = board_sim_design(config, firmware, core)
    clocks = (config.clock_hz, config.accel_clock_hz) if config.accel_clock_hz else None
    binary = build_simulator(config, design=design, sources=[core.verilog], board=True,
                             clocks=clocks, log=log)
    return binary, config
