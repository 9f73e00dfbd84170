"""The NVE as a peripheral: the register port, the two streams and the core.

:class:`Nve` is what a system attaches: an AXI4-Lite subordinate for the registers and the LUT
(:class:`.host.NveHost`), an input stream of 64-bit words (instructions, then data), an output
stream of 64-bit words with ``last``, and ``irq`` (``STATUS.done``). :func:`nve` builds one from
plain data, for the Verilog generator, the testbenches and ``boards/synth.py``.
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axi import AXI4LiteSignature
from .core import NveCore, output_layout, trace_members
from .host import ADDR_WIDTH, NveHost
from .isa import as_config

__all__ = ["Nve", "nve"]

_SETTINGS = ("program_size", "loop_start", "loop_end", "iterations", "shift", "agu_inc",
             "agu_toggle", "load", "start", "abort", "lut_w_address", "lut_w_data",
             "lut_w_strobe", "lut_w_en", "lut_r_address", "lut_r_en")
_STATUS = ("busy", "done", "error", "error_pc", "error_cycle", "cycles", "stalls",
           "busy_cycles", "loaded", "lut_r_data")


class Nve(wiring.Component):
    """The Neuro Vector Engine (``docs/nve.md``) built from an
    :class:`hls_ref.nve.isa.NveConfig`.

    Parameters
    ----------
    config : NveConfig or dict
        The sizes; the same object the simulator and the code generator take.
    trace : bool
        Add the ``retire`` port (one record per executed instruction; simulation only).

    Members
    -------
    bus : ``In(AXI4LiteSignature(addr_width=12, data_width=32))``
        Registers (:func:`hls_ref.nve.isa.host_registers`) and the LUT window.
    i_stream : ``In(stream.Signature(word_bits))``
        Instruction words (with ``CTRL.load``), then one data word per MEMA ``wr``.
    o_stream : ``Out(stream.Signature(StructLayout({"data": word_bits, "last": 1})))``
        One word per ``act ... out``; ``last`` marks a run's last word.
    irq : ``Out(1)``
        ``STATUS.done``.
    retire, digest : ``Out(retire_layout(config))``, ``Out(signature_layout())``
        With ``trace`` only (:class:`.core.NveCore`).
    """

    def __init__(self, *, config=None, trace=False):
        self._config = config = as_config(config)
        self._trace = bool(trace)
        members = {
            "bus": In(AXI4LiteSignature(addr_width=ADDR_WIDTH, data_width=32)),
            "i_stream": In(stream.Signature(config.word_bits)),
            "o_stream": Out(stream.Signature(output_layout(config))),
            "irq": Out(1),
        }
        if trace:
            members.update(trace_members(config))
        super().__init__(members)

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        m.submodules.host = host = NveHost(config=self._config)
        m.submodules.core = core = NveCore(config=self._config, trace=self._trace)
        wiring.connect(m, wiring.flipped(self.bus), host.bus)
        wiring.connect(m, wiring.flipped(self.i_stream), core.i_stream)
        wiring.connect(m, core.o_stream, wiring.flipped(self.o_stream))
        m.d.comb += [getattr(core, name).eq(getattr(host, name)) for name in _SETTINGS]
        m.d.comb += [getattr(host, name).eq(getattr(core, name)) for name in _STATUS]
        m.d.comb += self.irq.eq(host.irq)
        if self._trace:
            m.d.comb += [self.retire.eq(core.retire), self.digest.eq(core.digest)]
        return m


def nve(config=None, trace=False):
    """An :class:`Nve` from plain data: ``config`` an NveConfig, its fields as a dict, or
    None (the default sizes)."""
    return Nve(config=config, trace=trace)
