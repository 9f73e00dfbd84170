# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the processing element and PE row against the golden model."""

import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from hdl.pe import PERow, ProcessingElement
from hdl.st_multiplier import MAX_STAGES
from hls_ref import Precision, pe_accumulate, st_product
from sim.streams import stream_get, stream_put


def random_sequence(rng, count, codes):
    """Random operands and clear/last flags; every sum starts with clear and ends with last."""
    a = rng.integers(0, 1 << 16, count)
    b = rng.integers(0, 1 << 16, count)
    code = rng.choice(codes, count)
    last = rng.random(count) < 0.25
    last[-1] = True
    clear = np.concatenate([[True], last[:-1]])
    return a, b, code, clear, last


def expected_sums(a, b, code, clear, last, acc_width):
    products = np.array([int(st_product(x, y, Precision(c))) for x, y, c in zip(a, b, code)])
    return list(pe_accumulate(products, clear, acc_width)[last])


def simulate(dut, transfers, expected_count, seed, idle=0.3, stall=0.3):
    rng = random.Random(seed)
    sums = []

    async def producer(ctx):
        for payload in transfers:
            await stream_put(ctx, dut.i, payload, rng=rng, idle=idle)

    async def consumer(ctx):
        for _ in range(expected_count):
            sums.append(await stream_get(ctx, dut.o, rng=rng, stall=stall))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(producer)
    sim.add_testbench(consumer)
    sim.run()
    return sums


@pytest.mark.parametrize("multiplier", ["lut", "dsp4", "dsp2", "dsp1"])
@pytest.mark.parametrize("stages", range(MAX_STAGES + 1))
def test_pe_accumulates_like_golden_model(stages, multiplier):
    rng = np.random.default_rng(10 + stages)
    a, b, code, clear, last = random_sequence(rng, 300, [p.value for p in Precision])
    dut = ProcessingElement(stages=stages, multiplier=multiplier)
    transfers = [{"a": int(x), "b": int(y), "precision": Precision(c),
                  "clear": int(cl), "last": int(la)}
                 for x, y, c, cl, la in zip(a, b, code, clear, last)]
    sums = simulate(dut, transfers, int(last.sum()), seed=stages)
    assert sums == expected_sums(a, b, code, clear, last, 32)


def test_narrow_accumulator_wraps():
    # a16w16 products of -32768 * -32768 = 2**30 overflow a 32-bit sum after two additions.
    dut = ProcessingElement(acc_width=32)
    transfers = [{"a": 0x8000, "b": 0x8000, "precision": Precision.A16W16,
                  "clear": int(i == 0), "last": int(i == 3)} for i in range(4)]
    (total,) = simulate(dut, transfers, 1, seed=0)
    assert total == int(pe_accumulate([1 << 30] * 4, [1, 0, 0, 0], 32)[-1]) == 0


@pytest.mark.parametrize("multiplier", ["lut", "dsp4", "dsp2", "dsp1"])
def test_pe_row_matches_independent_pes(multiplier):
    rng = np.random.default_rng(7)
    pes = 4
    a, _, code, clear, last = random_sequence(rng, 120, [p.value for p in Precision])
    b = rng.integers(0, 1 << 16, (120, pes))
    dut = PERow(pes=pes, stages=2, multiplier=multiplier)
    transfers = [{"a": int(x), "b": [int(v) for v in y], "precision": Precision(c),
                  "clear": int(cl), "last": int(la)}
                 for x, y, c, cl, la in zip(a, b, code, clear, last)]
    rows = simulate(dut, transfers, int(last.sum()), seed=3)
    for pe in range(pes):
        assert [row[pe] for row in rows] == expected_sums(a, b[:, pe], code, clear, last, 32)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"acc_width": 24},
     r"^acc_width must be at least 32 \(the width of one a16w16 product\), not 24$"),
    ({"acc_width": 16, "precisions": ["a8w8", "a4w4"]},
     r"^acc_width must be at least 17 \(the width of one a8w8 product\), not 16$"),
    ({"acc_width": 64}, r"^acc_width must be at most 63, not 64$"),
    ({"acc_width": 32.0}, r"^acc_width must be an integer, not 32.0$"),
    ({"precisions": ["fp16"]},
     r"^Unknown precision 'fp16'; expected one of a16w16, a4w4, a8w8, a8w4, a16w8$"),
    ({"stages": -1}, r"^stages must be between 0 and 4, not -1$"),
    ({"multiplier": "dsp"},
     r"^multiplier must be one of 'lut', 'dsp4', 'dsp2', 'dsp1', not 'dsp'$"),
])
def test_pe_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ProcessingElement(**kwargs)


def test_pe_row_bad_count():
    with pytest.raises(ValueError, match=r"^pes must be at least 1, not 0$"):
        PERow(pes=0)
