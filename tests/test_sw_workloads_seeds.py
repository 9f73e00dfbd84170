"""The benchmark networks of seed 003 (NVE face and speed-sign detection) and seed 001
(CaffePresso Table I) against the seeds' own tables.

The expected tables are transcribed from the seeds (seed 003 Table 1 and Appendix A, seed 001
Table I with the readings the modules document), not computed by the code under test.
"""

import re

import pytest

from sw.workloads import caffepresso, nve_networks
from sw.workloads.shapes import Network

# --- seed 003 -----------------------------------------------------------------------------

# Table 1, one row per layer: maps, "W x H" feature-map size, kernel, subsample, MAC column.
# The 1280x720 frame is the input of L1.
TABLE_1 = {
    "face-detection": [
        ("L1", 4, "638x358", 6, 2, "32.9M"),
        ("L2", 14, "317x177", 4, 2, "17.95M"),
        ("L3", 14, "312x172", 6, 1, "27M"),
        ("L4", 1, "312x172", 1, 1, "0.75M"),
    ],
    "speed-sign": [
        ("L1", 6, "637x357", 6, 2, "49.1M"),
        ("L2", 16, "317x177", 6, 2, "121.2M"),
        ("L3", 80, "312x172", 5, 1, "858.6M"),
        ("L4", 1, "312x172", 1, 1, "4.3M"),
    ],
}
TABLE_1_TOTAL = {"face-detection": "78.6M", "speed-sign": "1.03G"}

# Appendix A: connected (input map, output map) pairs = sum of the outNet cnt attributes,
# and the cnt of every output map.
APPENDIX_A_CNT = {
    "face-detection": {
        "L1": [1] * 4,
        "L2": [1] * 8 + [2] * 6,
        "L3": [1] * 14,
        "L4": [14],
    },
    "speed-sign": {
        "L1": [1] * 6,
        "L2": [3] * 6 + [4] * 9 + [6],
        "L3": [8] * 80,
        "L4": [80],
    },
}
APPENDIX_A_PAIRS = {
    "face-detection": {"L1": 4, "L2": 20, "L3": 14, "L4": 14},
    "speed-sign": {"L1": 6, "L2": 60, "L3": 640, "L4": 80},
}

# Exact MACs from Table 1's sizes: out_w * out_h * kernel^2 * connected pairs.
NVE_MACS = {
    "face-detection": {
        "L1": 638 * 358 * 36 * 4,
        "L2": 317 * 177 * 16 * 20,
        "L3": 312 * 172 * 36 * 14,
        "L4": 312 * 172 * 1 * 14,
    },
    "speed-sign": {
        "L1": 637 * 357 * 36 * 6,
        "L2": 317 * 177 * 36 * 60,
        "L3": 312 * 172 * 25 * 640,
        "L4": 312 * 172 * 1 * 80,
    },
}

# Table 5: workload (%) of each face-detection layer (the speed-sign column is not
# reproducible from Table 1: 4.6/83.3 printed vs 4.75/83.1 computed for L1/L3).
TABLE_5_FACE_WORKLOAD = {"L1": 42, "L2": 23, "L3": 34, "L4": 1}


def printed_matches(value, printed):
    """``value`` rounds to the seed's printed figure ("32.9M", "1.03G"): within half a unit
    of its last digit."""
    number, unit = re.fullmatch(r"([0-9.]+)([MG])", printed).groups()
    scale = {"M": 1e6, "G": 1e9}[unit]
    decimals = len(number.partition(".")[2])
    return abs(value - float(number) * scale) <= 0.5 * 10 ** -decimals * scale


def test_printed_matches_is_strict():
    assert printed_matches(858_624_000, "858.6M")
    assert not printed_matches(858_700_000, "858.6M")
    assert printed_matches(27_046_656, "27M") and not printed_matches(27_600_000, "27M")
    assert printed_matches(1_033_232_904, "1.03G") and not printed_matches(1.036e9, "1.03G")


def test_nve_network_names():
    assert set(nve_networks.NETWORKS) == {"face-detection", "speed-sign"}
    assert set(nve_networks.CONNECTIONS) == set(nve_networks.NETWORKS)


@pytest.mark.parametrize("name", sorted(TABLE_1))
def test_nve_network_matches_table_1(name):
    net = nve_networks.NETWORKS[name]()
    assert isinstance(net, Network) and net.name == name
    net.validate()
    assert "seed 003" in net.source and "Table 1" in net.source
    assert net.inputs == {"input": (720, 1280, 1)}
    rows = TABLE_1[name]
    assert len(net.layers) == len(rows)
    previous = "input"
    for layer, (lname, maps, size, kernel, sub, _) in zip(net.layers, rows, strict=True):
        width, height = (int(v) for v in size.split("x"))
        assert layer.name == lname
        assert layer.kind == "conv"
        assert layer.inputs == (previous,)
        assert layer.out_shape == (height, width, maps)
        assert layer.kernel == (kernel, kernel)
        assert layer.stride == (sub, sub)
        assert layer.bias_elements == maps
        previous = lname


@pytest.mark.parametrize("name", sorted(TABLE_1))
def test_nve_macs_match_table_1(name):
    net = nve_networks.NETWORKS[name]()
    for layer, (lname, *_, printed) in zip(net.layers, TABLE_1[name], strict=True):
        assert layer.macs == NVE_MACS[name][lname]
        assert printed_matches(layer.macs, printed), (lname, layer.macs, printed)
    assert printed_matches(net.macs, TABLE_1_TOTAL[name])
    assert net.macs == sum(NVE_MACS[name].values())


def test_speed_sign_l3_is_858_m_macs():
    assert nve_networks.speed_sign().layer("L3").macs == 858_624_000


def test_face_workload_matches_table_5():
    net = nve_networks.face_detection()
    for lname, percent in TABLE_5_FACE_WORKLOAD.items():
        assert round(100 * net.layer(lname).macs / net.macs) == percent


@pytest.mark.parametrize("name", sorted(TABLE_1))
def test_nve_connections_match_appendix_a(name):
    net = nve_networks.NETWORKS[name]()
    tables = nve_networks.CONNECTIONS[name]
    assert list(tables) == [layer.name for layer in net.layers]
    for layer in net.layers:
        table = tables[layer.name]
        assert [len(inputs) for inputs in table] == APPENDIX_A_CNT[name][layer.name]
        assert layer.connections == APPENDIX_A_PAIRS[name][layer.name]
        assert len(table) == layer.out_channels
        # every input map index exists, none is listed twice, and every input map is read
        assert all(len(set(inputs)) == len(inputs) for inputs in table)
        used = {i for inputs in table for i in inputs}
        assert used == set(range(layer.in_channels))
        kh, kw = layer.kernel
        assert layer.weight_elements == layer.connections * kh * kw


def test_nve_connection_tables_entries():
    face, speed = (nve_networks.CONNECTIONS[n] for n in ("face-detection", "speed-sign"))
    assert face["L2"] == [[0], [0], [1], [1], [2], [2], [3], [3],
                          [0, 1], [1, 2], [2, 3], [0, 2], [1, 3], [0, 3]]
    assert face["L3"] == [[m] for m in range(14)]
    assert face["L4"] == [list(range(14))]
    assert speed["L2"][0] == [0, 1, 2] and speed["L2"][4] == [0, 4, 5]
    assert speed["L2"][9] == [0, 3, 4, 5] and speed["L2"][14] == [0, 2, 3, 5]
    assert speed["L2"][15] == [0, 1, 2, 3, 4, 5]
    assert speed["L3"][:40] == [[0, 1, 2, 3, 4, 5, 6, 7]] * 40
    assert speed["L3"][40:] == [[8, 9, 10, 11, 12, 13, 14, 15]] * 40
    assert speed["L4"] == [list(range(80))]


# --- seed 001 -----------------------------------------------------------------------------

# Table I as built (module docstrings give each reading): (name, kind, out (H, W, C), kernel,
# stride). FC rows: out (1, 1, N); their inputs are checked in FC_INPUTS.
TABLE_I = {
    "caffepresso-mnist": ((28, 28, 1), [
        ("conv1", "conv", (24, 24, 20), 5, 1),     # Table I "5 28x28": LeNet's 20 24x24
        ("pool1", "maxpool", (12, 12, 20), 2, 2),
        ("conv2", "conv", (8, 8, 50), 5, 1),
        ("pool2", "maxpool", (4, 4, 50), 2, 2),
        ("fc1", "fc", (1, 1, 500), 1, 1),
        ("fc2", "fc", (1, 1, 10), 1, 1),
    ]),
    "caffepresso-cifar10": ((32, 32, 3), [
        ("conv1", "conv", (28, 28, 32), 5, 1),
        ("pool1", "maxpool", (14, 14, 32), 2, 2),
        ("conv2", "conv", (14, 14, 32), 5, 1),
        ("pool2", "maxpool", (7, 7, 32), 2, 2),
        ("conv3", "conv", (7, 7, 64), 5, 1),
        ("pool3", "maxpool", (3, 3, 64), 3, 2),
        ("fc1", "fc", (1, 1, 500), 1, 1),
        ("fc2", "fc", (1, 1, 10), 1, 1),           # Table I labels it "fc1"
    ]),
    "caffepresso-stl10": ((96, 96, 1), [
        ("conv1", "conv", (92, 92, 32), 5, 1),
        ("pool1", "maxpool", (46, 46, 32), 2, 2),
        ("conv2", "conv", (42, 42, 32), 5, 1),
        ("pool2", "maxpool", (21, 21, 32), 2, 2),
        ("fc1", "fc", (1, 1, 500), 1, 1),
        ("fc2", "fc", (1, 1, 10), 1, 1),
    ]),
    "caffepresso-caltech101": ((150, 150, 3), [     # Table I "3x151x151"
        ("conv1", "conv", (142, 142, 64), 9, 1),
        ("pool1", "maxpool", (27, 27, 64), 10, 5),
        ("conv2", "conv", (19, 19, 256), 9, 1),
        ("pool2", "maxpool", (4, 4, 256), 6, 4),
        ("fc1", "fc", (1, 1, 5000), 1, 1),
        ("fc2", "fc", (1, 1, 101), 1, 1),
    ]),
    "caffepresso-imagenet": ((227, 227, 3), [
        ("conv1", "conv", (55, 55, 96), 11, 4),
        ("pool1", "maxpool", (27, 27, 96), 3, 2),
        ("conv2", "conv", (27, 27, 256), 5, 1),
        ("pool2", "maxpool", (13, 13, 256), 3, 2),
        ("conv3", "conv", (13, 13, 384), 3, 1),
        ("conv4", "conv", (13, 13, 384), 3, 1),
        ("conv5", "conv", (13, 13, 256), 3, 1),
        ("pool5", "maxpool", (6, 6, 256), 3, 2),
        ("fc1", "fc", (1, 1, 4096), 1, 1),
        ("fc2", "fc", (1, 1, 4096), 1, 1),
        ("fc3", "fc", (1, 1, 1000), 1, 1),
    ]),
}

# Table I's FC column "fc1: 800x500" etc.: inputs of each FC layer (AlexNet's fc1: 256*6*6).
FC_INPUTS = {
    "caffepresso-mnist": {"fc1": 800, "fc2": 500},
    "caffepresso-cifar10": {"fc1": 576, "fc2": 500},
    "caffepresso-stl10": {"fc1": 14112, "fc2": 500},
    "caffepresso-caltech101": {"fc1": 4096, "fc2": 5000},
    "caffepresso-imagenet": {"fc1": 9216, "fc2": 4096, "fc3": 4096},
}

# MACs of the weighted layers from the shapes above: out_h * out_w * Cout * Cin * K^2, and
# in * out for FC. (Table I's "Ops." column is not reproducible from any reading.)
CAFFEPRESSO_MACS = {
    "caffepresso-mnist": {
        "conv1": 24 * 24 * 20 * 1 * 25, "conv2": 8 * 8 * 50 * 20 * 25,
        "fc1": 800 * 500, "fc2": 500 * 10},
    "caffepresso-cifar10": {
        "conv1": 28 * 28 * 32 * 3 * 25, "conv2": 14 * 14 * 32 * 32 * 25,
        "conv3": 7 * 7 * 64 * 32 * 25, "fc1": 576 * 500, "fc2": 500 * 10},
    "caffepresso-stl10": {
        "conv1": 92 * 92 * 32 * 1 * 25, "conv2": 42 * 42 * 32 * 32 * 25,
        "fc1": 14112 * 500, "fc2": 500 * 10},
    "caffepresso-caltech101": {
        "conv1": 142 * 142 * 64 * 3 * 81, "conv2": 19 * 19 * 256 * 64 * 81,
        "fc1": 4096 * 5000, "fc2": 5000 * 101},
    "caffepresso-imagenet": {
        "conv1": 55 * 55 * 96 * 3 * 121, "conv2": 27 * 27 * 256 * 96 * 25,
        "conv3": 13 * 13 * 384 * 256 * 9, "conv4": 13 * 13 * 384 * 384 * 9,
        "conv5": 13 * 13 * 256 * 384 * 9,
        "fc1": 9216 * 4096, "fc2": 4096 * 4096, "fc3": 4096 * 1000},
}

# The seed 001 digest's own arithmetic (Sec. 2), conv MACs in millions, one decimal.
DIGEST_CONV_MMACS = {
    "caffepresso-mnist": 1.9, "caffepresso-cifar10": 9.4, "caffepresso-stl10": 51.9,
    "caffepresso-caltech101": 792.7, "caffepresso-imagenet": 1076.6,
}


def test_caffepresso_network_names():
    assert set(caffepresso.NETWORKS) == set(TABLE_I)


@pytest.mark.parametrize("name", sorted(TABLE_I))
def test_caffepresso_network_matches_table_i(name):
    net = caffepresso.NETWORKS[name]()
    assert isinstance(net, Network) and net.name == name
    net.validate()
    assert "seed 001" in net.source and "Table I" in net.source
    in_shape, rows = TABLE_I[name]
    assert net.inputs == {"input": in_shape}
    assert len(net.layers) == len(rows)
    previous = "input"
    for layer, (lname, kind, out, kernel, stride) in zip(net.layers, rows, strict=True):
        assert (layer.name, layer.kind, layer.out_shape) == (lname, kind, out)
        assert layer.inputs == (previous,)
        assert layer.kernel == (kernel, kernel) and layer.stride == (stride, stride)
        assert layer.connections is None
        if kind == "fc":
            assert layer.in_shape == (1, 1, FC_INPUTS[name][lname])
        previous = lname
    assert {layer.name for layer in net.layers if layer.kind == "fc"} == set(FC_INPUTS[name])


@pytest.mark.parametrize("name", sorted(TABLE_I))
def test_caffepresso_macs(name):
    net = caffepresso.NETWORKS[name]()
    expected = CAFFEPRESSO_MACS[name]
    assert {layer.name: layer.macs for layer in net.layers if layer.weighted} == expected
    assert net.macs == sum(expected.values())
    conv = sum(layer.macs for layer in net.layers if layer.kind == "conv")
    assert round(conv / 1e6, 1) == DIGEST_CONV_MMACS[name]


def test_caffepresso_weights():
    net = caffepresso.mnist()
    assert net.weight_elements == 20 * 25 + 50 * 20 * 25 + 800 * 500 + 500 * 10
    assert sum(layer.bias_elements for layer in net.layers) == 20 + 50 + 500 + 10
    alexnet = caffepresso.alexnet()
    assert alexnet.layer("conv2").weight_elements == 256 * 96 * 25   # dense, no groups
