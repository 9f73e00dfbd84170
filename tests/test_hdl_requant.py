# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the requantization unit against ``hls_ref.quant`` (quick
feedback). The vector generators and the golden function are shared with the cocotb testbench
(``tests/cocotb/tb_requant.py``)."""


import numpy as np
import pytest
from amaranth.sim import Simulator

from hdl.requant import DEFAULT_STAGES, MAX_STAGES, REGISTER_ORDER, Requantizer
from hls_ref.formats import QuantBlock
from hls_ref.invocation import _requantize
from hls_ref.quant import (
    INT32_MAX,
    INT32_MIN,
    activation_range,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from sim.layouts import pack, unpack
from sim.streams import run_streams, with_sync_domain

FIELDS = ("acc", "multiplier", "shift", "zero_point", "low", "high")

Q31_MAX = (1 << 31) - 1
HALF = 1 << 30  # the Q31 significand of 0.5

#: Hand-computed cases (zero point 0 and the full int16 window unless given): the rounding
#: rules, the int32 wrap of the left shift, the shift extremes, the wide zero-point sum and the
#: clamp. ``value`` is the expected output; the golden model is checked against it too.
CORNER_CASES = [
    # SRDHM ties go toward plus infinity: -7 * 0.5 = -3.5 -> -3, 7 * 0.5 -> 4.
    {"acc": -7, "multiplier": HALF, "shift": 0, "value": -3},
    {"acc": 7, "multiplier": HALF, "shift": 0, "value": 4},
    {"acc": -5, "multiplier": HALF, "shift": 0, "value": -2},
    {"acc": 5, "multiplier": HALF, "shift": 0, "value": 3},
    {"acc": -1, "multiplier": HALF, "shift": 0, "value": 0},
    {"acc": 1, "multiplier": HALF, "shift": 0, "value": 1},
    # The rounding right shift takes ties away from zero: -6 * 0.25 = -1.5 -> -2.
    {"acc": -6, "multiplier": HALF, "shift": -1, "value": -2},
    {"acc": 6, "multiplier": HALF, "shift": -1, "value": 2},
    {"acc": -2, "multiplier": HALF, "shift": -1, "value": -1},
    {"acc": 2, "multiplier": HALF, "shift": -1, "value": 1},
    {"acc": -3, "multiplier": HALF, "shift": -1, "value": -1},
    # Two roundings: 5 * 0.25 = 1.25, but 2.5 -> 3 first, then 1.5 -> 2.
    {"acc": 5, "multiplier": HALF, "shift": -1, "value": 2},
    {"acc": -5, "multiplier": HALF, "shift": -1, "value": -1},
    # The left shift wraps in int32: 1 << 31 is INT32_MIN, 3 << 30 is -2**30.
    {"acc": 1, "multiplier": 1, "shift": 31, "value": -1},
    {"acc": 1, "multiplier": 1 << 15, "shift": 30, "value": 16384},
    {"acc": 3, "multiplier": 1 << 15, "shift": 30, "value": -16384},
    {"acc": -1, "multiplier": 1 << 16, "shift": 30, "value": -32768},
    # Left shifts of 32 bits or more give 0.
    {"acc": 12345, "multiplier": HALF, "shift": 32, "value": 0},
    {"acc": INT32_MIN, "multiplier": Q31_MAX, "shift": 127, "value": 0},
    # Extremes of the product: INT32_MIN * (2**31 - 1) -> -(2**31 - 1), then / 2**31 -> -1.
    {"acc": INT32_MIN, "multiplier": Q31_MAX, "shift": -31, "value": -1},
    {"acc": INT32_MAX, "multiplier": Q31_MAX, "shift": -31, "value": 1},
    {"acc": INT32_MIN, "multiplier": HALF, "shift": -31, "value": -1},  # -0.5 -> -1
    {"acc": INT32_MIN, "multiplier": Q31_MAX, "shift": -30, "value": -2},
    {"acc": INT32_MAX, "multiplier": Q31_MAX, "shift": -16, "value": 32767},
    {"acc": INT32_MIN, "multiplier": HALF, "shift": -15, "value": -32768},
    {"acc": INT32_MIN, "multiplier": 0, "shift": 0, "value": 0},
    {"acc": INT32_MAX, "multiplier": 1, "shift": 0, "value": 1},  # 0.99999... rounds to 1
    # Right shifts of 32 to 63 bits give 0; of 64 or more, the sign of the high half (+1 for
    # zero): the golden model's numpy arithmetic, matched exactly.
    {"acc": INT32_MIN, "multiplier": Q31_MAX, "shift": -32, "value": 0},
    {"acc": INT32_MAX, "multiplier": Q31_MAX, "shift": -63, "value": 0},
    {"acc": 0, "multiplier": 0, "shift": -64, "value": 1},
    {"acc": 5, "multiplier": HALF, "shift": -100, "value": 1},
    {"acc": INT32_MIN, "multiplier": HALF, "shift": -128, "value": -1},
    {"acc": -1, "multiplier": HALF, "shift": -128, "value": 1},  # the high half is 0
    # The zero point is added without wrapping before the clamp.
    {"acc": INT32_MAX, "multiplier": Q31_MAX, "shift": 0, "zero_point": 32767, "value": 32767},
    {"acc": INT32_MIN, "multiplier": Q31_MAX, "shift": 0, "zero_point": -32768,
     "value": -32768},
    {"acc": -100, "multiplier": HALF, "shift": 0, "zero_point": 32767, "value": 32717},
    {"acc": 100, "multiplier": HALF, "shift": 0, "zero_point": -32768, "value": -32718},
    # Clamps: activation and output width folded into the bounds; low > high gives high.
    {"acc": 1000, "multiplier": HALF, "shift": 0, "zero_point": -3, "low": -128, "high": 127,
     "value": 127},
    {"acc": -1000, "multiplier": HALF, "shift": 0, "zero_point": -3, "low": -3, "high": 127,
     "value": -3},
    {"acc": 13, "multiplier": HALF, "shift": 0, "zero_point": 0, "low": 7, "high": 7,
     "value": 7},
    {"acc": 0, "multiplier": 0, "shift": 0, "zero_point": 5, "low": 10, "high": -10,
     "value": -10},
    {"acc": -1000, "multiplier": HALF, "shift": 0, "zero_point": 0, "low": 10, "high": -10,
     "value": -10},
]


def corner_vectors():
    """:data:`CORNER_CASES` as a dict of int64 arrays (fields and ``value``)."""
    defaults = {"zero_point": 0, "low": -(1 << 15), "high": (1 << 15) - 1}
    cases = [{**defaults, **case} for case in CORNER_CASES]
    return {name: np.array([case[name] for case in cases], np.int64)
            for name in (*FIELDS, "value")}


def golden(vectors):
    """The expected ``value`` of each vector, as ``hls_ref.invocation._requantize`` computes it:
    ``clip(multiply_by_quantized_multiplier(acc, multiplier, shift) + zero_point, low, high)``
    with the bounds already folded."""
    shift = np.asarray(vectors["shift"], np.int64)
    # The golden mask arithmetic overflows int64 for right shifts of 63 bits and more.
    with np.errstate(over="ignore"):
        scaled = multiply_by_quantized_multiplier(vectors["acc"], vectors["multiplier"], shift)
    return np.clip(scaled + vectors["zero_point"], vectors["low"], vectors["high"])


def _magnitude_bits(values):
    return np.array([int(v).bit_length() for v in values])


def random_vectors(rng, count):
    """``count`` random vectors (a dict of int64 arrays) from the numpy generator ``rng``.

    Accumulators are uniform over int32, of random bit length, or special values; multipliers
    mostly in ``[2**30, 2**31)`` (what ``quantize_multiplier`` produces), sometimes 0, any Q31
    value, a power of two (many exact ties) or an extreme; shifts mostly within TFLite's range
    -31..30, most of them chosen so that the result lands near the int16 window, a few over the
    whole int8 range; zero points and clamp bounds over int16, with typical windows.
    """
    acc = rng.integers(INT32_MIN, INT32_MAX, count, endpoint=True)
    kind = rng.random(count)
    length = rng.integers(0, 32, count)
    acc = np.where(kind < 0.5, acc >> (31 - length), acc)  # random bit length
    specials = np.array([INT32_MIN, INT32_MIN + 1, -(1 << 30), -2, -1, 0, 1, 2, 1 << 30,
                         INT32_MAX - 1, INT32_MAX], np.int64)
    acc = np.where(kind > 0.9, rng.choice(specials, count), acc)

    multiplier = rng.integers(1 << 30, 1 << 31, count)
    kind = rng.random(count)
    multiplier = np.where(kind < 0.04, 0, multiplier)
    multiplier = np.where((kind >= 0.04) & (kind < 0.12), rng.integers(0, 1 << 31, count),
                          multiplier)
    powers = np.array([1 << 30, 1 << 29, 3 << 28, 1 << 16, 1], np.int64)
    ties = (kind >= 0.12) & (kind < 0.2)
    multiplier = np.where(ties, rng.choice(powers, count), multiplier)
    multiplier = np.where((kind >= 0.2) & (kind < 0.23),
                          rng.choice([1 << 30, Q31_MAX], count), multiplier)

    # A result of about 2**target needs shift ~ target - bit length of acc.
    target = rng.integers(-2, 18, count)
    visible = np.clip(target - _magnitude_bits(acc), -31, 30)
    shift = rng.integers(-31, 30, count, endpoint=True)
    kind = rng.random(count)
    shift = np.where(kind < 0.6, visible, shift)
    shift = np.where(kind > 0.94, rng.integers(-128, 127, count, endpoint=True), shift)
    shift = np.where(kind > 0.98, rng.choice([-128, -65, -64, -63, -33, -32, -31, 30, 31, 32,
                                              127], count), shift)
    shift = np.where(ties & (kind < 0.9), rng.integers(-8, 0, count, endpoint=True), shift)

    zero_point = rng.integers(-(1 << 15), 1 << 15, count)
    zero_point = np.where(rng.random(count) < 0.5, zero_point >> rng.integers(0, 16, count),
                          zero_point)
    # Clamp windows: int16 (half), int8, ReLU at the zero point in int8, a random pair of
    # bounds, and a few crossed pairs (low > high).
    a = rng.integers(-(1 << 15), 1 << 15, count)
    b = rng.integers(-(1 << 15), 1 << 15, count)
    kind = rng.random(count)
    windows = [
        (kind < 0.5, -(1 << 15), (1 << 15) - 1),
        ((kind >= 0.5) & (kind < 0.65), -128, 127),
        ((kind >= 0.65) & (kind < 0.75), np.clip(zero_point, -128, 127), 127),
        ((kind >= 0.75) & (kind < 0.95), np.minimum(a, b), np.maximum(a, b)),
        (kind >= 0.95, np.maximum(a, b), np.minimum(a, b)),
    ]
    low = np.select([where for where, _, _ in windows], [lo for _, lo, _ in windows])
    high = np.select([where for where, _, _ in windows], [hi for _, _, hi in windows])
    return {"acc": acc, "multiplier": multiplier, "shift": shift, "zero_point": zero_point,
            "low": low, "high": high}


def shift_sweep():
    """Every int8 shift applied to a handful of accumulator and multiplier pairs."""
    pairs = [(INT32_MIN, Q31_MAX), (INT32_MAX, Q31_MAX), (-12345, HALF), (99999, 0x5A5A5A5A),
             (-1, HALF), (0, Q31_MAX), (3, 0x40000001), (-(1 << 20) - 1, 0x7FFF0001)]
    rows = [(acc, multiplier, shift) for acc, multiplier in pairs for shift in range(-128, 128)]
    acc, multiplier, shift = (np.array(column, np.int64) for column in zip(*rows))
    count = len(rows)
    return {"acc": acc, "multiplier": multiplier, "shift": shift,
            "zero_point": np.zeros(count, np.int64), "low": np.full(count, -(1 << 15)),
            "high": np.full(count, (1 << 15) - 1)}


def run_vectors(dut, vectors, users, *, seed, idle=0.3, stall=0.3):
    """Stream ``vectors`` (with side-band ``users``) through ``dut`` with random idle and stall
    cycles; return the ``(value, user)`` pairs received."""
    count = len(users)
    words = [pack(dut.input_layout, {**{name: int(vectors[name][k]) for name in FIELDS},
                                     "user": int(users[k])}) for k in range(count)]
    results = [unpack(dut.output_layout, raw) for raw in
               run_streams(dut, words, count, seed=seed, idle=idle, stall=stall)]
    return [(fields["value"], fields["user"]) for fields in results]


def check(dut, vectors, *, seed, idle=0.3, stall=0.3):
    count = len(vectors["acc"])
    users = np.random.default_rng(seed).integers(0, 1 << dut.user_width, count)
    seen = run_vectors(dut, vectors, users, seed=seed, idle=idle, stall=stall)
    got = np.array([value for value, _ in seen])
    want = golden(vectors)
    mismatches = np.flatnonzero(got != want)
    if len(mismatches):
        k = mismatches[0]
        fields = ", ".join(f"{name}={int(vectors[name][k])}" for name in FIELDS)
        pytest.fail(f"{len(mismatches)} of {count} vectors differ; first: {fields}: "
                    f"got {got[k]}, expected {want[k]}")
    assert [user for _, user in seen] == list(users)


def test_corner_cases_are_what_the_golden_model_computes():
    vectors = corner_vectors()
    assert list(golden(vectors)) == list(vectors["value"])


def test_corner_cases():
    check(Requantizer(user_width=4), corner_vectors(), seed=1)


def test_every_int8_shift():
    check(Requantizer(user_width=1), shift_sweep(), seed=2, idle=0.1, stall=0.1)


def test_random_vectors_default_build():
    rng = np.random.default_rng(3)
    check(Requantizer(user_width=5), random_vectors(rng, 4000), seed=3)


@pytest.mark.parametrize("stages", range(MAX_STAGES + 1))
def test_random_vectors_every_stage_count(stages):
    rng = np.random.default_rng(100 + stages)
    vectors = random_vectors(rng, 800)
    vectors = {name: np.concatenate([corner_vectors()[name], vectors[name]]) for name in FIELDS}
    check(Requantizer(stages=stages, user_width=3), vectors, seed=100 + stages)


def test_without_flow_control():
    rng = np.random.default_rng(4)
    check(Requantizer(stages=3, user_width=2), random_vectors(rng, 1000), seed=4, idle=0,
          stall=0)


@pytest.mark.parametrize("out_bits", [4, 8, 16])
@pytest.mark.parametrize("activation", ["none", "relu", "relu6", "relu_n1_to_1"])
def test_matches_the_invocation_model(out_bits, activation):
    """A layer tile requantized as ``hls_ref.invocation`` does it, with real-looking scales:
    bounds folded from the activation and the output width, per-channel multipliers."""
    rng = np.random.default_rng(out_bits * 10 + len(activation))
    channels, pixels = 16, 40
    s_in, s_out = 0.05, 0.02 * rng.uniform(0.5, 4)
    s_w = rng.uniform(0.001, 0.05, channels)
    quantized = [quantize_multiplier(s_in * float(w) / s_out) for w in s_w]
    zero_point = int(rng.integers(-(1 << (out_bits - 1)), 1 << (out_bits - 1)))
    act_min, act_max = activation_range(activation, s_out, zero_point, bits=out_bits)
    block = QuantBlock(zero_point, act_min, act_max, np.zeros(channels, np.int64),
                       np.array([q for q, _ in quantized], np.int64),
                       np.array([s for _, s in quantized], np.int64))
    acc = rng.integers(-(1 << 20), 1 << 20, (pixels, channels))
    want = _requantize(acc, block, out_bits)

    low = max(act_min, -(1 << (out_bits - 1)))
    high = min(act_max, (1 << (out_bits - 1)) - 1)
    count = pixels * channels
    vectors = {"acc": acc.ravel(), "multiplier": np.tile(block.multiplier, pixels),
               "shift": np.tile(block.shift, pixels),
               "zero_point": np.full(count, zero_point), "low": np.full(count, low),
               "high": np.full(count, high)}
    dut = Requantizer()
    seen = run_vectors(dut, vectors, np.zeros(count, np.int64), seed=5, idle=0.2, stall=0.2)
    assert np.array_equal(np.array([value for value, _ in seen]).reshape(pixels, channels),
                          want)


@pytest.mark.parametrize("stages", range(MAX_STAGES + 1))
def test_latency_and_throughput(stages):
    """Without back-pressure a result leaves ``stages`` cycles after its input, one per cycle,
    and the input is always ready."""
    dut = Requantizer(stages=stages, user_width=8)
    cycles = []

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.i.valid, 1)
        for n in range(30):
            # n * 2 * 0.5 = n exactly.
            ctx.set(dut.i.payload, {"acc": n, "multiplier": HALF, "shift": 1, "zero_point": 0,
                                    "low": -(1 << 15), "high": (1 << 15) - 1, "user": n})
            _, _, ready, valid, payload = await ctx.tick().sample(dut.i.ready, dut.o.valid,
                                                                  dut.o.payload)
            assert ready
            if valid:
                cycles.append((n, payload.value, payload.user))

    sim = Simulator(with_sync_domain(dut))
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert cycles == [(n, n - stages, n - stages) for n in range(stages, 30)]


def test_stalls_as_a_whole():
    """While the output is not accepted, it holds its transfer, and the input is refused once
    the pipeline is full; nothing is lost or duplicated when the output drains."""
    dut = Requantizer(user_width=8)
    got = []

    async def testbench(ctx):
        ctx.set(dut.o.ready, 0)
        ctx.set(dut.i.valid, 1)
        sent = 0
        for cycle in range(12):
            ctx.set(dut.i.payload, {"acc": sent, "multiplier": HALF, "shift": 1,
                                    "zero_point": 0, "low": -(1 << 15), "high": (1 << 15) - 1,
                                    "user": sent})
            _, _, ready, valid, payload = await ctx.tick().sample(dut.i.ready, dut.o.valid,
                                                                  dut.o.payload)
            sent += ready
            if cycle >= DEFAULT_STAGES:
                assert valid and payload.value == 0 and payload.user == 0
        assert sent == DEFAULT_STAGES  # one transfer per register
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.o.ready, 1)
        for _ in range(DEFAULT_STAGES + 3):
            _, _, valid, payload = await ctx.tick().sample(dut.o.valid, dut.o.payload)
            if valid:
                got.append((payload.value, payload.user))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert got == [(n, n) for n in range(DEFAULT_STAGES)]


def test_layouts_and_parameters():
    dut = Requantizer(user_width=6)
    assert dut.stages == DEFAULT_STAGES
    assert dut.registers == REGISTER_ORDER[:DEFAULT_STAGES]
    fields = {name: str(field.shape) for name, field in dut.input_layout}
    assert fields == {"acc": "signed(32)", "multiplier": "unsigned(31)", "shift": "signed(8)",
                      "zero_point": "signed(16)", "low": "signed(16)", "high": "signed(16)",
                      "user": "unsigned(6)"}
    assert {name: str(field.shape) for name, field in dut.output_layout} == {
        "value": "signed(16)", "user": "unsigned(6)"}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"stages": MAX_STAGES + 1},
     rf"^stages must be between 0 and {MAX_STAGES}, not {MAX_STAGES + 1}$"),
    ({"stages": "2"}, r"^stages must be an integer, not '2'$"),
    ({"user_width": -1}, r"^user_width must be at least 0, not -1$"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Requantizer(**kwargs)
