"""The tessera command line and the PE throughput measurement."""

import numpy as np
import pytest

from hls_ref import Precision
from sw.cli import main
from sw.pe_bench import run_dot_product


@pytest.mark.parametrize("precision", list(Precision))
def test_dot_product_cycles_scale_with_lanes(precision):
    run = run_dot_product(precision, 96, pes=2, stages=2)
    assert run.correct
    # One packed operand group per cycle, plus the pipeline latency (the row's input stage,
    # 2 multiplier stages and the accumulator).
    assert run.cycles == 96 // precision.lanes + 4
    assert run.utilisation == pytest.approx(96 / (run.cycles * precision.lanes))


def test_precisions_command(capsys):
    assert main(["precisions"]) == 0
    out = capsys.readouterr().out
    assert "| a8w4 | 011 | 8x4 | 2 | 13 |" in out


def test_bench_command(capsys):
    assert main(["bench", "--channels", "8", "--pes", "2", "--conv2d", "--no-fc",
                 "--no-perchannel"]) == 0  # no RTL
    out = capsys.readouterr().out
    # the one-, two- and four-block rows (4 multiplier stages)
    assert "| dsp1 | a4w4 | 8 | 2 | 2 | 8 | 2.00 | 1.00 | 25.0% | 1.75x | yes |" in out
    assert "| dsp2 | a4w4 | 8 | 2 | 4 | 8 | 2.00 | 0.50 | 25.0% | 1.75x | yes |" in out
    assert "| dsp4 | a4w4 | 8 | 2 | 8 | 8 | 2.00 | 0.25 | 25.0% | 1.75x | yes |" in out


def test_run_command_prints_layers_and_matches_litert(capsys, tmp_path):
    y_path = tmp_path / "y.npy"
    dump = tmp_path / "layers"
    assert main(["run", "resnet8", "--seed", "3", "--compare-litert", "--output", str(y_path),
                 "--dump-layers", str(dump)]) == 0
    out = capsys.readouterr().out
    assert "| 14 | 14_fully_connected | int8 1x10 | 640 |" in out
    assert "total: 12,501,632 MACs" in out
    assert "LiteRT reference kernels: 0 mismatching elements" in out
    y = np.load(y_path)
    assert y.dtype == np.int8 and y.shape == (1, 10)
    assert len(list(dump.glob("*.npy"))) == 17


def test_run_command_reads_an_input_file(capsys, tmp_path):
    from sw.litert import ReferenceRuntime

    x = np.random.default_rng(5).integers(-128, 128, (1, 49, 10, 1)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", "dscnn", "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "y.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "y.npy"), ReferenceRuntime("dscnn").run(x))


def test_run_command_rejects_a_wrong_input_shape(capsys, tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((1, 32, 32, 3), np.int8))
    assert main(["run", "dscnn", "--input", str(tmp_path / "x.npy")]) == 2
    err = capsys.readouterr().err
    assert "the model's input is int8 of shape (1, 49, 10, 1), the file holds int8 of shape " \
           "(1, 32, 32, 3)" in err
