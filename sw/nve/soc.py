"""NVE runs on the SoC's NVE peripheral (``SocConfig.nve``), driven by the firmware's NVE
driver (``firmware/nve.c``) from job records the host writes into external memory.

The firmware program ``test_nve`` (``firmware/tests/test_nve.c``) reads a job table at bus
address :data:`JOB_TABLE` and runs each job; the host compares each job's result record with
the instruction-set simulator (:func:`compare`). All values are little-endian 32-bit words at
bus addresses (bytes from the start of external memory).

Job table: the number of jobs, then the bus address of each job record.

Job record (:func:`job_record`), word by word:

====  ==============================================================================
0     :data:`JOB_MAGIC`
1-5   ``PROGRAM_SIZE``, ``LOOP_START``, ``LOOP_END``, ``ITERATIONS``, ``SHIFT``
6     ``load``: 1 sends the program's words first (``CTRL.load``)
7     input words (64-bit: program words when ``load``, then the data words)
8     room for output words (64-bit) in the result record
9     bus address of the result record
10    1: write the LUT below into the NVE first
11-   ``agu_modes - 1`` pairs (``AGUm_INC``, ``AGUm_TOGGLE``), mode 1 first; then the LUT's
      256 words (entry ``4r + k`` is byte ``k`` of word ``r``); then the input words, low
      half first
====  ==============================================================================

Result record (:data:`RESULT_FIELDS`, then the output words, low half first): the NVE's
``STATUS``, ``ERROR``, ``ERROR_CYCLE``, ``CYCLES``, ``STALLS``, ``BUSY_CYCLES`` and ``LOADED``
registers after the run, the output words read, whether the last one carried ``last``, the
input words sent, and the processor cycles the run took (``SYSCTRL.CYCLES``, from the first
register write to the end).
"""

import struct
from dataclasses import dataclass

from hls_ref.nve.isa import NveError
from hls_ref.nve.iss import run

__all__ = ["JOB_MAGIC", "JOB_TABLE", "RESULT_FIELDS", "NveSocRun", "compare", "job_table",
           "read_result"]

#: Bus address of the job table (above the firmware's boot block).
JOB_TABLE = 0x0010_0000
#: First word of a job record: "NVEJ".
JOB_MAGIC = 0x4A45564E
#: The result record's words before the output words.
RESULT_FIELDS = ("status", "error", "error_cycle", "cycles", "stalls", "busy_cycles", "loaded",
                 "outputs", "last", "sent", "cpu_cycles")
_LUT_WORDS = 256


def _words(*values):
    return struct.pack(f"<{len(values)}I", *(int(v) & 0xFFFF_FFFF for v in values))


def _halves(words):
    return [h for w in words for h in (w & 0xFFFF_FFFF, w >> 32)]


def job_record(program, data, result_address, *, load=True, out_room=None, lut=True):
    """The bytes of one job record (see the module docstring) for ``program`` (an
    :class:`hls_ref.nve.isa.Program`) on ``data`` (64-bit words); ``out_room``: output words
    the result record has room for (default: the ISS's output count, at least 1)."""
    config = program.config
    s = program.settings
    inputs = [*(program.words if load else ()), *(int(w) for w in data)]
    if out_room is None:
        try:
            out_room = max(1, len(run(program, data, strict=False).output_words))
        except NveError:
            out_room = 16
    pairs = [x for mode in range(1, config.agu_modes) for x in s.pair(mode)]
    lut_words = [int.from_bytes(bytes(v & 0xFF for v in s.lut[4 * r:4 * r + 4]), "little")
                 for r in range(_LUT_WORDS)]
    return (_words(JOB_MAGIC, program.size, s.loop_start, program.loop_end, s.iterations,
                   s.shift, int(load), len(inputs), out_room, result_address, int(lut),
                   *pairs, *lut_words) + _words(*_halves(inputs))), out_room


def job_table(jobs, base=JOB_TABLE):
    """``(loads, results)`` for the SoC simulator: ``loads`` the ``(bus address, bytes)`` of
    the job table and every job record; ``results`` each job's ``(result address, bytes)``
    to read back. ``jobs``: ``(program, data)`` or ``(program, data, options)`` with the
    options of :func:`job_record`."""
    records, results = [], []
    address = base + 4 * (1 + len(jobs))
    address += -address % 8
    for job in jobs:
        program, data, *rest = job
        options = rest[0] if rest else {}
        record, room = job_record(program, data, 0, **options)
        size = 4 * len(RESULT_FIELDS) + 8 * room
        result = address + len(record) + (-len(record) % 8)
        record, _ = job_record(program, data, result, out_room=room, **options)
        records.append((address, record))
        results.append((result, size))
        address = result + size + (-size % 8)
    table = _words(len(jobs), *(a for a, _ in records))
    return [(base, table), *records], results


@dataclass(frozen=True)
class NveSocRun:
    """One job's result record, decoded: the fields of :data:`RESULT_FIELDS` and the output
    words (64-bit, as many as were read and fit)."""

    status: int
    error: int
    error_cycle: int
    cycles: int
    stalls: int
    busy_cycles: int
    loaded: int
    outputs: int
    last: int
    sent: int
    cpu_cycles: int
    words: tuple

    @property
    def error_code(self):
        return self.error & 0xFFFF

    @property
    def error_pc(self):
        return self.error >> 16


def read_result(raw):
    """An :class:`NveSocRun` from a result record's bytes."""
    n = len(RESULT_FIELDS)
    fields = struct.unpack_from(f"<{n}I", raw)
    halves = struct.unpack_from(f"<{(len(raw) - 4 * n) // 4}I", raw, 4 * n)
    kept = min(fields[RESULT_FIELDS.index("outputs")], len(halves) // 2)
    words = tuple(halves[2 * k] | halves[2 * k + 1] << 32 for k in range(kept))
    return NveSocRun(*fields, words=words)


def compare(program, data, got, *, strict=False):
    """The differences (a list of strings, empty when they agree) between ``got`` (an
    :class:`NveSocRun`) and the ISS on ``program`` and ``data``: the output words bit for bit,
    ``last`` on the last, and ``CYCLES - STALLS`` (the cycles the NVE issued in: the processor
    feeds the input stream slower than one word per cycle, and a wait for a word is a stall)
    against the ISS's cycles; for a program the ISS refuses, ``ERROR`` (code, pc, cycle)."""
    problems = []
    try:
        want = run(program, data, strict=strict)
    except NveError as error:
        found = (got.error_code, got.error_pc, got.error_cycle)
        if found != (error.code, error.pc or 0, error.cycle or 0):
            problems.append(f"ERROR {found}, the ISS {error.code.name} at pc {error.pc}, "
                            f"cycle {error.cycle}")
        return problems
    if got.error_code:
        problems.append(f"ERROR code {got.error_code} at pc {got.error_pc}")
    if got.outputs != len(want.output_words):
        problems.append(f"{got.outputs} output words, the ISS {len(want.output_words)}")
    elif list(got.words) != list(want.output_words):
        first = next(k for k, (g, w) in enumerate(zip(got.words, want.output_words)) if g != w)
        problems.append(f"output word {first} differs: {got.words[first]:#018x}, the ISS "
                        f"{want.output_words[first]:#018x}")
    if want.output_words and not got.last:
        problems.append("the last output word came without last")
    if got.cycles - got.stalls != want.cycles - want.stall_cycles:
        problems.append(f"CYCLES {got.cycles} - STALLS {got.stalls}, the ISS "
                        f"{want.cycles} - {want.stall_cycles}")
    return problems

