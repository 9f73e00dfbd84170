"""TFLite's ``MultiplyByQuantizedMultiplier`` on an int32, with the int32 result (no zero point,
no clamp): how the per-channel datapath's add scales each input element
(``hls_ref.invocation.AddAccelerator``), bit for bit with
:func:`hls_ref.quant.multiply_by_quantized_multiplier` for every value of every field:

* a positive ``shift`` multiplies ``x`` by ``2**shift`` first, wrapping in int32 (32 or more
  gives 0);
* the product with ``multiplier`` (below ``2**31``) is rounded to its high half,
  ``(x * multiplier + 2**30) >> 31``;
* a negative ``shift`` divides by ``2**-shift``, rounding half away from zero; 32 to 63 bits
  give 0 and 64 or more give +1 (a non-negative high half) or -1, as the golden model's
  numpy arithmetic defines them.

Three register stages (latency 3): the shifted operand, the product, the result. The
pipeline stalls as a whole while its output is not taken.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import check_int

__all__ = ["Scaler"]


class Scaler(wiring.Component):
    """``o.value = multiply_by_quantized_multiplier(i.x, i.multiplier, i.shift)``.

    Members
    -------
    i : ``In(stream.Signature(StructLayout(x, multiplier, shift, user)))``
        ``x`` signed 32, ``multiplier`` unsigned 31, ``shift`` signed 8, ``user``.
    o : ``Out(stream.Signature(StructLayout(value, user)))``
        ``value`` signed 32.
    """

    def __init__(self, *, user_width=1):
        self._user = check_int("user_width", user_width, minimum=1)
        super().__init__({
            "i": In(stream.Signature(data.StructLayout({
                "x": signed(32), "multiplier": unsigned(31), "shift": signed(8),
                "user": unsigned(user_width)}))),
            "o": Out(stream.Signature(data.StructLayout({
                "value": signed(32), "user": unsigned(user_width)}))),
        })

    def elaborate(self, platform):
        m = Module()
        advance = ~self.o.valid | self.o.ready
        m.d.comb += self.i.ready.eq(advance)
        i = self.i.payload

        # stage 1: the left shift (wrapping in int32), the right shift's exponent
        s1_valid = Signal()
        s1_x = Signal(signed(32))
        s1_m = Signal(unsigned(31))
        s1_e = Signal(unsigned(8))     # right-shift exponent, 0 to 128
        s1_user = Signal(self._user)
        left = Mux(i.shift > 0, i.shift, 0)[:8]
        shifted = Mux(left >= 32, 0, (i.x << left[:5])[:32])
        # stage 2: the product
        s2_valid = Signal()
        s2_p = Signal(signed(64))
        s2_e = Signal(unsigned(8))
        s2_user = Signal(self._user)
        with m.If(advance):
            m.d.sync += [
                s1_valid.eq(self.i.valid), s1_x.eq(shifted.as_signed()), s1_m.eq(i.multiplier),
                s1_e.eq(Mux(i.shift < 0, -i.shift, 0)), s1_user.eq(i.user),
                s2_valid.eq(s1_valid), s2_p.eq(s1_x * s1_m), s2_e.eq(s1_e),
                s2_user.eq(s1_user),
            ]
        # stage 3: the rounded high half, then the rounding divide by 2**e
        high = ((s2_p + (1 << 30)) >> 31)[:32].as_signed()
        e = s2_e
        negative = high[31]
        quotient = (high >> e[:5]).as_signed()
        below = Signal(32)             # the bits below the rounding bit: 2**(e-1) - 1
        m.d.comb += below.eq(Cat(*(e[:5] > k + 1 for k in range(32))))
        round_bit = (high.as_unsigned() >> (e[:5] - 1)[:5])[0]
        sticky = (high & below).any()
        small = Mux(e == 0, high,
                    quotient + (round_bit & (sticky | ~negative)))
        value = Mux(e >= 64, Mux(negative, -1, 1), Mux(e >= 32, 0, small))
        with m.If(advance):
            m.d.sync += [self.o.valid.eq(s2_valid), self.o.payload.value.eq(value),
                         self.o.payload.user.eq(s2_user)]
        return m
