"""A recording whose parts point at each other wrongly — a plan naming a question the file
does not list, a phase past the run's count — is refused when it is read, with one line
naming the file and the field (``core/files/recording.py`` ``check_references``), never an
``IndexError`` in a view: ``export`` and ``replay`` exit 2 with that line (the window:
tests/ui/replay/test_recording_open_errors.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from paths import ROOT
from splitdesk.cli.main import main
from splitdesk.core.files.recording import RecordingError, load_recording

DEMO = ROOT / "resources" / "demos" / "batching.splitdesk.json"  # 5 questions, 6 requests


def _no_questions(doc: dict[str, Any]) -> None:
    doc["questions"] = []


def _three_questions(doc: dict[str, Any]) -> None:
    doc["questions"] = doc["questions"][:3]  # the plan asks questions 0-4


def _planned_phase(doc: dict[str, Any]) -> None:
    events = doc["runs"][0]["events"]
    next(e for e in events if e["kind"] == "request_planned")["phase"] = 2  # of 1


def _started_phase(doc: dict[str, Any]) -> None:
    events = doc["runs"][0]["events"]
    next(e for e in events if e["kind"] == "phase_started")["phase"] = -1


# (edit, the field the message names, the words it says)
CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("no-questions", _no_questions, "questions", "the file lists 0 question(s) (none), but"),
    ("fewer-questions", _three_questions, "questions", "lists 3 question(s) (0–2), but"),
    ("planned-phase", _planned_phase, "phase", "request_planned event about phase 2, but the"),
    ("started-phase", _started_phase, "phase", "phase_started event about phase -1, but the"),
]


def _edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    doc = json.loads(DEMO.read_text("utf-8"))
    edit(doc)
    path = tmp_path / "edited.splitdesk.json"
    path.write_text(json.dumps(doc), "utf-8")
    return path


@pytest.mark.parametrize(
    ("edit", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_reference_out_of_range_is_refused_naming_the_field(
    tmp_path: Path, edit: Any, field: str, words: str
) -> None:
    path = _edited(tmp_path, edit)
    with pytest.raises(RecordingError) as caught:
        load_recording(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and words in message, message
    assert caught.value.field is not None and caught.value.field.endswith(field)
    assert "\n" not in message and "index out of range" not in message


@pytest.mark.parametrize("output", ["--stage-png", "--gif", "--csv"])
def test_export_says_it_in_one_line_and_exits_2(
    tmp_path: Path, output: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _edited(tmp_path, _no_questions)
    target = tmp_path / f"out.{output.rsplit('-', 1)[-1]}"
    assert main(["export", str(path), output, str(target), "--size", "320x180"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no "wrote …"
    assert err.startswith(f"splitdesk export: error: {path}: questions: the file lists 0")
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not target.exists()


def test_replay_refuses_it_before_any_window_opens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _edited(tmp_path, _three_questions)
    assert main(["replay", str(path), "--quit"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"splitdesk replay: error: {path}: questions: the file lists 3")
    assert len(err.splitlines()) == 1
