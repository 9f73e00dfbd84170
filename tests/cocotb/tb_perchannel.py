"""cocotb testbench of the accelerator with the per-channel datapath (``hdl.perchannel``)
against the socket golden model (``hls_ref.socket``, :class:`hls_ref.perchannel.PerChannelEngine`):
cocotbext-axi ``AxiRam`` as external memory with random pauses on every channel, the whole
memory image (guard bytes around every output, a random pattern elsewhere), the status word
and the counters compared with the golden model's (``tests/cocotb/tb_conv2d.py``'s
``compare``).
"""

import os
from dataclasses import replace

import cocotb
import numpy as np

from hls_ref import Precision
from hls_ref.descriptor import DESCRIPTOR_BYTES, ErrorCode, Mode, Op
from hls_ref.perchannel import check, load_requests, store_request
from hls_ref.socket import SocketModel
from hls_ref.socket import store_request as conv_store_request
from sim.accelerator_host import AcceleratorHost
from sim.runner import Design
from sw.fixtures import random_splits
from sw.perchannel_fixtures import random_add, random_depthwise, random_pool
from sw.perchannel_program import add_program, avg_pool_program, depthwise_program
from tests.cocotb.tb_conv2d import HANG_CYCLES, compare, thorough

MEMORY_BYTES = 1 << 20


async def start(dut, seed):
    component = Design.from_env().build()
    host = AcceleratorHost(dut, component.config, memory_bytes=MEMORY_BYTES)
    await host.reset()
    host.pause(0.3 if seed % 2 else 0.1, seed)
    return component.config, host


def store_bytes(program, desc):
    """A mask of the bytes the store of ``desc`` writes (a write error may leave them partly
    written); a conv2d command's too, in a build with both datapaths."""
    mask = np.zeros(len(program.memory), bool)
    request = store_request(desc) if desc.op == Op.DEPTHWISE else conv_store_request(desc)
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


def random_program(rng, config, mode, **sizes):
    """A random per-channel layer of ``mode`` in a random ST configuration and output width,
    tiled by random channel blocks and row tiles that fit the build."""
    s = config.depthwise
    precision = Precision(rng.choice([p.value for p in s.precisions]))
    out_bits = int(rng.choice([4, 8, 16]))
    relu = bool(rng.integers(2))
    seed = int(rng.integers(1 << 30))
    channels = int(rng.integers(1, 3 * s.lanes))
    if mode == Mode.DEPTHWISE:
        x, w, qb, cmd, want = random_depthwise(rng, precision, out_bits, channels=channels,
                                               max_kernel=s.max_kernel, **sizes)
        ho = want.shape[0]
        rows = random_splits(rng, ho)
        program = depthwise_program(x, w, qb, cmd, config, row_splits=rows,
                                    out_splits=random_splits(rng, channels, 2), relu=relu,
                                    seed=seed)
        shape = f"{x.shape} k{cmd.kernel} s{cmd.stride} p{cmd.padding}"
    elif mode == Mode.AVGPOOL:
        x, qb, cmd, want = random_pool(rng, precision, out_bits, channels=channels, **sizes)
        program = avg_pool_program(x, qb, cmd, config, row_splits=random_splits(rng, x.shape[0]),
                                   out_splits=random_splits(rng, channels, 2), relu=relu,
                                   seed=seed)
        shape = f"{x.shape}"
    else:
        a, b, qb, cmd, want = random_add(rng, precision, out_bits, channels=channels, **sizes)
        program = add_program(a, b, qb, cmd, config, row_splits=random_splits(rng, a.shape[0]),
                              out_splits=random_splits(rng, channels, 2), relu=relu,
                              seed=seed)
        shape = f"{a.shape}"
    return f"{mode.name.lower()} {precision.label} {out_bits}-bit {shape}", program


@cocotb.test()
async def random_layers(dut):
    """Random depthwise, pool and add layers in every ST configuration and output width,
    randomly tiled (channel blocks, row tiles, a pool's carried partial sums)."""
    seed = cocotb.RANDOM_SEED
    config, host = await start(dut, seed)
    rng = np.random.default_rng(seed)
    count = int(os.environ.get("TESSERA_PC_LAYERS", "9"))
    for n in range(count):
        mode = Mode(n % 3)
        name, program = random_program(rng, config, mode)
        await run_and_compare(host, program, f"layer {n} ({name}, {program.count} commands)")


def _small_program(config):
    rng = np.random.default_rng(11)
    x, w, qb, cmd, _ = random_depthwise(rng, Precision.A8W8, 8, channels=6, kernel=(3, 3),
                                        size=(5, 4), stride=(1, 1), pad=(1, 1, 1, 1))
    return depthwise_program(x, w, qb, cmd, config, out_splits=(config.depthwise.lanes,))


def invalid_changes(config, desc):
    """One field change per error code that ``hls_ref.perchannel.check`` finds before
    touching memory."""
    s = config.depthwise
    return {
        ErrorCode.BAD_OP: dict(mode=3),
        ErrorCode.BAD_PRECISION: dict(precision=7),
        ErrorCode.BAD_OUT_WIDTH: dict(out_width=3),
        ErrorCode.ZERO_DIM: dict(in_w=0),
        ErrorCode.BAD_KERNEL: dict(kernel_h=s.max_kernel[0] + 1),
        ErrorCode.BAD_STRIDE: dict(stride_w=s.max_stride + 1),
        ErrorCode.BAD_PADDING: dict(pad_left=desc.kernel_w),
        ErrorCode.TOO_MANY_CHANNELS: dict(out_c=s.lanes + 1, in_c=s.lanes + 1,
                                          out_seg=s.lanes + 1, out_pixel_stride=64,
                                          in_pixel_stride=64),
        ErrorCode.TILE_TOO_SMALL: dict(in_h=1, pad_top=0, pad_bottom=0),
        ErrorCode.INPUT_TOO_LARGE: dict(in_h=s.plm_pixels, in_w=2),
        ErrorCode.OUTPUT_TOO_LARGE: dict(in_h=s.acc_pixels + 1, in_w=2),
        ErrorCode.BAD_LAYOUT: dict(q_addr=desc.q_addr + 4),
        ErrorCode.ACC_STATE: dict(acc_flag=1),
    }


@cocotb.test()
async def invalid_descriptors(dut):
    """Each invalid field stops the list at its descriptor with its code; the command before
    it completes, nothing after it is written, and the next list runs."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    program = _small_program(config)
    good = program.descriptors[1]
    for code, change in invalid_changes(config, good).items():
        bad = replace(good, **change)
        got = check(bad, config.depthwise)
        assert got == code, (code, got)
        broken = replace(program, memory=program.memory.copy())
        addr = program.desc_addr + DESCRIPTOR_BYTES
        broken.memory[addr:addr + DESCRIPTOR_BYTES] = np.frombuffer(bad.to_bytes(), np.uint8)
        result = await run_and_compare(host, broken, code.name, timeout_cycles=HANG_CYCLES)
        assert (result.error, result.code, result.index) == (True, code, 1)
    await run_and_compare(host, program, "the valid list after the errors")


@cocotb.test()
async def bus_errors(dut):
    """Error responses on the descriptor fetch and each load are reported with the failing
    descriptor's index; bad quantization blocks too (the store's: ``write_error_mid_list``)."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    program = _small_program(config)
    d1 = program.descriptors[1]
    x_req, w_req, q_req = load_requests(d1, config.depthwise)
    # (faulty byte, index of the failing descriptor): the input's beats hold pixels of both
    # commands (channel blocks of one tile), so its fault stops the first
    cases = {
        "descriptor": (program.desc_addr + DESCRIPTOR_BYTES + 9, 1),
        "input": (x_req.addr, 0),
        "weights": (w_req.addr + 8, 1),
        "qblock": (q_req.addr + 16, 1),
    }
    for name, (addr, index) in cases.items():
        faults = [(addr, addr + 1)]
        result = await run_and_compare(host, program, f"fault in the {name}", faults=faults,
                                       timeout_cycles=HANG_CYCLES)
        assert result.error and result.index == index, name
    for name, byte, value in (("channel count", 7, 0x20), ("double scaling", 6, 0x01)):
        corrupt = replace(program, memory=program.memory.copy())
        corrupt.memory[d1.q_addr + byte] = value
        result = await run_and_compare(host, corrupt, f"bad quantization block ({name})",
                                       timeout_cycles=HANG_CYCLES)
        assert (result.code, result.index) == (ErrorCode.BAD_QBLOCK, 1), name
    await run_and_compare(host, program, "the valid list after the errors")


@cocotb.test()
async def write_error_mid_list(dut):
    """A write error on the store of a command that is not the last ends the list with
    ``AXI_WRITE`` at that command; the next list runs to its end."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = np.random.default_rng(5)
    x, qb, cmd, _ = random_pool(rng, Precision.A8W8, 16, channels=3 * config.depthwise.lanes,
                                size=(4, 3))
    program = avg_pool_program(x, qb, cmd, config, row_splits=(2,))
    stored = [i for i, d in enumerate(program.descriptors) if d.q_flag]
    for index in stored[:-1] if thorough() else stored[:1]:
        desc = program.descriptors[index]
        mask = store_bytes(program, desc)
        byte = int(np.flatnonzero(mask)[0])
        result = await run_and_compare(host, program, f"write error at command {index}",
                                       faults=[(byte, byte + 1)], skip=mask,
                                       timeout_cycles=HANG_CYCLES)
        assert (result.code, result.index) == (ErrorCode.AXI_WRITE, index)
        await run_and_compare(host, program, f"the valid list after the error at {index}",
                              timeout_cycles=HANG_CYCLES)


@cocotb.test()
async def fuzz_lists(dut):
    """Random per-channel descriptor lists over every layout the checks accept, with invalid
    fields, pool chains, error responses anywhere and operands past the image
    (``sim.descriptor_fuzz``); then a valid list still runs. ``TESSERA_FUZZ_LISTS`` lists
    (default 6, Icarus 2)."""
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


#: Real layers of the CI tier (``TESSERA_REAL_LAYERS=all``: every one of the models).
SMALL_LAYERS = {"dscnn": ("09_average_pool_2d",), "vww": ("23_depthwise_conv_2d",),
                "resnet8": ("11_add",)}


@cocotb.test()
async def real_layers(dut):
    """DepthwiseConv2D, AveragePool2D and Add layers of DS-CNN, VWW and ResNet-8 with their
    real weights, compiled for this build (``sw.perchannel_compile``), bit-exact against the
    golden model (itself bit-exact with LiteRT). ``TESSERA_REAL_LAYERS``: ``all``, or
    ``model:layer,...`` (default :data:`SMALL_LAYERS`)."""
    from sw.perchannel_fixtures import model_perchannel_programs

    config, host = await start(dut, cocotb.RANDOM_SEED)
    chosen = os.environ.get("TESSERA_REAL_LAYERS", "")
    if chosen == "all":
        wanted = {"dscnn": None, "vww": None, "resnet8": None}
    elif chosen:
        wanted = {}
        for item in chosen.split(","):
            model, name = item.split(":")
            wanted.setdefault(model, []).append(name)
    else:
        wanted = {k: list(v) for k, v in SMALL_LAYERS.items()}
    for model, names in wanted.items():
        for name, program, _, want in model_perchannel_programs(model, config, names=names):
            memory, _ = program.run_golden()
            np.testing.assert_array_equal(program.output(memory), want, name)
            await run_and_compare(host, program,
                                  f"{model} {name} ({program.count} commands)")

