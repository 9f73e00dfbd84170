"""The schedule validator: a mutation suite. Every mutation breaks a correct schedule in one
named way (a hole an earlier validator had, or a classic tiling bug) and the validator must
report it; the unmutated schedule must pass."""

import json

import pytest

from hls_ref.config import AcceleratorConfig
from sw.tiling import strategies
from sw.tiling.capacity import Capacity
from sw.tiling.schedule import Schedule, own_layout
from sw.tiling.strategies import build_schedule
from sw.tiling.validate import group_occupancy, validate_schedule
from sw.workloads import NetworkBuilder, load_network


def _conv_net(blocked=False):
    b = NetworkBuilder("t", {"input": (9, 8, 24)})
    b.conv("L", "input", 40, 3, 1, "same")
    net = b.build()
    if blocked:     # channel tiles of one block, in both tensors
        cap = Capacity(AcceleratorConfig(pes=16, plm_in_words=100, plm_w_words=2000,
                                         plm_acc_words=1000), "a8w8")
        return net, build_schedule(net, "optimal", cap, layouts="blocked")
    cap = Capacity(AcceleratorConfig(pes=16, plm_in_words=400, plm_w_words=2000,
                                     plm_acc_words=1000), "a8w8")
    return net, build_schedule(net, "thesis", cap)   # stripes, channel tiles, flags


def _branchy_net():
    b = NetworkBuilder("fpn", {"input": (20, 12, 8)})
    a = b.conv("a", "input", 16, 3, 1, "same")
    d = b.conv("down", a, 16, 3, 2, "same")
    d = b.depthwise("dw", d, 3, 1, "same")
    u = b.upsample("up", d, 2)
    s = b.add("sum", a, u)
    c = b.concat("cat", s, a)
    m = b.pool("pool", c, 3, 1, "same")
    b.conv("out", m, 16, 1, 1, "valid")
    return b.build()


def _edit(schedule, fn):
    d = json.loads(schedule.to_json())
    fn(d)
    return Schedule.from_dict(d)


def _steps(d, name):
    return next(ls for ls in d["layers"] if ls["layer"] == name)["steps"]


def _group(d):
    return next(ls for ls in d["layers"] if ls["group"] and ls["group"]["passes"] > 1)


# --- accelerated layers ----------------------------------------------------------------------

def _layer_mutation(mutation, d):
    steps = d["layers"][0]["steps"]
    step = next(s for s in steps[1:] if s["loads"])
    if mutation == "shift-address":
        step["loads"][0]["addr"] += 8
    elif mutation == "drop-load":
        step["loads"].pop(0)
    elif mutation == "acc-flag":
        c = next(c for s in steps for c in s["commands"] if c["acc_flag"])
        c["acc_flag"] = False
    elif mutation == "padding":
        c = next(c for s in steps for c in s["commands"] if c["padding"][0])
        c["padding"][0] = 0
    elif mutation == "stride":
        step["loads"][0]["pixel_stride"] += 1
    elif mutation == "bank":
        step["commands"][0]["in_bank"] ^= 1
    elif mutation == "store-elsewhere":
        s = next(s for s in steps if s["stores"])
        s["stores"][0]["addr"] += 1 << 20
    elif mutation == "drop-store":
        s = next(s for s in steps if s["stores"])
        s["stores"].pop(0)
    elif mutation == "store-into-weights":
        s = next(s for s in steps if s["stores"])
        w = next(r for r in d["regions"] if r["kind"] == "weights")
        s["stores"][0].update(tensor=w["name"], addr=w["addr"])
    elif mutation == "small-bank":
        d["capacity"]["config"]["plm_in_words"] = 16
    elif mutation == "layout-mislabelled":     # blocked transfers, the input called HWC
        next(r for r in d["regions"] if r["name"] == "input")["layout"] = "hwc"
    elif mutation == "accumulators-past-the-bank":     # every tile, consistently
        for c in (c for s in steps for c in s["commands"]):
            c["acc_offset"] += d["capacity"]["config"]["plm_acc_words"]
    elif mutation == "bank-offset-wraps":     # a bank's length before the start: the same
        size = 2 * d["capacity"]["config"]["plm_in_words"]     # bytes, had indices wrapped
        for s in steps:
            for t in s["loads"]:
                if t["buffer"] == "in":
                    t["offset"] -= size
    elif mutation == "one-bank-double-buffered":
        # every operand in bank 0 of a double-buffered build: a one-at-a-time replay computes
        # the right values, but each load overwrites the tile the previous command still reads
        for s in steps:
            for t in s["loads"] + s["stores"]:
                t["bank"] = 0
            for c in s["commands"]:
                c.update(in_bank=0, w_bank=0, q_bank=0, acc_bank=0)


LAYER_MUTATIONS = ["shift-address", "drop-load", "acc-flag", "padding", "stride", "bank",
                   "store-elsewhere", "drop-store", "store-into-weights", "small-bank",
                   "layout-mislabelled", "accumulators-past-the-bank", "bank-offset-wraps",
                   "one-bank-double-buffered"]


@pytest.mark.parametrize("mutation", LAYER_MUTATIONS)
def test_the_validator_catches_broken_layers(mutation):
    net, schedule = _conv_net(blocked=mutation == "layout-mislabelled")
    assert validate_schedule(schedule, net).ok
    report = validate_schedule(_edit(schedule, lambda d: _layer_mutation(mutation, d)), net)
    assert not report.ok, mutation


# --- fused groups ----------------------------------------------------------------------------

def _fused():
    net = load_network("dscnn")      # banded groups of 13 and 25 passes, then a streamed one
    return net, build_schedule(net, "fused", Capacity(ocm_bytes=16 << 10))


def _group_mutation(mutation, d):
    ls = _group(d)
    steps = ls["steps"]
    if mutation == "drop-every-group-transfer":
        for s in steps:
            s["loads"].clear()
            s["stores"].clear()
    elif mutation == "shift-every-group-load-4096":
        for s in steps:
            for t in s["loads"]:
                t["addr"] += 4096
    elif mutation == "shift-every-band-load-8":       # inside the regions: wrong data
        for s in steps:
            for t in s["loads"]:
                if t["buffer"] == "in":
                    t["addr"] += 8
    elif mutation == "drop-one-band":
        s = next(s for s in steps[1:] if any(t["buffer"] == "in" for t in s["loads"]))
        s["loads"] = [t for t in s["loads"] if t["buffer"] != "in"]
    elif mutation == "drop-weights":
        s = next(s for s in steps if any(t["buffer"] == "w" for t in s["loads"]))
        s["loads"] = [t for t in s["loads"] if t["buffer"] != "w"]
    elif mutation == "compute-before-input":
        # the second pass of the group's second layer moved before the first layer's
        name = ls["group"]["layers"][1]
        i = next(i for i, s in enumerate(steps)
                 if any(c["layer"] == name for c in s["commands"]) and i > 0
                 and i > len(ls["group"]["layers"]))
        steps.insert(0, steps.pop(i))
    elif mutation == "wrong-rows":
        c = next(c for s in steps[3:] for c in s["commands"])
        c["out_rows"] = [r + 1 for r in c["out_rows"]]
    elif mutation == "band-padding":
        c = next(c for s in steps for c in s["commands"] if c["padding"][0])
        c["padding"][0] = 0
    elif mutation == "store-uncomputed":
        s = next(i for i, s in enumerate(steps) if s["stores"])
        steps[0]["stores"].append(steps[s]["stores"].pop())
    elif mutation == "band-offset-wraps":     # the on-chip copy's length before its start
        regions = Schedule.from_dict(d).regions
        shapes = load_network("dscnn").shapes
        for s in steps:
            for t in s["loads"]:
                if t["buffer"] == "in":
                    t["offset"] -= own_layout(regions[t["tensor"]], shapes[t["tensor"]]).bytes
    elif mutation == "plan-for-16K-on-8K":
        d["capacity"]["ocm_bytes"] = 8 << 10
        for other in d["layers"]:
            if other["group"]:
                other["group"]["peak_bytes"] = 8 << 10


GROUP_MUTATIONS = ["drop-every-group-transfer", "shift-every-group-load-4096",
                   "shift-every-band-load-8", "drop-one-band",
                   "drop-weights", "compute-before-input", "wrong-rows", "band-padding",
                   "store-uncomputed", "band-offset-wraps", "plan-for-16K-on-8K"]


@pytest.mark.parametrize("mutation", GROUP_MUTATIONS)
def test_the_validator_catches_broken_fused_groups(mutation):
    net, schedule = _fused()
    report = validate_schedule(schedule, net, seed=1)
    assert report.ok, report.summary()
    report = validate_schedule(_edit(schedule, lambda d: _group_mutation(mutation, d)), net,
                               seed=1)
    assert not report.ok, mutation


@pytest.mark.parametrize("strategy", ["fused", "optimal"])
def test_a_plan_for_64k_is_replayed_on_the_memory_it_is_given(strategy):
    net = load_network("resnet8")
    schedule = build_schedule(net, strategy, Capacity(ocm_bytes=64 << 10))
    assert validate_schedule(schedule, net, capacity=Capacity(ocm_bytes=64 << 10)).ok
    report = validate_schedule(schedule, net, capacity=Capacity(ocm_bytes=8 << 10))
    assert not report.ok
    assert ("on chip" if strategy == "fused" else "bank") in report.summary()


def test_the_accumulators_count_in_a_shared_memory():
    # replayed on a memory whose bank share holds the input and weight tiles and, apart, the
    # accumulator tile, but not all three: an earlier validator counted only the loaded bytes
    net, _ = _conv_net()
    cap = Capacity(ocm_bytes=16 << 10)
    schedule = build_schedule(net, "optimal", cap)
    assert validate_schedule(schedule, net).ok
    t = schedule.layers[0].tiling
    acc = cap.acc_tile_bytes(t.rows, net.layer("L").out_shape[1], t.out_channels)
    loaded = max(_loaded_bytes(schedule))
    share = loaded + acc - 8
    assert share >= max(loaded, acc)
    report = validate_schedule(schedule, net, capacity=Capacity(ocm_bytes=2 * share))
    assert not report.ok and "occupy" in report.summary()


def test_a_bank_loaded_twice_in_a_step_counts_its_furthest_load():
    # every one-segment load split in two, its upper half first: an earlier validator took a
    # bank's extent from the step's last load into it, so the shared memory looked half empty
    net, _ = _conv_net()
    schedule = build_schedule(net, "optimal", Capacity(ocm_bytes=16 << 10))

    def split(d):
        for step in d["layers"][0]["steps"]:
            loads = []
            for t in step["loads"]:
                half = t["segment_bytes"] // 2 // 8 * 8
                if t["rows"] == t["pixels"] == 1 and half:
                    upper = {**t, "addr": t["addr"] + half, "offset": t["offset"] + half,
                             "segment_bytes": t["segment_bytes"] - half}
                    loads += [upper, {**t, "segment_bytes": half}]
                else:
                    loads.append(t)
            step["loads"] = loads

    mutated = _edit(schedule, split)
    assert len(mutated.layers[0].steps[0].loads) > len(schedule.layers[0].steps[0].loads)
    assert validate_schedule(mutated, net).ok            # the same bytes, in two calls
    t = schedule.layers[0].tiling
    acc = Capacity(ocm_bytes=16 << 10).acc_tile_bytes(t.rows, net.layer("L").out_shape[1],
                                                      t.out_channels)
    share = max(_loaded_bytes(schedule)) + acc - 8
    report = validate_schedule(mutated, net, capacity=Capacity(ocm_bytes=2 * share))
    assert not report.ok and "occupy" in report.summary()


def _loaded_bytes(schedule):
    """Bytes each step's operands occupy in their banks, from the transfers alone."""
    extent, out = {}, []
    for step in schedule.layers[0].steps:
        for t in step.loads:
            end = t.offset + (t.rows - 1) * t.bank_row_stride + \
                (t.pixels - 1) * t.bank_pixel_stride + t.segment_bytes
            extent[(t.buffer, t.bank)] = end
        used = {k for c in step.commands for k in
                (("in", c.in_bank), ("w", c.w_bank), ("q", c.q_bank))}
        out.append(sum(extent[k] for k in used))
    return out


def test_group_occupancy_is_computed_from_the_steps():
    net, schedule = _fused()
    cap = Capacity(ocm_bytes=16 << 10)
    for ls in schedule.layers:
        if ls.group:
            peak = max(group_occupancy(ls, net, cap, schedule.regions))
            assert 0 < peak <= 32 << 10
            # the plan's own figure is not trusted, but a plan never understates the replay
            assert peak <= ls.group["peak_bytes"]


# --- the network chained from its input ------------------------------------------------------

@pytest.mark.parametrize("strategy", ["optimal", "fused"])
def test_concat_producers_write_into_the_concat(strategy):
    net = _branchy_net()
    schedule = build_schedule(net, strategy, Capacity(ocm_bytes=12 << 10))
    assert schedule.regions["a"].view_of == "cat" and schedule.regions["sum"].view_of == "cat"
    report = validate_schedule(schedule, net, seed=7)
    assert report.ok, report.summary()


def test_a_concat_nobody_writes_is_caught(monkeypatch):
    # the earlier compiler: producers stored into regions of their own, the concat moved
    # nothing, and its consumer read a region no step wrote
    net = _branchy_net()
    monkeypatch.setattr(strategies, "concat_views", lambda *a: {})
    real = strategies._host_step
    monkeypatch.setattr(strategies, "_host_step",
                        lambda layer, *a: None if layer.kind == "concat" else real(layer, *a))
    report = validate_schedule(build_schedule(net, "optimal", Capacity(ocm_bytes=12 << 10)),
                               net, seed=7)
    assert not report.ok and "cat" in report.summary()


def _chain_mutation(mutation, d):
    if mutation == "host-load-elsewhere":
        _steps(d, "03_add")[0]["loads"][1]["addr"] += 4096
    elif mutation == "host-drop-store":
        _steps(d, "12_average_pool_2d")[0]["stores"].clear()
    elif mutation == "read-the-wrong-producer":
        # 04_conv_2d reads 02_conv_2d's output instead of 03_add's
        src = next(r for r in d["regions"] if r["name"] == "02_conv_2d")
        dst = next(r for r in d["regions"] if r["name"] == "03_add")
        for s in _steps(d, "04_conv_2d"):
            for t in s["loads"]:
                if t["tensor"] == "03_add":
                    t.update(tensor="02_conv_2d", addr=t["addr"] - dst["addr"] + src["addr"])
    elif mutation == "drop-a-layer":
        _steps(d, "05_conv_2d").clear()
    elif mutation == "overwrite-an-earlier-tensor":
        s = _steps(d, "09_conv_2d")[-1]
        first = next(r for r in d["regions"] if r["name"] == "00_conv_2d")
        t = dict(s["stores"][0], tensor="00_conv_2d", addr=first["addr"])
        _steps(d, "10_conv_2d")[-1]["stores"].append(t)


CHAIN_MUTATIONS = ["host-load-elsewhere", "host-drop-store", "read-the-wrong-producer",
                   "drop-a-layer", "overwrite-an-earlier-tensor"]


@pytest.mark.parametrize("mutation", CHAIN_MUTATIONS)
def test_the_validator_follows_the_network_from_its_input(mutation):
    net = load_network("resnet8")
    schedule = build_schedule(net, "optimal", Capacity())
    assert validate_schedule(schedule, net, seed=2).ok
    report = validate_schedule(_edit(schedule, lambda d: _chain_mutation(mutation, d)), net,
                               seed=2)
    assert not report.ok, mutation
