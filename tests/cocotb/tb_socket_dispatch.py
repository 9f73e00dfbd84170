"""cocotb testbench of the socket's dispatch between datapaths (``hdl.accelerator``) with two
stand-in datapaths (``tests.stub_datapath``): lists that switch between them, ops no datapath
runs, error responses on fetches, loads and stores, against the stand-ins' golden model.

A list that hands a descriptor to one datapath while the other still holds a command would hang
(the store of the first never gets the writer) or reorder the stores: every list must end, in
order, with the golden model's memory image and status.
"""

import random

import cocotb
import numpy as np

from hls_ref.descriptor import DESCRIPTOR_BYTES, Descriptor, ErrorCode, Op, write_descriptors
from sim.accelerator_host import AcceleratorHost
from sim.runner import Design
from tests.stub_datapath import expected

MEMORY_BYTES = 1 << 16


def random_case(rng):
    """A list of 1-12 descriptors for the two stand-ins (runs of each, sometimes an op no
    datapath has), with reads and writes in separate regions; sometimes a faulty beat."""
    memory = np.frombuffer(rng.randbytes(MEMORY_BYTES), np.uint8).copy()
    count = rng.randint(1, 12)
    desc_addr = 64 * rng.randrange(16, 64)
    descriptors, op = [], Op.DEPTHWISE
    for _ in range(count):
        if rng.random() < 0.4:
            op = Op.FC if op == Op.DEPTHWISE else Op.DEPTHWISE
        chosen = 5 if rng.random() < 0.04 else op
        descriptors.append(Descriptor(op=chosen, in_addr=8 * rng.randrange(1024, 4096),
                                      out_addr=8 * rng.randrange(4096, 8190)))
    write_descriptors(memory, desc_addr, descriptors)
    faults = []
    if rng.random() < 0.3:
        d = rng.choice(descriptors)
        where = rng.choice([d.in_addr, d.out_addr, desc_addr + DESCRIPTOR_BYTES
                            * rng.randrange(count)])
        faults.append((where, where + 1))
    return memory, desc_addr, count, faults


@cocotb.test()
async def switching_lists(dut):
    """Random lists over both stand-ins, with pauses on every channel."""
    seed = cocotb.RANDOM_SEED
    component = Design.from_env().build()
    host = AcceleratorHost(dut, component.config, memory_bytes=MEMORY_BYTES)
    await host.reset()
    host.pause(0.2, seed)
    rng = random.Random(seed)
    codes = set()
    for n in range(40):
        memory, desc_addr, count, faults = random_case(rng)
        want, (code, index), retired = expected(memory, desc_addr, count, faults=faults)
        result = await host.run(memory, desc_addr, count, faults=faults,
                                timeout_cycles=20_000)
        got = (result.code, result.index if result.error else 0, result.progress)
        assert got == (code, index, retired), f"list {n}: {got} != {(code, index, retired)}"
        diff = np.flatnonzero(result.memory != want)
        if code == ErrorCode.AXI_WRITE:        # the failing store may leave its beat either way
            diff = [a for a in diff if not (faults[0][0] - 8 < a < faults[0][1] + 8)]
        assert len(diff) == 0, f"list {n}: {len(diff)} bytes differ, first at {diff[0]:#x}"
        codes.add(ErrorCode(code))
    assert ErrorCode.NONE in codes
