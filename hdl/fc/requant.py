"""The FC requantizer: LiteRT's double-precision FC rule with integer operations only.

Ref: ``hls_ref.quant.scale_by_double_integer`` (the algorithm, bit for bit) and
``docs/formats.md`` sections 3, 4 and 6. An accumulator ``x`` is scaled by a positive normal
double ``scale = S * 2**-E`` (``S`` its 53-bit significand with the hidden bit, ``E = 1075 -
biased exponent``) as LiteRT's reference kernel computes ``round(double(x) * scale)``:

1. the exact product ``P = |x| * S`` (at most 85 bits), from six 18 x 18-bit unsigned
   products (one DSP block each on the ECP5);
2. ``P`` rounded to 53 significant bits, ties to even (the IEEE product): ``|x|`` has ``t``
   significant bits, so ``P`` has ``t + 52`` or ``t + 53`` and the rounding drops ``d = t - 1``
   or ``t`` low bits (guard, sticky and the kept lsb decide); the rounded value ``Q`` keeps its
   scale (its low ``d`` bits are zero);
3. ``Q / 2**E`` rounded half up (the magnitude: ties away from zero): ``(Q >> E) + Q[E - 1]``;
   for ``E <= d`` the magnitude is at least ``2**52`` and saturates;
4. the sign of ``x``, the output zero point, the clamp ``min(max(v, low), high)``.

The magnitude saturates at ``2**17``: the zero point and the clamp bounds are 16-bit, so any
larger magnitude clamps to the same output (the golden model saturates at ``2**31``).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..dsp import ECP5_DSP_WIDTH, PipelinedMultiplier
from ..params import check_int

__all__ = ["LATENCY", "DoubleRequantizer", "bit_length"]

_ACC = 32
_SIG = 53                     # significand bits, with the hidden one
_PRODUCT = _ACC + _SIG        # 85
_OUT = 16
_SATURATE = 1 << 17           # any larger magnitude clamps alike
_MAG = 18                     # magnitude bits after saturation (0 .. 2**17)
_PIECE = ECP5_DSP_WIDTH       # 18-bit unsigned operand pieces
_X_PIECES = ((0, 18), (18, 14))                 # |x|: bits 0-17, 18-31
_S_PIECES = ((0, 18), (18, 18), (36, 17))       # S: bits 0-17, 18-35, 36-52

#: Cycles from an input transfer to its result (without back-pressure).
LATENCY = 13


def bit_length(m, value, *, name):
    """A signal holding the bit length of unsigned ``value`` (0 for 0), as a balanced tree of
    halves: ``len(value)`` must be a power of two."""
    width = len(value)
    if width == 1:
        return value
    half = width // 2
    low = bit_length(m, value[:half], name=f"{name}l")
    high = bit_length(m, value[half:], name=f"{name}h")
    result = Signal(range(width + 1), name=name)
    m.d.comb += result.eq(Mux(value[half:].any(), high + half, low))
    return result


class DoubleRequantizer(wiring.Component):
    """One accumulator per transfer through the FC rule (see the module docstring).

    ``scale``, ``zero_point``, ``low`` and ``high`` are held by the caller from two cycles
    before a transfer enters until its result leaves (one command's parameters); ``scale``
    must be a positive normal double (the FC datapath refuses other quantization blocks).

    The pipeline stalls as a whole while the output holds a transfer that is not accepted; it
    accepts one transfer per cycle otherwise, and a result leaves :data:`LATENCY` cycles after
    its input without back-pressure.

    Parameters
    ----------
    user_width : int
        Width of a side-band field carried with each transfer, in bits.

    Members
    -------
    scale : ``In(64)``
        IEEE binary64 bits of the scale.
    zero_point, low, high : ``In(signed(16))``
        Output zero point and the final clamp bounds (activation and output width folded in).
    i : ``In(stream.Signature(input_layout))``
        ``acc`` (int32) and ``user``.
    o : ``Out(stream.Signature(output_layout))``
        ``value`` (int16) and ``user``.
    """

    def __init__(self, *, user_width=0):
        self._user_width = check_int("user_width", user_width, minimum=0)
        super().__init__({
            "scale": In(64),
            "zero_point": In(signed(_OUT)),
            "low": In(signed(_OUT)),
            "high": In(signed(_OUT)),
            "i": In(stream.Signature(self.input_layout)),
            "o": Out(stream.Signature(self.output_layout)),
        })

    @property
    def user_width(self):
        return self._user_width

    @property
    def input_layout(self):
        return data.StructLayout({"acc": signed(_ACC), "user": unsigned(self._user_width)})

    @property
    def output_layout(self):
        return data.StructLayout({"value": signed(_OUT), "user": unsigned(self._user_width)})

    def elaborate(self, platform):
        m = Module()
        advance = Signal()
        m.d.comb += [advance.eq(~self.o.valid | self.o.ready), self.i.ready.eq(advance)]

        def stage(value, name, *, reset_less=True):
            register = Signal(value.shape(), name=name, reset_less=reset_less)
            with m.If(advance):
                m.d.sync += register.eq(value)
            return register

        def carry(values, index):
            """Register ``(valid, user, sign, ...)`` side values one more stage."""
            return {key: stage(value, f"{key}_{index}", reset_less=key != "valid")
                    for key, value in values.items()}

        # the scale's fields, from the held input (registered: they change only between
        # commands, many cycles before a transfer reaches the stages that use them)
        significand = Signal(_SIG)
        shift = Signal(signed(13))                     # E = 1075 - biased exponent
        m.d.sync += [significand.eq(Cat(self.scale[:52], Const(1, 1))),
                     shift.eq(1075 - self.scale[52:63])]

        # stage 1: |x| and the sign
        acc = self.i.payload.acc
        side = carry({"valid": self.i.valid, "user": self.i.payload.user,
                      "sign": acc[-1]}, 1)
        magnitude = stage(Mux(acc[-1], -acc, acc).as_unsigned()[:_ACC], "magnitude")

        # stages 2-3: the bit length of |x| beside the DSP blocks' operand and product
        # registers
        length = bit_length(m, magnitude, name="t")
        side = carry(side | {"t": length}, 2)
        side = carry(side, 3)
        products = []
        for i, (x_lsb, x_width) in enumerate(_X_PIECES):
            for j, (s_lsb, s_width) in enumerate(_S_PIECES):
                mul = PipelinedMultiplier(_PIECE, is_signed=False)
                m.submodules[f"mul{i}{j}"] = mul
                m.d.comb += [mul.x.eq(magnitude[x_lsb:x_lsb + x_width]),
                             mul.y.eq(significand[s_lsb:s_lsb + s_width]),
                             mul.enable.eq(advance)]
                products.append((mul.product, x_lsb + s_lsb))

        # stage 4: the partial products of each |x| piece summed; stage 5: the product
        rows = [sum(p << (shift_ - x_lsb) for p, shift_ in products[3 * i:3 * i + 3])
                for i, (x_lsb, _) in enumerate(_X_PIECES)]
        row_sums = [stage(row, f"row{i}") for i, row in enumerate(rows)]
        side = carry(side, 4)
        product = stage((row_sums[0] + (row_sums[1] << _X_PIECES[1][0]))[:_PRODUCT], "product")
        side = carry(side, 5)

        # stage 6: the rounding position d: P's top bit (at t + 52 or t + 53) decides it
        t = side["t"]
        top = product.bit_select(t + 52, 1)            # P has t + 53 bits
        drop = stage(Mux(t == 0, 0, t - 1 + top)[:6], "drop")
        product6 = stage(product, "product6")
        side = carry(side, 6)

        # stage 7: rounding to 53 significant bits (ties to even) at bit d (registered above:
        # the bit select and the add that find d are a path of their own)
        low_mask = Signal(_PRODUCT)                    # the d dropped bits (d <= 32)
        m.d.comb += low_mask.eq((Const(1, _ACC + 2) << drop) - 1)
        guard = (drop != 0) & product6.bit_select((drop - 1)[:6], 1)
        sticky = (product6[:_ACC + 1] & (low_mask[:_ACC + 1] >> 1)).any()
        round_up = guard & (sticky | product6.bit_select(drop, 1))
        kept = stage(product6 & ~low_mask, "kept")
        increment = stage(Mux(round_up, Const(1, _ACC + 2) << drop, 0), "increment")
        side = carry(side | {"drop": drop}, 7)

        # stage 8: Q, and whether the integer rounding lies at or below the IEEE one
        rounded = stage(kept + increment, "rounded")                   # < 2**86
        e = shift
        saturated = stage((side["t"] != 0) & (e <= side["drop"]), "saturated")
        # the right shift by E - 1 (E - 1 >= d >= 0 when not saturated; beyond 87, zero)
        amount = stage(Mux(e > 87, 87, Mux(e < 1, 0, e - 1)).as_unsigned()[:7], "amount")
        side = carry(side, 8)

        # stage 9: Q >> (E - 1), coarse (multiples of 16) ...
        coarse = stage(rounded >> Cat(Const(0, 4), amount[4:]), "coarse")
        fine_amount = stage(amount[:4], "fine_amount")
        saturated = stage(saturated, "saturated9")
        side = carry(side, 9)
        # stage 10: ... fine: R = Q >> (E - 1), and whether R is beyond the saturation
        shifted = coarse >> fine_amount
        r = stage(shifted[:_MAG + 1], "r")
        over = stage(saturated | shifted[_MAG + 1:].any(), "over")
        side = carry(side, 10)
        # stage 11: the magnitude (R >> 1) + R[0] = (Q >> E) + Q[E - 1], saturated, signed
        magnitude11 = (r[1:] + r[0])[:_MAG + 1]
        clipped = Mux(over | (magnitude11 > _SATURATE), _SATURATE, magnitude11)
        value = Signal(signed(_MAG + 2))
        m.d.comb += value.eq(Mux(side["sign"], -clipped, clipped))
        signed_value = stage(value, "signed_value")
        side = carry(side, 11)

        # stage 12: the zero point; stage 13: the clamp
        offset = stage(signed_value + self.zero_point, "offset")
        side = carry(side, 12)
        clamped = Mux(offset < self.low, self.low, offset)
        clamped = Mux(clamped > self.high, self.high, clamped)
        value13 = stage(clamped[:_OUT].as_signed(), "value")
        side = carry(side, 13)
        m.d.comb += [self.o.payload.value.eq(value13), self.o.payload.user.eq(side["user"]),
                     self.o.valid.eq(side["valid"])]
        return m
