"""The board link (``hls_ref.board_link``, ``sw.board``, ``firmware/board.c``): its frames,
the host's errors on ports and boards that misbehave, and models run over the simulated
board's UART (the SoC on Verilator, its UART on a pseudo-terminal) checked against the golden
model and LiteRT."""

import dataclasses
import struct

import numpy as np
import pytest

from hls_ref import board_link as link
from hls_ref.config import DEFAULT_SOC
from hls_ref.image import LayerOp
from sw.board import BoardError, BoardLink, board_firmware, run_board, simulated_board
from sw.litert import ReferenceRuntime
from sw.run import _load_input
from sw.soc_image import compile_model
from sw.soc_run import run_golden
from sw.tflite_import import load_model


def test_frames_carry_their_check():
    frame = link.request(link.Command.WRITE, 0x1234, b"\x01\x02\x03")
    assert frame[0] == link.REQUEST_SYNC
    command, address, length = struct.unpack("<BII", frame[1:10])
    assert (command, address, length) == (link.Command.WRITE, 0x1234, 3)
    assert struct.unpack("<I", frame[-4:])[0] == link.link_check(frame[1:-4])
    # Fletcher's sums see the order of the bytes, not only their sum
    assert link.link_check(b"\x01\x02") != link.link_check(b"\x02\x01")
    assert link.link_check(b"") == 0
    with pytest.raises(ValueError, match="uart_divisor"):
        link.c_header(uart_divisor=0)


class FakePort:
    """A serial port whose board answers with ``replies`` (bytes, in order) and records what
    the host wrote."""

    name = "fake"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.pending = b""
        self.written = b""

    def write(self, data):
        self.written += data
        if self.replies:
            self.pending += self.replies.pop(0)

    def read(self, count):
        data, self.pending = self.pending[:count], self.pending[count:]
        return data

    def close(self):
        pass


def _hello_payload(**fields):
    values = dict(magic=link.LINK_MAGIC, version=link.LINK_VERSION, dram_bytes=1 << 24,
                  ram_bytes=1 << 16, accelerators=1, datapaths=2, max_payload=1024,
                  clock_hz=50_000_000)
    values.update(fields)
    return link.HELLO_STRUCT.pack(*(values[name] for name in link.HELLO_FIELDS))


def test_host_reports_boards_that_misbehave():
    # the banner before the answer is kept as the board's messages
    port = FakePort(b"tessera board monitor\n" + link.response(link.LinkStatus.OK,
                                                               _hello_payload()))
    board = BoardLink(port, timeout=0.05)
    assert board.hello().accelerators == 1
    assert board.messages.startswith("tessera board monitor")
    with pytest.raises(BoardError, match=r"does not answer.*HELLO"):
        BoardLink(FakePort(), timeout=0.05).hello()
    corrupted = bytearray(link.response(link.LinkStatus.OK, _hello_payload()))
    corrupted[8] ^= 1
    with pytest.raises(BoardError, match=r"corrupted response.*3 attempts.*baud rate"):
        BoardLink(FakePort(*[bytes(corrupted)] * 3), timeout=0.05, quiet=0.01).hello()
    # a damaged exchange is repeated: a refused frame, then the same frame accepted
    port = FakePort(link.response(link.LinkStatus.BAD_CHECK), link.response(0))
    board = BoardLink(port, timeout=0.05, quiet=0.01)
    board.write(0x100, b"abc")
    assert board.repeats == 1
    assert port.written == 2 * link.request(link.Command.WRITE, 0x100, b"abc")
    # a run is never repeated
    with pytest.raises(BoardError, match="refused a RUN request: TIMEOUT"):
        BoardLink(FakePort(link.response(link.LinkStatus.TIMEOUT)), timeout=0.05).run()
    with pytest.raises(BoardError, match="not as a board monitor"):
        BoardLink(FakePort(link.response(0, _hello_payload(version=99))), timeout=0.05).hello()
    with pytest.raises(BoardError, match="refused a WRITE request: BAD_RANGE"):
        BoardLink(FakePort(link.response(link.LinkStatus.BAD_RANGE)),
                  timeout=0.05).write(0, b"x")
    with pytest.raises(BoardError, match="no serial port /dev/tessera-no-such-port"):
        BoardLink("/dev/tessera-no-such-port")


def test_an_image_larger_than_the_boards_memory_is_refused_before_loading():
    graph = _small_model()
    image = compile_model(graph, DEFAULT_SOC)
    x, _ = _load_input(graph, None, 5)
    port = FakePort(link.response(0, _hello_payload(dram_bytes=1 << 20,
                                                    datapaths=DEFAULT_SOC.datapaths())))
    with pytest.raises(BoardError, match=r"needs [0-9,]+ bytes of external memory; the board "
                                         r"has 1,048,576"):
        run_board(BoardLink(port, timeout=0.05), image, x)
    port = FakePort(link.response(0, _hello_payload(accelerators=0, datapaths=0)))
    with pytest.raises(BoardError, match="compiled for 1"):
        run_board(BoardLink(port, timeout=0.05), image, x)


def test_board_firmware_builds_for_the_simulated_board():
    binary = board_firmware(DEFAULT_SOC, uart_divisor=16)
    assert 0 < binary.stat().st_size < DEFAULT_SOC.ram_bytes


def _small_model():
    """DS-CNN's first layer (a convolution on the accelerator): a model that costs seconds
    over the simulated UART."""
    graph = load_model("dscnn")
    return dataclasses.replace(graph, ops=graph.ops[:1], outputs=(graph.ops[0].output,))


@pytest.mark.cocotb
def test_simulated_board_serves_the_link_and_runs_a_model():
    graph = _small_model()
    image = compile_model(graph, DEFAULT_SOC)
    x, _ = _load_input(graph, None, 5)
    golden = run_golden(image, x, graph=graph)
    with simulated_board(DEFAULT_SOC) as port, BoardLink(port, timeout=120,
                                                          run_timeout=600) as board:
        hello = board.hello()
        assert (hello.accelerators, hello.datapaths, hello.dram_bytes, hello.clock_hz) == (
            1, DEFAULT_SOC.datapaths(), DEFAULT_SOC.dram_bytes, DEFAULT_SOC.clock_hz)
        # memory round trip across a frame boundary, at the memory's end
        data = np.random.default_rng(1).integers(0, 256, 1500, dtype=np.uint8).tobytes()
        end = DEFAULT_SOC.dram_bytes - len(data)
        board.write(end, data)
        assert board.read(end, len(data)) == data
        with pytest.raises(BoardError, match="BAD_RANGE"):
            board.write(DEFAULT_SOC.dram_bytes - 2, b"abc")
        # a corrupted request is refused and changes nothing; the link goes on
        frame = bytearray(link.request(link.Command.WRITE, end, b"\xff" * 4))
        frame[-1] ^= 0x40
        board._serial.write(bytes(frame))
        with pytest.raises(BoardError, match="BAD_CHECK"):
            board._receive(link.Command.WRITE)
        assert board.read(end, 4) == data[:4]
        run = run_board(board, image, x)
        board.exit(0)
    assert np.array_equal(run.output, golden.output)
    assert run.records[0].tiles == image.layers[0].desc_count
    assert run.records[0].bus_read == golden.records[0].bus_read
    assert run.cycles > 0


@pytest.mark.slow
@pytest.mark.cocotb
@pytest.mark.parametrize("level", ["soc", "board"])
def test_dscnn_over_the_simulated_board_is_bit_exact_with_litert(level):
    """All of DS-CNN through the host tool: on the SoC simulation's memory model, and on the
    board-level simulation (the bitstream's top level: the monitor booting from on-chip RAM,
    the SDRAM initialised through LiteDRAM's controller and its model of the chip)."""
    from boards.ulx3s import board_soc_config

    soc = DEFAULT_SOC if level == "soc" else board_soc_config()
    image = compile_model("dscnn", soc, reuse_buffers=False)
    graph = load_model("dscnn")
    x, _ = _load_input(graph, None, 7)
    reference = ReferenceRuntime("dscnn")
    reference.run(x)
    with simulated_board(soc, level=level) as port, BoardLink(port, timeout=600,
                                                               run_timeout=3600) as board:
        assert board.hello().dram_bytes == soc.dram_bytes
        run = run_board(board, image, x)
        board.exit(0)
    for name, tensor in run.tensors.items():
        assert np.array_equal(tensor, reference.tensor(name)), name
    # every layer takes cycles but the reshape, a view of its input
    for layer, record in zip(image.layers, run.records, strict=True):
        assert (record.cycles == 0) == (layer.op is LayerOp.RESHAPE), layer.name
