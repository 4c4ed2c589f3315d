"""``splitdesk scenarios``: the list with captions, and checking a file of one's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitdesk.cli.main import main
from splitdesk.core.files.scenarios import builtin_scenarios


def test_lists_every_scenario_with_its_caption(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    for k, (name, s) in enumerate(builtin_scenarios().items(), start=1):
        assert f"{k}. {name} — {s.title}" in out
        assert f"   {s.caption}\n" in out
    assert "2 questions, dependent, builtin:batching (rtt=0.8)" in out


def test_check_names_the_bad_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "talk.toml"
    path.write_text(
        'version = 1\ntitle = "T"\ncaption = "C"\nquestions = "three-short"\n'
        '[run]\nretry_429 = "many"\n',
        encoding="utf-8",
    )
    assert main(["scenarios", "--check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("splitdesk scenarios: error: talk.toml: ")
    assert "`run.retry_429`" in err[0]
    path.write_text(path.read_text().replace('"many"', "2"), encoding="utf-8")
    assert main(["scenarios", "--check", str(path)]) == 0
    assert "3 questions, one-after-another, builtin:batching" in capsys.readouterr().out
