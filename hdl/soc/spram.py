"""Memories built from the iCE40UP5K's SPRAM (``SB_SPRAM256KA``: 16K words of 16 bits, a write
mask per 4-bit nibble, single port, the read data one cycle after the address, no
initial contents).

* :class:`SpramBlock` -- one block: the primitive on an iCE40 (``hdl.target.is_ice40``), a
  behavioural model of it elsewhere (simulation, other families);
* :class:`SpramWords` -- 32-bit words with a byte mask from blocks side by side (two per 32K
  words of 32 bits; more pairs stacked);
* :class:`SpramRam` -- the SoC's firmware RAM on them (``SocConfig.ram == "spram"``): the
  interface of :class:`hdl.soc.memory.FirmwareRam`, with the one port shared between
  instruction fetch and data (data first);
* :class:`SpramAxiMemory` -- an AXI4 subordinate (64-bit beats, two 32-bit accesses each) on
  them: the external memory of a board without one (the iCEBreaker).
"""

from amaranth.hdl import ClockSignal, Instance, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from hls_ref.config import SPRAM_BLOCK_BYTES

from ..axi import RESP_OKAY
from ..params import check_int
from ..target import is_ice40
from .memory import name_ram_buses, ram_buses

__all__ = ["SpramAxiMemory", "SpramBlock", "SpramRam", "SpramWords"]


#: Words of 16 bits in one block.
BLOCK_WORDS = SPRAM_BLOCK_BYTES // 2


class SpramBlock(wiring.Component):
    """One SPRAM block.

    Members
    -------
    addr : ``In(14)``
        Word address (16-bit words).
    data_w : ``In(16)``, mask : ``In(4)``, we : ``In(1)``
        Write data, nibble enables (bit ``k``: bits ``4k..4k+3``), write strobe.
    data_r : ``Out(16)``
        The word at the previous cycle's ``addr`` (after a write: undefined).
    """

    def __init__(self):
        super().__init__({"addr": In(exact_log2(BLOCK_WORDS)), "data_w": In(16), "mask": In(4),
                          "we": In(1), "data_r": Out(16)})

    def elaborate(self, platform):
        m = Module()
        if is_ice40(platform):
            m.submodules.spram = Instance(
                "SB_SPRAM256KA", i_ADDRESS=self.addr, i_DATAIN=self.data_w,
                i_MASKWREN=self.mask, i_WREN=self.we, i_CHIPSELECT=1,
                i_CLOCK=ClockSignal("sync"), i_STANDBY=0, i_SLEEP=0, i_POWEROFF=1,
                o_DATAOUT=self.data_r)
            return m
        m.submodules.storage = storage = memory.Memory(shape=16, depth=BLOCK_WORDS, init=())
        read = storage.read_port()
        write = storage.write_port(granularity=4)
        m.d.comb += [
            read.addr.eq(self.addr), self.data_r.eq(read.data),
            write.addr.eq(self.addr), write.data.eq(self.data_w),
            write.en.eq(self.mask & self.we.replicate(4)),
        ]
        return m


class SpramWords(wiring.Component):
    """``size`` bytes of 32-bit words from SPRAM blocks (``size`` a multiple of two blocks,
    64 KB; two blocks per 64 KB side by side, low half first).

    Members
    -------
    addr : ``In(log2(size) - 2)``
        Word address (32-bit words).
    data_w : ``In(32)``, sel : ``In(4)``, we : ``In(1)``
        Write data, byte enables, write strobe.
    data_r : ``Out(32)``
        The word at the previous cycle's ``addr``.
    """

    def __init__(self, size):
        check_int("size", size, minimum=2 * SPRAM_BLOCK_BYTES)
        if size % (2 * SPRAM_BLOCK_BYTES) or size & (size - 1):
            raise ValueError(f"size must be a power of two multiple of "
                             f"{2 * SPRAM_BLOCK_BYTES}, not {size}")
        self._pairs = size // (2 * SPRAM_BLOCK_BYTES)
        super().__init__({"addr": In(exact_log2(size) - 2), "data_w": In(32), "sel": In(4),
                          "we": In(1), "data_r": Out(32)})

    def elaborate(self, platform):
        m = Module()
        low_bits = exact_log2(BLOCK_WORDS)
        pair = self.addr[low_bits:]
        read_pair = Signal.like(pair) if self._pairs > 1 else None
        if read_pair is not None:
            m.d.sync += read_pair.eq(pair)
        outputs = []
        for p in range(self._pairs):
            selected = (pair == p) if self._pairs > 1 else 1
            halves = []
            for h in range(2):
                block = SpramBlock()
                m.submodules[f"block{p}_{h}"] = block
                sel = self.sel[2 * h:2 * h + 2]
                m.d.comb += [
                    block.addr.eq(self.addr[:low_bits]),
                    block.data_w.eq(self.data_w[16 * h:16 * h + 16]),
                    block.mask.eq(sel[1].replicate(2) << 2 | sel[0].replicate(2)),
                    block.we.eq(self.we & selected),
                ]
                halves.append(block.data_r)
            outputs.append(halves[0] | halves[1] << 16)
        if self._pairs == 1:
            m.d.comb += self.data_r.eq(outputs[0])
        else:
            with m.Switch(read_pair):
                for p, value in enumerate(outputs):
                    with m.Case(p):
                        m.d.comb += self.data_r.eq(value)
        return m


class SpramRam(wiring.Component):
    """The firmware RAM on SPRAM: :class:`hdl.soc.memory.FirmwareRam`'s members and timing
    (each access acknowledged one cycle after it is served), one access per cycle: a data
    access waiting is served first, an instruction fetch in the cycles the data bus leaves.

    Parameters
    ----------
    size : int
        Bytes (a power-of-two multiple of 64 KB: two blocks side by side).
    """

    def __init__(self, *, size):
        self._size = size
        self._words = SpramWords(size)
        super().__init__(ram_buses(size))
        name_ram_buses(self, size)

    @property
    def size(self):
        return self._size

    def elaborate(self, platform):
        m = Module()
        m.submodules.words = words = self._words
        i_ack, d_ack = Signal(), Signal()
        data = self.dbus.cyc & self.dbus.stb & ~d_ack
        fetch = self.ibus.cyc & self.ibus.stb & ~i_ack & ~data
        m.d.sync += [d_ack.eq(data), i_ack.eq(fetch)]
        m.d.comb += [
            words.addr.eq(Mux(data, self.dbus.adr, self.ibus.adr)),
            words.data_w.eq(self.dbus.dat_w), words.sel.eq(self.dbus.sel),
            words.we.eq(data & self.dbus.we),
            self.ibus.dat_r.eq(words.data_r), self.dbus.dat_r.eq(words.data_r),
            self.ibus.ack.eq(i_ack), self.dbus.ack.eq(d_ack),
        ]
        return m


class SpramAxiMemory(wiring.Component):
    """``size`` bytes of SPRAM behind an AXI4 subordinate port with 64-bit data: one
    transaction at a time (a write first when both wait), each beat two 32-bit accesses
    (four cycles a read beat, two a write beat). Bursts are INCR or FIXED of full-width
    beats; a narrow transfer of one beat (the processor's 32-bit accesses) works through its
    strobes. Addresses wrap at ``size``: every alias of a byte is the same byte.

    Parameters
    ----------
    size : int
        Bytes (a power-of-two multiple of 64 KB).
    signature : AXI4Signature
        The port's signature (the SoC's ``mem``, flipped here: ``In``).
    """

    def __init__(self, *, size, signature):
        self._size = size
        self._words = SpramWords(size)
        super().__init__({"axi": In(signature)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.words = words = self._words
        axi = self.axi
        word_bits = exact_log2(self._size) - 3
        beat = Signal(word_bits)           # the beat's 64-bit word address
        fixed = Signal()
        remaining = Signal(8)
        tid = Signal.like(axi.rid)
        low, high = Signal(32), Signal(32)
        m.d.comb += [axi.bresp.eq(RESP_OKAY), axi.rresp.eq(RESP_OKAY), axi.bid.eq(tid),
                     axi.rid.eq(tid)]

        def next_beat():
            m.d.sync += remaining.eq(remaining - 1)
            with m.If(~fixed):
                m.d.sync += beat.eq(beat + 1)

        with m.FSM():
            with m.State("Idle"):
                with m.If(axi.awvalid):
                    m.d.comb += axi.awready.eq(1)
                    m.d.sync += [beat.eq(axi.awaddr[3:3 + word_bits]), remaining.eq(axi.awlen),
                                 fixed.eq(axi.awburst == 0), tid.eq(axi.awid)]
                    m.next = "Write-Low"
                with m.Elif(axi.arvalid):
                    m.d.comb += axi.arready.eq(1)
                    m.d.sync += [beat.eq(axi.araddr[3:3 + word_bits]), remaining.eq(axi.arlen),
                                 fixed.eq(axi.arburst == 0), tid.eq(axi.arid)]
                    m.next = "Read-Low"
            with m.State("Write-Low"):
                m.d.comb += [words.addr.eq(beat << 1), words.data_w.eq(axi.wdata[:32]),
                             words.sel.eq(axi.wstrb[:4]), words.we.eq(axi.wvalid)]
                with m.If(axi.wvalid):
                    m.next = "Write-High"
            with m.State("Write-High"):
                m.d.comb += [words.addr.eq(beat << 1 | 1), words.data_w.eq(axi.wdata[32:]),
                             words.sel.eq(axi.wstrb[4:]), words.we.eq(1), axi.wready.eq(1)]
                next_beat()
                with m.If(axi.wlast):
                    m.next = "Write-Response"
                with m.Else():
                    m.next = "Write-Low"
            with m.State("Write-Response"):
                m.d.comb += axi.bvalid.eq(1)
                with m.If(axi.bready):
                    m.next = "Idle"
            with m.State("Read-Low"):
                m.d.comb += words.addr.eq(beat << 1)
                m.next = "Read-High"
            with m.State("Read-High"):
                m.d.comb += words.addr.eq(beat << 1 | 1)
                m.d.sync += low.eq(words.data_r)
                m.next = "Read-Capture"
            with m.State("Read-Capture"):
                m.d.sync += high.eq(words.data_r)
                m.next = "Read-Data"
            with m.State("Read-Data"):
                m.d.comb += [axi.rvalid.eq(1), axi.rdata.eq(low | high << 32),
                             axi.rlast.eq(remaining == 0)]
                with m.If(axi.rready):
                    next_beat()
                    with m.If(remaining == 0):
                        m.next = "Idle"
                    with m.Else():
                        m.next = "Read-Low"
        return m
