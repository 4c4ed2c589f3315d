"""Fixtures for window tests: an isolated settings folder and a real window whose
controller (engine thread, built-in endpoint child process) is shut down afterwards."""

from __future__ import annotations

import asyncio
import gc
import inspect
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PySide6.QtWidgets import QApplication

from splitdesk.core.files.settings import AppSettings
from splitdesk.ui.common import tasks
from splitdesk.ui.common.gc import GuiGarbageCollector
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.run.controller import RunController
from splitdesk.ui.shell.main_window import MainWindow


async def tasks_left() -> list[asyncio.Task[Any]]:
    """The asyncio tasks still running once every spawned task has ended (waited for up to
    10 s): none, when the closed windows left nothing behind. A fixture that closes its
    windows checks this before the test's loop is closed — a task left to the loop's own
    cancel-everything at its close could wait for ever (qasync's loop then never stops)."""
    await wait_until(lambda: tasks.pending() == 0, 10, "every spawned task has ended")
    here = asyncio.current_task()
    return [
        t
        for t in asyncio.all_tasks()
        if t is not here and type(t.get_coro()).__name__ != "async_generator_athrow"
    ]


@pytest.fixture(autouse=True)
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings and auto-saved recordings go to a temporary folder, never the user's."""
    folder = tmp_path / "config"
    monkeypatch.setenv("SPLITDESK_CONFIG_DIR", str(folder))
    monkeypatch.setenv("SPLITDESK_DATA_DIR", str(tmp_path / "data"))  # auto-saved runs
    return folder


def _signal_name(signal: Any) -> str:
    """``runFinished`` from ``<PySide6.QtCore.SignalInstance runFinished(PyObject) at …>``."""
    text = str(signal)
    return text.split(" ")[1].split("(")[0] if text.count(" ") >= 2 else text


async def wait_signal(signal: Any, timeout: float = 10.0, what: str = "") -> tuple[Any, ...]:
    """Await the next emission of a Qt signal (qtbot.waitSignal must not run inside an
    async test: it nests a Qt loop under the running task). On a timeout the failure names
    the signal and ``what`` it stood for."""
    fut: asyncio.Future[tuple[Any, ...]] = asyncio.get_running_loop().create_future()

    def handler(*args: Any) -> None:
        if not fut.done():
            fut.set_result(args)

    signal.connect(handler)
    try:
        return await asyncio.wait_for(fut, timeout)
    except TimeoutError:
        about = f" ({what})" if what else ""
        raise AssertionError(
            f"timed out after {timeout:g} s waiting for the signal {_signal_name(signal)}{about}"
        ) from None
    finally:
        signal.disconnect(handler)


def _describe(predicate: Callable[..., Any]) -> str:
    """The source of a lambda predicate, on one line (for a timeout's message)."""
    try:
        text = " ".join(inspect.getsource(predicate).split())
    except (OSError, TypeError):
        return getattr(predicate, "__qualname__", repr(predicate))
    start = text.find("lambda")
    return text[start:] if start >= 0 else text


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    """Poll ``predicate`` on the running loop until it holds; on a timeout the failure
    names ``what`` was awaited (or the predicate's source)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError(
                f"timed out after {timeout:g} s waiting until {what or _describe(predicate)}"
            )
        await asyncio.sleep(0.01)


@pytest_asyncio.fixture
async def make_window(qtbot: Any) -> AsyncIterator[Callable[..., MainWindow]]:
    """Build windows with given settings; each is closed (runs stopped, endpoint process
    stopped) at the end of the test."""
    made: list[MainWindow] = []
    QApplication.instance().setQuitOnLastWindowClosed(False)  # as in splitdesk.app
    collector = GuiGarbageCollector()  # as in splitdesk.app

    def make(settings: AppSettings, scale: float = 1.0, **options: Any) -> MainWindow:
        controller = RunController()
        window = MainWindow(settings, controller, DARK, scale, **options)
        window.resize(1400, 900)
        window.show()
        made.append(window)
        # As in splitdesk.app (freeze_built_window): what is alive once the window is built
        # stays out of the collector's scans. Here that is also the test worker's heap —
        # ~500,000 objects late in a run, whose every full collection paused the GUI loop
        # for 0.2-0.5 s (which the app, frozen, never does). Without the app's collection
        # first: the collector's stop below unfreezes and collects.
        gc.freeze()
        return window

    yield make
    for window in made:
        if not window._closed:
            window.close()
            await wait_signal(window.closed, 30, "the window closed at the end of the test")
    # Closed windows leave nothing running: no task, no engine thread, no child process.
    left = await tasks_left()
    assert not left, f"tasks left after closing the window: {left}"
    for window in made:
        assert not window.controller.engine.alive
        assert window.controller.sim is None
        window.deleteLater()
    collector.stop()
