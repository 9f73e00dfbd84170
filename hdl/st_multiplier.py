"""The sum-together (ST) precision-scalable multiplier."""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hls_ref.precision import OPERAND_WIDTH, Precision

from .dsp import ECP5_DSP_WIDTH, PipelinedMultiplier
from .params import check_int, check_multiplier, check_precisions

__all__ = ["LUT_UNITS", "MAX_STAGES", "WIDE_OPERAND_WIDTH", "WIDE_UNITS", "STMultiplier",
           "byte_units", "nibble_product", "pair_shift", "unpack_pair", "wide_units"]

#: Largest supported number of pipeline register stages.
MAX_STAGES = 4

_NIBBLE = 4
_NIBBLES = OPERAND_WIDTH // _NIBBLE
_BYTE = 8
#: Width of a DSP unit's operands: a byte, zero- or sign-extended, or a sign-extended nibble.
UNIT_OPERAND_WIDTH = _BYTE + 1
#: Units of the two-block build (``multiplier="dsp2"``), and the width of their signed
#: operands: a whole sub-word, or a pair of sub-words packed into one operand.
WIDE_UNITS = 2
WIDE_OPERAND_WIDTH = ECP5_DSP_WIDTH
#: Units of the one-block build (``multiplier="dsp1"``) built from LUT nibble products rather
#: than a DSP block: the second unit of the two-block plan (an 8x8 or 8x4 lane, or two 4x4
#: lanes; idle at 16-bit activations).
LUT_UNITS = {"dsp1": (1,)}


def _nibble_plan(precision):
    """Describe one configuration as a masked 4x4 array of nibble products (see
    :func:`_lane_nibbles`, over all its lanes)."""
    return _lane_nibbles(precision.pairs())


def _lane_nibbles(lanes):
    """Describe ST lanes (``((a_lsb, a_width), (b_lsb, b_width))``, crossed as in
    :meth:`hls_ref.Precision.pairs`) as a masked 4x4 array of nibble products.

    With ``A = sum(a_i * 16**i)`` and ``B = sum(b_j * 16**j)`` (nibbles ``a_i``, ``b_j``), each
    lane's sub-word product times ``2**(a_lsb + b_lsb)`` is the sum of the nibble products
    ``a_i * b_j * 16**(i + j)`` over the lane's nibbles, where the top nibble of each sub-word is
    signed and the others unsigned. The crossed pairing gives every lane the same
    ``a_lsb + b_lsb``, so the ST result is the masked sum of all nibble products at their natural
    weights, shifted right by that amount.

    Returns
    -------
    (set of int, set of int, set of (int, int), int)
        Signed ``A`` nibbles, signed ``B`` nibbles, used ``(i, j)`` pairs, right shift in bits.
    """
    signed_a, signed_b, used, shifts = set(), set(), set(), set()
    for (a_lsb, a_width), (b_lsb, b_width) in lanes:
        a_nibbles = range(a_lsb // _NIBBLE, (a_lsb + a_width) // _NIBBLE)
        b_nibbles = range(b_lsb // _NIBBLE, (b_lsb + b_width) // _NIBBLE)
        signed_a.add(a_nibbles[-1])
        signed_b.add(b_nibbles[-1])
        used.update((i, j) for i in a_nibbles for j in b_nibbles)
        shifts.add(a_lsb + b_lsb)
    (shift,) = shifts
    return signed_a, signed_b, used, shift


def _byte_pieces(precision):
    """Split one configuration into products of at most 8x8 bits.

    A 16-bit sub-word is its signed high byte times 256 plus its unsigned low byte; narrower
    sub-words stay whole and signed. Each lane's product is then the sum of the products of its
    pieces, weighted by their offsets inside the sub-words, and the ST result is the sum over
    all lanes (the crossed pairing gives every lane the same sub-word offset, so no final shift
    is needed).

    Returns
    -------
    list of ((int, int, bool), (int, int, bool), int)
        ``((a_lsb, a_width, a_signed), (b_lsb, b_width, b_signed), weight_in_bits)``.
    """
    def split(lsb, width):
        if width <= _BYTE:
            return [(lsb, width, True)]
        return [(lsb + offset, _BYTE, offset + _BYTE == width)
                for offset in range(0, width, _BYTE)]

    pieces = []
    for (a_lsb, a_width), (b_lsb, b_width) in precision.pairs():
        for a_piece in split(a_lsb, a_width):
            for b_piece in split(b_lsb, b_width):
                pieces.append((a_piece, b_piece, a_piece[0] - a_lsb + b_piece[0] - b_lsb))
    return pieces


def byte_units(precisions):
    """Assign the byte pieces (see :func:`_byte_pieces`) of every configuration to DSP units.

    Unit ``k`` reads byte ``k % 2`` of ``A`` and byte ``k // 2`` of ``B`` whenever a piece
    there is free, so that most units need no operand multiplexer; the other pieces take the
    remaining units in order.

    Returns
    -------
    dict
        ``{precision: [piece or None per unit]}``, every list as long as the most pieces any
        configuration has.
    """
    plans = {p: _byte_pieces(p) for p in precisions}
    units = max(len(pieces) for pieces in plans.values())
    assignment = {}
    for precision, pieces in plans.items():
        slots = [None] * units
        spill = []
        for piece in pieces:
            (a_lsb, _, _), (b_lsb, _, _), _ = piece
            home = a_lsb // _BYTE + 2 * (b_lsb // _BYTE)
            if home < units and slots[home] is None:
                slots[home] = piece
            else:
                spill.append(piece)
        for piece in spill:
            slots[slots.index(None)] = piece
        assignment[precision] = slots
    return assignment


def pair_shift(a_width, b_width):
    """Offset, in bits, at which two signed sub-word products share one multiplication.

    ``(a0 + a1 * 2**s) * (b1 + b0 * 2**s) = a0*b1 + (a0*b0 + a1*b1) * 2**s + a1*b0 * 2**(2*s)``:
    the sum of the pair sits at bit ``s`` when the cross term below it and the sum itself each
    fit ``s`` signed bits (see :func:`unpack_pair`). ``s`` is the smallest such offset: the sum
    reaches ``2 * 2**(a_width - 1) * 2**(b_width - 1)`` (both operands at their minimum).
    """
    largest_sum = 2 << (a_width - 1 + b_width - 1)
    return largest_sum.bit_length() + 1


def unpack_pair(product, shift):
    """The pair sum ``a0*b0 + a1*b1`` out of the ``product`` of two packed operands (see
    :func:`pair_shift`): bits ``[shift, 2*shift)``, plus one when the cross term below them is
    negative (it borrowed one from them; its sign is bit ``shift - 1``), as a signed
    ``shift``-bit value. Works on Amaranth values; :mod:`sim.proofs` checks it exhaustively."""
    return (product[shift:2 * shift] + product[shift - 1])[:shift].as_signed()


def wide_units(precisions):
    """Assign the lanes (:meth:`hls_ref.Precision.pairs`) of every configuration to the
    :data:`WIDE_UNITS` 18x18 products of the two-block build.

    The lanes are split in order, as evenly as they go: one lane per unit (16- and 8-bit
    activations; a single lane leaves the second unit idle) or two, packed into one
    multiplication (4-bit activations and weights, see :func:`pair_shift`). Unit 0 takes the
    low activation slots and so the high weight slots (the crossed pairing), unit 1 the others,
    so that each unit mostly reads the same bytes in every configuration.

    Returns
    -------
    dict
        ``{precision: [tuple of lanes or None per unit]}``, a lane being
        ``((a_lsb, a_width), (b_lsb, b_width))``.
    """
    plan = {}
    for precision in precisions:
        lanes = precision.pairs()
        per_unit = -(-len(lanes) // WIDE_UNITS)
        units = [tuple(lanes[k * per_unit:(k + 1) * per_unit]) or None
                 for k in range(WIDE_UNITS)]
        for unit in units:
            if unit is None:
                continue
            widths = [max(a_width, b_width) for (_, a_width), (_, b_width) in unit]
            shift = pair_shift(precision.act_bits, precision.weight_bits)
            if len(unit) > 2 or (len(unit) == 2 and max(widths) + shift > WIDE_OPERAND_WIDTH):
                raise ValueError(f"{precision.label} does not fit {WIDE_UNITS} units")
        plan[precision] = units
    return plan


def nibble_product(m, a, b, *, name):
    """Return a signal equal to ``a * b`` for signed 5-bit ``a`` and ``b``, built from shifted
    partial products (``sum(b[t] * a << t) - b[4] * a << 4``) rather than a multiplier cell:
    synthesis would map each of these small products to a whole DSP block."""
    product = Signal(signed(2 * len(a)), name=name)
    rows = [Mux(b[t], a, 0) << t for t in range(len(b) - 1)]
    m.d.comb += product.eq(sum(rows) - (Mux(b[-1], a, 0) << (len(b) - 1)))
    return product


class STMultiplier(wiring.Component):
    """Sum-together multiplier: 1, 2 or 4 signed sub-word products of two 16-bit operands, summed.

    Each input transfer carries its own configuration, so the precision may change on any cycle.
    The arithmetic is that of :func:`hls_ref.st_product`; a configuration code that is not in
    ``precisions`` (or not defined at all) yields 0.

    With several configurations the multiplier is built from the 16 nibble products of the two
    operands, masked and sign-extended per configuration and summed at fixed weights, then shifted
    by 0, 8 or 12 bits (see :func:`_nibble_plan`). With a single configuration it is the plain
    sub-word product(s) that the configuration defines, which synthesis maps to DSP blocks: the
    fixed-precision baseline.

    With ``multiplier="dsp4"``, several configurations are built instead from four 9x9-bit
    signed products, one DSP block each (see :func:`byte_units`): each product takes a byte or
    a nibble of each operand, chosen by the configuration, and the four are summed at weights
    the configuration chooses. With ``multiplier="dsp2"`` they are built from two 18x18-bit
    signed products (see :func:`wide_units`): a whole 16x16, 16x8 or 8x8 sub-word product per
    unit, or, at 4 bits, two products packed into one multiplication (:func:`pair_shift`), so
    each DSP block does one 8-bit or two 4-bit MACs per cycle (twice the four-block build's).
    With ``multiplier="dsp1"`` the first of those units is a DSP block and the second (idle at
    16-bit activations) is built from LUT nibble products (:data:`LUT_UNITS`): one DSP block
    per multiplier, doing one 16-bit or 8-bit MAC or two 4-bit MACs per cycle, the LUTs the
    other 8-bit MAC or two 4-bit MACs. The LUT build needs no DSP block; the DSP builds need
    far less logic and no deep adder trees.

    The pipeline stalls as a whole while the output holds a transfer that is not accepted; it
    accepts one transfer per cycle otherwise.

    Parameters
    ----------
    precisions : collection of Precision or str
        Configurations the hardware supports (default: all five).
    stages : int
        Pipeline register stages from input to output, 0 (combinational) to 4. Stage 1 registers
        the output and stage 2 the nibble (or DSP) products; stage 3 registers the partial sums
        of the LUT build and the DSP operands of the DSP builds; stage 4 registers the inputs of
        the LUT build and, in the DSP builds, the DSP products at their configuration's
        weights in the logic fabric (the routing out of the DSP blocks and the weight's
        multiplexer are then a path of their own, the adders another).
    multiplier : str
        ``"lut"`` (default), ``"dsp4"``, ``"dsp2"`` or ``"dsp1"``: how several configurations
        are built (see above; :data:`hls_ref.config.PE_MULTIPLIERS`).
    user_width : int
        Width of a side-band field carried from input to output with each transfer, in bits.

    Members
    -------
    i : ``In(stream.Signature(input_layout))``
        Operands ``a`` (activations), ``b`` (weights), ``precision`` and ``user``.
    o : ``Out(stream.Signature(output_layout))``
        ``product``, a signed ``product_width``-bit value, and ``user``.
    """

    def __init__(self, *, precisions=tuple(Precision), stages=2, user_width=0,
                 multiplier="lut"):
        self._precisions = check_precisions(precisions)
        self._multiplier = check_multiplier(multiplier)
        self._stages = check_int("stages", stages, minimum=0, maximum=MAX_STAGES)
        self._user_width = check_int("user_width", user_width, minimum=0)
        self._product_width = max(p.product_bits for p in self._precisions)
        super().__init__({
            "i": In(stream.Signature(self.input_layout)),
            "o": Out(stream.Signature(self.output_layout)),
        })

    @property
    def precisions(self):
        """Supported configurations, as a tuple of :class:`Precision`."""
        return self._precisions

    @property
    def stages(self):
        """Pipeline register stages (latency in cycles)."""
        return self._stages

    @property
    def multiplier(self):
        """How several configurations are built: ``"lut"``, ``"dsp4"``, ``"dsp2"`` or
        ``"dsp1"``."""
        return self._multiplier

    @property
    def user_width(self):
        """Width of the side-band field, in bits."""
        return self._user_width

    @property
    def product_width(self):
        """Width of the signed result, in bits: enough for every supported configuration."""
        return self._product_width

    @property
    def input_layout(self):
        """Layout of an input transfer."""
        return data.StructLayout({
            "a": unsigned(OPERAND_WIDTH),
            "b": unsigned(OPERAND_WIDTH),
            "precision": Precision,
            "user": unsigned(self._user_width),
        })

    @property
    def output_layout(self):
        """Layout of an output transfer."""
        return data.StructLayout({
            "product": signed(self._product_width),
            "user": unsigned(self._user_width),
        })

    def _nibble_product(self, m, i, j, a_ext, b_ext):
        """Return the product of the sign-controlled 5-bit nibbles ``a_ext`` (of ``A`` nibble
        ``i``) and ``b_ext`` (of ``B`` nibble ``j``). The formal proofs override this to cut the
        design at the nibble products (see :mod:`sim.proofs`)."""
        return nibble_product(m, a_ext, b_ext, name=f"p{i}{j}")

    def _terms(self, m, a, b, code):
        """Return ``(terms, shift_of)``: weighted terms whose sum, shifted right by
        ``shift_of[precision]``, is the result. ``terms`` is a list of groups of
        ``(value, weight_in_bits)``."""
        if len(self._precisions) == 1:
            (precision,) = self._precisions
            selected = code == precision
            group = []
            for (a_lsb, a_width), (b_lsb, b_width) in precision.pairs():
                product = (a[a_lsb:a_lsb + a_width].as_signed()
                           * b[b_lsb:b_lsb + b_width].as_signed())
                group.append((Mux(selected, product, 0), 0))
            return [group], {precision: 0}

        plans = {p: _nibble_plan(p) for p in self._precisions}
        is_mode = {p: Signal(name=f"is_{p.label}") for p in self._precisions}
        for p, flag in is_mode.items():
            m.d.comb += flag.eq(code == p)

        def any_mode(predicate):
            flags = [is_mode[p] for p, plan in plans.items() if predicate(plan)]
            return Cat(*flags).any() if flags else 0

        groups = []
        for i in range(_NIBBLES):
            a_nib = a[_NIBBLE * i:_NIBBLE * (i + 1)]
            a_ext = Cat(a_nib, a_nib[-1] & any_mode(lambda plan, i=i: i in plan[0])).as_signed()
            group = []
            for j in range(_NIBBLES):
                used = any_mode(lambda plan, i=i, j=j: (i, j) in plan[2])
                if isinstance(used, int):
                    continue  # no supported configuration uses this nibble pair
                b_nib = b[_NIBBLE * j:_NIBBLE * (j + 1)]
                b_ext = Cat(b_nib, b_nib[-1] & any_mode(lambda plan, j=j: j in plan[1]))
                # Masking the 5-bit operand is cheaper than masking the 10-bit product.
                b_used = Mux(used, b_ext, 0).as_signed()
                group.append((self._nibble_product(m, i, j, a_ext, b_used), _NIBBLE * (i + j)))
            groups.append(group)
        return groups, {p: plan[3] for p, plan in plans.items()}

    def _unit_product(self, m, k, x, y):
        """Return the product of DSP unit ``k``'s signed operands ``x`` and ``y``, in builds
        of fewer than 3 stages (with 3, a :class:`~hdl.dsp.PipelinedMultiplier` holds the
        operand and product registers). The formal proofs, which build the multiplier
        combinationally, override this to cut the design at the DSP products."""
        product = Signal(signed(len(x) + len(y)), name=f"u{k}")
        m.d.comb += product.eq(x * y)
        return product

    def elaborate(self, platform):
        m = Module()

        advance = Signal()
        if self._stages:
            m.d.comb += advance.eq(~self.o.valid | self.o.ready)
        else:
            m.d.comb += advance.eq(self.o.ready)
        m.d.comb += self.i.ready.eq(advance)

        def stage(index, value, name, *, reset_less=True):
            """Register ``value`` when pipeline stage ``index`` is configured (data needs no
            reset; valid bits do)."""
            if self._stages < index:
                return value
            register = Signal(value.shape(), name=name, reset_less=reset_less)
            with m.If(advance):
                m.d.sync += register.eq(value)
            return register

        payload = self.i.payload
        code = Signal(Precision, name="code_in")
        m.d.comb += code.eq(payload.precision)
        side = (code, payload.user, self.i.valid)   # carried along every stage

        def stage_side(index, side):
            code, user, valid = side
            return (stage(index, code, f"code_s{index}"), stage(index, user, f"user_s{index}"),
                    stage(index, valid, f"valid_s{index}", reset_less=False))

        if self._multiplier != "lut" and len(self._precisions) > 1:
            product, side = self._unit_datapath(m, payload, side, stage, stage_side, advance)
        else:
            # Stage 4 boundary (LUT build): the inputs.
            operands = (stage(4, payload.a, "a_s4"), stage(4, payload.b, "b_s4"))
            side = stage_side(4, side)
            product, side = self._nibble_datapath(m, *operands, side, stage, stage_side)

        # Stage 1 boundary: the output.
        _, user, valid = side
        m.d.comb += [
            self.o.payload.product.eq(stage(1, product, "product_s1")),
            self.o.payload.user.eq(stage(1, user, "user_s1")),
            self.o.valid.eq(stage(1, valid, "valid_s1", reset_less=False)),
        ]
        return m

    def _nibble_datapath(self, m, a, b, side, stage, stage_side):
        """The LUT build (and the single-configuration build): nibble or plain products of
        ``a`` and ``b``, registered at stage 2, partial sums at stage 3. Returns
        ``(product, side)``."""
        groups, shift_of = self._terms(m, a, b, side[0])
        full_width = max(p.product_bits + shift_of[p] for p in self._precisions)

        # Stage 2 boundary: the individual terms.
        staged_groups = []
        for g, group in enumerate(groups):
            staged = []
            for t, (value, weight) in enumerate(group):
                term = Signal(signed(len(value)), name=f"term{g}_{t}")
                m.d.comb += term.eq(value)
                staged.append((stage(2, term, f"term{g}_{t}_s2"), weight))
            staged_groups.append(staged)
        side = stage_side(2, side)

        # Stage 3 boundary: one partial sum per group (per A nibble).
        partials = []
        for g, group in enumerate(staged_groups):
            partial = Signal(signed(full_width), name=f"partial{g}")
            m.d.comb += partial.eq(sum(value << weight for value, weight in group))
            partials.append(stage(3, partial, f"partial{g}_s3"))
        side = stage_side(3, side)

        total = Signal(signed(full_width))
        m.d.comb += total.eq(sum(partials))
        product = Signal(signed(self._product_width))
        with m.Switch(side[0]):
            for p, shift in shift_of.items():
                with m.Case(p):
                    m.d.comb += product.eq(total[shift:].as_signed())
        return product, side

    def _unit_plan(self):
        """``(operand width, {precision: [slot or None per unit]}, operands, term)`` of the
        DSP build: ``operands(slot, a, b)`` gives a unit's ``(x, y)``, ``term(slot, product)``
        its contribution to the result."""
        def field(word, lsb, width, is_signed=True):
            value = word[lsb:lsb + width]
            return value.as_signed() if is_signed else value

        if self._multiplier == "dsp4":
            def operands(slot, a, b):
                a_piece, b_piece, _ = slot
                return field(a, *a_piece), field(b, *b_piece)

            return UNIT_OPERAND_WIDTH, byte_units(self._precisions), operands, \
                lambda slot, product: product << slot[2]

        def shift(slot):
            (_, a_width), (_, b_width) = slot[0]
            return pair_shift(a_width, b_width)

        def packed(low, high, offset):
            # ``low + high * 2**offset`` (both signed) without an adder across the whole
            # operand: ``low`` in two's complement over ``offset`` bits, which takes one
            # from the field above it when ``low`` is negative, so that field holds
            # ``high - sign(low)``: a carry chain of a sub-word's width, not the operand's
            # (which was the critical path in front of the DSP blocks' input registers)
            sign = low[-1]
            return Cat(low, sign.replicate(offset - len(low)),
                       high.as_signed() - sign).as_signed()

        def operands(slot, a, b):
            if len(slot) == 1:
                ((a_lsb, a_width), (b_lsb, b_width)), = slot
                return field(a, a_lsb, a_width), field(b, b_lsb, b_width)
            ((a0_lsb, a_width), (b0_lsb, b_width)), ((a1_lsb, _), (b1_lsb, _)) = slot
            return (packed(field(a, a0_lsb, a_width, False), field(a, a1_lsb, a_width),
                           shift(slot)),
                    packed(field(b, b1_lsb, b_width, False), field(b, b0_lsb, b_width),
                           shift(slot)))

        def term(slot, product):
            return product if len(slot) == 1 else unpack_pair(product, shift(slot))

        return WIDE_OPERAND_WIDTH, wide_units(self._precisions), operands, term

    def _lut_unit(self, m, k, slots, a, b, code, stage):
        """Unit ``k`` built from LUT nibble products (see :func:`_lane_nibbles`): for each
        configuration, the sum of the products of the lanes ``slots[precision]`` gives it (None:
        none). The sign-controlled nibbles are registered at stage 3 (where a DSP unit registers
        its operands) and the nibble products at stage 2 (its product). Returns ``(total,
        shift_of)``: the products summed at fixed weights, and, per configuration, the right
        shift in bits that makes ``total`` the sum of its lanes' products (exact: the lower
        bits of the masked sum are zero)."""
        plans = {p: _lane_nibbles(lanes) for p, lanes in slots.items() if lanes is not None}
        if not plans:
            return None, {}   # no supported configuration uses the unit
        base = min(plan[3] for plan in plans.values())
        pairs = sorted(set().union(*(plan[2] for plan in plans.values())))

        def any_mode(predicate):
            flags = [code == p for p, plan in plans.items() if predicate(plan)]
            return Cat(*flags).any() if flags else 0

        a_ext, b_ext = {}, {}
        for i in sorted({i for i, _ in pairs}):
            nibble = a[_NIBBLE * i:_NIBBLE * (i + 1)]
            value = Cat(nibble, nibble[-1] & any_mode(lambda plan, i=i: i in plan[0]))
            a_ext[i] = stage(3, value.as_signed(), f"l{k}_a{i}_s3")
        for i, j in pairs:
            nibble = b[_NIBBLE * j:_NIBBLE * (j + 1)]
            value = Cat(nibble, nibble[-1] & any_mode(lambda plan, j=j: j in plan[1]))
            # masked at the weight operand: a pair the configuration does not use adds 0
            used = any_mode(lambda plan, i=i, j=j: (i, j) in plan[2])
            b_ext[i, j] = stage(3, Mux(used, value, 0).as_signed(), f"l{k}_b{i}{j}_s3")
        # wide enough for the exact sum of any signed 10-bit products at their weights, so
        # that the result is exact for any products (what the cut proofs show), not only the
        # real ones
        bound = sum(1 << (2 * _NIBBLE + 1 + _NIBBLE * (i + j) - base) for i, j in pairs)
        total = Signal(signed(bound.bit_length() + 1), name=f"l{k}_total")
        m.d.comb += total.eq(sum(
            stage(2, self._nibble_product(m, i, j, a_ext[i], b_ext[i, j]), f"l{k}_p{i}{j}_s2")
            << (_NIBBLE * (i + j) - base) for i, j in pairs))
        return total, {p: plan[3] - base for p, plan in plans.items()}

    def _unit_datapath(self, m, payload, side, stage, stage_side, advance):
        """The DSP builds: operands chosen per unit (registered at stage 3), the units'
        products (registered at stage 2), their terms summed at the configuration's weights.
        Returns ``(product, side)``."""
        width, units, unit_operands, unit_term = self._unit_plan()
        count = len(next(iter(units.values())))
        lut_units = LUT_UNITS.get(self._multiplier, ())

        operands = []
        for k in range(count):
            if k in lut_units:
                operands.append(None)
                continue
            x = Signal(signed(width), name=f"x{k}")
            y = Signal(signed(width), name=f"y{k}")
            with m.Switch(side[0]):
                for p, slots in units.items():
                    if slots[k] is not None:
                        value_x, value_y = unit_operands(slots[k], payload.a, payload.b)
                        with m.Case(p):
                            m.d.comb += [x.eq(value_x), y.eq(value_y)]
            operands.append((x, y))

        products = []
        for k, pair in enumerate(operands):
            if pair is None:
                # A LUT unit: its nibble products, registered as a DSP unit's product is.
                products.append(self._lut_unit(m, k, {p: slots[k] for p, slots in units.items()},
                                               payload.a, payload.b, side[0], stage))
            elif self._stages >= 3:
                # Stage 3 boundary: the DSP operands; stage 2: the products. Both registers
                # are inside a PipelinedMultiplier, which is one DSP block with its own input
                # and output registers where the target has them (the multiplexers above then
                # feed the block's input registers directly).
                m.submodules[f"unit{k}"] = unit = PipelinedMultiplier(width)
                m.d.comb += [unit.x.eq(pair[0]), unit.y.eq(pair[1]), unit.enable.eq(advance)]
                products.append(unit.product)
            else:
                # Stage 2 boundary: the products, straight out of the DSP blocks.
                products.append(stage(2, self._unit_product(m, k, *pair), f"u{k}_s2"))
        side = stage_side(2, stage_side(3, side))

        # The sum is taken modulo 2**product_width, which holds every result exactly.
        terms = []
        for k, value in enumerate(products):
            term = Signal(signed(self._product_width), name=f"weighted{k}")
            with m.Switch(side[0]):
                for p, slots in units.items():
                    if slots[k] is not None:
                        with m.Case(p):
                            if k in lut_units:
                                total, shift_of = value
                                m.d.comb += term.eq(total[shift_of[p]:].as_signed())
                            else:
                                m.d.comb += term.eq(unit_term(slots[k], value))
            # Stage 4 boundary: the products at their weights, in the fabric (the routing
            # out of the DSP blocks and the choice of weight, then the adders, each a path
            # of its own).
            terms.append(stage(4, term, f"weighted{k}_s4"))
        side = stage_side(4, side)
        # A balanced tree: two adders deep rather than three (four units).
        while len(terms) > 1:
            terms = [terms[t] + terms[t + 1] if t + 1 < len(terms) else terms[t]
                     for t in range(0, len(terms), 2)]
        product = Signal(signed(self._product_width))
        m.d.comb += product.eq(terms[0])
        return product, side
