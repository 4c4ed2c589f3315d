"""Small helpers for the window benchmarks (not a benchmark itself)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_for(predicate: Callable[[], bool], timeout: float) -> None:
    """Poll ``predicate`` on the running loop until it holds; ``TimeoutError`` otherwise."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.02)
