"""cocotb drivers for ``lib.stream`` ports of Amaranth designs, with random flow control, and
the start-up every testbench shares.

Amaranth names the members of a port ``<port>__valid``, ``<port>__ready`` and
``<port>__payload``. Both sides change their outputs just after the falling clock edge and
sample in the read-only phase that follows, so a transfer recorded there is the one the design
sees at the next rising edge, on any simulator.
"""

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly

from .runner import Design

__all__ = ["StreamSink", "StreamSource", "check_full_rate", "start_design"]


async def start_design(dut):
    """Start a 100 MHz clock on ``dut.clk``, reset for two cycles; return the component the
    Verilog was generated from (``TESSERA_DUT``), for its layouts and parameters."""
    component = Design.from_env().build()
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    return component


async def check_full_rate(dut, words, latency):
    """Feed ``words`` into port ``i`` on consecutive cycles with ``o`` always ready; assert
    that ``i`` stays ready and that the results leave on consecutive cycles ``latency``
    cycles after their inputs. Returns the results (raw integers) in order."""
    dut.o__ready.value = 1
    valid_cycles, results = [], []
    count = len(words)
    for cycle in range(count + latency + 5):
        await FallingEdge(dut.clk)
        dut.i__valid.value = int(cycle < count)
        if cycle < count:
            dut.i__payload.value = words[cycle]
        await ReadOnly()
        assert dut.i__ready.value == 1
        if dut.o__valid.value:
            valid_cycles.append(cycle)
            results.append(int(dut.o__payload.value))
    assert valid_cycles == list(range(latency, latency + count))
    return results


class _Port:
    def __init__(self, dut, name):
        self.valid = getattr(dut, f"{name}__valid")
        self.ready = getattr(dut, f"{name}__ready")
        self.payload = getattr(dut, f"{name}__payload")


class StreamSource:
    """Sends payloads (raw integers) into the stream port ``name`` of ``dut``.

    Before each payload it idles (``valid`` low) for a random number of cycles: every cycle with
    probability ``idle``, drawn from ``rng``.
    """

    def __init__(self, dut, name, clock, *, rng, idle=0.0):
        self._port = _Port(dut, name)
        self._clock = clock
        self._rng = rng
        self._idle = idle
        self._port.valid.value = 0

    async def send(self, payloads):
        """Send every payload in order; return when the last one has been accepted."""
        port = self._port
        for payload in payloads:
            await FallingEdge(self._clock)
            while self._idle and self._rng.random() < self._idle:
                port.valid.value = 0
                await FallingEdge(self._clock)
            port.payload.value = int(payload)
            port.valid.value = 1
            await ReadOnly()
            while not port.ready.value:
                await FallingEdge(self._clock)
                await ReadOnly()
        await FallingEdge(self._clock)
        port.valid.value = 0


class StreamSink:
    """Receives payloads from the stream port ``name`` of ``dut``, holding ``ready`` low on
    each cycle with probability ``stall``."""

    def __init__(self, dut, name, clock, *, rng, stall=0.0):
        self._port = _Port(dut, name)
        self._clock = clock
        self._rng = rng
        self._stall = stall
        self._port.ready.value = 0

    async def receive(self, count, *, timeout_cycles=None):
        """Return the next ``count`` payloads as unsigned integers.

        Raises
        ------
        TimeoutError
            If ``timeout_cycles`` pass without all of them (the design hangs).
        """
        port = self._port
        received = []
        cycles = 0
        while len(received) < count:
            await FallingEdge(self._clock)
            cycles += 1
            if timeout_cycles is not None and cycles > timeout_cycles:
                raise TimeoutError(f"received {len(received)} of {count} transfers "
                                   f"in {timeout_cycles} cycles")
            ready = not (self._stall and self._rng.random() < self._stall)
            port.ready.value = int(ready)
            await ReadOnly()
            if ready and port.valid.value:
                # int() reads a 1-bit payload (a ``Logic``) and a wider one alike
                received.append(int(port.payload.value))
        await FallingEdge(self._clock)
        port.ready.value = 0
        return received
