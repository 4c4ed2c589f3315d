"""``splitdesk export``: figures and trace written headless without loading Qt; bad files,
missing folders and no output asked give one clear line and exit status 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from paths import ROOT
from splitdesk.cli.main import main

DEMO = ROOT / "resources" / "demos" / "batching.splitdesk.json"


def test_text_exports_need_no_qt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qt_before = "PySide6.QtWidgets" in sys.modules
    code = main(
        ["export", str(DEMO), "--csv", str(tmp_path / "f.csv"),
         "--json", str(tmp_path / "f.json"), "--trace", str(tmp_path / "t.json")]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert f"csv: wrote {tmp_path / 'f.csv'}" in out
    assert len((tmp_path / "f.csv").read_text().splitlines()) == 7  # header + 6 requests
    assert json.loads((tmp_path / "f.json").read_text())["summary"]["speedup"] > 1
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert ("PySide6.QtWidgets" in sys.modules) == qt_before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["export", str(DEMO)], "nothing to export"),
        (["export", "missing.splitdesk.json", "--csv", "x.csv"], "missing.splitdesk.json"),
        (["export", str(DEMO), "--csv", "/no/such/folder/x.csv"], "does not exist"),
        (["export", str(DEMO), "--run", "2", "--csv", "{tmp}/x.csv"], "holds 1 run"),
        (["export", str(DEMO), "--gif", "{tmp}/x.gif", "--fps", "55"], "50 frames"),
        (["export", str(DEMO), "--mp4", "{tmp}/x.mp4", "--size", "641x480"], "even"),
        (["export", str(DEMO), "--webp", "{tmp}/x.webp", "--fps", "70"], "60 frames"),
        (["export", str(DEMO), "--json", "-", "--csv", "{tmp}/x.csv"], "one output given alone"),
        (["export", str(DEMO), "--png", "-"], "takes only --csv, --json or --trace"),
    ],
)
def test_bad_input_is_one_clear_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([a.replace("{tmp}", str(tmp_path)) for a in args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("splitdesk export: error:") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["--json", "--csv", "--trace"])
def test_a_dash_writes_to_standard_output(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--json -`` puts the document on standard output, as ``splitdesk bench --json -``
    does (a file named ``-`` had been written in the current folder, one there replaced)."""
    monkeypatch.chdir(tmp_path)
    code = main(["export", str(DEMO), kind, "-"])
    out, err = capsys.readouterr()
    assert code == 0
    assert list(tmp_path.iterdir()) == []  # no file named "-"
    assert err.strip() == f"{kind[2:]}: wrote standard output"
    if kind == "--csv":
        assert len(out.splitlines()) == 7  # header + 6 requests
    else:
        doc = json.loads(out)
        assert doc["summary"]["speedup"] > 1 if kind == "--json" else doc["traceEvents"]
