"""Fire-and-forget coroutines on the GUI's qasync loop, kept alive until they finish.

asyncio only keeps weak references to tasks: one nobody holds may vanish mid-flight. And
an exception in a task nobody awaits would go unseen. :func:`spawn` keeps each task until
it is done and logs what it raised; :func:`task_slot` makes a coroutine method a Qt slot
whose tasks are spawned (so tracked); :func:`cancel_pending` cancels and awaits them all
when the window closes, so none is destroyed while pending.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)
#: Name prefix of the tasks :func:`task_slot` starts (the ones closing may cancel).
SLOT_PREFIX = "slot:"
_RUNNING: set[asyncio.Task[Any]] = set()


def _done(task: asyncio.Task[Any]) -> None:
    _RUNNING.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s failed", task.get_name(), exc_info=task.exception())


def spawn(
    coro: Coroutine[Any, Any, Any], name: str | None = None, ends_with_window: bool = False
) -> asyncio.Task[Any]:
    """Run ``coro`` as a task on the running loop; it is kept until done.
    ``ends_with_window``: work the window owns and must end when it closes (an animation
    export, a sweep, repeats): :func:`cancel_pending` cancels it with the slots' tasks, so
    it ends (its writer aborted, no partial file, no child process) before the window goes."""
    task = asyncio.ensure_future(coro)
    if ends_with_window:
        name = SLOT_PREFIX + (name or str(getattr(coro, "__qualname__", "window work")))
    if name:
        task.set_name(name)
    _RUNNING.add(task)
    task.add_done_callback(_done)
    return task


def pending() -> int:
    """How many spawned tasks are still running."""
    return len(_RUNNING)


def task_slot(fn: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., None]:
    """Decorator: a coroutine method becomes a plain Qt slot that :func:`spawn`s it (extra
    signal arguments, such as ``clicked``'s ``checked``, are dropped as Qt would). Use it
    instead of ``qasync.asyncSlot``, whose tasks nobody tracks."""
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    keep = len(params)

    @functools.wraps(fn)
    def slot(*args: Any) -> None:
        spawn(fn(*args[:keep]), name=SLOT_PREFIX + fn.__qualname__)

    return slot


async def cancel_pending(within: float = 1.0) -> int:
    """When the window closes: cancel the tasks started from slots (:func:`task_slot`, and
    :func:`spawn`'s ``ends_with_window`` work) and wait up to ``within`` s for them to end. Other spawned tasks (a save, an autosave, the
    prediction the controller cancels itself) are left to their owners. The calling task
    is left alone. Returns how many were cancelled."""
    here = asyncio.current_task()
    slots = [
        t
        for t in _RUNNING
        if t is not here and not t.done() and t.get_name().startswith(SLOT_PREFIX)
    ]
    for task in slots:
        task.cancel()
    if slots:
        await asyncio.wait(slots, timeout=within)
    return len(slots)
