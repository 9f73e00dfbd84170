"""cocotb drivers for ``lib.stream`` ports of Amaranth designs, with random flow control.

Amaranth names the members of a port ``<port>__valid``, ``<port>__ready`` and
``<port>__payload``. Both sides change their outputs just after the falling clock edge and
sample in the read-only phase that follows, so a transfer recorded there is the one the design
sees at the next rising edge, on any simulator.
"""

from cocotb.triggers import FallingEdge, ReadOnly

__all__ = ["StreamSink", "StreamSource"]


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
                received.append(port.payload.value.to_unsigned())
        await FallingEdge(self._clock)
        port.ready.value = 0
        return received
