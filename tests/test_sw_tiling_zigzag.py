"""ZigZag next to the tiling compiler (``sw.tiling.zigzag_compare``): the generated workloads
describe the Tessera layers (checked against hand-written shapes and through ZigZag's own
parser), the accelerator has the compared memory, and ZigZag's DRAM traffic on real layers is
at least the compulsory traffic -- exactly it, up to 64-bit words, when the layer fits."""

import pytest

from hls_ref.config import AcceleratorConfig
from sw.tiling.capacity import Capacity
from sw.tiling.cost import DmaCost
from sw.tiling.zigzag_compare import (
    accelerator_spec,
    compare_layers,
    format_table,
    main,
    run_zigzag,
    zigzag_inputs,
)
from sw.workloads import load_network

pytest.importorskip("zigzag.api", reason="zigzag-dse (extra 'peer') is not installed")
yaml = pytest.importorskip("yaml")

CAP64 = Capacity(precision="a8w8", ocm_bytes=64 * 1024)
COST = DmaCost()


def _word(n):
    """Bytes rounded up to whole 64-bit DRAM words."""
    return -(-n // 8) * 8


def _used(size, kernel, stride, before, out):
    """Input positions a window of ``kernel`` at ``stride`` reads for ``out`` outputs."""
    return len({i for o in range(out) for i in range(o * stride - before,
                                                     o * stride - before + kernel)
                if 0 <= i < size})


# --- the workload -------------------------------------------------------------------------
# (network, layer) -> hand-read shapes: loop sizes, strides, padding [[t, b], [l, r]], input HW
EXPECTED = {
    ("resnet8", "01_conv_2d"): ("Conv", dict(B=1, K=16, C=16, OY=32, OX=32, FY=3, FX=3),
                                (1, 1), [[1, 1], [1, 1]], [32, 32]),
    ("resnet8", "04_conv_2d"): ("Conv", dict(B=1, K=32, C=16, OY=16, OX=16, FY=3, FX=3),
                                (2, 2), [[0, 1], [0, 1]], [32, 32]),
    ("resnet8", "06_conv_2d"): ("Conv", dict(B=1, K=32, C=16, OY=16, OX=16, FY=1, FX=1),
                                (2, 2), [[0, 0], [0, 0]], [32, 32]),
    ("dscnn", "00_conv_2d"): ("Conv", dict(B=1, K=64, C=1, OY=25, OX=5, FY=10, FX=4),
                              (2, 2), [[4, 5], [1, 1]], [49, 10]),
    ("dscnn", "01_depthwise_conv_2d"): ("Conv", dict(B=1, G=64, OY=25, OX=5, FY=3, FX=3),
                                        (1, 1), [[1, 1], [1, 1]], [25, 5]),
    ("dscnn", "11_fully_connected"): ("Gemm", dict(B=1, K=12, C=64), None, None, None),
}


@pytest.mark.parametrize("net,name", list(EXPECTED))
def test_workload_matches_the_layer(net, name):
    layer = load_network(net).layer(name)
    op, sizes, stride, padding, pr_sizes = EXPECTED[(net, name)]
    [entry] = yaml.safe_load(zigzag_inputs(layer, CAP64)["workload.yaml"])
    assert entry["name"] == name and entry["operator_type"] == op
    assert dict(zip(entry["loop_dims"], entry["loop_sizes"])) == sizes
    assert entry["operand_precision"] == {"W": 8, "I": 8, "O": 32, "O_final": 8}
    assert entry["operand_source"] == {"W": entry["id"]}     # only the weights are constant
    if stride is None:
        assert entry["equation"].replace(" ", "") == "O[b][k]+=W[k][c]*I[b][c]"
        assert not entry.get("pr_loop_dims")
        return
    sh, sw = stride
    relations = {r.replace(" ", "") for r in entry["dimension_relations"]}
    assert relations == {f"ix={sw}*ox+1*fx", f"iy={sh}*oy+1*fy"}
    pr = dict(zip(entry["pr_loop_dims"], zip(entry["padding"], entry["pr_loop_sizes"])))
    assert pr == {"IY": (padding[0], pr_sizes[0]), "IX": (padding[1], pr_sizes[1])}
    if "G" in sizes:
        assert entry["equation"].replace(" ", "") == \
            "O[b][g][oy][ox]+=W[g][fy][fx]*I[b][g][iy][ix]"


def test_precisions_reach_the_workload_and_the_array():
    layer = load_network("resnet8").layer("01_conv_2d")
    for label, w, a, lanes in (("a8w4", 4, 8, 2), ("a4w4", 4, 4, 4), ("a16w16", 16, 16, 1)):
        cap = Capacity(precision=label, ocm_bytes=32768)
        files = zigzag_inputs(layer, cap)
        [entry] = yaml.safe_load(files["workload.yaml"])
        assert entry["operand_precision"] == {"W": w, "I": a, "O": 32, "O_final": a}
        acc = yaml.safe_load(files["accelerator.yaml"])
        assert acc["operational_array"]["sizes"] == [16, lanes]
        mapping = yaml.safe_load(files["mapping.yaml"])
        assert mapping[0]["name"] == "01_conv_2d"
        assert mapping[0]["spatial_mapping"] == {"D1": ["K, 16"], "D2": [f"C, {lanes}"]}


@pytest.mark.parametrize("net", ["resnet8", "dscnn"])
def test_zigzag_parses_the_layer_tessera_describes(net, tmp_path):
    """Through ZigZag's own parser: MACs, weights, outputs and the input elements read are
    Tessera's (the input counted by hand: positions a window touches, padding excluded)."""
    from zigzag.parser.workload_factory import WorkloadFactory
    from zigzag.parser.workload_validator import WorkloadValidator
    from zigzag.stages.parser.workload_parser import WorkloadParserStage

    network = load_network(net)
    layers = [x for x in network.layers if x.kind in ("conv", "depthwise", "fc")]
    assert len(layers) == 10
    for layer in layers:
        files = zigzag_inputs(layer, CAP64)
        validator = WorkloadValidator(yaml.safe_load(files["workload.yaml"]))
        data = validator.normalized_data
        assert validator.validate(), layer.name
        path = tmp_path / f"{layer.name}.yaml"
        path.write_text(files["mapping.yaml"])
        mapping = WorkloadParserStage.parse_mapping_data(str(path))
        [node] = WorkloadFactory(data, mapping).create().node_list
        sizes = {str(op): n for op, n in node.operand_size_elem.items()}
        h, w, c = layer.in_shape
        if layer.kind != "fc":
            h = _used(h, layer.kernel[0], layer.stride[0], layer.padding.top,
                      layer.out_shape[0])
            w = _used(w, layer.kernel[1], layer.stride[1], layer.padding.left,
                      layer.out_shape[1])
        assert node.total_mac_count == layer.macs, layer.name
        assert sizes == {"I": h * w * c, "W": layer.weight_elements,
                         "O": layer.output_elements}, layer.name


def test_accelerator_has_the_compared_memory():
    from zigzag.parser.accelerator_factory import AcceleratorFactory
    from zigzag.parser.accelerator_validator import AcceleratorValidator

    for cap, size, db in ((CAP64, 64 * 1024, True),
                          (Capacity(AcceleratorConfig(double_buffer=False), "a8w8", None, 4096),
                           4096, False),
                          (Capacity(), 2 * (2 * 16384 + 2 * 16384 + 4 * 8192), True)):
        spec = accelerator_spec(cap)
        mems = spec["memories"]
        assert mems["buffer"]["size"] == 8 * size
        assert sorted(mems["buffer"]["operands"]) == ["I1", "I2", "O"]
        assert mems["buffer"]["force_double_buffering"] is db
        [port] = mems["dram"]["ports"]
        assert port["bandwidth_min"] == port["bandwidth_max"] == 64
        validator = AcceleratorValidator(spec)
        assert validator.validate(), validator.validator.errors
        accelerator = AcceleratorFactory(validator.normalized_data).create()
        assert accelerator.operational_array.total_unit_count == 32
    assert accelerator_spec(CAP64, buffer_bytes=1000)["memories"]["buffer"]["size"] == 8000
    assert accelerator_spec(CAP64, double_buffer=False)["memories"]["buffer"][
        "force_double_buffering"] is False


# --- ZigZag runs ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """ZigZag on ResNet-8's second conv and DS-CNN's first depthwise and its FC, at 64 KiB
    (a fresh cache, so ZigZag really runs), and the cached rerun."""
    cache = tmp_path_factory.mktemp("zigzag-cache")
    rows = compare_layers("resnet8", CAP64, COST, ["01_conv_2d"], cache_dir=cache)
    rows += compare_layers(load_network("dscnn"), CAP64, COST,
                           ["01_depthwise_conv_2d", "09_average_pool_2d",
                            "11_fully_connected"], cache_dir=cache)
    again = compare_layers("resnet8", CAP64, COST, ["01_conv_2d"], cache_dir=cache)
    return rows, again, cache


def test_zigzag_traffic_is_the_compulsory_traffic_when_the_layer_fits(runs):
    rows, _, _ = runs
    assert [r.layer for r in rows] == ["01_conv_2d", "01_depthwise_conv_2d",
                                       "11_fully_connected"]     # the pooling layer skipped
    networks = {"01_conv_2d": "resnet8"}
    for r in rows:
        assert not r.error and not r.zigzag.cached
        layer = load_network(networks.get(r.layer, "dscnn")).layer(r.layer)
        h, w, c = layer.in_shape
        ho, wo, co = layer.out_shape
        need = {"input": h * w * c, "weights": layer.weight_elements,
                "output": ho * wo * co}      # bytes at a8w8; every input pixel is used here
        got = {"input": r.zigzag.input_bytes, "weights": r.zigzag.weight_bytes,
               "output": r.zigzag.output_bytes}
        for tensor in need:
            # at least moved once; these layers fit 64 KiB, so exactly once (whole words)
            assert need[tensor] <= got[tensor] <= _word(need[tensor]), (r.layer, tensor)
        assert r.zigzag.psum_read_bytes == 0
        assert r.zigzag_read == got["input"] + got["weights"]
        assert r.zigzag_written == got["output"]
        assert (r.compulsory_read, r.compulsory_written) == (
            need["input"] + need["weights"], need["output"])
        # the compiler moves at least as much (layout padding, halos, quantization blocks)
        assert r.ours_read - r.ours_qparams >= r.compulsory_read
        assert r.ours_written >= r.compulsory_written
        assert r.ratio >= 1
        assert r.zigzag.latency_cycles >= r.zigzag.ideal_cycles >= layer.macs / 32


def test_known_numbers(runs):
    rows, _, _ = runs
    conv = rows[0]
    # 16x32x32 input, 16x16x3x3 weights, 16x32x32 output, one byte each
    assert (conv.zigzag.input_bytes, conv.zigzag.weight_bytes, conv.zigzag.output_bytes) == \
        (16384, 2304, 16384)
    assert conv.zigzag.ideal_cycles == 32 * 32 * 16 * 16 * 9 / 32
    fc = rows[2]
    assert (fc.zigzag.input_bytes, fc.zigzag.weight_bytes, fc.zigzag.output_bytes) == \
        (64, 768, 16)        # 12 outputs: two 64-bit words


def test_rerun_reads_the_cache(runs):
    rows, again, cache = runs
    assert again[0].zigzag.cached
    assert again[0].zigzag.digest == rows[0].zigzag.digest
    assert (again[0].zigzag_read, again[0].zigzag_written, again[0].zigzag_cycles) == \
        (rows[0].zigzag_read, rows[0].zigzag_written, rows[0].zigzag_cycles)
    assert (cache / f"{rows[0].zigzag.digest}.json").exists()
    assert len(list(cache.iterdir())) == 3
    # another memory is another digest
    layer = load_network("resnet8").layer("01_conv_2d")
    other = zigzag_inputs(layer, Capacity(precision="a8w8", ocm_bytes=32 * 1024))
    assert other != zigzag_inputs(layer, CAP64)


def test_table_prints(runs):
    rows, _, _ = runs
    table = format_table(rows)
    lines = table.splitlines()
    assert lines[0].startswith("| layer | op |") and len(lines) == 2 + len(rows) + 1
    assert "| 01_conv_2d | conv |" in lines[2]
    assert "16,384" in lines[2] and "18,688" in lines[2]
    assert lines[-1].startswith("| **total** (3 layers)")
    assert all(line.count("|") == lines[0].count("|") for line in lines)


def test_smaller_buffer_costs_traffic(tmp_path):
    """The buffer size reaches ZigZag: 8 KiB cannot hold ResNet-8's second conv, so some
    tensor moves more than once."""
    layer = load_network("resnet8").layer("01_conv_2d")
    small = run_zigzag(layer, Capacity(precision="a8w8", ocm_bytes=8 * 1024),
                       cache_dir=tmp_path)
    assert small.read_bytes + small.written_bytes > 16384 + 2304 + 16384


def test_main_prints_the_table(runs, capsys):
    _, _, cache = runs
    assert main(["resnet8", "--ocm", "64K", "--layers", "2", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "| 00_conv_2d | conv |" in out and "| 01_conv_2d | conv |" in out
    assert "16x2 MACs" in out and "65,536 B buffer" in out
    assert "1 ZigZag runs" in out          # 01_conv_2d came from the cache
    assert main(["no-such-network"]) == 2
