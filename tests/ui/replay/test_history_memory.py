"""The session history's memory is bounded: only the last runs keep their recording in
memory; older auto-saved runs keep their file and row, and are read back from the file when
replayed. A run with no file stays in memory (nothing is lost). Real files, real window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ui.conftest import wait_until

from paths import RECORDINGS
from splitdesk.core.files.recording import RecordingError, load_recording, save_recording
from splitdesk.core.files.settings import AppSettings
from splitdesk.ui.replay.history import KEEP_IN_MEMORY, HistoryDock, HistoryEntry, row_of

FIXTURE = RECORDINGS / "v1.splitdesk.json"


def rows(dock: HistoryDock) -> list[list[str]]:
    t = dock.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


@pytest.mark.asyncio
async def test_only_the_last_runs_stay_in_memory_older_ones_load_from_their_file(
    qtbot: Any, tmp_path: Path
) -> None:
    dock = HistoryDock()
    qtbot.addWidget(dock)
    recording = load_recording(FIXTURE)
    n = KEEP_IN_MEMORY + 3
    for i in range(n):
        entry = HistoryEntry(recording.model_copy(deep=True))
        dock.add(entry)
        path = tmp_path / f"run{i}.splitdesk.json"
        save_recording(recording, path)
        dock.set_path(entry, path)
    unsaved = HistoryEntry(recording.model_copy(deep=True))  # auto-save off or failed
    dock.add(unsaved)
    in_memory = [e.recording is not None for e in dock.entries]
    # newest first: the unsaved one, the last KEEP_IN_MEMORY - 1 saved ones; older: files
    assert in_memory == [True] * KEEP_IN_MEMORY + [False] * (n + 1 - KEEP_IN_MEMORY)
    assert rows(dock) == [row_of(recording)] * (n + 1)  # every row still shows its figures

    oldest = dock.entries[-1]
    assert oldest.recording is None and oldest.path == tmp_path / "run0.splitdesk.json"
    assert await dock.recording_of(oldest) == recording
    assert oldest.recording is None  # read for the caller, not kept

    # more runs without files: none of them is dropped
    for _ in range(KEEP_IN_MEMORY):
        dock.add(HistoryEntry(recording.model_copy(deep=True)))
    assert unsaved.recording is not None

    oldest.path.unlink()  # a file deleted since: a clear error naming it
    with pytest.raises(RecordingError, match="run0"):
        await dock.recording_of(oldest)


@pytest.mark.asyncio
async def test_replaying_a_run_dropped_to_its_file_shows_it(
    make_window: Any, tmp_path: Path
) -> None:
    window = make_window(AppSettings())
    ui = window.recordings
    recording = load_recording(FIXTURE)
    path = tmp_path / "old.splitdesk.json"
    save_recording(recording, path)
    old = HistoryEntry(recording.model_copy(deep=True))
    ui.history.add(old)
    ui.history.set_path(old, path)
    for _ in range(KEEP_IN_MEMORY):
        newer = HistoryEntry(recording.model_copy(deep=True))
        ui.history.add(newer)
        ui.history.set_path(newer, path)
    assert old.recording is None
    ui.history.replayRequested.emit(old)
    await wait_until(
        lambda: ui.replay.recording is not None, 20, "the replay of the run read back from file"
    )
    assert ui.replay.recording == recording
