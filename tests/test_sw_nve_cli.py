"""``tessera nve compile`` and ``tessera nve report`` on the cheap layers of face detection,
and the docs/results.md section they write."""

import json
from dataclasses import replace

import pytest

import sim.results
import sw.nve.cli
from hls_ref.nve.asm import assemble
from sw.cli import main
from sw.nve.cli import results_section
from sw.nve.network import compile_network, simulate_network


def test_compile_writes_programs_and_a_summary(capsys, tmp_path):
    assert main(["nve", "compile", "face-detection", "--layers", "L1", "L4",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "face-detection L1 p0: 1 group(s), 4 maps, 372 instructions (standard), II 148 " \
           "(VMAC), 15.57 MAC/instr in the loop" in out
    assert "| face-detection L4 | 1x1 / 1x1 (half vector) | 1 (1) | 18 | MEMA | 6.22 |" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    (net,) = summary["networks"]
    assert [layer["layer"] for layer in net["layers"]] == ["L1", "L4"]
    l1 = net["layers"][0]
    assert l1["fusion"]["kept"] == "greedy"
    assert l1["groups"][0]["maps"] == [0, 1, 2, 3]
    assert l1["cycles"] == sum(g["bands"] * g["cycles_per_band"] for g in l1["groups"])
    for layer in net["layers"]:
        for group in layer["groups"]:
            text = (tmp_path / f"{group['program']}.asm").read_text()
            words = (tmp_path / f"{group['program']}.bin").read_bytes()
            program = assemble(text)
            assert program.size == group["instructions"] == len(words) // 8
            assert list(program.words) == [int.from_bytes(words[8 * k:8 * k + 8], "little")
                                           for k in range(program.size)]
            assert program.settings.iterations == group["loop"][2]


def test_report_simulates_bands(capsys):
    assert main(["nve", "report", "face-detection", "--layers", "L4", "--simulate-bands",
                 "2"]) == 0
    out = capsys.readouterr().out
    assert ("| face-detection L4 | 1 | 2 | 12 | 11,264 | yes | 52,416 | yes | yes | 123,904 |"
            in out)
    assert "weights" not in out  # totals need all four layers


def test_report_without_fusion(capsys):
    assert main(["nve", "report", "face-detection", "--layers", "L1", "--no-fusion"]) == 0
    out = capsys.readouterr().out
    assert "| face-detection L1 | 6x6 / 2x2 | 4 (1) | 37 | VMAC | 15.57 |" in out
    assert "| 5.40 | 5.40 | 0% |" in out
    assert "| face-detection L1 | - | - | - | none |" in out  # no greedy without fusion


def test_errors(capsys):
    assert main(["nve", "report", "face-detection", "--layers", "L9"]) == 2
    assert "face-detection has no layer L9" in capsys.readouterr().err
    assert main(["nve", "report", "speed-sign", "--write-results"]) == 2
    assert "--write-results needs NETWORK all" in capsys.readouterr().err
    # the section reports simulated bands: writing it needs some
    assert main(["nve", "report", "all", "--write-results"]) == 2
    assert "--simulate-bands 1 or more" in capsys.readouterr().err
    assert main(["nve", "report", "all", "--simulate-bands", "-1"]) == 2


def test_results_section():
    net = compile_network("face-detection", layers=["L1", "L4"], check=False)
    sims = {net.name: simulate_network(net, bands=1)}
    text = results_section([net], sims, 1, 12.0)
    assert "Regenerate with `tessera nve report all --simulate-bands 1 --write-results`" in text
    assert "| face-detection L1 | 6x6 / 2x2 | 1 (4) | 148 | VMAC | 15.57 | 15.13 | 13.39 | " \
           "13.71 | 5.40 | 2.03 | 62% | 1.81 |" in text
    assert "### Simulated row bands" in text


@pytest.mark.parametrize("exact", [True, False])
def test_results_are_written_only_when_every_band_matches(monkeypatch, capsys, exact):
    # face-detection L4 stands in for both networks; one band's outputs may differ
    net = compile_network("face-detection", layers=["L4"], check=False)
    runs = simulate_network(net, bands=1)
    runs["L4"] = (replace(runs["L4"][0], exact=exact),)
    written = []
    monkeypatch.setattr(sw.nve.cli, "compile_network", lambda name, **_: net)
    monkeypatch.setattr(sw.nve.cli, "simulate_network", lambda *_, **__: runs)
    monkeypatch.setattr(sim.results, "write_results_section",
                        lambda name, body: written.append(name))
    status = main(["nve", "report", "all", "--simulate-bands", "1", "--write-results"])
    assert (status, written) == ((0, ["nve"]) if exact else (1, []))
    assert ("MISMATCH" in capsys.readouterr().out) != exact
