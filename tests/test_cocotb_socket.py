"""cocotb regression of the socket's dispatch between several datapaths on Icarus and
Verilator, with stand-in datapaths (``tests/cocotb/tb_socket_dispatch.py``)."""

import pytest

from sim.runner import Design, run_cocotb

pytestmark = pytest.mark.cocotb


def test_socket_dispatch(sim):
    design = Design("socket_two_stubs", "tests.stub_datapath:stub_accelerator", {})
    assert run_cocotb(design, "tests.cocotb.tb_socket_dispatch", sim=sim) == 1
