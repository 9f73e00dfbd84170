"""The per-channel datapath's window unit: the ST activation operands of a depthwise command.

The input PLM holds the command's tile as one row per pixel: ``lanes`` 16-bit elements (one
channel per lane, each element sign-extended to 16 bits), in two memories by the parity of the
pixel's row: pixel ``(y, x)`` at row ``base + (y >> 1) * in_w + x`` of memory ``y & 1``, so
that two vertically adjacent pixels are read in one cycle.

For every output pixel in raster order the unit emits ``groups`` operations, one per cycle:
operation ``g`` gives each lane the ST ``A`` word of taps ``g * L .. g * L + L - 1`` of
that lane's channel (``L`` products per ST operation; taps row-major over the kernel window,
as ``hls_ref.formats.depthwise_weight_blob`` orders the weights), ``clear`` on the first
operation of an output, ``last`` on its last. Padding taps are the command's pad value.

Three stages, decoupled so that the PLM is read once per pixel of each window column and the
reads run ahead of the operations (``docs/perchannel.md``):

* the **reader** walks the columns each window adds (``kernel_w`` at the start of an output
  row, ``stride_w`` after), ``kernel_h`` pixels each, two a cycle, reading the PLM or
  inserting the pad value, into two FIFOs (pixels alternately);
* the **assembler** shifts columns from the FIFOs (up to two pixels a cycle) into the window
  registers (the window is right-aligned in ``max_kernel[1]`` columns); a complete window is
  copied, in tap order, into the emitter's register;
* the **emitter** shifts ``L`` taps out of that register per operation and packs them into
  ST words, while the assembler builds the next window.

Each stage holds its own copy of the command, so that commands follow one another without a
gap: the unit takes the next command (``accept``) as soon as the reader has issued the present
one's last read and its data has arrived, while the assembler and the emitter still work on
it; the reader then runs ahead into the FIFOs with the next command's pixels, the assembler
takes them once the present command's last window has gone to the emitter, and the
emitter's first operation of the next command follows the last of the present one. Every
operation carries its command's precision and ``tag``.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH, Precision

from ..params import check_int

__all__ = ["WindowUnit", "window_command_layout", "window_output_layout"]

_ELEMENT = OPERAND_WIDTH         # bits of one PLM element


def window_command_layout(addr_width):
    """One depthwise command as the window unit needs it (the front end derives ``out_h``,
    ``out_w``, ``groups`` and ``pixels``, the operations of a pool: ``out_h * out_w``;
    ``pad_value`` is already sign-extended from ``act_bits``)."""
    return data.StructLayout({
        "base": unsigned(addr_width), "in_h": unsigned(16), "in_w": unsigned(16),
        "out_h": unsigned(16), "out_w": unsigned(16), "kernel_h": unsigned(4),
        "kernel_w": unsigned(4), "stride_h": unsigned(2), "stride_w": unsigned(2),
        "pad_top": unsigned(4), "pad_left": unsigned(4), "pad_value": signed(_ELEMENT),
        "precision": Precision, "groups": unsigned(4), "pixels": unsigned(addr_width + 1),
    })


def window_output_layout(lanes):
    """One operation: each lane's ST ``A`` word, the tap group, first and last of an output,
    and its command's precision and tag."""
    return data.StructLayout({
        "a": data.ArrayLayout(unsigned(OPERAND_WIDTH), lanes), "group": unsigned(4),
        "clear": unsigned(1), "last": unsigned(1), "precision": Precision, "tag": unsigned(1),
    })


class WindowUnit(wiring.Component):
    """Reads a depthwise command's input tile from the PLM and emits its ST operations.

    Parameters
    ----------
    lanes : int
        Channels side by side (elements per PLM row).
    max_kernel : (int, int)
        Largest kernel (the window registers' size).
    addr_width : int
        PLM row-address width (the bank bit included in ``base``).
    fifo_depth : int
        Pixels the reader may run ahead of the assembler.

    Members
    -------
    start : ``In(1)``
        Start ``cmd`` (honoured while ``accept``).
    cmd : ``In(window_command_layout(addr_width))``
    tag : ``In(1)``
        With ``start``: a bit the command's operations carry (``o.payload.tag``).
    accept : ``Out(1)``
        The unit takes a command this cycle if ``start``: idle, or the present command's reads
        have all been issued and answered (its operations may still be coming).
    busy : ``Out(1)``
        A command is running (until its last operation has been taken).
    rd : ``In(memory.ReadPort.Signature(addr_width, lanes * 16)).array(2)``
        The input PLM's read ports, one per memory (even and odd rows), one cycle of latency.
    o : ``Out(stream.Signature(window_output_layout(lanes)))``
    """

    def __init__(self, *, lanes=16, max_kernel=(3, 3), addr_width=11, fifo_depth=8):
        self._lanes = check_int("lanes", lanes, minimum=1)
        self._max_kernel = tuple(check_int("max_kernel", k, minimum=1, maximum=15)
                                 for k in max_kernel)
        self._addr_width = check_int("addr_width", addr_width, minimum=1)
        self._fifo_depth = check_int("fifo_depth", fifo_depth, minimum=2)
        super().__init__({
            "start": In(1),
            "cmd": In(window_command_layout(addr_width)),
            "tag": In(1),
            "accept": Out(1),
            "busy": Out(1),
            "rd": In(memory.ReadPort.Signature(addr_width=addr_width,
                                               shape=lanes * _ELEMENT)).array(2),
            "o": Out(stream.Signature(window_output_layout(lanes))),
        })

    @property
    def taps(self):
        """Registers of the window: the largest kernel's taps."""
        return self._max_kernel[0] * self._max_kernel[1]

    def elaborate(self, platform):
        m = Module()
        lanes, (kh_max, kw_max) = self._lanes, self._max_kernel
        pixel = data.ArrayLayout(signed(_ELEMENT), lanes)
        starting = self.start & self.accept
        # the reader's copy of the command (``rc``), the assembler's (``ac``), the emitter's
        # (``e_groups``, ``e_precision``, ``e_tag``)
        rc = Signal(window_command_layout(self._addr_width))
        r_tag = Signal()
        with m.If(starting):
            m.d.sync += [rc.eq(self.cmd), r_tag.eq(self.tag)]

        # Two FIFOs take the pixels alternately, so that the assembler may pop two a cycle
        # (a window at the start of an output row needs kernel_h * kernel_w of them).
        queues = [fifo.SyncFIFO(width=pixel.size, depth=self._fifo_depth)
                  for _ in range(2)]
        m.submodules.fifo0, m.submodules.fifo1 = queues

        # --- reader: window columns, kernel_h pixels each, into the FIFOs ------------------
        # Two vertically adjacent pixels are in different PLM memories (rows by parity), so
        # the reader takes two pixels of a column a cycle.
        reading = Signal()
        r_row = Signal(16)            # output row
        r_win = Signal(16)            # window within the row
        r_col = Signal(4)             # column within the window's new columns
        r_i = Signal(4)               # pixel within the column
        y = Signal(signed(18))        # input row of the (first) pixel
        x = Signal(signed(18))        # input column of the pixel
        y_top = Signal(signed(18))    # input row of the window's top
        issue_parity = Signal()       # the FIFO the next pixel goes to
        columns = Mux(r_win == 0, rc.kernel_w, rc.stride_w)
        pair = r_i + 1 < rc.kernel_h                     # a second pixel below the first
        last_i = Mux(pair, r_i + 1, r_i) == rc.kernel_h - 1
        last_col = r_col == columns - 1
        last_win = r_win == rc.out_w - 1
        last_row = r_row == rc.out_h - 1
        rooms = [queue.level < self._fifo_depth - 2 for queue in queues]
        issue = reading & rooms[0] & rooms[1]
        # slot 0: pixel (y, x); slot 1: pixel (y + 1, x) when ``pair``
        slots = []
        for slot in range(2):
            row = y + slot
            inside = ((row >= 0) & (row < rc.in_h) & (x >= 0) & (x < rc.in_w))
            valid = issue & (pair if slot else 1)
            slots.append((row, inside, valid))
        pending = [Signal(name=f"pending{k}") for k in range(2)]
        pending_pad = [Signal(name=f"pending_pad{k}") for k in range(2)]
        pending_memory = [Signal(name=f"pending_memory{k}") for k in range(2)]
        pending_fifo = [Signal(name=f"pending_fifo{k}") for k in range(2)]
        for k, port in enumerate(self.rd):
            # the slot whose row has this parity reads this memory
            for row, inside, valid in slots:
                with m.If(row[0] == k):
                    m.d.comb += [
                        port.addr.eq(rc.base + (row >> 1) * rc.in_w + x),
                        port.en.eq(valid & inside),
                    ]
        for slot, (row, inside, valid) in enumerate(slots):
            m.d.sync += [pending[slot].eq(valid), pending_pad[slot].eq(~inside),
                         pending_memory[slot].eq(row[0]),
                         pending_fifo[slot].eq(issue_parity ^ slot)]
        with m.If(issue):
            m.d.sync += issue_parity.eq(issue_parity ^ ~pair)
        pad_pixel = Signal(pixel)
        for lane in range(lanes):
            m.d.comb += pad_pixel[lane].eq(rc.pad_value)
        for parity, queue in enumerate(queues):
            for slot in range(2):
                data_in = Mux(pending_memory[slot], self.rd[1].data, self.rd[0].data)
                with m.If(pending[slot] & (pending_fifo[slot] == parity)):
                    m.d.comb += [
                        queue.w_en.eq(1),
                        queue.w_data.eq(Mux(pending_pad[slot], pad_pixel.as_value(), data_in)),
                    ]

        # the FIFOs' parity runs on from command to command (the next command's pixels may
        # follow the present one's in them)
        with m.If(starting):
            m.d.sync += [
                reading.eq(1), r_row.eq(0), r_win.eq(0), r_col.eq(0), r_i.eq(0),
                y.eq(-self.cmd.pad_top), y_top.eq(-self.cmd.pad_top),
                x.eq(-self.cmd.pad_left),
            ]
        with m.Elif(issue):
            with m.If(~last_i):
                m.d.sync += [r_i.eq(Mux(pair, r_i + 2, r_i + 1)),
                             y.eq(Mux(pair, y + 2, y + 1))]
            with m.Else():
                m.d.sync += [r_i.eq(0), y.eq(y_top)]
                with m.If(~last_col):
                    m.d.sync += [r_col.eq(r_col + 1), x.eq(x + 1)]
                with m.Else():
                    m.d.sync += r_col.eq(0)
                    with m.If(~last_win):
                        m.d.sync += [r_win.eq(r_win + 1), x.eq(x + 1)]
                    with m.Else():
                        m.d.sync += [r_win.eq(0), x.eq(-rc.pad_left)]
                        new_top = y_top + rc.stride_h
                        with m.If(~last_row):
                            m.d.sync += [r_row.eq(r_row + 1), y_top.eq(new_top),
                                         y.eq(new_top)]
                        with m.Else():
                            m.d.sync += reading.eq(0)

        # --- assembler: columns into the window registers, up to two pixels a cycle ------
        window = [[Signal(pixel, name=f"w{i}_{j}") for j in range(kw_max)]
                  for i in range(kh_max)]
        column = [Signal(pixel, name=f"col{i}") for i in range(kh_max)]
        ac = Signal(window_command_layout(self._addr_width))
        a_tag = Signal()
        a_waiting = Signal()          # the reader has a command the assembler has not taken
        a_i = Signal(4)
        a_col = Signal(4)
        a_win = Signal(16)
        a_row = Signal(16)
        read_parity = Signal()        # the FIFO holding the next pixel
        assembling = Signal()
        complete = Signal()           # the window registers hold a whole window
        a_columns = Mux(a_win == 0, ac.kernel_w, ac.stride_w)
        take = Signal()               # the emitter copies the window this cycle
        window_done = Signal()        # a pixel popped this cycle completes a window
        first = [Mux(read_parity, queues[1].r_rdy, queues[0].r_rdy),
                 Mux(read_parity, queues[1].r_data, queues[0].r_data)]
        second = [Mux(read_parity, queues[0].r_rdy, queues[1].r_rdy),
                  Mux(read_parity, queues[0].r_data, queues[1].r_data)]
        p0 = data.View(pixel, first[1])
        p1 = data.View(pixel, second[1])
        last_column = a_col == a_columns - 1
        ends_column = a_i == ac.kernel_h - 1             # p0 completes its column
        # the window registers may shift in the cycle the emitter copies them (the copy is
        # of their present value)
        pop0 = Signal()
        pop1 = Signal()
        same_column = ~ends_column                        # p1 lies below p0
        m.d.comb += [
            pop0.eq(assembling & (~complete | take) & first[0]),
            # a second pixel when it belongs to the same window, and p0 and p1 do not both
            # complete a column
            pop1.eq(pop0 & second[0] & ~(ends_column & last_column)
                    & (same_column | (ac.kernel_h >= 2))),
            queues[0].r_en.eq(Mux(read_parity, pop1, pop0)),
            queues[1].r_en.eq(Mux(read_parity, pop0, pop1)),
        ]
        below = a_i + 1                                     # p1's row when in p0's column
        ends_with_p1 = pop1 & same_column & (below == ac.kernel_h - 1)
        column_done = pop0 & (ends_column | ends_with_p1)
        with m.If(pop0 & ~pop1):
            m.d.sync += read_parity.eq(~read_parity)

        # the assembler takes the reader's command once the present command's last window has
        # gone to the emitter (whose copy reads ``ac.kernel_w``)
        a_taking = ~assembling & a_waiting & (~complete | take)
        with m.If(starting):
            m.d.sync += a_waiting.eq(1)
        with m.Elif(a_taking):
            m.d.sync += a_waiting.eq(0)
        with m.If(a_taking):
            m.d.sync += [ac.eq(rc), a_tag.eq(r_tag), assembling.eq(1), a_i.eq(0), a_col.eq(0),
                         a_win.eq(0), a_row.eq(0)]
        with m.Elif(pop0):
            for i in range(kh_max):
                with m.If(a_i == i):
                    m.d.sync += column[i].eq(p0)
                with m.If(pop1 & same_column & (below == i)):
                    m.d.sync += column[i].eq(p1)
            with m.If(~column_done):
                m.d.sync += a_i.eq(Mux(pop1, a_i + 2, a_i + 1))
            with m.Else():
                # the column is whole: shift it into the window's right-hand column; a second
                # pixel that starts the next column is its first
                for i in range(kh_max):
                    incoming = Mux(pop1 & same_column & (below == i), p1.as_value(),
                                   Mux(a_i == i, p0.as_value(), column[i].as_value()))
                    for j in range(kw_max - 1):
                        m.d.sync += window[i][j].eq(window[i][j + 1])
                    m.d.sync += window[i][kw_max - 1].eq(incoming)
                with m.If(pop1 & ~same_column):
                    m.d.sync += [column[0].eq(p1), a_i.eq(1)]
                with m.Else():
                    m.d.sync += a_i.eq(0)
                with m.If(~last_column):
                    m.d.sync += a_col.eq(a_col + 1)
                with m.Else():
                    m.d.sync += a_col.eq(0)
                    m.d.comb += window_done.eq(1)
                    with m.If(a_win != ac.out_w - 1):
                        m.d.sync += a_win.eq(a_win + 1)
                    with m.Else():
                        m.d.sync += a_win.eq(0)
                        with m.If(a_row != ac.out_h - 1):
                            m.d.sync += a_row.eq(a_row + 1)
                        with m.Else():
                            m.d.sync += assembling.eq(0)

        # --- emitter: taps in order, L per operation ------------------------------------
        taps = [Signal(pixel, name=f"tap{t}") for t in range(self.taps + 3)]
        emitting = Signal()
        e_group = Signal(4)
        e_groups = Signal(4)
        e_precision = Signal(Precision)
        e_tag = Signal()
        lanes_st = Signal(3)
        m.d.comb += take.eq(complete & (~emitting | (self.o.ready
                                                     & (e_group == e_groups - 1))))
        m.d.sync += complete.eq(window_done | (complete & ~take))
        with m.If(take):
            m.d.sync += [emitting.eq(1), e_group.eq(0), e_groups.eq(ac.groups),
                         e_precision.eq(ac.precision), e_tag.eq(a_tag)]
            # tap t = i * kernel_w + j of the window, right-aligned in kw_max columns
            for t in range(self.taps):
                choices = {}
                for kw in range(1, kw_max + 1):
                    i, j = divmod(t, kw)
                    if i < kh_max:
                        choices[kw] = window[i][kw_max - kw + j]
                value = taps[t]
                for kw, source in choices.items():
                    value = Mux(ac.kernel_w == kw, source.as_value(), value)
                m.d.sync += taps[t].eq(value)
        with m.Elif(self.o.valid & self.o.ready):
            with m.If(e_group == e_groups - 1):
                m.d.sync += emitting.eq(0)
            m.d.sync += e_group.eq(e_group + 1)
            for t in range(self.taps):
                shifted = {1: taps[t + 1], 2: taps[t + 2] if t + 2 < len(taps) else taps[t],
                           4: taps[t + 4] if t + 4 < len(taps) else taps[t]}
                m.d.sync += taps[t].eq(Mux(lanes_st == 4, shifted[4].as_value(),
                                           Mux(lanes_st == 2, shifted[2].as_value(),
                                               shifted[1].as_value())))
        m.d.comb += lanes_st.eq(Mux(e_precision == Precision.A4W4, 4,
                                    Mux((e_precision == Precision.A8W8)
                                        | (e_precision == Precision.A8W4), 2, 1)))

        m.d.comb += [self.o.valid.eq(emitting), self.o.payload.group.eq(e_group),
                     self.o.payload.clear.eq(e_group == 0),
                     self.o.payload.last.eq(e_group == e_groups - 1),
                     self.o.payload.precision.eq(e_precision), self.o.payload.tag.eq(e_tag)]
        for lane in range(lanes):
            a16 = taps[0][lane][:16]
            a8 = Cat(taps[0][lane][:8], taps[1][lane][:8])
            a4 = Cat(*(taps[k][lane][:4] for k in range(4)))
            m.d.comb += self.o.payload.a[lane].eq(
                Mux(lanes_st == 4, a4, Mux(lanes_st == 2, a8, a16)))

        m.d.comb += [
            self.accept.eq(~reading & ~pending[0] & ~pending[1] & ~a_waiting),
            self.busy.eq(reading | a_waiting | assembling | complete | emitting | pending[0]
                         | pending[1] | queues[0].r_rdy | queues[1].r_rdy),
        ]
        return m
