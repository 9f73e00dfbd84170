"""The SoC top level: processor, memories, peripherals, accelerators and the external-memory
interconnect, as ``SocConfig`` describes them (``docs/soc.md``).

::

    Minerva ibus -> decoder -> boot ROM | firmware RAM (fetch port)
    Minerva dbus -> decoder -> firmware RAM (data port)
                             | Wishbone->CSR -> system controller | UART
                             | Wishbone->AXI4-Lite -> accelerator k registers (k = 0..n-1)
                             | NVE window (SocConfig.nve only: hdl/soc/nve.py)
                             | Wishbone->AXI4 (DRAM window) -> interconnect manager 0
    accelerator k AXI4 manager ------------------------------> interconnect manager k+1
    interconnect -> mem (the external memory port)
    accelerator k irq -> Minerva fast interrupt k; NVE irq -> fast interrupt NVE_IRQ

With ``SocConfig.accel_clock_hz`` the accelerators run in the clock domain ``accel`` (the
parent provides it, reset together with ``sync``), and each one's register port, AXI4 manager
and interrupt cross into ``sync`` through ``hdl/soc/clock_crossing.py``.

An access outside every window ends with a bus error at once (the processor takes a
bus-error exception) instead of waiting forever.
"""

import struct

from amaranth.hdl import DomainRenamer, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped
from amaranth.utils import exact_log2

from hls_ref.config import DEFAULT_SOC, NVE_IRQ, SocConfig
from hls_ref.soc_map import (
    ACCEL_BASE,
    ACCEL_STRIDE,
    DRAM_BASE,
    MEMCTRL_BASE,
    NVE_BASE,
    NVE_WINDOW,
    PERIPH_WINDOW,
    RAM_BASE,
    ROM_BASE,
    ROM_BYTES,
    SYSCTRL_BASE,
    UART_BASE,
)

from ..axi import AXI4Signature
from .accelerators import build_accelerator
from .boot import boot_program
from .bridges import WishboneToAxi, WishboneToAxiLite
from .clock_crossing import AxiLiteCrossing, AxiManagerCrossing, IrqCrossing
from .cpu import Cpu
from .interconnect import AxiInterconnect
from .memory import FirmwareRam
from .nve import NvePeripheral
from .spram import SpramRam
from .sysctrl import SystemController
from .uart import Uart
from .vendor import amaranth_soc

__all__ = ["Soc", "soc"]

wishbone = amaranth_soc.wishbone
csr = amaranth_soc.csr
_CPU_FEATURES = ("err", "cti", "bte")


class Soc(wiring.Component):
    """The SoC of ``config`` (see the module docstring).

    Parameters
    ----------
    config : hls_ref.config.SocConfig
        The build.
    firmware : bytes or None
        A program the on-chip RAM holds from configuration, where the processor starts
        (a board's bitstream: its external memory holds nothing at power-on); None: the boot
        ROM loads the firmware from where ``config.boot`` says (the boot block in external
        memory: simulation; the UART: a board whose RAM the bitstream cannot initialise).

    Members
    -------
    mem : ``Out(AXI4Signature(addr_width=32, data_width=64, id_width=...))``
        External memory (bus address 0 is processor address ``DRAM_BASE``); the ID carries
        the manager's index (0 the processor, ``k + 1`` accelerator ``k``) above its own ID.
    uart_tx : ``Out(1)``, uart_rx : ``In(1)``
        The UART's serial lines.
    progress : ``Out(32)``
        ``SYSCTRL.PROGRESS``.
    exit_valid : ``Out(1)``, exit_code : ``Out(32)``
        A write to ``SYSCTRL.EXIT`` (one-cycle pulse) and its value.
    memctrl : ``Out(wishbone.Signature(addr_width=log2(memctrl_bytes) - 2, data_width=32,
    granularity=8, features=("err", "cti", "bte")))``
        Only in builds with ``memctrl_bytes``: the processor's accesses to
        ``MEMCTRL_BASE + a``, for the memory controller's control port (byte address ``a``).
    """

    def __init__(self, config=DEFAULT_SOC, firmware=None):
        if not isinstance(config, SocConfig):
            raise TypeError(f"config must be a SocConfig, not {config!r}")
        if firmware is not None:
            firmware = bytes(firmware) + b"\0" * (-len(firmware) % 4)
            if len(firmware) > config.ram_bytes:
                raise ValueError(f"the firmware ({len(firmware)} bytes) does not fit the "
                                 f"{config.ram_bytes}-byte RAM")
        if firmware is not None and config.ram == "spram":
            raise ValueError("an SPRAM RAM has no initial contents: the firmware arrives "
                             "through the boot ROM (SocConfig.boot)")
        self._firmware = firmware
        self._config = config
        self._accelerators = [build_accelerator(c) for c in config.accelerators]
        self._interconnect = AxiInterconnect(managers=1 + len(config.accelerators))
        ports = {}
        if config.memctrl_bytes:
            ports["memctrl"] = Out(wishbone.Signature(
                addr_width=exact_log2(config.memctrl_bytes) - 2, data_width=32, granularity=8,
                features=_CPU_FEATURES))
        super().__init__({
            **ports,
            "mem": Out(self._interconnect.sub.signature),
            "uart_tx": Out(1, init=1), "uart_rx": In(1, init=1),
            "progress": Out(32), "exit_valid": Out(1), "exit_code": Out(32),
        })

    @staticmethod
    def mem_signature(config):
        """The signature of ``mem`` for ``config``, without building the SoC."""
        return AxiInterconnect.sub_signature(managers=1 + len(config.accelerators))

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        config = self._config
        in_ram = self._firmware is not None
        m.submodules.cpu = cpu = Cpu(reset_address=RAM_BASE if in_ram else ROM_BASE,
                                     cached=config.ram_bytes if config.cache_bytes else None,
                                     cache_bytes=config.cache_bytes, muldiv=config.muldiv)
        m.submodules.rom = rom = wishbone.sram.WishboneSRAM(
            size=ROM_BYTES, data_width=32, granularity=8, writable=False,
            init=boot_program(config.boot))
        ram_init = (struct.unpack(f"<{len(self._firmware) // 4}I", self._firmware)
                    if in_ram else ())
        if config.ram == "spram":
            # SPRAM holds nothing at configuration: the boot ROM loads the firmware
            m.submodules.ram = ram = SpramRam(size=config.ram_bytes)
        else:
            m.submodules.ram = ram = FirmwareRam(size=config.ram_bytes, init=ram_init)
        m.submodules.sysctrl = sysctrl = SystemController(config)
        m.submodules.uart = uart = Uart(divisor=config.uart_divisor)
        m.submodules.interconnect = interconnect = self._interconnect
        m.submodules.dram = dram = WishboneToAxi(size=config.dram_bytes)

        # instruction fetch
        m.submodules.ibus_decoder = ibus = wishbone.Decoder(
            addr_width=30, data_width=32, granularity=8, features=_CPU_FEATURES)
        ibus.add(ram.ibus, name="ram", addr=RAM_BASE)
        ibus.add(rom.wb_bus, name="rom", addr=ROM_BASE)

        # peripherals on an 8-bit CSR bus
        m.submodules.csr_decoder = csr_decoder = csr.Decoder(
            addr_width=exact_log2(2 * PERIPH_WINDOW), data_width=8)
        csr_decoder.add(sysctrl.bus, name="sysctrl", addr=SYSCTRL_BASE - SYSCTRL_BASE)
        csr_decoder.add(uart.bus, name="uart", addr=UART_BASE - SYSCTRL_BASE)
        m.submodules.csr_bridge = csr_bridge = csr.wishbone.WishboneCSRBridge(
            csr_decoder.bus, data_width=32)

        # data
        m.submodules.dbus_decoder = dbus = wishbone.Decoder(
            addr_width=30, data_width=32, granularity=8, features=_CPU_FEATURES)
        windows = [(RAM_BASE, config.ram_bytes), (SYSCTRL_BASE, 2 * PERIPH_WINDOW),
                   (DRAM_BASE, config.dram_bytes)]
        dbus.add(ram.dbus, name="ram", addr=RAM_BASE)
        dbus.add(csr_bridge.wb_bus, name="periph", addr=SYSCTRL_BASE)
        dbus.add(dram.wb, name="dram", addr=DRAM_BASE)
        connect(m, dram.axi, interconnect.managers[0])
        if config.memctrl_bytes:
            memctrl = wishbone.Interface(addr_width=exact_log2(config.memctrl_bytes) - 2,
                                         data_width=32, granularity=8, features=_CPU_FEATURES,
                                         path=("memctrl",))
            memctrl.memory_map = amaranth_soc.memory.MemoryMap(
                addr_width=exact_log2(config.memctrl_bytes), data_width=8)
            memctrl.memory_map.add_resource(self, name=("memctrl",), size=config.memctrl_bytes)
            memctrl.memory_map.freeze()
            dbus.add(memctrl, name="memctrl", addr=MEMCTRL_BASE)
            windows.append((MEMCTRL_BASE, config.memctrl_bytes))
            connect(m, flipped(self.memctrl), memctrl)
        for k, accelerator in enumerate(self._accelerators):
            regmap = accelerator.regmap
            bridge = WishboneToAxiLite(addr_width=regmap.addr_width)
            m.submodules[f"accel{k}_regs"] = bridge
            base = ACCEL_BASE + k * ACCEL_STRIDE
            dbus.add(bridge.wb, name=f"accel{k}", addr=base)
            windows.append((base, 1 << regmap.addr_width))
            if config.accel_clock_hz:
                m.submodules[f"accel{k}"] = DomainRenamer("accel")(accelerator)
                regs = AxiLiteCrossing(accelerator.csr.signature.flip())
                bus = AxiManagerCrossing(accelerator.bus.signature)
                irq = IrqCrossing()
                m.submodules[f"accel{k}_regs_cdc"] = regs
                m.submodules[f"accel{k}_bus_cdc"] = bus
                m.submodules[f"accel{k}_irq_cdc"] = irq
                connect(m, bridge.axil, regs.manager)
                connect(m, regs.subordinate, accelerator.csr)
                connect(m, accelerator.bus, bus.manager)
                connect(m, bus.subordinate, interconnect.managers[k + 1])
                m.d.comb += [irq.i.eq(accelerator.irq), cpu.irq[k].eq(irq.o)]
            else:
                m.submodules[f"accel{k}"] = accelerator
                connect(m, bridge.axil, accelerator.csr)
                connect(m, accelerator.bus, interconnect.managers[k + 1])
                m.d.comb += cpu.irq[k].eq(accelerator.irq)
        if config.nve is not None:
            m.submodules.nve = nve = NvePeripheral(config.nve)
            dbus.add(nve.wb, name="nve", addr=NVE_BASE)
            windows.append((NVE_BASE, NVE_WINDOW))
            m.d.comb += cpu.irq[NVE_IRQ].eq(nve.irq)

        connect(m, cpu.ibus, ibus.bus)
        # the data bus goes through the decoder; an address outside every window gets err
        cpu_dbus = cpu.dbus
        mapped = Signal()
        byte_addr = cpu_dbus.adr << 2
        m.d.comb += mapped.eq(0)
        for base, size in windows:
            with m.If((byte_addr >= base) & (byte_addr < base + size)):
                m.d.comb += mapped.eq(1)
        for name in ("adr", "dat_w", "sel", "we", "cti", "bte"):
            m.d.comb += getattr(dbus.bus, name).eq(getattr(cpu_dbus, name))
        m.d.comb += [
            dbus.bus.cyc.eq(cpu_dbus.cyc & mapped),
            dbus.bus.stb.eq(cpu_dbus.stb & mapped),
            cpu_dbus.dat_r.eq(dbus.bus.dat_r),
            cpu_dbus.ack.eq(dbus.bus.ack),
            cpu_dbus.err.eq(dbus.bus.err | (cpu_dbus.cyc & cpu_dbus.stb & ~mapped)),
        ]

        connect(m, interconnect.sub, flipped(self.mem))
        mem = self.mem
        m.d.comb += [
            sysctrl.read_beat.eq(mem.rvalid & mem.rready),
            sysctrl.write_bytes.eq(Mux(mem.wvalid & mem.wready,
                                       sum(mem.wstrb[i] for i in range(len(mem.wstrb))), 0)),
            self.progress.eq(sysctrl.progress),
            self.exit_valid.eq(sysctrl.exit_valid),
            self.exit_code.eq(sysctrl.exit_code),
            self.uart_tx.eq(uart.tx),
            uart.rx.eq(self.uart_rx),
        ]
        return m


def soc(**params):
    """``Soc(SocConfig.from_dict(params))``: the factory ``sim.runner.Design`` rebuilds an SoC
    from (JSON-serialisable) parameters with; no parameters give ``DEFAULT_SOC``."""
    return Soc(SocConfig.from_dict(params) if params else DEFAULT_SOC)


# the AXI signature of the external memory port, for harnesses
MEM_SIGNATURE = AXI4Signature
