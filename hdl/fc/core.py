"""The FC compute core: the loops of one FC command over the PE array.

For every output block ``k`` (``pes`` neurons), every step ``s`` (``st_units`` ST words of
inputs) and every vector ``b`` of the batch, in that order, the core issues one op to
:class:`hdl.fc.pe.FCPEArray`: the step's words of vector ``b`` from the input PLM and the
weight row of ``(k, s)``, which it takes from :class:`hdl.fc.weights.WeightRows` after the
batch's last vector (a row is used ``batch`` times: one MAC per weight at batch 1, one beat
per cycle of weights at the bus limit; ``batch`` MACs per weight beyond). The first step of a
block starts each vector's sums from the block's folded biases or, with ``acc_flag``, from the
partial sums the previous command left in the accumulator PLM; after the last step the PEs'
sums of each vector are written there as one row (``k * 2**batch_bits + b``), for the store
or for the next command.

An op is issued in any cycle that has a weight row, so the core runs at the rate of whichever
is slower: the weight stream (one row per ``row_beats`` cycles at batch 1) or the PEs (one op
per cycle). Nothing downstream stalls it. A command in ``drain`` mode takes its rows without
computing (its operands failed to load: the stream must still be consumed). A command with
``acc_flag`` first waits until the previous command's last sums are written.

Latencies (cycles from the issue of an op): the input PLM's data ``in_latency``; the PE
array's operands 3 (the words selected and registered; the weight words delayed alike); its
init values read ``2`` cycles before it needs them (the bias and accumulator memories register
their outputs); its sums written ``3 + latency`` cycles after the issue.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from hls_ref.precision import OPERAND_WIDTH, Precision

from ..params import address_bits, check_int, check_multiplier, check_precisions
from .pe import FCPEArray

__all__ = ["FCCore", "fc_core_command_layout"]

_ACC = 32
_WORDS = 4                      # 16-bit words per input PLM row (one beat)
_OPERAND_STAGES = 3             # issue -> PE array operands


def _fit(value, width):
    """``value`` zero-extended or truncated to ``width`` bits."""
    return Cat(value, Const(0, width))[:width]


def fc_core_command_layout(max_batch):
    """One command as the core runs it."""
    return data.StructLayout({
        "precision": Precision,
        "blocks": unsigned(8),          # output blocks of ``pes`` neurons
        "steps": unsigned(16),          # steps of ``st_units`` ST words
        "batch": range(max_batch + 1),  # input vectors
        "vector_beats": unsigned(16),   # input PLM rows of one vector
        "in_bank": unsigned(1),         # input PLM and bias bank (the operand bank)
        "acc_bank": unsigned(1),
        "acc_flag": unsigned(1),
        "drain": unsigned(1),
    })


class FCCore(wiring.Component):
    """Runs FC commands on a :class:`~hdl.fc.pe.FCPEArray` (see the module docstring).

    Parameters
    ----------
    pes, st_units, max_batch, precisions, stages, multiplier
        The PE array's (``stages``: of its ST multipliers).
    in_rows : int
        Input PLM bank, rows of 64 bits.
    in_latency : int
        Cycles from an input PLM address to its data.

    Members
    -------
    start : ``In(1)``
        Pulse: run ``cmd`` (taken at the pulse).
    cmd : ``In(fc_core_command_layout(max_batch))``
    rows : ``In(stream.Signature(ArrayLayout(16, pes * st_units)))``
        Weight rows.
    in_rd : ``Out(memory.ReadPort.Signature)``
        The input PLM (bank bit on top of the row address; 64-bit rows).
    bias_rd : ``Out(memory.ReadPort.Signature)``
        Folded biases, one row of ``pes`` per block (bank bit on top); data 2 cycles after
        the address.
    acc_rd, acc_wr : ``Out(...)``
        The accumulator PLM (bank bit on top of the row address): partial sums read 2 cycles
        before use, result rows written.
    mac : ``Out(1)``
        An op is issued this cycle.
    busy : ``Out(1)``
        From ``start`` until the command's last sums are written.
    done : ``Out(1)``
        Pulse: the command's last sums are written.
    """

    def __init__(self, *, pes=4, st_units=2, max_batch=8, precisions=tuple(Precision),
                 stages=4, multiplier="lut", in_rows=1024, in_latency=2):
        self._pes = check_int("pes", pes, minimum=1)
        self._units = check_int("st_units", st_units, minimum=1)
        if st_units not in (1, 2, 4):
            raise ValueError(f"st_units must be 1, 2 or 4, not {st_units}")
        self._max_batch = check_int("max_batch", max_batch, minimum=1)
        self._precisions = check_precisions(precisions)
        self._stages = check_int("stages", stages, minimum=1, maximum=4)
        self._multiplier = check_multiplier(multiplier)
        self._in_rows = check_int("in_rows", in_rows, minimum=1)
        self._in_latency = check_int("in_latency", in_latency, minimum=1, maximum=2)
        self._batch_bits = max(1, ceil_log2(max_batch))
        self._blocks = -(-256 // pes)
        in_addr = address_bits(in_rows) + 1
        acc_addr = address_bits(self._blocks) + self._batch_bits + 1
        sums = data.ArrayLayout(signed(_ACC), pes)
        super().__init__({
            "start": In(1),
            "cmd": In(fc_core_command_layout(max_batch)),
            "rows": In(stream.Signature(data.ArrayLayout(unsigned(OPERAND_WIDTH),
                                                          pes * st_units))),
            "in_rd": Out(memory.ReadPort.Signature(addr_width=in_addr, shape=unsigned(64))),
            "bias_rd": Out(memory.ReadPort.Signature(
                addr_width=address_bits(self._blocks) + 1, shape=sums)),
            "acc_rd": Out(memory.ReadPort.Signature(addr_width=acc_addr, shape=sums)),
            "acc_wr": Out(memory.WritePort.Signature(addr_width=acc_addr, shape=sums)),
            "mac": Out(1),
            "busy": Out(1),
            "done": Out(1),
        })

    @property
    def batch_bits(self):
        """Bits of the vector index in an accumulator row address."""
        return self._batch_bits

    @property
    def acc_rows(self):
        """Accumulator PLM rows per bank."""
        return self._blocks << self._batch_bits

    def elaborate(self, platform):
        m = Module()
        units = self._units
        m.submodules.pes = pes = FCPEArray(
            pes=self._pes, st_units=units, max_batch=self._max_batch,
            precisions=self._precisions, stages=self._stages, multiplier=self._multiplier,
            user_width=8)

        cmd = Signal.like(self.cmd, reset_less=True)
        with m.If(self.start):
            m.d.sync += cmd.eq(self.cmd)

        # --- the loops ----------------------------------------------------------------------
        running = Signal()               # ops are issued (RUN)
        k = Signal(8)
        s = Signal(16)
        b = Signal(range(self._max_batch + 1))
        k_last = Signal()
        s_last = Signal()
        b_last = Signal()
        step_row = Signal(16)            # input PLM row of step s, within a vector
        word = Signal(2)                 # its first word
        addr = Signal(address_bits(self._in_rows))   # row of (b, s)
        row = self.rows
        drain = cmd.drain
        issue = Signal()
        take = Signal()                  # the weight row is used up
        m.d.comb += [issue.eq(running & row.valid & ~drain),
                     take.eq(running & row.valid & (drain | b_last)),
                     row.ready.eq(take), self.mac.eq(issue)]
        finishing = take & k_last & s_last
        with m.If(take):
            m.d.sync += [b.eq(0), b_last.eq(cmd.batch == 1)]
            next_word = word + units
            carry = (word + units) >= _WORDS
            with m.If(s_last):
                m.d.sync += [s.eq(0), s_last.eq(cmd.steps == 1), step_row.eq(0), word.eq(0),
                             addr.eq(0), k.eq(k + 1), k_last.eq(k + 2 == cmd.blocks)]
            with m.Else():
                m.d.sync += [s.eq(s + 1), s_last.eq(s + 2 == cmd.steps),
                             word.eq(next_word[:2]), step_row.eq(step_row + carry),
                             addr.eq(step_row + carry)]
        with m.Elif(issue):
            m.d.sync += [b.eq(b + 1), b_last.eq(b + 2 == cmd.batch),
                         addr.eq(addr + cmd.vector_beats)]

        # --- the pipeline -------------------------------------------------------------------
        write_delay = _OPERAND_STAGES + pes.latency
        init_delay = _OPERAND_STAGES + pes.init_delay
        flight = Signal(write_delay + 1)     # ops in the pipeline, by age
        m.d.sync += flight.eq(Cat(issue, flight[:-1]))
        in_flight = flight.any()

        with m.FSM(name="core") as fsm:
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [k.eq(0), s.eq(0), b.eq(0), step_row.eq(0), word.eq(0),
                                 addr.eq(0), k_last.eq(self.cmd.blocks == 1),
                                 s_last.eq(self.cmd.steps == 1),
                                 b_last.eq(self.cmd.batch == 1)]
                    m.next = "WAIT"
            with m.State("WAIT"):
                # partial sums are read only once the previous command's are written
                with m.If(~cmd.acc_flag | ~in_flight):
                    m.d.sync += running.eq(1)
                    m.next = "RUN"
            with m.State("RUN"):
                with m.If(finishing):
                    m.d.sync += running.eq(0)
                    m.next = "FLUSH"
            with m.State("FLUSH"):
                with m.If(~in_flight):
                    m.next = "IDLE"
        # outputs are plain expressions of the state (``hdl.socket.signature``: Icarus leaves
        # a signal assigned under a state X until one of its inputs changes)
        m.d.comb += [self.busy.eq(~fsm.ongoing("IDLE")),
                     self.done.eq(fsm.ongoing("FLUSH") & ~in_flight)]

        m.d.comb += [self.in_rd.addr.eq(Cat(addr, cmd.in_bank)), self.in_rd.en.eq(1)]

        # op fields on their way to the PE array (the words of the PLM row are chosen when it
        # arrives, by the word offset issued with the op)
        op = data.StructLayout({"valid": 1, "word": 2, "batch": range(self._max_batch),
                                "clear": 1, "last": 1, "block": 8})
        stage = Signal(op)
        m.d.comb += [stage.valid.eq(issue), stage.word.eq(word), stage.batch.eq(b),
                     stage.clear.eq(s == 0), stage.last.eq(s_last), stage.block.eq(k)]
        delayed = [stage]
        weights = [row.payload]
        for n in range(max(init_delay, _OPERAND_STAGES)):
            nxt = Signal(op, name=f"op{n + 1}", reset_less=True)
            m.d.sync += nxt.eq(delayed[-1])
            if n < _OPERAND_STAGES:
                w = Signal.like(row.payload, name=f"weights{n + 1}", reset_less=True)
                m.d.sync += w.eq(weights[-1])
                weights.append(w)
            delayed.append(nxt)

        # the step's words of the row read ``in_latency`` cycles after the issue
        arriving = delayed[self._in_latency]
        a_words = Signal(data.ArrayLayout(unsigned(OPERAND_WIDTH), units), reset_less=True)
        plm_words = [self.in_rd.data[16 * w:16 * w + 16] for w in range(_WORDS)]
        for unit in range(units):
            choices = {offset: plm_words[offset + unit]
                       for offset in range(0, _WORDS, units) if offset + unit < _WORDS}
            chosen = Const(0, 16)
            for offset, value in choices.items():
                chosen = Mux(arriving.word == offset, value, chosen)
            m.d.sync += a_words[unit].eq(chosen)
        for _ in range(_OPERAND_STAGES - self._in_latency - 1):
            later = Signal.like(a_words, reset_less=True)
            m.d.sync += later.eq(a_words)
            a_words = later

        at_pes = delayed[_OPERAND_STAGES]
        m.d.comb += [
            pes.i.valid.eq(at_pes.valid),
            pes.i.payload.a.eq(a_words),
            pes.i.payload.b.eq(weights[_OPERAND_STAGES]),
            pes.i.payload.precision.eq(cmd.precision),
            pes.i.payload.batch.eq(at_pes.batch),
            pes.i.payload.clear.eq(at_pes.clear),
            pes.i.payload.last.eq(at_pes.last),
            pes.i.payload.user.eq(at_pes.block),
        ]

        # starting sums: the block's biases, or the partial sums of (block, vector)
        reading = delayed[init_delay - 2]
        row_of = Cat(_fit(reading.batch, self._batch_bits), reading.block,
                     Const(0, 8))[:len(self.acc_rd.addr) - 1]
        m.d.comb += [
            self.bias_rd.addr.eq(Cat(reading.block[:len(self.bias_rd.addr) - 1],
                                     cmd.in_bank)),
            self.bias_rd.en.eq(1),
            self.acc_rd.addr.eq(Cat(row_of, cmd.acc_bank)),
            self.acc_rd.en.eq(1),
        ]
        for pe in range(self._pes):
            m.d.comb += pes.init[pe].eq(Mux(cmd.acc_flag, self.acc_rd.data[pe],
                                            self.bias_rd.data[pe]))

        # result rows
        out = pes.o.payload
        out_row = Cat(_fit(out.batch, self._batch_bits), out.user,
                      Const(0, 8))[:len(self.acc_wr.addr) - 1]
        m.d.comb += [self.acc_wr.addr.eq(Cat(out_row, cmd.acc_bank)),
                     self.acc_wr.data.eq(out.sums), self.acc_wr.en.eq(pes.o.valid)]
        return m
