"""The tessera command line and the PE throughput measurement."""

import pytest

from hls_ref import Precision
from sw.cli import main
from sw.pe_bench import run_dot_product


@pytest.mark.parametrize("precision", list(Precision))
def test_dot_product_cycles_scale_with_lanes(precision):
    run = run_dot_product(precision, 96, pes=2, stages=2)
    assert run.correct
    # One packed operand group per cycle, plus the pipeline latency (2 stages + accumulator).
    assert run.cycles == 96 // precision.lanes + 3
    assert run.utilisation == pytest.approx(96 / (run.cycles * precision.lanes))


def test_precisions_command(capsys):
    assert main(["precisions"]) == 0
    out = capsys.readouterr().out
    assert "| a8w4 | 011 | 8x4 | 2 | 13 |" in out


def test_bench_command(capsys):
    assert main(["bench", "--channels", "8", "--pes", "2"]) == 0
    out = capsys.readouterr().out
    assert "| a4w4 | 8 | 2 | 5 | 3.20 | 40.0% | 2.20x | yes |" in out
