"""The fully-connected datapath of the accelerator socket.

It implements :class:`hdl.socket.signature.DatapathSignature` for FC descriptors
(``docs/accelerator.md``, FC commands) with these blocks:

* :class:`hdl.fc.front.FCFrontEnd` -- checks, load requests, hand-off, verdict;
* :class:`hdl.fc.loaders.FCInputLoader` and :class:`~hdl.fc.loaders.FCQuantLoader` -- the
  input vectors into the input PLM, the quantization block into its registers and the bias
  memory (operand banks alternate per command);
* a FIFO and :class:`hdl.fc.weights.WeightRows` -- the weight stream into rows;
* :class:`hdl.fc.core.FCCore` with its :class:`~hdl.fc.pe.FCPEArray` -- the loops, into the
  accumulator PLM (two banks, alternating per output tile; a command with ``acc_flag`` adds
  to the bank of the previous one);
* :class:`hdl.fc.store.FCStore` -- requantization and packing, behind the core row by row
  (it starts with the command's compute and reads the accumulator PLM through a port of its
  own), into a FIFO of output beats that go to the socket's DMA writer once the command's
  verdict accepts it (a refused command's beats are dropped); commands retire in list order.

Weights are not held on chip: the core consumes them as they arrive, so a command computes
while its weight stream is read; the store of command ``i`` overlaps its own compute and the
loads and compute of command ``i+1``.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.fifo import SyncFIFOBuffered

from hls_ref.config import AcceleratorConfig
from hls_ref.descriptor import Op

from ..params import address_bits
from ..socket.signature import DatapathSignature
from .core import FCCore
from .front import TAG_BITS, TAG_INPUT, TAG_QUANT, TAG_WEIGHTS, FCFrontEnd, fc_command_layout
from .loaders import FCInputLoader, FCQuantLoader, fc_quant_layout
from .store import FCStore, fc_store_config_layout, fc_store_quant_layout
from .weights import WeightRows

__all__ = ["FCDatapath", "check_fc_config"]

#: Weight beats buffered between the read slice and the row assembler.
WEIGHT_FIFO_DEPTH = 8
#: Output beats a command's store may pack before its verdict lets them go to memory.
OUTPUT_FIFO_DEPTH = 64


def _store_record_layout(max_batch):
    """A computed command waiting for the store stage."""
    from ..dma import dma_request_layout
    from ..socket.signature import ADDR_WIDTH

    return data.StructLayout({
        "index": unsigned(32),
        "q_flag": unsigned(1),
        "store": fc_store_config_layout(max_batch),
        "store_req": dma_request_layout(ADDR_WIDTH),
        "q": fc_store_quant_layout(),
    })


def check_fc_config(config):
    """Refuse FC builds the RTL cannot implement, naming the limit (``ValueError``)."""
    fc = config.fc
    problems = []
    for name in ("pes", "st_units"):
        value = getattr(fc, name)
        if value & (value - 1):
            problems.append(f"{name} ({value}) must be a power of two")
    if fc.pes < 2:
        problems.append(f"pes ({fc.pes}) must be at least 2 (a beat's two biases share a row)")
    if fc.max_batch > 16:
        problems.append(f"max_batch ({fc.max_batch}) above 16")
    if problems:
        raise ValueError("unsupported FC build: " + "; ".join(problems))


class FCDatapath(wiring.Component):
    """The FC datapath of one build (see the module docstring).

    Parameters
    ----------
    config : AcceleratorConfig
        The build; its ``fc`` section sizes the datapath.
    pe_stages : int
        Pipeline stages of the ST multipliers.

    Members
    -------
    The members of :class:`hdl.socket.signature.DatapathSignature`.
    """

    #: The descriptors this datapath runs.
    op = Op.FC

    def __init__(self, config, *, pe_stages=4):
        if not isinstance(config, AcceleratorConfig) or config.fc is None:
            raise TypeError(f"config must be an AcceleratorConfig with an fc section, not "
                            f"{config!r}")
        check_fc_config(config)
        self._config = config
        self._pe_stages = pe_stages
        super().__init__(DatapathSignature(fields_width=1))

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        config = self._config
        fc = config.fc
        pes, units = fc.pes, fc.st_units
        in_rows = fc.plm_in_words // 4
        blocks = -(-256 // pes)

        m.submodules.front = front = FCFrontEnd(fc)
        m.submodules.x_loader = x_loader = FCInputLoader(rows=in_rows)
        m.submodules.q_loader = q_loader = FCQuantLoader(pes=pes, blocks=blocks)
        m.submodules.rows = rows = WeightRows(units=pes * units)
        m.submodules.core = core = FCCore(
            pes=pes, st_units=units, max_batch=fc.max_batch, precisions=fc.precisions,
            stages=self._pe_stages, multiplier=config.pe_multiplier, in_rows=in_rows,
            in_latency=2)
        acc_bits = address_bits(core.acc_rows)
        m.submodules.store = store = FCStore(pes=pes, max_batch=fc.max_batch,
                                             acc_addr_width=acc_bits + 1)
        m.d.comb += [self.mac.eq(core.mac), self.rd_fields.eq(0), self.reads_busy.eq(0)]

        # --- the socket: descriptors, requests, read beats ----------------------------------
        wiring.connect(m, wiring.flipped(self.desc), front.desc)
        wiring.connect(m, front.rd_req, wiring.flipped(self.rd_req))
        m.d.comb += [self.verdict.eq(front.verdict), front.rd_idle.eq(self.rd_idle),
                     front.rd_error.eq(self.rd_error), front.stop.eq(self.stop),
                     front.abort.eq(self.abort)]
        beats = self.rd_beats
        beat = beats.payload.beat
        m.submodules.w_fifo = w_fifo = SyncFIFOBuffered(width=64, depth=WEIGHT_FIFO_DEPTH)
        for loader, tag in ((x_loader, TAG_INPUT), (q_loader, TAG_QUANT)):
            m.d.comb += [loader.beats.valid.eq(beats.valid & (beat.tag == tag)),
                         loader.beats.payload.data.eq(beat.data),
                         loader.beats.payload.last.eq(beat.last),
                         loader.beats.payload.err.eq(beat.err)]
        m.d.comb += [w_fifo.w_data.eq(beat.data),
                     w_fifo.w_en.eq(beats.valid & (beat.tag == TAG_WEIGHTS)),
                     beats.ready.eq(Mux(beat.tag == TAG_WEIGHTS, w_fifo.w_rdy, 1)),
                     rows.beats.valid.eq(w_fifo.r_rdy), rows.beats.payload.eq(w_fifo.r_data),
                     w_fifo.r_en.eq(rows.beats.ready)]
        wiring.connect(m, front.rows_cmd, rows.cmd)

        # --- loaders and operand banks ------------------------------------------------------
        m.d.comb += [
            x_loader.start.eq(front.load_start), x_loader.bank.eq(front.bank),
            q_loader.start.eq(front.load_start), q_loader.bank.eq(front.bank),
            q_loader.out_c.eq(front.out_c),
            front.x_done.eq(x_loader.done), front.q_done.eq(q_loader.done),
            front.x_err.eq(x_loader.err), front.q_err.eq(q_loader.err),
            front.q_bad.eq(q_loader.q[front.bank].bad),
        ]
        m.submodules.in_plm = in_plm = memory.Memory(shape=unsigned(64), depth=2 * in_rows,
                                                     init=[])
        in_wr, in_rd = in_plm.write_port(), in_plm.read_port()
        in_data = Signal(64, reset_less=True)   # registered: data 2 cycles after the address
        m.d.sync += in_data.eq(in_rd.data)
        m.d.comb += [in_wr.addr.eq(x_loader.wr.addr), in_wr.data.eq(x_loader.wr.data),
                     in_wr.en.eq(x_loader.wr.en), in_rd.addr.eq(core.in_rd.addr),
                     in_rd.en.eq(1), core.in_rd.data.eq(in_data)]
        sums = data.ArrayLayout(signed(32), pes)
        m.submodules.bias = bias = memory.Memory(shape=sums, depth=2 * blocks, init=[])
        bias_wr, bias_rd = bias.write_port(granularity=1), bias.read_port()
        bias_data = Signal(sums, reset_less=True)
        m.d.sync += bias_data.eq(bias_rd.data)
        m.d.comb += [bias_wr.addr.eq(q_loader.bias_wr.addr), bias_wr.data.eq(q_loader.bias_wr.data),
                     bias_wr.en.eq(q_loader.bias_wr.en), bias_rd.addr.eq(core.bias_rd.addr),
                     bias_rd.en.eq(1), core.bias_rd.data.eq(bias_data)]

        # --- compute: one pending command, then the core -----------------------------------
        layout = fc_command_layout(fc.max_batch)
        pend = Signal(layout, reset_less=True)
        pend_valid = Signal()
        m.d.comb += front.cmd.ready.eq(~pend_valid)
        with m.If(front.cmd.valid & ~pend_valid):
            m.d.sync += [pend.eq(front.cmd.payload), pend_valid.eq(1)]
        bank_busy = Signal(2)            # operand banks loaded or in use
        acc_busy = Signal(2)             # accumulator banks waiting for or being stored
        acc_cur = Signal()
        comp = Signal(layout, reset_less=True)
        comp_active = Signal()           # from core start until handed to the store stage
        comp_finished = Signal()
        m.d.comb += front.bank_busy.eq(bank_busy)
        drain = pend.core.drain | self.stop     # after a failed store nothing is computed
        target = Mux(pend.core.acc_flag, acc_cur, ~acc_cur)
        m.submodules.stores = stores = SyncFIFOBuffered(
            width=_store_record_layout(fc.max_batch).size, depth=4)
        go = (pend_valid & ~comp_active & stores.w_rdy
              & (drain | ~acc_busy.bit_select(target, 1)))
        m.d.comb += [core.start.eq(go), core.cmd.eq(pend.core),
                     core.cmd.acc_bank.eq(target), core.cmd.drain.eq(drain)]
        with m.If(go):
            m.d.sync += [comp.eq(pend), comp.core.acc_bank.eq(target),
                         comp.core.drain.eq(drain), pend_valid.eq(0), comp_active.eq(1)]
            with m.If(~drain):
                m.d.sync += acc_cur.eq(target)
        with m.If(core.done):
            m.d.sync += comp_finished.eq(1)
        m.d.comb += core.rows.valid.eq(rows.rows.valid), core.rows.payload.eq(rows.rows.payload)
        m.d.comb += rows.rows.ready.eq(core.rows.ready)

        # the computed command's requantization, from its operand bank's registers (taken
        # into a register first: the bank select and the clamp's compares are two paths)
        q = Signal(fc_quant_layout(), reset_less=True)
        m.d.sync += q.eq(q_loader.q[comp.core.in_bank])
        width_min = Mux(comp.store.out_bits == 0, -8, Mux(comp.store.out_bits == 1, -128,
                                                             -32768))
        width_max = Mux(comp.store.out_bits == 0, 7, Mux(comp.store.out_bits == 1, 127, 32767))
        low = Mux(comp.relu & (q.zero_point > q.act_min), q.zero_point, q.act_min)
        tile_q = Signal(fc_store_quant_layout(), reset_less=True)
        m.d.sync += [tile_q.scale.eq(q.scale), tile_q.zero_point.eq(q.zero_point),
                     tile_q.low.eq(Mux(low > width_min, low, width_min)),
                     tile_q.high.eq(Mux(q.act_max < width_max, q.act_max, width_max))]

        # the command goes to the store stage three cycles after it starts (when ``tile_q``
        # holds its block): the store runs behind the core, row by row, and its beats wait
        # in ``out_fifo`` for the command's verdict
        record_layout = _store_record_layout(fc.max_batch)
        record = data.View(record_layout, stores.w_data)
        started = Signal(3)
        m.d.sync += started.eq(Cat(go & ~drain, started[:-1]))
        handoff = comp_finished
        m.d.comb += [record.index.eq(comp.index), record.q_flag.eq(comp.q_flag),
                     record.store.eq(comp.store), record.store.acc_bank.eq(comp.core.acc_bank),
                     record.store_req.eq(comp.store_req), record.q.eq(tile_q),
                     stores.w_en.eq(started[-1])]
        with m.If(handoff):
            m.d.sync += [comp_finished.eq(0), comp_active.eq(0)]
        # per accumulator bank, the rows below ``written`` hold the current command's sums
        written = [Signal(acc_bits + 1, name=f"written{k}") for k in range(2)]
        for k in range(2):
            with m.If(go & ~drain & (target == k)):
                m.d.sync += written[k].eq(0)
            with m.Elif(core.acc_wr.en & (core.acc_wr.addr[acc_bits] == k)):
                m.d.sync += written[k].eq(core.acc_wr.addr[:acc_bits] + 1)

        # --- the store stage ----------------------------------------------------------------
        head = data.View(record_layout, stores.r_data)
        st = Signal(record_layout, reset_less=True)
        st_go = Signal()
        st_req_valid = Signal()
        m.submodules.out_fifo = out_fifo = SyncFIFOBuffered(width=64, depth=OUTPUT_FIFO_DEPTH)
        sending = Signal()
        m.d.comb += [store.start.eq(st_go), store.cfg.eq(st.store), store.q.eq(st.q),
                     store.rows_ready.eq(Mux(st.store.acc_bank, written[1], written[0])),
                     self.wr_req.valid.eq(st_req_valid), self.wr_req.payload.eq(st.store_req),
                     out_fifo.w_data.eq(store.beats.payload),
                     out_fifo.w_en.eq(store.beats.valid), store.beats.ready.eq(out_fifo.w_rdy),
                     self.wr_data.valid.eq(out_fifo.r_rdy & sending),
                     self.wr_data.payload.eq(out_fifo.r_data)]
        m.d.sync += st_go.eq(0)
        with m.If(st_req_valid & self.wr_req.ready):
            m.d.sync += st_req_valid.eq(0)
        waiting = front.held & (head.index[:TAG_BITS] == front.held_tag)
        refused = front.failed & (head.index[:TAG_BITS] == front.failed_tag)
        dropped = self.stop | refused
        # the stored command's verdict: still to come, or a refusal
        st_waiting = front.held & (st.index[:TAG_BITS] == front.held_tag)
        st_dropped = self.stop | (front.failed & (st.index[:TAG_BITS] == front.failed_tag))
        packed = ~st_go & ~store.busy & (out_fifo.level == 0)  # every beat packed and gone
        retire = Signal()
        store_release = Signal()
        drop_release = Signal()
        with m.FSM(name="fc_store_stage") as store_fsm:
            with m.State("IDLE"):
                m.d.sync += st.eq(head)
                with m.If(stores.r_rdy & ~dropped & head.q_flag):
                    m.d.sync += st_go.eq(1)
                    m.next = "STORE"
            with m.State("STORE"):
                # packing until the verdict: accepted, the request and then the beats leave
                with m.If(st_dropped):
                    m.next = "DROP"
                with m.Elif(~st_waiting):
                    m.d.sync += st_req_valid.eq(1)
                    m.next = "SEND"
            with m.State("SEND"):
                with m.If(store_release):
                    m.next = "RESPONSE"
            with m.State("DROP"):
                # refused: the store finishes (its rows are all written) and its beats go
                with m.If(packed):
                    m.next = "IDLE"
            with m.State("RESPONSE"):
                with m.If(self.wr_done.valid):
                    m.next = "IDLE"
        # the stage's controls are plain expressions of its state (``hdl.socket.signature``:
        # Icarus leaves a signal assigned under a state X until one of its inputs changes)
        take = store_fsm.ongoing("IDLE") & stores.r_rdy & (head.q_flag | ~waiting)
        answered = store_fsm.ongoing("RESPONSE") & self.wr_done.valid
        dropping = store_fsm.ongoing("DROP")
        m.d.comb += [
            sending.eq(store_fsm.ongoing("SEND")),
            out_fifo.r_en.eq(Mux(dropping, 1, sending & self.wr_data.ready)),
            stores.r_en.eq(take),
            drop_release.eq((take & dropped & head.q_flag) | (dropping & packed)),
            store_release.eq(sending & packed & ~st_req_valid),
            self.wr_done.ready.eq(store_fsm.ongoing("RESPONSE")),
            self.write_error.eq(answered & self.wr_done.payload.err),
            retire.eq((take & ~dropped & ~head.q_flag)
                      | (answered & ~self.wr_done.payload.err)),
        ]
        m.d.comb += self.error_index.eq(st.index)

        # bank flags, each updated by one assignment from its set and clear masks
        bank_set = Mux(front.load_start, Mux(front.bank, 0b10, 0b01), 0)
        bank_clear = Mux(handoff, Mux(comp.core.in_bank, 0b10, 0b01), 0)
        acc_set = Mux(go & pend.q_flag & ~drain, Mux(target, 0b10, 0b01), 0)
        dropped_bank = Mux(dropping, st.store.acc_bank, head.store.acc_bank)
        acc_clear = (Mux(store_release, Mux(st.store.acc_bank, 0b10, 0b01), 0)
                     | Mux(drop_release, Mux(dropped_bank, 0b10, 0b01), 0))
        m.d.sync += [bank_busy.eq((bank_busy & ~bank_clear) | bank_set),
                     acc_busy.eq((acc_busy & ~acc_clear) | acc_set)]

        m.d.comb += [
            self.retire.eq(retire),
            self.busy.eq(pend_valid | comp_active | (stores.level != 0) | (started != 0)
                         | ~store_fsm.ongoing("IDLE")),
        ]
        acc_mem = []
        for k in range(2):
            mem = memory.Memory(shape=sums, depth=core.acc_rows, init=[])
            m.submodules[f"acc_plm{k}"] = mem
            # a read port each for the core (partial sums) and the store: they read one bank
            # at once when the store follows a command that adds to partial sums
            rd, st_rd, wr = mem.read_port(), mem.read_port(), mem.write_port()
            m.d.comb += [
                rd.addr.eq(core.acc_rd.addr[:acc_bits]), rd.en.eq(1),
                st_rd.addr.eq(store.acc_rd.addr[:acc_bits]), st_rd.en.eq(1),
                wr.addr.eq(core.acc_wr.addr[:acc_bits]), wr.data.eq(core.acc_wr.data),
                wr.en.eq(core.acc_wr.en & (core.acc_wr.addr[acc_bits] == k)),
            ]
            read = Signal(sums, name=f"acc_read{k}", reset_less=True)
            st_read = Signal(sums, name=f"acc_store_read{k}", reset_less=True)
            m.d.sync += [read.eq(rd.data), st_read.eq(st_rd.data)]
            acc_mem.append((read, st_read))
        m.d.comb += [
            core.acc_rd.data.eq(Mux(comp.core.acc_bank, acc_mem[1][0], acc_mem[0][0])),
            store.acc_rd.data.eq(Mux(st.store.acc_bank, acc_mem[1][1], acc_mem[0][1]))]
        return m
