"""Fixtures for window tests: an isolated settings folder and a real window whose
controller (engine thread, built-in endpoint child process) is shut down afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PySide6.QtWidgets import QApplication

from splitdesk.core.settings import AppSettings
from splitdesk.ui import tasks
from splitdesk.ui.controller import RunController
from splitdesk.ui.gc import GuiGarbageCollector
from splitdesk.ui.main_window import MainWindow
from splitdesk.ui.theme import DARK


@pytest.fixture(autouse=True)
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings and auto-saved recordings go to a temporary folder, never the user's."""
    folder = tmp_path / "config"
    monkeypatch.setenv("SPLITDESK_CONFIG_DIR", str(folder))
    monkeypatch.setenv("SPLITDESK_DATA_DIR", str(tmp_path / "data"))  # auto-saved runs
    return folder


async def wait_signal(signal: Any, timeout: float = 10.0) -> tuple[Any, ...]:
    """Await the next emission of a Qt signal (qtbot.waitSignal must not run inside an
    async test: it nests a Qt loop under the running task)."""
    fut: asyncio.Future[tuple[Any, ...]] = asyncio.get_running_loop().create_future()

    def handler(*args: Any) -> None:
        if not fut.done():
            fut.set_result(args)

    signal.connect(handler)
    try:
        return await asyncio.wait_for(fut, timeout)
    finally:
        signal.disconnect(handler)


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``predicate`` on the running loop until it holds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


@pytest_asyncio.fixture
async def make_window(qtbot: Any) -> AsyncIterator[Callable[..., MainWindow]]:
    """Build windows with given settings; each is closed (runs stopped, endpoint process
    stopped) at the end of the test."""
    made: list[MainWindow] = []
    QApplication.instance().setQuitOnLastWindowClosed(False)  # as in splitdesk.app
    collector = GuiGarbageCollector()  # as in splitdesk.app

    def make(settings: AppSettings, **options: Any) -> MainWindow:
        controller = RunController()
        window = MainWindow(settings, controller, DARK, 1.0, **options)
        window.resize(1400, 900)
        window.show()
        made.append(window)
        return window

    yield make
    for window in made:
        if not window._closed:
            window.close()
            await wait_signal(window.closed, 10)
    # Closed windows leave nothing running: no task, no engine thread, no child process.
    await wait_until(lambda: tasks.pending() == 0, 5)
    here = asyncio.current_task()
    left = [
        t
        for t in asyncio.all_tasks()
        if t is not here and type(t.get_coro()).__name__ != "async_generator_athrow"
    ]
    assert not left, f"tasks left after closing the window: {left}"
    for window in made:
        assert not window.controller.engine.alive
        assert window.controller.sim is None
        window.deleteLater()
    collector.stop()
