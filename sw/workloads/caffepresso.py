"""The benchmark ConvNets of seed 001 (Hegde, Siddhartha, Kapre, "CaffePresso: Accelerating
Convolutional Networks on Embedded SoCs", ACM TECS 2017), Table I: one network per dataset
(MNIST, CIFAR10, STL-10, Caltech101, ImageNet/AlexNet).

Table I lists per layer the map count and size, the kernel and the pooling; its caption says
"2x2 pool and subsample in layers where not specified". It gives no convolution strides or
paddings, so each network below takes them from what the listed map sizes require (stated per
network). Pooling is max pooling in floor mode (the builder's ``"valid"``): Caltech101's listed
19 x 19 maps need floor mode, and every other listed size is the same in Caffe's ceil mode.
ReLU layers are left out (element-wise, applied on the producer's output); Caffe's
inner-product layers are ``fc``. Every layer has a bias, as Caffe's layers do by default.

Table I's "Ops." column (8.9 M, 14.6 M, 139 M, 2.3 G, 1.7 G) cannot be reproduced from the
layer shapes, neither as MACs nor as 2 x MACs, conv-only or with the FC layers (seed 001 digest
Sec. 2); the networks are built from the shapes, and their ``macs`` do not match that column.

Secondary source, used only where noted: the authors' repository ``gplhegde/caffepresso``
(``gpu/*.prototxt``), which does not always match Table I (it has 1-channel CIFAR10 and
Caltech101 inputs and an unpadded CIFAR10).
"""

from .shapes import NetworkBuilder

__all__ = ["NETWORKS", "alexnet", "caltech101", "cifar10", "mnist", "stl10"]

_SOURCE = "seed 001, Sec. 2.1, Table I"


def mnist():
    """MNIST, Caffe's LeNet: 1x28x28 -> conv 20@5x5 -> pool 2 -> conv 50@5x5 -> pool 2 ->
    fc 800x500 -> fc 500x10.

    Table I, layer 1 says "5 28x28 maps, 5x5 kern., 2x2 pool". Built: 20 maps of 24 x 24
    (5 x 5, valid). Why: a 28 x 28 map pooled to 14 x 14 cannot give layer 2's listed 50 8 x 8
    maps with a 5 x 5 kernel (10 x 10 valid, 14 x 14 padded); 8 x 8 needs a 12 x 12 input,
    i.e. 24 x 24 before the pool, which is the valid 5 x 5 convolution of the 28 x 28 image.
    fc1's 800 inputs = 50 x 4 x 4 agree. The map count 5 does not follow from the other rows;
    20 is standard LeNet and the authors' ``gpu/mnist.prototxt`` ("LeNet", ``num_output: 20``),
    so "5 28x28" is read as a garbled entry. Layer 2 and both FC layers are as listed.
    """
    b = NetworkBuilder("caffepresso-mnist", {"input": (28, 28, 1)})
    x = b.conv("conv1", "input", 20, 5, 1, "valid")
    x = b.pool("pool1", x, 2)
    x = b.conv("conv2", x, 50, 5, 1, "valid")
    x = b.pool("pool2", x, 2)
    x = b.fc("fc1", x, 500)
    b.fc("fc2", x, 10)
    return b.build("CaffePresso MNIST ConvNet (LeNet: 20/50 maps, 5x5, 2x2 pools, 2 FC)",
                   f"{_SOURCE}, MNIST row; conv1 maps from LeNet (gplhegde/caffepresso "
                   f"gpu/mnist.prototxt)")


def cifar10():
    """CIFAR10: 3x32x32 -> conv 32@5x5 -> pool 2 -> conv 32@5x5 pad 2 -> pool 2 ->
    conv 64@5x5 pad 2 -> pool 3x3 stride 2 -> fc 576x500 -> fc 500x10.

    Table I lists 32 28x28, 32 14x14 and 64 7x7 maps, all 5 x 5, pools 2x2, 2x2, 3x3, and FC
    "fc1: 576x500", "fc1: 500x10". Built: conv1 valid (32 -> 28); conv2 and conv3 padded by 2
    (a valid 5 x 5 would give 10 x 10 and 3 x 3, not the listed 14 x 14 and 7 x 7); the 3 x 3
    pool with stride 2 (the caption's default subsample), which gives 3 x 3 x 64 = 576 = fc1's
    inputs (stride 3 would give 2 x 2 x 64 = 256). The second FC row, labelled "fc1" in the
    table, is built as ``fc2``. The repository's ``gpu/cifar10.prototxt`` (1 channel, no
    padding, 2 x 2 pools) does not give Table I's sizes and is not followed.
    """
    b = NetworkBuilder("caffepresso-cifar10", {"input": (32, 32, 3)})
    x = b.conv("conv1", "input", 32, 5, 1, "valid")
    x = b.pool("pool1", x, 2)
    x = b.conv("conv2", x, 32, 5, 1, 2)
    x = b.pool("pool2", x, 2)
    x = b.conv("conv3", x, 64, 5, 1, 2)
    x = b.pool("pool3", x, 3, 2)
    x = b.fc("fc1", x, 500)
    b.fc("fc2", x, 10)
    return b.build("CaffePresso CIFAR10 ConvNet (32/32/64 maps, 5x5, pools 2/2/3, 2 FC)",
                   f"{_SOURCE}, CIFAR10 row; paddings inferred from the listed map sizes")


def stl10():
    """STL-10: 1x96x96 -> conv 32@5x5 -> pool 2 -> conv 32@5x5 -> pool 2 -> fc 14112x500 ->
    fc 500x10.

    As Table I lists it: 96 -> 92 (valid 5 x 5) -> 46 -> 42 -> 21, and 32 x 21 x 21 = 14112 =
    fc1's inputs. The input has one channel as the table says (STL-10 images are colour; the
    authors' ``gpu/stl10.prototxt`` also uses one channel).
    """
    b = NetworkBuilder("caffepresso-stl10", {"input": (96, 96, 1)})
    x = b.conv("conv1", "input", 32, 5, 1, "valid")
    x = b.pool("pool1", x, 2)
    x = b.conv("conv2", x, 32, 5, 1, "valid")
    x = b.pool("pool2", x, 2)
    x = b.fc("fc1", x, 500)
    b.fc("fc2", x, 10)
    return b.build("CaffePresso STL-10 ConvNet (32/32 maps, 5x5, 2x2 pools, 2 FC)",
                   f"{_SOURCE}, STL-10 row")


def caltech101():
    """Caltech101: 3x150x150 -> conv 64@9x9 -> pool 10x10 stride 5 -> conv 256@9x9 ->
    pool 6x6 stride 4 -> fc 4096x5000 -> fc 5000x101.

    Table I says the input is 3x151x151, with 64 142x142 maps (9 x 9, "10x10 pool, 5x5
    subsm.") and 256 19x19 maps (9 x 9, "6x6 pool, 4x4 subsm."). Built: a 150 x 150 input,
    because a valid 9 x 9 convolution gives 142 only from 150 (151 gives 143); the authors'
    ``gpu/caltech101.prototxt`` also has 150 x 150. Pools are floor mode: (142 - 10) // 5 + 1
    = 27, 27 - 9 + 1 = 19 as listed, (19 - 6) // 4 + 1 = 4, and 256 x 4 x 4 = 4096 = fc1's
    inputs (Caffe's ceil mode would give 28 and 20). Kept Table I's 3 input channels; the
    repository's prototxt has 1, which would cut conv1's MACs by 3 (583.6 M conv MACs in all
    instead of 792.7 M).
    """
    b = NetworkBuilder("caffepresso-caltech101", {"input": (150, 150, 3)})
    x = b.conv("conv1", "input", 64, 9, 1, "valid")
    x = b.pool("pool1", x, 10, 5)
    x = b.conv("conv2", x, 256, 9, 1, "valid")
    x = b.pool("pool2", x, 6, 4)
    x = b.fc("fc1", x, 5000)
    b.fc("fc2", x, 101)
    return b.build("CaffePresso Caltech101 ConvNet (64/256 maps, 9x9, pools 10/5 and 6/4, "
                   "2 FC)", f"{_SOURCE}, Caltech101 row; input 150x150 as the map sizes "
                   f"require")


def alexnet():
    """ImageNet, AlexNet: 3x227x227 -> conv1 96@11x11 stride 4 -> pool 3/2 -> conv2 256@5x5
    pad 2 -> pool 3/2 -> conv3 384, conv4 384, conv5 256 @3x3 pad 1 -> pool 3/2 ->
    fc 9216x4096 -> fc 4096x4096 -> fc 4096x1000.

    Table I lists 96 55x55, 256 27x27 and "384, 384, 256 13x13" maps with 11 x 11, 5 x 5 and
    3 x 3 kernels, 3x3 pools, and FC layers of 4096, 4096 and 1000 neurons, "based on Caffe's
    implementation of AlexNet - bvlc_alexnet". Built with bvlc_alexnet's strides and paddings
    (stride 4; pools 3 x 3 stride 2; pad 2 and 1), which give exactly the listed sizes; the
    "Others" column's one "3x3 pool" is the pool after conv5, as in AlexNet. The FC layers are
    named fc1 ... fc3 as in Table I (Caffe's fc6 ... fc8); fc1 has 256 x 6 x 6 = 9216 inputs.

    Dense convolutions, no groups: bvlc_alexnet splits conv2, conv4 and conv5 into 2 groups,
    but the paper's layer set has no grouped convolution (its kernels loop over every input
    map, Sec. 2.2 Fig. 2) and no cross-map normalisation (LRN is dropped), and the authors'
    ``gpu/alexnet.prototxt`` ("AlexNet-modified") has no groups. With groups the convolutions
    would have 665.8 M MACs instead of 1076.6 M; the shapes are the same.
    """
    b = NetworkBuilder("caffepresso-imagenet", {"input": (227, 227, 3)})
    x = b.conv("conv1", "input", 96, 11, 4, "valid")
    x = b.pool("pool1", x, 3, 2)
    x = b.conv("conv2", x, 256, 5, 1, 2)
    x = b.pool("pool2", x, 3, 2)
    x = b.conv("conv3", x, 384, 3, 1, 1)
    x = b.conv("conv4", x, 384, 3, 1, 1)
    x = b.conv("conv5", x, 256, 3, 1, 1)
    x = b.pool("pool5", x, 3, 2)
    x = b.fc("fc1", x, 4096)
    x = b.fc("fc2", x, 4096)
    b.fc("fc3", x, 1000)
    return b.build("CaffePresso ImageNet ConvNet (AlexNet, dense: 5 conv, 3 pools, 3 FC)",
                   f"{_SOURCE}, ImageNet row and its footnote (bvlc_alexnet); no groups as in "
                   f"gplhegde/caffepresso gpu/alexnet.prototxt")


NETWORKS = {
    "caffepresso-mnist": mnist,
    "caffepresso-cifar10": cifar10,
    "caffepresso-stl10": stl10,
    "caffepresso-caltech101": caltech101,
    "caffepresso-imagenet": alexnet,
}
