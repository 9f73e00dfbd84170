"""cocotb testbench of the accelerator with the FC datapath (``hdl.fc``) against the socket
golden model (``hls_ref.socket``): cocotbext-axi ``AxiRam`` as external memory and
``AxiLiteMaster`` for the registers, with random pauses on every channel.

Each run loads a whole memory image (descriptor list, operands, an output region with guard
bytes, everything else a random pattern), starts the list through the registers, waits for the
interrupt and compares the status word, the counters and the *whole* memory image with the
golden model's (``tests/cocotb/tb_conv2d.py``'s ``compare``).
"""

import os
import random
from dataclasses import replace

import cocotb
import numpy as np

from hls_ref import Precision
from hls_ref.descriptor import DESCRIPTOR_BYTES, ErrorCode, Op
from hls_ref.socket import (
    SocketModel,
    check_descriptor,
    fc_load_requests,
    fc_store_request,
    store_request,
)
from sim.accelerator_host import AcceleratorHost
from sim.runner import Design
from sw.fixtures import random_fc, random_splits
from sw.program import fc_program
from tests.cocotb.tb_conv2d import HANG_CYCLES, compare, thorough

MEMORY_BYTES = 1 << 20


async def start(dut, seed):
    component = Design.from_env().build()
    host = AcceleratorHost(dut, component.config, memory_bytes=MEMORY_BYTES)
    await host.reset()
    host.pause(0.3 if seed % 2 else 0.1, seed)
    return component.config, host


def store_bytes(program, desc):
    """A mask of the bytes the store of ``desc`` writes (an AXI write error may leave them
    partly written); a conv2d command's too, in a build with both datapaths."""
    mask = np.zeros(len(program.memory), bool)
    request = fc_store_request(desc) if desc.op == Op.FC else store_request(desc)
    for beat, lo, hi, _, _ in request.beats():
        mask[8 * beat + lo:8 * beat + hi] = True
    return mask


async def run_and_compare(host, program, what, *, faults=(), skip=None,
                          timeout_cycles=1_000_000):
    memory, status = program.run_golden(faults=faults)
    upper = None
    if status.code == ErrorCode.AXI_WRITE:
        upper = SocketModel(program.config).run(program.memory.copy(), program.desc_addr,
                                                program.count, faults=faults,
                                                write_errors=False)
    result = await host.run(program.memory, program.desc_addr, program.count, faults=faults,
                            timeout_cycles=timeout_cycles)
    if skip is not None:
        result.memory[skip] = memory[skip]
    compare(result, memory, status, what, upper=upper)
    return result


def random_program(rng, config, **sizes):
    """A random FC layer in a random ST configuration and output width, randomly tiled
    (vectors, outputs, inputs)."""
    fc = config.fc
    precision = Precision(rng.choice([p.value for p in fc.precisions]))
    out_bits = int(rng.choice([4, 8, 16]))
    sizes.setdefault("vectors", int(rng.integers(1, 2 * fc.max_batch + 1)))
    x, w, qb, cmd, want = random_fc(rng, precision, out_bits, **sizes)
    per_beat = 64 // precision.act_bits
    batch = sorted(set(random_splits(rng, x.shape[0]))
                   | set(range(fc.max_batch, x.shape[0], fc.max_batch)))
    program = fc_program(x, w, qb, cmd, config, out_splits=random_splits(rng, w.shape[0], 2),
                         in_splits=random_splits(rng, w.shape[1], per_beat),
                         batch_splits=batch, relu=bool(rng.integers(2)),
                         seed=int(rng.integers(1 << 30)))
    name = f"{precision.label} {out_bits}-bit {x.shape}x{w.shape[0]}"
    return name, program, want


@cocotb.test()
async def random_layers(dut):
    """Random layers and tilings in every ST configuration and output width, batches of 1 to
    twice the datapath's, back to back."""
    seed = cocotb.RANDOM_SEED
    config, host = await start(dut, seed)
    rng = np.random.default_rng(seed)
    for n in range(int(os.environ.get("TESSERA_FC_LAYERS", "8"))):
        name, program, _ = random_program(rng, config)
        await run_and_compare(host, program, f"layer {n} ({name}, {program.count} commands)")


def _small_program(config):
    rng = np.random.default_rng(11)
    x, w, qb, cmd, _ = random_fc(rng, Precision.A8W8, 8, vectors=2, inputs=40, outputs=12)
    return fc_program(x, w, qb, cmd, config, in_splits=(16,))


def invalid_changes(config, desc):
    """One field change per error code that ``check_fc`` finds before touching memory."""
    fc = config.fc
    return {
        ErrorCode.BAD_OP: dict(op=Op.DEPTHWISE),
        ErrorCode.BAD_PRECISION: dict(precision=7),
        ErrorCode.BAD_OUT_WIDTH: dict(out_width=3),
        ErrorCode.ZERO_DIM: dict(out_seg=0),
        ErrorCode.TOO_MANY_CHANNELS: dict(out_c=300, out_seg=300, out_row_stride=512),
        ErrorCode.INPUT_TOO_LARGE: dict(in_c=fc.plm_in_words * 2, in_row_stride=1 << 16),
        ErrorCode.OUTPUT_TOO_LARGE: dict(in_h=fc.max_batch + 1),
        ErrorCode.BAD_LAYOUT: dict(in_addr=desc.in_addr + 2),
        ErrorCode.ACC_STATE: dict(out_c=desc.out_c - 1),
    }


#: Layout mistakes, each refused with ``BAD_LAYOUT``.
LAYOUT_CHANGES = (
    lambda d: dict(in_row_stride=d.in_row_stride + 1),
    lambda d: dict(in_row_stride=d.in_c - 1),
    lambda d: dict(w_addr=d.w_addr + 4),
    lambda d: dict(q_addr=d.q_addr + 2),
    lambda d: dict(out_seg=d.out_c - 1),
    lambda d: dict(out_row_stride=d.out_seg - 1),
    lambda d: dict(out_width=2, out_addr=d.out_addr + 1),
    lambda d: dict(out_width=0, out_row_stride=d.out_row_stride + 1),
    lambda d: dict(out_width=2, out_seg=40000, out_row_stride=40000),
)


@cocotb.test()
async def invalid_descriptors(dut):
    """Each invalid field stops the list at its descriptor with its code; the command before
    it completes, nothing after it is written, and the next list runs."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    program = _small_program(config)
    good = program.descriptors[1]
    cases = [(code.name, replace(good, **change))
             for code, change in invalid_changes(config, good).items()]
    cases += [(f"BAD_LAYOUT {n}", replace(good, **change(good)))
              for n, change in enumerate(LAYOUT_CHANGES)]
    for name, bad in cases:
        code = check_descriptor(bad, config, (good.in_h, good.out_c))
        assert code != ErrorCode.NONE and name.startswith(code.name), (name, code)
        broken = replace(program, memory=program.memory.copy())
        addr = program.desc_addr + DESCRIPTOR_BYTES
        broken.memory[addr:addr + DESCRIPTOR_BYTES] = np.frombuffer(bad.to_bytes(), np.uint8)
        result = await run_and_compare(host, broken, name, timeout_cycles=HANG_CYCLES)
        assert (result.error, result.code, result.index) == (True, code, 1)
    await run_and_compare(host, program, "the valid list after the errors")


@cocotb.test()
async def bus_errors(dut):
    """Error responses on the descriptor fetch, each load and the store are reported with the
    failing descriptor's index (a weight stream that fails after its command computed counts
    its MAC cycles, as the golden model says); bad quantization blocks too."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = np.random.default_rng(4)
    x, w, qb, cmd, _ = random_fc(rng, Precision.A8W4, 8, vectors=2, inputs=32, outputs=20)
    program = fc_program(x, w, qb, cmd, config, out_splits=(10,))
    d1 = program.descriptors[1]
    x_req, w_req, q_req = fc_load_requests(d1, config.fc)
    # (faulty byte, index of the failing descriptor): both commands read the same vectors
    cases = {
        "descriptor": (program.desc_addr + DESCRIPTOR_BYTES + 9, 1),
        "input": (x_req.addr + 8, 0),
        "weights": (w_req.addr + 8, 1),
        "last weights": (w_req.addr + w_req.bytes - 1, 1),
        "qblock": (q_req.addr + 16, 1),
        "output": (program.out_addr + 40, 1),
    }
    for name, (addr, index) in cases.items():
        faults = [(addr, addr + 1)]
        skip = store_bytes(program, d1) if name == "output" else None
        result = await run_and_compare(host, program, f"fault in the {name}", faults=faults,
                                       skip=skip, timeout_cycles=HANG_CYCLES)
        assert result.error and result.index == index, name
    for name, byte, value in (("channel count", 7, 0x20), ("mode", 6, 0x01),
                              ("scale sign", 15, 0xBF), ("scale exponent", 14, 0x00)):
        corrupt = replace(program, memory=program.memory.copy())
        corrupt.memory[d1.q_addr + byte] = value
        if name == "scale exponent":
            corrupt.memory[d1.q_addr + 15] = 0
        result = await run_and_compare(host, corrupt, f"bad quantization block ({name})",
                                       timeout_cycles=HANG_CYCLES)
        assert (result.code, result.index) == (ErrorCode.BAD_QBLOCK, 1), name
    await run_and_compare(host, program, "the valid list after the errors")


@cocotb.test()
async def back_to_back_lists(dut):
    """Lists of random lengths run one after another; an accumulation chain may span two
    lists, and a zero-length list completes at once."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = random.Random(cocotb.RANDOM_SEED)
    _, program, _ = random_program(np.random.default_rng(rng.randrange(1 << 30)), config,
                                   inputs=60)
    model = SocketModel(config)
    memory = program.memory.copy()
    first = 0
    while first < program.count:
        count = rng.randint(0, min(4, program.count - first))
        addr = program.desc_addr + first * DESCRIPTOR_BYTES
        expected = memory.copy()
        status = model.run(expected, addr, count)
        result = await host.run(memory, addr, count)
        compare(result, expected, status, f"descriptors {first}..{first + count - 1}")
        memory = result.memory
        first += count
    np.testing.assert_array_equal(memory, program.run_golden()[0])


@cocotb.test()
async def write_error_mid_list(dut):
    """A write error on the store of any command but the last ends the list with
    ``AXI_WRITE`` at that command; the next list runs to its end."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = np.random.default_rng(5)
    x, w, qb, cmd, _ = random_fc(rng, Precision.A8W8, 16, vectors=3, inputs=24, outputs=32)
    program = fc_program(x, w, qb, cmd, config, out_splits=(8, 16, 24), in_splits=(16,))
    stored = [i for i, d in enumerate(program.descriptors) if d.q_flag]
    for index in stored[:-1] if thorough() else stored[:1]:
        desc = program.descriptors[index]
        mask = store_bytes(program, desc)
        # a byte only this store writes
        others = np.zeros_like(mask)
        for j, d in enumerate(program.descriptors):
            if d.q_flag and j != index:
                others |= store_bytes(program, d)
        byte = int(np.flatnonzero(mask & ~others)[0])
        result = await run_and_compare(host, program, f"write error at command {index}",
                                       faults=[(byte, byte + 1)], skip=mask,
                                       timeout_cycles=HANG_CYCLES)
        assert (result.code, result.index) == (ErrorCode.AXI_WRITE, index)
        await run_and_compare(host, program, f"the valid list after the error at {index}",
                              timeout_cycles=HANG_CYCLES)


@cocotb.test()
async def output_addresses_and_clamps(dut):
    """Outputs at every byte offset of a beat in every width (16-bit at odd addresses are
    refused), clamps wider and narrower than the output width, ReLU."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = np.random.default_rng(6)
    for out_bits in (4, 8, 16):
        x, w, qb, cmd, _ = random_fc(rng, Precision.A8W8, out_bits, vectors=3, inputs=20,
                                     outputs=11)
        for act_min, act_max in ((-32768, 32767), (-3, 5)):
            base = fc_program(x, w, replace(qb, act_min=act_min, act_max=act_max,
                                            real_scale=qb.real_scale * 64), cmd, config,
                              relu=act_min == -3)
            for offset in range(1, 8) if thorough() else (out_bits % 7 + 1,):
                program = base.with_descriptors(
                    [replace(d, out_addr=d.out_addr + offset) for d in base.descriptors])
                what = f"{out_bits}-bit outputs at +{offset}, clamp [{act_min}, {act_max}]"
                result = await run_and_compare(host, program, what,
                                               timeout_cycles=HANG_CYCLES)
                refused = out_bits == 16 and offset % 2
                assert (result.code == ErrorCode.BAD_LAYOUT) == refused, what


@cocotb.test()
async def fuzz_lists(dut):
    """Random descriptor lists over every layout the checks accept, with invalid fields,
    partial-sum chains, error responses anywhere and operands past the image, against the
    golden model (``sim.descriptor_fuzz``; in a build with conv2d too, lists that switch
    between the datapaths); then a valid list still runs.
    ``TESSERA_FUZZ_LISTS`` lists (default 6, Icarus 2)."""
    from sim.descriptor_fuzz import random_list

    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    lists = int(os.environ.get("TESSERA_FUZZ_LISTS", "6" if thorough() else "2"))
    for n in range(lists):
        case = random_list(rng, config)
        memory, status = case.run_golden()
        result = await host.run(case.memory, case.desc_addr, case.count, faults=case.faults,
                                timeout_cycles=HANG_CYCLES)
        upper = None
        if status.code == ErrorCode.AXI_WRITE:
            upper = case.run_unfaulted()
            mask = store_bytes(case, case.descriptors[status.index])
            result.memory[mask] = memory[mask]
        compare(result, memory, status, f"list {n} ({case.describe()})", upper=upper)
    await run_and_compare(host, _small_program(config), "a valid list after the fuzzing")


#: Layers of ``real_layers`` in the CI tier: the small ones (the classifier layers of
#: ResNet-8 and DS-CNN, the autoencoder's bottleneck).
SMALL_LAYERS = {"resnet8": ("14_fully_connected",), "dscnn": ("11_fully_connected",),
                "autoencoder": ("04_fully_connected", "05_fully_connected")}


@cocotb.test()
async def real_layers(dut):
    """FullyConnected layers of ResNet-8, DS-CNN, VWW and the autoencoder with their real
    weights, tiled by the FC tiling compiler for this build, bit-exact against the golden
    model (itself bit-exact with LiteRT), for one vector and for a batch of
    ``TESSERA_FC_BATCH`` (default 3). ``TESSERA_REAL_LAYERS=all`` runs every FC layer of the
    four models, else :data:`SMALL_LAYERS`."""
    from sw.fixtures import model_fc_programs

    config, host = await start(dut, cocotb.RANDOM_SEED)
    everything = os.environ.get("TESSERA_REAL_LAYERS") == "all"
    batch = int(os.environ.get("TESSERA_FC_BATCH", "3"))
    for model in ("resnet8", "dscnn", "vww", "autoencoder"):
        if not everything and model not in SMALL_LAYERS:
            continue
        for vectors in (1, batch):
            for name, program, _, want in model_fc_programs(model, config, vectors=vectors):
                if not everything and name not in SMALL_LAYERS[model]:
                    continue
                memory, _ = program.run_golden()
                np.testing.assert_array_equal(program.output(memory)[:, 0, :], want, name)
                await run_and_compare(host, program,
                                      f"{model} {name} x{vectors} ({program.count} commands)")
