"""A hand-edited or damaged recording whose events point at a request or a question the run
does not have is refused when it is opened, with a message naming the file, the event and
what is wrong — never "list index out of range", and never taken from the list's end (a
negative index) to be replayed as something else."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from paths import ROOT
from splitdesk.cli.main import main
from splitdesk.core.files.recording import RecordingError, load_recording

FIXTURE = ROOT / "tests" / "fixtures" / "recordings" / "v1.splitdesk.json"


def _first(kind: str) -> Callable[[list[dict[str, Any]]], int]:
    def find(events: list[dict[str, Any]]) -> int:
        return next(i for i, e in enumerate(events) if e["kind"] == kind)

    return find


# (what is edited, the event to edit, its field, the bad value, the words the message needs)
CASES = [
    ("text", _first("text"), "req", 7, "text event about request 7, which was never planned"),
    ("sent", _first("request_sent"), "req", -1, "request_sent event about request -1"),
    ("ended", _first("request_ended"), "req", 3, "request_ended event about request 3"),
    ("planned", _first("request_planned"), "questions", [0, 5], "about question 5, which"),
    ("section", _first("section_started"), "question", 9, "about question 9, which the run"),
]


@pytest.mark.parametrize(
    ("find", "field", "value", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_an_index_out_of_range_names_the_file_the_event_and_the_index(
    tmp_path: Path, find: Any, field: str, value: Any, words: str
) -> None:
    doc = json.loads(FIXTURE.read_text("utf-8"))
    events = doc["runs"][0]["events"]
    i = find(events)
    events[i][field] = value
    path = tmp_path / "edited.splitdesk.json"
    path.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(RecordingError) as caught:
        load_recording(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: runs[0].events[{i}]: "), message
    assert words in message and "list index" not in message, message


def test_the_export_command_says_it_in_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(FIXTURE.read_text("utf-8"))
    events = doc["runs"][0]["events"]
    i = _first("text")(events)
    events[i]["req"] = 7
    path = tmp_path / "edited.splitdesk.json"
    path.write_text(json.dumps(doc), "utf-8")
    assert main(["export", str(path), "--csv", str(tmp_path / "out.csv")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"splitdesk export: error: {path}: runs[0].events[{i}]: text event about request 7, "
        "which was never planned (requests planned: 0–2)\n"
    )
    assert not (tmp_path / "out.csv").exists()
