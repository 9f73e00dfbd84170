"""The FC datapath's loaders: input vectors into the input PLM, the shared-layout quantization
block into its registers and the bias memory.

Ref: ``docs/formats.md`` sections 2-3 and ``docs/accelerator.md`` (FC commands). Both take
every beat they are offered (their ``ready`` is 1), flag a beat with an error response
(``err``) and pulse ``done`` with the request's last beat.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..dma import dma_read_data_layout
from ..params import address_bits, check_int

__all__ = ["FCInputLoader", "FCQuantLoader", "fc_quant_layout"]

_BEAT = 64


def fc_quant_layout():
    """The registers of one command's quantization block: output ``zero_point``, clamp
    ``act_min``/``act_max``, the ``scale``'s IEEE bits, and whether the block is ``bad``
    (channel count, layout or scale; see :class:`FCQuantLoader`)."""
    return data.StructLayout({
        "zero_point": signed(16),
        "act_min": signed(16),
        "act_max": signed(16),
        "scale": unsigned(64),
        "bad": unsigned(1),
    })


class FCInputLoader(wiring.Component):
    """Input vectors -> input PLM: beat ``j`` of a request to row ``j`` of bank ``bank``
    (every vector is whole beats, so vector ``b`` starts at row ``b * vector_beats``).

    Parameters
    ----------
    rows : int
        Input PLM bank, 64-bit rows.

    Members
    -------
    start : ``In(1)``
        Pulse: the next beats fill bank ``bank`` from row 0.
    bank : ``In(1)``
    beats : ``In(stream.Signature(dma_read_data_layout()))``
    wr : ``Out(memory.WritePort.Signature)``
        Row address with the bank bit on top.
    done : ``Out(1)``
        Pulse with the last beat.
    err : ``Out(1)``
        A beat since ``start`` had an error response.
    """

    def __init__(self, *, rows=1024):
        self._rows = check_int("rows", rows, minimum=1)
        self._bits = address_bits(rows)
        super().__init__({
            "start": In(1),
            "bank": In(1),
            "beats": In(stream.Signature(dma_read_data_layout())),
            "wr": Out(memory.WritePort.Signature(addr_width=self._bits + 1,
                                                 shape=unsigned(_BEAT))),
            "done": Out(1),
            "err": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        ptr = Signal(self._bits)
        bank = Signal()
        beat = self.beats.payload
        taking = self.beats.valid
        m.d.comb += [self.beats.ready.eq(1),
                     self.wr.addr.eq(Cat(ptr, bank)), self.wr.data.eq(beat.data),
                     self.wr.en.eq(taking), self.done.eq(taking & beat.last)]
        with m.If(taking):
            m.d.sync += ptr.eq(ptr + 1)
            with m.If(beat.err):
                m.d.sync += self.err.eq(1)
        with m.If(self.start):
            m.d.sync += [ptr.eq(0), bank.eq(self.bank), self.err.eq(0)]
        return m


class FCQuantLoader(wiring.Component):
    """A quantization block in the shared layout -> the registers of bank ``bank``
    (:func:`fc_quant_layout`) and the bias memory: the folded bias of channel ``c`` at element
    ``c % pes`` of row ``c // pes`` of the bank.

    ``bad`` is set when the header's channel count is not ``out_c`` (taken at ``start``), its
    mode bits (48, 49) are not both set, or the scale is not a positive normal double.

    Parameters
    ----------
    pes : int
        Biases per memory row (even: a beat's two biases share a row).
    blocks : int
        Rows per bank.

    Members
    -------
    start : ``In(1)``
        Pulse: the next beats are a block of ``out_c`` channels for bank ``bank``.
    bank : ``In(1)``
    out_c : ``In(16)``
    beats : ``In(stream.Signature(dma_read_data_layout()))``
    q : ``Out(data.ArrayLayout(fc_quant_layout(), 2))``
        Both banks' registers.
    bias_wr : ``Out(memory.WritePort.Signature)``
        The bias memory (bank bit on top), one write-enable bit per element.
    done, err : ``Out(1)``
        As for :class:`FCInputLoader`.
    """

    def __init__(self, *, pes=4, blocks=64):
        self._pes = check_int("pes", pes, minimum=2)
        if pes % 2:
            raise ValueError(f"pes must be even, not {pes}")
        self._blocks = check_int("blocks", blocks, minimum=1)
        super().__init__({
            "start": In(1),
            "bank": In(1),
            "out_c": In(16),
            "beats": In(stream.Signature(dma_read_data_layout())),
            "q": Out(data.ArrayLayout(fc_quant_layout(), 2)),
            "bias_wr": Out(memory.WritePort.Signature(
                addr_width=address_bits(blocks) + 1,
                shape=data.ArrayLayout(signed(32), pes), granularity=1)),
            "done": Out(1),
            "err": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        pairs = self._pes // 2
        index = Signal(2)                # 0 header, 1 scale, 2 biases
        row = Signal(address_bits(self._blocks))
        pair = Signal(range(pairs))
        bank = Signal()
        out_c = Signal(16)
        beat = self.beats.payload
        taking = self.beats.valid
        m.d.comb += [self.beats.ready.eq(1), self.done.eq(taking & beat.last)]
        with m.If(self.start):
            m.d.sync += [index.eq(0), row.eq(0), pair.eq(0), bank.eq(self.bank),
                         out_c.eq(self.out_c), self.err.eq(0)]

        target = self.q[bank]
        with m.If(taking):
            with m.If(beat.err):
                m.d.sync += self.err.eq(1)
            with m.Switch(index):
                with m.Case(0):
                    data_ = beat.data
                    m.d.sync += [target.zero_point.eq(data_[:16]),
                                 target.act_min.eq(data_[16:32]),
                                 target.act_max.eq(data_[32:48]),
                                 target.bad.eq((data_[48:50] != 0b11)
                                               | (data_[56:64] + 1 != out_c)),
                                 index.eq(1)]
                with m.Case(1):
                    exponent = beat.data[52:63]
                    m.d.sync += [target.scale.eq(beat.data), index.eq(2)]
                    with m.If(beat.data[63] | (exponent == 0) | (exponent == 0x7FF)):
                        m.d.sync += target.bad.eq(1)
                with m.Default():
                    m.d.sync += pair.eq(Mux(pair == pairs - 1, 0, pair + 1))
                    with m.If(pair == pairs - 1):
                        m.d.sync += row.eq(row + 1)

        # biases: the beat's two channels into elements 2 * pair and 2 * pair + 1
        wr = self.bias_wr
        m.d.comb += [wr.addr.eq(Cat(row, bank)),
                     wr.en.eq(Mux(taking & (index == 2), 0b11 << (2 * pair), 0))]
        for e in range(self._pes):
            m.d.comb += wr.data[e].eq(beat.data[32 * (e % 2):32 * (e % 2) + 32])
        return m
