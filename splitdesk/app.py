"""The window application: QApplication + qasync loop + settings + the run controller.

``splitdesk`` (no sub-command) calls :func:`run_gui`. With ``--run`` it presses Run once
the window is up; ``--screenshot PATH`` saves the window as PNG when that run has
finished; ``--quit`` then closes the app — for docs and automated checks.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

# One Qt binding everywhere, before any Qt import (qasync and pyqtgraph read these).
os.environ.setdefault("QT_API", "pyside6")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import qasync
from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from splitdesk.core.run_state import RunState
from splitdesk.core.settings import load_settings
from splitdesk.ui.controller import RunController
from splitdesk.ui.gc import GuiGarbageCollector
from splitdesk.ui.main_window import MainWindow
from splitdesk.ui.tasks import spawn
from splitdesk.ui.theme import THEMES, apply_theme

log = logging.getLogger(__name__)


@dataclass
class GuiOptions:
    """Command-line options of the window."""

    run: bool = False
    screenshot: Path | None = None
    quit: bool = False
    theme: str | None = None
    scale: float | None = None
    profile: str | None = None
    speed: float | None = None
    size: tuple[int, int] | None = None  #: window (width, height) in pixels, this session


def app_icon() -> QIcon:
    """The application icon (``resources/icons/splitdesk.svg``)."""
    with as_file(files("splitdesk.resources").joinpath("icons/splitdesk.svg")) as path:
        return QIcon(str(path))


def run_gui(opts: GuiOptions) -> int:
    """Show the window and run the Qt/asyncio loop until it is closed. Returns the exit
    status (1 when ``--run`` was asked and a request failed)."""
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("splitdesk")
    app.setOrganizationName("splitdesk")
    app.setDesktopFileName("splitdesk")
    settings, problem = load_settings()
    saved_endpoint = None
    if opts.profile or opts.speed:  # for this session only: the saved endpoint stays
        saved_endpoint = settings.endpoint
        endpoint = settings.endpoint.model_copy(
            update={
                "preset": "builtin",
                "model": "splitdesk-sim",
                "api": "openai-chat",
                "profile": opts.profile or settings.endpoint.profile,
                "speed": opts.speed or settings.endpoint.speed,
            }
        )
        settings = settings.model_copy(update={"endpoint": endpoint})
    theme = THEMES[opts.theme or settings.theme]
    scale = opts.scale or settings.font_scale
    apply_theme(app, theme, scale)
    icon = app_icon()
    app.setWindowIcon(icon)
    app.setQuitOnLastWindowClosed(False)  # the window closes itself once cleanup is done

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    collector = GuiGarbageCollector()
    controller = RunController()
    window = MainWindow(settings, controller, theme, scale, icon, saved_endpoint)
    if opts.size is not None:  # this session only: the saved size stays
        window.resize(*opts.size)
        window.remember_size = False
    if problem:
        window.statusBar().showMessage(problem)
    closed = asyncio.Event()
    window.closed.connect(closed.set)
    result: dict[str, int] = {"status": 0}

    def on_signal(*_: object) -> None:
        QTimer.singleShot(0, window.close)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    wake = QTimer()  # lets Python run its signal handlers while Qt waits
    wake.start(200)
    wake.timeout.connect(lambda: None)

    def finished(state: RunState) -> None:
        if any(r.outcome == "failed" for r in state.requests):
            result["status"] = 1
        if opts.screenshot is not None or opts.quit:
            spawn(after_run())

    async def after_run() -> None:
        await asyncio.sleep(0.4)  # the last frame paints
        if opts.screenshot is not None:
            image = window.grab().toImage()
            path = opts.screenshot
            # The format follows the file name (PySide6 rejects b"PNG", mypy rejects "PNG").
            ok = await asyncio.to_thread(lambda: image.save(str(path)))
            print(f"screenshot {'saved to' if ok else 'could not be saved to'} {path}", flush=True)
        if opts.quit:
            window.close()

    window.runFinished.connect(finished)
    window.show()
    QTimer.singleShot(0, controller.start_engine)  # ready before the first Run
    if opts.run:
        QTimer.singleShot(300, window.start_run)
    with loop:
        loop.run_until_complete(closed.wait())
    collector.stop()
    return result["status"]
