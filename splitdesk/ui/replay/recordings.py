"""Recordings in the window: record every live run, auto-save it, keep the session history,
open and save recording files, drag-and-drop, the Demos menu and the comparison window.

Everything that touches the disk runs in a worker thread (``asyncio.to_thread``); the GUI
thread only builds the :class:`~splitdesk.core.files.recording.Recording` (the run's events
are already in memory) and shows results. A file that cannot be opened is reported in
the status bar and a non-modal message naming the file and the field; what is on screen
stays as it was.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from importlib.resources import as_file, files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QDropEvent, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox

from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.files.recording import (
    GZ_SUFFIX,
    SUFFIX,
    ClientCpuRecord,
    EventLog,
    Recording,
    RecordingError,
    RunSettingsRecord,
    autosave,
    autosave_dir,
    encode_recording,
    endpoint_record,
    is_recording_name,
    load_recording,
    new_recording,
    run_record,
    save_recording,
    suggested_name,
)
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.plans import RunPlan
from splitdesk.core.run.questions import QuestionSet
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.replay.compare import CompareDialog
from splitdesk.ui.replay.driver import ReplayDriver
from splitdesk.ui.replay.history import HistoryDock, HistoryEntry

if TYPE_CHECKING:
    from splitdesk.ui.port import Port

log = logging.getLogger(__name__)

FILE_FILTER = f"splitdesk recordings (*{SUFFIX} *{GZ_SUFFIX});;All files (*)"


def demo_files() -> list[tuple[str, Path]]:
    """The shipped demo recordings (``resources/demos``), as (menu title, path), sorted.
    The title is the file's stem ("batching" …)."""
    out: list[tuple[str, Path]] = []
    folder = files("splitdesk.resources").joinpath("demos")
    with as_file(folder) as path:
        if not path.is_dir():
            return out
        for p in sorted(path.iterdir()):
            if is_recording_name(p.name):
                stem = p.name.removesuffix(GZ_SUFFIX).removesuffix(SUFFIX)
                out.append((stem, p))
    return out


class _Capture:
    """What a live run needs for its recording, taken when it is planned."""

    def __init__(
        self,
        endpoint: EndpointSettings,
        url: str,
        question_set: QuestionSet,
        questions: list[str],
        template: CombinedTemplate,
        mode: str,
        with_sequential: bool,
        client: ClientPattern,
        title: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.client = client
        self.title = title  #: a scenario's title: the recording is named after it
        self.url = url
        self.question_set = question_set
        self.questions = questions
        self.template = template
        self.mode = mode
        self.with_sequential = with_sequential
        self.log = EventLog()
        self.predictions: list[PredictedRequest] | None = None
        self.state: RunState | None = None


class RecordingsUi(QObject):
    """The window's recording features (see the module docstring).

    Signals:
        recorded(object): a live run's :class:`HistoryEntry`, once it is in the history.
        autosaved(object): the :class:`Path` a run was auto-saved to.
        openFailed(str): the message shown when a file could not be opened.
        opened(object): a :class:`Recording` opened from a file and now replaying.
    """

    recorded = Signal(object)
    autosaved = Signal(object)
    openFailed = Signal(str)
    opened = Signal(object)

    def __init__(self, port: Port) -> None:
        super().__init__(port.widget)
        self.port = port
        self.replay = ReplayDriver(port)
        self.history = HistoryDock(port.widget)
        port.add_dock(self.history)
        self.history.hide()
        self.history.replayRequested.connect(self._replay_entry)
        self.history.saveRequested.connect(self._save_entry_dialog)
        self.history.compareRequested.connect(self._compare_entries)
        self.autosave_enabled = bool(getattr(port.app_settings(), "autosave_recordings", True))
        self.autosave_folder: Path | None = None  #: None: :func:`autosave_dir`
        self._capture: _Capture | None = None
        self._notices: list[QMessageBox] = []
        self.compare_windows: list[CompareDialog] = []
        c = port.runs
        c.runPlanned.connect(self._run_planned)
        c.runStarted.connect(self._run_started)
        c.predictionsReady.connect(self._predictions)
        c.runFinished.connect(self._run_finished)
        port.widget.setAcceptDrops(True)
        port.widget.installEventFilter(self)
        self._build_menus()

    # -- menus ------------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        w = self.port.widget
        file_menu = self.port.menu("&File")
        self.open_action = QAction("Open recording…", w)
        self.open_action.setShortcut(QKeySequence.StandardKey.Open)
        self.open_action.triggered.connect(self.open_dialog)
        self.save_action = QAction("Save run as recording…", w)
        self.save_action.setShortcut(QKeySequence.StandardKey.Save)
        self.save_action.setToolTip("Save the last run (or the replay shown) as a file")
        self.save_action.triggered.connect(self.save_dialog)
        self.compare_action = QAction("Compare two recordings…", w)
        self.compare_action.triggered.connect(self.compare_dialog)
        self.autosave_action = QAction("Auto-save every run", w)
        self.autosave_action.setCheckable(True)
        self.autosave_action.setChecked(self.autosave_enabled)
        self.autosave_action.toggled.connect(self._autosave_toggled)
        self.folder_action = QAction("Open auto-save folder", w)
        self.folder_action.triggered.connect(self.open_autosave_folder)
        for a in (self.open_action, self.save_action, self.compare_action):
            file_menu.addAction(a)
        file_menu.addSeparator()
        file_menu.addAction(self.autosave_action)
        file_menu.addAction(self.folder_action)
        self.demos_menu = self.port.menu("&Demos")
        self.demo_actions: dict[str, QAction] = {}
        demos = demo_files()
        for title, path in demos:
            action = QAction(f"Replay: {title}", w)
            action.setToolTip(f"A recorded run on the built-in endpoint ({title}); no network")
            action.triggered.connect(lambda _=False, p=path: self.open_path(p))
            self.demos_menu.addAction(action)
            self.demo_actions[title] = action
        if not demos:
            none = self.demos_menu.addAction("(no demo recordings installed)")
            none.setEnabled(False)
        view_menu = self.port.menu("&View")
        history_action = self.history.toggleViewAction()
        history_action.setText("Session history")
        history_action.setShortcut(QKeySequence("Ctrl+H"))
        view_menu.addAction(history_action)

    def _autosave_toggled(self, on: bool) -> None:
        self.autosave_enabled = on
        if "autosave_recordings" in type(self.port.app_settings()).model_fields:
            self.port.update_settings(autosave_recordings=on)
        self.port.say(
            "Every run is saved to the auto-save folder."
            if on
            else "Runs are no longer saved automatically (the session history keeps them)."
        )

    def open_autosave_folder(self) -> None:
        """Open the auto-save folder in the file manager (created if missing, off the GUI
        thread)."""
        folder = self.autosave_folder or autosave_dir()

        async def go() -> None:
            try:
                await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
            except OSError as exc:
                self.port.say(f"Could not create {folder}: {exc.strerror or exc}")
                return
            if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))):
                self.port.say(f"Auto-saved runs are in {folder}")

        spawn(go())

    # -- live runs --------------------------------------------------------------------------------
    def _run_planned(self, plan: RunPlan, questions: list[str]) -> None:
        request = self.port.runs.request
        if request is None:
            self._capture = None
            return
        endpoint = request.endpoint
        sim = self.port.runs.sim
        url = sim.openai_base_url if endpoint.is_builtin and sim is not None else endpoint.base_url
        self._capture = _Capture(
            endpoint,
            url,
            self.port.question_set(),
            list(questions),
            request.template,
            str(plan.mode),
            request.with_sequential and plan.mode == "one-after-another",
            request.client,
            self.port.run_title(),
        )

    def _run_started(self, state: RunState) -> None:
        cap = self._capture
        if cap is None:
            return
        cap.state = state
        state.subscribe_batch(cap.log.extend)

    def _predictions(self, predictions: list[PredictedRequest]) -> None:
        if self._capture is not None:
            self._capture.predictions = list(predictions)

    def _run_finished(self, state: RunState) -> None:
        cap, self._capture = self._capture, None
        if cap is None or cap.state is not state or not cap.log.events:
            return
        try:
            recording = self.recording_of(cap, state)
        except Exception:  # never lose the window over a recording
            log.exception("could not build the recording of the run")
            self.port.say("This run could not be recorded (see the log).")
            return
        entry = HistoryEntry(recording)
        self.history.add(entry)
        self.recorded.emit(entry)
        if self.autosave_enabled:
            spawn(self._autosave(entry))

    def recording_of(self, cap: _Capture, state: RunState) -> Recording:
        """The :class:`Recording` of a finished live run."""
        s = cap.endpoint
        titles = {q.text: q.title for q in cap.question_set.questions}
        mode = cap.mode
        client = cap.client
        server = self.port.stage.server_lane.record(state)  # the server's own /metrics samples
        runs = self.port.runs  # splitdesk's own CPU over the run: a replay says it as the run did
        cpu = (
            ClientCpuRecord.of(runs.client_cpu, runs.local_endpoint)
            if runs.client_cpu is not None
            else None
        )
        return new_recording(
            "window",
            endpoint_record(
                cap.url,
                s.api,
                s.model,
                preset=s.preset,
                profile=s.profile if s.is_builtin else None,
                speed=s.speed if s.is_builtin else None,
                headers=s.headers.keys(),
            ),
            cap.questions,
            [titles.get(q, "") for q in cap.questions],
            cap.template,
            RunSettingsRecord(
                mode=mode,
                with_sequential=cap.with_sequential,
                max_tokens=s.max_tokens,
                temperature=s.temperature,
                retry_429=s.retry_429,
                connect_timeout=s.connect_timeout,
                read_timeout=s.read_timeout,
                cold_connections=client.cold,
                release=client.release,
            ),
            [
                run_record(
                    state,
                    label=mode.replace("-", " "),
                    mode=mode,
                    started_at=cap.log.started_at,
                    events=cap.log.events,
                    predictions=cap.predictions,
                    server=server,
                    client_cpu=cpu,
                )
            ],
            title=cap.title,
        )

    async def _secrets(self) -> list[str | None]:
        try:
            return [await self.port.api_key()]
        except Exception:  # a keyring that fails: the key never reached the run either
            log.info("no API key to mask", exc_info=True)
            return []

    async def _autosave(self, entry: HistoryEntry) -> None:
        secrets = await self._secrets()
        folder = self.autosave_folder
        recording = entry.recording
        if recording is None:  # already dropped to a file: nothing left to save
            return
        try:
            path = await asyncio.to_thread(autosave, recording, folder, secrets=secrets)
        except RecordingError as exc:
            self.port.say(f"Auto-save failed: {exc}")
            return
        self.history.set_path(entry, path)
        self.autosaved.emit(path)

    # -- opening ------------------------------------------------------------------------------------
    def open_dialog(self) -> None:
        """File → Open recording…"""
        start = str(self.autosave_folder or autosave_dir())
        path, _ = QFileDialog.getOpenFileName(
            self.port.widget, "Open a recording", start if os.path.isdir(start) else "", FILE_FILTER
        )
        if path:
            self.open_path(Path(path))

    def open_path(self, path: Path, speed: float = 1.0, run: int = 0) -> asyncio.Task[Any]:
        """Load ``path`` off the GUI thread and replay it at ``speed``; on a problem, say
        what is wrong (status bar and a non-modal message) and change nothing else.
        Returns the task (tests await it)."""
        return spawn(self._open(path, speed, run))

    async def _open(self, path: Path, speed: float, run: int) -> None:
        self.port.say(f"Opening {path.name}…")
        opened = await self._read_all([path])
        if opened is not None:
            self.show_recording(opened[0], speed, run)

    async def _read_all(self, sources: Sequence[Path | HistoryEntry]) -> list[Recording] | None:
        """The recordings of ``sources`` (files, read off the GUI thread, or history
        entries, read back from their files when dropped from memory), in order; ``None``
        when one cannot be read, which is then said once (status bar and a non-modal
        message naming the file and what is wrong) — for every way a recording is opened."""
        out = []
        try:
            for source in sources:
                if isinstance(source, HistoryEntry):
                    out.append(await self.history.recording_of(source))
                else:
                    out.append(await asyncio.to_thread(load_recording, source))
        except RecordingError as exc:
            self._problem("Could not open the recording", str(exc))
            return None
        return out

    def show_recording(self, recording: Recording, speed: float = 1.0, run: int = 0) -> bool:
        """Replay ``recording`` in the window; False (and a message) when it cannot be
        shown now (a live run in progress)."""
        try:
            self.replay.open(recording, run, speed)
        except ValueError as exc:
            self._problem("Cannot replay now", str(exc))
            return False
        self.opened.emit(recording)
        if recording.read_only_note:  # from a newer splitdesk: shown as far as it is known
            self.port.say(recording.read_only_note)
        return True

    def _problem(self, title: str, message: str) -> None:
        self.port.say(message)
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            title,
            message,
            QMessageBox.StandardButton.Ok,
            self.port.widget,
        )
        box.setModal(False)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.finished.connect(lambda *_: self._notices.remove(box) if box in self._notices else None)
        self._notices.append(box)
        box.show()
        self.openFailed.emit(message)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Drag-and-drop of a recording file onto the window."""
        if watched is self.port.widget and event.type() in (
            QEvent.Type.DragEnter,
            QEvent.Type.Drop,
        ):
            drop: QDropEvent = event  # type: ignore[assignment]
            urls = [
                u
                for u in drop.mimeData().urls()
                if u.isLocalFile() and u.toLocalFile().endswith((".json", ".gz"))
            ]  # other files (a question set) are not taken for recordings
            if not urls:
                return False
            if event.type() == QEvent.Type.DragEnter:
                drop.acceptProposedAction()
                return True
            drop.acceptProposedAction()
            self.open_path(Path(urls[0].toLocalFile()))
            return True
        return super().eventFilter(watched, event)

    # -- saving ---------------------------------------------------------------------------------------
    def current_recording(self) -> Recording | None:
        """The replay shown, else the last live run of the session."""
        if self.replay.recording is not None:
            return self.replay.recording
        return self.history.entries[0].recording if self.history.entries else None

    def save_dialog(self) -> None:
        """File → Save run as recording…"""
        recording = self.current_recording()
        if recording is None:
            self.port.say("Nothing to save yet: run or open something.")
            return
        self._save_with_dialog(recording)

    def _save_entry_dialog(self, entry: HistoryEntry) -> None:
        self._with_recordings([entry], lambda recs: self._save_with_dialog(recs[0]))

    def _with_recordings(
        self, entries: list[HistoryEntry], then: Callable[[list[Recording]], object]
    ) -> None:
        """Call ``then`` with the entries' recordings: at once when all are in memory,
        else once the dropped ones are read back from their files (off the GUI thread; a
        file that cannot be read is said in a message)."""
        if all(e.recording is not None for e in entries):
            then([e.recording for e in entries if e.recording is not None])
            return

        async def go() -> None:
            recs = await self._read_all(entries)
            if recs is not None:
                QTimer.singleShot(0, lambda: then(recs))  # dialogs open outside the task

        spawn(go())

    def _save_with_dialog(self, recording: Recording) -> None:
        size = len(encode_recording(recording))
        path, _ = QFileDialog.getSaveFileName(
            self.port.widget,
            "Save the run as a recording",
            suggested_name(recording, size),
            FILE_FILTER,
        )
        if path:
            self.save_to(recording, Path(path))

    def save_to(self, recording: Recording, path: Path) -> asyncio.Task[Any]:
        """Save ``recording`` to ``path`` off the GUI thread (gzip when the name ends in
        ``.gz``); the result goes to the status bar. Returns the task."""

        async def go() -> None:
            secrets = await self._secrets()
            try:
                n = await asyncio.to_thread(save_recording, recording, path, secrets=secrets)
            except RecordingError as exc:
                self._problem("Could not save the recording", str(exc))
                return
            self.port.say(f"Saved {path} ({n / 1000:.0f} kB)")

        return spawn(go())

    # -- comparing -------------------------------------------------------------------------------------
    def compare_dialog(self) -> None:
        """File → Compare two recordings…: pick two files, show both timelines."""
        paths, _ = QFileDialog.getOpenFileNames(
            self.port.widget, "Choose two recordings", "", FILE_FILTER
        )
        if len(paths) != 2:
            if paths:
                self.port.say("Choose exactly two recordings to compare.")
            return
        self.compare_paths(Path(paths[0]), Path(paths[1]))

    def compare_paths(self, first: Path, second: Path) -> asyncio.Task[Any]:
        """Load two recordings off the GUI thread and compare them (a message names a file
        that cannot be opened). Returns the task."""

        async def go() -> None:
            recs = await self._read_all([first, second])
            if recs is not None:
                self.compare(recs[0], recs[1])

        return spawn(go())

    def _compare_entries(self, first: HistoryEntry, second: HistoryEntry) -> None:
        self._with_recordings([first, second], lambda recs: self.compare(recs[0], recs[1]))

    def compare(self, first: Recording, second: Recording) -> CompareDialog:
        """Show two recordings' first runs on one time axis (a separate window)."""
        dialog = CompareDialog(
            (first, 0), (second, 0), self.port.theme, self.port.scale, self.port.widget
        )
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.compare_windows.append(dialog)
        dialog.finished.connect(
            lambda *_: (
                self.compare_windows.remove(dialog) if dialog in self.compare_windows else None
            )
        )
        dialog.show()
        return dialog

    def _replay_entry(self, entry: HistoryEntry) -> None:
        self._with_recordings([entry], lambda recs: self.show_recording(recs[0]))
