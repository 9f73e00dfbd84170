"""Code generator for the NVE (Neuro Vector Engine, seed 003): convolution layers onto the NVE
instruction set, verified on the instruction-set simulator.

Flow per group of output maps (:mod:`.compile`): pixel-column layout (:mod:`.columns`), task
graph of one iteration (:mod:`.taskgraph`) for each candidate coefficient layout
(:mod:`.layout`), reverse list scheduling with modulo resource tables (:mod:`.schedule`), II
search with independent verification (:mod:`.modulo`), local-buffer and AGU allocation
(:mod:`.alloc`), program emission (:mod:`.emit`). The host packs each band's input stream and
runs it (:mod:`.bands`, :mod:`.host`); :mod:`.report` compares with the seed's Table 5.

Public API: :func:`compile_layer`, :func:`run_layer`, :class:`CompiledLayer`,
:class:`CompiledGroup`, :class:`LayerRun`, :class:`NveCompileError`.
"""

from .compile import CompiledGroup, CompiledLayer, compile_group, compile_layer
from .errors import NveCompileError
from .host import GroupRun, LayerRun, run_layer

__all__ = ["CompiledGroup", "CompiledLayer", "GroupRun", "LayerRun", "NveCompileError",
           "compile_group", "compile_layer", "run_layer"]
