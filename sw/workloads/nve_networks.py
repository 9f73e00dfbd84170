"""The two benchmark networks of seed 003 (Pramadi, "Automatic Mapping of Convolutional
Networks on the Neuro Vector Engine"): face detection and speed-sign detection on a 1280 x 720
frame, as Table 1 (Sec. 2.1.4) sizes them and Appendix A's XML descriptors connect them.

How the seed's layers map onto :class:`~sw.workloads.shapes.NetworkBuilder` calls:

* **Subsampling is a convolution stride.** The NVE has no pooling unit; following the seed's
  reference [8] (Sec. 2.1.2, Fig. 5) a K x K convolution followed by 2 x 2 subsampling is
  computed as one (K+1) x (K+1) convolution with stride 2. Table 1's "Kernel size" and the
  DSL's ``kernelHeight/Width`` are that merged kernel and "subsample" / ``subHeight/Width`` is
  its stride, so a layer "6x6, subsample 2x2" is ``conv(kernel=6, stride=2)`` with no pool
  layer. The MAC column confirms this reading: it is (listed output pixels) x K^2 x
  (connections), e.g. face L1 = 638 * 358 * 36 * 4 = 32.9 M.
* **Sparse connectivity.** Every output map reads only the input maps its ``outNet`` entry
  lists. :data:`CONNECTIONS` holds those tables (``CONNECTIONS[network][layer][m]`` = the input
  maps of output map ``m``) for a code generator, and each layer's ``connections`` is the
  number of (input map, output map) pairs, so MACs and weights count connected pairs only.
* **Output sizes are Table 1's, padding makes them so.** The seed's DSL gives only output
  sizes; the NVE evaluates ``outHeight x outWidth`` windows from the map's top-left corner.
  Three layers' listed sizes are not the valid-convolution size of their producer (below);
  there the layer's bottom/right padding is set so that the padded input spans exactly
  ``(out - 1) * stride + kernel``: negative = trailing rows/columns of the producer that the
  layer never reads, positive = zero rows/columns past the producer's edge.

  ==============  ========  =========  ==================  ==============================
  network/layer   producer  K / s      valid output        listed (Table 1) -> padding
  ==============  ========  =========  ==================  ==============================
  face L2         358x638   4 / 2      178x318             177x317 -> bottom/right -2
  speed L1        720x1280  6 / 2      358x638             357x637 -> bottom/right -2
  speed L2        357x637   6 / 2      176x316             177x317 -> bottom/right +1
  speed L3        177x317   5 / 1      173x313             172x312 -> bottom/right -1
  ==============  ========  =========  ==================  ==============================

  :class:`sw.graph.Padding` documents zero padding; a negative value (an unread border) is
  outside that meaning, and consumers that require padding >= 0 (``hls_ref.invocation``)
  refuse such a layer. The shapes module has no crop operator to say it otherwise.

Shapes are (H, W, C) with the 1280 x 720 frame as (720, 1280, 1): a single (grey) input map,
since every L1 ``outNet`` reads input map 0. Pixels are 8-bit and weights 16-bit on the NVE
(Sec. 3.1); that is the compiler's precision setting, not part of these shapes. Every layer has
a bias (the NVE's ``set rb``). The layers are named L1 ... L4 as in Table 1 (the XML's
``layerDescriptor idx`` 0 ... 3).
"""

from sw.graph import Padding

from .shapes import NetworkBuilder

__all__ = ["CONNECTIONS", "FRAME", "NETWORKS", "face_detection", "speed_sign"]

FRAME = (720, 1280, 1)  # Table 1: "Recognition Tasks on 1280x720 frame size", one input map


def _one_to_one(n):
    return [[m] for m in range(n)]


def _all(n_out, inputs):
    return [list(inputs) for _ in range(n_out)]


# Appendix A, outNet of every layerDescriptor: CONNECTIONS[network][layer][output map] lists
# the input maps that output map reads.
CONNECTIONS = {
    "face-detection": {
        "L1": _all(4, [0]),
        "L2": [[0], [0], [1], [1], [2], [2], [3], [3],
               [0, 1], [1, 2], [2, 3], [0, 2], [1, 3], [0, 3]],
        "L3": _one_to_one(14),
        "L4": _all(1, range(14)),
    },
    "speed-sign": {
        "L1": _all(6, [0]),
        "L2": [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [0, 4, 5], [0, 1, 5],
               [0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [0, 3, 4, 5], [0, 1, 4, 5],
               [0, 1, 2, 5], [0, 1, 3, 4], [1, 2, 4, 5], [0, 2, 3, 5],
               [0, 1, 2, 3, 4, 5]],
        "L3": _all(40, range(8)) + _all(40, range(8, 16)),
        "L4": _all(1, range(80)),
    },
}


def _pairs(network, layer):
    return sum(len(inputs) for inputs in CONNECTIONS[network][layer])


def _conv(b, network, layer, x, kernel, stride, padding="valid"):
    table = CONNECTIONS[network][layer]
    return b.conv(layer, x, len(table), kernel, stride, padding,
                  connections=_pairs(network, layer))


def face_detection():
    """Face detection (seed 003, Table 1 and Appendix A "Face Detection Descriptor").

    ===== ====  =========  ======  ====  =========================  ============
    layer maps  size WxH   kernel  sub   connectivity               MACs (Tab.1)
    ===== ====  =========  ======  ====  =========================  ============
    L1    4     638x358    6x6     2x2   each <- input 0            32.9M
    L2    14    317x177    4x4     2x2   8 single, 6 paired (20)    17.95M
    L3    14    312x172    6x6     1x1   one-to-one (14)            27M
    L4    1     312x172    1x1     1x1   <- all 14                  0.75M
    ===== ====  =========  ======  ====  =========================  ============

    Resolved: Appendix A's extracted descriptor is garbled around L3: it holds a duplicated
    6x6 ``layerDescriptor idx="3"`` with outNet 0-7 only, then a fragment with outNet 8-13 <-
    8-13 and the 1x1 ``idx="3"`` L4. Built: L3 = 14 one-to-one 6x6 maps (Table 1's 14 maps and
    27 M MACs = 312 * 172 * 36 * 14), L4 = one 1x1 map over all 14. L2 reads only 356 x 636 of
    L1's 358 x 638 (bottom/right padding -2, see the module docstring).
    """
    name = "face-detection"
    b = NetworkBuilder(name, {"input": FRAME})
    x = _conv(b, name, "L1", "input", 6, 2)
    x = _conv(b, name, "L2", x, 4, 2, Padding(0, -2, 0, -2))
    x = _conv(b, name, "L3", x, 6, 1)
    _conv(b, name, "L4", x, 1, 1)
    return b.build("NVE face detection on a 1280x720 frame (4 merged conv/subsample layers, "
                   "sparse maps)",
                   "seed 003, Sec. 2.1.4 Table 1; Appendix A, Face Detection Descriptor")


def speed_sign():
    """Speed-sign detection (seed 003, Table 1 and Appendix A "Speed Sign Detection Descriptor").

    ===== ====  =========  ======  ====  ===============================  ============
    layer maps  size WxH   kernel  sub   connectivity                     MACs (Tab.1)
    ===== ====  =========  ======  ====  ===============================  ============
    L1    6     637x357    6x6     2x2   each <- input 0                  49.1M
    L2    16    317x177    6x6     2x2   LeNet-5 C3 style, 3/4/6 (60)     121.2M
    L3    80    312x172    5x5     1x1   0-39 <- 0-7, 40-79 <- 8-15 (640) 858.6M
    L4    1     312x172    1x1     1x1   <- all 80                        4.3M
    ===== ====  =========  ======  ====  ===============================  ============

    Resolved: the listed sizes do not chain as valid convolutions (module docstring). Built
    with Table 1's sizes, which its MAC column uses (637 x 357 gives 49.1 M; 638 x 358 would
    give 49.3 M): L1 reads 718 x 1278 of the frame (padding -2), L2 needs one zero row and
    column past L1's 357 x 637 output (padding +1), L3 reads 176 x 316 of L2's 177 x 317
    (padding -1). The seed says the task "has eight different classes" (Sec. 6.1), but the
    L4 descriptor has ``outCount`` 1 and Table 1's 4.3 M MACs are for one map: built 1 map.
    """
    name = "speed-sign"
    b = NetworkBuilder(name, {"input": FRAME})
    x = _conv(b, name, "L1", "input", 6, 2, Padding(0, -2, 0, -2))
    x = _conv(b, name, "L2", x, 6, 2, Padding(0, 1, 0, 1))
    x = _conv(b, name, "L3", x, 5, 1, Padding(0, -1, 0, -1))
    _conv(b, name, "L4", x, 1, 1)
    return b.build("NVE speed-sign detection on a 1280x720 frame (4 merged conv/subsample "
                   "layers, sparse maps)",
                   "seed 003, Sec. 2.1.4 Table 1; Appendix A, Speed Sign Detection Descriptor")


NETWORKS = {
    "face-detection": face_detection,
    "speed-sign": speed_sign,
}
