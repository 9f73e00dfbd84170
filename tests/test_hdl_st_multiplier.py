# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the ST multiplier against the golden model (quick feedback)."""


import numpy as np
import pytest
from amaranth.sim import Simulator

from hdl.st_multiplier import MAX_STAGES, STMultiplier, byte_units
from hls_ref import Precision, st_product
from sim.layouts import pack, unpack
from sim.streams import run_streams


def run_vectors(dut, vectors, *, seed, idle=0.3, stall=0.3):
    """Stream ``(a, b, code, user)`` vectors through ``dut``; return the (product, user) seen."""
    # raw bits, so that undefined configuration codes can be sent too
    words = [pack(dut.input_layout, {"a": a, "b": b, "precision": code, "user": user})
             for a, b, code, user in vectors]
    results = [unpack(dut.output_layout, raw) for raw in
               run_streams(dut, words, len(words), seed=seed, idle=idle, stall=stall)]
    return [(fields["product"], fields["user"]) for fields in results]


@pytest.mark.parametrize("multiplier", ["lut", "dsp4", "dsp2", "dsp1"])
@pytest.mark.parametrize("stages", range(MAX_STAGES + 1))
def test_random_vectors_all_configurations(stages, multiplier):
    rng = np.random.default_rng(stages)
    count = 300
    a = rng.integers(0, 1 << 16, count)
    b = rng.integers(0, 1 << 16, count)
    codes = rng.choice(range(8), count)   # undefined codes too
    users = rng.integers(0, 4, count)
    dut = STMultiplier(stages=stages, user_width=2, multiplier=multiplier)
    seen = run_vectors(dut, list(zip(a, b, codes, users)), seed=stages)
    defined = {p.value for p in Precision}
    expected = [int(st_product(x, y, Precision(c))) if c in defined else 0
                for x, y, c in zip(a, b, codes)]
    assert [product for product, _ in seen] == expected
    assert [user for _, user in seen] == list(users)


@pytest.mark.parametrize("precision", list(Precision))
def test_single_configuration_build(precision):
    rng = np.random.default_rng(precision.value)
    a = rng.integers(0, 1 << 16, 100)
    b = rng.integers(0, 1 << 16, 100)
    dut = STMultiplier(precisions=[precision], stages=1)
    assert dut.product_width == precision.product_bits
    seen = run_vectors(dut, [(x, y, precision.value, 0) for x, y in zip(a, b)], seed=1)
    assert [p for p, _ in seen] == list(st_product(a, b, precision))


@pytest.mark.parametrize("multiplier", ["lut", "dsp4", "dsp2", "dsp1"])
def test_unsupported_codes_give_zero(multiplier):
    dut = STMultiplier(precisions=["a8w8", "a4w4"], stages=1, multiplier=multiplier)
    vectors = [(0x8181, 0x8181, code, 0) for code in range(8)]
    seen = run_vectors(dut, vectors, seed=0, idle=0, stall=0)
    expected = [int(st_product(0x8181, 0x8181, Precision(c)))
                if c in (Precision.A8W8.value, Precision.A4W4.value) else 0 for c in range(8)]
    assert [p for p, _ in seen] == expected


def test_byte_units_reproduce_the_specification():
    """The DSP build's plan, evaluated in numpy on extreme and random operands: every
    configuration's weighted unit products sum to the ST result, and no configuration needs
    more than four units."""
    rng = np.random.default_rng(5)
    edges = np.array([0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0x8888, 0xFFFF, 0x0F0F, 0xF0F0])
    a = np.concatenate([np.repeat(edges, len(edges)), rng.integers(0, 1 << 16, 20000)])
    b = np.concatenate([np.tile(edges, len(edges)), rng.integers(0, 1 << 16, 20000)])

    def field(word, lsb, width, is_signed):
        value = (word >> lsb) & ((1 << width) - 1)
        return value - ((value >> (width - 1)) << width) if is_signed else value

    units = byte_units(list(Precision))
    for precision, slots in units.items():
        assert len(slots) == 4
        total = np.zeros(len(a), dtype=np.int64)
        for slot in slots:
            if slot is not None:
                (a_lsb, a_width, a_signed), (b_lsb, b_width, b_signed), weight = slot
                assert a_width <= 8 and b_width <= 8
                total += (field(a, a_lsb, a_width, a_signed)
                          * field(b, b_lsb, b_width, b_signed)) << weight
        assert np.array_equal(total, st_product(a, b, precision)), precision


@pytest.mark.parametrize("multiplier", ["lut", "dsp4", "dsp2", "dsp1"])
def test_one_result_per_cycle_without_backpressure(multiplier):
    dut = STMultiplier(stages=3, multiplier=multiplier)
    cycles = []

    async def testbench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.i.valid, 1)
        for n in range(20):
            ctx.set(dut.i.payload, {"a": n, "b": 1, "precision": Precision.A16W16, "user": 0})
            _, _, valid, product = await ctx.tick().sample(dut.o.valid, dut.o.payload.product)
            if valid:
                cycles.append((n, product))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    # Three register stages: the result of input n appears with input n + 3 on the bus.
    assert cycles == [(n, n - 3) for n in range(3, 20)]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"stages": MAX_STAGES + 1}, r"^stages must be between 0 and 4, not 5$"),
    ({"stages": "2"}, r"^stages must be an integer, not '2'$"),
    ({"user_width": -1}, r"^user_width must be at least 0, not -1$"),
    ({"multiplier": True},
     r"^multiplier must be one of 'lut', 'dsp4', 'dsp2', 'dsp1', not True$"),
    ({"precisions": []}, r"^precisions must name at least one configuration$"),
    ({"precisions": ["a2w2"]},
     r"^Unknown precision 'a2w2'; expected one of a16w16, a4w4, a8w8, a8w4, a16w8$"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        STMultiplier(**kwargs)
