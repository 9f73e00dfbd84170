"""The NVE (seed 003's Neuro Vector Engine) in Amaranth: a VLIW + SIMD convolution core that
executes exactly what :mod:`hls_ref.nve.iss` simulates (``docs/nve.md``), one unit per file.

:class:`Nve` (``top.py``) is the peripheral: the register port (``host.py``) around the core
(``core.py``), which joins the sequencer and instruction buffer (``sequencer.py``), the address
generators (``agu.py``), the local buffer (``local_buffer.py``), the weight and image
registers (``registers.py``), the vector MAC (``vmac.py``), the activation stage
(``activation.py``) and the rule checker (``hazards.py``); ``isa.py`` holds the shapes derived
from :mod:`hls_ref.nve.isa`.
"""

from .top import Nve, nve

__all__ = ["Nve", "nve"]
