"""The list sequencer: starts a descriptor list, fetches each descriptor, hands it to a
datapath, and ends the list with its status.

One descriptor is fetched at a time (a 64-byte DMA read with tag
:data:`~hdl.socket.signature.TAG_DESC`), handed to the datapath (``dispatch``) and held until
the datapath lets go of it with its verdict: accepted (its operands are loaded; the next one is
fetched) or refused with an error code. The list ends when every descriptor was accepted or one
was refused, a read of a descriptor failed, or a store failed -- and then only once the
pipeline has drained: every command before the failing one completes, stores included
(``docs/accelerator.md``). The status word, the failing index and the progress count are kept
here; the register bank shows them.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.descriptor import DESCRIPTOR_BYTES, ErrorCode

from .signature import ADDR_WIDTH, descriptor_layout, dispatch_layout, verdict_layout

__all__ = ["ListSequencer"]


class ListSequencer(wiring.Component):
    """Runs one descriptor list at a time (see the module docstring).

    Members
    -------
    start : ``In(1)``
        ``CTRL.start``; ignored while a list runs.
    desc_addr, desc_count : ``In(32)``
        ``DESC_ADDR`` (bytes, 64-byte aligned, else ``BAD_DESC_ADDR``) and ``DESC_COUNT``.
    started : ``Out(1)``
        The cycle a list starts (the counters clear).
    running : ``Out(1)``
        ``STATUS.busy``: from ``started`` until the list ends.
    fetch : ``Out(stream.Signature(ADDR_WIDTH))``
        Byte address of the next descriptor to read (64 bytes).
    reads_idle : ``In(1)``
        No read is in flight anywhere (so a fetched descriptor is complete).
    read_error : ``In(1)``
        A read got an error response since the last ``read_error_clear``.
    read_error_clear : ``Out(1)``
    dispatch : ``Out(stream.Signature(dispatch_layout()))``
        The fetched descriptor (``desc`` is the descriptor register, ``desc_bits``), held
        until the datapath takes it; ``verdict`` is read with ``dispatch.ready``.
    desc_bits : ``In(descriptor_layout())``
        The descriptor register's contents.
    verdict : ``In(verdict_layout())``
    write_error, error_index : ``In(1)``, ``In(32)``
        A store failed (a pulse), and its command's index.
    stop : ``Out(1)``
        A store failed in this list: datapaths drop what they hold.
    pipeline_busy : ``In(1)``
        A datapath holds commands.
    retire : ``In(1)``
        A command completed.
    abort : ``Out(1)``
        The list ends with an error (a pulse): partial sums are lost.
    done_set, error_set : ``Out(1)``
        Pulses that set ``STATUS.done`` / ``STATUS.error`` when the list ends.
    code, index, progress : ``Out(8)``, ``Out(32)``, ``Out(32)``
        ``STATUS.code``, ``ERR_INDEX`` and ``PROGRESS``.
    """

    def __init__(self):
        super().__init__({
            "start": In(1),
            "desc_addr": In(ADDR_WIDTH),
            "desc_count": In(32),
            "started": Out(1),
            "running": Out(1),
            "fetch": Out(stream.Signature(ADDR_WIDTH)),
            "reads_idle": In(1),
            "read_error": In(1),
            "read_error_clear": Out(1),
            "dispatch": Out(stream.Signature(dispatch_layout())),
            "desc_bits": In(descriptor_layout()),
            "verdict": In(verdict_layout()),
            "write_error": In(1),
            "error_index": In(32),
            "stop": Out(1),
            "pipeline_busy": In(1),
            "retire": In(1),
            "abort": Out(1),
            "done_set": Out(1),
            "error_set": Out(1),
            "code": Out(8),
            "index": Out(32),
            "progress": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        running = self.running
        start = Signal()
        m.d.comb += [start.eq(self.start & ~running), self.started.eq(start)]

        f_index = Signal(32)
        f_addr = Signal(ADDR_WIDTH)
        f_count = Signal(32)
        f_at_end = Signal()              # f_index == f_count (kept with them: a register)
        f_error = Signal()               # a descriptor was refused, or its fetch failed
        f_code = Signal(8)
        write_fail = Signal()            # a store got an error response: stop everything
        fetch_valid = Signal()
        finish = Signal()                # the list ends this cycle
        clear_error = Signal()
        m.d.comb += [
            self.fetch.valid.eq(fetch_valid),
            self.fetch.payload.eq(f_addr),
            self.dispatch.payload.desc.eq(self.desc_bits),
            self.dispatch.payload.index.eq(f_index),
            self.stop.eq(write_fail),
            self.read_error_clear.eq(clear_error),
        ]
        with m.If(self.fetch.valid & self.fetch.ready):
            m.d.sync += fetch_valid.eq(0)

        with m.If(start):
            m.d.sync += [self.progress.eq(0), self.code.eq(0), self.index.eq(0)]
        with m.If(self.retire):
            m.d.sync += self.progress.eq(self.progress + 1)
        with m.If(self.write_error):
            m.d.sync += [write_fail.eq(1), self.index.eq(self.error_index),
                         self.code.eq(ErrorCode.AXI_WRITE)]

        verdict = self.verdict
        with m.FSM(name="sequencer") as fsm:
            with m.State("IDLE"):
                with m.If(start):
                    # a list that is not 64-byte aligned is refused before any fetch
                    misaligned = self.desc_addr[:6] != 0
                    m.d.sync += [f_index.eq(0), f_addr.eq(self.desc_addr),
                                 f_count.eq(self.desc_count), f_error.eq(misaligned),
                                 f_code.eq(Mux(misaligned, ErrorCode.BAD_DESC_ADDR, 0)),
                                 f_at_end.eq(self.desc_count == 0)]
                    m.d.comb += clear_error.eq(1)
                    with m.If(misaligned):
                        m.next = "STOPPED"
                    with m.Else():
                        m.next = "NEXT"
            with m.State("NEXT"):
                with m.If(write_fail | f_at_end):
                    m.next = "STOPPED"
                with m.Else():
                    m.d.sync += fetch_valid.eq(1)
                    m.next = "FETCH"
            with m.State("FETCH"):
                with m.If(~fetch_valid & self.reads_idle):
                    with m.If(self.read_error):
                        m.d.sync += [f_error.eq(1), f_code.eq(ErrorCode.AXI_READ)]
                        m.d.comb += clear_error.eq(1)
                        m.next = "STOPPED"
                    with m.Else():
                        m.next = "DISPATCH"
            with m.State("DISPATCH"):
                # the datapath checks and loads the descriptor, then lets go of it
                m.d.comb += self.dispatch.valid.eq(1)
                with m.If(self.dispatch.ready):
                    with m.If(verdict.accepted):
                        m.d.sync += [
                            f_index.eq(f_index + 1),
                            f_addr.eq(f_addr + DESCRIPTOR_BYTES),
                            f_at_end.eq(f_index + 1 == f_count),
                        ]
                        m.next = "NEXT"
                    with m.Else():
                        # code 0: the datapath stopped after a failed store
                        with m.If(verdict.code != 0):
                            m.d.sync += [f_error.eq(1), f_code.eq(verdict.code)]
                            m.d.comb += clear_error.eq(1)
                        m.next = "STOPPED"
            with m.State("STOPPED"):
                with m.If(finish):
                    m.next = "IDLE"

        # Once stopped, nothing new enters the pipeline, so ``drained`` stays true once it
        # is: it is registered (the status word's code and index, set at ``finish``, would
        # otherwise follow the read counters and the datapaths' stages in one cycle).
        drained = Signal()
        m.d.sync += drained.eq(fsm.ongoing("STOPPED") & ~self.pipeline_busy & self.reads_idle)
        m.d.comb += [
            finish.eq(running & drained & fsm.ongoing("STOPPED")),
            self.error_set.eq(finish & (write_fail | f_error)),
            self.done_set.eq(finish & ~write_fail & ~f_error),
            self.abort.eq(finish & (write_fail | f_error)),
        ]
        with m.If(start):
            m.d.sync += running.eq(1)
        with m.Elif(finish):
            m.d.sync += [running.eq(0), write_fail.eq(0)]
            with m.If(~write_fail & f_error):
                m.d.sync += [self.code.eq(f_code), self.index.eq(f_index)]
        return m
