"""The FPGA family a design is elaborated for, and so which vendor primitives it may use.

Cores that have a better form on one family (a DSP block with its own registers, flip-flops
synthesis must not merge) choose it at elaboration from the platform they are given: an object
whose ``family`` names the FPGA family, as Amaranth's vendor platforms have. Out of context
(synthesis of one block, simulation of a target's netlist form) :class:`Target` stands in for a
board platform. Anything else, ``None`` (plain simulation) included, gets portable logic.
"""

__all__ = ["Target", "is_ecp5", "is_ice40"]


class Target:
    """A platform stand-in for elaborating outside a board build: names the FPGA family whose
    primitives cores may instantiate.

    Parameters
    ----------
    family : str
        ``"ecp5"``, or any other name for portable logic.
    """

    def __init__(self, family):
        self.family = family

    def __repr__(self):
        return f"Target({self.family!r})"


def is_ecp5(platform):
    """True when ``platform`` (a board platform, a :class:`Target` or ``None``) is an ECP5, so
    cores elaborated for it instantiate ECP5 primitives."""
    return getattr(platform, "family", None) == "ecp5"


def is_ice40(platform):
    """True when ``platform`` is an iCE40 (its cores may instantiate iCE40 primitives such as
    ``SB_SPRAM256KA``)."""
    return str(getattr(platform, "family", "")).lower() == "ice40"
