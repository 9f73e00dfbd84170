"""The per-channel datapath's add unit: TFLite's quantized ADD up to the sum of the scaled
inputs, pixel by pixel, into the output buffer (the store then scales the sum to the output,
adds the zero point and clamps, as for every command: ``docs/perchannel.md``).

For each element: ``wrap32(wrap32(x - zero_point) << left_shift)``, scaled by its input's
multiplier and shift (:class:`hdl.perchannel.scale.Scaler`), the two scaled inputs summed
modulo ``2**32`` -- ``hls_ref.invocation.AddAccelerator`` before its output scaling.

The input PLM holds pixel ``k`` of input A at row ``base_a + (k >> 1)`` of memory ``k & 1``
and pixel ``k`` of input B at row ``base_b + (k >> 1)`` of the other memory, so both are read
in one cycle. ``scalers`` scalers (even) take ``scalers / 2`` lanes of both inputs a cycle;
a pixel's sums are written as one output-buffer row when its last lanes are scaled.
"""

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..params import check_int
from .scale import Scaler

__all__ = ["AddUnit", "add_command_layout", "add_params_layout"]


def add_command_layout(addr_width, out_width):
    """One add command: its pixels, where the inputs and the sums go."""
    return data.StructLayout({
        "pixels": unsigned(16), "base_a": unsigned(addr_width), "base_b": unsigned(addr_width),
        "out_base": unsigned(out_width),
    })


def add_params_layout():
    """The two inputs' zero points (int32: the block's biases), multipliers and shifts, and
    the left shift (the low five bits of the output entry's bias)."""
    return data.StructLayout({
        "zero_point": data.ArrayLayout(signed(32), 2),
        "multiplier": data.ArrayLayout(unsigned(31), 2),
        "shift": data.ArrayLayout(signed(8), 2),
        "left_shift": unsigned(5),
    })


class AddUnit(wiring.Component):
    """Members
    -------
    start : ``In(1)``
        Start ``cmd`` with ``params`` (held for the command).
    cmd : ``In(add_command_layout(addr_width, out_width))``
    params : ``In(add_params_layout())``
    busy : ``Out(1)``
    rd : ``In(memory.ReadPort.Signature(addr_width, lanes * 16)).array(2)``
        The input PLM's two memories.
    wr_addr, wr_data, wr_en : ``Out``
        The output buffer's write port (``lanes`` 32-bit sums per row).
    """

    def __init__(self, *, lanes=16, scalers=4, addr_width=11, out_width=9):
        self._lanes = check_int("lanes", lanes, minimum=1)
        self._scalers = check_int("scalers", scalers, minimum=2)
        if scalers % 2 or lanes % (scalers // 2):
            raise ValueError(f"scalers must be even and half of them divide lanes "
                             f"({lanes}), not {scalers}")
        self._addr_width = addr_width
        self._out_width = out_width
        super().__init__({
            "start": In(1),
            "cmd": In(add_command_layout(addr_width, out_width)),
            "params": In(add_params_layout()),
            "busy": Out(1),
            "rd": In(memory.ReadPort.Signature(addr_width=addr_width,
                                               shape=lanes * 16)).array(2),
            "wr_addr": Out(out_width),
            "wr_data": Out(data.ArrayLayout(signed(32), lanes)),
            "wr_en": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lanes, per = self._lanes, self._scalers // 2
        chunks = lanes // per
        pixel = data.ArrayLayout(signed(16), lanes)
        cmd = Signal(self.cmd.shape())
        params = Signal(self.params.shape())
        start = self.start & ~self.busy
        with m.If(start):
            m.d.sync += [cmd.eq(self.cmd), params.eq(self.params)]

        # --- read pixel k of A and of B (one cycle), then scale it chunk by chunk --------
        user = data.StructLayout({"chunk": unsigned(max(1, (chunks - 1).bit_length())),
                                  "pixel": unsigned(16), "last": unsigned(1)})
        scalers = [Scaler(user_width=user.size) for _ in range(self._scalers)]
        for n, scaler in enumerate(scalers):
            m.submodules[f"scaler{n}"] = scaler
        k = Signal(16)
        chunk = Signal(range(chunks))
        a_row = Signal(pixel)
        b_row = Signal(pixel)
        a_parity = Signal()           # the memory the pixel being read holds A in
        # the read ports and the scalers' valid are plain expressions of the state (Icarus
        # leaves a signal assigned under a state X until one of its inputs changes)
        for n, port in enumerate(self.rd):
            a_here = k[0] == n
            m.d.comb += [port.addr.eq((k >> 1) + Mux(a_here, cmd.base_a, cmd.base_b)),
                         port.en.eq(1)]
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(start):
                    m.d.sync += k.eq(0)
                    m.next = "READ"
            with m.State("READ"):
                with m.If(k == cmd.pixels):
                    m.next = "IDLE"
                with m.Else():
                    m.d.sync += a_parity.eq(k[0])
                    m.next = "CAPTURE"
            with m.State("CAPTURE"):
                m.d.sync += [
                    a_row.eq(Mux(a_parity, self.rd[1].data, self.rd[0].data)),
                    b_row.eq(Mux(a_parity, self.rd[0].data, self.rd[1].data)),
                    chunk.eq(0),
                ]
                m.next = "SCALE"
            with m.State("SCALE"):
                with m.If(scalers[0].i.ready):
                    with m.If(chunk == chunks - 1):
                        m.d.sync += k.eq(k + 1)
                        m.next = "READ"
                    with m.Else():
                        m.d.sync += chunk.eq(chunk + 1)

        feed = fsm.ongoing("SCALE")   # the scalers take a chunk
        # the scalers' operands: lanes chunk * per + j of A (scaler j) and B (scaler per + j)
        tag = Signal(user)
        m.d.comb += [tag.chunk.eq(chunk), tag.pixel.eq(k), tag.last.eq(chunk == chunks - 1)]
        for j in range(per):
            for which, row in ((0, a_row), (1, b_row)):
                scaler = scalers[which * per + j]
                lane_value = row[j]
                for c in range(1, chunks):
                    lane_value = Mux(chunk == c, row[c * per + j], lane_value)
                difference = (lane_value - params.zero_point[which])[:32]
                m.d.comb += [
                    scaler.i.valid.eq(feed),
                    scaler.i.payload.x.eq((difference << params.left_shift)[:32].as_signed()),
                    scaler.i.payload.multiplier.eq(params.multiplier[which]),
                    scaler.i.payload.shift.eq(params.shift[which]),
                    scaler.i.payload.user.eq(tag),
                    scaler.o.ready.eq(1),
                ]

        # --- the sums: chunk by chunk into the row register, the row written with its last
        sums = Signal(data.ArrayLayout(signed(32), lanes))
        out = data.View(user, scalers[0].o.payload.user)
        row_now = Signal(data.ArrayLayout(signed(32), lanes))
        m.d.comb += row_now.eq(sums)
        for j in range(per):
            total = (scalers[j].o.payload.value + scalers[per + j].o.payload.value)[:32]
            for c in range(chunks):
                with m.If(scalers[0].o.valid & (out.chunk == c)):
                    m.d.comb += row_now[c * per + j].eq(total.as_signed())
        with m.If(scalers[0].o.valid):
            m.d.sync += sums.eq(row_now)
        m.d.sync += [
            self.wr_en.eq(scalers[0].o.valid & out.last),
            self.wr_addr.eq(cmd.out_base + out.pixel),
            self.wr_data.eq(row_now),
        ]
        in_flight = Signal(range(8))
        fed = scalers[0].i.valid & scalers[0].i.ready
        done = scalers[0].o.valid
        m.d.sync += in_flight.eq(in_flight + fed - done)
        state_busy = Signal()
        with m.If(start):
            m.d.sync += state_busy.eq(1)
        with m.Elif((k == cmd.pixels) & (in_flight == 0) & ~fed & ~self.wr_en):
            m.d.sync += state_busy.eq(0)
        m.d.comb += self.busy.eq(state_busy)
        return m
