"""Run the measuring engine on its own thread, away from the GUI's event loop.

Painting dozens of panes on the GUI thread delays whatever else runs on that thread's
loop by several milliseconds at times; timestamps taken there would carry that delay.
So a window runs its network work on an :class:`EngineThread`: a daemon thread with its
own asyncio loop, where the runner stamps every read the moment it arrives. Events cross
to the GUI through a ``collections.deque`` (appends and pops are atomic) that the GUI
drains on a timer — no Qt signal is emitted from the foreign thread (PySide6 signals from
non-Qt threads have crashed in 6.8+).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from splitdesk.core.events import RunEvent
from splitdesk.core.plans import RunPlan
from splitdesk.core.runner import RunConfig, Runner

T = TypeVar("T")

#: GIL switch interval while an engine thread runs (s): the engine thread waits at most
#: this long for the GUI thread's Python code to let it stamp an arrival (default 5 ms).
SWITCH_INTERVAL_S = 0.0005


class EngineThread:
    """A daemon thread running a private asyncio loop. Thread-safe API."""

    def __init__(self, name: str = "splitdesk-engine") -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._previous_interval = sys.getswitchinterval()
        self._thread.start()
        self._ready.wait()
        sys.setswitchinterval(SWITCH_INTERVAL_S)

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        self._loop.run_forever()
        # Stopped: finish what is pending, then close.
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the engine loop; returns a thread-safe future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call(self, fn: Callable[[], Any]) -> None:
        """Call ``fn()`` on the engine loop's thread, soon."""
        self._loop.call_soon_threadsafe(fn)

    def stop(self, timeout: float = 2.0) -> None:
        """Cancel everything still running and end the thread (waits up to ``timeout`` s).
        Idempotent."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
        sys.setswitchinterval(self._previous_interval)


class LiveRun:
    """One run executing on an :class:`EngineThread`.

    The runner appends each event to :attr:`events` on the engine thread; the owner calls
    :meth:`drain` from its own thread to take them in order. :meth:`cancel` is thread-safe.
    """

    def __init__(
        self, engine: EngineThread, config: RunConfig, questions: list[str], plan: RunPlan
    ) -> None:
        self.events: collections.deque[RunEvent] = collections.deque()
        self.runner = Runner(config, self.events.append)
        self._engine = engine
        self.future = engine.submit(self.runner.run(questions, plan))

    def drain(self, limit: int | None = None) -> list[RunEvent]:
        """Events that arrived since the last call (at most ``limit``), oldest first."""
        out: list[RunEvent] = []
        pop = self.events.popleft
        try:
            while limit is None or len(out) < limit:
                out.append(pop())
        except IndexError:
            pass
        return out

    @property
    def done(self) -> bool:
        """True once the run has ended and every event is in :attr:`events`."""
        return self.future.done()

    def cancel(self) -> None:
        """Stop the run (its streams end as ``stopped``, partial text kept)."""
        self._engine.call(self.runner.cancel)
