"""How an input column of one band sits in local-buffer words and walks through the image
register.

One loop iteration computes one output column vector: ``lanes`` vertically adjacent outputs of
a band (16; 8 in half-vector mode). With a vertical stride ``s`` those outputs read every
``s``-th input row, so an input column is stored de-interleaved into ``s`` *phases*: phase ``p``
holds the input rows ``p, p + s, p + 2s, ...`` of the band, and kernel tap ``a = s * t + p`` is
shift ``t`` of phase ``p``. Each phase is then walked like the seed's stride-1 column:

* tap 0: ``set.i`` loads ``ri[0..15]`` from two *base* words (rows 0..7 on port A, rows 8..15
  on port B), or ``seth.i`` loads ``ri[8..15]`` from one base word on port B (half-vector mode);
* tap 1: ``setsh.i`` shifts one *extras* word in behind ``ri[15]`` (port B);
* taps 2 and later: ``sh.i``.

A phase with ``T`` taps needs ``T - 1`` extra rows past the lanes. ``set.i`` keeps
``ri[16..22]``, so the extras of several phases share one word: after one phase consumed its
extras, the next phase's extras are already in ``ri[16..]`` and it needs ``sh.i`` only (no
``setsh.i``, no port-B read, no word). A 6-tall stride-2 column is then 5 words (two base words
per phase and one extras word ``[e16 e17 o16 o17 - - - -]``) instead of 6.

The image register has ``lanes + 7`` entries: one ``setsh.i`` and seven ``sh.i`` reach tap 8,
so a phase has at most 9 taps (``kernel_h <= 9 * stride_h``). Half-vector mode is used only
for phases of a single tap: a shift would move valid pixels into lanes 0..7, whose results the
program never activates.
"""

from dataclasses import dataclass

import numpy as np

from .errors import NveCompileError

__all__ = ["MAX_TAPS_PER_PHASE", "ColumnLayout", "ColumnSteps", "column_layout", "column_steps",
           "column_words"]

#: Taps one phase can have: ``set.i``, ``setsh.i`` and seven ``sh.i`` (``ri`` has 7 entries
#: past the 16 lanes).
MAX_TAPS_PER_PHASE = 9
_PIXELS = 8  # int8 pixels per 64-bit word
_LANES = 16  # MAC lanes


@dataclass(frozen=True)
class ColumnLayout:
    """The words of one stored input column (per input map) and the image-register operations
    that walk it.

    ``lanes``: useful MAC lanes = output rows of a band (16, or 8 in half-vector mode);
    ``half``: half-vector mode (``seth.i`` into ``ri[8..15]`` only); ``stride``: vertical
    stride = number of phases; ``taps[p]``: kernel taps of phase ``p``; ``words``: words per
    stored column; ``base[p]``: the base word indices of phase ``p`` (rows 0..7 and 8..15;
    one word in half-vector mode); ``extras[p]``: ``(word, position, starts)`` of phase ``p``'s
    extra rows (``None`` for a one-tap phase): they are pixels ``position ...`` of extras word
    ``word``; ``starts`` when the phase loads that word with ``setsh.i``.
    """

    lanes: int
    half: bool
    stride: int
    taps: tuple
    words: int
    base: tuple
    extras: tuple

    @property
    def phases(self):
        """The phases that hold at least one tap, in walking order."""
        return tuple(p for p in range(self.stride) if self.taps[p])

    def phase_ops(self, p):
        """The image-register operations of phase ``p``, one per tap: ``(op, port-A word,
        port-B word)`` with ``op`` one of ``set``, ``seth``, ``setsh``, ``sh`` and the word
        indices of the stored column each port reads (``None``: no read)."""
        ops = []
        for t in range(self.taps[p]):
            if t == 0:
                ops.append(("seth", None, self.base[p][0]) if self.half
                           else ("set", self.base[p][0], self.base[p][1]))
            elif t == 1 and self.extras[p][2]:
                ops.append(("setsh", None, self.extras[p][0]))
            else:
                ops.append(("sh", None, None))
        return ops

    def word_rows(self):
        """For every word, its 8 pixels as ``(phase, phase row)`` or ``None`` (zero pixel):
        phase row ``r`` of phase ``p`` is input row ``stride * (band row 0 + r) + p``."""
        rows = [[None] * _PIXELS for _ in range(self.words)]
        for p in self.phases:
            for b, word in enumerate(self.base[p]):
                rows[word] = [(p, _PIXELS * b + i) for i in range(_PIXELS)]
            if self.extras[p] is not None:
                word, position, _ = self.extras[p]
                for i in range(self.taps[p] - 1):
                    rows[word][position + i] = (p, self.lanes + i)
        return tuple(tuple(r) for r in rows)


def column_layout(kernel_h, stride_h, half, name="layer"):
    """The :class:`ColumnLayout` of a kernel ``kernel_h`` rows tall at vertical stride
    ``stride_h`` (all 16 MAC lanes, or half-vector mode with 8).

    Raises :class:`NveCompileError` naming ``name`` when a phase has more taps than the image
    register reaches, or half-vector mode is asked for a phase of several taps.
    """
    taps = tuple(len(range(p, kernel_h, stride_h)) for p in range(stride_h))
    if max(taps) > MAX_TAPS_PER_PHASE:
        raise NveCompileError(
            f"{name}: kernel height {kernel_h} at vertical stride {stride_h} needs "
            f"{max(taps)} taps in one image-register column; ri[0..22] (16 lanes + 7) reaches "
            f"{MAX_TAPS_PER_PHASE} (set.i, setsh.i, 7 x sh.i), so kernel_h <= "
            f"{MAX_TAPS_PER_PHASE * stride_h} at stride {stride_h}")
    if half and max(taps) > 1:
        raise NveCompileError(
            f"{name}: half-vector mode needs one tap per phase (kernel_h <= stride_h), not "
            f"{max(taps)}: shifts would move valid pixels into lanes 0..7")
    base, extras = [()] * stride_h, [None] * stride_h
    words = 0
    for p in range(stride_h):
        if taps[p]:
            count = 1 if half else 2
            base[p] = tuple(range(words, words + count))
            words += count
    word, position = None, _PIXELS
    for p in range(stride_h):
        need = taps[p] - 1
        if need <= 0:
            continue
        if word is not None and position + need <= _PIXELS:
            extras[p] = (word, position, False)  # already in ri[16..] after the last phase
        else:
            word, position = words, 0
            words += 1
            extras[p] = (word, 0, True)
        position += need
    return ColumnLayout(_LANES // 2 if half else _LANES, half, stride_h, taps, words,
                        tuple(base), tuple(extras))


@dataclass(frozen=True)
class ColumnSteps:
    """Which stored column kernel column ``c`` of an iteration reads.

    Iteration ``x`` (output column ``x``) needs input columns ``stride_w * x + c``,
    ``c = 0 .. kernel_w - 1``. Each iteration writes ``new`` columns (``min(stride_w,
    kernel_w)``): stored column ``j`` of iteration ``x`` is input column ``stride_w * x +
    first_new + j``. Kernel column ``c`` reads stored column ``reads[c] = (delta, j)``: column
    ``j`` written ``delta`` iterations earlier. The columns iteration 0 reads that no iteration
    writes (``delta`` > ``x``) are written once by the init part.
    """

    kernel_w: int
    stride_w: int
    new: int
    first_new: int
    reads: tuple

    @property
    def max_delta(self):
        """Iterations between the write of a column and its last reading iteration."""
        return max(d for d, _ in self.reads)

    def input_column(self, x_w, j):
        """The (padded) input column of stored column ``j`` written by iteration ``x_w``."""
        return self.stride_w * x_w + self.first_new + j

    def init_columns(self):
        """``(x_w, j)`` of the stored columns the init part writes (``x_w < 0``), in input
        column order."""
        out = [(x_w, j) for x_w in range(-self.max_delta, 0) for j in range(self.new)
               if self.input_column(x_w, j) >= 0]
        return tuple(sorted(out, key=lambda xj: self.input_column(*xj)))


def column_steps(kernel_w, stride_w):
    """The :class:`ColumnSteps` of a kernel ``kernel_w`` columns wide at horizontal stride
    ``stride_w`` (columns between the strides are never stored when ``stride_w > kernel_w``)."""
    new = min(stride_w, kernel_w)
    first_new = kernel_w - new
    reads = []
    for c in range(kernel_w):
        delta = -((c - first_new) // stride_w) if c < first_new else 0
        reads.append((delta, c - first_new + delta * stride_w))
    return ColumnSteps(kernel_w, stride_w, new, first_new, tuple(reads))


def column_words(padded, layout, first_row):
    """The stored-column words of one band: uint64 ``[maps, columns, layout.words]``.

    ``padded``: int8 ``[maps, rows, columns]``, the padded input (rows past its end read as
    zero); ``first_row``: the band's first output row. Word pixel ``k`` is byte ``k`` (little
    endian), as ``hls_ref.nve.isa.pixels_to_word`` packs it.
    """
    maps, rows, cols = padded.shape
    index = np.full((layout.words, _PIXELS), rows, dtype=np.int64)  # row `rows` is zero
    for w, pixels in enumerate(layout.word_rows()):
        for k, ref in enumerate(pixels):
            if ref is not None:
                p, r = ref
                row = layout.stride * (first_row + r) + p
                index[w, k] = row if row < rows else rows
    extended = np.concatenate([padded, np.zeros((maps, 1, cols), padded.dtype)], axis=1)
    gathered = extended[:, index, :]  # [maps, words, 8, cols]
    pixels = np.ascontiguousarray(gathered.transpose(0, 3, 1, 2)).astype(np.int8)
    return pixels.view("<u8").reshape(maps, cols, layout.words)
