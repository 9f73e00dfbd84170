"""Program emission: init part, prologue, loop body, epilogue; settings; stream and output plans.

A verified modulo schedule gives every operation ``o`` of iteration ``x`` the cycle
``x * II + t(o)`` after the init part. The loop body is one window of ``II`` cycles
``[a + k * II, a + (k + 1) * II)`` executed ``K`` times: row ``r`` of the body holds every
operation with ``t(o) = a + r (mod II)``, which in execution ``k`` works on iteration
``x0(o) + k``. Everything before the first window is the prologue, everything after the last
one the epilogue (the final part); both hold only operations of real iterations ``0 .. N-1`` and
address memory at fixed addresses. Loop-body memory operations use the AGU pair of the ring
(:mod:`.alloc`), with the initial update of the iteration they work on in the first execution
(which differs per operation when the schedule moved it into another stage).

Two forms:

* ``standard``: ``a = span - II``, so every body execution works on real iterations only;
  ``K = N - (S - 1)``. The epilogue holds the last iteration's tail and a flushing ``setrb``
  (the last result needs one more hand-off to reach ACT) followed by the last acts. The
  program is about ``init + span + II`` instructions.
* ``compact``: ``a`` = one past the first ``setrb``, ``K = N``: the body also runs the *head*
  (operations before the first ``setrb``) of iteration ``N`` and the acts of iteration ``-1``.
  Both are harmless: the head only reads, writes (the host streams a zero word for such a
  write), loads registers and issues the first ``setrb``, which is exactly the flush; the acts
  of iteration -1 activate a hand-off that the init part primes with a ``set.w`` and two
  ``setrb`` (accumulators set, no mac), and their output words are discarded. The program is
  about ``init + span`` instructions, the executed count the same as ``standard``.

The init part writes the coefficient words and the stored columns iteration 0 reads but no
iteration writes (``x_w < 0``), each at least 2 cycles before its first read.
"""

from dataclasses import dataclass

import numpy as np

from hls_ref.nve.isa import Instruction, MemOp, Program, Settings, decode, encode

__all__ = ["Emitted", "FormError", "StreamPlan", "check_memory", "emit"]

# Priming (compact form): the init cycle of the read of the first-written word (written at
# cycle 0), then set.w 2 cycles later and two setrb: the first sets the accumulators, the
# second hands them off (no mac, so neither hand-off must be activated).
_PRIME_READ = 2


class FormError(Exception):
    """The schedule cannot be emitted in the requested form: not at all (``size`` None), or
    not within the instruction buffer (``size``: the instructions the program needs)."""

    def __init__(self, message, size=None):
        super().__init__(message)
        self.size = size


@dataclass(frozen=True)
class StreamPlan:
    """The data words of one run, in input-stream order: ``kind`` 0 = coefficient word ``a``,
    1 = word ``word`` of stored column at padded input column ``column`` of group input ``a``,
    2 = a zero word (a write of an iteration past the row, compact form)."""

    kind: np.ndarray
    a: np.ndarray
    column: np.ndarray
    word: np.ndarray

    def __len__(self):
        return len(self.kind)


@dataclass(frozen=True)
class Emitted:
    """A program and what the host needs to run it: ``outputs[n]`` = ``(map position,
    iteration, half)`` of output word ``n`` (``None``: discard); part sizes in instructions;
    ``loop_count`` = ``K`` body executions for ``iterations`` output columns; ``trace``: the
    intended memory operations in execution order (:func:`check_memory`)."""

    program: Program
    form: str
    iterations: int
    loop_count: int
    init: int
    prologue: int
    body: int
    epilogue: int
    stream: StreamPlan
    outputs: tuple
    trace: tuple

    @property
    def instructions(self):
        """Instructions one run executes."""
        return self.init + self.prologue + self.loop_count * self.body + self.epilogue

    @property
    def minimum_iterations(self):
        """The smallest iteration count with a loop body (``iterations`` when this row is too
        short for one); the same program text, with another ``ITERATIONS``, serves every
        count from there up that leaves the same remainder modulo the ring depth (the
        epilogue's fixed addresses depend on it)."""
        return self.iterations - self.loop_count + 1 if self.loop_count else self.iterations


def _x0(times, a, ii):
    return {i: (a + (t - a) % ii - t) // ii for i, t in times.items()}


def emit(graph, schedule, plan, iterations, form, config):
    """The :class:`Emitted` program of ``graph`` (scheduled, allocated) for ``iterations``
    output columns per run, in ``form`` ``"standard"`` or ``"compact"``; :class:`FormError`
    when the schedule does not allow the compact form or the program exceeds
    ``config.instruction_words`` (checked before the stream, output and trace plans are
    built)."""
    ops, times, ii, n = graph.ops, schedule.times, schedule.ii, iterations
    steps = graph.spec.steps
    setrb0 = graph.setrbs[0].id
    if form == "standard":
        a = max(0, schedule.span - ii)
        x0 = _x0(times, a, ii)
        k_count = max(0, n - max(x0.values()))
    else:
        a = times[setrb0] + 1
        x0 = _x0(times, a, ii)
        k_count = n
    _check_phantoms(ops, x0, k_count, n, setrb0, form)

    # ---- the timeline after the init part: prologue, body rows, epilogue
    prologue = [dict() for _ in range(a)]
    body = [dict() for _ in range(ii)]
    epilogue = {}
    end_body = a + k_count * ii
    for op in ops:
        t = times[op.id]
        body[(t - a) % ii][op.slot] = op
        for x in range(0, min(n - 1, (a - 1 - t) // ii) + 1):
            _put(prologue[x * ii + t], op, x)
        for x in range(max(0, -(-(end_body - t) // ii)), n):
            _put(epilogue.setdefault(x * ii + t, {}), op, x)
    if form == "standard":
        # the hand-off of the last result: setrb0 of iteration n (after the body; in the
        # prologue's cycles when a short row has no body execution)
        flush = n * ii + times[setrb0]
        assert flush >= end_body or (k_count == 0 and flush < a)
        _put(prologue[flush] if flush < a else epilogue.setdefault(flush, {}), ops[setrb0], n)
    elif k_count:
        # A read of iteration n in the last body execution whose set falls after the body
        # would leave its read latch full for the next read of that port: issue the set too
        # (it only loads a register of the iteration that does not come).
        for op in ops:
            x = x0[op.id] + k_count - 1
            if op.name == "rd" and x >= n:
                t_set = x * ii + times[op.target]
                if t_set >= end_body:
                    cycle, target = epilogue.setdefault(t_set, {}), ops[op.target]
                    if cycle.get(target.slot, (None,))[0] is not target:  # A and B share it
                        _put(cycle, target, x)
    last = max(epilogue, default=end_body - 1)
    epilogue = [epilogue.get(t, {}) for t in range(end_body, last + 1)]

    # ---- init: coefficient words and the columns no iteration writes, earliest read first
    init_tags = [("coef", w) for w in range(plan.coef_words)]
    init_tags += [("pix", inp, x_w, j, k) for (x_w, j) in steps.init_columns()
                  for inp in range(plan.inputs) for k in range(plan.words)]
    first = _first_reads(ops, times, ii, init_tags)
    init_tags.sort(key=lambda tag: first[tag])
    init = [{"mema": ("wr", tag)} for tag in init_tags]
    if form == "compact":
        prime = init_tags[0]
        while len(init) < _PRIME_READ:
            init.append({})
        init.insert(_PRIME_READ, {"mema": ("rd", prime)})
        # the second setrb (cycle p + 4) is visible to ACT from p + 7; the earliest act of
        # iteration -1 issues at len(init) + a
        need = max(_PRIME_READ + 5, _PRIME_READ + 7 - a)
        init += [{} for _ in range(need - len(init))]
        init[_PRIME_READ + 2]["wreg"] = "set"
        init[_PRIME_READ + 3]["vmac"] = "setrb"
        init[_PRIME_READ + 4]["vmac"] = "setrb"
    written = {c["mema"][1]: i for i, c in enumerate(init) if c.get("mema", ("",))[0] == "wr"}
    pad = max((written[tag] + 2 - len(init) - first[tag] for tag in init_tags), default=0)
    init += [{} for _ in range(max(0, pad))]

    # ---- instructions
    words = []
    for cycle in init:
        words.append(_init_instruction(cycle, plan))
    for cycle in prologue:
        words.append(_instruction(cycle, plan))
    loop_start = len(words)
    for row in body:
        words.append(_instruction({s: (op, x0[op.id]) for s, op in row.items()}, plan, True))
    for cycle in epilogue:
        words.append(_instruction(cycle, plan))
    if len(words) > config.instruction_words:
        raise FormError(f"{form}: {len(words)} instructions, more than the "
                        f"{config.instruction_words} of the instruction buffer", len(words))
    settings = Settings(loop_start=loop_start, loop_end=loop_start + ii - 1,
                        iterations=k_count, agu=plan.agu)
    program = Program(tuple(encode(w, config) for w in words), settings, config)

    # ---- stream, outputs and memory trace in execution order
    stream, outputs, trace = [], [], []
    for pc, cycle in enumerate(init):
        if "mema" in cycle:
            kind, tag = cycle["mema"]
            address = _tag_address(tag, plan)
            if kind == "wr":
                stream.append(_init_token(tag, steps))
            trace.append((pc, "mema", kind, address, tag, False))
    base = len(init)
    for t, cycle in enumerate(prologue):
        _record(cycle, base + t, plan, steps, n, stream, outputs, trace)
    for k in range(k_count):
        for r, row in enumerate(body):
            cycle = {s: (op, x0[op.id] + k) for s, op in row.items()}
            _record(cycle, loop_start + r, plan, steps, n, stream, outputs, trace)
    for t, cycle in enumerate(epilogue):
        _record(cycle, loop_start + ii + t, plan, steps, n, stream, outputs, trace)
    arr = np.array(stream, dtype=np.int64).reshape(-1, 4)
    plan_stream = StreamPlan(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])
    return Emitted(program, form, n, k_count, len(init), len(prologue), ii, len(epilogue),
                   plan_stream, tuple(outputs), tuple(trace))


def _check_phantoms(ops, x0, k_count, n, setrb0, form):
    """Body executions may work on iterations outside 0 .. n-1 only in the compact form, and
    only with operations that are harmless there."""
    if not k_count:
        return
    for op in ops:
        for x in (x0[op.id], x0[op.id] + k_count - 1):
            if 0 <= x < n:
                continue
            if form == "standard":
                raise AssertionError(f"op {op.id} works on iteration {x} of {n}")
            if x < 0 and op.slot != "act":
                raise FormError(f"op {op.id} ({op.name}) of iteration {x} in the first body "
                                f"execution")
            if x >= n and (op.name in ("mac", "mach") or op.slot == "act" or
                           (op.name == "setrb" and op.id != setrb0)):
                raise FormError(f"op {op.id} ({op.name}) of iteration {x} in the last body "
                                f"execution")


def _put(cycle, op, x):
    assert op.slot not in cycle, (op, cycle)
    cycle[op.slot] = (op, x)


def _first_reads(ops, times, ii, tags):
    """Cycle (after the init part) of the first read of every init word ``tags``: the read
    ``op`` of iteration ``x`` reads :func:`_op_word` at ``x * ii + t(op)``, and only
    iterations ``0 .. delta`` can reach back to a word no iteration writes."""
    first = {tag: 1 << 30 for tag in tags}
    for op in ops:
        if op.name == "rd":
            for x in range(op.delta + 1):
                tag = _op_word(op, x)
                if tag in first:
                    first[tag] = min(first[tag], x * ii + times[op.id])
    return first


def _op_word(op, x):
    """The tag of the word operation ``op`` of iteration ``x`` writes or expects to read."""
    if op.word[0] == "coef":
        return ("coef", op.word[1])
    _, inp, j, k = op.word
    return ("pix", inp, x - op.delta, j, k)


def _tag_address(tag, plan):
    if tag[0] == "coef":
        return plan.coef_address(tag[1])
    _, inp, x_w, j, k = tag
    return plan.pixel_address(inp, j, k, x_w)


def _init_token(tag, steps):
    if tag[0] == "coef":
        return (0, tag[1], 0, 0)
    _, inp, x_w, j, k = tag
    return (1, inp, steps.input_column(x_w, j), k)


def _init_instruction(cycle, plan):
    fields = {}
    if "mema" in cycle:
        kind, tag = cycle["mema"]
        fields["mema"] = MemOp(kind, _tag_address(tag, plan), 0, 0)
    for slot in ("wreg", "vmac"):
        if slot in cycle:
            fields[slot] = cycle[slot]
    return Instruction(**fields)


def _instruction(cycle, plan, body=False):
    """The instruction of one cycle ``{slot: (op, iteration)}``: fixed addresses, or in the
    loop ``body`` the AGU fields of pixel words (``iteration``: the first body execution's)."""
    fields = {}
    for slot, (op, x) in cycle.items():
        if slot in ("mema", "memb"):
            if body and op.word[0] == "pix":
                _, inp, j, k = op.word
                fields[slot] = MemOp(op.name, *plan.body_field(inp, j, k, x - op.delta))
            else:
                fields[slot] = MemOp(op.name, _tag_address(_op_word(op, x), plan), 0, 0)
        elif slot == "act":
            fields["act"], fields["out"] = op.name, True
        else:
            fields[slot] = op.name
    return Instruction(**fields)


def _record(cycle, pc, plan, steps, n, stream, outputs, trace):
    for slot in ("mema", "memb"):
        if slot in cycle:
            op, x = cycle[slot]
            tag = _op_word(op, x)
            phantom = not 0 <= x < n
            trace.append((pc, slot, op.name, _tag_address(tag, plan), tag, phantom))
            if op.name == "wr":
                _, inp, j, k = op.word
                stream.append((2, 0, 0, 0) if phantom else
                              (1, inp, steps.input_column(x, j), k))
    if "act" in cycle:
        op, x = cycle["act"]
        outputs.append((op.position, x, op.name) if 0 <= x < n else None)


def check_memory(emitted, config):
    """Run the memory side of ``emitted`` symbolically and return every disagreement with
    what the schedule intends (empty: none): the AGU (offset, update, mode, pairs) must produce
    the intended address of every executed memory operation, every read must find the word it
    intends (written at least 2 cycles earlier and not yet overwritten; a read of an iteration
    past the row only needs a written word) and every address must be inside the local
    buffer."""
    program = emitted.program
    s = program.settings
    ins = [decode(w, config) for w in program.words]
    update = {(pc, slot): getattr(i, slot).update for pc, i in enumerate(ins)
              for slot in ("mema", "memb")}
    pcs = list(range(s.loop_start)) + list(range(s.loop_start, s.loop_end + 1)) * s.iterations \
        + list(range(s.loop_end + 1, program.size))
    trace = iter(emitted.trace)
    tags, written_at = {}, {}
    problems = []
    for cycle, pc in enumerate(pcs):
        for slot in ("mema", "memb"):
            m = getattr(ins[pc], slot)
            if m.op == "nop":
                continue
            want_pc, want_slot, kind, want, tag, phantom = next(trace)
            where = f"cycle {cycle}, pc {pc}, {slot}"
            if (want_pc, want_slot, kind) != (pc, slot, m.op):
                problems.append(f"{where}: program and intent differ")
                return problems
            address = m.offset + update[(pc, slot)]
            if m.mode:
                inc, toggle = s.pair(m.mode)
                u = update[(pc, slot)] + inc
                update[(pc, slot)] = 0 if u == toggle else u
            if address != want:
                problems.append(f"{where}: address {address}, intended {want} for {tag}")
            if address >= config.local_words:
                problems.append(f"{where}: address {address} outside the local buffer")
            if kind == "wr":
                tags[address], written_at[address] = tag, cycle
            elif address not in written_at or written_at[address] > cycle - 2:
                problems.append(f"{where}: reads word {address} not written 2 cycles before")
            elif not phantom and tags[address] != tag:
                problems.append(f"{where}: reads {tags[address]} at {address}, wants {tag}")
        if len(problems) > 20:
            return problems
    if next(trace, None) is not None:
        problems.append("the program ends before the intended memory operations")
    return problems
