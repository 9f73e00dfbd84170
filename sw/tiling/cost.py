"""Seed 000's DMA cost model, ``T = C + s * p + n * t`` per DMA call.

``C``: cycles to start a DMA call; ``p``: cycles per address jump inside a call (a new
contiguous segment: on AXI4 a new burst whose address must be issued and whose first data
waits the memory latency); ``t``: cycles per 64-bit beat moved. ``s`` and ``n`` are the call's
jumps (segments - 1) and beats. The defaults model Tessera's DMA on a memory with a 16-cycle
read latency: a descriptor fetch and setup of 32 cycles, a 16-cycle bubble per segment, one
beat per cycle. Every figure the compiler prints states the parameters it used.
"""

from dataclasses import dataclass

__all__ = ["DEFAULT_COST", "DmaCost"]


@dataclass(frozen=True)
class DmaCost:
    """Parameters of ``T = C + s * p + n * t`` (cycles)."""

    C: float = 32.0
    p: float = 16.0
    t: float = 1.0

    def __post_init__(self):
        for name in ("C", "p", "t"):
            if getattr(self, name) < 0:
                raise ValueError(f"DMA cost parameter {name} must not be negative")

    def cycles(self, calls, segments, beats):
        """Cost of ``calls`` DMA calls that move ``segments`` contiguous segments and ``beats``
        beats in total (works element-wise on numpy arrays)."""
        return calls * self.C + (segments - calls) * self.p + beats * self.t

    @classmethod
    def parse(cls, text):
        """``"C,p,t"`` -> :class:`DmaCost`."""
        try:
            c, p, t = (float(v) for v in text.split(","))
        except ValueError:
            raise ValueError(f"DMA cost must be three numbers C,p,t, not {text!r}") from None
        return cls(c, p, t)

    def __str__(self):
        return f"T = {self.C:g} + s*{self.p:g} + n*{self.t:g} (cycles, n in 64-bit beats)"


DEFAULT_COST = DmaCost()
