"""The requantization unit: TFLite's fixed-point rescaling of an accumulator, the output zero
point and the output clamp, bit-exact with :mod:`hls_ref.quant`.

Ref: TFLite ``MultiplyByQuantizedMultiplier`` (``tensorflow/lite/kernels/internal/common.h``);
gemmlowp ``SaturatingRoundingDoublingHighMul`` and ``RoundingDivideByPOT``
(``fixedpoint/fixedpoint.h``); ``docs/formats.md`` sections 3, 4 and 6.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .dsp import PipelinedMultiplier
from .params import check_int

__all__ = ["DEFAULT_STAGES", "MAX_STAGES", "REGISTER_ORDER", "Requantizer"]

#: Register boundaries of the datapath, in the order in which ``stages`` enables them (the
#: first ``stages`` are registered). In dataflow order they are ``scaled`` (the accumulator
#: after the left shift), ``operand`` (multiplier inputs), ``product`` (multiplier outputs),
#: ``partial`` (partial-product sums), ``high`` (the rounded high half of the product),
#: ``shifted`` (after the rounding right shift), ``offset`` (zero point added, compared with
#: the bounds) and ``out`` (the clamped result).
REGISTER_ORDER = ("out", "product", "operand", "high", "shifted", "partial", "offset",
                  "scaled")

#: Largest supported number of pipeline register stages.
MAX_STAGES = len(REGISTER_ORDER)

#: Pipeline stages of the default build: every boundary but ``scaled`` registered. With the
#: ``operand`` and ``product`` boundaries, the four products are DSP blocks holding both
#: registers (:class:`~hdl.dsp.PipelinedMultiplier`); on an ECP5 (speed grade 6) the open flow
#: then reaches 147.1 MHz out of context (135.4 MHz with the blocks between fabric registers;
#: ``python -m boards.synth requant``). ``scaled`` matters in a large design, where the
#: register that feeds the requantizer may sit far from its DSP blocks.
DEFAULT_STAGES = MAX_STAGES - 1

_ACC_WIDTH = 32
_MULTIPLIER_WIDTH = 31
_SHIFT_WIDTH = 8
_OUTPUT_WIDTH = 16
_HALF = 16  # the 32 x 31-bit product is built from four products of 16-bit halves


class Requantizer(wiring.Component):
    """Requantizes one int32 accumulator per transfer:
    ``value = clamp(multiply_by_quantized_multiplier(acc, multiplier, shift) + zero_point,
    low, high)``, where ``clamp(v, low, high) = min(max(v, low), high)`` (numpy's ``clip``, so
    ``high`` wins if ``low > high``).

    The arithmetic is that of :func:`hls_ref.quant.multiply_by_quantized_multiplier`, bit for
    bit, for every value of every field:

    * a positive ``shift`` multiplies ``acc`` by ``2**shift`` first, wrapping in int32 (a shift
      of 32 or more gives 0);
    * the product with ``multiplier`` is rounded to its high half, ``(x*multiplier + 2**30) >> 31``
      (gemmlowp's SRDHM; ties toward plus infinity; it cannot saturate, as ``multiplier`` is
      below ``2**31``);
    * a negative ``shift`` then divides by ``2**-shift`` rounding half away from zero; a right
      shift of 32 to 63 bits gives 0 and, as the golden model's numpy arithmetic defines it,
      a right shift of 64 bits or more (``shift <= -64``) gives +1 for a non-negative high half
      and -1 for a negative one;
    * the zero point is added and the sum clamped without any intermediate wrap-around (the
      comparisons with the bounds see the full-width sum).

    The caller folds the fused activation's clamp and the output width into ``low`` and
    ``high`` (``hls_ref.invocation``: ``low = max(act_min, -2**(b-1))``,
    ``high = min(act_max, 2**(b-1) - 1)``).

    The 32 x 31-bit product is the sum of four unsigned 16 x 16-bit (or 16 x 15-bit) products
    of the halves of the operands, each of which fits one DSP block (ECP5 MULT18X18D, iCE40
    SB_MAC16), less a correction for a negative ``acc`` applied with the partial sums.

    The pipeline stalls as a whole while the output holds a transfer that is not accepted; it
    accepts one transfer per cycle otherwise, and a result leaves ``stages`` cycles after its
    input without back-pressure.

    Parameters
    ----------
    stages : int
        Pipeline register stages from input to output (latency in cycles), 0 (combinational) to
        :data:`MAX_STAGES`. They are enabled in the order of :data:`REGISTER_ORDER`:

        1. ``out``: the output register, behind the clamp's multiplexer;
        2. ``product``: the multiplier outputs, so that the DSP blocks' delay is not added to
           the partial-sum adders;
        3. ``operand``: the multiplier inputs, so that the left barrel shifter is not added to
           the DSP blocks' delay;
        4. ``high``: the rounded high half of the product, separating the two carry chains of
           the partial sums from the right barrel shifter;
        5. ``shifted``: after the right barrel shifter and its rounding decision, separating
           them from the zero-point adder and the clamp;
        6. ``partial``: the first level of partial-product sums (two 33-bit adders);
        7. ``offset``: the comparisons with the bounds and the zero-point sum, separating
           their carry chains from the clamp's multiplexer;
        8. ``scaled``: the accumulator after the left barrel shifter, so that the shifter and
           the wire to the DSP blocks' input registers are separate paths.
    user_width : int
        Width of a side-band field carried from input to output with each transfer, in bits.

    Members
    -------
    i : ``In(stream.Signature(input_layout))``
        ``acc``, ``multiplier``, ``shift``, ``zero_point``, ``low``, ``high`` and ``user``.
    o : ``Out(stream.Signature(output_layout))``
        ``value`` (signed 16-bit) and ``user``.
    """

    def __init__(self, *, stages=DEFAULT_STAGES, user_width=0):
        self._stages = check_int("stages", stages, minimum=0, maximum=MAX_STAGES)
        self._user_width = check_int("user_width", user_width, minimum=0)
        super().__init__({
            "i": In(stream.Signature(self.input_layout)),
            "o": Out(stream.Signature(self.output_layout)),
        })

    @property
    def stages(self):
        """Pipeline register stages (latency in cycles)."""
        return self._stages

    @property
    def user_width(self):
        """Width of the side-band field, in bits."""
        return self._user_width

    @property
    def registers(self):
        """Names of the register boundaries this build has (see :data:`REGISTER_ORDER`)."""
        return REGISTER_ORDER[:self._stages]

    @property
    def input_layout(self):
        """Layout of an input transfer.

        ``acc`` (int32) is the accumulator; ``multiplier`` the Q31 significand (the real
        multiplier is ``multiplier * 2**(shift - 31)``); ``shift`` TFLite's shift in bits
        (positive: left shift before the multiply; negative: rounding right shift after it);
        ``zero_point`` the output zero point; ``low`` and ``high`` the final clamp bounds.
        """
        return data.StructLayout({
            "acc": signed(_ACC_WIDTH),
            "multiplier": unsigned(_MULTIPLIER_WIDTH),
            "shift": signed(_SHIFT_WIDTH),
            "zero_point": signed(_OUTPUT_WIDTH),
            "low": signed(_OUTPUT_WIDTH),
            "high": signed(_OUTPUT_WIDTH),
            "user": unsigned(self._user_width),
        })

    @property
    def output_layout(self):
        """Layout of an output transfer: the requantized ``value`` and ``user``."""
        return data.StructLayout({
            "value": signed(_OUTPUT_WIDTH),
            "user": unsigned(self._user_width),
        })

    def elaborate(self, platform):
        m = Module()
        registered = set(self.registers)

        advance = Signal()
        if self._stages:
            m.d.comb += advance.eq(~self.o.valid | self.o.ready)
        else:
            m.d.comb += advance.eq(self.o.ready)
        m.d.comb += self.i.ready.eq(advance)

        def boundary(name, values):
            """Register every value of the dict ``values`` at boundary ``name`` if this build
            has it (``valid`` with a reset, data without); return the dict of outputs."""
            if name not in registered:
                return values
            outputs = {}
            for key, value in values.items():
                register = Signal(value.shape(), name=f"{key}_{name}",
                                  reset_less=key != "valid")
                with m.If(advance):
                    m.d.sync += register.eq(value)
                outputs[key] = register
            return outputs

        def comb(name, shape, value):
            signal = Signal(shape, name=name)
            m.d.comb += signal.eq(value)
            return signal

        def keep(*keys):
            """The values of ``pipe`` that later stages still need."""
            return {key: pipe[key] for key in keys}

        payload = self.i.payload
        side = ("valid", "user")
        clamp = ("zero_point", "low", "high", "low_offset", "high_offset", "crossed")

        # Left shift (wrapping in int32) and the right shift's exponent. The barrel shifter's
        # select lines are the shift's low bits themselves; its result is then chosen by the
        # high bits: 0 to 31 is a left shift, 32 and more gives 0, negative leaves acc alone.
        shift = payload.shift
        left_shifted = (payload.acc.as_unsigned() << shift[:5])[:_ACC_WIDTH]
        x = comb("x", unsigned(_ACC_WIDTH),
                 Mux(shift[5:] == 0, left_shifted, Mux(shift[-1], payload.acc, 0)))
        # Right shifts of 32 bits and more all give the result of 32 (see the shift stage).
        exponent = comb("exponent", unsigned(6),
                        Mux(shift >= 0, 0, Mux(shift <= -_ACC_WIDTH, _ACC_WIDTH, -shift)))
        huge = comb("huge", unsigned(1), shift <= -64)

        scaled = boundary("scaled", {
            "valid": self.i.valid, "user": payload.user, "zero_point": payload.zero_point,
            "low": payload.low, "high": payload.high, "x": x, "multiplier": payload.multiplier,
            "exponent": exponent, "huge": huge})
        pipe = boundary("operand", scaled)

        # Four unsigned products of the halves: x = xh*2**16 + xl, M = mh*2**16 + ml, with x
        # read as unsigned (the sign is corrected with the partial sums).
        widths = {"p_ll": 2 * _HALF, "p_hl": 2 * _HALF, "p_lh": 2 * _HALF - 1,
                  "p_hh": 2 * _HALF - 1}

        def halves(x, multiplier):
            xl, xh = x[:_HALF], x[_HALF:]
            ml, mh = multiplier[:_HALF], multiplier[_HALF:]
            return {"p_ll": (xl, ml), "p_hl": (xh, ml), "p_lh": (xl, mh), "p_hh": (xh, mh)}

        # With both the operand and the product boundary, each product is a
        # PipelinedMultiplier: one DSP block holding both registers where the target has
        # them (a DSP block between fabric registers is a long path wherever it is placed).
        # (the blocks take the operands from before the operand boundary, ``*`` after it)
        in_blocks = {"operand", "product"} <= registered
        operands = halves(scaled["x"], scaled["multiplier"]) if in_blocks else None
        x, multiplier = pipe["x"], pipe["multiplier"]
        products = {}
        for name, (a, b) in (operands or halves(x, multiplier)).items():
            if in_blocks:
                m.submodules[name] = unit = PipelinedMultiplier(_HALF + 1)
                m.d.comb += [unit.x.eq(a), unit.y.eq(b), unit.enable.eq(advance)]
                value = unit.product[:widths[name]]
            else:
                value = a * b
            products[name] = comb(name, unsigned(widths[name]), value)
        # The clamp bounds less the zero point (17 bits), for the final comparisons
        # (low - zero_point - 1 = low + ~zero_point).
        bounds = {
            "low_offset": comb("low_offset", signed(17), pipe["low"] + ~pipe["zero_point"]),
            "high_offset": comb("high_offset", signed(17), pipe["high"] - pipe["zero_point"]),
            "crossed": comb("crossed", unsigned(1), pipe["low"] > pipe["high"]),
        }
        pipe = boundary("product", {
            **keep(*side, "zero_point", "low", "high", "exponent", "huge"), **bounds,
            **({} if in_blocks else products), "negative": x[-1], "multiplier": multiplier})
        if in_blocks:
            pipe.update(products)        # (registered in their blocks)

        # x * M = a * 2**32 + b * 2**16 + c, with
        #   a = xh*mh - (M if x < 0 else 0)   (|a| < 2**31: signed 32 bits),
        #   b = xh*ml + xl*mh                  (< 2**33),
        #   c = xl*ml                          (< 2**32).
        # The SRDHM's nudge 2**30 has no bits below 2**16, so only c >> 16 (plus 2**14) can
        # carry into the bits that survive the shift by 31.
        correction = Mux(pipe["negative"], pipe["multiplier"], 0)
        partial = {
            "a": comb("a", signed(32), pipe["p_hh"] - correction),
            "b": comb("b", unsigned(33), pipe["p_hl"] + pipe["p_lh"]),
            "c": comb("c_nudged", unsigned(17), (pipe["p_ll"] >> _HALF) + (1 << 14)),
        }
        pipe = boundary("partial", {**keep(*side, *clamp, "exponent", "huge"), **partial})

        # SRDHM: floor((x*M + 2**30) / 2**31) = 2*a + ((b + (c >> 16) + 2**14) >> 15). Its
        # range is [-2**31 + 1, 2**31 - 1] (|x| <= 2**31, M < 2**31), so 32 bits hold it.
        sum_b = comb("sum_b", unsigned(34), pipe["b"] + pipe["c"])
        high = comb("srdhm", signed(32), (pipe["a"] << 1) + sum_b[15:])
        # Alongside: the mask of the bits below the rounding bit, 2**(e - 1) - 1, whose
        # decoder would otherwise lengthen the rounding decision.
        exponent = pipe["exponent"]
        sticky_mask = comb("sticky_mask", unsigned(_ACC_WIDTH - 1),
                           Cat(exponent > k + 1 for k in range(_ACC_WIDTH - 1)))
        pipe = boundary("high", {**keep(*side, *clamp, "exponent", "huge"), "srdhm": high,
                                 "sticky_mask": sticky_mask})

        # Rounding divide by 2**e, ties away from zero: q = srdhm >> e (arithmetic), plus one
        # if the bits shifted out exceed half (or equal it, for a non-negative value). With
        # e = 32, q is 0 or -1 and the increment makes 0 of both (srdhm != -2**31). Shifts of
        # 64 bits and more give +1 or -1, as the golden model does.
        high, exponent = pipe["srdhm"], pipe["exponent"]
        negative = high[-1]
        extended = comb("srdhm_x2", signed(33), Cat(0, high).as_signed() >> exponent)
        round_bit = extended[0]
        sticky = (high[:-1] & pipe["sticky_mask"]).any()
        increment = comb("increment", unsigned(1),
                         Mux(pipe["huge"], ~negative, round_bit & (sticky | ~negative)))
        shifted = {"quotient": comb("quotient", signed(32), extended[1:]),
                   "increment": increment}
        pipe = boundary("shifted", {**keep(*side, *clamp), **shifted})

        # Zero point and clamp. v = quotient + increment + zero_point is compared with the
        # bounds through 2*quotient + increment, the concatenation of registered bits, so that
        # the comparators work in parallel with the adder:
        #   v < low   <=>  2*quotient + increment < 2*(low - zero_point - 1) + 1,
        #   v > high  <=>  2*quotient + increment > 2*(high - zero_point),
        # (the bounds less the zero point come from an earlier stage). The adder needs only
        # 16 bits, as an unclamped v fits in 16 bits; the increment enters it as its carry-in,
        # through the low bit of both operands.
        quotient, increment = pipe["quotient"], pipe["increment"]
        twice = Cat(increment, quotient).as_signed()
        below = comb("below", unsigned(1),
                     twice < Cat(Const(1, 1), pipe["low_offset"]).as_signed())
        above = comb("above", unsigned(1), twice > Cat(0, pipe["high_offset"]).as_signed())
        carry_sum = (Cat(increment, quotient[:_OUTPUT_WIDTH])
                     + Cat(Const(1, 1), pipe["zero_point"]))
        unclamped = comb("unclamped", signed(_OUTPUT_WIDTH), carry_sum[1:_OUTPUT_WIDTH + 1])
        pipe = boundary("offset", {**keep(*side, "low", "high", "crossed"), "below": below,
                                   "above": above, "unclamped": unclamped})

        # min(max(v, low), high): high whenever v > high, or v < low while low > high.
        low, high = pipe["low"], pipe["high"]
        value = comb("value", signed(_OUTPUT_WIDTH),
                     Mux(pipe["above"] | (pipe["below"] & pipe["crossed"]), high,
                         Mux(pipe["below"], low, pipe["unclamped"])))
        pipe = boundary("out", {**keep(*side), "value": value})

        m.d.comb += [
            self.o.valid.eq(pipe["valid"]),
            self.o.payload.user.eq(pipe["user"]),
            self.o.payload.value.eq(pipe["value"]),
        ]
        return m
