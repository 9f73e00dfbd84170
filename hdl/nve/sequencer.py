"""The instruction buffer and the program sequencer with the zero-overhead hardware loop.

The sequencer walks the program's three parts (``docs/nve.md``, "Program parts and the
loop"): the init part ``[0, LOOP_START)`` once, the body ``[LOOP_START, LOOP_END]``
``ITERATIONS`` times and the final part ``(LOOP_END, PROGRAM_SIZE)`` once, one pc per enabled
cycle, with no bubble at the loop's end. Two stages:

* **F** (fetch): the pc register addresses the instruction buffer (and, outside this
  component, the AGU state memory);
* **D** (decode): the instruction word, with its pc and whether this is the pc's first
  execution in the run (the AGU takes the update of the instruction word then, the state
  memory's later).

The instruction buffer is read at the edge that loads the pc register, at the address the
pc takes (so its word is there in F), and the word is registered into D: the block RAM's
slow output (about 5.6 ns on the ECP5 without its output register) ends at a flip-flop
instead of running into the decoding in D.

Every register of both stages loads only when ``en`` is high, so a stall of the machine
freezes the front end with it; ``stop`` empties both stages (an error or an abort).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from .isa import as_config

__all__ = ["Sequencer"]


class Sequencer(wiring.Component):
    """Instruction buffer (``instruction_words`` x 64-bit words, one write port for the
    loader) and the pc sequencer.

    Parameters
    ----------
    config : NveConfig
        Sizes (``instruction_words``, ``max_iterations``).

    Members
    -------
    start : ``In(1)``
        Start fetching at the program's first pc (settings stable from the cycle before on).
    stop : ``In(1)``
        Empty the F and D stages.
    en : ``In(1)``
        Advance: every register loads only in enabled cycles.
    program_size, loop_start, loop_end, iterations : ``In(...)``
        The setting registers.
    w_addr, w_data, w_en : ``In(...)``
        Instruction-buffer write port (the loader).
    f_valid, f_pc : ``Out(...)``
        The F stage: a pc is being fetched, and which.
    f_next, f_read : ``Out(...)``
        The instruction buffer's read: the address (the pc this edge loads into F) and the
        enable (for the AGU state memory, read with it).
    d_valid, d_pc, d_first, d_word : ``Out(...)``
        The D stage: the fetched instruction word, its pc and whether it is the pc's first
        execution in the run.
    """

    def __init__(self, *, config=None):
        self._config = config = as_config(config)
        size_bits = config.instruction_words.bit_length()
        super().__init__({
            "start": In(1), "stop": In(1), "en": In(1),
            "program_size": In(size_bits), "loop_start": In(config.pc_bits),
            "loop_end": In(config.pc_bits),
            "iterations": In(config.max_iterations.bit_length()),
            "w_addr": In(config.pc_bits), "w_data": In(config.word_bits), "w_en": In(1),
            "f_valid": Out(1), "f_pc": Out(config.pc_bits),
            "f_next": Out(config.pc_bits), "f_read": Out(1),
            "d_valid": Out(1), "d_pc": Out(config.pc_bits), "d_first": Out(1),
            "d_word": Out(config.word_bits),
        })

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        config = self._config
        size_bits = config.instruction_words.bit_length()

        m.submodules.buffer = buffer = memory.Memory(
            shape=config.word_bits, depth=config.instruction_words, init=[])
        write = buffer.write_port()
        read = buffer.read_port()
        m.d.comb += [write.addr.eq(self.w_addr), write.data.eq(self.w_data),
                     write.en.eq(self.w_en)]

        # What the settings decide, registered in every cycle (the settings are stable from
        # the cycle before `start` on): the pc paths compare with registers
        after_body = Signal(size_bits + 1)  # LOOP_END + 1
        before_body = Signal(size_bits + 1)  # LOOP_START - 1 (all ones for 0: no pc)
        no_body = Signal()  # ITERATIONS == 0
        after_fits = Signal()  # LOOP_END + 1 < PROGRAM_SIZE
        first = Signal(size_bits + 1)  # the first pc
        first_fits = Signal()
        # with LOOP_START 0 and no iterations the program starts past the body
        past_body = (self.loop_start == 0) & (self.iterations == 0)
        m.d.sync += [
            after_body.eq(self.loop_end + 1), before_body.eq(self.loop_start - 1),
            no_body.eq(self.iterations == 0),
            after_fits.eq(self.loop_end + 1 < self.program_size),
            first.eq(Mux(past_body, self.loop_end + 1, 0)),
            first_fits.eq(Mux(past_body, self.loop_end + 1, 0) < self.program_size),
        ]

        repeat = Signal()  # the pc in F is a second or later execution of a loop-body pc
        left = Signal.like(self.iterations)  # body executions left, the current one included
        pc = self.f_pc
        loop_back = Signal()
        skip = Signal()
        following = Signal(size_bits + 1)
        m.d.comb += [
            # pc reaches LOOP_END only inside the loop: with 0 iterations it is skipped
            loop_back.eq((pc == self.loop_end) & (left > 1)),
            skip.eq((pc == before_body) & no_body),
            following.eq(Mux(loop_back, self.loop_start, Mux(skip, after_body, pc + 1))),
        ]
        # The buffer reads where the pc goes at this edge, so that its output is the word at
        # `pc` (in F). When the pc stays (a stall, or nothing left to fetch) the port is
        # either disabled or its word is never used: an invalid F never enters D as valid.
        m.d.comb += [self.f_next.eq(Mux(self.start, first, following)),
                     self.f_read.eq(self.start | self.en),
                     read.addr.eq(self.f_next), read.en.eq(self.f_read)]
        with m.If(self.en):
            m.d.sync += self.d_word.eq(read.data)
        with m.If(self.stop):
            m.d.sync += [self.f_valid.eq(0), self.d_valid.eq(0)]
        with m.Elif(self.start):
            m.d.sync += [
                self.f_pc.eq(first),
                self.f_valid.eq(first_fits),
                repeat.eq(0),
                left.eq(self.iterations),
                self.d_valid.eq(0),
            ]
        with m.Elif(self.en):
            with m.If(self.f_valid):
                m.d.sync += [
                    self.f_pc.eq(following),
                    # (`following < PROGRAM_SIZE` case by case: LOOP_START is below it,
                    # and the settings' comparison does not wait for the pc's)
                    self.f_valid.eq(loop_back | Mux(skip, after_fits,
                                                    pc + 1 < self.program_size)),
                    repeat.eq(loop_back | (repeat & (pc != self.loop_end))),
                    left.eq(Mux(loop_back, left - 1, left)),
                ]
            m.d.sync += [self.d_valid.eq(self.f_valid), self.d_pc.eq(self.f_pc),
                         self.d_first.eq(~repeat)]
        return m
