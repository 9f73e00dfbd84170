"""Measure processing elements in simulation: dot products of packed channels, in cycles.

The measurement runs the RTL (a :class:`hdl.pe.PERow`) in the Amaranth simulator, streaming the
packed operands of one dot product per PE with no back-pressure, and counts the cycles from the
first operand to the sums. The sums are checked against the plain integer dot product.
"""

from dataclasses import dataclass

import numpy as np
from amaranth.sim import Simulator

from hdl.pe import PERow
from hls_ref import Precision, pack_activations, pack_weights, wrap_signed
from hls_ref.config import PE_MULTIPLIERS

__all__ = ["DotProductRun", "run_dot_product"]


@dataclass(frozen=True)
class DotProductRun:
    """One measured dot product per PE of a row.

    Attributes
    ----------
    precision : Precision
    channels : int
        Length of each dot product.
    pes : int
        Processing elements (one dot product each).
    multiplier : str
        How the row's ST multipliers are built (``"lut"``, ``"dsp4"``, ``"dsp2"``,
        ``"dsp1"``).
    cycles : int
        Clock cycles from the first operand transfer to the cycle the sums are valid.
    latency : int
        Pipeline latency of the row, in cycles (part of ``cycles``).
    correct : bool
        Every sum equals the integer dot product (modulo the accumulator width).
    """

    precision: Precision
    channels: int
    pes: int
    multiplier: str
    cycles: int
    latency: int
    correct: bool

    @property
    def macs(self):
        """Useful multiply-accumulates performed."""
        return self.channels * self.pes

    @property
    def macs_per_cycle(self):
        return self.macs / self.cycles

    @property
    def dsp_blocks(self):
        """DSP blocks of the row's multipliers."""
        return self.pes * PE_MULTIPLIERS[self.multiplier]

    @property
    def macs_per_dsp_cycle(self):
        """MACs per DSP block per cycle (None for a LUT-only row)."""
        return self.macs_per_cycle / self.dsp_blocks if self.dsp_blocks else None

    @property
    def utilisation(self):
        """MACs / (cycles x PEs x products per PE per cycle)."""
        return self.macs / (self.cycles * self.pes * self.precision.lanes)


def run_dot_product(precision, channels, *, pes=16, stages=2, multiplier="lut", seed=0):
    """Compute ``pes`` dot products of ``channels`` random values on a PE row whose ST
    multipliers are built as ``multiplier`` says; return a :class:`DotProductRun`."""
    precision = Precision.parse(precision)
    rng = np.random.default_rng(seed)
    low_a, low_w = -(1 << (precision.act_bits - 1)), -(1 << (precision.weight_bits - 1))
    x = rng.integers(low_a, -low_a, channels)
    w = rng.integers(low_w, -low_w, (pes, channels))
    a_words = pack_activations(x, precision)
    b_words = pack_weights(w, precision)  # (pes, groups)
    groups = len(a_words)
    dut = PERow(pes=pes, stages=stages, multiplier=multiplier)
    observed = {}

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.i.valid, 1)
        cycle = 0
        for group in range(groups + dut.latency + 1):
            if group < groups:
                ctx.set(dut.i.payload, {
                    "a": int(a_words[group]), "b": [int(v) for v in b_words[:, group]],
                    "precision": precision, "clear": int(group == 0),
                    "last": int(group == groups - 1)})
            else:
                ctx.set(dut.i.valid, 0)
            _, _, valid, sums = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            cycle += 1
            if valid and "sums" not in observed:
                # The sums are on the bus during the cycle that ends with this edge.
                observed["cycles"] = cycle
                observed["sums"] = [int(sums[pe]) for pe in range(pes)]

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    expected = wrap_signed(w @ x, dut.acc_width)
    return DotProductRun(precision, channels, pes, multiplier, observed["cycles"], dut.latency,
                         observed["sums"] == [int(v) for v in expected])
