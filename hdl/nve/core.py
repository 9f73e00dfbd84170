"""The NVE core: the run control, the issue stage and the pipeline that joins the units.

A run (``docs/nve.md``, "Hardware behaviour"): ``start`` checks the settings, then with
``load`` takes ``PROGRAM_SIZE`` instruction words from the input stream into the instruction
buffer (checking each), clears the datapath and starts the sequencer. Instructions then flow
through the stages, all of whose registers load only when ``en`` is high:

====  =====================================================================================
F     pc; the instruction buffer and the AGU state memory read at its address
      (:class:`.sequencer.Sequencer`)
D     the instruction word; the AGU's update chosen and the addresses computed
      (:class:`.agu.Agu`)
X     issue: the input word taken (MEMA ``wr``), rw/ri written
      (:mod:`.registers`), the rules checked (:class:`.hazards.HazardUnit`), operands into
      the multipliers (:class:`.vmac.Vmac`), the hand-off read (:class:`.activation.Activation`)
M     local-buffer access (:class:`.local_buffer.LocalBuffer`); products; LUT addresses
W     accumulate / hand-off; ``ro`` (LUT or digits); the output word
R     the retire record (the trace, when built with ``trace``)
====  =====================================================================================

``en`` falls (the whole machine stalls) while the instruction in X waits for an input word
(MEMA ``wr``) or for room for its output word (``act ... out``: the output holds 9 words, a
FIFO of 8 and the word kept back for ``last``; a credit counter reserves room at issue). A
fault stops issue: the faulting instruction and those behind it are killed, the ones ahead
complete. After the last issue (or a fault) the pipeline drains, the kept output word leaves
with ``last``, and the run ends when the output buffer is empty.
"""

from amaranth.hdl import Cat, Const, Module, Mux, ResetInserter, Signal
from amaranth.lib import data, enum, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.nve.numerics import MAX_SHIFT

from ..register_slice import RegisterSlice
from .activation import LUT_WORDS, Activation
from .agu import Agu
from .hazards import CYCLE_BITS, HazardUnit
from .isa import (
    ActOpcode,
    Error,
    IregOpcode,
    MemOpcode,
    VmacOpcode,
    WregOpcode,
    as_config,
    instruction_layout,
    legal_word,
)
from .local_buffer import LocalBuffer
from .registers import ImageRegister, WeightRegister
from .sequencer import Sequencer
from .signature import SIGNATURE_BITS, signature_step
from .vmac import Vmac

__all__ = ["OUTPUT_WORDS", "SIGNED_FROM", "NveCore", "output_layout", "retire_layout",
           "signature_layout", "trace_members"]

#: Output words the core can hold: its FIFO and the word kept back until ``last`` is known.
OUTPUT_WORDS = 9
_FIFO_DEPTH = OUTPUT_WORDS - 1


def output_layout(config):
    """An output-stream beat: the word and whether it is the run's last."""
    return data.StructLayout({"data": config.word_bits, "last": 1})


def signature_layout():
    """What the trace logic sums up of a run (:mod:`.signature`): the retire records (each
    without ``valid`` and ``cycle``) and the output beats, counts and signatures."""
    return data.StructLayout({"records": 32, "hash": SIGNATURE_BITS, "outputs": 32,
                              "output_hash": SIGNATURE_BITS})


#: Bits of a retire record that precede what its signature covers (``valid``, ``cycle``).
SIGNED_FROM = 1 + CYCLE_BITS


def retire_layout(config):
    """The retire record of one instruction, field for field
    :class:`hls_ref.nve.iss.Retire` (``valid``: a record in this cycle)."""
    a, w = config.addr_bits, config.word_bits
    return data.StructLayout({
        "valid": 1, "cycle": CYCLE_BITS, "pc": config.pc_bits,
        "mema_op": MemOpcode, "mema_addr": a, "mema_data": w,
        "memb_op": MemOpcode, "memb_addr": a, "memb_data": w,
        "rw": 16 * config.rw_depth, "ri": 8 * config.ri_size, "acc": 32 * config.lanes,
        "ro": w, "out": 1,
    })


def trace_members(config):
    """The ports a design built with ``trace`` adds: ``retire`` and ``digest``."""
    return {"retire": Out(retire_layout(config)), "digest": Out(signature_layout())}


class _State(enum.Enum, shape=3):
    IDLE = 0
    LOAD = 1
    RUN = 2
    DRAIN = 3
    FINISH = 4


class NveCore(wiring.Component):
    """The NVE without its bus: settings as ports, the two streams, status outputs.

    Parameters
    ----------
    config : NveConfig or dict
        Sizes (:class:`hls_ref.nve.isa.NveConfig`, the object the simulator and the code
        generator use).
    trace : bool
        Add the ``retire`` port (one record per instruction, for the lockstep test).

    Members
    -------
    program_size, loop_start, loop_end, iterations, shift : ``In(...)``
        Setting registers (stable while ``busy``).
    agu_inc, agu_toggle : ``In(ArrayLayout(addr_bits, agu_modes - 1))``
        AGU setting registers, mode 1 first.
    load : ``In(1)``
        ``CTRL.load``.
    start, abort : ``In(1)``
        Pulses: start a run (ignored while ``busy``); stop at once.
    busy : ``Out(1)``
        A run is in progress.
    done : ``Out(1)``
        Pulse: a run ended (completed, refused, faulted or aborted); ``error`` says why
        (it holds the run's code from this cycle on).
    error : ``Out(Error)``; error_pc, error_cycle : ``Out(...)``
        The ``ERROR`` fields of the last run (``NONE`` when it completed).
    cycles, stalls, busy_cycles : ``Out(32)``; loaded : ``Out(...)``
        The counters and ``LOADED``.
    i_stream : ``In(stream.Signature(word_bits))``
        Instruction words (with ``load``), then data words.
    o_stream : ``Out(stream.Signature(output_layout(config)))``
        One word per ``act ... out``; ``last`` on the run's last.
    lut_* : the LUT's host port (see :class:`.activation.Activation`).
    retire : ``Out(retire_layout(config))``
        With ``trace`` only.
    digest : ``Out(signature_layout())``
        With ``trace`` only: the run's record and output counts and CRCs, from ``start``.
    """

    def __init__(self, *, config=None, trace=False):
        self._config = config = as_config(config)
        self._trace = bool(trace)
        size_bits = config.instruction_words.bit_length()
        a, pairs = config.addr_bits, config.agu_modes - 1
        word_address = (LUT_WORDS - 1).bit_length()
        members = {
            "program_size": In(size_bits), "loop_start": In(config.pc_bits),
            "loop_end": In(config.pc_bits),
            "iterations": In(config.max_iterations.bit_length()),
            "shift": In(MAX_SHIFT.bit_length()),
            "agu_inc": In(data.ArrayLayout(a, pairs)),
            "agu_toggle": In(data.ArrayLayout(a, pairs)),
            "load": In(1), "start": In(1), "abort": In(1),
            "busy": Out(1), "done": Out(1),
            "error": Out(Error), "error_pc": Out(config.pc_bits),
            "error_cycle": Out(CYCLE_BITS),
            "cycles": Out(32), "stalls": Out(32), "busy_cycles": Out(32),
            "loaded": Out(size_bits),
            "i_stream": In(stream.Signature(config.word_bits)),
            "o_stream": Out(stream.Signature(output_layout(config))),
            "lut_w_address": In(word_address), "lut_w_data": In(32), "lut_w_strobe": In(4),
            "lut_w_en": In(1),
            "lut_r_address": In(word_address), "lut_r_en": In(1), "lut_r_data": Out(32),
        }
        if trace:
            members.update(trace_members(config))
        super().__init__(members)

    @property
    def config(self):
        return self._config

    @property
    def trace(self):
        return self._trace

    def elaborate(self, platform):
        m = Module()
        config = self._config
        word_bits, pc_bits = config.word_bits, config.pc_bits

        state = Signal(_State)
        en = Signal()      # advance the pipeline
        # a new run: empty the datapath. A register (set with the move to RUN), so that its
        # fan-out to every unit does not follow the load's word count and checks
        clear = Signal()
        stop = Signal()    # stop fetching (fault, abort)
        finish = Signal()  # end the run now with error code `ending`
        ending = Signal(Error)
        m.d.comb += self.busy.eq(state != _State.IDLE)
        # state is RUN or DRAIN, as its own flip-flop (set with every change of state): the
        # enable below starts from it, not from a decode of the state
        running = Signal()

        def goto(target):
            return [state.eq(target), running.eq(target in (_State.RUN, _State.DRAIN))]

        # ---- streams: a registered input (two words may wait in it) and the output buffer
        # (each word's legality as an instruction is found on its way in and kept with it, so
        # that the load's checks start from a register)
        m.submodules.input = in_buf = ResetInserter(self.abort)(RegisterSlice(word_bits + 1))
        m.d.comb += [
            in_buf.i.payload.eq(Cat(self.i_stream.payload,
                                    legal_word(self.i_stream.payload, config))),
            in_buf.i.valid.eq(self.i_stream.valid), self.i_stream.ready.eq(in_buf.i.ready),
        ]
        word_in = in_buf.o
        word = word_in.payload[:word_bits]
        m.submodules.output = out_fifo = ResetInserter(self.abort)(
            fifo.SyncFIFOBuffered(width=word_bits + 1, depth=_FIFO_DEPTH))
        m.d.comb += [
            self.o_stream.payload.eq(out_fifo.r_data),
            self.o_stream.valid.eq(out_fifo.r_rdy),
            out_fifo.r_en.eq(self.o_stream.ready),
        ]

        # ---- units
        m.submodules.sequencer = seq = Sequencer(config=config)
        m.submodules.agu = agu = Agu(config=config)
        m.submodules.local_buffer = lb = LocalBuffer(config=config)
        m.submodules.weights = wreg = WeightRegister(config=config)
        m.submodules.image = ireg = ImageRegister(config=config)
        m.submodules.vmac = vmac = Vmac(config=config)
        m.submodules.activation = actu = Activation(config=config)
        m.submodules.hazards = hz = HazardUnit(config=config)

        # ---- X: the issue stage
        layout = instruction_layout(config)
        x_valid = Signal()
        x_pc = Signal(pc_bits)
        x_word = Signal(layout)
        x_live = Signal()  # executes: not killed by a fault
        # (the pc and the word load on `en` alone: their enable stays off the fault's path;
        # an instruction stopped or cleared is not valid, and nothing looks at them then)
        with m.If(en):
            m.d.sync += [x_pc.eq(seq.d_pc), x_word.eq(seq.d_word)]
        with m.If(stop | clear):
            m.d.sync += x_valid.eq(0)
        with m.Elif(en):
            m.d.sync += x_valid.eq(seq.d_valid)
        m.d.comb += x_live.eq(x_valid & ~hz.fault)

        def op(field, nop, valid=x_live):
            return Mux(valid, getattr(x_word, field), nop)

        # What a killed instruction (the faulting one and those behind it) does to the
        # registers, the accumulators and the activation is never seen: every instruction
        # ahead of it has retired before, and the next run starts cleared. Only its writes to
        # the local buffer, the input and the output are suppressed: this keeps the fault
        # off the paths of the wide units.
        x_mema, x_memb = op("mema_op", MemOpcode.NOP), op("memb_op", MemOpcode.NOP)
        x_wreg = op("wreg_op", WregOpcode.NOP, x_valid)
        x_ireg = op("ireg_op", IregOpcode.NOP, x_valid)
        x_vmac = op("vmac_op", VmacOpcode.NOP, x_valid)
        x_act = op("act_op", ActOpcode.NOP, x_valid)
        x_take = x_mema == MemOpcode.WR  # takes an input word
        x_out = x_live & (x_word.act_op != ActOpcode.NOP) & x_word.act_out

        # The stall (the enable of every stage) from registers only: whether the instruction
        # in X needs an input word or an output place, decoded in D. (A killed instruction may
        # stall a cycle: nothing of it is taken or counted.)
        x_takes, x_outs = Signal(), Signal()
        with m.If(stop | clear):
            m.d.sync += [x_takes.eq(0), x_outs.eq(0)]
        with m.Elif(en):
            d_fields = layout(seq.d_word)
            m.d.sync += [
                x_takes.eq(seq.d_valid & (d_fields.mema_op == MemOpcode.WR)),
                x_outs.eq(seq.d_valid & (d_fields.act_op != ActOpcode.NOP) & d_fields.act_out),
            ]
        credits = Signal(range(OUTPUT_WORDS + 1))
        no_credit = Signal(init=1)  # credits == 0, registered
        stall = Signal()
        m.d.comb += [
            stall.eq((x_takes & ~word_in.valid) | (x_outs & no_credit)),
            en.eq(running & ~stall),
        ]

        # the front end
        m.d.comb += [
            seq.start.eq(clear), seq.stop.eq(stop), seq.en.eq(en),
            seq.program_size.eq(self.program_size), seq.loop_start.eq(self.loop_start),
            seq.loop_end.eq(self.loop_end), seq.iterations.eq(self.iterations),
        ]
        m.d.comb += [
            agu.en.eq(en), agu.f_pc.eq(seq.f_pc), agu.f_next.eq(seq.f_next),
            agu.f_read.eq(seq.f_read), agu.d_pc.eq(seq.d_pc),
            agu.d_first.eq(seq.d_first), agu.inc.eq(self.agu_inc),
            agu.toggle.eq(self.agu_toggle), agu.x_pc.eq(x_pc), agu.x_valid.eq(x_valid),
        ]
        d_word = layout(seq.d_word)
        for p, slot in enumerate(("mema", "memb")):
            m.d.comb += [agu.d_offset[p].eq(getattr(d_word, f"{slot}_offset")),
                         agu.d_update[p].eq(getattr(d_word, f"{slot}_update")),
                         agu.d_mode[p].eq(getattr(d_word, f"{slot}_mode"))]
        # a fault stops fetch and issue; the instructions ahead of it complete, so only an
        # abort (or a new run) empties the stages from M on
        flush = self.abort | clear
        m_pc, m_valid = Signal(pc_bits), Signal()
        with m.If(en):
            m.d.sync += m_pc.eq(x_pc)
        with m.If(flush):
            m.d.sync += m_valid.eq(0)
        with m.Elif(en):
            m.d.sync += m_valid.eq(x_live)
        m.d.comb += [agu.m_pc.eq(m_pc), agu.m_valid.eq(m_valid)]

        # the datapath
        m.d.comb += [
            lb.en.eq(en), lb.kill.eq(hz.kill),
            lb.x_op[0].eq(x_mema), lb.x_op[1].eq(x_memb),
            lb.x_address[0].eq(agu.x_address[0][:config.addr_bits]),
            lb.x_address[1].eq(agu.x_address[1][:config.addr_bits]),
            lb.x_data.eq(word), lb.m_ro.eq(actu.ro),
            word_in.ready.eq(Mux(state == _State.LOAD, 1, en & x_take)),
            wreg.en.eq(en), wreg.clear.eq(clear), wreg.x_op.eq(x_wreg),
            wreg.latch_a.eq(lb.latch[0]),
            ireg.en.eq(en), ireg.clear.eq(clear), ireg.x_op.eq(x_ireg),
            ireg.latch_a.eq(lb.latch[0]), ireg.latch_b.eq(lb.latch[1]),
            vmac.en.eq(en), vmac.clear.eq(clear), vmac.x_op.eq(x_vmac),
            vmac.rw0.eq(wreg.rw[0]),
            *(vmac.ri[j].eq(ireg.ri[j]) for j in range(config.lanes)),
            actu.en.eq(en), actu.clear.eq(clear), actu.busy.eq(self.busy),
            actu.x_op.eq(x_act), actu.shift.eq(self.shift), actu.handoff.eq(vmac.handoff),
            actu.acc.eq(vmac.acc),
            actu.w_handoff.eq(vmac.w_handoff),
            actu.lut_w_address.eq(self.lut_w_address), actu.lut_w_data.eq(self.lut_w_data),
            actu.lut_w_strobe.eq(self.lut_w_strobe), actu.lut_w_en.eq(self.lut_w_en),
            actu.lut_r_address.eq(self.lut_r_address), actu.lut_r_en.eq(self.lut_r_en),
            self.lut_r_data.eq(actu.lut_r_data),
        ]

        # ---- cycle counting: from the first issue to the last, stalls included
        cycle = Signal(CYCLE_BITS)
        m.d.comb += [
            hz.en.eq(en), hz.clear.eq(clear), hz.x_valid.eq(x_live), hz.x_pc.eq(x_pc),
            hz.x_cycle.eq(cycle), hz.x_mem[0].eq(x_mema), hz.x_mem[1].eq(x_memb),
            hz.x_wreg.eq(x_wreg), hz.x_ireg.eq(x_ireg), hz.x_vmac.eq(x_vmac),
            hz.x_act.eq(x_act), hz.x_address.eq(agu.x_address),
        ]
        with m.If(clear):
            m.d.sync += [cycle.eq(0), self.stalls.eq(0)]
        with m.Elif(x_live):
            m.d.sync += cycle.eq(cycle + 1)
            with m.If(~en):
                m.d.sync += self.stalls.eq(self.stalls + 1)
        m.d.comb += self.cycles.eq(cycle)
        with m.If(self.start & ~self.busy):
            m.d.sync += self.busy_cycles.eq(0)
        with m.Elif(self.busy):
            m.d.sync += self.busy_cycles.eq(self.busy_cycles + 1)

        # ---- output: R pushes ro when its instruction has `out`; credits reserve the room
        m_out, w_out, w_valid = Signal(), Signal(), Signal()
        r_out, r_stage = Signal(), Signal()
        with m.If(flush):
            m.d.sync += [m_out.eq(0), w_out.eq(0), w_valid.eq(0), r_out.eq(0),
                         r_stage.eq(0)]
        with m.Elif(en):
            m.d.sync += [m_out.eq(x_out), w_out.eq(m_out & ~hz.kill),
                         w_valid.eq(m_valid & ~hz.kill), r_out.eq(w_out), r_stage.eq(w_valid)]
        kept, kept_valid = Signal(word_bits), Signal()
        flush_kept = Signal()  # the run is over: the kept word leaves with `last`
        push = en & r_out
        m.d.comb += [out_fifo.w_en.eq(0), out_fifo.w_data.eq(Const(0, word_bits + 1))]
        with m.If(push & kept_valid):
            m.d.comb += [out_fifo.w_en.eq(1), out_fifo.w_data.eq(kept)]
        with m.Elif(flush_kept & kept_valid):
            m.d.comb += [out_fifo.w_en.eq(1), out_fifo.w_data.eq(kept | (1 << word_bits))]
        with m.If(self.abort | clear):
            m.d.sync += kept_valid.eq(0)
        with m.Elif(push):
            m.d.sync += [kept.eq(actu.ro), kept_valid.eq(1)]
        with m.Elif(flush_kept):
            m.d.sync += kept_valid.eq(0)
        popped = self.o_stream.valid & self.o_stream.ready
        taken = en & x_out
        credits_next = Signal.like(credits)
        m.d.comb += credits_next.eq(Mux(self.abort | clear, OUTPUT_WORDS,
                                        credits + popped - taken))
        m.d.sync += [credits.eq(credits_next), no_credit.eq(credits_next == 0)]

        # ---- run control
        # ERROR's pc and cycle: a run that ends at once (refused, aborted) makes them read 0
        # through `error_zero`, so that its condition (the settings' comparisons) drives three
        # flip-flops, not the fields' resets
        error_pc, error_cycle = Signal(pc_bits), Signal(CYCLE_BITS)
        error_zero = Signal()
        m.d.comb += [self.error_pc.eq(Mux(error_zero, 0, error_pc)),
                     self.error_cycle.eq(Mux(error_zero, 0, error_cycle))]
        settings_ok = ((self.program_size >= 1) &
                       (self.program_size <= config.instruction_words) &
                       (self.loop_start <= self.loop_end) &
                       (self.loop_end < self.program_size))
        count = Signal.like(self.program_size)  # instruction words loaded
        bad, bad_pc = Signal(), Signal(pc_bits)
        legal = Signal()
        m.d.comb += legal.eq(word_in.payload[word_bits])
        drained = ~m_valid & ~w_valid & ~r_stage & ~x_valid
        issued_all = ~seq.f_valid & ~seq.d_valid & ~x_valid
        last_pc = Signal(pc_bits)
        with m.If(x_live & en):
            m.d.sync += last_pc.eq(x_pc)
        m.d.comb += [hz.end.eq(0), hz.end_pc.eq(last_pc)]
        m.d.comb += [
            seq.w_addr.eq(count), seq.w_data.eq(word),
            seq.w_en.eq((state == _State.LOAD) & word_in.valid),
        ]
        m.d.sync += clear.eq(0)  # a one-cycle pulse (the assignments below set it)
        ended = Signal()  # the run ends now; `done` follows a cycle later with its ERROR
        m.d.comb += [ended.eq(0), finish.eq(0)]
        m.d.sync += self.done.eq(ended)
        with m.If(self.abort):
            m.d.comb += stop.eq(1)
            with m.If(self.busy):
                m.d.comb += [finish.eq(1), ending.eq(Error.ABORTED)]
            with m.If(state == _State.LOAD):
                m.d.sync += self.loaded.eq(0)
        with m.Else():
            with m.Switch(state):
                with m.Case(_State.IDLE):
                    with m.If(self.start):
                        with m.If(~settings_ok):
                            m.d.comb += [finish.eq(1), ending.eq(Error.SETTINGS)]
                        with m.Elif(self.load):
                            m.d.sync += [*goto(_State.LOAD), count.eq(0), bad.eq(0),
                                         self.loaded.eq(0)]
                        with m.Elif(self.program_size > self.loaded):
                            m.d.comb += [finish.eq(1), ending.eq(Error.NO_PROGRAM)]
                        with m.Else():
                            m.d.sync += [clear.eq(1), *goto(_State.RUN)]
                with m.Case(_State.LOAD):
                    with m.If(word_in.valid):
                        m.d.sync += count.eq(count + 1)
                        with m.If(~bad & ~legal):
                            m.d.sync += [bad.eq(1), bad_pc.eq(count)]
                        with m.If(count + 1 == self.program_size):
                            with m.If(bad | ~legal):
                                m.d.sync += goto(_State.FINISH)
                                m.d.sync += [self.error.eq(Error.ILLEGAL_INSTRUCTION),
                                             error_pc.eq(Mux(bad, bad_pc, count)),
                                             error_cycle.eq(0), error_zero.eq(0)]
                            with m.Else():
                                m.d.sync += [self.loaded.eq(self.program_size),
                                             *goto(_State.RUN), clear.eq(1)]
                with m.Case(_State.RUN):
                    # (a fault of the previous run is cleared with the datapath, this cycle)
                    with m.If(hz.fault & ~clear):
                        m.d.comb += stop.eq(1)
                        m.d.sync += goto(_State.DRAIN)
                    with m.Elif(issued_all & ~clear):  # (clear: fetching starts now)
                        m.d.comb += hz.end.eq(1)
                        m.d.sync += goto(_State.DRAIN)
                with m.Case(_State.DRAIN):
                    # the kept word needs a place in the FIFO, which may still be full
                    with m.If(drained & (out_fifo.w_rdy | ~kept_valid)):
                        m.d.comb += flush_kept.eq(1)
                        m.d.sync += [*goto(_State.FINISH),
                                     self.error.eq(hz.code), error_pc.eq(hz.pc),
                                     error_cycle.eq(hz.cycle), error_zero.eq(0)]
                with m.Case(_State.FINISH):
                    # (the FIFO's output register fills a cycle after a write: its level,
                    # not its readiness, says it is empty)
                    with m.If(out_fifo.level == 0):
                        m.d.comb += ended.eq(1)
                        m.d.sync += goto(_State.IDLE)
        with m.If(finish):
            m.d.comb += ended.eq(1)
            m.d.sync += [*goto(_State.IDLE), self.error.eq(ending), error_zero.eq(1)]

        if self._trace:
            self._retire(m, en, flush, clear, x_pc, cycle, x_out, m_valid, w_valid, lb, wreg,
                         ireg, vmac, actu, hz)
        return m

    def _retire(self, m, en, flush, clear, x_pc, cycle, x_out, m_valid, w_valid, lb, wreg,
                ireg, vmac, actu, hz):
        """The retire record of the instruction in R (X+3): everything it wrote back, taken
        from each unit in the stage where it is final and carried on to R."""
        config = self._config
        retire = self.retire
        m_cycle, w_cycle, r_cycle = (Signal(CYCLE_BITS, name=f"{s}_cycle") for s in "mwr")
        w_pc, r_pc = Signal(config.pc_bits), Signal(config.pc_bits)
        m_pc = Signal(config.pc_bits, name="m_trace_pc")
        w_mem = Signal(data.StructLayout({
            "a_op": MemOpcode, "a_addr": config.addr_bits, "a_data": config.word_bits,
            "b_op": MemOpcode, "b_addr": config.addr_bits, "b_data": config.word_bits,
            "rw": 16 * config.rw_depth, "ri": 8 * config.ri_size}))
        r_mem = Signal.like(w_mem)
        m_out_t, w_out_t, r_out = Signal(), Signal(), Signal()
        r_valid = Signal()  # a record entered R at the last edge: emitted once, this cycle
        m.d.sync += r_valid.eq(en & w_valid & ~flush)
        with m.If(en):
            lb_a, lb_b = lb.m_op[0], lb.m_op[1]
            m.d.sync += [
                m_cycle.eq(cycle), m_pc.eq(x_pc), m_out_t.eq(x_out),
                w_cycle.eq(m_cycle), w_pc.eq(m_pc), w_out_t.eq(m_out_t),
                r_cycle.eq(w_cycle), r_pc.eq(w_pc), r_out.eq(w_out_t),
                w_mem.a_op.eq(lb_a), w_mem.a_addr.eq(lb.m_address[0]),
                w_mem.a_data.eq(Mux(lb_a == MemOpcode.WR, lb.m_data, 0)),
                w_mem.b_op.eq(lb_b), w_mem.b_addr.eq(lb.m_address[1]),
                w_mem.b_data.eq(Mux(lb_b == MemOpcode.WR, actu.ro, 0)),
                w_mem.rw.eq(wreg.rw), w_mem.ri.eq(ireg.ri),
                r_mem.eq(w_mem),
            ]
        # the signatures of the run (reset with the datapath)
        sig = self.digest
        beat = self.o_stream.valid & self.o_stream.ready
        # the record as one concatenation (the retire port is assigned from it whole): a
        # vector assembled field by field costs Icarus a re-evaluation of every bit of it
        # for each field that changes
        fields = Cat(r_pc, r_mem.a_op, r_mem.a_addr, r_mem.a_data, r_mem.b_op, r_mem.b_addr,
                     r_mem.b_data, r_mem.rw, r_mem.ri, vmac.acc, actu.ro, r_out)
        record = Signal(len(retire.as_value()) - SIGNED_FROM)
        assert len(fields) == len(record)  # (the retire layout's fields after cycle)
        m.d.comb += record.eq(fields)
        with m.If(clear):
            m.d.sync += [sig.records.eq(0), sig.outputs.eq(0), sig.hash.eq(0),
                         sig.output_hash.eq(0)]
        with m.Else():
            with m.If(retire.valid):
                m.d.sync += [sig.records.eq(sig.records + 1),
                             sig.hash.eq(signature_step(m, sig.hash, record))]
            with m.If(beat):
                m.d.sync += [sig.outputs.eq(sig.outputs + 1),
                             sig.output_hash.eq(signature_step(
                                 m, sig.output_hash, self.o_stream.payload.as_value()))]
        m.d.comb += retire.eq(Cat(r_valid, r_cycle, record))
