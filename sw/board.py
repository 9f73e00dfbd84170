"""The host side of the board link (``hls_ref.board_link``): talk to the board monitor
(``firmware/board.c``) through a serial port, load a model image and its input, run it and
read back the output and every layer's counters.

The same code drives a real board (``/dev/ttyUSB0``: the ULX3S's FTDI UART) and the simulated
one (:func:`simulated_board`: the SoC on Verilator with its UART on a pseudo-terminal), so
everything but the cable is tested without a board.
"""

import contextlib
import struct
import time

from hls_ref import board_link as link
from hls_ref import image as fmt

from .soc_image import input_bytes
from .soc_run import ModelRun, RunError, _accelerator_error, _decode, _layer_tensors

__all__ = [
    "SIM_UART_DIVISOR",
    "BoardError",
    "BoardLink",
    "Hello",
    "board_firmware",
    "boot_board",
    "boot_over_uart",
    "run_board",
    "simulated_board",
]

#: The UART divisor of the simulated board (clock cycles per bit): a real board's 434 (50 MHz,
#: 115200 baud) would spend most simulated cycles on the serial line.
SIM_UART_DIVISOR = 10


class BoardError(RuntimeError):
    """The board, its port or the link failed; the message says which and what to check."""


class _GarbledError(BoardError):
    """A request the board did not get whole, or an answer that arrived damaged: repeating an
    idempotent request is safe."""


class Hello:
    """What ``HELLO`` reports: ``link.HELLO_FIELDS`` as attributes."""

    def __init__(self, words):
        for name, value in zip(link.HELLO_FIELDS, words):
            setattr(self, name, value)

    def __repr__(self):
        return (f"Hello(accelerators={self.accelerators}, datapaths={self.datapaths:#x}, "
                f"dram_bytes={self.dram_bytes}, clock_hz={self.clock_hz})")


def _open_port(port, baudrate, timeout):
    import serial

    try:
        return serial.Serial(port, baudrate=baudrate, timeout=timeout)
    except serial.SerialException as error:
        text = str(error)
        if "No such file" in text or ("could not open port" in text and "[Errno 2]" in text):
            raise BoardError(f"no serial port {port}: is the board plugged in? (on Linux the "
                             f"ULX3S's FTDI UART is usually /dev/ttyUSB0)") from None
        if "Permission denied" in text or "[Errno 13]" in text:
            raise BoardError(f"no permission to open {port}: add your user to the group "
                             f"owning it (e.g. dialout) and log in again") from None
        raise BoardError(f"cannot open {port}: {text}") from None


class BoardLink:
    """A connection to the board monitor.

    Parameters
    ----------
    port : str or serial.Serial-like
        The serial port's path, or an open port (anything with ``read``/``write``/``close``).
    baudrate : int
        The UART's rate (the board build's: 115200); a pseudo-terminal ignores it.
    timeout : float
        Seconds to wait for a response byte before the board is declared silent.
    run_timeout : float
        Seconds ``run`` waits for a whole model run.
    quiet : float
        Seconds without a byte after which a damaged exchange is over (the monitor abandons a
        request after ``IDLE_BYTE_TIMES`` byte times), before ``HELLO``, ``WRITE`` and ``READ``
        are repeated (at most ``attempts`` times in all).
    """

    def __init__(self, port, *, baudrate=115200, timeout=2.0, run_timeout=60.0, quiet=0.1,
                 attempts=3):
        self._serial = _open_port(port, baudrate, timeout) if isinstance(port, str) else port
        self.port = port if isinstance(port, str) else getattr(port, "name", "port")
        self.timeout = timeout
        self.run_timeout = run_timeout
        self.quiet = quiet
        self.attempts = attempts
        #: Requests repeated after a damaged exchange.
        self.repeats = 0
        #: Text the board printed between frames (banner, refused images, accelerator errors).
        self.messages = ""

    def close(self):
        self._serial.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self, count, deadline):
        data = b""
        while len(data) < count:
            chunk = self._serial.read(count - len(data))
            data += chunk
            if not chunk and time.monotonic() > deadline:
                break
        return data

    def _request(self, command, address=0, payload=b"", length=None, timeout=None,
                 repeat=False):
        frame = link.request(command, address, payload, length)
        attempts = self.attempts if repeat else 1
        for attempt in range(1, attempts + 1):
            self._serial.write(frame)
            try:
                return self._receive(command, timeout)
            except _GarbledError as error:
                if attempt == attempts:
                    raise BoardError(f"{error} ({attempts} attempts): check the cable and the "
                                     f"baud rate") from None
                self.repeats += 1
                self._drain()

    def _drain(self):
        """Discard what arrives until the line has been quiet for ``quiet`` seconds."""
        while True:
            deadline = time.monotonic() + self.quiet
            got = b""
            while not got and time.monotonic() < deadline:
                got = self._serial.read(1)
            if not got:
                return

    def _receive(self, command, timeout=None):
        """The payload of the next response (to a ``command`` request)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        # anything before the response's sync byte is text the firmware printed
        while True:
            byte = self._read(1, deadline)
            if not byte:
                raise BoardError(
                    f"the board on {self.port} does not answer ({command.name} request, "
                    f"{timeout or self.timeout:.0f} s): is the bitstream loaded and the "
                    f"monitor running? (its banner starts 'tessera board monitor')"
                    + (f"; it printed: {self.messages.strip()!r}" if self.messages else ""))
            if byte[0] == link.RESPONSE_SYNC:
                break
            self.messages += byte.decode("latin-1")
        head = self._read(5, deadline)
        if len(head) < 5:
            raise _GarbledError(f"the board on {self.port} stopped mid-response ({command.name})")
        status, length = struct.unpack("<BI", head)
        if length > link.MAX_PAYLOAD:
            raise _GarbledError(f"the board on {self.port} sent a corrupted response "
                           f"({command.name}: length {length})")
        rest = self._read(length + 4, deadline)
        if len(rest) < length + 4:
            raise _GarbledError(f"the board on {self.port} stopped mid-response ({command.name})")
        payload, check = rest[:length], struct.unpack("<I", rest[length:])[0]
        if check != link.link_check(head + payload) or status not in set(link.LinkStatus):
            raise _GarbledError(f"a corrupted response from the board on {self.port} "
                           f"({command.name})")
        status = link.LinkStatus(status)
        if status in (link.LinkStatus.BAD_CHECK, link.LinkStatus.TIMEOUT):
            raise _GarbledError(f"the board refused a {command.name} request: {status.name}")
        if status != link.LinkStatus.OK:
            raise BoardError(f"the board refused a {command.name} request: {status.name}")
        return payload

    def hello(self):
        """Identify the board (:class:`Hello`); raises :class:`BoardError` if what answers is
        not a board monitor of this protocol version."""
        # (a frame a previous host left unfinished is answered TIMEOUT first, possibly with
        # this one's bytes in it: repeated)
        payload = self._request(link.Command.HELLO, repeat=True)
        if len(payload) != link.HELLO_STRUCT.size:
            raise BoardError(f"unexpected HELLO answer from {self.port} ({len(payload)} bytes)")
        hello = Hello(link.HELLO_STRUCT.unpack(payload))
        if hello.magic != link.LINK_MAGIC or hello.version != link.LINK_VERSION:
            raise BoardError(f"{self.port} answers, but not as a board monitor of link version "
                             f"{link.LINK_VERSION} (magic {hello.magic:#x}, version "
                             f"{hello.version}): rebuild and load the bitstream")
        return hello

    def write(self, address, data):
        """Write ``data`` to external memory at bus address ``address``."""
        data = bytes(data)
        for offset in range(0, len(data), link.MAX_PAYLOAD):
            self._request(link.Command.WRITE, address + offset,
                          data[offset:offset + link.MAX_PAYLOAD], repeat=True)

    def read(self, address, length):
        """Read ``length`` bytes of external memory at bus address ``address``."""
        out = bytearray()
        for offset in range(0, length, link.MAX_PAYLOAD):
            n = min(link.MAX_PAYLOAD, length - offset)
            out += self._request(link.Command.READ, address + offset, length=n, repeat=True)
        return bytes(out)

    def run(self):
        """Run the image in external memory (its run block written first); returns the
        firmware's ``RunStatus``."""
        payload = self._request(link.Command.RUN, timeout=self.run_timeout)
        return fmt.RunStatus(struct.unpack("<I", payload)[0])

    def exit(self, code=0):
        """End the simulated board's run with ``code`` (a real board answers and goes on)."""
        self._request(link.Command.EXIT, code)


def board_firmware(soc, *, uart_divisor=None, extra_headers=None, log=None):
    """The board monitor's binary for SoC build ``soc`` (``uart_divisor``: the divisor it sets,
    the build's own by default; ``extra_headers``: the memory controller's generated headers
    on a board)."""
    from .firmware import build_firmware

    headers = {"board_link.h": link.c_header(uart_divisor=uart_divisor or soc.uart_divisor),
               **(extra_headers or {})}
    return build_firmware(soc, "board", extra_headers=headers, log=log)


def boot_over_uart(port, soc, *, uart_divisor=None, log=None):
    """Send the board monitor for ``soc`` (a build whose boot ROM loads the firmware from the
    UART, ``SocConfig.boot == "uart"``: the iCEBreaker's) through ``port`` (a serial port:
    anything with ``write``): the boot block (``BOOT_MAGIC``, the length in words, the
    words). The monitor then starts and prints its banner."""
    from sim.soc_sim import boot_block

    if soc.boot != "uart":
        raise ValueError("this build's boot ROM does not load its firmware from the UART")
    block = boot_block(board_firmware(soc, uart_divisor=uart_divisor, log=log).read_bytes())
    if log:
        log(f"sending the board monitor ({len(block):,} bytes) to the boot ROM")
    port.write(block)


def boot_board(link_, soc, *, log=None, seconds=30):
    """Boot the board behind ``link_`` (a :class:`BoardLink` to a board whose boot ROM waits
    for its firmware on the UART): send the monitor and wait for its banner."""
    boot_over_uart(link_._serial, soc, log=log)
    banner = _wait_for_banner(link_._serial, seconds=seconds)
    if log:
        log(banner.decode("latin-1").strip())


def _wait_for_banner(port, session=None, seconds=600):
    """The board monitor's banner line from ``port`` (a :class:`BoardError` if it does not
    come)."""
    banner = b""
    deadline = time.monotonic() + seconds
    while not banner.endswith(b"\n") and time.monotonic() < deadline:
        banner += port.read(1)
        if session is not None and session.process.poll() is not None:
            break
    if not banner.startswith(b"tessera board monitor"):
        raise BoardError(f"the board did not start its monitor: {banner!r} (is the bitstream "
                         f"loaded and waiting for it?)")
    return banner


@contextlib.contextmanager
def simulated_board(soc, *, level="soc", log=None, max_cycles=10**10):
    """A simulated board running the board monitor on Verilator, its UART on a
    pseudo-terminal: yields the terminal's path (a serial port for :class:`BoardLink`).

    ``level="soc"``: the SoC of ``soc`` with the SoC simulation's memory model; the firmware
    boots from the boot block as the SoC simulation loads it. ``level="board"``: the ULX3S
    build's top level (``boards.board_sim``; ``soc`` must be ``board_soc_config(...)``'s): the
    monitor in on-chip RAM, the SDRAM initialised through LiteDRAM's controller and its model
    of the chip. ``level="icebreaker"``: the iCEBreaker build's top level
    (``boards.icebreaker.IcebreakerSoc``, ``soc`` must be ``icebreaker_soc_config(uart_divisor=
    SIM_UART_DIVISOR)``): SPRAM models for the RAM and the external memory, the monitor sent
    to the boot ROM over the UART first (:func:`boot_over_uart`)."""
    import serial

    from sim.soc_sim import boot_block, build_simulator, start_soc

    uart_boot = False
    if level == "icebreaker":
        from boards.icebreaker import icebreaker_sim_design, icebreaker_soc_config

        if soc != icebreaker_soc_config(uart_divisor=SIM_UART_DIVISOR):
            raise ValueError("the iCEBreaker simulation runs its build: give "
                             "boards.icebreaker.icebreaker_soc_config(uart_divisor="
                             "SIM_UART_DIVISOR)")
        binary = build_simulator(soc, design=icebreaker_sim_design(soc), board=True, log=log)
        loads = []
        uart_boot = True
    elif level == "board":
        from boards.board_sim import build_board_simulator

        binary, config = build_board_simulator(soc.accelerators, clock_hz=soc.clock_hz,
                                               accel_clock_hz=soc.accel_clock_hz,
                                               uart_divisor=SIM_UART_DIVISOR, log=log)
        if config != soc:
            raise ValueError("the board-level simulation runs the board's build: give "
                             "boards.ulx3s.board_soc_config(...)")
        loads = []
    elif level == "soc":
        firmware = board_firmware(soc, uart_divisor=SIM_UART_DIVISOR, log=log)
        binary = build_simulator(soc, log=log)
        loads = [(0, boot_block(firmware.read_bytes()))]
    else:
        raise ValueError(f"level must be soc, board or icebreaker, not {level!r}")
    with start_soc(binary, loads, soc=soc, divisor=SIM_UART_DIVISOR, max_cycles=max_cycles,
                   pty=True) as session:
        # a board is up long before its user speaks; the simulated one boots now: wait for
        # the monitor's banner line
        with serial.Serial(session.pty, timeout=1) as port:
            if uart_boot:
                boot_over_uart(port, soc, uart_divisor=SIM_UART_DIVISOR, log=log)
            banner = _wait_for_banner(port, session)
        if log:
            log(f"simulated board on {session.pty}: {banner.decode().strip()}")
        yield session.pty


def run_board(link_, image, x, *, verify=True, log=None):
    """Run ``image`` on input ``x`` on the board behind ``link_`` (a :class:`BoardLink`):
    load the image, the input and a run block, run, read the results, the output and (when
    the image keeps its buffers) every layer's output. Returns a :class:`sw.soc_run.ModelRun`
    (backend ``board``) with the per-layer cycles and counters the firmware recorded."""
    from .soc_run import VERIFY_CHECKSUM, layer_records

    hello = link_.hello()
    mask = image.header["datapaths"]
    if hello.accelerators != len(image.soc.accelerators) or hello.datapaths != mask:
        raise BoardError(f"the board has {hello.accelerators} accelerator(s) (datapaths "
                         f"{hello.datapaths:#x}); the image was compiled for "
                         f"{len(image.soc.accelerators)} ({mask:#x}): compile it for the "
                         f"board's build or load the matching bitstream")
    end = image.header["results"] + image.results_bytes
    if end > hello.dram_bytes:
        raise BoardError(f"the image needs {end:,} bytes of external memory; the board has "
                         f"{hello.dram_bytes:,}")
    start = time.monotonic()
    inp = image.tensors[image.input]
    if log:
        log(f"loading {len(image.data):,} bytes of image and {inp.layout.bytes:,} of input "
            f"over {link_.port}")
    link_.write(fmt.IMAGE_BASE, image.data)
    link_.write(inp.addr, input_bytes(image, x))
    link_.write(fmt.RUN_BLOCK, fmt.RUN_BLOCK_STRUCT.pack(
        magic=fmt.RUN_MAGIC, uart_divisor=0, flags=VERIFY_CHECKSUM if verify else 0))
    if log:
        log("running")
    status = link_.run()
    record, results = image.layer_results(
        link_.read(image.header["results"], image.results_bytes))
    run = ModelRun("board", None, {}, layer_records(image, results), cycles=record["cycles"],
                   check_cycles=record["check_cycles"] if verify else None,
                   uart=link_.messages)
    if status != fmt.RunStatus.OK:
        if status == fmt.RunStatus.ACCEL_ERROR:
            layer = image.layers[record["layer"]]
            raise RunError(_accelerator_error(layer, record["code"], record["index"]), run)
        raise RunError(f"the firmware stopped: {status.name}; it printed: "
                       f"{link_.messages.strip()!r}", run)

    def read(info):
        return _decode(link_.read(info.addr, info.layout.bytes), info)

    run.output = read(image.tensors[image.output])
    run.tensors = _layer_tensors(image, read)
    run.seconds = time.monotonic() - start
    return run
