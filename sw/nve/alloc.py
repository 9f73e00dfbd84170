"""Local-buffer allocation: fixed coefficient words and one circular buffer of stored columns.

Words ``0 .. C-1`` hold the group's coefficient words, written once by the init part of every
run and read at fixed addresses (AGU mode 0). The stored columns follow as a circular buffer
of ``ring`` slots, one slot per writing iteration; a slot holds the iteration's ``new`` stored
columns of every group input, ``words`` each::

    address(input i, column j, word k, writer x_w) = ring_base
        + (x_w mod ring) * step + (j * inputs + i) * words + k,     step = new * inputs * words

so every pixel operation of the loop body moves by ``step`` per iteration and wraps after
``ring * step``: the seed's Eq. 3.1/3.2 with ``inc = step``, ``toggle = ring * step`` and an
initial ``update = (x_w mod ring) * step`` of the iteration the op works on in the first
execution of the body. One AGU pair serves every pixel operation of the group.
"""

from dataclasses import dataclass

from .errors import NveCompileError

__all__ = ["BufferPlan", "allocate"]


@dataclass(frozen=True)
class BufferPlan:
    """Where the group's data lives (all sizes in 64-bit words): ``coef_words`` coefficient
    words from address 0, then the ring of ``ring`` slots of ``step`` words at
    ``ring_base``; ``words`` per stored column; ``inputs`` group inputs; ``new`` stored columns
    per iteration."""

    coef_words: int
    ring: int
    words: int
    inputs: int
    new: int

    @property
    def ring_base(self):
        return self.coef_words

    @property
    def step(self):
        """Words one iteration writes = the AGU increment."""
        return self.new * self.inputs * self.words

    @property
    def toggle(self):
        """The AGU toggle: words of the whole ring."""
        return self.ring * self.step

    @property
    def used(self):
        """Local-buffer words the group uses."""
        return self.ring_base + self.toggle

    @property
    def mode(self):
        """AGU mode of the pixel operations of the body (0: a single slot, fixed address)."""
        return 1 if self.ring > 1 else 0

    @property
    def agu(self):
        """The AGU pairs of the settings: ``((inc, toggle),)`` or ``()``."""
        return ((self.step, self.toggle),) if self.mode else ()

    def coef_address(self, n):
        return n

    def pixel_address(self, inp, j, k, x_w):
        """Address of word ``k`` of stored column ``j`` of group input ``inp`` written by
        iteration ``x_w`` (any integer: slots repeat every ``ring`` iterations)."""
        return self.ring_base + (x_w % self.ring) * self.step + self.column_offset(inp, j, k)

    def column_offset(self, inp, j, k):
        return (j * self.inputs + inp) * self.words + k

    def body_field(self, inp, j, k, x_w):
        """``(offset, update, mode)`` of a loop-body operation on that word whose first body
        execution works on writer ``x_w``."""
        if not self.mode:
            return self.pixel_address(inp, j, k, x_w), 0, 0
        return (self.ring_base + self.column_offset(inp, j, k), (x_w % self.ring) * self.step,
                self.mode)


def allocate(graph, schedule, config, name):
    """The :class:`BufferPlan` of ``graph`` under ``schedule``; :class:`NveCompileError`
    naming ``name`` when it exceeds ``config.local_words``. (Its one AGU pair always fits:
    ``NveConfig`` has at least one.)"""
    spec = graph.spec
    plan = BufferPlan(len(graph.coef_words), schedule.ring, spec.columns.words,
                      len(spec.inputs), spec.steps.new)
    if plan.used > config.local_words:
        raise NveCompileError(
            f"{name}: the group of maps {list(spec.maps)} needs {plan.used} local-buffer words "
            f"({plan.coef_words} coefficient words + a ring of {plan.ring} x {plan.step} "
            f"column words for {plan.inputs} input maps), more than the {config.local_words} "
            f"of the local buffer", too_large=True)
    return plan
