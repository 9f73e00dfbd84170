"""The host side of an accelerator in a cocotb simulation: external memory, registers, runs.

:class:`AcceleratorHost` binds cocotbext-axi's ``AxiRam`` to the accelerator's ``bus`` port and an
``AxiLiteMaster`` to its ``csr`` port, both with optional random pauses on every channel and
optional address ranges that answer with error responses. :meth:`AcceleratorHost.run` loads a
:class:`sw.program.Program` image, starts the list the way ``docs/accelerator.md`` says, waits
for the interrupt and returns the status and counters read back over the registers, with the
memory image after the run.
"""

import logging
import random
import warnings
from dataclasses import dataclass

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from hls_ref.registers import register_map

# cocotbext-axi 0.1.28 still calls cocotb 1.x APIs that cocotb 2 deprecates; the tests run with
# warnings as errors, so ignore those (and only those) raised from its own code.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi\.")

__all__ = ["AcceleratorHost", "RunResult"]

_CHANNELS = ("aw", "w", "b", "ar", "r")
_BEAT = 8


@dataclass
class RunResult:
    """What the host sees after a list: the registers and the memory image."""

    done: bool
    error: bool
    code: int
    index: int
    progress: int
    tiles: int
    cycles: int
    mac_cycles: int
    bytes_read: int
    bytes_written: int
    memory: np.ndarray


def _pauses(rng, probability):
    while True:
        yield rng.random() < probability


class AcceleratorHost:
    """External memory and register access for an accelerator top level in cocotb.

    Parameters
    ----------
    dut
        The simulated top level (``clk``, ``rst``, ``csr__*``, ``bus__*``, ``irq``).
    config : AcceleratorConfig
        The build, for the register map.
    memory_bytes : int
        Size of the external memory.
    """

    def __init__(self, dut, config, *, memory_bytes):
        self.dut = dut
        self.regmap = register_map(config)
        self.memory_bytes = memory_bytes
        self.faults = []
        self.limit = None                # bytes of the loaded image: beyond it, SLVERR
        self.ram = AxiRam(AxiBus.from_prefix(dut, "bus", bus_separator="__"), dut.clk,
                          dut.rst, size=memory_bytes)
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "csr", bus_separator="__"),
                                    dut.clk, dut.rst)
        for interface in (self.ram.read_if, self.ram.write_if, self.master.read_if,
                          self.master.write_if):
            interface.log.setLevel(logging.WARNING)
        self._install_faults()

    def _install_faults(self):
        """Beats that touch a range of :attr:`faults` or lie beyond the loaded image answer
        SLVERR (reads return zeros, writes change nothing), like ``hls_ref.socket``'s fault
        model (``AxiRam`` itself would wrap such addresses into the image silently)."""
        read_if, write_if = self.ram.read_if, self.ram.write_if
        read, write = read_if._read, write_if._write

        def faulty(address, length):
            if self.limit is not None and address + length > self.limit:
                return True
            return any(lo < address + length and address < hi for lo, hi in self.faults)

        async def checked_read(address, length):
            if faulty(address // _BEAT * _BEAT, _BEAT):
                raise ValueError("injected read fault")
            return await read(address, length)

        async def checked_write(address, data):
            if faulty(address, len(data)):
                raise ValueError("injected write fault")
            return await write(address, data)

        read_if._read, write_if._write = checked_read, checked_write

    async def reset(self):
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns").start())
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 3)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    def pause(self, probability, seed=0):
        """Pause every AXI and AXI-Lite channel randomly, ``probability`` per cycle."""
        rng = random.Random(seed)
        interfaces = (self.ram.read_if, self.ram.write_if, self.master.read_if,
                      self.master.write_if)
        for interface in interfaces:
            for channel in _CHANNELS:
                port = getattr(interface, f"{channel}_channel", None)
                if port is not None:
                    # never None: a channel paused when its generator is removed stays paused
                    port.set_pause_generator(_pauses(random.Random(rng.random()), probability))

    async def write_register(self, name, **fields):
        await self.master.write_dword(self.regmap.offset(name),
                                      self.regmap.encode(name, **fields))

    async def read_register(self, name):
        return await self.master.read_dword(self.regmap.offset(name))

    async def read_field(self, name, field):
        return self.regmap.decode(name, await self.read_register(name))[field]

    async def read_counter(self, name):
        low = await self.read_register(f"{name}_LO")
        high = await self.read_register(f"{name}_HI")
        return high << 32 | low

    async def run(self, memory, desc_addr, count, *, faults=(), timeout_cycles=1_000_000):
        """Load ``memory`` (uint8 array), run ``count`` descriptors from ``desc_addr`` and
        return a :class:`RunResult`. The interrupt ends the wait; STATUS is cleared after."""
        self.faults = [(int(lo), int(hi)) for lo, hi in faults]
        self.limit = len(memory)
        self.ram.write(0, bytes(memory))
        await self.write_register("DESC_ADDR", value=desc_addr)
        await self.write_register("DESC_COUNT", value=count)
        await self.write_register("CTRL", irq_enable=1, start=1)
        for _ in range(timeout_cycles):
            await FallingEdge(self.dut.clk)
            await ReadOnly()
            if self.dut.irq.value == 1:
                break
        else:
            raise TimeoutError(f"no interrupt within {timeout_cycles} cycles")
        await FallingEdge(self.dut.clk)
        status = self.regmap.decode("STATUS", await self.read_register("STATUS"))
        result = RunResult(
            done=bool(status["done"]), error=bool(status["error"]), code=status["code"],
            index=await self.read_field("ERR_INDEX", "value"),
            progress=await self.read_field("PROGRESS", "value"),
            tiles=await self.read_field("TILES", "value"),
            cycles=await self.read_counter("CYCLES"),
            mac_cycles=await self.read_counter("MAC_CYCLES"),
            bytes_read=await self.read_counter("BYTES_READ"),
            bytes_written=await self.read_counter("BYTES_WRITTEN"),
            memory=np.frombuffer(self.ram.read(0, len(memory)), np.uint8).copy())
        assert status["busy"] == 0, "STATUS.busy with the interrupt raised"
        await self.write_register("STATUS", done=1, error=1)
        await FallingEdge(self.dut.clk)
        assert self.dut.irq.value == 0, "the interrupt stays raised after STATUS was cleared"
        self.faults = []
        self.limit = None
        return result
