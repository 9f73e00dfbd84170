"""The accelerators an SoC build instantiates (``SocConfig.accelerators``).

Each is a :class:`hdl.accelerator.Accelerator` -- the socket and the datapaths its
configuration lists -- with the host-facing ports ``csr`` (AXI4-Lite registers,
``docs/accelerator.md``), ``bus`` (AXI4 manager, 64-bit) and ``irq``."""

from hls_ref.config import AcceleratorConfig

__all__ = ["build_accelerator"]


def build_accelerator(config):
    """A new accelerator built from ``config`` (an ``AcceleratorConfig``); a datapath without
    RTL is refused with the way out."""
    from ..accelerator import DATAPATHS, Accelerator

    if not isinstance(config, AcceleratorConfig):
        raise TypeError(f"config must be an AcceleratorConfig, not {config!r}")
    missing = [op.name.lower() for op in config.ops if op not in DATAPATHS]
    if missing:
        raise ValueError(f"no RTL implements the {', '.join(missing)} datapath yet (available: "
                         f"{', '.join(op.name.lower() for op in DATAPATHS)}); leave it out of "
                         "the accelerator's configuration and the processor runs those layers")
    return Accelerator(config)
