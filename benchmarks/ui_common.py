"""Small helpers for the window benchmarks (not a benchmark itself)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any


async def wait_for(predicate: Callable[[], bool], timeout: float) -> None:
    """Poll ``predicate`` on the running loop until it holds; ``TimeoutError`` otherwise."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.02)


async def run_to_end(source: Any, start: Awaitable[Any], timeout: float) -> Any:
    """Await ``start`` (a controller's ``start(request)``, or a click on Run), then the
    ``runFinished`` signal of ``source`` (a controller or a window) — without polling, so
    waiting adds nothing to the window's CPU time. Returns the finished run's state;
    ``TimeoutError`` names what it waited for."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def finished(state: object) -> None:
        if not done.done():
            done.set_result(state)

    source.runFinished.connect(finished)
    try:
        await start
        try:
            return await asyncio.wait_for(done, timeout)
        except TimeoutError:
            raise TimeoutError(f"the run did not finish within {timeout:g} s") from None
    finally:
        source.runFinished.disconnect(finished)
