"""Fire-and-forget coroutines on the GUI's qasync loop, kept alive until they finish.

asyncio only keeps weak references to tasks: one nobody holds may vanish mid-flight. And
an exception in a task nobody awaits would go unseen. :func:`spawn` keeps each task until
it is done and logs what it raised.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)
_RUNNING: set[asyncio.Task[Any]] = set()


def _done(task: asyncio.Task[Any]) -> None:
    _RUNNING.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s failed", task.get_name(), exc_info=task.exception())


def spawn(coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
    """Run ``coro`` as a task on the running loop; it is kept until done."""
    task = asyncio.ensure_future(coro)
    if name:
        task.set_name(name)
    _RUNNING.add(task)
    task.add_done_callback(_done)
    return task


def pending() -> int:
    """How many spawned tasks are still running."""
    return len(_RUNNING)
