"""The accelerator cores an SoC build can instantiate, by kind (``SocConfig.accelerators``).

Each is a component with the socket's host-facing ports: ``csr`` (AXI4-Lite registers,
``docs/accelerator.md``), ``bus`` (AXI4 manager, 64-bit) and ``irq``."""

from hls_ref.config import ACCELERATOR_KINDS

__all__ = ["RTL_KINDS", "build_accelerator"]


def _conv2d(config):
    from ..accelerator import Accelerator

    return Accelerator(config)


#: Kinds with an RTL implementation today, and how to build one from its configuration.
RTL_KINDS = {"conv2d": _conv2d}


def build_accelerator(kind, config):
    """A new accelerator of ``kind`` built from ``config`` (an ``AcceleratorConfig``)."""
    if kind not in ACCELERATOR_KINDS:
        raise ValueError(f"kind must be one of {', '.join(ACCELERATOR_KINDS)}, not {kind!r}")
    if kind not in RTL_KINDS:
        raise ValueError(f"no RTL implements a {kind} accelerator yet (available: "
                         f"{', '.join(RTL_KINDS)}); leave it out of the SoC configuration and "
                         "the processor runs those layers")
    return RTL_KINDS[kind](config)
