"""Generate Verilog from Amaranth components and run cocotb testbenches on Icarus or Verilator.

The pattern every block's RTL tests follow::

    dut = Design(name="st_multiplier", factory="hdl.st_multiplier:STMultiplier",
                 params={"stages": 2})
    run_cocotb(dut, "tests.cocotb.tb_st_multiplier", sim="verilator", seed=1)

Generated Verilog is cached under ``build/verilog`` by a digest of the component, its
parameters, the HDL sources and the Amaranth version; simulator builds are cached under
``build/sim/<simulator>`` by the digest of that Verilog. The testbench rebuilds the component
from the same description (environment variable ``TESSERA_DUT``) to read its layouts.

A failing run raises :class:`CocotbTestError`, whose message gives the seed and the command that
replays it with a waveform::

    make sim SIM=icarus TESTS=tests/test_cocotb_st_multiplier.py SEED=1234 WAVES=1
"""

import fcntl
import hashlib
import importlib
import json
import os
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from dataclasses import dataclass, field

import amaranth
from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hdl.target import Target

from .toolchain import BUILD_ROOT, PROJECT_ROOT, use_tool_env

__all__ = ["SIMULATORS", "CocotbTestError", "Design", "default_seed", "run_cocotb"]

#: The simulators every cocotb test runs on.
SIMULATORS = ("icarus", "verilator")

#: Sources whose contents the generated Verilog depends on.
_HDL_SOURCES = ("hdl", "hls_ref", "sim/runner.py")

#: Simulation models of the vendor primitives a target's build instantiates (see
#: :class:`hdl.target.Target`), compiled with the generated Verilog.
TARGET_MODELS = {"ecp5": ("sim/models/ecp5_mult18x18d.v", "sim/models/ecp5_ff.v",
                          "sim/models/ecp5_dp16kd.v")}


class CocotbTestError(AssertionError):
    """A cocotb run failed; the message says how to replay it."""


@dataclass(frozen=True)
class Design:
    """An Amaranth component to simulate, described so that it can be rebuilt anywhere.

    Parameters
    ----------
    name : str
        Verilog module name of the top level.
    factory : str
        ``"module:callable"`` returning the component, called with ``params``.
    params : dict
        Keyword arguments of ``factory``; JSON-serialisable.
    target : str or None
        FPGA family the component is elaborated for (:class:`hdl.target.Target`), so that the
        netlist a synthesis run gets is the one simulated, with the vendor primitives'
        models of :data:`TARGET_MODELS`; None for the portable description.
    """

    name: str
    factory: str
    params: dict = field(default_factory=dict)
    target: str | None = None

    def __post_init__(self):
        if self.target is not None and self.target not in TARGET_MODELS:
            raise ValueError(f"Unknown target {self.target!r}; known: {', '.join(TARGET_MODELS)}")

    def build(self):
        """Return a new instance of the component."""
        module, _, attr = self.factory.partition(":")
        return getattr(importlib.import_module(module), attr)(**self.params)

    def to_json(self):
        return json.dumps({"name": self.name, "factory": self.factory, "params": self.params,
                           "target": self.target}, sort_keys=True)

    @classmethod
    def from_env(cls):
        """Return the design described by ``TESSERA_DUT`` (set by :func:`run_cocotb`)."""
        spec = json.loads(os.environ["TESSERA_DUT"])
        return cls(spec["name"], spec["factory"], spec["params"], spec.get("target"))

    def models(self):
        """Paths of the primitive models this design is simulated with."""
        return [PROJECT_ROOT / model for model in TARGET_MODELS.get(self.target, ())]

    def digest(self):
        """A digest of everything the generated Verilog (and the models beside it) depends
        on."""
        hasher = hashlib.sha256(self.to_json().encode())
        hasher.update(amaranth.__version__.encode())
        for model in self.models():
            hasher.update(model.read_bytes())
        # the factory's own module too, when it lives outside those trees (test stand-ins)
        factory = PROJECT_ROOT / (self.factory.split(":")[0].replace(".", "/") + ".py")
        for tree in (*_HDL_SOURCES, factory.relative_to(PROJECT_ROOT)):
            root = PROJECT_ROOT / tree
            if not root.exists():
                continue
            for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
                hasher.update(str(path.relative_to(PROJECT_ROOT)).encode())
                hasher.update(path.read_bytes())
        return hasher.hexdigest()[:16]

    def verilog(self):
        """Return the path of this design's Verilog, generating it if not cached."""
        path = BUILD_ROOT / "verilog" / f"{self.name}-{self.digest()}.v"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            platform = None if self.target is None else Target(self.target)
            text = verilog.convert(_Clocked(self.build()), name=self.name, platform=platform,
                                   emit_src=False)
            temporary = path.with_suffix(f".tmp{os.getpid()}")
            temporary.write_text(text)
            temporary.replace(path)
        return path


class _Clocked(wiring.Component):
    """Makes every top level have ``clk`` and ``rst`` ports for the testbench, combinational
    designs included: an extra output ``heartbeat`` toggles in the ``sync`` domain, which
    Amaranth then brings out as ports. The design's own ports keep their names."""

    def __init__(self, inner):
        self._inner = inner
        super().__init__({**dict(inner.signature.members), "heartbeat": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = self._inner
        outer = {path: value for path, _, value in self.signature.flatten(self)}
        for path, member, value in self._inner.signature.flatten(self._inner):
            if member.flow == In:
                m.d.comb += value.eq(outer[path])
            else:
                m.d.comb += outer[path].eq(value)
        m.d.sync += self.heartbeat.eq(~self.heartbeat)
        return m


def default_seed():
    """The seed of this run: ``TESSERA_SEED`` if set, else a fixed one (CI is reproducible)."""
    return int(os.environ.get("TESSERA_SEED", "20261121"))


@contextmanager
def _locked(directory):
    """Hold an exclusive lock on ``directory`` (parallel pytest workers share builds)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build_args(sim):
    if sim == "verilator":
        # Amaranth's Verilog has width-extension warnings by design.
        return ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "-O3"]
    return []


def _failures(results_xml):
    """Return ``(tests, failed names)`` from a cocotb results file."""
    if not results_xml.exists():
        return 0, ["(no results: the simulator did not run the tests)"]
    tests, failed = 0, []
    for case in ET.parse(results_xml).getroot().iter("testcase"):
        tests += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(case.get("name"))
    return tests, failed


def run_cocotb(design, test_module, *, sim, seed=None, waves=None, testcase=None,
               extra_env=None):
    """Build ``design`` for simulator ``sim`` (cached) and run the cocotb module
    ``test_module`` on it.

    Parameters
    ----------
    design : Design
        The component under test.
    test_module : str
        Dotted name of the cocotb testbench module.
    sim : str
        ``"icarus"`` or ``"verilator"``.
    seed : int or None
        Random seed of the testbench; :func:`default_seed` if None.
    waves : bool or None
        Dump a waveform (FST for Icarus, VCD for Verilator) next to the results; from the
        ``WAVES`` environment variable if None.
    testcase : str or None
        Run only the cocotb tests whose names match.

    Returns
    -------
    int
        Number of cocotb tests that ran (all passed).

    Raises
    ------
    CocotbTestError
        If any test failed; the message names the seed and the replay command.
    """
    if sim not in SIMULATORS:
        raise ValueError(f"sim must be one of {', '.join(SIMULATORS)}, not {sim!r}")
    from cocotb_tools.runner import get_runner

    use_tool_env()
    seed = default_seed() if seed is None else seed
    waves = bool(int(os.environ.get("WAVES", "0"))) if waves is None else waves
    source = design.verilog()
    build_dir = BUILD_ROOT / "sim" / sim / f"{source.stem}{'-waves' if waves else ''}"
    runner = get_runner(sim)
    with _locked(build_dir):
        stamp = build_dir / ".built"
        cached = stamp.exists()
        if cached:
            # build() also records the settings that test() needs; skip only its commands
            # (Verilator would regenerate and recompile everything).
            runner._build_command = list
        runner.build(sources=[source, *design.models()], hdl_toplevel=design.name,
                     build_dir=build_dir, timescale=("1ns", "1ps"),
                     build_args=_build_args(sim), waves=waves,
                     log_file=build_dir / ("build-cached.log" if cached else "build.log"))
        stamp.touch()
    test_dir = build_dir / f"run-{os.getpid()}"
    results = test_dir / "results.xml"
    env = {
        "TESSERA_DUT": design.to_json(),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                     os.environ.get("PYTHONPATH")])),
        **(extra_env or {}),
    }
    try:
        runner.test(test_module=test_module, hdl_toplevel=design.name, build_dir=build_dir,
                    test_dir=test_dir, results_xml=str(results), seed=seed, waves=waves,
                    testcase=testcase, extra_env=env, timescale=("1ns", "1ps"),
                    log_file=test_dir / "sim.log")
    except SystemExit:
        pass  # the results file says what failed
    tests, failed = _failures(results)
    if failed or not tests:
        node = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
        selection = f'"{node}"' if node else f'"-k {design.name}"'
        raise CocotbTestError(
            f"{len(failed)} of {tests} cocotb tests failed on {sim} with seed {seed}: "
            f"{', '.join(failed)}\n  log: {test_dir / 'sim.log'}\n"
            f"  replay with a waveform: make sim SIM={sim} SEED={seed} WAVES=1 "
            f"TESTS={selection}")
    return tests
