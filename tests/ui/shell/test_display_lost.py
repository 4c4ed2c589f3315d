"""When the display goes away under a running window (the X server killed), Qt says the
connection broke and ends the event loop before the window has closed. The app then
prints one line, stops its child processes and exits with status 1 — no traceback, no
crash dialog (there is no display to show it on).

Killing a real X server is what `xvfb-run -a splitdesk` then `kill <Xvfb>` does by hand;
here Qt's own part is played by the app's Qt message handler receiving xcb's message and
``QApplication.exit(1)``, which is what xcb does when its connection breaks."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import qasync
from PySide6.QtCore import QTimer, QtMsgType, Signal
from PySide6.QtWidgets import QApplication, QMainWindow

from splitdesk import app
from splitdesk.ui.run.controller import RunController

XCB_BROKE = "The X11 connection broke (error 1). Did the X11 server die?"


class Window(QMainWindow):
    """A shown window that emits ``closed`` once its cleanup is done, as MainWindow does
    (that cleanup never runs here: the loop ends first)."""

    closed = Signal()


def live_children() -> set[int]:
    """Pids of this process's children that are still running (not zombies)."""
    pids = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            listed = (task / "children").read_text().split()
        except OSError:  # a thread that ended since the listing
            continue
        for pid in listed:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                pids.add(int(pid))
    return pids


def test_a_lost_display_is_one_line_a_quiet_exit_and_no_children_left(
    qapp: QApplication,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SPLITDESK_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("SPLITDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(app, "_broken_connections", [])
    qapp.setQuitOnLastWindowClosed(False)  # as in splitdesk.app
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    controller = RunController()
    window = Window()
    before = live_children()
    seen: dict[str, Any] = {}

    async def lose_the_display_once_the_engine_is_up() -> None:
        try:
            await asyncio.wait_for(controller.start_engine(), 30)
            seen["children"] = live_children() - before
        except BaseException as exc:  # said below; the loop must end either way
            seen["error"] = f"the engine did not start within 30 s: {exc!r}"
        # what Qt's xcb plugin does when its connection breaks
        app.qt_message_handler(QtMsgType.QtWarningMsg, None, XCB_BROKE)  # type: ignore[arg-type]
        QApplication.exit(1)

    try:
        window.show()
        QTimer.singleShot(0, lambda: loop.create_task(lose_the_display_once_the_engine_is_up()))
        with loop:
            assert app.run_until_closed(loop, window.closed, controller) is False
        assert "error" not in seen, seen["error"]
        assert seen["children"], "the engine process was running when the display went"
        out, err = capsys.readouterr()
        assert err == app.DISPLAY_LOST + "\n" and out == ""
        assert err.startswith("splitdesk: the display connection was lost")
        assert "Traceback" not in err and not controller.engine.alive and controller.sim is None
        assert not (seen["children"] & live_children()), "child processes left running"
    finally:
        asyncio.set_event_loop(None)
        window.close()
        window.deleteLater()
