"""cocotb testbench of the accelerator (``hdl.accelerator``, conv2d datapath) against the socket
golden model (``hls_ref.socket``): cocotbext-axi ``AxiRam`` as external memory and
``AxiLiteMaster`` for the registers, with random pauses on every channel.

Each run loads a whole memory image (descriptor list, operands, an output region with guard
bytes, everything else a random pattern), starts the list through the registers, waits for the
interrupt and compares the status word, the counters and the *whole* memory image with the
golden model's, so a write anywhere outside a tile's output region fails the test.
"""

import os
import random
from dataclasses import replace

import cocotb
import numpy as np

from hls_ref import Precision
from hls_ref.descriptor import DESCRIPTOR_BYTES, ErrorCode, check
from hls_ref.socket import SocketModel, store_request
from sim.accelerator_host import AcceleratorHost
from sim.descriptor_fuzz import random_list
from sim.runner import Design
from sw.fixtures import model_conv_programs, random_conv, random_splits
from sw.program import ProgramError, conv2d_program

MEMORY_BYTES = 1 << 20


async def start(dut, seed):
    component = Design.from_env().build()
    host = AcceleratorHost(dut, component.config, memory_bytes=MEMORY_BYTES)
    await host.reset()
    host.pause(0.3 if seed % 2 else 0.1, seed)
    return component.config, host


def compare(result, memory, status, what, *, upper=None):
    """Check the RTL's run against the golden model's (``memory``, ``status``).

    After a write error the pipeline may already have fetched, loaded and computed commands
    after the failing one (``docs/accelerator.md``): with ``upper`` (the golden status of the
    list when no store fails) ``MAC_CYCLES`` and ``BYTES_READ`` must lie between the golden
    model's count and ``upper``'s."""
    got = (result.done, result.error, result.code, result.index, result.progress,
           result.tiles, result.mac_cycles, result.bytes_read, result.bytes_written)
    want = (status.done, status.error, int(status.code),
            status.index if status.error else 0, status.progress, status.tiles,
            status.mac_cycles, status.bytes_read, status.bytes_written)
    if upper is not None:
        for name, n in (("MAC cycles", 6), ("bytes read", 7)):
            low, high = want[n], (upper.mac_cycles, upper.bytes_read)[n - 6]
            assert low <= got[n] <= high, (f"{what}: {name} {got[n]} outside "
                                           f"[{low}, {high}]")
        got, want = got[:6] + got[8:], want[:6] + want[8:]
    assert got == want, (f"{what}: (done, error, code, index, progress, tiles, MAC cycles, "
                         f"bytes read, bytes written) = {got}, golden model {want}")
    diff = np.flatnonzero(result.memory != memory)
    assert diff.size == 0, (f"{what}: {diff.size} bytes differ from the golden image, first "
                            f"at {diff[0]:#x}: {result.memory[diff[0]]:#04x} instead of "
                            f"{memory[diff[0]]:#04x}")


async def run_and_compare(host, program, what, *, faults=(), skip=None,
                          timeout_cycles=1_000_000):
    memory, status = program.run_golden(faults=faults)
    upper = None
    if status.code == ErrorCode.AXI_WRITE:
        memory_bound = program.memory.copy()
        upper = SocketModel(program.config).run(memory_bound, program.desc_addr,
                                                program.count, faults=faults,
                                                write_errors=False)
    result = await host.run(program.memory, program.desc_addr, program.count, faults=faults,
                            timeout_cycles=timeout_cycles)
    if skip is not None:                 # bytes an AXI write error may leave either way
        result.memory[skip] = memory[skip]
    compare(result, memory, status, what, upper=upper)
    return result


def store_bytes(program, desc):
    """A mask of the bytes the store of ``desc`` writes (an AXI write error may leave them
    partly written)."""
    mask = np.zeros(len(program.memory), bool)
    for beat, lo, hi, _, _ in store_request(desc).beats():
        mask[8 * beat + lo:8 * beat + hi] = True
    return mask


def random_program(rng, config):
    """A random layer in a random ST configuration and output width, randomly tiled."""
    while True:
        precision = Precision(rng.choice([p.value for p in config.precisions]))
        out_bits = int(rng.choice([4, 8, 16]))
        x, weights, qb, cmd, _ = random_conv(rng, precision, out_bits)
        cout = weights.shape[0]
        h = (x.shape[0] + cmd.padding[0] + cmd.padding[1] - cmd.kernel[0]) // cmd.stride[0] + 1
        splits = dict(
            out_splits=random_splits(rng, cout, 2 if out_bits == 4 else 1),
            row_splits=random_splits(rng, h),
            in_splits=random_splits(rng, x.shape[2], precision.lanes),
            relu=bool(rng.integers(2)), seed=int(rng.integers(1 << 30)))
        try:
            program = conv2d_program(x, weights, qb, cmd, config, **splits)
        except ProgramError:
            continue
        if all(check(d, config, (0, 0)) in (ErrorCode.NONE, ErrorCode.ACC_STATE)
               for d in program.descriptors) and len(program.memory) <= MEMORY_BYTES:
            return f"{precision.label} {out_bits}-bit {x.shape}->{weights.shape}", program


@cocotb.test()
async def random_layers(dut):
    """Random layers and tilings in every ST configuration and output width, back to back."""
    seed = cocotb.RANDOM_SEED
    config, host = await start(dut, seed)
    rng = np.random.default_rng(seed)
    for n in range(int(cocotb.plusargs.get("layers", 6))):
        name, program = random_program(rng, config)
        await run_and_compare(host, program, f"layer {n} ({name}, {program.count} commands)")


def _small_program(config):
    rng = np.random.default_rng(11)
    x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, 8, cin=4, cout=config.pes // 2,
                                         kernel=(3, 3), size=(8, 8), stride=(1, 1),
                                         pad=(1, 1, 1, 1))
    return conv2d_program(x, weights, qb, cmd, config, row_splits=(4,))


def invalid_changes(config, desc):
    """One field change per error code that ``check`` finds before touching memory."""
    lanes = Precision(desc.precision).lanes
    taps = desc.kernel_h * desc.kernel_w * config.pes
    return {
        ErrorCode.BAD_OP: dict(op=0),
        ErrorCode.BAD_PRECISION: dict(precision=7),
        ErrorCode.BAD_OUT_WIDTH: dict(out_width=3),
        ErrorCode.ZERO_DIM: dict(out_seg=0),
        ErrorCode.BAD_KERNEL: dict(kernel_w=config.max_kernel[1] + 1),
        ErrorCode.BAD_STRIDE: dict(stride_h=config.max_stride + 1),
        ErrorCode.BAD_PADDING: dict(pad_left=3),
        ErrorCode.TOO_MANY_CHANNELS: dict(out_c=config.pes + 1),
        ErrorCode.ROW_TOO_WIDE: dict(in_w=config.max_width + 1),
        ErrorCode.TILE_TOO_SMALL: dict(in_h=1, pad_top=0, pad_bottom=0),
        ErrorCode.INPUT_TOO_LARGE: dict(in_h=config.plm_in_words, in_w=2),
        ErrorCode.WEIGHTS_TOO_LARGE: dict(in_c=lanes * (config.plm_w_words // taps + 1)),
        ErrorCode.OUTPUT_TOO_LARGE: dict(in_w=config.max_width, pad_top=1, pad_bottom=1,
                                         in_h=config.plm_acc_words // config.pes
                                         // config.max_width + 2),
        ErrorCode.BAD_LAYOUT: dict(in_addr=desc.in_addr + 1),
        ErrorCode.ACC_STATE: dict(acc_flag=1, in_h=desc.in_h - 1),
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
        assert check(bad, config, acc_shape=None) == code, (code, change)
        broken = replace(program, memory=program.memory.copy())
        addr = program.desc_addr + DESCRIPTOR_BYTES
        broken.memory[addr:addr + DESCRIPTOR_BYTES] = np.frombuffer(bad.to_bytes(), np.uint8)
        result = await run_and_compare(host, broken, code.name)
        assert (result.error, result.code, result.index) == (True, code, 1)
    await run_and_compare(host, program, "the valid list after the errors")


@cocotb.test()
async def bus_errors(dut):
    """Error responses on the descriptor fetch, each load and the store are reported with the
    failing descriptor's index; a corrupt quantization block too."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    program = _small_program(config)
    d1 = program.descriptors[1]
    # (faulty byte, index of the descriptor that fails): both commands share the weights
    # and the quantization block, the last input row and the output rows are the second's
    cases = {
        "descriptor": (program.desc_addr + DESCRIPTOR_BYTES + 9, 1),
        "input": (d1.in_addr + (d1.in_h - 1) * d1.in_row_stride + 3, 1),
        "weights": (d1.w_addr + 8, 0),
        "qblock": (d1.q_addr + 16, 0),
        "output": (d1.out_addr, 1),
    }
    for name, (addr, index) in cases.items():
        faults = [(addr, addr + 1)]
        skip = store_bytes(program, d1) if name == "output" else None
        result = await run_and_compare(host, program, f"fault in the {name}", faults=faults,
                                       skip=skip)
        assert result.error and result.index == index, name
    corrupt = replace(program, memory=program.memory.copy())
    corrupt.memory[d1.q_addr + 7] ^= 1                 # the block's channel count
    result = await run_and_compare(host, corrupt, "corrupt quantization block")
    assert (result.code, result.index) == (ErrorCode.BAD_QBLOCK, 0)
    await run_and_compare(host, program, "the valid list after the errors")


@cocotb.test()
async def back_to_back_lists(dut):
    """Lists of random lengths run one after another; an accumulation chain may span two
    lists (the partial sums stay between them), and a zero-length list completes at once."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = random.Random(cocotb.RANDOM_SEED)
    _, program = random_program(np.random.default_rng(rng.randrange(1 << 30)), config)
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


#: Layers of ``real_layers`` in the CI tier: the first conv of each model (a 3-channel RGB
#: input, DS-CNN's one-channel 10x4 input, VWW's stride-2 input layer), on the network input
#: as it is and unfolded (``sw.unfold``), as the model image runs it.
FIRST_LAYERS = {model: ("00_conv_2d", "00_conv_2d unfolded")
                for model in ("resnet8", "dscnn", "vww")}


@cocotb.test()
async def real_layers(dut):
    """Conv layers of ResNet-8, DS-CNN and VWW with their real weights, tiled by the compiler
    for this build, bit-exact against the golden model (itself bit-exact with LiteRT).

    ``TESSERA_REAL_LAYERS=all`` runs every conv layer, else the first of each model (on
    its input as it is and unfolded, as the model image runs it). Icarus runs each list's
    first ``TESSERA_REAL_PREFIX`` commands (default 2; it simulates about a hundred times
    slower than Verilator)."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    everything = os.environ.get("TESSERA_REAL_LAYERS") == "all"
    prefix = int(os.environ.get("TESSERA_REAL_PREFIX", "2"))
    for model, names in FIRST_LAYERS.items():
        for name, program, _, want in model_conv_programs(model, config, plain_first=True):
            if not everything and name not in names:
                continue
            if cocotb.SIM_NAME.lower().startswith("icarus"):
                program = replace(program, descriptors=program.descriptors[:prefix])
            else:
                memory, _ = program.run_golden()
                np.testing.assert_array_equal(program.output(memory), want, name)
            await run_and_compare(host, program, f"{model} {name} ({program.count} commands)")


#: Cycles after which a run that has not ended counts as a hang (the lists below take a few
#: thousand).
HANG_CYCLES = 100_000


def thorough():
    """Run every case of the tests below: on Verilator, or with ``TESSERA_THOROUGH=1``
    (``make test-full``); Icarus, about a hundred times slower, runs a sample in CI."""
    return (not cocotb.SIM_NAME.lower().startswith("icarus")
            or os.environ.get("TESSERA_THOROUGH") == "1")


@cocotb.test()
async def write_error_mid_list(dut):
    """A write error response on the store of any command but the last ends the list with
    ``AXI_WRITE`` at that command; commands computed after it are dropped, and the next
    list runs to its end (it used to wait for an accumulator bank that a dropped command
    kept busy)."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = np.random.default_rng(5)
    # short computes and long stores: the store queue fills behind the failing store
    x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, 16, cin=2, cout=config.pes,
                                         kernel=(1, 1), size=(6, 12), stride=(1, 1),
                                         pad=(0, 0, 0, 0))
    fast = conv2d_program(x, weights, qb, cmd, config, row_splits=range(1, 6))
    # partial sums between commands: five output-row tiles of two input-channel tiles
    x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, 8, cin=6, cout=config.pes,
                                         kernel=(3, 3), size=(10, 6), stride=(1, 1),
                                         pad=(1, 1, 1, 1))
    chained = conv2d_program(x, weights, qb, cmd, config, row_splits=(2, 4, 6, 8),
                             in_splits=(4,))
    for name, program in (("one-command tiles", fast), ("two-command tiles", chained)):
        stored = [i for i, d in enumerate(program.descriptors) if d.q_flag]
        for index in stored[:-1] if thorough() else stored[:1]:
            desc = program.descriptors[index]
            result = await run_and_compare(
                host, program, f"{name}: write error at command {index}",
                faults=[(desc.out_addr, desc.out_addr + 1)], skip=store_bytes(program, desc),
                timeout_cycles=HANG_CYCLES)
            assert (result.code, result.index) == (ErrorCode.AXI_WRITE, index)
            await run_and_compare(host, program,
                                  f"{name}: the valid list after the error at {index}",
                                  timeout_cycles=HANG_CYCLES)


@cocotb.test()
async def odd_output_address(dut):
    """Outputs at every byte offset of a beat: 4- and 8-bit outputs are stored there,
    16-bit outputs at an odd address are refused with ``BAD_LAYOUT`` (they used to be
    stored with a byte dropped, or to hang), in row and pixel segments."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = np.random.default_rng(6)
    for out_bits in (4, 8, 16):
        for out_c in (config.pes // 2, config.pes):    # pixel segments, then row segments
            x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, out_bits, cin=4,
                                                 cout=out_c, kernel=(1, 1), size=(3, 5),
                                                 stride=(1, 1), pad=(0, 0, 0, 0))
            base = conv2d_program(x, weights, qb, cmd, config, row_splits=(1,),
                                  out_splits=(config.pes // 4,) if out_bits > 4 else ())
            for offset in range(1, 8) if thorough() else (out_c % 7 + 1,):
                program = base.with_descriptors(
                    [replace(d, out_addr=d.out_addr + offset) for d in base.descriptors])
                what = f"{out_bits}-bit outputs, {out_c} channels, out_addr + {offset}"
                result = await run_and_compare(host, program, what,
                                               timeout_cycles=HANG_CYCLES)
                refused = out_bits == 16 and offset % 2
                assert (result.code == ErrorCode.BAD_LAYOUT) == refused, what


@cocotb.test()
async def output_width_clamp(dut):
    """The clamp of the quantization block is narrowed to the output width: a block whose
    clamp is wider than the output keeps the results in range (a 4-bit output used to keep
    the low bits: 17 -> 1); a narrower clamp still applies."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    rng = np.random.default_rng(7)
    for out_bits in (4, 8, 16):
        for act_min, act_max in ((-32768, 32767), (-3, 5), (-200, 9)):
            x, weights, qb, cmd, _ = random_conv(rng, Precision.A8W8, out_bits, cin=8,
                                                 cout=config.pes, kernel=(1, 1),
                                                 size=(2, 4), stride=(1, 1),
                                                 pad=(0, 0, 0, 0))
            # large scales, so that the results cover and exceed every width
            qb = replace(qb, act_min=act_min, act_max=act_max,
                         shift=np.full(config.pes, 6))
            for relu in (False, True):
                program = conv2d_program(x, weights, qb, cmd, config, relu=relu)
                memory, _ = program.run_golden()
                values = program.output(memory)
                assert values.min() >= -(1 << (out_bits - 1)), values.min()
                await run_and_compare(host, program,
                                      f"{out_bits}-bit outputs, clamp [{act_min}, "
                                      f"{act_max}], relu {relu}",
                                      timeout_cycles=HANG_CYCLES)


@cocotb.test()
async def descriptor_list_alignment(dut):
    """A ``DESC_ADDR`` that is not 64-byte aligned is refused with ``BAD_DESC_ADDR`` before
    anything is fetched, like the golden model does (it used to be fetched unaligned)."""
    config, host = await start(dut, cocotb.RANDOM_SEED)
    program = _small_program(config)
    for offset in (8, 32):
        moved = replace(program, desc_addr=program.desc_addr + offset)
        result = await run_and_compare(host, moved, f"DESC_ADDR + {offset}",
                                       timeout_cycles=HANG_CYCLES)
        assert (result.code, result.index, result.bytes_read) == \
            (ErrorCode.BAD_DESC_ADDR, 0, 0)
    await run_and_compare(host, program, "the valid list after the errors")


@cocotb.test()
async def fuzz_lists(dut):
    """Random descriptor lists over every layout the checks accept, with invalid fields,
    partial-sum chains, error responses anywhere and tiles past the image or wrapping around
    the address space, against the golden model (``sim.descriptor_fuzz``); then the list of a
    real layer still runs. ``TESSERA_FUZZ_LISTS`` lists (default 6, Icarus 2)."""
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
            result.memory[store_bytes(case, case.descriptors[status.index])] = \
                memory[store_bytes(case, case.descriptors[status.index])]
        compare(result, memory, status, f"list {n} ({case.describe()})", upper=upper)
    await run_and_compare(host, _small_program(config), "a valid list after the fuzzing")
