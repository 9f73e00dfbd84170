"""cocotb testbench of the requantization unit (``hdl.requant.Requantizer``) against
``hls_ref.quant``: hand-computed corner cases, every int8 shift, random vectors with random
flow control, latency and throughput. The vectors and the golden function are those of the
Amaranth-simulator tests (``tests/test_hdl_requant.py``)."""

import random

import cocotb
import numpy as np

from sim.cocotb_streams import StreamSink, StreamSource, check_full_rate, start_design
from sim.layouts import pack, unpack
from tests.test_hdl_requant import FIELDS, corner_vectors, golden, random_vectors, shift_sweep

#: Random vectors per run (a few seconds on either simulator).
RANDOM_VECTORS = 5000


def make_words(component, vectors, rng):
    """Input words and expected ``(value, user)`` pairs; ``user`` drawn from ``rng``."""
    words, expected = [], []
    want = golden(vectors)
    for k in range(len(vectors["acc"])):
        user = rng.getrandbits(component.user_width) if component.user_width else 0
        fields = {name: int(vectors[name][k]) for name in FIELDS}
        words.append(pack(component.input_layout, {**fields, "user": user}))
        expected.append({"value": int(want[k]), "user": user})
    return words, expected


async def check(dut, component, vectors, rng, *, idle, stall):
    words, expected = make_words(component, vectors, rng)
    source = StreamSource(dut, "i", dut.clk, rng=rng, idle=idle)
    sink = StreamSink(dut, "o", dut.clk, rng=rng, stall=stall)
    cocotb.start_soon(source.send(words))
    received = await sink.receive(len(words), timeout_cycles=20 * len(words) + 100)
    for k, (word, want) in enumerate(zip(received, expected)):
        got = unpack(component.output_layout, word)
        fields = ", ".join(f"{name}={int(vectors[name][k])}" for name in FIELDS)
        assert got == want, f"vector {k}: {fields}: got {got}, expected {want}"


@cocotb.test()
async def corner_cases(dut):
    """The hand-computed cases, then every int8 shift on a few operand pairs."""
    component = await start_design(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    corners, sweep = corner_vectors(), shift_sweep()
    vectors = {name: np.concatenate([corners[name], sweep[name]]) for name in FIELDS}
    await check(dut, component, vectors, rng, idle=0.1, stall=0.1)


@cocotb.test()
async def random_vectors_with_flow_control(dut):
    """Random vectors over the full ranges, with random idle and stall probabilities."""
    component = await start_design(dut)
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    vectors = random_vectors(np.random.default_rng(cocotb.RANDOM_SEED + 1), RANDOM_VECTORS)
    idle, stall = rng.choice([0.0, 0.2, 0.5]), rng.choice([0.0, 0.3, 0.6])
    dut._log.info("idle %.1f, stall %.1f", idle, stall)
    await check(dut, component, vectors, rng, idle=idle, stall=stall)


@cocotb.test()
async def one_result_per_cycle(dut):
    """Without back-pressure, N inputs give N results on N consecutive cycles, the first
    ``stages`` cycles after the first input, and the input is always ready."""
    component = await start_design(dut)
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    count = 300
    vectors = random_vectors(np.random.default_rng(cocotb.RANDOM_SEED + 2), count)
    words, expected = make_words(component, vectors, rng)
    results = await check_full_rate(dut, words, component.stages)
    assert [unpack(component.output_layout, r) for r in results] == expected
