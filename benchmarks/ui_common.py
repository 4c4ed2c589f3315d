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


async def run_to_end(controller: Any, start: Awaitable[Any], timeout: float) -> None:
    """Await ``start`` (the controller's ``start(request)``), then the controller's
    ``runFinished`` signal — without polling, so waiting adds nothing to the window's CPU
    time. ``TimeoutError`` names what it waited for."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finished(_state: object) -> None:
        if not done.done():
            done.set_result(None)

    controller.runFinished.connect(finished)
    try:
        await start
        try:
            await asyncio.wait_for(done, timeout)
        except TimeoutError:
            raise TimeoutError(f"the run did not finish within {timeout:g} s") from None
    finally:
        controller.runFinished.disconnect(finished)
