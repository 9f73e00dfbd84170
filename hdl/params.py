"""Validation of the keyword parameters that every Tessera core takes."""

from amaranth.utils import ceil_log2

from hls_ref.config import PE_MULTIPLIERS
from hls_ref.precision import Precision

__all__ = ["address_bits", "check_int", "check_multiplier", "check_precisions"]


def address_bits(count):
    """Bits of an address of ``count`` entries: ``ceil(log2(count))``, at least 1."""
    return max(1, ceil_log2(count))


def check_int(name, value, *, minimum=None, maximum=None):
    """Return ``value`` if it is an integer within ``[minimum, maximum]``.

    Raises
    ------
    ValueError
        Naming the parameter ``name``, if the value is not an integer in range.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if minimum is not None and maximum is not None and not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, not {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, not {value!r}")
    return value


def check_precisions(value):
    """Return ``value`` as a tuple of distinct :class:`Precision` members, in code order.

    Each item may be a member, a label such as ``"a8w4"``, a geometry such as ``"8x4"`` or a
    3-bit code.

    Raises
    ------
    ValueError
        If the collection is empty or an item names no configuration.
    """
    if isinstance(value, (str, Precision)):
        value = (value,)
    try:
        items = list(value)
    except TypeError:
        raise ValueError(f"precisions must be a collection of precisions, not {value!r}") from None
    if not items:
        raise ValueError("precisions must name at least one configuration")
    members = {Precision.parse(item) for item in items}
    return tuple(sorted(members, key=lambda member: member.value))


def check_multiplier(value):
    """Return ``value`` if it names a way to build an ST multiplier (a key of
    :data:`hls_ref.config.PE_MULTIPLIERS`: ``"lut"``, ``"dsp4"``, ``"dsp2"``, ``"dsp1"``).

    Raises
    ------
    ValueError
        Naming the parameter ``multiplier`` and the choices, otherwise.
    """
    if not isinstance(value, str) or value not in PE_MULTIPLIERS:
        raise ValueError(f"multiplier must be one of {', '.join(map(repr, PE_MULTIPLIERS))}, "
                         f"not {value!r}")
    return value
