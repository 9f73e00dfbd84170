"""Code generator for the NVE (Neuro Vector Engine, seed 003): convolution layers onto the NVE
instruction set, verified on the instruction-set simulator.

Flow per group of output maps (:mod:`.compile`): pixel-column layout (:mod:`.columns`), task
graph of one iteration (:mod:`.taskgraph`) for each candidate coefficient layout
(:mod:`.layout`), reverse list scheduling with modulo resource tables (:mod:`.schedule`), II
search with independent verification (:mod:`.modulo`), local-buffer and AGU allocation
(:mod:`.alloc`), program emission (:mod:`.emit`). The host packs each band's input stream and
runs it (:mod:`.bands`, :mod:`.host`). Feature-map fusion chooses the groups (:mod:`.fusion`);
:mod:`.network` compiles and simulates whole networks next to the seed's Table 5
(:mod:`.report`), :mod:`.cli` is ``tessera nve``.

Public API: :func:`compile_layer`, :func:`run_layer`, :func:`fuse_layer`,
:func:`compile_network`, :func:`simulate_network`, :class:`CompiledLayer`,
:class:`CompiledGroup`, :class:`LayerRun`, :class:`FusedLayer`, :class:`NveCompileError`.
"""

from .compile import CompiledGroup, CompiledLayer, compile_group, compile_layer
from .errors import NveCompileError
from .fusion import FusedLayer, fuse_layer
from .host import GroupRun, LayerRun, run_layer
from .network import compile_network, simulate_network

__all__ = ["CompiledGroup", "CompiledLayer", "FusedLayer", "GroupRun", "LayerRun",
           "NveCompileError", "compile_group", "compile_layer", "compile_network",
           "fuse_layer", "run_layer", "simulate_network"]
