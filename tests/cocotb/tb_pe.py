"""cocotb testbench of the processing element and the PE row against ``hls_ref``: random
accumulation sequences (random clear/last, mixed configurations) with random flow control."""

import random

import cocotb
import numpy as np

from hdl.pe import PERow
from hls_ref import (
    Precision,
    pack_activations,
    pack_weights,
    pe_accumulate,
    st_product,
    wrap_signed,
)
from sim.cocotb_streams import StreamSink, StreamSource, start_design
from sim.layouts import pack, unpack


def lanes_of(component):
    return component.pes if isinstance(component, PERow) else 1


def expected_sums(a, b, codes, clear, last, acc_width):
    """Golden sums per PE lane: ``b`` has one column per PE."""
    columns = []
    for lane in range(b.shape[1]):
        products = [int(st_product(x, y, Precision(c))) for x, y, c in zip(a, b[:, lane], codes)]
        columns.append(pe_accumulate(products, clear, acc_width)[last])
    return np.stack(columns, axis=1)


async def run_sequence(dut, component, a, b, codes, clear, last, rng, *, idle, stall):
    row = isinstance(component, PERow)
    words = [pack(component.input_layout, {
        "a": int(x), "b": [int(v) for v in y] if row else int(y[0]), "precision": int(c),
        "clear": int(cl), "last": int(la)}) for x, y, c, cl, la in zip(a, b, codes, clear, last)]
    source = StreamSource(dut, "i", dut.clk, rng=rng, idle=idle)
    sink = StreamSink(dut, "o", dut.clk, rng=rng, stall=stall)
    cocotb.start_soon(source.send(words))
    count = int(np.sum(last))
    received = await sink.receive(count, timeout_cycles=20 * len(words) + 100)
    shape = component.o.payload.shape()
    got = np.array([unpack(shape, w) if row else [unpack(shape, w)] for w in received])
    want = expected_sums(a, b, codes, clear, last, component.acc_width)
    mismatches = np.argwhere(got != want)
    assert not len(mismatches), (
        f"{len(mismatches)} wrong sums; first at sum {mismatches[0][0]} lane {mismatches[0][1]}:"
        f" got {got[tuple(mismatches[0])]}, expected {want[tuple(mismatches[0])]}")


def random_flags(rng, count, mean_length):
    last = rng.random(count) < 1 / mean_length
    last[-1] = True
    clear = np.concatenate([[True], last[:-1]])
    return clear, last


@cocotb.test()
async def random_sequences(dut):
    """Random operands, configurations and sum lengths, with random idle and stall."""
    component = await start_design(dut)
    seed = cocotb.RANDOM_SEED
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    count = 3000
    a = nrng.integers(0, 1 << 16, count)
    b = nrng.integers(0, 1 << 16, (count, lanes_of(component)))
    codes = nrng.choice([p.value for p in component.precisions], count)
    clear, last = random_flags(nrng, count, rng.choice([1, 4, 30]))
    idle, stall = rng.choice([0.0, 0.3]), rng.choice([0.0, 0.3, 0.7])
    dut._log.info("idle %.1f, stall %.1f", idle, stall)
    await run_sequence(dut, component, a, b, codes, clear, last, rng, idle=idle, stall=stall)


@cocotb.test()
async def dot_products_of_packed_channels(dut):
    """Long dot products of real-looking channel vectors, packed as the hardware expects, in
    every configuration: the PE sum equals the plain integer dot product."""
    component = await start_design(dut)
    seed = cocotb.RANDOM_SEED + 1
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    lanes = lanes_of(component)
    for precision in component.precisions:
        channels = int(nrng.integers(1, 200))
        low_a, low_w = -(1 << (precision.act_bits - 1)), -(1 << (precision.weight_bits - 1))
        x = nrng.integers(low_a, -low_a, (5, channels))
        w = nrng.integers(low_w, -low_w, (5, lanes, channels))
        a_words = pack_activations(x, precision)            # (5, groups)
        b_words = pack_weights(w, precision)                 # (5, lanes, groups)
        groups = a_words.shape[1]
        a = a_words.reshape(-1)
        b = b_words.transpose(0, 2, 1).reshape(-1, lanes)
        codes = np.full(len(a), precision.value)
        last = np.tile(np.arange(groups) == groups - 1, 5)
        clear = np.tile(np.arange(groups) == 0, 5)
        await run_sequence(dut, component, a, b, codes, clear, last, rng, idle=0.1, stall=0.1)
        want = wrap_signed(np.einsum("sc,slc->sl", x, w), component.acc_width)
        assert (expected_sums(a, b, codes, clear, last, component.acc_width) == want).all()


@cocotb.test()
async def wrap_around(dut):
    """The accumulator wraps modulo 2**acc_width, as the golden model defines."""
    component = await start_design(dut)
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    widest = max(component.precisions, key=lambda p: p.product_bits)
    word = {Precision.A16W16: 0x8000, Precision.A16W8: 0x8080}.get(widest, 0x8888)
    count = (1 << (component.acc_width - widest.product_bits + 2)) + 3
    if count > 5000:
        dut._log.warning("acc_width %d is too wide to wrap in %d transfers; not checked",
                         component.acc_width, count)
        return
    a = np.full(count, word)
    b = np.full((count, lanes_of(component)), word)
    codes = np.full(count, widest.value)
    clear = np.arange(count) == 0
    last = np.arange(count) == count - 1
    await run_sequence(dut, component, a, b, codes, clear, last, rng, idle=0.0, stall=0.2)
