"""The networks of seed 004's bandwidth table (Imagination Tensor Tiling white paper), by shape.

Seed 004 reports ITT's DDR bandwidth savings for ResNetV1-50, InceptionV3, MobileNetV1 1.0 224,
MobileNetV1 at 1080p, SRCNN (AI Benchmark v3.0.2), SSD-MobileNetV1-FPN (COCO) and YOLOv3
(COCO). The white paper does not give the graphs, so each one here follows the standard
published architecture named in its function's docstring, layer by layer, with every branch,
residual add, concatenation and upsampling as a real graph edge (layer fusion depends on them).

Modelling choices shared by all networks:

* Batch 1, shapes (H, W, C), inference graphs only (no auxiliary heads, dropout or losses).
* Batch normalization is folded into the preceding convolution, whose folded bias is counted
  (``bias=True`` on every weighted layer, also where the trained model has ``use_bias=False``).
* Activations (ReLU, ReLU6, leaky ReLU, sigmoid, softmax) are fused into the producing layer
  and are not separate layers; so are reshapes and host-side pre/post-processing (input
  scaling, YOLO box decoding, SSD anchor decoding and non-maximum suppression).
* Padding follows the framework each network was published in: TFLite/TensorFlow SAME
  (``"same"``, odd element after) for the Keras/TF models, explicit zero padding where the
  framework pads explicitly (Keras ``ZeroPadding2D`` in ResNet-50, Darknet's ``pad=1``).
"""

from .shapes import NetworkBuilder

__all__ = ["NETWORKS", "inceptionv3", "mobilenetv1", "mobilenetv1_1080p", "resnet50",
           "srcnn", "ssd_mobilenet_fpn", "yolov3"]


# --------------------------------------------------------------------------------------------
# ResNet-50 v1


def _bottleneck(b, x, name, filters, stride, project):
    """Keras ``resnet.block1``: 1x1 (stride) -> 3x3 -> 1x1 (4x filters), plus the shortcut
    (a strided 1x1 projection in the first block of each stage, else the identity)."""
    shortcut = b.conv(f"{name}_0_conv", x, 4 * filters, 1, stride, "valid") if project else x
    y = b.conv(f"{name}_1_conv", x, filters, 1, stride, "valid")
    y = b.conv(f"{name}_2_conv", y, filters, 3, 1, "same")
    y = b.conv(f"{name}_3_conv", y, 4 * filters, 1, 1, "valid")
    return b.add(f"{name}_add", shortcut, y)


def resnet50():
    """ResNet-50 v1 (He et al. 2015), the Keras-applications ``ResNet50`` layout, 224x224x3.

    * Stem: ``ZeroPadding2D(3)`` + 7x7/2 conv (64) -> 112x112, ``ZeroPadding2D(1)`` + 3x3/2
      max pool -> 56x56 (explicit symmetric padding, as Keras pads).
    * Stages conv2..conv5 with 3, 4, 6, 3 bottlenecks of 64, 128, 256, 512 filters (outputs
      56x56x256, 28x28x512, 14x14x1024, 7x7x2048). v1: the stride 2 of a downsampling block
      is in its first 1x1 conv (and its 1x1 projection shortcut), not in the 3x3 (that would
      be "v1.5"). Every stage's first block has a projection shortcut (conv2's at stride 1);
      the other blocks add the identity.
    * Global average pool and FC 1000 (``predictions``); softmax fused.
    * Layer names follow Keras (``conv3_block1_1_conv``, ``conv3_block1_add``, ...).
    """
    b = NetworkBuilder("resnet50", {"input": (224, 224, 3)})
    x = b.conv("conv1_conv", "input", 64, 7, 2, 3)
    x = b.pool("pool1_pool", x, 3, 2, 1)
    for stage, (filters, blocks, stride) in enumerate(
            ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), start=2):
        for block in range(1, blocks + 1):
            x = _bottleneck(b, x, f"conv{stage}_block{block}", filters,
                            stride if block == 1 else 1, project=block == 1)
    x = b.global_pool("avg_pool", x)
    b.fc("predictions", x, 1000)
    return b.build("ResNet-50 v1 (Keras applications), 224x224x3, BN folded",
                   "He et al., Deep Residual Learning for Image Recognition (arXiv 1512.03385), "
                   "Table 1; layout of keras.applications.ResNet50")


# --------------------------------------------------------------------------------------------
# Inception v3


def _cbn(b, name, x, filters, kh, kw, stride=1, padding="same"):
    """Keras ``conv2d_bn``: a ``kh`` x ``kw`` conv (BN folded, ReLU fused)."""
    return b.conv(name, x, filters, (kh, kw), stride, padding)


def _avg_pool_branch(b, name, x, filters):
    p = b.pool(f"{name}_pool", x, 3, 1, "same", kind="avgpool")
    return _cbn(b, f"{name}_pool_proj", p, filters, 1, 1)


def _inception_a(b, name, x, pool_filters):
    """mixed0..2 (35x35): 1x1 | 1x1 -> 5x5 | 1x1 -> 3x3 -> 3x3 | avg pool -> 1x1."""
    b1 = _cbn(b, f"{name}_1x1", x, 64, 1, 1)
    b5 = _cbn(b, f"{name}_5x5_reduce", x, 48, 1, 1)
    b5 = _cbn(b, f"{name}_5x5", b5, 64, 5, 5)
    b3 = _cbn(b, f"{name}_3x3dbl_1", x, 64, 1, 1)
    b3 = _cbn(b, f"{name}_3x3dbl_2", b3, 96, 3, 3)
    b3 = _cbn(b, f"{name}_3x3dbl_3", b3, 96, 3, 3)
    bp = _avg_pool_branch(b, name, x, pool_filters)
    return b.concat(name, b1, b5, b3, bp)


def _reduction_a(b, name, x):
    """mixed3 (35x35 -> 17x17): 3x3/2 | 1x1 -> 3x3 -> 3x3/2 | 3x3/2 max pool."""
    b3 = _cbn(b, f"{name}_3x3", x, 384, 3, 3, 2, "valid")
    bd = _cbn(b, f"{name}_3x3dbl_1", x, 64, 1, 1)
    bd = _cbn(b, f"{name}_3x3dbl_2", bd, 96, 3, 3)
    bd = _cbn(b, f"{name}_3x3dbl_3", bd, 96, 3, 3, 2, "valid")
    bp = b.pool(f"{name}_pool", x, 3, 2, "valid")
    return b.concat(name, b3, bd, bp)


def _inception_c(b, name, x, c7):
    """mixed4..7 (17x17): 1x1 | 1x1 -> 1x7 -> 7x1 | 1x1 -> 7x1 -> 1x7 -> 7x1 -> 1x7 |
    avg pool -> 1x1; ``c7`` is the width of the factorized 7x7 branches."""
    b1 = _cbn(b, f"{name}_1x1", x, 192, 1, 1)
    b7 = _cbn(b, f"{name}_7x7_1", x, c7, 1, 1)
    b7 = _cbn(b, f"{name}_7x7_2", b7, c7, 1, 7)
    b7 = _cbn(b, f"{name}_7x7_3", b7, 192, 7, 1)
    bd = _cbn(b, f"{name}_7x7dbl_1", x, c7, 1, 1)
    bd = _cbn(b, f"{name}_7x7dbl_2", bd, c7, 7, 1)
    bd = _cbn(b, f"{name}_7x7dbl_3", bd, c7, 1, 7)
    bd = _cbn(b, f"{name}_7x7dbl_4", bd, c7, 7, 1)
    bd = _cbn(b, f"{name}_7x7dbl_5", bd, 192, 1, 7)
    bp = _avg_pool_branch(b, name, x, 192)
    return b.concat(name, b1, b7, bd, bp)


def _reduction_b(b, name, x):
    """mixed8 (17x17 -> 8x8): 1x1 -> 3x3/2 | 1x1 -> 1x7 -> 7x1 -> 3x3/2 | 3x3/2 max pool."""
    b3 = _cbn(b, f"{name}_3x3_1", x, 192, 1, 1)
    b3 = _cbn(b, f"{name}_3x3_2", b3, 320, 3, 3, 2, "valid")
    b7 = _cbn(b, f"{name}_7x7x3_1", x, 192, 1, 1)
    b7 = _cbn(b, f"{name}_7x7x3_2", b7, 192, 1, 7)
    b7 = _cbn(b, f"{name}_7x7x3_3", b7, 192, 7, 1)
    b7 = _cbn(b, f"{name}_7x7x3_4", b7, 192, 3, 3, 2, "valid")
    bp = b.pool(f"{name}_pool", x, 3, 2, "valid")
    return b.concat(name, b3, b7, bp)


def _inception_e(b, name, x):
    """mixed9, mixed10 (8x8): 1x1 | 1x1 -> (1x3 | 3x1) | 1x1 -> 3x3 -> (1x3 | 3x1) |
    avg pool -> 1x1; the split pairs are concatenated first (``{name}_3x3``,
    ``{name}_3x3dbl``), as in Keras and TF-slim."""
    b1 = _cbn(b, f"{name}_1x1", x, 320, 1, 1)
    b3 = _cbn(b, f"{name}_3x3_reduce", x, 384, 1, 1)
    b3a = _cbn(b, f"{name}_3x3_1x3", b3, 384, 1, 3)
    b3b = _cbn(b, f"{name}_3x3_3x1", b3, 384, 3, 1)
    b3 = b.concat(f"{name}_3x3", b3a, b3b)
    bd = _cbn(b, f"{name}_3x3dbl_reduce", x, 448, 1, 1)
    bd = _cbn(b, f"{name}_3x3dbl_3x3", bd, 384, 3, 3)
    bda = _cbn(b, f"{name}_3x3dbl_1x3", bd, 384, 1, 3)
    bdb = _cbn(b, f"{name}_3x3dbl_3x1", bd, 384, 3, 1)
    bd = b.concat(f"{name}_3x3dbl", bda, bdb)
    bp = _avg_pool_branch(b, name, x, 192)
    return b.concat(name, b1, b3, bd, bp)


def inceptionv3():
    """Inception v3 (Szegedy et al. 2015), the Keras-applications / TF-slim layout, 299x299x3.

    * Stem: 3x3/2 (32, valid) -> 149, 3x3 (32, valid) -> 147, 3x3 (64, same), 3x3/2 max pool
      -> 73, 1x1 (80), 3x3 (192, valid) -> 71, 3x3/2 max pool -> 35x35x192.
    * mixed0..2 (35x35x256/288/288; pool branch 32, 64, 64), mixed3 (-> 17x17x768),
      mixed4..7 (17x17x768, factorized 1x7/7x1 branches of width 128, 160, 160, 192),
      mixed8 (-> 8x8x1280), mixed9..10 (8x8x2048 with 1x3/3x1 split branches).
    * Kernels are (h, w): "1x7" is one row by seven columns. Convs without a stated padding
      and the 3x3/1 average pools of the pooling branches use SAME; the strided reductions
      use VALID, exactly as Keras/TF-slim do.
    * Branch order inside each concat follows Keras (1x1, 5x5 or 7x7, double 3x3/7x7, pool).
    * The auxiliary classifier (training only) is left out; global average pool and FC 1000.
    """
    b = NetworkBuilder("inceptionv3", {"input": (299, 299, 3)})
    x = _cbn(b, "conv1_3x3_s2", "input", 32, 3, 3, 2, "valid")
    x = _cbn(b, "conv2_3x3", x, 32, 3, 3, 1, "valid")
    x = _cbn(b, "conv3_3x3", x, 64, 3, 3)
    x = b.pool("pool1", x, 3, 2, "valid")
    x = _cbn(b, "conv4_1x1", x, 80, 1, 1, 1, "valid")
    x = _cbn(b, "conv5_3x3", x, 192, 3, 3, 1, "valid")
    x = b.pool("pool2", x, 3, 2, "valid")
    for i, pool_filters in enumerate((32, 64, 64)):
        x = _inception_a(b, f"mixed{i}", x, pool_filters)
    x = _reduction_a(b, "mixed3", x)
    for i, c7 in enumerate((128, 160, 160, 192), start=4):
        x = _inception_c(b, f"mixed{i}", x, c7)
    x = _reduction_b(b, "mixed8", x)
    for i in (9, 10):
        x = _inception_e(b, f"mixed{i}", x)
    x = b.global_pool("avg_pool", x)
    b.fc("predictions", x, 1000)
    return b.build("Inception v3 (Keras applications / TF-slim), 299x299x3, BN folded",
                   "Szegedy et al., Rethinking the Inception Architecture for Computer Vision "
                   "(arXiv 1512.00567); layout of keras.applications.InceptionV3")


# --------------------------------------------------------------------------------------------
# MobileNetV1

# (pointwise filters, depthwise stride) of the 13 depthwise-separable blocks, alpha = 1.0
MOBILENET_V1_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                       (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def _mobilenet_v1_body(b, x):
    """3x3/2 conv (32), then 13 x (3x3 depthwise (stride) + 1x1 pointwise), all SAME; returns
    the last pointwise output (``conv_pw_13``). Block ``i`` is ``conv_dw_i``/``conv_pw_i``
    (TF-slim's ``Conv2d_i_depthwise``/``Conv2d_i_pointwise``)."""
    x = b.conv("conv1", x, 32, 3, 2, "same")
    for i, (filters, stride) in enumerate(MOBILENET_V1_BLOCKS, start=1):
        x = b.depthwise(f"conv_dw_{i}", x, 3, stride, "same")
        x = b.conv(f"conv_pw_{i}", x, filters, 1, 1, "valid")
    return x


def mobilenetv1(height=224, width=224, *, classifier=True, name="mobilenetv1"):
    """MobileNetV1 1.0 (Howard et al. 2017), Keras-applications / TF-slim layout, 224x224x3.

    * 3x3/2 conv (32) and the 13 depthwise-separable blocks of Table 1 (3x3 depthwise + 1x1
      pointwise, BN folded, ReLU6 fused), TFLite SAME padding everywhere: for 224 this is the
      (0, 1) padding Keras writes as ``ZeroPadding2D(((0, 1), (0, 1)))`` before its stride-2
      layers. Output 7x7x1024.
    * Head: global average pool and the 1000-way classifier as ``fc`` (Keras writes it as a
      1x1 conv ``conv_preds`` on the pooled 1x1x1024 tensor: the same weights and MACs);
      dropout and softmax are not layers.
    * ``height``/``width``/``classifier`` give the other input sizes (see
      :func:`mobilenetv1_1080p`).
    """
    b = NetworkBuilder(name, {"input": (height, width, 3)})
    x = _mobilenet_v1_body(b, "input")
    if classifier:
        x = b.global_pool("global_pool", x)
        b.fc("predictions", x, 1000)
    head = "global pool + FC 1000" if classifier else "feature extractor only (no classifier)"
    return b.build(f"MobileNetV1 1.0, {height}x{width}x3, {head}, BN folded",
                   "Howard et al., MobileNets (arXiv 1704.04861), Table 1; layout of "
                   "keras.applications.MobileNet / TF-slim mobilenet_v1")


def mobilenetv1_1080p():
    """MobileNetV1 1.0 body at 1080x1920x3 (full-HD frame, height x width), feature extractor
    only: conv1 ... ``conv_pw_13``, output 34x60x1024.

    The ImageNet head is left out. A 1000-way global-pool classifier over a whole 1080p frame
    is not how the network is used at that resolution (it is the backbone of dense detection
    or segmentation heads, which differ between applications), and the head is negligible
    activation traffic (a 1x1 tensor) while its 1.02 M FC weights would add 32 % to the
    body's 3.19 M weights, so including it would distort the weight traffic being compared.
    Call ``mobilenetv1(1080, 1920)`` for the variant with the head.

    TFLite SAME padding throughout: the stride-32 body on 1080 rows gives 540, 270, 135, 68,
    34 rows (135 -> 68 pads one row on each side); Keras' fixed ``((0, 1), (0, 1))`` zero
    padding would give 67 and then 34 rows instead, the columns (1920 -> 60) agree.
    """
    return mobilenetv1(1080, 1920, classifier=False, name="mobilenetv1-1080p")


# --------------------------------------------------------------------------------------------
# SRCNN


def srcnn(height=512, width=512, channels=3, kernels=(9, 5, 5)):
    """SRCNN (Dong et al. 2014/2015): f1 x f1 conv (64) -> f2 x f2 conv (32) -> f3 x f3 conv
    (``channels``), default the 9-5-5 network with 64 and 32 filters, the one AI Benchmark
    runs (seed 004 cites AI Benchmark v3.0.2).

    Input 512x512x3 with SAME padding (output = input size): that is the tensor of AI
    Benchmark's SRCNN test (input and output 512x512x3 in ``ai_benchmark/config.py``, test 8,
    of the AI Benchmark python package by the same authors; the Android app's v3.0.2 test
    resolution is not documented in a source available here). AI Benchmark works on RGB
    images, so three channels in and out rather than the paper's luminance channel. AI
    Benchmark names its model "SRCNN 9-5-5" (the 5x5 middle layer of Dong et al.'s larger
    variant, 69,152 weights); ``srcnn(kernels=(9, 1, 5))`` builds the basic 9-1-5 network
    (20,000 weights). The upscaling of the input (bicubic) is pre-processing, not a layer.
    """
    k1, k2, k3 = kernels
    b = NetworkBuilder("srcnn", {"input": (height, width, channels)})
    x = b.conv("conv1", "input", 64, k1, 1, "same")
    x = b.conv("conv2", x, 32, k2, 1, "same")
    b.conv("conv3", x, channels, k3, 1, "same")
    return b.build(f"SRCNN {k1}-{k2}-{k3} (64, 32 filters), {height}x{width}x{channels}, SAME",
                   "Dong et al., Image Super-Resolution Using Deep Convolutional Networks "
                   "(arXiv 1501.00092); input size of AI Benchmark's SRCNN test")


# --------------------------------------------------------------------------------------------
# SSD MobileNetV1 FPN

SSD_FPN_DEPTH = 256
SSD_FPN_TOWER_LAYERS = 4
SSD_ANCHORS_PER_LOCATION = 6  # 3 aspect ratios x 2 scales per octave
SSD_CLASS_SLOTS = 91  # 90 COCO classes + background
SSD_BOX_CODE = 4


def ssd_mobilenet_fpn():
    """SSD MobileNetV1 FPN (RetinaNet-style), TF object-detection API config
    ``ssd_mobilenet_v1_fpn_shared_box_predictor_640x640_coco14_sync``, 640x640x3.

    * Backbone: MobileNetV1 1.0 up to ``conv_pw_13`` (TF-slim ``Conv2d_13_pointwise``), the
      standard 1024-channel one (``use_depthwise`` is false, so the OD API's modified
      512/256-channel tail is not used), SAME padding: 80x80x256 (``conv_pw_5``), 40x40x512
      (``conv_pw_11``), 20x20x1024 (``conv_pw_13``).
    * FPN (``fpn_top_down_feature_maps``, depth 256, levels 3..7 = 5 levels): 1x1 projections
      (with bias, no BN) of the three backbone maps; top-down: nearest-neighbour 2x upsample
      of the running sum, ``add`` with the next projection, then a 3x3 "smoothing" conv on
      that sum (the top level, P5 = ``fpn_projection_3``, is not smoothed). P6, P7: 3x3/2
      convs (256, SAME) from P5 then P6. Levels: 80, 40, 20, 10, 5 (all x 256).
    * Box predictor (``WeightSharedConvolutionalBoxPredictor``, depth 256,
      ``num_layers_before_predictor`` 4, kernel 3, ``share_prediction_tower`` false): on every
      level a box tower and a class tower of 4 x (3x3 conv 256, BN folded, ReLU6), then 3x3
      heads of 6 x 4 = 24 (box) and 6 x 91 = 546 (class) channels: 6 anchors per location
      (aspect ratios 1, 2, 0.5 x 2 scales per octave) and 90 COCO classes + background. 8525
      locations x 6 = 51150 anchors.
    * The towers and heads share weights across levels in the trained model, but each level's
      tower conv has its own batch norm, so folding BN gives every level its own tower
      weights (as in the exported TFLite graph); the shape description cannot express weight
      sharing, so each level has its own layers and the weight count includes the towers
      and heads five times.
    * Not modelled: the reshape/concat of the 10 prediction tensors into [51150, 4] and
      [51150, 91], sigmoid, anchor decoding and NMS (post-processing).
    """
    b = NetworkBuilder("ssd-mobilenet-fpn", {"input": (640, 640, 3)})
    _mobilenet_v1_body(b, "input")
    c3, c4, c5 = "conv_pw_5", "conv_pw_11", "conv_pw_13"
    d = SSD_FPN_DEPTH
    p5 = top_down = b.conv("fpn_projection_3", c5, d, 1, 1, "valid")
    levels = [p5]
    for level, source in ((2, c4), (1, c3)):
        up = b.upsample(f"fpn_upsample_{level}", top_down, 2)
        lateral = b.conv(f"fpn_projection_{level}", source, d, 1, 1, "valid")
        top_down = b.add(f"fpn_add_{level}", up, lateral)
        levels.insert(0, b.conv(f"fpn_smoothing_{level}", top_down, d, 3, 1, "same"))
    p6 = b.conv("fpn_bottom_up_14", p5, d, 3, 2, "same")
    p7 = b.conv("fpn_bottom_up_15", p6, d, 3, 2, "same")
    levels += [p6, p7]
    a = SSD_ANCHORS_PER_LOCATION
    for index, feature in enumerate(levels):
        for tower, outputs in (("box", a * SSD_BOX_CODE), ("class", a * SSD_CLASS_SLOTS)):
            x = feature
            for i in range(SSD_FPN_TOWER_LAYERS):
                x = b.conv(f"{tower}_tower_{i}_level{index}", x, d, 3, 1, "same")
            b.conv(f"{tower}_predictor_level{index}", x, outputs, 3, 1, "same")
    return b.build("SSD MobileNetV1 FPN 640x640 (COCO): 5 levels, 4-layer box/class towers, "
                   "6 anchors/location, BN folded",
                   "TF object-detection API, ssd_mobilenet_v1_fpn_shared_box_predictor_640x640"
                   "_coco14_sync.config; Lin et al., Focal Loss (arXiv 1708.02002)")


# --------------------------------------------------------------------------------------------
# YOLOv3

# (filters, residual blocks) of Darknet-53's five stages, each opened by a 3x3/2 conv
DARKNET53_STAGES = ((64, 1), (128, 2), (256, 8), (512, 8), (1024, 4))
YOLO_OUTPUTS = 3 * (4 + 1 + 80)  # 3 anchors x (box, objectness, 80 COCO classes) = 255


class _Darknet:
    """Names layers by their index in Darknet's ``yolov3.cfg`` (``conv36``, ``shortcut36``);
    ``route`` layers of one input are aliases, not layers, but still take an index."""

    def __init__(self, b):
        self.b = b
        self.index = 0
        self.out = {}  # cfg index -> tensor name

    def _take(self, name):
        self.out[self.index] = name
        self.index += 1
        return name

    def conv(self, x, filters, kernel, stride=1):
        # Darknet pad=1: size // 2 on every side (symmetric, even for stride 2)
        name = f"conv{self.index}"
        return self._take(self.b.conv(name, x, filters, kernel, stride, kernel // 2))

    def shortcut(self, x, y):
        return self._take(self.b.add(f"shortcut{self.index}", x, y))

    def upsample(self, x):
        return self._take(self.b.upsample(f"upsample{self.index}", x, 2))

    def route(self, *indices):
        names = [self.out[i] for i in indices]
        if len(names) == 1:
            return self._take(names[0])
        return self._take(self.b.concat(f"route{self.index}", *names))

    def yolo(self, x):
        return self._take(x)  # box decoding: post-processing, not a layer


def yolov3():
    """YOLOv3 (Redmon & Farhadi 2018), Darknet ``yolov3.cfg`` at 416x416x3, 80 COCO classes.

    * Darknet-53 backbone: 3x3 conv (32), then five stages of a 3x3/2 conv (64, 128, 256, 512,
      1024) and 1, 2, 8, 8, 4 residual blocks (1x1 conv to half the width, 3x3 conv back,
      ``shortcut`` = ``add`` with the block input).
    * Three detection heads: 13x13 (from the backbone end), 26x26 and 52x52. Each head is five
      alternating 1x1/3x3 convs (512/1024, 256/512, 128/256), one 3x3 conv and a 1x1 conv of
      255 = 3 x (4 + 1 + 80) outputs (linear, with bias, no BN). The route from the 5th conv
      of a head goes through a 1x1 conv (256, 128), 2x nearest upsample and a ``concat`` with
      backbone layer 61 (26x26x512) or 36 (52x52x256), upsampled tensor first.
    * Layers are named by their ``yolov3.cfg`` index (``conv0`` ... ``conv105``,
      ``shortcut4``, ``upsample85``, ``route86``); single-input routes are aliases and the
      three ``yolo`` layers (box decoding) are post-processing.
    * Padding: Darknet's symmetric ``size // 2`` (1 for 3x3, also for stride 2); the output
      sizes equal SAME's. Batch norm folded; leaky ReLU fused.
    """
    b = NetworkBuilder("yolov3", {"input": (416, 416, 3)})
    d = _Darknet(b)
    x = d.conv("input", 32, 3)
    for filters, blocks in DARKNET53_STAGES:
        x = d.conv(x, filters, 3, 2)
        for _ in range(blocks):
            y = d.conv(x, filters // 2, 1)
            y = d.conv(y, filters, 3)
            x = d.shortcut(x, y)
    for width, skip in ((512, None), (256, 61), (128, 36)):
        if skip is not None:
            x = d.route(d.index - 4)
            x = d.conv(x, width, 1)
            x = d.upsample(x)
            x = d.route(d.index - 1, skip)
        for _ in range(2):
            x = d.conv(x, width, 1)
            x = d.conv(x, 2 * width, 3)
        x = d.conv(x, width, 1)
        y = d.conv(x, 2 * width, 3)
        y = d.conv(y, YOLO_OUTPUTS, 1)
        d.yolo(y)
    return b.build("YOLOv3-416 (Darknet-53, 3 heads, 80 classes), BN folded",
                   "Redmon & Farhadi, YOLOv3: An Incremental Improvement (arXiv 1804.02767); "
                   "Darknet cfg/yolov3.cfg")


NETWORKS = {
    "resnet50": resnet50,
    "inceptionv3": inceptionv3,
    "mobilenetv1": mobilenetv1,
    "mobilenetv1-1080p": mobilenetv1_1080p,
    "srcnn": srcnn,
    "ssd-mobilenet-fpn": ssd_mobilenet_fpn,
    "yolov3": yolov3,
}
