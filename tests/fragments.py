"""Helpers for tests that inspect elaborated designs."""

from amaranth.hdl import Instance


def instances(fragment):
    """Every :class:`~amaranth.hdl.Instance` in ``fragment`` and its subfragments."""
    for subfragment, *_ in fragment.subfragments:
        if isinstance(subfragment, Instance):
            yield subfragment
        else:
            yield from instances(subfragment)
