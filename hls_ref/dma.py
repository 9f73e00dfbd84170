"""Reference model of the DMA requests: which beats and bursts a 2D-strided access moves.

A request is a two-dimensional gather (read) or scatter (write) of byte segments::

    for o in range(outer_count):
        for i in range(inner_count):
            seg_bytes bytes at (addr + o * outer_stride + i * inner_stride) % 2**addr_width

A segment of ``n`` bytes at ``a`` covers the 64-bit beats ``a // 8`` to ``(a + n - 1) // 8``
(``docs/formats.md``); :func:`split_bursts` cuts it into AXI4 incrementing bursts that never
cross a 4 KiB boundary. :func:`dma_request` is the rule by which the accelerators turn a
strided tile access into a request (contiguous segments merged). ``hdl.dma`` implements these
requests; its tests and the socket golden model (``hls_ref.socket``) use this module.
"""

from dataclasses import dataclass

__all__ = ["BEAT_BYTES", "BOUNDARY_BYTES", "COUNT_WIDTH", "SEG_BYTES_WIDTH", "STRIDE_WIDTH",
           "DmaRequest", "dma_request", "segment_beats", "split_bursts"]

#: Bytes per beat of the 64-bit memory bus.
BEAT_BYTES = 8
#: Width of ``seg_bytes``, in bits.
SEG_BYTES_WIDTH = 16
#: Width of ``inner_count`` and ``outer_count``, in bits.
COUNT_WIDTH = 16
#: Width of ``inner_stride`` and ``outer_stride``, in bits.
STRIDE_WIDTH = 32

#: No burst may cross an address boundary of this many bytes (AXI4).
BOUNDARY_BYTES = 4096

_LANE_BITS = 3                                   # log2(BEAT_BYTES)
_PAGE_BEATS = BOUNDARY_BYTES // BEAT_BYTES       # beats between two 4 KiB boundaries


def _check_field(name, value, width=None):
    """``value`` must be a non-negative integer below ``2**width`` (any size without one)."""
    if type(value) is int and value >= 0 and (width is None or not value >> width):
        return                                    # the common case, first (compilers' loops)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if value < 0 or (width is not None and value >> width):
        bound = "at least 0" if width is None else f"between 0 and {(1 << width) - 1}"
        raise ValueError(f"{name} must be {bound}, not {value!r}")


def segment_beats(addr, seg_bytes, *, addr_width=32):
    """Return the beats a segment covers, in order.

    Parameters
    ----------
    addr : int
        Byte address of the segment's first byte.
    seg_bytes : int
        Length of the segment, in bytes.
    addr_width : int
        Byte-address width, in bits; addresses wrap modulo ``2**addr_width``.

    Returns
    -------
    list of (int, int, int)
        ``(beat, lo, hi)``: beat address (byte address // 8) and the byte lanes
        ``lo <= j < hi`` of that beat that belong to the segment.
    """
    if seg_bytes <= 0:
        return []
    beat_mask = (1 << (addr_width - _LANE_BITS)) - 1
    first = addr >> _LANE_BITS
    lo = addr % BEAT_BYTES
    end = lo + seg_bytes                     # one past the last byte, relative to beat `first`
    count = (end - 1) // BEAT_BYTES + 1
    return [((first + k) & beat_mask,
             lo if k == 0 else 0,
             end - BEAT_BYTES * k if k == count - 1 else BEAT_BYTES)
            for k in range(count)]


def split_bursts(first_beat, beats, max_burst, *, addr_width=32):
    """Cut ``beats`` consecutive beats from ``first_beat`` into incrementing bursts.

    Each burst is as long as it can be: ``max_burst`` beats, or fewer where the remaining beats
    or the next 4 KiB boundary (512 beats) end it first. So no burst crosses a 4 KiB boundary,
    and a segment takes the fewest bursts possible. The top of the address space is such a
    boundary too, so a wrapping segment is split there.

    Returns
    -------
    list of (int, int)
        ``(beat, length)``: beat address of each burst and its length in beats.
    """
    beat_mask = (1 << (addr_width - _LANE_BITS)) - 1
    bursts = []
    beat = first_beat & beat_mask
    while beats > 0:
        length = min(beats, max_burst, _PAGE_BEATS - beat % _PAGE_BEATS)
        bursts.append((beat, length))
        beat = (beat + length) & beat_mask
        beats -= length
    return bursts


@dataclass(frozen=True)
class DmaRequest:
    """A DMA request as plain integers (the reference for the hardware's request layout).

    Attributes
    ----------
    addr : int
        Byte address of the first segment.
    seg_bytes : int
        Bytes per segment.
    inner_count, inner_stride : int
        Segments per row and the distance between them, in bytes.
    outer_count, outer_stride : int
        Rows and the distance between their first segments, in bytes.
    tag : int
        Returned with every beat and the completion of a read.
    """

    addr: int
    seg_bytes: int
    inner_count: int = 1
    inner_stride: int = 0
    outer_count: int = 1
    outer_stride: int = 0
    tag: int = 0

    def __post_init__(self):
        _check_field("addr", self.addr)
        _check_field("seg_bytes", self.seg_bytes, SEG_BYTES_WIDTH)
        for name in ("inner_count", "outer_count"):
            _check_field(name, getattr(self, name), COUNT_WIDTH)
        for name in ("inner_stride", "outer_stride"):
            _check_field(name, getattr(self, name), STRIDE_WIDTH)
        _check_field("tag", self.tag)

    def fields(self):
        """Return the request as a dict of the request layout's fields."""
        return {"addr": self.addr, "seg_bytes": self.seg_bytes,
                "inner_count": self.inner_count, "inner_stride": self.inner_stride,
                "outer_count": self.outer_count, "outer_stride": self.outer_stride,
                "tag": self.tag}

    @property
    def bytes(self):
        """Bytes the request moves."""
        return self.seg_bytes * self.inner_count * self.outer_count

    @property
    def empty(self):
        """True if the request moves no data."""
        return not (self.seg_bytes and self.inner_count and self.outer_count)

    def segments(self, *, addr_width=32):
        """Return the byte address of every segment, in order."""
        if self.empty:
            return []
        mask = (1 << addr_width) - 1
        return [(self.addr + o * self.outer_stride + i * self.inner_stride) & mask
                for o in range(self.outer_count) for i in range(self.inner_count)]

    def beats(self, *, addr_width=32):
        """Return every beat of the request, in order, as ``(beat, lo, hi, seg_last, last)``."""
        beats = []
        for addr in self.segments(addr_width=addr_width):
            covered = segment_beats(addr, self.seg_bytes, addr_width=addr_width)
            beats += [(beat, lo, hi, k == len(covered) - 1, False)
                      for k, (beat, lo, hi) in enumerate(covered)]
        if beats:
            beats[-1] = (*beats[-1][:4], True)
        return beats

    def beat_count(self):
        """How many beats :meth:`beats` returns, without listing them: a segment starting at
        byte lane ``lo`` covers ``(lo + seg_bytes - 1) // 8 + 1`` beats, and when both strides
        are whole beats every segment starts at the first one's lane."""
        if self.empty:
            return 0

        def covered(addr):
            return (addr % BEAT_BYTES + self.seg_bytes - 1) // BEAT_BYTES + 1
        if not (self.inner_stride % BEAT_BYTES or self.outer_stride % BEAT_BYTES):
            return self.inner_count * self.outer_count * covered(self.addr)
        return sum(covered(self.addr + o * self.outer_stride + i * self.inner_stride)
                   for o in range(self.outer_count) for i in range(self.inner_count))

    def bursts(self, max_burst, *, addr_width=32):
        """Return every burst of the request, in order, as ``(beat, length)``."""
        bursts = []
        for addr in self.segments(addr_width=addr_width):
            covered = segment_beats(addr, self.seg_bytes, addr_width=addr_width)
            bursts += split_bursts(covered[0][0], len(covered), max_burst,
                                   addr_width=addr_width)
        return bursts


def dma_request(addr, seg_bytes, inner_count, inner_stride, outer_count, outer_stride):
    """The request the accelerators issue for a 2D-strided access: back-to-back segments are
    merged (pixels into a row, rows into one block) while the merged segment still fits the
    ``seg_bytes`` field."""
    longest = (1 << SEG_BYTES_WIDTH) - 1
    if inner_count > 1 and inner_stride == seg_bytes and seg_bytes * inner_count <= longest:
        seg_bytes, inner_count = seg_bytes * inner_count, 1
    if inner_count == 1 and outer_count > 1 and outer_stride == seg_bytes and \
            seg_bytes * outer_count <= longest:
        seg_bytes, outer_count = seg_bytes * outer_count, 1
    return DmaRequest(addr, seg_bytes, inner_count, inner_stride if inner_count > 1 else 0,
                      outer_count, outer_stride if outer_count > 1 else 0)
