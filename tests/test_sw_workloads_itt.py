"""Seed 004's networks (sw/workloads/itt_networks.py): graphs, shapes and published sizes.

Parameter counts of trained models include batch-norm parameters; the shape descriptions fold
BN into the convolutions (one bias per output channel). Where a framework's exact count is
known, the test converts it to the folded count: ``published - k * BN channels``, where the BN
channels are the outputs of every conv that has a BN after it and ``k`` is the number of BN
parameters per channel that folding removes.
"""

import pytest

from sw.workloads import itt_networks as itt
from sw.workloads.shapes import Network

NAMES = ["resnet50", "inceptionv3", "mobilenetv1", "mobilenetv1-1080p", "srcnn",
         "ssd-mobilenet-fpn", "yolov3"]

OUTPUTS = {
    "resnet50": ["predictions"],
    "inceptionv3": ["predictions"],
    "mobilenetv1": ["predictions"],
    "mobilenetv1-1080p": ["conv_pw_13"],
    "srcnn": ["conv3"],
    "ssd-mobilenet-fpn": [f"{head}_predictor_level{i}" for i in range(5)
                          for head in ("box", "class")],
    "yolov3": ["conv81", "conv93", "conv105"],
}


@pytest.fixture(scope="module")
def nets():
    return {name: factory() for name, factory in itt.NETWORKS.items()}


def params(net):
    """Weights and biases (elements) of a BN-folded network."""
    return net.weight_elements + sum(layer.bias_elements for layer in net.layers)


def conv_channels(net, exclude=()):
    """Output channels of the convs and depthwise convs (the BN channels before folding)."""
    return sum(layer.out_channels for layer in net.layers
               if layer.kind in ("conv", "depthwise") and layer.name not in exclude)


def kinds(net):
    counts = {}
    for layer in net.layers:
        counts[layer.kind] = counts.get(layer.kind, 0) + 1
    return counts


def test_cli_names():
    assert list(itt.NETWORKS) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_builds_and_validates(nets, name):
    net = nets[name]
    assert isinstance(net, Network) and net.name == name
    assert net.description and net.source
    shapes = net.validate()
    assert len(shapes) == len(net.layers) + 1
    # no dangling branch: every layer feeds another one, except the network's outputs
    assert net.outputs == OUTPUTS[name]
    # every add joins two tensors that are really different producers
    for layer in net.layers:
        if layer.kind in ("add", "concat"):
            assert len(set(layer.inputs)) == len(layer.inputs) >= 2, layer.name


# ---------------------------------------------------------------------------------- ResNet-50


def test_resnet50_size(nets):
    net = nets["resnet50"]
    # He et al. 2015, Table 1: 3.8e9 multiply-adds for ResNet-50; the v1 layout counts
    # 3.86 G. The "v1.5" layout (stride in the 3x3) would be 4.09 G and fail this range.
    assert 3.80e9 <= net.macs <= 3.90e9
    assert net.macs == 3_857_973_248
    # keras.applications.ResNet50().summary(): 25,636,712 params, of which 53,120
    # non-trainable (BN moving mean/variance); BN has 4 params per channel (gamma, beta, mean,
    # variance) which folding turns into the conv's existing bias.
    assert conv_channels(net) == 53_120 // 2
    assert params(net) == 25_636_712 - 4 * conv_channels(net)
    assert 25.5e6 <= params(net) <= 25.6e6


def test_resnet50_graph(nets):
    net = nets["resnet50"]
    assert net.layer("conv1_conv").out_shape == (112, 112, 64)
    assert net.layer("pool1_pool").out_shape == (56, 56, 64)
    for block, shape in (("conv2_block3", (56, 56, 256)), ("conv3_block4", (28, 28, 512)),
                         ("conv4_block6", (14, 14, 1024)), ("conv5_block3", (7, 7, 2048))):
        assert net.layer(f"{block}_add").out_shape == shape
    assert kinds(net) == {"conv": 53, "maxpool": 1, "add": 16, "avgpool": 1, "fc": 1}
    # v1: the downsampling stride sits in the first 1x1 and the projection
    for name in ("conv3_block1_0_conv", "conv3_block1_1_conv"):
        assert net.layer(name).kernel == (1, 1) and net.layer(name).stride == (2, 2)
    assert net.layer("conv3_block1_2_conv").stride == (1, 1)
    # projection shortcut vs identity shortcut
    assert net.layer("conv3_block1_add").inputs == ("conv3_block1_0_conv", "conv3_block1_3_conv")
    assert net.layer("conv3_block2_add").inputs == ("conv3_block1_add", "conv3_block2_3_conv")


# -------------------------------------------------------------------------------- InceptionV3


def test_inceptionv3_size(nets):
    net = nets["inceptionv3"]
    # 5.71 G multiply-adds at 299x299 (torchvision's Inception_V3 table, "5.71 GFLOPS",
    # counted as MACs); Szegedy et al. 2015 quote "5 billion multiply-adds".
    assert net.macs == pytest.approx(5.71e9, rel=0.005)
    # keras.applications.InceptionV3().summary(): 23,851,784 params, 23,817,352 trainable,
    # 34,432 non-trainable. conv2d_bn has no conv bias and BN scale=False: 3 BN params per
    # channel (beta, mean, variance), folding keeps one (the bias).
    assert conv_channels(net) == 34_432 // 2
    assert params(net) == 23_851_784 - 2 * conv_channels(net) == 23_817_352


def test_inceptionv3_graph(nets):
    net = nets["inceptionv3"]
    assert net.layer("pool2").out_shape == (35, 35, 192)
    expected = {"mixed0": (35, 35, 256), "mixed1": (35, 35, 288), "mixed2": (35, 35, 288),
                "mixed3": (17, 17, 768), "mixed8": (8, 8, 1280),
                "mixed9": (8, 8, 2048), "mixed10": (8, 8, 2048)}
    expected.update({f"mixed{i}": (17, 17, 768) for i in range(4, 8)})
    for name, shape in expected.items():
        layer = net.layer(name)
        assert layer.kind == "concat" and layer.out_shape == shape, name
    assert len(net.layer("mixed0").inputs) == 4 and len(net.layer("mixed3").inputs) == 3
    # factorized 7x7: (1, 7) then (7, 1) kernels, (h, w)
    assert net.layer("mixed4_7x7_2").kernel == (1, 7)
    assert net.layer("mixed4_7x7_3").kernel == (7, 1)
    # mixed9/10 concatenate the split 1x3 | 3x1 pairs first
    assert net.layer("mixed9").inputs == ("mixed9_1x1", "mixed9_3x3", "mixed9_3x3dbl",
                                          "mixed9_pool_proj")
    assert net.layer("mixed9_3x3").out_shape == (8, 8, 768)
    assert kinds(net) == {"conv": 94, "maxpool": 4, "avgpool": 10, "concat": 15, "fc": 1}


# -------------------------------------------------------------------------------- MobileNetV1


def test_mobilenetv1_size(nets):
    net = nets["mobilenetv1"]
    # Howard et al. 2017, Table 8: 1.0 MobileNet-224, 569 million mult-adds, 4.2 million params
    assert net.macs == pytest.approx(569e6, rel=0.002)
    # keras.applications.MobileNet().summary(): 4,253,864 params, 21,888 non-trainable; the
    # convs have no bias, BN has 4 params per channel, folding keeps one.
    assert conv_channels(net) == 21_888 // 2
    assert params(net) == 4_253_864 - 3 * conv_channels(net)
    assert params(net) == pytest.approx(4.2e6, rel=0.01)
    assert net.layer("conv_pw_13").out_shape == (7, 7, 1024)
    assert kinds(net) == {"conv": 14, "depthwise": 13, "avgpool": 1, "fc": 1}


def _mobilenet_body_macs(h, w):
    """MACs of MobileNetV1's body, from Table 1 and SAME (ceil) output sizes."""
    h, w = -(-h // 2), -(-w // 2)
    macs, cin = h * w * 27 * 32, 32
    for cout, stride in itt.MOBILENET_V1_BLOCKS:
        h, w = -(-h // stride), -(-w // stride)
        macs += h * w * cin * 9 + h * w * cin * cout
        cin = cout
    return macs


def test_mobilenetv1_1080p(nets):
    net, ref = nets["mobilenetv1-1080p"], nets["mobilenetv1"]
    rows = [net.layer(f"conv_pw_{i}").out_shape[:2] for i in (1, 3, 5, 11, 13)]
    assert rows == [(540, 960), (270, 480), (135, 240), (68, 120), (34, 60)]
    assert net.layer("conv_pw_13").out_shape == (34, 60, 1024)
    # the same body without the classifier (global pool + 1024 x 1000 FC)
    assert net.weight_elements == ref.weight_elements - 1024 * 1000
    assert net.macs == _mobilenet_body_macs(1080, 1920)
    assert ref.macs == _mobilenet_body_macs(224, 224) + 1024 * 1000
    assert "fc" not in kinds(net)


# ------------------------------------------------------------------------------------- SRCNN


def test_srcnn(nets):
    net = nets["srcnn"]
    assert [layer.kernel for layer in net.layers] == [(9, 9), (5, 5), (5, 5)]
    assert [layer.out_channels for layer in net.layers] == [64, 32, 3]
    assert net.layer("conv3").out_shape == net.inputs["input"] == (512, 512, 3)
    # AI Benchmark's "SRCNN 9-5-5"
    assert net.weight_elements == 9 * 9 * 3 * 64 + 5 * 5 * 64 * 32 + 5 * 5 * 32 * 3 == 69_152
    assert net.macs == 512 * 512 * 69_152
    # Dong et al. 2015 (arXiv 1501.00092), Sec. 4.3: on the luminance channel the 9-1-5
    # network has 8,032 parameters and 9-5-5 has 57,184 (weights only)
    assert itt.srcnn(channels=1, kernels=(9, 1, 5)).weight_elements == 8_032
    assert itt.srcnn(channels=1, kernels=(9, 5, 5)).weight_elements == 57_184


# ---------------------------------------------------------------------------- SSD MobileNet FPN

SSD_LEVELS = [("fpn_smoothing_1", 80), ("fpn_smoothing_2", 40), ("fpn_projection_3", 20),
              ("fpn_bottom_up_14", 10), ("fpn_bottom_up_15", 5)]


def test_ssd_mobilenet_fpn_graph(nets):
    net = nets["ssd-mobilenet-fpn"]
    assert net.layer("conv_pw_5").out_shape == (80, 80, 256)
    assert net.layer("conv_pw_11").out_shape == (40, 40, 512)
    assert net.layer("conv_pw_13").out_shape == (20, 20, 1024)
    for name, size in SSD_LEVELS:
        assert net.layer(name).out_shape == (size, size, 256), name
    # top-down: upsample the running sum, add the lateral projection
    assert net.layer("fpn_add_2").inputs == ("fpn_upsample_2", "fpn_projection_2")
    assert net.layer("fpn_upsample_1").inputs == ("fpn_add_2",)
    assert net.layer("fpn_add_1").inputs == ("fpn_upsample_1", "fpn_projection_1")
    anchors = 0
    for level, (source, size) in enumerate(SSD_LEVELS):
        for head, channels in (("box", 6 * 4), ("class", 6 * 91)):
            assert net.layer(f"{head}_tower_0_level{level}").inputs == (source,)
            assert net.layer(f"{head}_predictor_level{level}").inputs == (
                f"{head}_tower_3_level{level}",)
            assert net.layer(f"{head}_predictor_level{level}").out_shape == (size, size,
                                                                             channels)
        anchors += size * size * 6
    assert anchors == 51_150  # the exported model's anchor count at 640x640
    assert kinds(net) == {"conv": 71, "depthwise": 13, "upsample": 2, "add": 2}


def test_ssd_mobilenet_fpn_size(nets):
    # No published MAC count is known for this configuration; check against the config
    # computed independently: the MobileNetV1 body at 640, the FPN and 5 levels of two 4-layer
    # 3x3x256 towers with 3x3 heads of 24 and 546 channels.
    net = nets["ssd-mobilenet-fpn"]
    d = 256
    fpn = (20 * 20 * 1024 * d + 40 * 40 * 512 * d + 80 * 80 * 256 * d      # projections
           + (40 * 40 + 80 * 80) * 9 * d * d                               # smoothing
           + (10 * 10 + 5 * 5) * 9 * d * d)                                # P6, P7
    pixels = sum(size * size for _, size in SSD_LEVELS)
    heads = pixels * 9 * d * (2 * 4 * d + 24 + 546)
    assert net.macs == _mobilenet_body_macs(640, 640) + fpn + heads == 61_582_451_200
    body = itt.mobilenetv1(classifier=False).weight_elements
    tower_weights = 5 * 9 * d * (8 * d + 24 + 546)  # per-level copies (BN folded per level)
    fpn_weights = (1024 + 512 + 256) * d + 4 * 9 * d * d
    assert net.weight_elements == body + fpn_weights + tower_weights


# ------------------------------------------------------------------------------------ YOLOv3


def test_yolov3_size(nets):
    net = nets["yolov3"]
    # pjreddie.com/darknet/yolo: YOLOv3-416, 65.86 Bn FLOPS (Darknet counts 2 per MAC)
    assert 2 * net.macs == pytest.approx(65.86e9, rel=0.001)
    # 61,949,149 parameters: the PyTorch port of yolov3.cfg (ultralytics/yolov3 model summary)
    # counts BN weight and bias (2 per channel); folded, one bias per channel remains. The
    # three 255-channel output convs have a bias and no BN.
    heads = ("conv81", "conv93", "conv105")
    assert params(net) == 61_949_149 - conv_channels(net, exclude=heads)
    assert params(net) == pytest.approx(62e6, rel=0.005)


def test_yolov3_graph(nets):
    net = nets["yolov3"]
    assert net.layer("conv81").out_shape == (13, 13, 255)
    assert net.layer("conv93").out_shape == (26, 26, 255)
    assert net.layer("conv105").out_shape == (52, 52, 255)
    # Darknet-53: 1 + 2 + 8 + 8 + 4 residual adds; the routes concatenate the upsampled head
    # with backbone layers 61 and 36
    assert kinds(net) == {"conv": 75, "add": 23, "upsample": 2, "concat": 2}
    assert net.layer("shortcut36").out_shape == (52, 52, 256)
    assert net.layer("shortcut61").out_shape == (26, 26, 512)
    assert net.layer("route86").inputs == ("upsample85", "shortcut61")
    assert net.layer("route86").out_shape == (26, 26, 768)
    assert net.layer("route98").inputs == ("upsample97", "shortcut36")
    assert net.layer("route98").out_shape == (52, 52, 384)
    assert net.layer("conv84").inputs == ("conv79",)  # route -4
    assert net.layer("conv96").inputs == ("conv91",)
    assert net.layer("shortcut4").inputs == ("conv1", "conv3")
    assert net.layer("conv1").stride == (2, 2) and net.layer("conv1").out_shape[:2] == (208, 208)
