"""docs/accelerator.md's generated tables (errors, descriptor, registers) match the code."""

from hls_ref import accelerator_doc


def test_docs_are_current():
    assert accelerator_doc.main([]) == 0


def test_docs_check_detects_a_stale_table(tmp_path, monkeypatch, capsys):
    text = accelerator_doc.DOC_PATH.read_text()
    start = text.index("<!-- BEGIN registers -->")
    line_end = text.index("\n", text.index("\n|---", start) + 1)
    stale = text[:line_end + 1] + "| 0xFFF | STALE | - | row |\n" + text[line_end + 1:]
    path = tmp_path / "accelerator.md"
    path.write_text(stale)
    monkeypatch.setattr(accelerator_doc, "DOC_PATH", path)
    assert accelerator_doc.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert accelerator_doc.main(["--write"]) == 0
    assert path.read_text() == text
