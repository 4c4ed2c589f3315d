"""The session history: every finished or stopped run of this session in a dockable table.

Memory stays bounded however many runs a session makes: the last ``KEEP_IN_MEMORY`` runs
keep their recording in memory; an older run that was auto-saved keeps only its file's
path and its row, and is read back from the file (off the GUI thread,
:meth:`HistoryDock.recording_of`) when the user replays, saves or compares it. A run that
was not saved (auto-save off, or it failed) stays in memory: nothing is lost.

Columns: time, endpoint, model, mode, N (questions), combined and parallel makespans,
speed-up, outcome. The figures are read from the recording's figure set
(:func:`splitdesk.core.files.recording.figures_of`); nothing is computed here. From a row the
user replays the run, saves it, or compares two runs on one time axis.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.files.recording import Recording, load_recording

COLUMNS = (
    "Time",
    "Endpoint",
    "Model",
    "Mode",
    "N",
    "Combined",
    "Parallel",
    "Speed-up",
    "Outcome",
)

#: Runs whose recordings stay in memory (newest first); older auto-saved ones are dropped
#: to their file. Only the newest: it is the run on screen, whose events the views hold
#: anyway. An older 64-request run held about 1 MB of event objects (7,400 events) and is
#: read back from its 630 kB file in a worker thread when replayed, saved or compared.
KEEP_IN_MEMORY = 1


@dataclass
class HistoryEntry:
    """One run of the session: its recording (None once dropped to its file, see the
    module docstring) and where it was auto-saved (if it was)."""

    recording: Recording | None
    path: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _s(x: Any) -> str:
    return "—" if not isinstance(x, (int, float)) else f"{x:.2f} s"


def outcome_of(recording: Recording) -> str:
    """ "done", "stopped" or "k failed" for the recording's first run (its figures)."""
    figures = recording.runs[0].figures
    outcomes = [r.get("outcome") for r in figures.get("requests", [])]
    failed = outcomes.count("failed")
    if failed:
        return f"{failed} failed"
    if "stopped" in outcomes or any(o is None for o in outcomes):
        return "stopped"
    return "done"


def row_of(recording: Recording) -> list[str]:
    """The table cells of one recording (see :data:`COLUMNS`)."""
    run = recording.runs[0]
    figures = run.figures
    groups = figures.get("groups", {})
    ep = recording.endpoint
    where = f"built-in · {ep.profile}" if ep.preset == "builtin" and ep.profile else ep.url
    speedup = figures.get("speedup")
    return [
        run.started_at.astimezone(UTC).astimezone().strftime("%H:%M:%S"),
        where,
        ep.model,
        recording.settings.mode,
        str(len(recording.questions)),
        _s(groups.get("combined", {}).get("makespan_s")),
        _s(groups.get("parallel", {}).get("makespan_s")),
        "—" if not isinstance(speedup, (int, float)) else f"{speedup:.2f}×",
        outcome_of(recording),
    ]


class HistoryDock(QDockWidget):
    """The session history table (newest first).

    Signals:
        replayRequested(object): a :class:`HistoryEntry` to replay.
        saveRequested(object): a :class:`HistoryEntry` to save under a name.
        compareRequested(object, object): two entries to show on one time axis.
    """

    replayRequested = Signal(object)
    saveRequested = Signal(object)
    compareRequested = Signal(object, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Session history", parent)
        self.setObjectName("historyDock")
        self.entries: list[HistoryEntry] = []
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.cellDoubleClicked.connect(lambda row, _col: self._replay(row))
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.replay_button = QPushButton("▶ Replay")
        self.replay_button.setToolTip("Show the selected run again (double-click a row)")
        self.save_button = QPushButton("Save…")
        self.save_button.setToolTip("Save the selected run as a recording file")
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("Select two runs: both timelines on one time axis")
        self.replay_button.clicked.connect(lambda: self._replay(self._selected_rows()[:1]))
        self.save_button.clicked.connect(self._save)
        self.compare_button.clicked.connect(self._compare)
        buttons = QHBoxLayout()
        for b in (self.replay_button, self.save_button, self.compare_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.table, 1)
        lay.addLayout(buttons)
        self.setWidget(body)
        self._selection_changed()

    def add(self, entry: HistoryEntry) -> None:
        """Add a run at the top."""
        if entry.recording is None:
            raise ValueError("a history entry is added with its recording")
        self.entries.insert(0, entry)
        self.table.insertRow(0)
        for col, text in enumerate(row_of(entry.recording)):
            item = QTableWidgetItem(text)
            if col >= 4:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if col == 1:
                item.setToolTip(entry.recording.describe())
            self.table.setItem(0, col, item)
        if entry.path is not None:
            self._note_path(0, entry.path)
        self._drop_old()

    def set_path(self, entry: HistoryEntry, path: Path) -> None:
        """Note where ``entry`` was saved (tooltip of its time cell)."""
        entry.path = path
        if entry in self.entries:
            self._note_path(self.entries.index(entry), path)
        self._drop_old()

    def _drop_old(self) -> None:
        """Keep in memory only the last ``KEEP_IN_MEMORY`` runs' recordings (and any run
        that has no file to be read back from)."""
        for entry in self.entries[KEEP_IN_MEMORY:]:
            if entry.path is not None:
                entry.recording = None

    async def recording_of(self, entry: HistoryEntry) -> Recording:
        """``entry``'s recording: from memory, or read back from its file in a worker
        thread. Raises :class:`~splitdesk.core.files.recording.RecordingError` (naming the file)
        when the file is gone or unreadable."""
        if entry.recording is not None:
            return entry.recording
        assert entry.path is not None  # dropped only when it has a file
        return await asyncio.to_thread(load_recording, entry.path)

    def _note_path(self, row: int, path: Path) -> None:
        item = self.table.item(row, 0)
        if item is not None:
            item.setToolTip(f"auto-saved to {path}")

    def _selected_rows(self) -> list[int]:
        return sorted({i.row() for i in self.table.selectedIndexes()})

    def _selection_changed(self) -> None:
        n = len(self._selected_rows())
        self.replay_button.setEnabled(n == 1)
        self.save_button.setEnabled(n == 1)
        self.compare_button.setEnabled(n == 2)

    def _replay(self, rows: int | list[int]) -> None:
        row = rows if isinstance(rows, int) else (rows[0] if rows else -1)
        if 0 <= row < len(self.entries):
            self.replayRequested.emit(self.entries[row])

    def _save(self) -> None:
        rows = self._selected_rows()
        if len(rows) == 1:
            self.saveRequested.emit(self.entries[rows[0]])

    def _compare(self) -> None:
        rows = self._selected_rows()
        if len(rows) == 2:
            # the older run first (top of the comparison)
            self.compareRequested.emit(self.entries[rows[1]], self.entries[rows[0]])
