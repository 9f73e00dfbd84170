"""The interface between the accelerator socket and each of its datapaths.

The socket (``hdl.accelerator``) fetches descriptors, owns the DMA, the register bank, the
status and the counters; a datapath (conv2d today) checks a descriptor, loads its operands
through the socket's DMA reader, computes and stores through its writer, and retires its
commands in list order. :class:`DatapathSignature` is that contract, seen from the datapath;
every member is a ``lib.stream`` flow or a level whose meaning is given below.
"""

from amaranth.hdl import signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.descriptor import DESCRIPTOR_BEATS, FIELDS

from ..dma import (
    BEAT_BYTES,
    dma_done_layout,
    dma_read_data_layout,
    dma_request_layout,
)

__all__ = ["ADDR_WIDTH", "TAG_DESC", "TAG_WIDTH", "DatapathSignature", "descriptor_layout",
           "dispatch_layout", "verdict_layout"]

#: Byte-address width of the external memory.
ADDR_WIDTH = 32
#: Width of the DMA reader's tags. Tag :data:`TAG_DESC` is the socket's descriptor fetch; a
#: datapath uses the others for its loads (only one datapath loads at a time).
TAG_WIDTH = 2
TAG_DESC = 0


def descriptor_layout():
    """The descriptor's fields (:data:`hls_ref.descriptor.FIELDS`) over its eight beats."""
    return data.FlexibleLayout(DESCRIPTOR_BEATS * 8 * BEAT_BYTES, {
        name: data.Field(signed(width) if is_signed else unsigned(width), 64 * beat + lsb)
        for name, beat, lsb, width, is_signed, _ in FIELDS})


def dispatch_layout():
    """A fetched descriptor handed to a datapath: its fields and its index in the list."""
    return data.StructLayout({"desc": descriptor_layout(), "index": unsigned(32)})


def verdict_layout():
    """What a datapath says when it lets go of a descriptor (``desc.ready``): ``accepted``
    (its operands are loaded and it is queued for compute; the socket fetches the next one),
    or not, with the error ``code`` that ends the list (0: the datapath stopped because of a
    write error, whose code the socket already holds)."""
    return data.StructLayout({"accepted": unsigned(1), "code": unsigned(8)})


class DatapathSignature(wiring.Signature):
    """A datapath of the socket, seen from the datapath (``Out``: driven by it).

    Every output is a register or a plain expression of registers and inputs, never a signal
    assigned under ``m.If`` or an FSM state: Icarus does not run an ``always @*`` block at
    time 0, so such a signal stays X until one of its inputs changes, and the socket ORs some
    outputs of every datapath (``busy``, ``retire``, ``mac``, ``write_error``, ``reads_busy``)
    whether or not a list uses it.

    Parameters
    ----------
    fields_width : int
        Bits a datapath derives from each read beat before the socket's read register slice
        (``rd_peek`` -> ``rd_fields``, returned with the beat in ``rd_beats``), so that its
        loaders' ready and counts start from registers. At least 1.

    Members
    -------
    desc : ``In(stream.Signature(dispatch_layout()))``
        A fetched descriptor, valid (and held) until the datapath takes it; ``verdict`` tells
        the socket what became of it in the ``ready`` cycle.
    verdict : ``Out(verdict_layout())``
        Read with ``desc.ready``.
    rd_req : ``Out(stream.Signature(dma_request_layout(32, TAG_WIDTH)))``
        Load requests (any tag but :data:`TAG_DESC`).
    rd_peek : ``In(dma_read_data_layout(TAG_WIDTH))``
        The beat the DMA reader offers, before the socket's read slice.
    rd_fields : ``Out(fields_width)``
        The datapath's fields of ``rd_peek`` (combinational).
    rd_beats : ``In(stream.Signature(...))``
        The datapath's read beats (``beat``, ``fields``), out of the read slice.
    rd_idle : ``In(1)``
        No read request is in flight and the read slice is empty.
    rd_error : ``In(1)``
        A read got an error response since the list started (or the last failed descriptor).
    reads_busy : ``Out(1)``
        Beats held inside the datapath (the reads are not over until they drain).
    wr_req, wr_data : ``Out(stream.Signature(...))``
        Store requests and their beats, to the DMA writer.
    wr_done : ``In(stream.Signature(dma_done_layout()))``
        The writer's completions.
    write_error, error_index : ``Out(1)``, ``Out(32)``
        The store of command ``error_index`` got an error response (a one-cycle pulse).
    stop : ``In(1)``
        A store failed: drop every command not yet stored and take no more.
    retire : ``Out(1)``
        A command completed (one-cycle pulse per command, in list order).
    mac : ``Out(1)``
        The PE array issues useful MACs this cycle (the ``MAC_CYCLES`` counter).
    busy : ``Out(1)``
        Commands are in the datapath (taken and not retired or dropped).
    abort : ``In(1)``
        The list ended with an error: partial sums are lost (a one-cycle pulse).
    """

    def __init__(self, *, fields_width=1):
        if not isinstance(fields_width, int) or fields_width < 1:
            raise ValueError(f"fields_width must be a positive integer, not {fields_width!r}")
        self._fields_width = fields_width
        beat = dma_read_data_layout(TAG_WIDTH)
        super().__init__({
            "desc": In(stream.Signature(dispatch_layout())),
            "verdict": Out(verdict_layout()),
            "rd_req": Out(stream.Signature(dma_request_layout(ADDR_WIDTH, TAG_WIDTH))),
            "rd_peek": In(beat),
            "rd_fields": Out(fields_width),
            "rd_beats": In(stream.Signature(data.StructLayout({
                "beat": beat, "fields": unsigned(fields_width)}))),
            "rd_idle": In(1),
            "rd_error": In(1),
            "reads_busy": Out(1),
            "wr_req": Out(stream.Signature(dma_request_layout(ADDR_WIDTH))),
            "wr_data": Out(stream.Signature(unsigned(8 * BEAT_BYTES))),
            "wr_done": In(stream.Signature(dma_done_layout())),
            "write_error": Out(1),
            "error_index": Out(32),
            "stop": In(1),
            "retire": Out(1),
            "mac": Out(1),
            "busy": Out(1),
            "abort": In(1),
        })

    @property
    def fields_width(self):
        return self._fields_width
