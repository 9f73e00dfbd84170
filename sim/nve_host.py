"""The host of the NVE RTL in a cocotb simulation, and its lockstep comparison with the ISS.

:class:`NveBench` drives :class:`hdl.nve.Nve`: an AXI-Lite master on ``bus`` (cocotbext-axi),
the input stream (instruction words, then data words, with optional random idle cycles), the
output stream (with optional random back-pressure) and a monitor of the ``retire`` port,
which the design built with ``trace=True`` fills with one record per executed instruction.
:meth:`NveBench.run` runs one program the way ``docs/nve.md`` says (settings, LUT,
``CTRL.load | CTRL.start``, stream, wait for ``irq``, read the status) and returns an
:class:`RtlRun`.

:func:`compare` checks an :class:`RtlRun` against :mod:`hls_ref.nve.iss` on the same
:class:`~sim.nve_programs.Job`: every retire record (cycle, pc, memory ops, ``rw``, ``ri``,
accumulators, ``ro``, ``out``), the output words and ``last``, ``CYCLES`` and ``STALLS``, and
for a faulting program ``ERROR`` and ``ERROR_CYCLE`` (``ERROR_DOC`` says where the hardware
differs: a stall instead of an exhausted input, no check of words never written).
"""

import logging
import random
import warnings
from dataclasses import dataclass, field

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge, with_timeout

from hdl.nve.core import SIGNED_FROM, retire_layout
from hdl.nve.signature import signature
from hls_ref.nve.isa import DEFAULT_CONFIG, HOST_LUT_OFFSET, ErrorCode, NveError, host_registers
from hls_ref.nve.iss import Retire, run

from .cocotb_streams import StreamSource

# cocotbext-axi 0.1.28 still calls cocotb 1.x APIs that cocotb 2 deprecates; the tests run with
# warnings as errors, so ignore those (and only those) raised from its own code.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.axi\.")
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp  # noqa: E402

__all__ = ["AxiResp", "NveBench", "RtlRun", "compare", "signatures"]

#: Cycles a run may take beyond its instructions before the bench gives up (then aborts).
_SLACK = 2000


@dataclass
class RtlRun:
    """What the bench saw of one run: the ``signature`` of its retire records and output beats
    (:func:`hdl.nve.core.signature_layout`, as a dict), the retire ``records`` (tuples in
    :class:`hls_ref.nve.iss.Retire` order, only when monitored), the output ``words`` and
    their ``last`` flags (only when collected), the status registers (``status``: name ->
    value) and whether it had to abort a hung run."""

    signature: dict = field(default_factory=dict)
    records: list = field(default_factory=list)
    words: list = field(default_factory=list)
    lasts: list = field(default_factory=list)
    status: dict = field(default_factory=dict)
    aborted: bool = False
    monitored: bool = False


class NveBench:
    """Register, stream and trace access to an :class:`hdl.nve.Nve` (built with ``trace``).

    Parameters
    ----------
    dut
        The simulated top level (``clk``, ``rst``, ``bus__*``, ``i_stream__*``,
        ``o_stream__*``, ``retire``, ``irq``).
    config : NveConfig
        Its sizes.
    seed : int
        Seed of the random idle and stall patterns.
    """

    def __init__(self, dut, config=DEFAULT_CONFIG, *, seed=0):
        self.dut = dut
        self.config = config
        self.regmap = host_registers(config)
        self.rng = random.Random(seed)
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "bus", bus_separator="__"),
                                    dut.clk, dut.rst)
        for interface in (self.master.read_if, self.master.write_if):
            interface.log.setLevel(logging.WARNING)
        layout = retire_layout(config)
        self._fields = [(name, layout[name].offset, layout[name].width)
                        for name in ("cycle", "pc", "mema_op", "mema_addr", "mema_data",
                                     "memb_op", "memb_addr", "memb_data", "rw", "ri", "acc",
                                     "ro", "out")]
        self._lut = None  # what the bench last wrote (None: the configuration's identity)
        self._written = {}  # register -> value last written

    async def reset(self):
        cocotb.start_soon(Clock(self.dut.clk, 10, unit="ns", impl="gpi").start(start_high=False))
        self.dut.rst.value = 1
        self.dut.i_stream__valid.value = 0
        self.dut.o_stream__ready.value = 0
        await ClockCycles(self.dut.clk, 3)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    # ---- registers

    async def write(self, name, value=None, **fields):
        """Write register ``name`` (a value, or fields by name); return the response code."""
        if value is None:
            value = self.regmap.encode(name, **fields)
        response = await self.master.write(self.regmap.offset(name), value.to_bytes(4, "little"))
        return response.resp

    async def read(self, name):
        """Read register ``name``; return ``{field: value}``."""
        response = await self.master.read(self.regmap.offset(name), 4)
        return self.regmap.decode(name, int.from_bytes(response.data, "little"))

    async def write_lut(self, lut):
        """Write the 1024 LUT entries (int8), 4 per register."""
        # one transfer of the whole window: the master issues its word writes back to back
        response = await self.master.write(HOST_LUT_OFFSET, bytes(int(v) & 0xFF for v in lut))
        assert response.resp == AxiResp.OKAY
        self._lut = tuple(int(v) for v in lut)

    async def settings(self, program):
        """Write the setting registers of ``program`` that differ from what was written."""
        s = program.settings
        values = {"PROGRAM_SIZE": program.size, "LOOP_START": s.loop_start,
                  "LOOP_END": program.loop_end, "ITERATIONS": s.iterations, "SHIFT": s.shift}
        for mode in range(1, self.config.agu_modes):
            inc, toggle = s.pair(mode)
            values[f"AGU{mode}_INC"], values[f"AGU{mode}_TOGGLE"] = inc, toggle
        for name, value in values.items():
            if self._written.get(name) != value:
                assert await self.write(name, value=value) == AxiResp.OKAY, name
                self._written[name] = value
        lut = tuple(s.lut)
        if lut != (self._lut or _identity()):
            await self.write_lut(lut)

    # ---- a run

    def _unpack(self, value):
        return tuple((value >> offset) & ((1 << width) - 1) for _, offset, width in self._fields)

    async def _monitor(self, records):
        retire = self.dut.retire
        while True:
            await RisingEdge(self.dut.clk)
            value = retire.value
            if value[0] == 1:  # valid (the other fields may be undefined without it)
                records.append(self._unpack(value.to_unsigned()))

    async def _sink(self, run, stall):
        dut = self.dut
        bits = self.config.word_bits
        while True:
            await FallingEdge(dut.clk)
            ready = not (stall and self.rng.random() < stall)
            dut.o_stream__ready.value = int(ready)
            await ReadOnly()
            if ready and dut.o_stream__valid.value:
                beat = dut.o_stream__payload.value.to_unsigned()
                run.words.append(beat & ((1 << bits) - 1))
                run.lasts.append(beat >> bits)

    async def run(self, program, data, *, load=True, idle=0.0, stall=0.0, limit=None,
                  monitor=False):
        """Run ``program`` on ``data`` words; return an :class:`RtlRun`. ``idle`` / ``stall``:
        probability per cycle of an idle input cycle / a refused output cycle. ``monitor``:
        also read every retire record and output beat (slow: Python in every cycle). A run
        still busy after ``limit`` cycles (default: enough for every instruction) is
        aborted."""
        dut = self.dut
        await self.settings(program)
        result = RtlRun(monitored=monitor)
        words = (list(program.words) if load else []) + [int(w) for w in data]
        tasks = []
        if monitor:
            tasks.append(cocotb.start_soon(self._monitor(result.records)))
        if monitor or stall:
            tasks.append(cocotb.start_soon(self._sink(result, stall)))
        else:
            dut.o_stream__ready.value = 1  # the signature covers the beats
        source = cocotb.start_soon(StreamSource(dut, "i_stream", dut.clk, rng=self.rng,
                                                idle=idle).send(words))
        assert await self.write("CTRL", start=1, load=int(load)) == AxiResp.OKAY
        if limit is None:
            limit = _SLACK + 4 * len(words) + 2 * _executed(program)
        try:
            await with_timeout(RisingEdge(dut.irq), 10 * limit, "ns")
        except TimeoutError:
            result.aborted = True
            await self.write("CTRL", abort=1)
        await ClockCycles(dut.clk, 2)
        for task in tasks:
            task.cancel()
        if not source.done():  # words the run did not take: withdraw them
            source.cancel()
            await FallingEdge(dut.clk)
            dut.i_stream__valid.value = 0
        dut.o_stream__ready.value = 0
        signature = dut.digest.value.to_unsigned()
        for name, width in (("records", 32), ("hash", 64), ("outputs", 32),
                            ("output_hash", 64)):
            result.signature[name] = signature & ((1 << width) - 1)
            signature >>= width
        # an abort while idle drops the words the NVE's input holds (a faulting run leaves
        # some), so that the next run starts on its own words
        await self.write("CTRL", abort=1)
        for name in ("STATUS", "ERROR", "ERROR_CYCLE", "CYCLES", "STALLS", "BUSY_CYCLES",
                     "LOADED"):
            fields = await self.read(name)
            for key, value in fields.items():
                result.status[name if key == "value" else f"{name}.{key}"] = value
        await self.write("STATUS", done=1, error=1)
        return result


def _identity():
    from hls_ref.nve.isa import named_lut
    return named_lut("identity")


def _executed(program):
    s = program.settings
    body = program.loop_end + 1 - s.loop_start
    return program.size - body + body * s.iterations


def _reference(job):
    """``(records, output words, error or None, cycles)`` of the ISS."""
    try:
        result = run(job.program, job.data, strict=job.strict, retire=True)
    except NveError as error:
        return list(error.retire or ()), None, error, None
    return list(result.retire), list(result.output_words), None, result.cycles


def signatures(records, outputs, config=DEFAULT_CONFIG):
    """The :func:`hdl.nve.core.signature_layout` values the RTL computes for the simulator's
    ``records`` (:class:`~hls_ref.nve.iss.Retire`) and ``outputs`` (words; ``None``: not
    compared): counts and signatures (:func:`hdl.nve.signature.signature`)."""
    layout = retire_layout(config)
    places = [(name, layout[name].offset - SIGNED_FROM) for name in Retire._fields[1:]]
    values = []
    for record in records:
        value = 0
        for name, offset in places:
            value |= int(getattr(record, name)) << offset
        values.append(value)
    result = {"records": len(records), "hash": signature(values, layout.size - SIGNED_FROM)}
    if outputs is not None:
        beats = [int(word) | int(k == len(outputs) - 1) << config.word_bits
                 for k, word in enumerate(outputs)]
        result.update(outputs=len(outputs),
                      output_hash=signature(beats, config.word_bits + 1))
    return result


def compare(job, rtl, config=DEFAULT_CONFIG):
    """The differences between the RTL's run ``rtl`` and the ISS on ``job`` (a list of
    strings, empty when they agree) and the number of retire records compared: by record
    when ``rtl`` was monitored, else by signature."""
    records, outputs, error, cycles = _reference(job)
    problems = []
    timed = not (job.idle or job.stall)  # with random flow control only the order is equal
    code = rtl.status.get("ERROR.code")
    exhausted = error is not None and error.code is ErrorCode.INPUT_EXHAUSTED
    unwritten = error is not None and error.code is ErrorCode.READ_UNWRITTEN
    compared = 0 if exhausted or unwritten else len(records)
    if rtl.monitored and compared:
        want = [tuple(int(x) for x in r) for r in records]
        got = list(rtl.records)
        if not timed:
            want, got = [r[1:] for r in want], [r[1:] for r in got]
        names = Retire._fields if timed else Retire._fields[1:]
        for k, (g, w) in enumerate(zip(got, want)):
            if g != w:
                diff = [f"{n} {g[i]:#x} != {w[i]:#x}" for i, n in enumerate(names)
                        if g[i] != w[i]]
                problems.append(f"{job.name}: record {k} (pc {w[1 if timed else 0]}): "
                                f"{', '.join(diff[:3])}")
                break
        if len(got) != len(want):
            problems.append(f"{job.name}: {len(got)} records, the ISS {len(want)}")
        if error is None and (rtl.words != outputs or rtl.lasts != [
                int(k == len(outputs) - 1) for k in range(len(outputs))]):
            problems.append(f"{job.name}: output words or last flags differ")
    elif compared:
        want = signatures(records, outputs if error is None else None, config)
        got = {key: rtl.signature[key] for key in want}
        if got != want:
            problems.append(f"{job.name}: signature {got}, the ISS {want}")
    if error is None:
        if code != ErrorCode.NONE:
            problems.append(f"{job.name}: ERROR {ErrorCode(code).name} at pc "
                            f"{rtl.status['ERROR.pc']}, cycle {rtl.status['ERROR_CYCLE']}")
        expected_cycles = cycles if timed else len(records) + rtl.status["STALLS"]
        if rtl.status["CYCLES"] != expected_cycles or (timed and rtl.status["STALLS"]):
            problems.append(f"{job.name}: CYCLES {rtl.status['CYCLES']}, STALLS "
                            f"{rtl.status['STALLS']}, the ISS {cycles} cycles")
    elif exhausted:
        if not (rtl.aborted and code == ErrorCode.ABORTED and rtl.status["STALLS"] > 0):
            problems.append(f"{job.name}: an exhausted input must stall until the abort, "
                            f"ERROR {code}")
    elif unwritten:
        if rtl.aborted:  # undefined but safe: the run must still end
            problems.append(f"{job.name}: a read of an unwritten word hung the NVE")
    else:
        found = (code, rtl.status["ERROR.pc"], rtl.status["ERROR_CYCLE"])
        if found != (error.code, error.pc, error.cycle):
            problems.append(f"{job.name}: ERROR {found}, the ISS {error.code.name} at pc "
                            f"{error.pc}, cycle {error.cycle}")
    if rtl.aborted and not exhausted:
        problems.append(f"{job.name}: the run did not end")
    return problems, compared
