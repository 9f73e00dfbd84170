"""Private local memories (PLMs) of the accelerators, built on :mod:`hdl.block_ram`.

Each PLM holds two banks (ping-pong) in one memory: the bank bit is the top address bit, so
the loader fills one bank through the write port while the compute core reads the other
through the read port, and a single dual-port block RAM serves both. A word is never read in
the cycle it is written and used (:class:`hdl.block_ram.DualPortRAM`): the user loads a bank
only while no command reads it.

:class:`InputPLM` is four 16-bit lanes interleaved by word address: a loader writes up to four
consecutive words per cycle (one 64-bit beat) starting at any word address, while the core
reads one word per cycle.
"""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH

from .block_ram import DualPortRAM
from .params import address_bits, check_int

__all__ = ["LANES", "InputPLM", "input_write_layout"]

#: Words a 64-bit beat carries, and lanes of the input PLM.
LANES = 4



def input_write_layout(addr_width):
    """One write of up to four consecutive words: word ``k < count`` goes to ``addr + k``."""
    return data.StructLayout({
        "addr": unsigned(addr_width),
        "words": data.ArrayLayout(unsigned(OPERAND_WIDTH), LANES),
        "count": unsigned(3),
    })


class InputPLM(wiring.Component):
    """Input PLM: ``banks`` banks of ``words`` 16-bit words (``words`` a multiple of 4).

    Members
    -------
    wr : ``In(input_write_layout(addr_width))`` plus ``wr_en``
        Word address with the bank bit on top.
    rd : ``Out(memory.ReadPort.Signature(addr_width, 16))``
        One word, ``read_latency`` cycles after its address.

    ``read_latency`` 2 registers every lane's block-RAM output before the lane multiplexer (on
    the ECP5 in the block RAM's own output register, see :class:`hdl.block_ram.DualPortRAM`),
    so that the block RAM's clock-to-output delay (5.6 ns on the ECP5) is not followed by logic
    in the same cycle; 1 is a plain synchronous read. ``write_latency`` 1 registers the write
    (``wr``, ``wr_en``) before the lanes' address adders and word multiplexers, so that
    whatever forms it (a loader's beat unpacking) and the lane routing are separate paths; the
    words are then written a cycle later (readable from the second cycle after ``wr_en``).
    """

    def __init__(self, *, words=16384, banks=2, read_latency=1, write_latency=0):
        self._words = check_int("words", words, minimum=LANES)
        if words % LANES:
            raise ValueError(f"words must be a multiple of {LANES}, not {words}")
        self._banks = check_int("banks", banks, minimum=1, maximum=2)
        self._addr_width = address_bits(words) + (banks - 1)
        self._read_latency = check_int("read_latency", read_latency, minimum=1, maximum=2)
        self._write_latency = check_int("write_latency", write_latency, minimum=0, maximum=1)
        super().__init__({
            "wr": In(input_write_layout(self._addr_width)),
            "wr_en": In(1),
            "rd": Out(memory.ReadPort.Signature(addr_width=self._addr_width,
                                                shape=unsigned(OPERAND_WIDTH))),
        })

    @property
    def addr_width(self):
        return self._addr_width

    @property
    def write_latency(self):
        """Cycles from a write's ``wr_en`` to the cycle its words are written (0 or 1)."""
        return self._write_latency

    @property
    def read_latency(self):
        """Cycles from a read address to its word."""
        return self._read_latency

    def elaborate(self, platform):
        m = Module()
        # the bank bit sits above the word address; lanes split the low two bits off
        word_bits = address_bits(self._words)
        depth = (1 << (word_bits - 2)) << (self._banks - 1)

        def row_of(addr):
            bank = addr[word_bits:] if self._banks > 1 else 0
            return (addr[:word_bits] >> 2) | (bank << (word_bits - 2))

        write, write_en = self.wr, self.wr_en
        if self._write_latency:
            write = Signal.like(self.wr, name="wr_q", reset_less=True)
            write_en = Signal(name="wr_en_q")
            m.d.sync += [write.eq(self.wr), write_en.eq(self.wr_en)]
        # the lane of the word being read, delayed to meet its data
        lane_rd = self.rd.addr[:2]
        for n in range(self._read_latency):
            delayed = Signal(2, name=f"lane_rd{n + 1}")
            m.d.sync += delayed.eq(lane_rd)
            lane_rd = delayed
        for lane in range(LANES):
            mem = DualPortRAM(shape=unsigned(OPERAND_WIDTH), depth=depth,
                              read_latency=self._read_latency)
            m.submodules[f"lane{lane}"] = mem
            wr, rd = mem.wr, mem.rd
            # the word that lands in this lane, and its address
            k = Signal(2, name=f"k{lane}")
            m.d.comb += k.eq(lane - write.addr[:2])
            addr = Signal(self._addr_width, name=f"waddr{lane}")
            m.d.comb += [
                addr.eq(write.addr + k),
                wr.addr.eq(row_of(addr)),
                wr.data.eq(write.words[k]),
                wr.en.eq(write_en & (k < write.count)),
                rd.addr.eq(row_of(self.rd.addr)),
                rd.en.eq(self.rd.en),
            ]
            with m.If(lane_rd == lane):
                m.d.comb += self.rd.data.eq(rd.data)
        return m
