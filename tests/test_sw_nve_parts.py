"""The parts of the NVE code generator: stored-column layouts, coefficient layouts, the task
graph, and the verifiers of schedules and programs (which must refuse broken ones)."""

from dataclasses import replace

import numpy as np
import pytest

from hls_ref.nve.isa import DEFAULT_CONFIG, Program, decode, encode
from hls_ref.nve.layers import NveLayer, conv_layer, random_layer_data
from hls_ref.nve.numerics import lut_index
from sw.nve import NveCompileError, compile_layer
from sw.nve.columns import column_layout, column_steps, column_words
from sw.nve.compile import run_group, spread_shift
from sw.nve.emit import check_memory
from sw.nve.layout import (
    candidate_layouts,
    conflicts,
    fewest_loads,
    full_packing,
    seed_repacking,
)
from sw.nve.modulo import rec_mii, res_mii, verify
from sw.nve.taskgraph import forbidden_starts


def test_stride_two_columns_share_one_extras_word():
    # 6 rows at stride 2: phases of taps 0,2,4 and 1,3,5; two base words each and one word
    # with the 2 extra rows of both phases, so the odd phase needs no setsh.i
    cols = column_layout(6, 2, False)
    assert (cols.taps, cols.words, cols.base) == ((3, 3), 5, ((0, 1), (2, 3)))
    assert cols.word_rows()[4] == ((0, 16), (0, 17), (1, 16), (1, 17), None, None, None, None)
    assert cols.phase_ops(0) == [("set", 0, 1), ("setsh", None, 4), ("sh", None, None)]
    assert cols.phase_ops(1) == [("set", 2, 3), ("sh", None, None), ("sh", None, None)]
    # 9 taps fill ri[16..22] and the extras word; a 10th phase tap does not fit
    assert column_layout(9, 1, False).words == 3
    assert column_layout(16, 2, False).words == 2 + 2 + 2  # 7 + 7 extras: two words
    assert column_layout(1, 1, False).words == 2 and column_layout(1, 1, True).words == 1
    assert column_layout(1, 2, False).taps == (1, 0)


def test_column_words_pack_the_phases_of_a_band():
    padded = np.arange(35 * 2).reshape(1, 35, 2).astype(np.int8)  # rows 0..34
    cols = column_layout(4, 2, False)
    words = column_words(padded, cols, first_row=1)  # band rows 1.. -> input rows 2, 4, ...
    pix = words.view(np.int8).reshape(1, 2, cols.words, 8)
    assert pix[0, 1, 0].tolist() == padded[0, 2:18:2, 1].tolist()     # even rows 2..16
    assert pix[0, 1, 3].tolist() == padded[0, 19:35:2, 1].tolist()    # odd rows 19..33
    assert pix[0, 1, 4, :2].tolist() == [padded[0, 34, 1], 0]         # row 35: past the map


def test_column_steps_along_the_row():
    s = column_steps(6, 2)
    assert (s.new, s.first_new, s.max_delta) == (2, 4, 2)
    assert s.reads == ((2, 0), (2, 1), (1, 0), (1, 1), (0, 0), (0, 1))
    assert s.init_columns() == ((-2, 0), (-2, 1), (-1, 0), (-1, 1))
    s = column_steps(2, 3)  # columns 2, 5, 8, ... are never stored
    assert (s.new, s.first_new, s.reads, s.init_columns()) == (2, 0, ((0, 0), (0, 1)), ())
    assert s.input_column(4, 1) == 13


def test_coefficient_layouts():
    forbidden = {1, 4, 7}  # 3x3: set.i before the macs of taps 0 of the three columns
    assert full_packing(10) == (4, 4, 2) and conflicts((4, 4, 2), forbidden) == [4]
    assert seed_repacking(10, forbidden) == (3, 3, 4) and not conflicts((3, 3, 4), forbidden)
    assert not conflicts(fewest_loads(37, set(range(1, 37, 3)), 1000.0), set(range(1, 37, 3)))
    assert len(fewest_loads(37, set(), 1000.0)) == 10
    assert all(sum(c) == 37 and max(c) <= 4 for c in candidate_layouts(37, {1, 5, 9}))


def group_of(layer, **options):
    return compile_layer(layer, check=False, **options).groups[0]


def test_task_graph_counts_of_the_3x3_example():
    group = group_of(NveLayer(1, 18, 12, 16, 10, 3, 3, 1, 1, [[0]]))
    g = group.graph
    assert forbidden_starts(g.spec, 0) == {1, 4, 7}
    counts = {s: g.count(s) for s in ("mema", "memb", "wreg", "ireg", "vmac", "act")}
    # 3 coefficient reads + 3 port-A image reads + 3 writes; 6 port-B reads; seed Sec. 4.2
    assert counts == {"mema": 9, "memb": 6, "wreg": 10, "ireg": 9, "vmac": 10, "act": 2}
    assert res_mii(g) == rec_mii(g) == 10


def test_verify_refuses_broken_schedules():
    group = group_of(NveLayer(2, 20, 10, 16, 8, 5, 3, 1, 1, [[0, 1]]))
    g, s = group.graph, group.schedule
    assert verify(g, s.times, s.ii, s.ring) == []
    mac = g.vmac[5]
    moved = {**s.times, mac.id: s.times[mac.id] - 1}  # one cycle early
    problems = verify(g, moved, s.ii, s.ring)
    assert any("collide" in p for p in problems) or any("after op" in p for p in problems)
    rd = next(op for op in g.ops if op.name == "rd")
    late = {**s.times, rd.id: s.times[rd.id] - 1}
    assert any("not 2" in p for p in verify(g, late, s.ii, s.ring))
    assert any("rd before the ring slot is rewritten" in p
               for p in verify(g, s.times, s.ii, s.ring - 1))
    wide = verify(g, s.times, s.ii - 1, s.ring)
    assert wide, "a schedule wrapped one cycle tighter must collide"


def test_check_memory_refuses_a_wrong_agu_update():
    group = group_of(NveLayer(1, 18, 12, 16, 10, 3, 3, 1, 1, [[0]]))
    e = group.emitted
    assert check_memory(e, DEFAULT_CONFIG) == []
    words = list(e.program.words)
    start = e.program.settings.loop_start
    pc = next(pc for pc in range(start, start + e.body) if decode(words[pc]).mema.mode)
    ins = decode(words[pc])
    bad = (ins.mema.update + group.plan.step) % group.plan.toggle
    words[pc] = encode(replace(ins, mema=replace(ins.mema, update=bad)))
    broken = replace(e, program=Program(tuple(words), e.program.settings))
    assert any("intended" in p for p in check_memory(broken, DEFAULT_CONFIG))


def test_a_wrong_stream_order_is_caught_by_the_comparison():
    # the end-to-end comparison can fail: swap two pixel words of the stream plan
    layer = NveLayer(1, 18, 8, 16, 6, 3, 3, 1, 1, [[0]])
    group = group_of(layer)
    stream = group.emitted.stream
    k = int(np.flatnonzero(stream.kind == 1)[-1])
    column = stream.column.copy()
    column[k], column[k - 3] = column[k - 3], column[k]
    bad = replace(group, emitted=replace(group.emitted, stream=replace(stream, column=column)))
    rng = np.random.default_rng(7)
    x, w, b = random_layer_data(layer, rng)
    expected, _ = conv_layer(x, w, b, layer, 14, np.arange(-512, 512).clip(-128, 127))
    good, _ = run_group(group, layer, x, w, b, 14, np.arange(-512, 512).clip(-128, 127))
    wrong, _ = run_group(bad, layer, x, w, b, 14, np.arange(-512, 512).clip(-128, 127))
    assert np.array_equal(good, expected) and not np.array_equal(wrong, expected)


def test_half_vector_mode_needs_one_tap_per_phase():
    with pytest.raises(NveCompileError, match=r"half-vector mode needs one tap per phase"):
        column_layout(3, 1, True, "L")


def test_next_bias_load_is_hoisted_into_the_current_iteration():
    # L1-type layer (6x6, stride 2, one input): the VMAC runs back to back (II = 37 VMAC
    # operations, no bubble) because the set.w of the next iteration's bias issues in the cycle
    # of this iteration's last mac, its read two cycles before
    group = group_of(NveLayer(1, 36, 14, 16, 5, 6, 6, 2, 2, [[0]]))
    g, s = group.graph, group.schedule
    assert s.ii == g.count("vmac") == 37
    first_load = next(op for op in g.ops if op.slot == "wreg" and op.coef == 0)
    last_mac = g.vmac[-1]
    assert s.times[first_load.id] + s.ii == s.times[last_mac.id]
    assert s.times[first_load.reads[0]] + s.ii < s.times[last_mac.id]
    assert group.flat_length > s.ii  # without overlap the loads cost a stall


def test_the_check_shift_keeps_the_accumulators_inside_the_lut():
    for acc in ([0], [511, -512], [512], [-(1 << 31), 5], [(1 << 31) - 1], [70000, -3]):
        shift = spread_shift(acc)
        index = lut_index(np.array(acc), shift)
        assert 0 < index.min() and index.max() < 1023, acc  # 0 and 1023: clipped values too
        if shift:  # one bit less reaches an end
            assert {0, 1023} & set(lut_index(np.array(acc), shift - 1).tolist()), acc
