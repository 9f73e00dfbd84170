"""The precision configurations of the sum-together (ST) multiplier.

One 16-bit activation operand ``A`` and one 16-bit weight operand ``B`` hold 1, 2 or 4 signed
sub-words each. The ST multiplier returns the *sum* of the products of paired sub-words, with
the pairing *crossed*: the lowest activation sub-word multiplies the highest weight sub-word
(seed 002, Fig. 2.14)::

    A16W16  A[15:0]  * B[15:0]
    A16W8   A[15:0]  * B[7:0]
    A8W8    A[15:8]  * B[7:0]  + A[7:0]  * B[15:8]
    A8W4    A[15:8]  * B[3:0]  + A[7:0]  * B[11:8]
    A4W4    A[15:12] * B[3:0]  + A[11:8] * B[7:4] + A[7:4] * B[11:8] + A[3:0] * B[15:12]

:class:`Precision` is the single definition of these configurations: the RTL uses it as the
shape of its configuration field, the golden model and the packing helpers use its
:meth:`Precision.pairs`, and software parses it from names such as ``"a8w4"``.
"""

from amaranth.lib import enum

__all__ = ["OPERAND_WIDTH", "Precision"]

#: Width of one ST operand (activation or weight), in bits.
OPERAND_WIDTH = 16


class Precision(enum.Enum, shape=3):
    """ST multiplier configuration; the values are the 3-bit ``CONFIG`` codes of seed 002."""

    A16W16 = 0b000
    A4W4 = 0b001
    A8W8 = 0b010
    A8W4 = 0b011
    A16W8 = 0b100

    @property
    def act_bits(self):
        """Width of one activation sub-word, in bits."""
        return {"A16W16": 16, "A16W8": 16, "A8W8": 8, "A8W4": 8, "A4W4": 4}[self.name]

    @property
    def weight_bits(self):
        """Width of one weight sub-word, in bits."""
        return {"A16W16": 16, "A16W8": 8, "A8W8": 8, "A8W4": 4, "A4W4": 4}[self.name]

    @property
    def lanes(self):
        """Number of sub-word products summed by one ST operation (1, 2 or 4)."""
        return OPERAND_WIDTH // self.act_bits

    @property
    def slot_bits(self):
        """Spacing of sub-words inside an operand, in bits (16, 8 or 4)."""
        return OPERAND_WIDTH // self.lanes

    def pairs(self):
        """Return the sub-word pairs that one ST operation multiplies and sums.

        Lane ``k`` pairs the activation sub-word in slot ``k`` with the weight sub-word in slot
        ``lanes - 1 - k`` (the crossed pairing). A weight narrower than its slot occupies the low
        bits of the slot (``A8W4``, ``A16W8``).

        Returns
        -------
        tuple of ((int, int), (int, int))
            ``((a_lsb, a_width), (b_lsb, b_width))`` per lane, bit positions inside ``A``/``B``.
        """
        return tuple(
            ((k * self.slot_bits, self.act_bits),
             ((self.lanes - 1 - k) * self.slot_bits, self.weight_bits))
            for k in range(self.lanes))

    @property
    def product_bits(self):
        """Width of the signed ST result that holds every possible sum of products, in bits."""
        # The largest magnitude is lanes * (-2**(a-1)) * (-2**(w-1)), a positive power of two.
        largest = self.lanes << (self.act_bits - 1 + self.weight_bits - 1)
        return largest.bit_length() + 1

    @property
    def label(self):
        """Lower-case name used on command lines and in reports, e.g. ``"a8w4"``."""
        return self.name.lower()

    @property
    def geometry(self):
        """Multiplier geometry as seed 002 names it, e.g. ``"8x4"``."""
        return f"{self.act_bits}x{self.weight_bits}"

    @classmethod
    def parse(cls, value):
        """Return the :class:`Precision` named by ``value``.

        Accepts a member, a label (``"a8w4"``), a geometry (``"8x4"``) or a 3-bit code.

        Raises
        ------
        ValueError
            If ``value`` names no configuration.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            for member in cls:
                if member.value == value:
                    return member
        if isinstance(value, str):
            text = value.strip().lower()
            for member in cls:
                if text in (member.label, member.geometry):
                    return member
        names = ", ".join(member.label for member in cls)
        raise ValueError(f"Unknown precision {value!r}; expected one of {names}")
