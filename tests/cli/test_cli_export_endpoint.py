"""``splitdesk export RECORDING --json``: the document's ``endpoint`` is the one ``splitdesk
bench --json`` wrote for the same run (a bench recording stores the URL already as
``builtin:<profile> (…)``; the export wrapped it a second time), and a window recording's
bare URL gets the same form once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paths import ROOT
from splitdesk.cli.main import main


def test_the_exported_endpoint_is_the_one_bench_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench_json, record = tmp_path / "bench.json", tmp_path / "r.splitdesk.json.gz"
    code = main(
        ["bench", "--mode", "parallel", "-q", "One?", "-q", "Two?", "--max-tokens", "8",
         "--sim-param", "speed=8", "--json", str(bench_json), "--record", str(record)]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    exported = tmp_path / "export.json"
    assert main(["export", str(record), "--json", str(exported)]) == 0
    written = json.loads(bench_json.read_text("utf-8"))["endpoint"]
    assert written["url"].startswith("builtin:batching (http://127.0.0.1:")
    assert json.loads(exported.read_text("utf-8"))["endpoint"] == written


def test_a_window_recording_gets_the_builtin_form_once(tmp_path: Path) -> None:
    demo = ROOT / "resources" / "demos" / "batching.splitdesk.json"
    url = json.loads(demo.read_text("utf-8"))["endpoint"]["url"]  # the bare base URL
    exported = tmp_path / "export.json"
    assert main(["export", str(demo), "--json", str(exported)]) == 0
    endpoint = json.loads(exported.read_text("utf-8"))["endpoint"]
    assert endpoint["url"] == f"builtin:batching ({url})"
    assert endpoint["profile"] == "batching"
