"""Every way the window opens a recording says a file it cannot read the same way (one
helper, ui/recordings.py ``_read_all``): the status bar and one non-modal message name the
file and what is wrong, and nothing else changes — File → Open, and comparing two files
where the second is damaged (its events name a request that was never planned)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paths import RECORDINGS
from splitdesk.core.files.settings import AppSettings

FIXTURE = RECORDINGS / "v1.splitdesk.json"


@pytest.mark.asyncio
async def test_opening_and_comparing_say_which_file_is_damaged_and_why(
    make_window: Any, tmp_path: Path
) -> None:
    doc = json.loads(FIXTURE.read_text("utf-8"))
    events = doc["runs"][0]["events"]
    i = next(k for k, e in enumerate(events) if e["kind"] == "text")
    events[i]["req"] = 9
    damaged = tmp_path / "damaged.splitdesk.json"
    damaged.write_text(json.dumps(doc), "utf-8")
    why = (
        f"{damaged}: runs[0].events[{i}]: text event about request 9, which was never "
        "planned (requests planned: 0–2)"
    )
    window = make_window(AppSettings())
    ui = window.recordings
    messages: list[str] = []
    ui.openFailed.connect(messages.append)

    await ui.compare_paths(FIXTURE, damaged)
    assert window.statusBar().currentMessage() == why
    assert messages == [why] and len(ui._notices) == 1 and not ui._notices[0].isModal()
    assert ui.compare_windows == []  # nothing half-compared

    await ui.open_path(damaged)
    assert window.statusBar().currentMessage() == why and messages == [why, why]
    assert ui.replay.player is None  # nothing replayed


@pytest.mark.asyncio
async def test_a_newer_recording_opens_read_only_and_the_window_says_so(
    make_window: Any, tmp_path: Path
) -> None:
    """A newer splitdesk's file replays (it was refused) and the banner says read-only; its
    tooltip and the status bar carry the one line naming both versions."""
    doc = json.loads((RECORDINGS / "v2.splitdesk.json").read_text(encoding="utf-8"))
    doc["version"] = 7
    doc["runs"][0]["gpu"] = {"name": "H100"}
    newer = tmp_path / "newer.splitdesk.json"
    newer.write_text(json.dumps(doc), encoding="utf-8")
    window = make_window(AppSettings())
    ui = window.recordings
    shown: list[str] = []
    window.statusBar().messageChanged.connect(shown.append)
    await ui.open_path(newer)
    banner = ui.replay.bar.banner
    assert banner.text().startswith("REPLAY (read-only: a newer format) of built-in")
    assert "recording format 7 is newer than this splitdesk" in banner.toolTip()
    assert any(m.startswith("recording format 7 is newer") for m in shown), shown
