"""The cocotb runner's build cache (``sim.runner.run_cocotb``): a second run of a built design
runs no simulator build command and still runs its tests.

The cache skips cocotb's build commands by replacing the runner's private ``_build_command``
(``build()`` also records the settings ``test()`` needs, so it is still called). If a cocotb
release renames that method, the replacement silently stops working and every Verilator run
rebuilds (Icarus checks its own build): this test then fails, because the compiler runs on
the second call.
"""

from pathlib import Path

import pytest
from cocotb_tools import runner as cocotb_runner

from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb

COMPILERS = {"iverilog", "verilator", "verilator_bin", "make"}


def test_the_runner_still_has_the_build_hook(sim):
    built = cocotb_runner.get_runner(sim)
    assert callable(getattr(type(built), "_build_command", None)), (
        "cocotb's runner has no _build_command: sim.runner's build cache needs another hook")


def test_a_cached_build_runs_no_compiler(sim, monkeypatch):
    design = Design("st_multiplier_comb", "hdl.st_multiplier:STMultiplier",
                    {"stages": 0, "user_width": 3})
    case = "undefined_codes_give_zero"
    assert run_cocotb(design, "tests.cocotb.tb_st_multiplier", sim=sim, testcase=case) == 1
    executed = []
    real = cocotb_runner.Runner._execute

    def record(self, cmds, cwd):
        executed.extend(Path(str(cmd[0])).name for cmd in cmds)
        return real(self, cmds, cwd)

    monkeypatch.setattr(cocotb_runner.Runner, "_execute", record)
    assert run_cocotb(design, "tests.cocotb.tb_st_multiplier", sim=sim, testcase=case) == 1
    assert executed, "the second run executed nothing (its tests did not run)"
    assert not COMPILERS & set(executed), f"the cached build ran {executed}"
