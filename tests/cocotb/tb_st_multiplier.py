"""cocotb testbench of the ST multiplier (``hdl.st_multiplier.STMultiplier``) against
``hls_ref.st_product``: corner operands, random vectors with random flow control, throughput."""

import random

import cocotb

from hls_ref import st_product
from sim.cocotb_streams import StreamSink, StreamSource, check_full_rate, start_design
from sim.layouts import pack, unpack

#: Raw 16-bit words at the sign boundaries of every sub-word size.
CORNER_WORDS = (
    0x0000, 0xFFFF, 0x8000, 0x7FFF, 0x0001, 0x8001,  # 16-bit: 0, -1, min, max
    0x8080, 0x7F7F, 0x80FF, 0xFF80, 0x017F, 0x7F01,  # 8-bit sub-words
    0x8888, 0x7777, 0x8F7F, 0x1881, 0xF0F0, 0x0F0F,  # 4-bit sub-words
)


def make_vectors(component, operands, rng):
    """Input words and expected output words for ``(a, b, precision)`` operand triples."""
    words, expected = [], []
    user_mask = (1 << component.user_width) - 1
    for a, b, precision in operands:
        user = rng.getrandbits(component.user_width) & user_mask if component.user_width else 0
        words.append(pack(component.input_layout,
                          {"a": a, "b": b, "precision": precision, "user": user}))
        expected.append({"product": int(st_product(a, b, precision)), "user": user})
    return words, expected


async def check(dut, component, operands, rng, *, idle, stall):
    words, expected = make_vectors(component, operands, rng)
    source = StreamSource(dut, "i", dut.clk, rng=rng, idle=idle)
    sink = StreamSink(dut, "o", dut.clk, rng=rng, stall=stall)
    cocotb.start_soon(source.send(words))
    received = await sink.receive(len(words), timeout_cycles=20 * len(words) + 100)
    for index, (word, want) in enumerate(zip(received, expected)):
        got = unpack(component.output_layout, word)
        a, b, precision = operands[index]
        assert got == want, (f"vector {index}: a=0x{a:04x} b=0x{b:04x} {precision.label}: "
                             f"got {got}, expected {want}")


@cocotb.test()
async def corner_operands(dut):
    """Every pair of sign-boundary words, in every supported configuration."""
    component = await start_design(dut)
    rng = random.Random(cocotb.RANDOM_SEED)
    operands = [(a, b, p) for p in component.precisions
                for a in CORNER_WORDS for b in CORNER_WORDS]
    await check(dut, component, operands, rng, idle=0.1, stall=0.1)


@cocotb.test()
async def random_vectors(dut):
    """Thousands of random operand pairs per configuration, mixed on consecutive cycles, with
    random idle and stall probabilities."""
    component = await start_design(dut)
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    operands = [(rng.getrandbits(16), rng.getrandbits(16), rng.choice(component.precisions))
                for _ in range(2000 * len(component.precisions))]
    idle, stall = rng.choice([0.0, 0.2, 0.5]), rng.choice([0.0, 0.3, 0.6])
    dut._log.info("idle %.1f, stall %.1f", idle, stall)
    await check(dut, component, operands, rng, idle=idle, stall=stall)


@cocotb.test()
async def undefined_codes_give_zero(dut):
    component = await start_design(dut)
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    supported = {p.value for p in component.precisions}
    codes = [code for code in range(8) if code not in supported]
    words = [pack(component.input_layout, {"a": rng.getrandbits(16), "b": rng.getrandbits(16),
                                           "precision": code}) for code in codes * 20]
    source = StreamSource(dut, "i", dut.clk, rng=rng, idle=0.2)
    sink = StreamSink(dut, "o", dut.clk, rng=rng, stall=0.2)
    cocotb.start_soon(source.send(words))
    received = await sink.receive(len(words), timeout_cycles=50 * len(words) + 100)
    assert all(unpack(component.output_layout, w)["product"] == 0 for w in received)


@cocotb.test()
async def one_result_per_cycle(dut):
    """Without back-pressure, N inputs give N results on N consecutive cycles, the first
    ``stages`` cycles after the first input."""
    component = await start_design(dut)
    rng = random.Random(cocotb.RANDOM_SEED + 3)
    count = 200
    operands = [(rng.getrandbits(16), rng.getrandbits(16), rng.choice(component.precisions))
                for _ in range(count)]
    words, expected = make_vectors(component, operands, rng)
    results = await check_full_rate(dut, words, component.stages)
    assert [unpack(component.output_layout, r) for r in results] == expected
