"""``tessera board``: run models on a board (or the simulated board) over its UART, and load
bitstreams.

``tessera board run MODEL --port /dev/ttyUSB0``  compile MODEL for the board's build, load it
    and a seeded random input over the UART, run it, read the output and every layer's
    counters, and check them against the golden model.
``tessera board run MODEL --sim [soc|board|icebreaker]``  the same against a simulated board
    (the SoC, the ULX3S build's top level with LiteDRAM and its SDRAM model, or the iCEBreaker
    build's top level with its SPRAM, on Verilator with its UART on a pseudo-terminal).
``tessera board run MODEL --board icebreaker --port /dev/ttyUSB1``  an iCEBreaker: the board
    monitor is sent to its boot ROM over the UART first.
``tessera board program``  load the bitstream of ``make bitstream`` with openFPGALoader.
"""

import sys

import numpy as np

__all__ = ["add_parser"]


def _soc(args):
    from hls_ref.config import SOC_BUILDS

    if args.sim == "icebreaker" or (not args.sim and args.board == "icebreaker"):
        from boards.icebreaker import icebreaker_soc_config

        from .board import SIM_UART_DIVISOR

        if args.soc != "cpu":
            raise ValueError("the iCEBreaker build has no accelerator (none fits beside the "
                             "processor): give --soc cpu")
        return icebreaker_soc_config(uart_divisor=SIM_UART_DIVISOR if args.sim else None)
    if args.sim == "soc":
        return SOC_BUILDS[args.soc]
    from boards.ulx3s import CLOCK_HZ, board_soc_config

    clock_hz = args.clock_mhz * 1_000_000 if args.clock_mhz else CLOCK_HZ
    return board_soc_config(clock_hz) if args.soc == "default" else board_soc_config(
        clock_hz, accelerators=())


def _summary(image, run, golden, clock_hz):
    lines = ["| # | layer | op | engine | cycles | DRAM read B | DRAM written B |",
             "|---:|---|---|---|---:|---:|---:|"]
    for i, (layer, rec) in enumerate(zip(image.layers, run.records)):
        engine = (image.soc.label(layer.accelerator) if layer.accelerator is not None
                  else "cpu")
        lines.append(f"| {i} | {layer.name} | {layer.op.name.lower()} | {engine} | "
                     f"{rec.cycles:,} | {rec.bus_read:,} | {rec.bus_written:,} |")
    mismatches = int(np.sum(run.output != golden.output))
    lines.append("")
    lines.append(f"{image.model}: {run.cycles:,} cycles ({run.cycles / clock_hz * 1e3:.3f} ms "
                 f"at {clock_hz / 1e6:g} MHz); output mismatches against the golden model: "
                 f"{mismatches}")
    return "\n".join(lines), mismatches


def cmd_board_run(args):
    from .board import BoardError, BoardLink, boot_board, run_board, simulated_board
    from .run import _load_input
    from .soc_image import compile_model
    from .soc_run import RunError, run_golden
    from .tflite_import import load_model

    if bool(args.port) == bool(args.sim):
        print("tessera board run: give either --port PORT (a board) or --sim (the simulated "
              "board)", file=sys.stderr)
        return 2

    def log(text):
        print(f"[board] {text}", file=sys.stderr, flush=True)

    try:
        soc = _soc(args)
        icebreaker = soc.boot == "uart"
        # the iCEBreaker's 64 KB of external memory holds a model only with its buffers shared
        image = compile_model(args.model, soc, reuse_buffers=icebreaker)
        if icebreaker:
            from boards.icebreaker import check_image_fits

            check_image_fits(image)
        graph = load_model(image.model)
        x, _ = _load_input(graph, args.input, args.seed)
        golden = run_golden(image, x, graph=graph)
        if args.sim:
            with simulated_board(soc, level=args.sim, log=log) as port, BoardLink(
                    port, timeout=args.timeout, run_timeout=args.run_timeout) as board:
                run = run_board(board, image, x, log=log)
                board.exit(0)
        else:
            with BoardLink(args.port, baudrate=args.baud, timeout=args.timeout,
                           run_timeout=args.run_timeout) as board:
                if icebreaker:
                    # the bitstream's boot ROM waits for the monitor
                    boot_board(board, soc, log=log)
                run = run_board(board, image, x, log=log)
    except (BoardError, RunError) as error:
        print(f"tessera board run: {error}", file=sys.stderr)
        return 3
    except (ValueError, OSError) as error:
        print(f"tessera board run: error: {error}", file=sys.stderr)
        return 2
    text, mismatches = _summary(image, run, golden, soc.clock_hz)
    print(text)
    if args.output:
        np.save(args.output, run.output)
    return 1 if mismatches else 0


def cmd_board_program(args):
    from boards.bitstream import build_bitstream, format_result, program

    result = build_bitstream(args.board,
                             clock_hz=args.clock_mhz and args.clock_mhz * 1_000_000)
    print(format_result(result))
    try:
        program(result)
    except RuntimeError as error:
        print(f"tessera board program: {error}", file=sys.stderr)
        return 1
    return 0


def add_parser(commands):
    """Add ``tessera board`` to the ``tessera`` sub-command parser ``commands``."""
    board = commands.add_parser("board", help="run models on a board (or the simulated one) "
                                "over its UART; load bitstreams")
    actions = board.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="load a model and an input over the UART, run, check")
    run.add_argument("model", help="built-in name (resnet8, dscnn, vww, autoencoder) or a "
                                   ".tflite file")
    run.add_argument("--port", help="the board's serial port (e.g. /dev/ttyUSB0)")
    run.add_argument("--sim", nargs="?", const="soc", choices=["soc", "board", "icebreaker"],
                     help="a simulated board, its UART on a pseudo-terminal: soc (default), "
                          "the SoC with the SoC simulation's memory model; board, the ULX3S "
                          "build's top level with LiteDRAM's controller and its model of the "
                          "SDRAM (boots from on-chip RAM, initialises the SDRAM); icebreaker, "
                          "the iCEBreaker build's top level (SPRAM; the monitor sent over the "
                          "UART; --soc cpu)")
    run.add_argument("--board", default="ulx3s-85f", choices=["ulx3s-85f", "icebreaker"],
                     help="with --port: the board's build (icebreaker: the monitor is sent "
                          "to its boot ROM first; --soc cpu)")
    run.add_argument("--soc", default="default", choices=["default", "cpu"],
                     help="the SoC build the board runs (default: with the accelerators)")
    run.add_argument("--clock-mhz", type=int, default=None,
                     help="the board build's system clock (make bitstream CLOCK_MHZ; "
                          "default: the build's own default)")
    run.add_argument("--baud", type=int, default=115200, help="the UART's baud rate")
    run.add_argument("--timeout", type=float, default=None,
                     help="seconds to wait for an answer (default 2; 600 with --sim)")
    run.add_argument("--run-timeout", type=float, default=None,
                     help="seconds to wait for a whole run (default 60; 3600 with --sim)")
    run.add_argument("--input", metavar="X.npy", help="the model's input (default: seeded "
                                                      "random)")
    run.add_argument("--seed", type=int, default=0, help="seed of the random input")
    run.add_argument("--output", metavar="Y.npy", help="save the output tensor")
    run.set_defaults(run=_with_timeouts(cmd_board_run))
    program = actions.add_parser("program", help="load the bitstream with openFPGALoader")
    program.add_argument("--board", default="ulx3s-85f", choices=["ulx3s-85f", "icebreaker"])
    program.add_argument("--clock-mhz", type=int, default=None,
                         help="the build's clock (ulx3s-85f: 50 by default; icebreaker: 12)")
    program.set_defaults(run=cmd_board_program)


def _with_timeouts(command):
    def run(args):
        # the simulated board runs some hundred thousand cycles a second
        if args.timeout is None:
            args.timeout = 600.0 if args.sim else 2.0
        if args.run_timeout is None:
            args.run_timeout = 3600.0 if args.sim else 60.0
        return command(args)

    return run
