"""The built-in endpoint's schedule slip: time its engine loop fell behind the cost model's
schedule and never made up, which a measured wall time contains and a prediction does not
(tests/starved.py relies on it)."""

from __future__ import annotations

import asyncio
import time

import pytest

from splitdesk.sim.params import SimParams
from splitdesk.sim.scheduler import Scheduler


async def run_one(scheduler: Scheduler, tokens: int, block_s: float) -> None:
    """Decode one ``tokens``-token sequence; after its 3rd event block the loop ``block_s``."""
    live = scheduler.submit(10, tokens)
    seen = 0
    while True:
        ev = await asyncio.wait_for(live.queue.get(), 10)  # one token event per step
        seen += 1
        if seen == 3 and block_s:
            time.sleep(block_s)  # noqa: ASYNC251 - the starved CPU this test stands for
        if ev.done:
            return


@pytest.mark.asyncio
async def test_a_blocked_loop_counts_the_time_it_lost() -> None:
    scheduler = Scheduler(SimParams(jitter=0, speed=4))  # 20 steps of ~4.3 ms: ~86 ms
    scheduler.start()
    try:
        before = scheduler.slipped_ns / 1e9
        t0 = time.perf_counter()
        await run_one(scheduler, 20, 0.3)  # 300 ms without the CPU, mid-answer
        wall = time.perf_counter() - t0
        starved = scheduler.slipped_ns / 1e9 - before
    finally:
        await scheduler.stop()
    # every blocked millisecond is slip but the one ~4.35 ms step it overlapped; and slip is
    # time lost against the schedule, so it cannot exceed the run's wall time minus the
    # model's ~86 ms of steps (whatever else the machine was doing: holds under load too)
    assert 0.3 - 0.0044 <= starved <= wall - 0.08, (starved, wall)
