"""Bad input is one plain line that names what the user typed: the path they gave (not a
temporary file beside it), the option as documented (``--stage-png``), what a file holds in
JSON's words (``null``, not ``NoneType``), why a file cannot be read without ``[Errno 21]``;
``scenarios --only`` filters the list or refuses an empty name; ``bench --record`` says
where it wrote on stderr, leaving stdout to the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paths import ROOT
from splitdesk.cli.main import main

DEMO = ROOT / "resources" / "demos" / "batching.splitdesk.json"


def _one_line(capsys: pytest.CaptureFixture[str], prefix: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), err
    assert "Errno" not in err and "Traceback" not in err and ".part" not in err, err
    assert "NoneType" not in err and "dict" not in err, err
    return lines[0]


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's /proc")
def test_a_folder_that_takes_no_new_file_is_refused_up_front_naming_the_users_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["export", str(DEMO), "--csv", "/proc/a.csv"]) == 2
    line = _one_line(capsys, "splitdesk export: error: --csv /proc/a.csv: ")
    assert line.endswith("folder /proc does not accept new files")
    assert main(["bench", "--record", "/proc/r.splitdesk.json"]) == 2  # before anything runs
    _one_line(capsys, "splitdesk bench: error: --record /proc/r.splitdesk.json: folder /proc")


def test_the_stage_picture_option_is_named_as_documented(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "x.png"
    for flag in ("--stage-png", "--window-png"):  # the older spelling still works
        assert main(["export", str(DEMO), flag, str(missing)]) == 2
        _one_line(capsys, f"splitdesk export: error: --stage-png {missing}: folder")
    same = str(tmp_path / "t.png")
    assert main(["export", str(DEMO), "--png", same, "--window-png", same]) == 2
    assert "--png names the same file" in _one_line(capsys, "splitdesk export: error: --stage-png")


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda doc: None, "the file holds null, not a recording object"),
        (lambda doc: [doc], "the file holds a list, not a recording object"),
        (
            lambda doc: {**doc, "questions": None},
            "questions: Input should be a valid list, got null",
        ),
        (lambda doc: {**doc, "title": True}, "title: Input should be a valid string, got true"),
    ],
    ids=["null", "list", "null-field", "true-field"],
)
def test_what_a_file_holds_is_said_in_jsons_words(
    edit: object, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.splitdesk.json"
    path.write_text(json.dumps(edit(json.loads(DEMO.read_text("utf-8")))), "utf-8")  # type: ignore[operator]
    assert main(["export", str(path), "--csv", str(tmp_path / "a.csv")]) == 2
    assert _one_line(capsys, f"splitdesk export: error: {path}: ").endswith(words)


def test_an_event_that_is_null_says_null(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(DEMO.read_text("utf-8"))
    doc["runs"][0]["events"][3] = None
    path = tmp_path / "r.splitdesk.json"
    path.write_text(json.dumps(doc), "utf-8")
    assert main(["export", str(path), "--csv", str(tmp_path / "a.csv")]) == 2
    assert "an event must be a JSON object, not null" in _one_line(capsys, "splitdesk export")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--talk", "/nonexistent", "--export", "{tmp}/c"],
            "--talk /nonexistent: no such file or folder",
        ),
        (["--talk", "/nonexistent"], "--talk /nonexistent: no such file or folder"),
        (["--check", "{tmp}"], "{tmp}: cannot read: is a folder; give a scenario (.toml) file"),
        (["--check", "{tmp}/none.toml"], "{tmp}/none.toml: cannot read: no such file or folder"),
        (["--only", ""], "--only '': give one or more scenario names"),
        (
            ["--only", "batching,,rate-limit", "--export", "{tmp}/c"],
            "--only 'batching,,rate-limit': give",
        ),
        (["--only", "nope"], "--only nope: unknown (known: batching, single-slot"),
    ],
)
def test_scenarios_errors_are_one_plain_line(
    args: list[str], line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scenarios", *[a.replace("{tmp}", str(tmp_path)) for a in args]]) == 2
    said = _one_line(capsys, "splitdesk scenarios: error: ")
    assert said.startswith(f"splitdesk scenarios: error: {line.replace('{tmp}', str(tmp_path))}")
    assert not (tmp_path / "c").exists()  # refused before the folder is made or a scene runs


def test_scenarios_only_filters_the_list_keeping_the_talks_numbers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["scenarios", "--only", "single-slot,batching"]) == 0
    listed = [ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith(" ")]
    assert listed == ["1. batching — Batching server", "2. single-slot — Single-slot server"]
    assert main(["scenarios", "--only", "rate-limit"]) == 0
    assert capsys.readouterr().out.startswith("3. rate-limit — ")


def test_a_question_file_that_is_a_folder_is_one_plain_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--questions", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Errno" not in err and len(err.strip().splitlines()) == 1, err


def test_bench_record_says_where_it_wrote_on_stderr_and_keeps_stdout_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "r.splitdesk.json.gz"
    code = main(
        ["bench", "--mode", "parallel", "-q", "One?", "-q", "Two?", "--max-tokens", "8",
         "--sim-param", "speed=8", "--json", "-", "--record", str(record)]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["runs"][0]["mode"] == "parallel"  # stdout: the JSON alone
    assert f"recorded to {record}" in err.splitlines() and record.exists()
