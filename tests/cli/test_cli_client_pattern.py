"""The client's own pattern (issue 12): ``--cold`` and ``--release`` change how bench sends,
and the JSON, the table and the recording say which pattern was used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splitdesk.cli.main import main
from splitdesk.core.files.recording import load_recording

FAST = ["--mode", "parallel", "--sim-param", "speed=8", "--max-tokens", "30"]


def test_default_is_warm_connections_released_from_one_barrier(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", *FAST, "--json", "-"]) == 0
    out, table = capsys.readouterr()
    doc = json.loads(out)
    assert doc["client"] == {"connections": "warm", "release": "barrier"}
    requests = doc["runs"][0]["requests"]
    assert all(r["connect_s"] is None for r in requests)  # opened before the timed phase
    assert "client: warm connections, released together from one barrier" in table


def test_cold_as_scheduled_opens_connections_inside_the_phase_and_is_recorded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rec = tmp_path / "cold.splitdesk.json"
    args = ["bench", *FAST, "--cold", "--release", "as-scheduled", "--record", str(rec)]
    assert main([*args, "--json", "-"]) == 0
    out, table = capsys.readouterr()
    doc = json.loads(out)
    assert doc["client"] == {"connections": "cold", "release": "as-scheduled"}
    requests = doc["runs"][0]["requests"]
    # every request paid its own connection setup inside its measured time
    assert all(r["connect_s"] is not None and r["connect_s"] > 0 for r in requests)
    assert "cold connections (opened inside the timed phase)" in table
    assert "like a plain script" in table
    settings = load_recording(rec).settings
    assert settings.cold_connections is True and settings.release == "as-scheduled"


def test_an_unknown_release_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--release", "whenever"])
    assert exc.value.code == 2
    assert "--release" in capsys.readouterr().err
