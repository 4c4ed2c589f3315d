"""Test-suite wiring: one Qt binding, offscreen Qt, qasync loops for GUI tests, and leak
checks that fail a test leaving asyncio tasks, threads, open httpx clients or child
processes behind (napari's conftest does the same for QThreads and timers)."""

from __future__ import annotations

import os
import tempfile

# Before anything imports Qt: one binding everywhere, and no screen needed.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Runs auto-saved as recordings go to a throwaway folder, never the user's data folder.
os.environ.setdefault("SPLITDESK_DATA_DIR", tempfile.mkdtemp(prefix="splitdesk-data-"))
os.environ["QT_API"] = "pyside6"
os.environ["PYQTGRAPH_QT_LIB"] = "PySide6"
# Log files of apps started by tests go to a throwaway folder, never the user's.
os.environ.setdefault("SPLITDESK_LOG_DIR", tempfile.mkdtemp(prefix="splitdesk-logs-"))

import asyncio
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent

# -- which tests are GUI tests --------------------------------------------------------------

_GUI_FIXTURES = {"qtbot", "qapp", "qloop", "window"}


def _is_gui(item: Any) -> bool:
    path = Path(str(getattr(item, "path", getattr(item, "fspath", ""))))
    names = set(getattr(item, "fixturenames", ()))
    return "ui" in path.parts or bool(names & _GUI_FIXTURES)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that needs a QApplication as ``gui`` (``pytest -m "not gui"`` skips
    them), like qutebrowser's conftest."""
    for item in items:
        if _is_gui(item):
            item.add_marker(pytest.mark.gui)


# -- event loops -------------------------------------------------------------------------------

_LOOPS: list[weakref.ref[asyncio.AbstractEventLoop]] = []


def _plain_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    _LOOPS.append(weakref.ref(loop))
    return loop


def _qasync_loop() -> asyncio.AbstractEventLoop:
    import qasync
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    loop: asyncio.AbstractEventLoop = qasync.QEventLoop(app)
    _LOOPS.append(weakref.ref(loop))
    return loop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: Any
) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Async GUI tests run on a qasync loop (Qt and asyncio share it); the others on a plain
    asyncio loop."""
    if _is_gui(item):
        return {"qasync": _qasync_loop}
    return {"asyncio": _plain_loop}


# -- leak checks -------------------------------------------------------------------------------

_CLIENTS: weakref.WeakSet[httpx.AsyncClient] = weakref.WeakSet()
_orig_init = httpx.AsyncClient.__init__


def _tracking_init(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
    _orig_init(self, *args, **kwargs)
    _CLIENTS.add(self)


httpx.AsyncClient.__init__ = _tracking_init  # type: ignore[method-assign]


def child_pids() -> set[int]:
    """Pids of this process's live (non-zombie) children (Linux /proc)."""
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            text = (task / "children").read_text()
        except OSError:
            continue
        for pid in text.split():
            try:
                state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
            except OSError:
                continue
            if state != "Z":
                pids.add(int(pid))
    return pids


def pending_tasks() -> list[asyncio.Task[Any]]:
    """Tasks not done on the test loops, except asyncgen finalizers: asyncio schedules an
    ``aclose()`` task for every async generator dropped unfinished, and httpx nests such
    generators inside every streamed response (``aiter_bytes`` → ``aiter_raw``)."""
    out: list[asyncio.Task[Any]] = []
    for ref in list(_LOOPS):
        loop = ref()
        if loop is None or loop.is_closed():
            continue
        for task in asyncio.all_tasks(loop):
            name = type(task.get_coro()).__name__
            if not task.done() and name not in ("async_generator_athrow", "async_generator_asend"):
                out.append(task)
    return out


_BASELINE = pytest.StashKey[tuple[set[threading.Thread], set[int]]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail the test if its body left asyncio tasks or httpx clients open; remember the
    threads and child processes alive before it (fixtures' own are not its leaks)."""
    item.stash[_BASELINE] = (set(threading.enumerate()), child_pids())
    clients_before = set(_CLIENTS)
    tasks_before = set(pending_tasks())
    yield  # a failing test raises here: its own failure is reported, not leaks
    if item.get_closest_marker("gui"):
        return  # windows own their tasks until they close: tests/ui/conftest.py checks then
    problems: list[str] = []
    clients = [c for c in _CLIENTS if c not in clients_before and not c.is_closed]
    if clients:
        problems.append(f"{len(clients)} httpx.AsyncClient(s) left open")
    tasks = [t for t in pending_tasks() if t not in tasks_before]
    if tasks:
        problems.append(f"asyncio tasks left pending: {[t.get_coro() for t in tasks][:5]}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the test's fixtures are gone (its event loop closed): fail if threads or child
    processes it started are still running."""
    yield
    if _BASELINE not in item.stash:
        return
    threads_before, children_before = item.stash[_BASELINE]
    deadline = time.monotonic() + 2.0
    while True:
        threads = [
            t
            for t in threading.enumerate()
            if t not in threads_before
            and t.is_alive()
            and not isinstance(t, threading._DummyThread)
        ]  # dummies are Qt's own threads (qasync's executor) seen from Python: never removed
        children = child_pids() - children_before
        if (not threads and not children) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    problems = []
    if threads:
        problems.append(f"threads left running: {[t.name for t in threads]}")
    if children:
        problems.append(f"child processes left running: {sorted(children)}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


# -- shared fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The real-world stream shapes (``shared/fixtures/streams`` copied into the repo)."""
    return ROOT / "tests" / "fixtures" / "streams"


def _sim(profile: str, **overrides: Any) -> Iterator[Any]:
    from splitdesk.sim.launcher import start_sim

    sim = start_sim(profile, overrides)
    try:
        yield sim
    finally:
        sim.stop()


@pytest.fixture(scope="session")
def sim_batching() -> Iterator[Any]:
    """A built-in endpoint child process, ``batching`` profile, 4× speed (session-wide)."""
    yield from _sim("batching", speed=4)


@pytest.fixture(scope="session")
def sim_single_slot() -> Iterator[Any]:
    """``single-slot`` profile, 4× speed."""
    yield from _sim("single-slot", speed=4)


@pytest.fixture(scope="session")
def sim_rate_limited() -> Iterator[Any]:
    """``rate-limited`` profile, 4× speed."""
    yield from _sim("rate-limited", speed=4)
