"""A stand-in datapath for testing the socket's dispatch between several datapaths.

:class:`StubDatapath` implements :class:`hdl.socket.signature.DatapathSignature` with the least
behaviour that makes every socket path observable: for each descriptor of its ``op`` it loads
one beat from ``in_addr`` (tag 1), lets go of the descriptor (accepted), then stores that beat
XOR its op and the descriptor's index (``op << 56 ^ index``) at ``out_addr`` and retires. A
descriptor of another op is refused with ``BAD_OP``, a failed load with ``AXI_READ``. It holds
one command at a time, for ``hold`` cycles before its store, so that a list switching
datapaths has to wait for the drain. Its outputs are plain expressions of its state, as the
signature requires. :func:`expected` is its golden model.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from hdl.accelerator import Accelerator
from hdl.socket.signature import DatapathSignature
from hls_ref.config import AcceleratorConfig
from hls_ref.descriptor import DESCRIPTOR_BYTES, Descriptor, ErrorCode, Op

__all__ = ["StubDatapath", "expected", "stub_accelerator"]


class StubDatapath(wiring.Component):
    def __init__(self, op, *, hold=20):
        self.op = op
        self._hold = hold
        super().__init__(DatapathSignature(fields_width=1))

    def elaborate(self, platform):
        m = Module()
        d = self.desc.payload.desc
        loaded = Signal(64)
        value = Signal(64)
        in_addr = Signal(32)
        out_addr = Signal(32)
        index = Signal(32)
        wait = Signal(range(self._hold + 1))
        with m.If(self.rd_beats.valid):
            m.d.sync += loaded.eq(self.rd_beats.payload.beat.data)
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(self.desc.valid & (d.op == self.op)):
                    m.d.sync += [index.eq(self.desc.payload.index), in_addr.eq(d.in_addr),
                                 out_addr.eq(d.out_addr)]
                    m.next = "LOAD"
            with m.State("LOAD"):
                with m.If(self.rd_req.ready):
                    m.next = "LOADED"
            with m.State("LOADED"):
                with m.If(self.rd_idle & self.rd_error):
                    m.next = "IDLE"
                with m.Elif(self.rd_idle):
                    m.d.sync += [value.eq(loaded ^ (self.op << 56) ^ index),
                                 wait.eq(self._hold)]
                    m.next = "HOLD"
            with m.State("HOLD"):
                m.d.sync += wait.eq(wait - 1)
                with m.If(self.stop):
                    m.next = "IDLE"
                with m.Elif(wait == 0):
                    m.next = "REQUEST"
            with m.State("REQUEST"):
                with m.If(self.wr_req.ready):
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(self.wr_data.ready):
                    m.next = "RESPONSE"
            with m.State("RESPONSE"):
                with m.If(self.wr_done.valid):
                    m.next = "IDLE"
        idle, loaded_state = fsm.ongoing("IDLE"), fsm.ongoing("LOADED")
        refused = idle & self.desc.valid & (d.op != self.op)
        load_failed = loaded_state & self.rd_idle & self.rd_error
        accepted = loaded_state & self.rd_idle & ~self.rd_error
        responding = fsm.ongoing("RESPONSE")
        m.d.comb += [
            self.desc.ready.eq(refused | load_failed | accepted),
            self.verdict.accepted.eq(accepted),
            self.verdict.code.eq(Mux(refused, ErrorCode.BAD_OP,
                                     Mux(load_failed, ErrorCode.AXI_READ, 0))),
            self.rd_req.valid.eq(fsm.ongoing("LOAD")),
            self.rd_req.payload.addr.eq(in_addr),
            self.rd_req.payload.seg_bytes.eq(8),
            self.rd_req.payload.inner_count.eq(1),
            self.rd_req.payload.outer_count.eq(1),
            self.rd_req.payload.tag.eq(1),
            self.rd_beats.ready.eq(1),
            self.rd_fields.eq(0),
            self.reads_busy.eq(0),
            self.busy.eq(~idle & ~fsm.ongoing("LOAD") & ~loaded_state),
            self.wr_req.valid.eq(fsm.ongoing("REQUEST")),
            self.wr_req.payload.addr.eq(out_addr),
            self.wr_req.payload.seg_bytes.eq(8),
            self.wr_req.payload.inner_count.eq(1),
            self.wr_req.payload.outer_count.eq(1),
            self.wr_data.valid.eq(fsm.ongoing("DATA")),
            self.wr_data.payload.eq(value),
            self.wr_done.ready.eq(responding),
            self.write_error.eq(responding & self.wr_done.valid & self.wr_done.payload.err),
            self.error_index.eq(index),
            self.retire.eq(responding & self.wr_done.valid & ~self.wr_done.payload.err),
            self.mac.eq(0),
        ]
        return m


def stub_accelerator(hold=20):
    """An accelerator with two stand-in datapaths (depthwise and FC ops, no conv2d)."""
    config = AcceleratorConfig(conv=False, depthwise={}, fc={})

    def factory(op):
        return lambda config, **_: StubDatapath(op, hold=hold)

    return Accelerator(config, datapaths={Op.DEPTHWISE: factory(Op.DEPTHWISE),
                                          Op.FC: factory(Op.FC)})


def expected(memory, desc_addr, count, ops=(Op.DEPTHWISE, Op.FC), faults=()):
    """The stand-ins' golden model: ``(memory after, (error code, index), retired)``."""
    memory = memory.copy()

    def faulty(addr):
        return any(lo < addr + 8 and addr < hi for lo, hi in faults) or addr + 8 > len(memory)

    if desc_addr % DESCRIPTOR_BYTES:
        return memory, (ErrorCode.BAD_DESC_ADDR, 0), 0
    for index in range(count):
        addr = desc_addr + index * DESCRIPTOR_BYTES
        if any(faulty(a) for a in range(addr, addr + 64, 8)):
            return memory, (ErrorCode.AXI_READ, index), index
        desc = Descriptor.from_bytes(memory[addr:addr + DESCRIPTOR_BYTES])
        if desc.op not in ops:
            return memory, (ErrorCode.BAD_OP, index), index
        if faulty(desc.in_addr):
            return memory, (ErrorCode.AXI_READ, index), index
        value = int.from_bytes(bytes(memory[desc.in_addr:desc.in_addr + 8]), "little")
        if faulty(desc.out_addr):
            return memory, (ErrorCode.AXI_WRITE, index), index
        value ^= desc.op << 56 ^ index
        memory[desc.out_addr:desc.out_addr + 8] = list(value.to_bytes(8, "little"))
    return memory, (ErrorCode.NONE, 0), count
