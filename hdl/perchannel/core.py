"""The per-channel datapath's depthwise core: the window unit feeding a row of processing
elements, one per lane (channel), each with its own activation and weight operands.

For every output pixel of a command (raster order) the core emits one sum per lane: the
products of the kernel window's taps and the lane's weights, summed over the ``groups`` ST
operations of the output (:class:`hdl.perchannel.window.WindowUnit`). The bias and the
requantization come after it (the store side). The weights are the command's blob rows as a
level input: row ``g`` holds each lane's ST ``B`` word of tap group ``g``
(``hls_ref.formats.depthwise_weight_blob`` with ``P = lanes``).

With ``pool`` set at the start the command is an average pool's sum: the caller gives a 1x1
kernel over the tile (``out_h x out_w`` = the tile), the core multiplies every pixel by one
(the weight word holds 1 in the slot that meets tap 0) and emits one sum per lane for the
whole tile.

Commands follow one another without a gap (:class:`~hdl.perchannel.window.WindowUnit`): the
core takes the next depthwise command while the present one's last operations and sums are
still in flight; each operation carries its command's precision and weight bank (``tag``).
A pool takes the core alone: it is accepted only when the core is idle, and nothing is
accepted while it runs.
"""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH, Precision

from ..params import check_int
from ..pe import ProcessingElement
from .window import WindowUnit, window_command_layout

__all__ = ["DepthwiseCore"]


class DepthwiseCore(wiring.Component):
    """Window unit + ``lanes`` processing elements.

    Parameters
    ----------
    lanes, max_kernel, addr_width, fifo_depth
        As for :class:`hdl.perchannel.window.WindowUnit`.
    precisions, stages, multiplier
        As for :class:`hdl.pe.ProcessingElement` (32-bit accumulators).

    Members
    -------
    start, cmd, tag, accept, busy, rd
        As for the window unit (``busy`` until the last sum has been taken; ``accept`` also
        waits for an idle core before and after a pool).
    pool : ``In(1)``
        With ``start``: the command is an average pool's sum (see above).
    weights : ``In(ArrayLayout(ArrayLayout(ArrayLayout(unsigned(16), lanes), taps), 2))``
        Two banks of weight rows: a command started with ``tag`` t multiplies by bank t
        (held until its last operation has been taken).
    o : ``Out(stream.Signature(ArrayLayout(signed(32), lanes)))``
        One sum per lane and output pixel.
    mac : ``Out(1)``
        The PEs take an operation this cycle (``MAC_CYCLES``).
    """

    def __init__(self, *, lanes=16, max_kernel=(3, 3), addr_width=11, fifo_depth=8,
                 precisions=tuple(Precision), stages=2, multiplier="lut"):
        self._window = WindowUnit(lanes=lanes, max_kernel=max_kernel, addr_width=addr_width,
                                  fifo_depth=fifo_depth)
        self._lanes = check_int("lanes", lanes, minimum=1)
        self._pe = dict(precisions=precisions, stages=stages, acc_width=32, multiplier=multiplier)
        super().__init__({
            "start": In(1),
            "pool": In(1),
            "cmd": In(window_command_layout(addr_width)),
            "tag": In(1),
            "accept": Out(1),
            "busy": Out(1),
            "rd": In(memory.ReadPort.Signature(addr_width=addr_width,
                                               shape=lanes * 16)).array(2),
            "weights": In(data.ArrayLayout(data.ArrayLayout(
                data.ArrayLayout(unsigned(OPERAND_WIDTH), lanes), self._window.taps), 2)),
            "o": Out(stream.Signature(data.ArrayLayout(signed(32), lanes))),
            "mac": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        window = m.submodules.window = self._window
        for ours, its in zip(self.rd, window.rd, strict=True):
            wiring.connect(m, wiring.flipped(ours), its)
        pool = Signal()
        total = Signal(len(self.cmd.pixels))     # a pool's operations
        count = Signal(len(self.cmd.pixels))
        # a pool's clear and last come from its operation count: no command overlaps it
        m.d.comb += self.accept.eq(window.accept & ((~pool & ~self.pool) | ~self.busy))
        with m.If(self.start & self.accept):
            m.d.sync += [pool.eq(self.pool), total.eq(self.cmd.pixels), count.eq(0)]
        with m.Elif(window.o.valid & window.o.ready):
            m.d.sync += count.eq(count + 1)
        m.d.comb += [window.start.eq(self.start & self.accept), window.cmd.eq(self.cmd),
                     window.tag.eq(self.tag)]
        # a pool's weight: one in the slot that meets the activation of tap 0 (the crossed
        # pairing puts it in the top slot)
        op = window.o.payload
        precision = op.precision
        one = Mux(precision == Precision.A4W4, 1 << 12,
                  Mux((precision == Precision.A8W8) | (precision == Precision.A8W4), 1 << 8, 1))
        clear = Mux(pool, count == 0, op.clear)
        last = Mux(pool, count == total - 1, op.last)

        # the operation's command's weight bank, then its tap group's row
        rows = data.View(self.weights.shape().elem_shape,
                         Mux(op.tag, self.weights[1].as_value(), self.weights[0].as_value()))
        elements = [ProcessingElement(**self._pe) for _ in range(self._lanes)]
        for lane, element in enumerate(elements):
            m.submodules[f"pe{lane}"] = element
            b = rows[0][lane]
            for g in range(1, self._window.taps):
                b = Mux(op.group == g, rows[g][lane], b)
            m.d.comb += [
                element.i.valid.eq(window.o.valid),
                element.i.payload.a.eq(op.a[lane]),
                element.i.payload.b.eq(Mux(pool, one, b)),
                element.i.payload.precision.eq(precision),
                element.i.payload.clear.eq(clear),
                element.i.payload.last.eq(last),
                element.o.ready.eq(self.o.ready),
                self.o.payload[lane].eq(element.o.payload),
            ]
        # the elements see the same handshakes: the first speaks for all
        m.d.comb += [
            window.o.ready.eq(elements[0].i.ready),
            self.o.valid.eq(elements[0].o.valid),
            self.mac.eq(window.o.valid & elements[0].i.ready),
        ]
        # sums in flight: an operation taken and its output's sum not yet taken
        outstanding = Signal(range(self._pe["stages"] + 4))
        issued = window.o.valid & window.o.ready & last
        taken = self.o.valid & self.o.ready
        m.d.sync += outstanding.eq(outstanding + issued - taken)
        m.d.comb += self.busy.eq(window.busy | (outstanding != 0))
        return m
