"""``splitdesk --questions FILE``: a bad file is a one-line error before any window opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitdesk.cli.main import main


def test_a_missing_question_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--questions", str(tmp_path / "nope.toml")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--questions: nope.toml: cannot read" in err and "Traceback" not in err


def test_a_question_file_with_bad_fields_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\n[[questions]]\ntext = "Why?"\ncolour = "red"\n', "utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["--questions", str(bad)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "bad.toml" in err and "colour" in err and err.count("\n") == 1
