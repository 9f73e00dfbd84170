"""The catalogue of formal proofs; ``python -m sim.proofs`` (``make formal``) runs them all.

The ST multiplier is proven equal to the arithmetic specification, written here from the
configuration table alone (:meth:`hls_ref.Precision.pairs`), for every pair of 16-bit operands,
in two steps per configuration:

1. SMT (SymbiYosys + Yices), :class:`STDecompositionSpec`: the RTL, cut at its sixteen 5x5
   nibble products, sums exactly the nibble products that the table's sub-words decompose into,
   at the right weights, and feeds each the right sign-extended nibbles. Only adders remain for
   the solver, so each proof takes seconds. (A direct 16x16 equivalence of two multiplier
   structures is out of reach of SAT-based solvers in any useful time: 8x8 already takes
   minutes.)
2. Exact arithmetic, :func:`check_decomposition`: the nibble decomposition equals the table's
   sum of sub-word products, as a bilinear identity (exhaustive over all 16-bit words for the
   sub-word values, exact integer coefficients for the products).

The four-block DSP build (``multiplier="dsp4"``) is proven the same way: :class:`STUnitsSpec`
cuts it at its 9x9 unit products, and :func:`check_byte_decomposition` checks its byte
decomposition exactly. The two-block build (``multiplier="dsp2"``): :class:`STWideUnitsSpec`
cuts it at its two 18x18 unit products and shows that it feeds each unit its lanes' sub-words
(a pair packed at the offset :func:`hdl.st_multiplier.pair_shift` gives) and adds the products,
or the pair sums read out of them, of the units in use; :func:`check_wide_units` checks
exactly that every lane goes to one unit and that the read-out of a packed pair's product is
the pair's sum for every value of its four sub-words. The one-block build
(``multiplier="dsp1"``, the two-block plan with its second unit built from LUT nibble products):
:class:`STHybridUnitsSpec` cuts it at its DSP product and at those nibble products, and
:func:`check_hybrid_units` checks the plan as :func:`check_wide_units` does and the nibble
decomposition of the second unit's lanes as :func:`check_decomposition` does.

The nibble products themselves (shift-and-add, 5x5 signed) are proven by
:class:`NibbleProductSpec`. Undefined configuration codes and the single-configuration (plain
product) builds are proven end to end by :class:`STMultiplierSpec`.
"""

import argparse
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import (
    Assert,
    Assume,
    Const,
    Elaboratable,
    Module,
    ResetSignal,
    Signal,
    Value,
    signed,
)
from amaranth.lib.wiring import In

from hdl.pe import ProcessingElement
from hdl.st_multiplier import (
    LUT_UNITS,
    UNIT_OPERAND_WIDTH,
    WIDE_OPERAND_WIDTH,
    STMultiplier,
    byte_units,
    nibble_product,
    pair_shift,
    wide_units,
)
from hls_ref.precision import OPERAND_WIDTH, Precision
from hls_ref.st import signed_field

from .formal import prove, report

__all__ = [
    "NibbleProductSpec",
    "STDecompositionSpec",
    "STHybridUnitsSpec",
    "STMultiplierSpec",
    "STUnitsSpec",
    "STWideUnitsSpec",
    "StreamContractSpec",
    "all_identities",
    "all_proofs",
    "byte_decomposition",
    "check_byte_decomposition",
    "check_decomposition",
    "check_hybrid_units",
    "check_wide_units",
    "lane_decomposition",
    "main",
    "nibble_decomposition",
    "run_proof",
]

_NIBBLE = 4
_NIBBLES = OPERAND_WIDTH // _NIBBLE


def st_specification(a, b, precision):
    """The ST result of operands ``a`` and ``b`` as an Amaranth expression: the sum of the
    signed sub-word products that the configuration table pairs."""
    return sum(a[a_lsb:a_lsb + a_width].as_signed() * b[b_lsb:b_lsb + b_width].as_signed()
               for (a_lsb, a_width), (b_lsb, b_width) in precision.pairs())


def _nibble(word, index, is_signed):
    """Nibble ``index`` of ``word``, signed or not."""
    value = word[_NIBBLE * index:_NIBBLE * (index + 1)]
    return value.as_signed() if is_signed else value


def nibble_decomposition(precision):
    """Decompose a configuration into nibble products, from its pairs alone (see
    :func:`lane_decomposition`, over all its lanes)."""
    return lane_decomposition(precision.pairs())


def lane_decomposition(lanes):
    """Decompose ST lanes (``((a_lsb, a_width), (b_lsb, b_width))``) into nibble products.

    Every sub-word is a sum of nibbles ``x_i * 16**(i - lsb/4)`` where the top nibble is signed
    and the others unsigned. The ST result is then ``sum(x_i * y_j * 2**weight_ij)`` over the
    returned pairs.

    Returns
    -------
    (dict, set of int, set of int)
        ``{(i, j): weight_in_bits}``, the signed ``A`` nibbles, the signed ``B`` nibbles.
    """
    weights, signed_a, signed_b = {}, set(), set()
    for (a_lsb, a_width), (b_lsb, b_width) in lanes:
        a_nibbles = range(a_lsb // _NIBBLE, (a_lsb + a_width) // _NIBBLE)
        b_nibbles = range(b_lsb // _NIBBLE, (b_lsb + b_width) // _NIBBLE)
        signed_a.add(max(a_nibbles))
        signed_b.add(max(b_nibbles))
        for i in a_nibbles:
            for j in b_nibbles:
                weights[(i, j)] = _NIBBLE * (i + j) - a_lsb - b_lsb
    return weights, signed_a, signed_b


def check_decomposition(precision, product_width, lanes=None):
    """Check exactly that :func:`nibble_decomposition` equals the specification; return a list
    of the failures (empty when it holds). With ``lanes`` (some of the configuration's), that
    :func:`lane_decomposition` of those lanes equals the sum of their products.

    Both sides are bilinear forms in the nibble values, so they are equal when (1) every
    sub-word's signed value equals its nibble sum, checked for all 2**16 operand words, and
    (2) their coefficients agree, compared as exact integers. (3) The specification's extreme
    values must fit a signed ``product_width``-bit result.
    """
    failures = []
    if lanes is None:
        lanes = precision.pairs()
        weights, signed_a, signed_b = nibble_decomposition(precision)
    else:
        weights, signed_a, signed_b = lane_decomposition(lanes)
    words = np.arange(1 << OPERAND_WIDTH, dtype=np.int64)

    def nibble(word, index, is_signed):
        return signed_field(word, _NIBBLE * index, _NIBBLE) if is_signed else \
            (word >> (_NIBBLE * index)) & 0xF

    spec = defaultdict(int)  # coefficient of x_i * y_j in the specification
    for (a_lsb, a_width), (b_lsb, b_width) in lanes:
        for lsb, width, signed_set in ((a_lsb, a_width, signed_a), (b_lsb, b_width, signed_b)):
            nibbles = range(lsb // _NIBBLE, (lsb + width) // _NIBBLE)
            total = sum(nibble(words, i, i in signed_set) << (_NIBBLE * i - lsb)
                        for i in nibbles)
            if not np.array_equal(total, signed_field(words, lsb, width)):
                failures.append(f"bits [{lsb + width - 1}:{lsb}] are not their nibble sum")
        for i in range(a_lsb // _NIBBLE, (a_lsb + a_width) // _NIBBLE):
            for j in range(b_lsb // _NIBBLE, (b_lsb + b_width) // _NIBBLE):
                spec[(i, j)] += 1 << (_NIBBLE * i - a_lsb + _NIBBLE * j - b_lsb)
    if dict(spec) != {key: 1 << weight for key, weight in weights.items()}:
        failures.append("coefficients of the decomposition differ from the specification")
    largest = precision.lanes * (1 << (precision.act_bits - 1)) * (1 << (precision.weight_bits - 1))
    smallest = -precision.lanes * (1 << (precision.act_bits - 1)) * \
        ((1 << (precision.weight_bits - 1)) - 1)
    if not -(1 << (product_width - 1)) <= smallest <= largest < 1 << (product_width - 1):
        failures.append(f"results do not fit {product_width} bits")
    return failures


class _NibbleCutMultiplier(STMultiplier):
    """An ST multiplier whose nibble products are replaced by free values ``free[(i, j)]``,
    asserting on the way that each product's operands are the expected extended nibbles (and
    that pairs outside the configuration get a zero operand, standing for a zero product)."""

    def __init__(self, *, free, operands, **kwargs):
        super().__init__(**kwargs)
        self._nibble_free, self._nibble_operands = free, operands

    def _nibble_product(self, m, i, j, a_ext, b_ext):
        if (i, j) in self._nibble_operands:
            expected_a, expected_b = self._nibble_operands[(i, j)]
            m.d.comb += [Assert(a_ext == expected_a), Assert(b_ext == expected_b)]
            return self._nibble_free[(i, j)]
        # A pair the configuration does not use must be fed a zero weight nibble; its
        # product is then 0 (NibbleProductSpec proves the product circuit).
        m.d.comb += Assert(b_ext == 0)
        return Const(0, signed(2 * (_NIBBLE + 1)))


class _CutSpec(Elaboratable):
    """Common part of the proof harnesses that cut the multiplier built for ``precisions`` at
    its products and run it in the constant configuration ``precision``."""

    def __init__(self, precision, precisions=tuple(Precision)):
        self.precision = precision
        self.precisions = tuple(precisions)

    def _drive(self, m, dut, a, b):
        m.d.comb += [
            dut.i.valid.eq(1),
            dut.o.ready.eq(1),
            dut.i.payload.a.eq(a),
            dut.i.payload.b.eq(b),
            dut.i.payload.precision.eq(self.precision),
        ]

    def _cut_units(self, m, cut_class, plan, operand_width):
        """Drive ``cut_class`` (a multiplier cut at its DSP units, one per entry of ``plan``)
        with free operands; return ``(dut, free unit products)``."""
        a = AnyConst(OPERAND_WIDTH)
        b = AnyConst(OPERAND_WIDTH)
        free = [AnyConst(signed(2 * operand_width)) for _ in plan]
        m.submodules.dut = dut = cut_class(free=free, plan=plan, a=a, b=b,
                                           precisions=self.precisions, stages=0)
        self._drive(m, dut, a, b)
        return dut, free


class STDecompositionSpec(_CutSpec):
    """Proof harness: the multiplier, cut at its nibble products, computes
    ``sum(q_ij * 2**weight_ij)`` (modulo ``2**product_width``) of the free products ``q_ij``
    that :func:`nibble_decomposition` names for ``precision``, feeds each product the right
    extended nibbles, and ignores every other product. With :func:`check_decomposition`, this
    proves the multiplier equal to the specification for every operand pair."""

    def elaborate(self, platform):
        m = Module()
        a = AnyConst(OPERAND_WIDTH)
        b = AnyConst(OPERAND_WIDTH)
        free = {(i, j): AnyConst(signed(2 * (_NIBBLE + 1)))
                for i in range(_NIBBLES) for j in range(_NIBBLES)}
        weights, signed_a, signed_b = nibble_decomposition(self.precision)
        operands = {(i, j): (_nibble(a, i, i in signed_a), _nibble(b, j, j in signed_b))
                    for (i, j) in weights}
        m.submodules.dut = dut = _NibbleCutMultiplier(
            free=free, operands=operands, precisions=self.precisions, stages=0)
        self._drive(m, dut, a, b)
        expected = sum(free[key] << weight for key, weight in weights.items())
        m.d.comb += Assert(dut.o.payload.product == expected[:dut.product_width].as_signed())
        return m


def byte_decomposition(precision):
    """Decompose a configuration into products of at most 8x8 bits, from its pairs alone.

    A 16-bit sub-word is its signed high byte times 256 plus its unsigned low byte; narrower
    sub-words are one signed piece. The ST result is then ``sum(x * y * 2**weight)`` over the
    returned pieces.

    Returns
    -------
    dict
        ``{((a_lsb, a_width, a_signed), (b_lsb, b_width, b_signed)): weight_in_bits}``.
    """
    def pieces(lsb, width):
        if width == 16:
            return [((lsb, 8, False), 0), ((lsb + 8, 8, True), 8)]
        return [((lsb, width, True), 0)]

    weights = {}
    for (a_lsb, a_width), (b_lsb, b_width) in precision.pairs():
        for a_piece, a_offset in pieces(a_lsb, a_width):
            for b_piece, b_offset in pieces(b_lsb, b_width):
                weights[(a_piece, b_piece)] = a_offset + b_offset
    return weights


def check_byte_decomposition(precision, product_width, precisions=tuple(Precision)):
    """Check exactly that :func:`byte_decomposition` equals the specification and that the
    DSP build for ``precisions`` assigns each of its pieces to exactly one unit, at its
    weight; return a list of the failures (empty when it holds).

    As in :func:`check_decomposition`, both sides are bilinear forms: every sub-word's signed
    value must equal the weighted sum of its pieces for all 2**16 operand words, and every
    pair of pieces of a lane must appear once, at the sum of their offsets."""
    failures = []
    words = np.arange(1 << OPERAND_WIDTH, dtype=np.int64)
    weights = byte_decomposition(precision)

    def piece_value(piece):
        lsb, width, is_signed = piece
        return signed_field(words, lsb, width) if is_signed else (words >> lsb) & ((1 << width) - 1)

    for (a_lsb, a_width), (b_lsb, b_width) in precision.pairs():
        for lsb, width, index in ((a_lsb, a_width, 0), (b_lsb, b_width, 1)):
            own = {key[index] for key in weights if lsb <= key[index][0] < lsb + width}
            total = sum(piece_value(piece) << (piece[0] - lsb) for piece in own)
            if not np.array_equal(total, signed_field(words, lsb, width)):
                failures.append(f"bits [{lsb + width - 1}:{lsb}] are not their piece sum")
    assigned = [slot for slot in byte_units(precisions)[precision] if slot is not None]
    if sorted(((a, b), w) for a, b, w in assigned) != sorted(weights.items()):
        failures.append("the DSP units do not compute each piece once at its weight")
    if any(max(a[1], b[1]) + 1 > UNIT_OPERAND_WIDTH for (a, b) in weights):
        failures.append(f"a piece does not fit a {UNIT_OPERAND_WIDTH}-bit unit operand")
    largest = precision.lanes * (1 << (precision.act_bits - 1)) * (1 << (precision.weight_bits - 1))
    if not largest < 1 << (product_width - 1):
        failures.append(f"results do not fit {product_width} bits")
    return failures


class _UnitCutMultiplier(STMultiplier):
    """A DSP-built ST multiplier whose unit products are replaced by free values, asserting on
    the way that unit ``k`` is fed the operands of piece ``pieces[k]`` (or a zero weight
    operand, standing for a zero product, when ``pieces[k]`` is None)."""

    def __init__(self, *, free, plan, a, b, **kwargs):
        super().__init__(multiplier="dsp4", **kwargs)
        self._free, self._pieces, self._a, self._b = free, plan, a, b

    def _unit_product(self, m, k, x, y):
        if self._pieces[k] is None:
            m.d.comb += Assert(y == 0)
            return Const(0, signed(2 * UNIT_OPERAND_WIDTH))

        def field(word, lsb, width, is_signed):
            value = word[lsb:lsb + width]
            return value.as_signed() if is_signed else value

        a_piece, b_piece, _ = self._pieces[k]
        m.d.comb += [Assert(x == field(self._a, *a_piece)), Assert(y == field(self._b, *b_piece))]
        return self._free[k]


class STUnitsSpec(_CutSpec):
    """Proof harness: the DSP-built multiplier, cut at its unit products ``q_k``, computes
    ``sum(q_k * 2**weight_k)`` (modulo ``2**product_width``) for ``precision``, feeding each
    unit the operands of the piece :func:`hdl.st_multiplier.byte_units` gives it.
    :func:`check_byte_decomposition` shows those pieces and weights to be exactly
    :func:`byte_decomposition`, which it shows equal to the specification."""

    def elaborate(self, platform):
        m = Module()
        pieces = byte_units(self.precisions)[self.precision]
        dut, free = self._cut_units(m, _UnitCutMultiplier, pieces, UNIT_OPERAND_WIDTH)
        expected = sum(free[k] << piece[2] for k, piece in enumerate(pieces)
                       if piece is not None)
        m.d.comb += Assert(dut.o.payload.product == expected[:dut.product_width].as_signed())
        return m


def _pair_sum(product, shift):
    """The specification's read-out of a packed pair's product (see
    :func:`hdl.st_multiplier.pair_shift`): ``product + 2**(shift - 1)`` rounds the cross term
    below bit ``shift`` away, and the ``shift`` bits above it are the pair's sum, signed.
    ``product`` is an Amaranth value (the harness) or a numpy array (the exact check)."""
    rounded = (product + (1 << (shift - 1))) >> shift
    if isinstance(rounded, np.ndarray):
        low = rounded & ((1 << shift) - 1)
        return low - ((low >> (shift - 1)) << shift)
    return rounded[:shift].as_signed()


def check_wide_units(precision, product_width, precisions=tuple(Precision)):
    """Check exactly that the two-block build for ``precisions`` computes ``precision``:
    return a list of the failures (empty when it holds).

    (1) :func:`hdl.st_multiplier.wide_units` gives every lane of the configuration to exactly
    one unit, at most two per unit; (2) every operand fits the unit's signed
    :data:`~hdl.st_multiplier.WIDE_OPERAND_WIDTH` bits; (3) for a unit with two lanes, the
    read-out of the product of the packed operands (:func:`_pair_sum`) equals the sum of the
    lanes' products for every value of the four sub-words (exhaustive); (4) the results fit a
    signed ``product_width``-bit value. With :class:`STWideUnitsSpec` (the hardware feeds the
    units these operands and adds these terms), this proves the build equal to the table."""
    failures = []
    units = wide_units(precisions)[precision]
    assigned = sorted(lane for unit in units if unit is not None for lane in unit)
    if assigned != sorted(precision.pairs()) or any(
            unit is not None and len(unit) > 2 for unit in units):
        failures.append("the units do not compute each lane once")
    limit = 1 << (WIDE_OPERAND_WIDTH - 1)
    for unit in (u for u in units if u is not None):
        if len(unit) == 1:
            ((_, a_width), (_, b_width)), = unit
            if max(a_width, b_width) > WIDE_OPERAND_WIDTH:
                failures.append(f"a sub-word does not fit a {WIDE_OPERAND_WIDTH}-bit operand")
            continue
        (_, a_width), (_, b_width) = unit[0]
        shift = pair_shift(a_width, b_width)
        a = np.arange(-(1 << (a_width - 1)), 1 << (a_width - 1), dtype=np.int64)
        b = np.arange(-(1 << (b_width - 1)), 1 << (b_width - 1), dtype=np.int64)
        a0, a1, b0, b1 = (v.ravel() for v in np.meshgrid(a, a, b, b, indexing="ij"))
        x, y = a0 + (a1 << shift), b1 + (b0 << shift)
        if not all(-limit <= v.min() and v.max() < limit for v in (x, y)):
            failures.append(f"a packed pair does not fit a {WIDE_OPERAND_WIDTH}-bit operand")
        if not np.array_equal(_pair_sum(x * y, shift), a0 * b0 + a1 * b1):
            failures.append("a packed pair's read-out is not the pair's sum")
    largest = precision.lanes * (1 << (precision.act_bits - 1)) * (1 << (precision.weight_bits - 1))
    if not largest < 1 << (product_width - 1):
        failures.append(f"results do not fit {product_width} bits")
    return list(dict.fromkeys(failures))   # each failure once, whichever units share it


class _WideCutMultiplier(STMultiplier):
    """A two-block ST multiplier whose unit products are replaced by free values, asserting on
    the way that each unit in use is fed its lanes' sub-words (one lane: the two sub-words; two
    lanes: both packed at their offset). A unit the configuration leaves idle gets a free
    product too, which the result must not depend on."""

    def __init__(self, *, free, plan, a, b, multiplier="dsp2", **kwargs):
        super().__init__(multiplier=multiplier, **kwargs)
        self._free, self._units, self._a, self._b = free, plan, a, b

    def _unit_product(self, m, k, x, y):
        unit = self._units[k]
        if unit is not None:
            expected_x, expected_y = _packed_operands(unit, self._a, self._b)
            m.d.comb += [Assert(x == expected_x), Assert(y == expected_y)]
        return self._free[k]


def _packed_operands(unit, a, b):
    """The specification's unit operands: a lane's signed sub-words, or two lanes'
    ``(a0 + a1 * 2**s, b1 + b0 * 2**s)``."""
    def sub(word, lsb, width):
        return word[lsb:lsb + width].as_signed()

    if len(unit) == 1:
        ((a_lsb, a_width), (b_lsb, b_width)), = unit
        return sub(a, a_lsb, a_width), sub(b, b_lsb, b_width)
    ((a0, a_width), (b0, b_width)), ((a1, _), (b1, _)) = unit
    shift = pair_shift(a_width, b_width)
    return (sub(a, a0, a_width) + sub(a, a1, a_width) * (1 << shift),
            sub(b, b1, b_width) + sub(b, b0, b_width) * (1 << shift))


class STWideUnitsSpec(_CutSpec):
    """Proof harness: the two-block multiplier, cut at its unit products ``q_k``, computes the
    sum over the units in use of ``q_k`` (one lane) or the pair sum read out of ``q_k`` (two
    lanes, :func:`_pair_sum`), modulo ``2**product_width``, for ``precision``, feeding each unit
    the operands of the lanes :func:`hdl.st_multiplier.wide_units` gives it.
    :func:`check_wide_units` shows those lanes, operands and read-outs to equal the
    specification."""

    def elaborate(self, platform):
        m = Module()
        units = wide_units(self.precisions)[self.precision]
        dut, free = self._cut_units(m, _WideCutMultiplier, units, WIDE_OPERAND_WIDTH)
        terms = []
        for k, unit in enumerate(units):
            if unit is None:
                continue
            if len(unit) == 1:
                terms.append(free[k])
            else:
                (_, a_width), (_, b_width) = unit[0]
                terms.append(_pair_sum(free[k], pair_shift(a_width, b_width)))
        expected = sum(terms)
        m.d.comb += Assert(dut.o.payload.product == expected[:dut.product_width].as_signed())
        return m


class _HybridCutMultiplier(_WideCutMultiplier):
    """A one-block ST multiplier cut at its DSP unit's product (as :class:`_WideCutMultiplier`)
    and at its LUT unit's nibble products, which are replaced by the free values
    ``nibble_free[(i, j)]``, asserting that each is fed the expected extended nibbles
    ``nibble_operands[(i, j)]`` (a pair outside them: a zero weight nibble, a zero product)."""

    def __init__(self, *, nibble_free, nibble_operands, **kwargs):
        super().__init__(multiplier="dsp1", **kwargs)
        self._nibble_free, self._nibble_operands = nibble_free, nibble_operands

    _nibble_product = _NibbleCutMultiplier._nibble_product


def check_hybrid_units(precision, product_width, precisions=tuple(Precision)):
    """Check exactly that the one-block build for ``precisions`` computes ``precision``: the
    two-block plan it shares (:func:`check_wide_units`) and, for the lanes of its LUT units,
    their nibble decomposition (:func:`check_decomposition` over those lanes). Returns a list
    of the failures (empty when it holds)."""
    failures = check_wide_units(precision, product_width, precisions)
    units = wide_units(precisions)[precision]
    for k in LUT_UNITS["dsp1"]:
        if units[k] is not None:
            failures += check_decomposition(precision, product_width, lanes=units[k])
    return list(dict.fromkeys(failures))


class STHybridUnitsSpec(_CutSpec):
    """Proof harness: the one-block multiplier, cut at its DSP unit's product ``q`` and at its
    LUT unit's nibble products ``q_ij``, computes the DSP unit's term (``q``, or the pair sum
    read out of it) plus ``sum(q_ij * 2**weight_ij)`` over :func:`lane_decomposition` of the
    LUT unit's lanes, modulo ``2**product_width``, for ``precision``, feeding each product the
    operands the plan (:func:`hdl.st_multiplier.wide_units`) gives it. With
    :func:`check_hybrid_units`, this proves the build equal to the specification."""

    def elaborate(self, platform):
        m = Module()
        units = wide_units(self.precisions)[self.precision]
        lut_units = LUT_UNITS["dsp1"]
        a = AnyConst(OPERAND_WIDTH)
        b = AnyConst(OPERAND_WIDTH)
        free = [AnyConst(signed(2 * WIDE_OPERAND_WIDTH)) for _ in units]
        nibble_free = {(i, j): AnyConst(signed(2 * (_NIBBLE + 1)))
                       for i in range(_NIBBLES) for j in range(_NIBBLES)}
        terms, operands = [], {}
        for k, unit in enumerate(units):
            if unit is None:
                continue
            if k in lut_units:
                weights, signed_a, signed_b = lane_decomposition(unit)
                operands.update({(i, j): (_nibble(a, i, i in signed_a),
                                          _nibble(b, j, j in signed_b)) for (i, j) in weights})
                terms += [nibble_free[key] << weight for key, weight in weights.items()]
            elif len(unit) == 1:
                terms.append(free[k])
            else:
                (_, a_width), (_, b_width) = unit[0]
                terms.append(_pair_sum(free[k], pair_shift(a_width, b_width)))
        dsp_plan = [None if k in lut_units else unit for k, unit in enumerate(units)]
        m.submodules.dut = dut = _HybridCutMultiplier(
            free=free, plan=dsp_plan, a=a, b=b, nibble_free=nibble_free,
            nibble_operands=operands, precisions=self.precisions, stages=0)
        self._drive(m, dut, a, b)
        expected = sum(terms)
        m.d.comb += Assert(dut.o.payload.product == expected[:dut.product_width].as_signed())
        return m


class STMultiplierSpec(Elaboratable):
    """Proof harness, end to end: for every operand pair, the (combinational) ST multiplier
    built for ``precisions`` returns the specification of ``precision``; with
    ``precision=None``, every code that is not a supported configuration returns 0.

    Solvers prove this directly only for small sub-words or single-configuration builds; the
    multi-configuration builds are proven through :class:`STDecompositionSpec`."""

    def __init__(self, precision, precisions=tuple(Precision), *, multiplier="lut"):
        self.precision = precision
        self.precisions = tuple(precisions)
        self.multiplier = multiplier

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = STMultiplier(precisions=self.precisions, stages=0,
                                              multiplier=self.multiplier)
        a = AnyConst(OPERAND_WIDTH)
        b = AnyConst(OPERAND_WIDTH)
        # A constant configuration lets synthesis fold away the masks of the other ones, so
        # the solver sees one configuration's datapath (the hardware changes it per cycle;
        # the proofs cover each value it can take).
        code = AnyConst(3) if self.precision is None else self.precision.value
        m.d.comb += [
            dut.i.valid.eq(1),
            dut.o.ready.eq(1),
            dut.i.payload.a.eq(a),
            dut.i.payload.b.eq(b),
            Value.cast(dut.i.payload.precision).eq(code),
        ]
        if self.precision is None:
            for p in self.precisions:
                m.d.comb += Assume(code != p.value)
            m.d.comb += Assert(dut.o.payload.product == 0)
        else:
            m.d.comb += Assert(dut.o.payload.product == st_specification(a, b, self.precision))
        m.d.comb += [Assert(dut.o.valid), Assert(dut.i.ready)]
        return m


class NibbleProductSpec(Elaboratable):
    """Proof harness: :func:`hdl.st_multiplier.nibble_product` equals the product of its
    signed 5-bit operands, for all of them (the part of the multiplier that
    :class:`STDecompositionSpec` cuts away)."""

    def elaborate(self, platform):
        m = Module()
        a = AnyConst(signed(_NIBBLE + 1))
        b = AnyConst(signed(_NIBBLE + 1))
        product = nibble_product(m, a, b, name="product")
        m.d.comb += Assert(product == a * b)
        return m


class StreamContractSpec(Elaboratable):
    """Proof harness (k-induction): the output stream of ``dut`` keeps the Amaranth stream
    contract under any input and any back-pressure: once ``valid`` is high it stays high, with
    the same payload, until ``ready`` takes the transfer. Inputs are driven by ``AnySeq``."""

    def __init__(self, factory):
        self.factory = factory

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.factory()
        for _, member, value in dut.signature.flatten(dut):
            if member.flow == In:
                m.d.comb += Value.cast(value).eq(AnySeq(len(Value.cast(value))))
        payload = Value.cast(dut.o.payload)
        held = Signal()        # the previous cycle offered a transfer that was not taken
        last_payload = Signal.like(payload)
        m.d.sync += [held.eq(dut.o.valid & ~dut.o.ready), last_payload.eq(payload)]
        with m.If(held & ~ResetSignal()):
            m.d.comb += [Assert(dut.o.valid), Assert(payload == last_payload)]
        return m


_LOW = (Precision.A8W8, Precision.A8W4, Precision.A4W4)
#: The multi-configuration builds that are proven: name -> configurations.
_BUILDS = (("st", tuple(Precision)), ("st_low", _LOW))


def all_proofs():
    """Return ``{name: (harness factory, prove() options)}`` for every SMT proof."""
    proofs = {"nibble_product": (NibbleProductSpec, {})}
    for build, precisions in _BUILDS:
        for p in precisions:
            # Kept hierarchical: flattening lets synthesis re-associate the adders, which
            # makes the solver's work several times longer.
            proofs[f"{build}_{p.geometry}"] = (
                partial(STDecompositionSpec, p, precisions), {"flatten": False})
        proofs[f"{build}_undefined_codes"] = (partial(STMultiplierSpec, None, precisions), {})
        for p in precisions:
            proofs[f"{build}_dsp_{p.geometry}"] = (partial(STUnitsSpec, p, precisions), {})
        proofs[f"{build}_dsp_undefined_codes"] = (
            partial(STMultiplierSpec, None, precisions, multiplier="dsp4"), {})
        for p in precisions:
            proofs[f"{build}_dsp2_{p.geometry}"] = (partial(STWideUnitsSpec, p, precisions), {})
        proofs[f"{build}_dsp2_undefined_codes"] = (
            partial(STMultiplierSpec, None, precisions, multiplier="dsp2"), {})
        for p in precisions:
            proofs[f"{build}_dsp1_{p.geometry}"] = (
                partial(STHybridUnitsSpec, p, precisions), {})
        proofs[f"{build}_dsp1_undefined_codes"] = (
            partial(STMultiplierSpec, None, precisions, multiplier="dsp1"), {})
    # The output stream contract of the pipelined cores (k-induction).
    proofs["st_stream_contract"] = (
        partial(StreamContractSpec, partial(STMultiplier, stages=3, user_width=2)),
        {"mode": "prove", "depth": 6})
    proofs["pe_stream_contract"] = (
        partial(StreamContractSpec, partial(ProcessingElement, stages=2)),
        {"mode": "prove", "depth": 6})
    # Single-configuration builds are plain products: proven end to end.
    for p in Precision:
        proofs[f"st_fixed_{p.geometry}"] = (partial(STMultiplierSpec, p, (p,)), {})
    return proofs


def run_proof(name):
    """Run the proof ``name`` of :func:`all_proofs`; return its :class:`ProofResult`."""
    factory, options = all_proofs()[name]
    return prove(name, factory(), **options)


def all_identities():
    """Return ``{name: failures}`` for the exact decomposition checks of every configuration."""
    identities = {}
    for p in Precision:
        identities[f"identity_{p.geometry}"] = check_decomposition(p, p.product_bits)
    for build, precisions in _BUILDS:
        for p in precisions:
            identities[f"identity_{build}_dsp_{p.geometry}"] = check_byte_decomposition(
                p, p.product_bits, precisions)
            identities[f"identity_{build}_dsp2_{p.geometry}"] = check_wide_units(
                p, p.product_bits, precisions)
            identities[f"identity_{build}_dsp1_{p.geometry}"] = check_hybrid_units(
                p, p.product_bits, precisions)
    return identities


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sim.proofs", description=__doc__)
    parser.add_argument("names", nargs="*", help="proofs to run (default: all)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="proofs run in parallel")
    parser.add_argument("--write-results", action="store_true",
                        help="rewrite the formal section of docs/results.md")
    args = parser.parse_args(argv)
    proofs = all_proofs()
    unknown = sorted(set(args.names) - set(proofs))
    if unknown:
        parser.error(f"unknown proofs {unknown}; known: {', '.join(proofs)}")
    names = args.names or list(proofs)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(run_proof, names))
    ok = report(results)
    if not args.names:
        for name, failures in all_identities().items():
            print(f"{'PASS' if not failures else 'FAIL':5}  {name:40} (exact check)")
            for failure in failures:
                print(f"       {failure}")
            ok = ok and not failures
    print(f"{sum(r.passed for r in results)} of {len(results)} SMT proofs passed")
    if args.write_results and not args.names:
        from .results import write_results_section

        rows = [f"| `{r.name}` | {r.status} | {r.seconds:.1f} |" for r in results]
        rows += [f"| `{name}` | {'PASS' if not failures else 'FAIL'} | exact check |"
                 for name, failures in all_identities().items()]
        write_results_section("formal", "\n".join([
            "## Formal proofs",
            "",
            "Regenerate with `python -m sim.proofs --write-results` (`make formal` runs the "
            "same proofs). SymbiYosys (yowasp) with Yices, two proofs at a time on 2 cores; "
            "what each proves is in `sim/proofs.py` and `docs/architecture.md`.",
            "",
            "| proof | status | seconds |",
            "|---|---|---:|",
            *rows]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
