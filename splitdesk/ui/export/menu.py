"""File → Export in the window: the timeline as PNG (2×) or SVG, the stage as PNG (2×:
what the audience sees, no sidebar, menus or bars), the figures as CSV or bench JSON, the
Perfetto trace, and the run as GIF, MP4 or animated WebP; and every scenario of a talk as
clips for slides (:mod:`splitdesk.ui.export.talk_clips`).

Pictures are drawn from what the stage shows now (on the GUI thread, as Qt requires) and
written to disk in a worker thread. Figures, the trace and animations come from the
recording on show (:meth:`~splitdesk.ui.port.Port.current_recording`); figures and the
trace are built and written in a worker thread. An animation renders frame by frame on a
bare stage of its own, never shown and never inside a window, in the presentation look
(:func:`~splitdesk.ui.render.exports.render_animation`), yielding to the event loop between
frames, under a progress dialog whose Cancel stops it and leaves no file. Problems go to
the status bar and a non-modal message.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QProgressDialog

from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.files.figures_export import figures_csv, figures_json
from splitdesk.core.files.recording import Recording, RecordingError
from splitdesk.core.files.trace_events import trace_document
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.export.animation_dialog import AnimationDialog
from splitdesk.ui.export.talk_clips import TalkClips
from splitdesk.ui.render.encoders import EncodeError
from splitdesk.ui.render.exports import (
    PNG_SCALE,
    AnimationOptions,
    ExportCancelledError,
    render_animation,
    save_png,
    timeline_image,
    timeline_svg_bytes,
    widget_image,
)

if TYPE_CHECKING:
    from splitdesk.ui.port import Port

#: Animation size and frame rate offered by the window (a 720p slide at 30 fps).
ANIMATION_SIZE = (1280, 720)
ANIMATION_FPS = 30.0
#: The file dialog's filter per animation kind.
_PATTERNS = {"gif": "GIF (*.gif)", "mp4": "MP4 video (*.mp4)", "webp": "Animated WebP (*.webp)"}


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text)


class ExportMenu(QObject):
    """The File → Export submenu of the window behind ``port`` (module docstring).
    ``busy`` while an animation renders (a second one waits for it to finish)."""

    def __init__(self, port: Port) -> None:
        super().__init__(port.widget)
        self.port = port
        window = port.widget
        self.busy = False
        self.progress: QProgressDialog | None = None
        file_menu = port.menu("&File")
        self.menu = QMenu("&Export", window)
        file_menu.addSeparator()
        file_menu.addMenu(self.menu)
        self.clips = TalkClips(port)
        self.actions: dict[str, QAction] = {}
        entries: list[tuple[str, str, Callable[[], None]]] = [
            ("png", "Timeline as PNG (2×)…", self.timeline_png_dialog),
            ("svg", "Timeline as SVG…", self.timeline_svg_dialog),
            ("window_png", "Stage as PNG (2×): what the audience sees…", self.window_png_dialog),
            ("csv", "Figures as CSV…", lambda: self._data_dialog("csv")),
            ("json", "Figures as JSON (bench document)…", lambda: self._data_dialog("json")),
            ("trace", "Trace for Perfetto (JSON)…", lambda: self._data_dialog("trace")),
            ("gif", "Animation as GIF (size, frame rate)…", lambda: self.ask_animation("gif")),
            ("mp4", "Animation as MP4 (size, frame rate)…", lambda: self.ask_animation("mp4")),
            ("webp", "Animation as WebP, for the web (size, frame rate)…",
             lambda: self.ask_animation("webp")),
            ("clips", "Clips of the talk for slides (every scenario)…", self.ask_clips),
        ]  # fmt: skip
        for key, text, slot in entries:
            action = QAction(text, window)
            action.triggered.connect(lambda _=False, s=slot: s())
            self.menu.addAction(action)
            self.actions[key] = action
            if key in ("window_png", "trace", "webp"):
                self.menu.addSeparator()

    # -- helpers ------------------------------------------------------------------------------------
    def _ask_path(self, title: str, name: str, pattern: str) -> Path | None:
        path, _ = QFileDialog.getSaveFileName(self.port.widget, title, name, pattern)
        return Path(path) if path else None

    def _say(self, text: str) -> None:
        self.port.say(text)

    def _problem(self, title: str, message: str) -> None:
        self._say(f"{title}: {message}")
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            title,
            message,
            QMessageBox.StandardButton.Ok,
            self.port.widget,
        )
        box.setModal(False)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()

    def _recording(self) -> Recording | None:
        recording = self.port.current_recording()
        if recording is None:
            self._say("Nothing to export yet: run or open a recording first.")
        return recording

    def _has_run(self) -> bool:
        if self.port.stage.state is None:
            self._say("Nothing to export yet: run or open a recording first.")
            return False
        return True

    # -- pictures -----------------------------------------------------------------------------------
    def timeline_png_dialog(self) -> None:
        """Timeline as PNG at 2×."""
        if self._has_run() and (
            path := self._ask_path("Export the timeline as PNG", "timeline.png", "PNG (*.png)")
        ):
            self.export_timeline_png(path)

    def export_timeline_png(self, path: Path, scale: float = PNG_SCALE) -> asyncio.Task[Any]:
        """Draw the timeline now, write it off the GUI thread. Returns the task."""
        timeline = self.port.stage.timeline
        timeline.throttle.flush()
        image = timeline_image(timeline, scale)
        return self._save_image(image, path)

    def window_png_dialog(self) -> None:
        """The stage (what the audience sees: no sidebar, menus or bars) as PNG at 2×."""
        if path := self._ask_path("Export the stage as PNG", "stage.png", "PNG (*.png)"):
            self.export_window_png(path)

    def export_window_png(self, path: Path, scale: float = PNG_SCALE) -> asyncio.Task[Any]:
        """Draw the stage now, write it off the GUI thread. Returns the task."""
        return self._save_image(widget_image(self.port.stage, scale), path)

    def _save_image(self, image: Any, path: Path) -> asyncio.Task[Any]:
        async def go() -> None:
            try:
                w, h = await asyncio.to_thread(save_png, image, path)
            except OSError as exc:
                self._problem("Could not export", str(exc))
                return
            self._say(f"Exported {path} ({w}×{h})")

        return spawn(go())

    def timeline_svg_dialog(self) -> None:
        """Timeline as SVG."""
        if self._has_run() and (
            path := self._ask_path("Export the timeline as SVG", "timeline.svg", "SVG (*.svg)")
        ):
            self.export_timeline_svg(path)

    def export_timeline_svg(self, path: Path) -> asyncio.Task[Any]:
        """Draw the timeline as SVG now, write it off the GUI thread. Returns the task."""
        timeline = self.port.stage.timeline
        timeline.throttle.flush()
        data = timeline_svg_bytes(timeline)

        async def go() -> None:
            try:
                await asyncio.to_thread(write_atomic, path, data)
            except OSError as exc:
                self._problem("Could not export", str(exc))
                return
            self._say(f"Exported {path}")

        return spawn(go())

    # -- figures and trace ----------------------------------------------------------------------------
    def _data_dialog(self, kind: str) -> None:
        recording = self._recording()
        if recording is None:
            return
        name, pattern = {
            "csv": ("figures.csv", "CSV (*.csv)"),
            "json": ("figures.json", "JSON (*.json)"),
            "trace": ("trace.json", "Trace Event Format JSON (*.json)"),
        }[kind]
        if path := self._ask_path("Export", name, pattern):
            self.export_data(recording, kind, path)

    def export_data(self, recording: Recording, kind: str, path: Path) -> asyncio.Task[Any]:
        """Write ``recording``'s figures (``csv``/``json``) or trace (``trace``) to
        ``path``, built and written in a worker thread. Returns the task."""

        def build() -> str:
            if kind == "csv":
                return figures_csv(recording)
            if kind == "json":
                return json.dumps(figures_json(recording), indent=2, ensure_ascii=False) + "\n"
            return json.dumps(trace_document(recording), ensure_ascii=False) + "\n"

        async def go() -> None:
            try:
                await asyncio.to_thread(lambda: _write_text(path, build()))
            except (OSError, RecordingError) as exc:
                self._problem("Could not export", str(exc))
                return
            extra = " (open it in ui.perfetto.dev)" if kind == "trace" else ""
            self._say(f"Exported {path}{extra}")

        return spawn(go())

    # -- the talk's clips ---------------------------------------------------------------------------
    def ask_clips(self) -> None:
        """File → Export → Clips of the talk: every scenario as clips, by a child process
        (:mod:`splitdesk.ui.export.talk_clips`)."""
        self.clips.ask()

    # -- animations -----------------------------------------------------------------------------------
    def ask_animation(self, kind: str) -> None:
        """File → Export → Animation as GIF/MP4/WebP…"""
        self._animation_dialog(kind)

    def _animation_dialog(self, kind: str) -> AnimationDialog | None:
        """Ask the size and frame rate, then the file; the animation renders after."""
        if self.busy:
            self._say("An animation is being exported; wait for it or cancel it.")
            return None
        recording = self._recording()
        if recording is None:
            return None
        stage = self.port.stage
        dialog = AnimationDialog(kind, (stage.width(), stage.height()), self.port.widget)
        self.options_dialog = dialog

        def chosen() -> None:
            size, fps = dialog.choice()
            pattern = _PATTERNS[kind]
            if path := self._ask_path(f"Export the run as {kind.upper()}", f"run.{kind}", pattern):
                shown = self.port.recording_shown()
                run = shown[1] if shown is not None and shown[0] is recording else 0
                self.export_animation(recording, kind, path, run, size, fps)

        dialog.accepted.connect(chosen)
        dialog.show()
        return dialog

    def export_animation(
        self,
        recording: Recording,
        kind: str,
        path: Path,
        run: int = 0,
        size: tuple[int, int] = ANIMATION_SIZE,
        fps: float = ANIMATION_FPS,
    ) -> asyncio.Task[Any]:
        """Render run ``run`` of ``recording`` to ``path`` as ``kind`` (gif/mp4/webp) under a
        progress dialog with Cancel. Returns the task."""
        dialog = QProgressDialog(
            f"Rendering the {kind.upper()}…", "Cancel", 0, 100, self.port.widget
        )
        dialog.setWindowTitle("Export animation")
        dialog.setWindowModality(Qt.WindowModality.NonModal)
        dialog.setMinimumDuration(0)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.setValue(0)
        dialog.show()
        self.progress = dialog
        self.busy = True

        def progress(done: int, total: int) -> bool:
            dialog.setMaximum(total)
            dialog.setValue(done)
            dialog.setLabelText(f"Rendering the {kind.upper()}: frame {done} of {total}")
            return not dialog.wasCanceled()

        async def go() -> None:
            try:
                n = await render_animation(
                    recording,
                    path,
                    AnimationOptions(kind, size, fps, run),
                    self.port.theme,
                    progress=progress,
                )
            except ExportCancelledError:
                self._say("Animation export cancelled; no file was written.")
            except (EncodeError, OSError, RecordingError, ValueError) as exc:
                self._problem("Could not export the animation", str(exc))
            else:
                self._say(f"Exported {path} ({n} frames at {fps:g} fps)")
            finally:
                self.busy = False
                self.progress = None
                dialog.close()
                dialog.deleteLater()

        return spawn(go(), "export animation", ends_with_window=True)
