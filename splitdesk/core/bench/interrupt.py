"""Ctrl-C in a headless session (``splitdesk bench``, ``splitdesk sweep``): stop at once,
keep what finished.

The first SIGINT (or SIGTERM) cancels the run under way — its streams end ``stopped`` with
the text that arrived, as the window's Stop does — and no further run, prediction or pause
starts; the caller then writes its table and JSON of every run so far and exits 130.
A second SIGINT is Python's own ``KeyboardInterrupt``, for a session stuck somewhere no
cancel reaches. asyncio's default handling was not enough: it cancels the main task, and
the runner (which turns a cancel into ``stopped`` streams by design) swallowed that, so the
session carried on with its next run and Ctrl-C looked ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

from splitdesk.core.measure.runner import Runner

T = TypeVar("T")


class Interrupt:
    """The stop request of one headless session (module docstring). :meth:`requested` is
    true after the first Ctrl-C; :meth:`run` runs a :class:`Runner` so that Ctrl-C cancels it;
    :meth:`sleep` and :meth:`wait` end early on Ctrl-C."""

    def __init__(self) -> None:
        self._requested = False
        self._runner: Runner | None = None
        self._event: asyncio.Event | None = None
        self._installed: list[int] = []

    def requested(self) -> bool:
        """Ctrl-C came: start nothing more (a method, not an attribute: it changes while a
        caller awaits)."""
        return self._requested

    def install(self) -> None:
        """Handle SIGINT and SIGTERM on the running loop (main thread only; elsewhere,
        e.g. a test calling bench from a worker thread, Python's defaults stay)."""
        loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self.stop)
            except (RuntimeError, ValueError, NotImplementedError):
                # not the main thread (ValueError), a loop without signal support
                # (NotImplementedError: Windows' proactor) or one closing: Python's own
                # handling stays for this signal, as the docstring says
                continue
            self._installed.append(sig)

    def uninstall(self) -> None:
        """Give the signals back to Python's defaults."""
        with contextlib.suppress(RuntimeError):
            loop = asyncio.get_running_loop()
            for sig in self._installed:
                loop.remove_signal_handler(sig)
        self._installed = []

    def stop(self) -> None:
        """Stop the session now (what the first Ctrl-C does); the next Ctrl-C raises
        ``KeyboardInterrupt``."""
        self._requested = True
        if self._event is not None:
            self._event.set()
        if self._runner is not None:
            self._runner.cancel()
        self.uninstall()  # a second Ctrl-C: Python's KeyboardInterrupt

    async def run(self, runner: Runner, go: Callable[[], Awaitable[None]]) -> None:
        """Await ``go()`` (``runner.run(…)``) with Ctrl-C cancelling ``runner``; a stop
        requested before it began cancels it at once (it then ends every request
        ``stopped`` without sending)."""
        self._runner = runner
        if self._requested:
            runner.cancel()
        try:
            await go()
        finally:
            self._runner = None

    async def wait(self, step: Awaitable[T]) -> T | None:
        """Await ``step`` (a prediction, a measurement between runs) unless Ctrl-C comes
        first, which cancels it and returns ``None``."""
        if self._requested:
            if asyncio.iscoroutine(step):
                step.close()
            return None
        task = asyncio.ensure_future(step)
        if self._event is None:
            return await task
        stopped = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait([task, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``, ending early on Ctrl-C."""
        await self.wait(asyncio.sleep(seconds))
