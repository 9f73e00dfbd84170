"""The SoC on a ULX3S (ECP5-85F): clock, SDRAM, UART and LEDs around :class:`hdl.soc.soc.Soc`.

::

    25 MHz oscillator -> EHXPLLL -> sync (the processor, interconnect and SDRAM controller)
                                 -> the same clock shifted by 180 degrees -> SDRAM clock pin
                                 -> accel (the accelerators; their ports cross into sync
                                    through asynchronous FIFOs: hdl/soc/clock_crossing.py)
    Soc.mem (AXI4, 64-bit) ------> LiteDRAM user port -> 32 MB SDR SDRAM (boards.sdram)
    Soc.memctrl (Wishbone) ------> LiteDRAM control port (the firmware runs the init sequence)
    on-chip RAM <- the board monitor (firmware/board.c) in the bitstream: the host tool's link
    Soc.uart_tx / uart_rx -------> FTDI UART (the host link)
    LEDs: 0 heartbeat, 1 SDRAM initialised, 2 SDRAM init error, 3 firmware exited,
          7..4 the low bits of SYSCTRL.PROGRESS

The SDRAM chip samples its inputs on the rising edge of its clock; driving that clock half a
period after the controller's (the PLL's second output) centres the controller's outputs on
it, as the LiteX ULX3S targets do for this board.
"""

import dataclasses

from amaranth.hdl import (
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    Elaboratable,
    Instance,
    Module,
    ResetSignal,
    Shape,
    Signal,
)
from amaranth.lib import io
from amaranth.lib.cdc import ResetSynchronizer

from hdl.soc.soc import Soc
from hls_ref.config import DEFAULT_CONFIG, SocConfig
from sw.board import board_firmware

from .sdram import SdramSpec, controller_headers, litedram_core

__all__ = ["ACCEL_CLOCK_HZ", "BOARD_ACCELERATOR", "CLOCK_HZ", "OSCILLATOR_HZ", "Ulx3sTop",
           "board_soc_config", "controller_ports", "controller_spec", "pll_parameters"]

#: The ULX3S's oscillator.
OSCILLATOR_HZ = 25_000_000
#: The ECP5 PLL's VCO range (Hz) and the VCO frequency used here.
_VCO_RANGE = (400e6, 800e6)
_VCO_HZ = 600_000_000
#: The lowest phase-detector frequency the ECP5 PLL accepts (Hz).
_PFD_MIN_HZ = 3_125_000
#: The LiteDRAM core's control registers take this window (its CSR region).
MEMCTRL_BYTES = 1 << 16
UART_BAUD = 115_200
#: The system clock (Hz): the processor, the interconnect and the SDRAM controller; Minerva
#: beside the accelerator reached 48.1 MHz on the board, so the build is timed below 50 MHz.
CLOCK_HZ = 40_000_000
#: The accelerators' clock (Hz): their own domain, the PLL's third output; a clock the board
#: build meets (100 MHz is the aim; docs/board.md has the measured Fmax).
ACCEL_CLOCK_HZ = 60_000_000
#: The board's accelerator: conv2d (16 PEs; DS-CNN's other layers run on the processor) with a
#: one-element store: out of context the 16-PE conv2d accelerator reached 104.7 MHz with it
#: and 76 MHz with the four-element store (docs/board.md).
BOARD_ACCELERATOR = dataclasses.replace(DEFAULT_CONFIG, store_elements=1)


def _output_divider(clock_hz, name):
    out_div = _VCO_HZ // clock_hz
    if out_div * clock_hz != _VCO_HZ or not 1 <= out_div <= 128:
        raise ValueError(f"{name} must divide {_VCO_HZ} Hz, not {clock_hz}")
    return out_div


def _input_divider(clock_hz, reference_hz):
    """The smallest CLKI_DIV that makes ``clock_hz`` a whole multiple of the phase detector's
    frequency (``reference_hz / CLKI_DIV``, kept at or above the ECP5's 3.125 MHz minimum)."""
    for divider in range(1, 129):
        if reference_hz / divider < _PFD_MIN_HZ:
            break
        if (clock_hz * divider) % reference_hz == 0:
            return divider
    raise ValueError(f"clock_hz must be a multiple of {reference_hz} Hz divided by at most "
                     f"{int(reference_hz // _PFD_MIN_HZ)}, not {clock_hz}")


def pll_parameters(clock_hz, reference_hz=OSCILLATOR_HZ, accel_clock_hz=0):
    """EHXPLLL parameters for ``clock_hz`` from ``reference_hz`` on the primary output and the
    same frequency shifted by 180 degrees on the secondary (VCO at 600 MHz; the feedback and
    input dividers make the output ``reference_hz * CLKFB_DIV / CLKI_DIV``); with
    ``accel_clock_hz`` (Hz, dividing 600 MHz), that clock on the third output (``CLKOS2``)."""
    out_div = _output_divider(clock_hz, "clock_hz")
    in_div = _input_divider(clock_hz, reference_hz)
    accel = {}
    if accel_clock_hz:
        accel_div = _output_divider(accel_clock_hz, "accel_clock_hz")
        accel = {"p_CLKOS2_ENABLE": "ENABLED", "p_CLKOS2_DIV": accel_div,
                 "p_CLKOS2_CPHASE": accel_div - 1, "p_CLKOS2_FPHASE": 0}
    assert _VCO_RANGE[0] <= out_div * clock_hz <= _VCO_RANGE[1]
    return {
        "p_CLKI_DIV": in_div, "p_CLKFB_DIV": clock_hz * in_div // reference_hz,
        "p_FEEDBK_PATH": "CLKOP",
        "p_CLKOP_ENABLE": "ENABLED", "p_CLKOP_DIV": out_div, "p_CLKOP_CPHASE": out_div - 1,
        "p_CLKOP_FPHASE": 0,
        "p_CLKOS_ENABLE": "ENABLED", "p_CLKOS_DIV": out_div,
        # half a period later: out_div / 2 VCO cycles (an odd divider's half cycle is four
        # of the fine phase's eighths)
        "p_CLKOS_CPHASE": out_div - 1 + out_div // 2, "p_CLKOS_FPHASE": 4 * (out_div % 2),
        "p_PLLRST_ENA": "DISABLED", "p_INTFB_WAKE": "DISABLED", "p_STDBY_ENABLE": "DISABLED",
        "p_DPHASE_SOURCE": "DISABLED", "p_OUTDIVIDER_MUXA": "DIVA", "p_OUTDIVIDER_MUXB": "DIVB",
        **accel,
    }


def board_soc_config(clock_hz=CLOCK_HZ, accelerators=(BOARD_ACCELERATOR,),
                     sdram=None, accel_clock_hz=ACCEL_CLOCK_HZ):
    """The SoC of the ULX3S build: the board's SDRAM as external memory, its controller's
    control window, timed for ``clock_hz``, the UART at 115200 baud, the accelerators in
    their own clock domain of ``accel_clock_hz`` (0: on ``clock_hz``; a build without
    accelerators has none)."""
    sdram = SdramSpec() if sdram is None else sdram
    return SocConfig(accelerators=tuple(accelerators), dram_bytes=sdram.bytes,
                     clock_hz=clock_hz, uart_divisor=round(clock_hz / UART_BAUD),
                     memctrl_bytes=MEMCTRL_BYTES,
                     accel_clock_hz=accel_clock_hz if accelerators else 0)


def controller_spec(config, sdram=None):
    """The LiteDRAM core's :class:`SdramSpec` for SoC build ``config``: the part and device of
    ``sdram`` (the default part if None), the SoC's clock, and its memory port's ID and data
    widths (taken without building the SoC: the firmware needs the core's headers first)."""
    sdram = SdramSpec() if sdram is None else sdram
    port = Soc.mem_signature(config).members
    return SdramSpec(part=sdram.part, clock_hz=config.clock_hz, device=sdram.device,
                     id_width=Shape.cast(port["arid"].shape).width,
                     data_bits=Shape.cast(port["rdata"].shape).width)


def controller_ports(soc, address_bits, *, init_done, init_error):
    """The ``Instance`` ports that connect a LiteDRAM core (its clock, control port, AXI user
    port of ``address_bits`` address bits, status) to ``soc`` (a :class:`Soc` with a
    ``memctrl`` window); the SDRAM pins (none for the simulation core) and the reset are the
    caller's."""
    mem, ctrl = soc.mem, soc.memctrl
    bits = address_bits
    ports = {
        "i_clk": ClockSignal("sync"),
        "o_init_done": init_done, "o_init_error": init_error,
        "i_wb_ctrl_adr": Cat(ctrl.adr, Const(0, 30 - len(ctrl.adr))),
        "i_wb_ctrl_dat_w": ctrl.dat_w,
        "o_wb_ctrl_dat_r": ctrl.dat_r, "i_wb_ctrl_sel": ctrl.sel, "i_wb_ctrl_cyc": ctrl.cyc,
        "i_wb_ctrl_stb": ctrl.stb, "i_wb_ctrl_we": ctrl.we, "i_wb_ctrl_cti": ctrl.cti,
        "i_wb_ctrl_bte": ctrl.bte, "o_wb_ctrl_ack": ctrl.ack, "o_wb_ctrl_err": ctrl.err,
    }
    for ch in ("ar", "aw"):
        ports.update({
            f"i_user_port_axi_0_{ch}addr": getattr(mem, f"{ch}addr")[:bits],
            f"i_user_port_axi_0_{ch}burst": getattr(mem, f"{ch}burst"),
            f"i_user_port_axi_0_{ch}id": getattr(mem, f"{ch}id"),
            f"i_user_port_axi_0_{ch}len": getattr(mem, f"{ch}len"),
            # AXI4 has 3 size bits; LiteDRAM declares 4
            f"i_user_port_axi_0_{ch}size": Cat(getattr(mem, f"{ch}size"), Const(0, 1)),
            f"i_user_port_axi_0_{ch}valid": getattr(mem, f"{ch}valid"),
            f"o_user_port_axi_0_{ch}ready": getattr(mem, f"{ch}ready"),
        })
    for name in ("wdata", "wlast", "wstrb", "wvalid", "bready", "rready"):
        ports[f"i_user_port_axi_0_{name}"] = getattr(mem, name)
    for name in ("wready", "bid", "bresp", "bvalid", "rdata", "rid", "rlast", "rresp",
                 "rvalid"):
        ports[f"o_user_port_axi_0_{name}"] = getattr(mem, name)
    return ports


class Ulx3sTop(Elaboratable):
    """The top level of the ULX3S bitstream (see the module docstring).

    Parameters
    ----------
    clock_hz : int
        The system clock (dividing 600 MHz and a multiple of 25 MHz / 8 or coarser: 40, 50,
        60, 75, 100 MHz...).
    accelerators : tuple of AcceleratorConfig
        The SoC's accelerators.
    accel_clock_hz : int
        Their clock domain's (dividing 600 MHz); 0: they run on ``clock_hz``.
    sdram : boards.sdram.SdramSpec
        The SDRAM part (its ``clock_hz`` is replaced by ``clock_hz``).
    """

    def __init__(self, clock_hz=CLOCK_HZ, accelerators=(BOARD_ACCELERATOR,), sdram=None,
                 accel_clock_hz=ACCEL_CLOCK_HZ):
        sdram = SdramSpec() if sdram is None else sdram
        self.clock_hz = clock_hz
        config = board_soc_config(clock_hz, accelerators, sdram, accel_clock_hz)
        self.accel_clock_hz = config.accel_clock_hz
        self.pll = pll_parameters(clock_hz, accel_clock_hz=self.accel_clock_hz)
        self.sdram_spec = controller_spec(config, sdram)
        self.sdram_core = litedram_core(self.sdram_spec)
        self.firmware = board_firmware(config, extra_headers=controller_headers(
            self.sdram_core)).read_bytes()
        self.soc = Soc(config, firmware=self.firmware)

    def elaborate(self, platform):
        m = Module()
        core = self.sdram_core
        platform.add_file("litedram_core.v", core.verilog.read_text())

        # clocks
        clk25 = platform.request("clk25", dir="-")
        m.submodules.clk25_buffer = clk25_buffer = io.Buffer("i", clk25)
        clk_sys = Signal()
        clk_shifted = Signal()
        clk_accel = Signal()
        locked = Signal()
        m.submodules.pll = Instance(
            "EHXPLLL", **self.pll,
            i_CLKI=clk25_buffer.i, i_CLKFB=clk_sys, i_RST=0, i_STDBY=0, i_PHASESEL0=0,
            i_PHASESEL1=0, i_PHASEDIR=0, i_PHASESTEP=0, i_PHASELOADREG=0, i_PLLWAKESYNC=0,
            i_ENCLKOP=0, i_ENCLKOS=0,
            o_CLKOP=clk_sys, o_CLKOS=clk_shifted, o_CLKOS2=clk_accel, o_LOCK=locked,
            a_FREQUENCY_PIN_CLKI=f"{OSCILLATOR_HZ / 1e6:.6f}",
            a_FREQUENCY_PIN_CLKOP=f"{self.clock_hz / 1e6:.6f}",
            a_FREQUENCY_PIN_CLKOS=f"{self.clock_hz / 1e6:.6f}",
            **({"a_FREQUENCY_PIN_CLKOS2": f"{self.accel_clock_hz / 1e6:.6f}"}
               if self.accel_clock_hz else {}),
        )
        m.domains.sync = sync = ClockDomain("sync")
        m.d.comb += sync.clk.eq(clk_sys)
        m.submodules.reset_sync = ResetSynchronizer(~locked, domain="sync")
        platform.add_clock_constraint(clk_sys, self.clock_hz)
        if self.accel_clock_hz:
            # both domains leave reset with the PLL's lock (the crossings' FIFOs need that)
            m.domains.accel = accel = ClockDomain("accel")
            m.d.comb += accel.clk.eq(clk_accel)
            m.submodules.reset_sync_accel = ResetSynchronizer(~locked, domain="accel")
            platform.add_clock_constraint(clk_accel, self.accel_clock_hz)

        # the SDRAM: its clock through an output DDR register, the rest to the core
        sdram = platform.request("sdram", 0, dir="-")
        m.submodules.sdram_clock = Instance("ODDRX1F", i_SCLK=clk_shifted, i_RST=0, i_D0=1,
                                            i_D1=0, o_Q=sdram.clk.io)
        soc = self.soc
        m.submodules.soc = soc
        init_done = Signal()
        init_error = Signal()
        ports = {
            **controller_ports(soc, core.address_bits, init_done=init_done,
                               init_error=init_error),
            "i_rst": ResetSignal("sync"),
            "o_sdram_a": sdram.a.io, "o_sdram_ba": sdram.ba.io, "o_sdram_cas_n": sdram.cas.io,
            "o_sdram_cke": sdram.clk_en.io, "o_sdram_cs_n": sdram.cs.io,
            "o_sdram_dm": sdram.dqm.io, "io_sdram_dq": sdram.dq.io,
            "o_sdram_ras_n": sdram.ras.io, "o_sdram_we_n": sdram.we.io,
        }
        m.submodules.sdram_core = Instance("litedram_core", **ports)

        # the host link and the LEDs
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_tx = uart_tx = io.Buffer("o", uart.tx)
        m.submodules.uart_rx = uart_rx = io.Buffer("i", uart.rx)
        m.d.comb += [uart_tx.o.eq(soc.uart_tx), soc.uart_rx.eq(uart_rx.i)]
        exited = Signal()
        with m.If(soc.exit_valid):
            m.d.sync += exited.eq(1)
        heartbeat = Signal(range(self.clock_hz // 2))
        beat = Signal()
        m.d.sync += heartbeat.eq(heartbeat + 1)
        with m.If(heartbeat == self.clock_hz // 2 - 1):
            m.d.sync += [heartbeat.eq(0), beat.eq(~beat)]
        for k, value in enumerate((beat, init_done, init_error, exited,
                                   *soc.progress[:4])):
            m.submodules[f"led_{k}"] = led = io.Buffer("o", platform.request("led", k, dir="-"))
            m.d.comb += led.o.eq(value)
        return m
