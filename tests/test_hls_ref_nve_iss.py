"""The NVE instruction-set simulator: every hazard rule, the latency boundaries, the AGU, and
the seed's modulo-scheduled 3x3 filter (Fig. 26) run end to end against numpy."""

import os
import random
from dataclasses import replace

import numpy as np
import pytest

from hls_ref.nve import numerics
from hls_ref.nve.asm import assemble
from hls_ref.nve.isa import (
    ErrorCode,
    NveError,
    Program,
    Settings,
    coefficients_to_word,
    pixels_to_word,
)
from hls_ref.nve.iss import Nve, run
from sim.nve_programs import (
    COEF,
    DATA,
    DIRECTED,
    HAZARDS,
    PARTIAL_SUM_RELOAD,
    PIX_HI,
    PIX_LO,
    PREFIX,
    random_program,
)

SEED = int(os.environ.get("TESSERA_SEED", "20261121"))

def asm(body, prefix=PREFIX, **settings):
    program = assemble(prefix + body)
    return replace(program, settings=replace(program.settings, **settings)) \
        if settings else program


def fails(body, message, data=DATA, prefix=PREFIX, **options):
    with pytest.raises(NveError, match=message):
        run(asm(body, prefix), data, **options)


# ---- the arithmetic of one convolution step


def test_bias_mac_and_activation():
    # setrb at 6 (bias 100), mac at 7 with rw[0] = 100, sh.w at 7 -> mac at 8 with w1 = 3,
    # setrb at 9 hands off; act.lo / act.hi at 12, 13 (identity LUT, shift 0).
    result = run(asm("sh.w | mac\nmac\nsetrb\nnop\nnop\nact.lo out\nact.hi out\n"), DATA)
    pixels = np.array([1, -2, 3, -4, 5, -6, 7, -8, 10, 20, 30, 40, 50, 60, 70, 80])
    expected = numerics.activate(100 + 100 * pixels + 3 * pixels, 0, numerics.identity_lut())
    assert result.outputs.tolist() == expected.reshape(2, 8).tolist()
    assert (result.cycles, result.instructions, result.mac_ops, result.lane_macs) == (14, 14, 2,
                                                                                      32)
    assert result.mac_per_instruction == 16 * 2 / 14
    assert result.inputs_used == 3
    assert result.written[:3].all() and not result.written[3:].any()
    assert result.local_buffer[1] == PIX_LO


# ---- latency boundaries


def test_read_data_is_consumed_two_cycles_after_the_rd():
    run(asm("", prefix="wr.a 0\nnop\nrd.a 0\nnop\nset.w\n"), DATA)
    fails("", r"^cycle 3, pc 3, WREG set: the port-A read data of the rd at cycle 2, pc 2 "
          r"arrives 2 cycles after it$", prefix="wr.a 0\nnop\nrd.a 0\nset.w\n")
    # a longer distance is fine when no other read uses the port in between
    run(asm("", prefix="wr.a 0\nnop\nrd.a 0\nnop\nnop\nnop\nset.w\n"), DATA)


def test_a_written_word_is_readable_two_cycles_later():
    run(asm("", prefix="wr.a 0\nnop\nrd.b 0\n"), DATA)
    fails("", r"^cycle 1, pc 1, MEMB rd: word 0 was written at cycle 0; a rd may issue 2 "
          r"cycles after the wr$", prefix="wr.a 0\nrd.b 0\n")
    fails("", r"^cycle 0, pc 0, MEMB rd: word 0 was written at cycle 0", prefix="wr.a 0 | rd.b 0\n")


ACT_TAIL = "sh.w | mac\nsetrb\n"  # setrb at cycle 8 hands off one mac (live)


def test_act_reads_a_hand_off_three_cycles_after_the_setrb():
    run(asm(ACT_TAIL + "nop\nnop\nact.lo\nact.hi\n"), DATA)
    # at setrb + 2 the act sees the older hand-off of the never-set accumulators (cycle 6)
    fails(ACT_TAIL + "nop\nact.lo\n", r"^cycle 10, pc 10, ACT lo: lanes \[0, 1, 2, 3, 4, 5, "
          r"6, 7\] of the hand-off of the setrb at cycle 6 hold no valid result")
    # with no older hand-off at all
    fails("nop\nact.hi\n", r"^cycle 8, pc 8, ACT hi: no accumulator hand-off is visible \(a "
          r"setrb at cycle t is activated from t\+3\); the setrb at cycle 6 is not yet$")


def test_set_w_and_set_i_cannot_share_port_a():
    prefix = "wr.a 0\nwr.a 1\nnop\nrd.a 0 | rd.b 1\nrd.a 1\n"
    fails("set.w | set.i\n", r"^cycle 5, pc 5, IREG set: port-A read data is also taken by "
          r"WREG set in this cycle \(set.w and set.i both need port A\)$", prefix=prefix)
    run(asm("set.w\nset.i\n", prefix=prefix), DATA)
    # setsh.i and seth.i use port B only, so they may share a cycle with set.w
    run(asm("set.w | setsh.i\n", prefix="wr.a 0\nwr.a 1\nnop\nrd.a 0 | rd.b 1\nnop\n"), DATA)


def test_register_ops_are_seen_one_cycle_later():
    # set.w at 2 loads rw; a mac in the same cycle still sees the invalid rw[0]
    prefix = "wr.a 0\nnop\nrd.a 0\nnop\n"
    fails("set.w | mac\n", r"^cycle 4, pc 4, VMAC mac: rw\[0\] holds no valid coefficient$",
          prefix=prefix)
    fails("set.w | setrb\n", r"^cycle 4, pc 4, VMAC setrb: rw\[0\] holds no valid", prefix=prefix)
    run(asm("set.w\nsetrb\n", prefix=prefix), DATA)


# ---- every other rule


def test_weight_shifts_invalidate_the_top_entry():
    fails("sh.w\nsh.w\nsh.w\nsh.w\nmac\n", r"^cycle 11, pc 11, VMAC mac: rw\[0\] holds no valid")
    run(asm("sh.w\nsh.w\nsh.w\nsetrb\n"), DATA)  # rw[0] = w3, still valid


def test_read_port_hold_rule():
    prefix = "wr.a 0\nwr.a 1\nrd.a 0\nrd.a 1\n"
    fails("nop\nset.w\n", r"^cycle 3, pc 3, MEMA rd: its data would overwrite the port-A read "
          r"data of the rd at cycle 2, pc 2, which no set consumed \(read-port hold rule\)$",
          prefix=prefix)
    run(asm("set.w\nset.i | setrb\n", prefix="wr.a 0\nwr.a 1\nrd.a 0\nrd.a 1 | rd.b 1\n"),
        DATA)
    fails("set.w\nnop\nset.w\n", r"^cycle 6, pc 6, WREG set: port-A read data already consumed "
          r"by the set at cycle 4 \(rd at cycle 2, pc 2\)$", prefix="wr.a 0\nnop\nrd.a 0\nnop\n")
    fails("", r"^cycle 0, pc 0, IREG setsh: no rd on port B has delivered data$",
          prefix="setsh.i\n")
    # set.i needs both ports
    fails("set.i\n", r"^cycle 4, pc 4, IREG set: no rd on port B has delivered data$",
          prefix="wr.a 0\nnop\nrd.a 0\nnop\n")


def test_memory_rules():
    fails("", r"^cycle 0, pc 0, MEMA wr: address 2047\+1 = 2048 is outside the local buffer "
          r"\(2048 words\)$", prefix="wr.a 2047+1\n")
    fails("", r"^cycle 0, pc 0, MEMB rd: word 7 was never written$", prefix="rd.b 7\n")
    fails("", r"^cycle 2, pc 2, MEMA wr: input stream exhausted after 2 data words$",
          data=DATA[:2], prefix="wr.a 0\nwr.a 1\nwr.a 2\n")
    fails("", r"^input data word 1 = -1 does not fit 64 bits unsigned$", data=[0, -1],
          prefix="wr.a 0\n")
    fails("", r"^cycle 0, pc 0, MEMB wr: ro holds no activation result \(no act issued 2 or more "
          r"cycles before\)$", prefix="wr.b 0\n")


# A complete convolution step ending with both halves activated at cycles 11 and 12; ro holds
# the act.hi result from cycle 13.
STEP = ACT_TAIL + "nop\nnop\nact.lo out\nact.hi out\n"


def test_act_results_go_to_the_local_buffer_through_ro():
    # a wr.b stores the ro of an act 2 or more cycles before it: at 13 the act.lo of 11
    result = run(asm(STEP + "wr.b 9\nwr.b 10\nnop\nrd.b 9\n"), DATA)
    assert result.local_buffer[9] == result.output_words[0]
    assert result.local_buffer[10] == result.output_words[1]
    fails(STEP + "wr.a 9 | wr.b 9\n", r"^cycle 13, pc 13, MEMB wr: port A writes word 9 in the "
          r"same cycle$", data=[*DATA, 0])
    # the act.lo of cycle 11 is not yet in ro for a wr.b at 12
    fails(ACT_TAIL + "nop\nnop\nact.lo out\nwr.b 9 | act.hi out\n", r"^cycle 12, pc 12, MEMB "
          r"wr: ro holds no activation result \(no act issued 2 or more cycles before\)$")


def test_invalid_image_entries_poison_only_their_lane():
    # sh.i at 7 moves the invalid ri[16] into ri[15]: lane 15 of the mac at 8 is garbage
    body = "sh.w | sh.i\nmac\nsetrb\nnop\nnop\n"
    fails(body + "act.hi\n", r"^cycle 12, pc 12, ACT hi: lanes \[15\] of the hand-off of the "
          r"setrb at cycle 9 hold no valid result")
    result = run(asm(body + "act.lo out\n"), DATA)  # the poisoned hi half need not be activated
    assert result.lane_macs == 15


def test_half_vector_mode_uses_port_b_only():
    # seth.i fills ri[8..15]; ri[0..7] were never loaded, so lanes 0..7 compute garbage
    prefix = "wr.a 0\nwr.a 1\nnop\nrd.a 0 | rd.b 1\nnop\nset.w | seth.i\nsetrb\nsh.w | mac\n" \
        "setrb\n"
    body = "nop\nnop\nact.hi out\n"
    result = run(asm(body, prefix=prefix), DATA[:2])
    pixels = np.array([1, -2, 3, -4, 5, -6, 7, -8])
    expected = numerics.activate(100 + 100 * pixels, 0, numerics.identity_lut())
    assert result.outputs.tolist() == [expected.tolist()]
    assert result.lane_macs == 8
    fails("nop\nnop\nact.lo out\n", r"^cycle 11, pc 11, ACT lo: lanes \[0, 1, 2, 3, 4, 5, 6, "
          r"7\] of the hand-off of the setrb at cycle 8", data=DATA[:2], prefix=prefix)


def test_results_must_be_activated_before_they_are_replaced():
    fails(ACT_TAIL + "setrb\nnop\nnop\nnop\n", r"^cycle 9, pc 9, VMAC setrb: replaces a "
          r"hand-off too early: the lo half of the hand-off of the setrb at cycle 8, pc 8 was "
          r"never activated \(results lost\)$")
    fails(ACT_TAIL + "nop\nnop\nact.lo\nsetrb\nnop\nnop\nnop\n", r"^cycle 12, pc 12, VMAC "
          r"setrb: replaces a hand-off too early: the hi half")
    fails(ACT_TAIL, r"^cycle 9, pc 8, end of run: the lo half of the hand-off of the setrb at "
          r"cycle 8, pc 8 was never activated \(results lost\)$")
    fails("sh.w | mac\n", r"^cycle 8, pc 7, end of run: the accumulators hold the results of 1 "
          r"mac\(s\) that no setrb handed to ACT \(results lost\)$")


def test_bad_settings_are_refused_at_load():
    nve = Nve()
    with pytest.raises(NveError, match=r"^settings: shift must be 0 \.\.\. 31, not 40$"):
        nve.load(Program((0,), Settings(shift=40)))
    with pytest.raises(NveError, match=r"^settings: a program has 1 \.\.\. 512 instructions"):
        nve.load(Program((0,) * 600))
    with pytest.raises(NveError, match=r"^no program loaded$"):
        nve.run([])


# ---- AGU


def test_agu_rotation_of_the_seed_example():
    # Seed Sec. 3.2 / Fig. 18-19: columns 0 and 1 at fixed addresses 3 and 4; the repetitive
    # write has offset 3, update 2, mode 1 (toggle 3, inc 1); the reads offset 3, update 0-2.
    program = assemble("""
        .loop 5 10 4
        .agu 1 1 3
        wr.a 0
        wr.a 1
        wr.a 2
        wr.a 3
        wr.a 4
        wr.a 3+2@1
        rd.a 3+0@1
        rd.a 3+1@1
        rd.a 3+2@1 | set.w
        set.w
        set.w
    """)
    data = [100 + k for k in range(9)]
    nve = Nve()
    nve.load(program)
    for _ in range(2):  # a rerun restarts the AGU from the loaded update fields
        result = nve.run(data, trace=True)
        addresses = [line.split(";")[1].split() for line in result.trace if ";" in line]
        writes = [a[0] for a in addresses[5::4]]
        reads = [a[0] for i, a in enumerate(addresses[5:]) if i % 4]
        assert writes == ["A=5", "A=3", "A=4", "A=5"]
        assert reads == ["A=3", "A=4", "A=5", "A=4", "A=5", "A=3",
                         "A=5", "A=3", "A=4", "A=3", "A=4", "A=5"]
        assert result.local_buffer[3:6].tolist() == [106, 107, 108]


# ---- the seed's modulo-scheduled 3x3 filter (Fig. 26)


def fig26_program(columns):
    """A 16-row band of ``columns`` output columns of a 3x3 stride-1 filter (shift 6, tanh LUT).

    Local buffer: coefficient words [b w0 w1 -], [w2 w3 w4 -], [w5 w6 w7 w8] at 0-2; input
    column c (rows 0-23, 3 words) at 3 + 3 * (c % 3). The loop body is Fig. 26 (cycle k of the
    figure = body line k): it finishes output column i-1 (cycles 1-4 of the figure: the MACs
    with w5..w8), starts column i (setrb at 5, MACs w0..w4 at 6-10), activates column i-1
    (8, 9) and writes input column i+2 (1, 4, 7). The prologue is the body without the
    operations of the previous column; the final part finishes and flushes the last column.
    """
    return assemble(f"""
        .loop body last {columns - 1}
        .agu 1 3 9
        .shift 6
        .lut tanh
        # init: coefficients, input columns 0 and 1
        wr.a 0
        wr.a 1
        wr.a 2
        wr.a 3
        wr.a 4
        wr.a 5
        wr.a 6
        wr.a 7
        wr.a 8
        # prologue: output column 0 up to its fifth MAC, input column 2
        wr.a 9
        rd.a 0
        rd.a 3 | rd.b 4
        wr.a 10 | rd.b 5 | set.w
        rd.a 1 | sh.w | set.i | setrb
        rd.a 6 | rd.b 7 | sh.w | setsh.i | mac
        wr.a 11 | rd.b 8 | set.w | sh.i | mac
        rd.a 2 | sh.w | set.i | mac
        rd.a 9 | rd.b 10 | sh.w | setsh.i | mac
        rd.b 11 | set.w | sh.i | mac
        # Fig. 26, cycles 1-10; input column i+2 -> update 3 * ((i + 2) % 3), i = 1 first
        body:
        wr.a 3+0@1 | sh.w | set.i | mac
        rd.a 0 | sh.w | setsh.i | mac
        rd.a 3+3@1 | rd.b 4+3@1 | sh.w | sh.i | mac
        wr.a 4+0@1 | rd.b 5+3@1 | set.w | mac
        rd.a 1 | sh.w | set.i | setrb
        rd.a 3+6@1 | rd.b 4+6@1 | sh.w | setsh.i | mac
        wr.a 5+0@1 | rd.b 5+6@1 | set.w | sh.i | mac
        rd.a 2 | sh.w | set.i | mac | act.lo out
        rd.a 3+0@1 | rd.b 4+0@1 | sh.w | setsh.i | mac | act.hi out
        last: rd.b 5+0@1 | set.w | sh.i | mac
        # final: the last four MACs, hand-off, activation
        sh.w | set.i | mac
        sh.w | setsh.i | mac
        sh.w | sh.i | mac
        mac
        setrb
        nop
        nop
        act.lo out
        act.hi out
    """)


def fig26_data(rng, columns):
    pixels = rng.integers(-128, 128, size=(24, columns + 2))  # rows 18-23: padding
    weights = rng.integers(-400, 400, size=9)  # w[3 * kernel column + kernel row]
    bias = int(rng.integers(-5000, 5000))
    coef = [[bias, weights[0], weights[1], 0], [weights[2], weights[3], weights[4], 0],
            weights[5:9]]
    data = [coefficients_to_word(c) for c in coef]
    data += [pixels_to_word(pixels[8 * k:8 * k + 8, c]) for c in range(columns + 2)
             for k in range(3)]
    return pixels, weights, bias, data


def fig26_expected(pixels, weights, bias, columns):
    acc = np.full((16, columns), bias, dtype=np.int64)
    for kc in range(3):
        for kr in range(3):
            acc += int(weights[3 * kc + kr]) * pixels[kr:kr + 16, kc:kc + columns]
    return numerics.activate(acc, 6, numerics.tanh_lut())


def outputs_as_band(result, columns):
    """(16, columns) output pixels: column i is act.lo (rows 0-7) then act.hi (rows 8-15)."""
    return result.outputs.reshape(columns, 16).T


@pytest.mark.parametrize("columns", [1, 2, 37])
def test_fig26_filter_matches_numpy(columns):
    rng = np.random.default_rng(SEED + columns)
    print(f"seed {SEED + columns}")
    pixels, weights, bias, data = fig26_data(rng, columns)
    result = run(fig26_program(columns), data)
    expected = fig26_expected(pixels, weights, bias, columns)
    assert np.array_equal(outputs_as_band(result, columns), expected)
    # init 9 + prologue 10 + body 10 per further column + final 9
    assert result.cycles == result.instructions == 10 * columns + 18
    assert result.stall_cycles == 0
    assert result.mac_ops == 9 * columns and result.lane_macs == 16 * 9 * columns
    assert result.inputs_used == len(data) == 3 * (columns + 2) + 3
    loop = result.parts["loop"]
    assert loop.instructions == 10 * (columns - 1)
    if columns > 1:
        assert loop.mac_per_instruction == pytest.approx(14.4)  # 9 MACs * 16 lanes / II 10
    assert result.mac_per_instruction == pytest.approx(144 * columns / (10 * columns + 18))


def test_accumulators_wrap_at_32_bits():
    # 600 macs of 32767 * p from the bias -32768 leave int32 for |p| >= 110 and stay inside for
    # |p| <= 109; shift 24 maps the int32 range onto the identity LUT's int8 range, so a wrapped
    # lane reads the opposite sign instead of saturating.
    pixels = np.array([127, -128, 110, -110, 109, -109, 0, 1, -1, 64, -64, 120, -120, 100, 2, -3])
    bias, weight, macs = -32768, 32767, 600
    data = [coefficients_to_word([bias, weight, 0, 0]), pixels_to_word(pixels[:8]),
            pixels_to_word(pixels[8:])]
    result = run(asm(f".loop body body {macs}\n.shift 24\nsh.w\nbody: mac\nsetrb\nnop\nnop\n"
                     "act.lo out\nact.hi out\n"), data)
    exact = bias + macs * weight * pixels
    wrapped = numerics.wrap_acc(exact)
    assert (exact != wrapped).tolist() == [abs(p) >= 110 for p in pixels]
    lut = numerics.identity_lut()
    expected = numerics.activate(wrapped, 24, lut)
    assert result.outputs.reshape(-1).tolist() == expected.tolist()
    saturated = numerics.activate(np.clip(exact, -(2 ** 31), 2 ** 31 - 1), 24, lut)
    assert (expected != saturated).sum() == 6
    assert result.mac_ops == macs and result.parts["loop"].mac_ops == macs


def test_fig26_stalls_and_reruns():
    columns = 12
    rng = np.random.default_rng(SEED + 1)
    print(f"seed {SEED + 1}")
    nve = Nve()
    nve.load(fig26_program(columns))
    bands = [fig26_data(rng, columns) for _ in range(2)]
    free = nve.run(bands[0][3])
    # input word k arrives at cycle 4k (slower than the 3 words per 10 cycles the loop eats),
    # output word k is accepted from cycle 25k
    slow = nve.run(bands[1][3], arrival=lambda k: 4 * k, output_accept=[25 * k
                                                                      for k in range(24)])
    for (pixels, weights, bias, _), result in zip(bands, (free, slow)):
        expected = fig26_expected(pixels, weights, bias, columns)
        assert np.array_equal(outputs_as_band(result, columns), expected)
    assert slow.instructions == free.instructions == 10 * columns + 18
    assert slow.stall_cycles > 0 and slow.cycles == slow.instructions + slow.stall_cycles
    assert slow.cycles >= 4 * (len(bands[1][3]) - 1) and slow.cycles >= 25 * 23
    with pytest.raises(NveError, match=r"^the input arrival model gives no cycle for word 2$"):
        nve.run(bands[0][3], arrival=[0, 0])


def test_trace_names_cycle_pc_and_addresses():
    rng = np.random.default_rng(SEED)
    data = fig26_data(rng, 2)[3]
    result = run(fig26_program(2), data, trace=True, arrival=lambda k: 0 if k < 9 else 30)
    assert len([line for line in result.trace if "stall" not in line]) == result.instructions
    assert result.trace[0] == "      0    0  wr.a 0  ; A=0"
    assert result.trace[9] == "      9    -  stall 21 cycles"
    assert result.trace[10] == "     30    9  wr.a 9  ; A=9"
    assert result.trace[-1].endswith("act.hi out")


# ---- error codes, the AGU wrap, partial sums and the retire trace


@pytest.mark.parametrize("hazard", HAZARDS, ids=lambda h: h.name)
def test_every_hazard_reports_its_code_cycle_and_pc(hazard):
    with pytest.raises(NveError) as error:
        run(hazard.program, hazard.data, strict=False, retire=True)
    e = error.value
    assert (e.code, e.cycle, e.pc) == (hazard.code, hazard.cycle, hazard.pc), str(e)
    assert str(e).startswith(f"cycle {hazard.cycle}, pc {hazard.pc}, ")
    # what ran before the fault is kept for the lockstep comparison: every instruction up to
    # the one during which the fault was found (a hold-rule or hand-off fault is reported at
    # the earlier rd or setrb it concerns)
    assert [r.cycle for r in e.retire] == list(range(len(e.retire)))
    assert len(e.retire) >= hazard.cycle


def test_every_run_time_error_code_has_a_hazard_program():
    run_time = {c for c in ErrorCode if c not in (
        ErrorCode.NONE, ErrorCode.SETTINGS, ErrorCode.NO_PROGRAM, ErrorCode.ILLEGAL_INSTRUCTION,
        ErrorCode.ABORTED, ErrorCode.AGU_ROTATION, ErrorCode.SYNTAX)}
    assert {h.code for h in HAZARDS} == run_time


def test_load_errors_carry_their_codes():
    nve = Nve()
    nve.load(asm("nop\n"))
    with pytest.raises(NveError) as error:
        nve.load(Program((0, 5 << 5)))
    assert (error.value.code, error.value.pc) == (ErrorCode.ILLEGAL_INSTRUCTION, 1)
    with pytest.raises(NveError) as error:  # a failed load leaves no program (LOADED 0)
        nve.run([])
    assert error.value.code is ErrorCode.NO_PROGRAM


def test_agu_update_wraps_modulo_the_address_width():
    # inc 5 never meets toggle 2 below 2048: 0, 5, ..., 2045, then (2045 + 5) mod 2048 = 2
    # equals the toggle and wraps to 0
    n = 420
    program = assemble(f".loop 0 0 {n}\n.agu 1 5 2\nwr.a 0+0@1\n", strict=False)
    with pytest.raises(NveError) as error:
        run(program, range(n))
    assert error.value.code is ErrorCode.AGU_ROTATION
    result = run(program, range(n), strict=False, retire=True)
    expected, u = [], 0
    for _ in range(n):
        expected.append(u)
        u = (u + 5) % 2048
        u = 0 if u == 2 else u
    assert [r.mema_addr for r in result.retire] == expected
    assert expected[409:412] == [2045, 0, 5]


def _partial_sum_source(pixels, bias, weight, macs):
    """A run whose hand-off is ``bias + macs * weight * pixels`` (wrapped), sent out as its 8
    partial-sum words."""
    data = [coefficients_to_word([bias, weight, 0, 0]), pixels_to_word(pixels[:8]),
            pixels_to_word(pixels[8:])]
    text = f".loop body body {macs}\nsh.w\nbody: mac\nsetrb\nnop\nnop\n" + "act.ps out\n" * 8
    return asm(text), data


def test_partial_sums_leave_and_return_exactly():
    pixels = np.array([127, -128, 110, -110, 109, -109, 0, 1, -1, 64, -64, 120, -120, 100, 2, -3])
    program, data = _partial_sum_source(pixels, -32768, 32767, 600)
    first = run(program, data)
    exact = numerics.wrap_acc(-32768 + 600 * 32767 * pixels)
    digits = numerics.partial_digits(exact)  # [4, 16]
    words = [pixels_to_word(digits[n // 2, 8 * (n % 2):8 * (n % 2) + 8]) for n in range(8)]
    assert list(first.output_words) == words
    coef = [coefficients_to_word([0, 0, 0, 0]), coefficients_to_word([1, 256, 1, 256])]
    second = run(assemble(PARTIAL_SUM_RELOAD), coef + words, retire=True)
    reloaded = second.retire[24].acc  # after the last mach
    lanes = [(reloaded >> (32 * j)) & 0xFFFFFFFF for j in range(16)]
    assert numerics.wrap_acc(np.array(lanes)).tolist() == exact.tolist()
    assert second.output_words == first.output_words  # handed off again, same digits
    assert second.mac_ops == 4


def test_retire_records_pack_the_state_the_hardware_holds():
    result = run(asm(STEP), DATA, retire=True)
    assert [r.pc for r in result.retire] == list(range(result.instructions))
    assert [r.cycle for r in result.retire] == list(range(result.cycles))
    first = result.retire[0]
    assert (first.mema_op, first.mema_addr, first.mema_data) == (2, 0, COEF)
    assert result.retire[5].rw == COEF  # set.w: rw[k] = coefficient k of the word
    assert result.retire[6].ri == PIX_LO | PIX_HI << 64  # set.i, ri[16..22] still 0
    acc6 = result.retire[6].acc  # setrb: every lane holds the bias 100
    assert acc6 == sum(100 << (32 * j) for j in range(16))
    assert result.retire[11].ro == result.output_words[0] and result.retire[11].out
    assert result.retire[10].ro == 0  # no act before


@pytest.mark.parametrize("name, text, data, strict", DIRECTED, ids=[d[0] for d in DIRECTED])
def test_directed_programs_run(name, text, data, strict):
    result = run(assemble(text, strict=strict), data, strict=strict)
    assert result.inputs_used == len(data)


def test_random_programs_are_legal():
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    total = 0
    for k in range(24):
        program, data = random_program(rng, loop=k % 3 == 2)
        result = run(program, data, strict=False)
        total += result.instructions
        assert result.inputs_used == len(data)
        if k % 3 == 2:
            assert program.settings.iterations >= 1
    assert total > 5000
