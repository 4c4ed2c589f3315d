"""The engine loop hands each token event to its sequence's ``prepare`` while the step
runs and the very same event to its ``sink`` at the step's end: the events the cost model
emits, nothing for a sequence cancelled in between."""

from __future__ import annotations

import asyncio

import pytest

from splitdesk.sim.params import SimParams
from splitdesk.sim.scheduler import LiveSequence, Scheduler, TokenEvent


class Recorder:
    """A stream that records what the engine gives it (``prepare`` / ``sink``)."""

    def __init__(self, live: LiveSequence) -> None:
        self.prepared: list[TokenEvent] = []
        self.sunk: list[TokenEvent] = []
        self.ended = asyncio.Event()
        live.prepare = self.prepared.append
        live.sink = self.sink

    def sink(self, event: TokenEvent) -> None:
        self.sunk.append(event)
        if event.done:
            self.ended.set()


async def until(event: asyncio.Event, what: str) -> None:
    try:
        await asyncio.wait_for(event.wait(), 10)
    except TimeoutError:
        raise AssertionError(f"no {what} within 10 s") from None


@pytest.mark.asyncio
async def test_each_event_is_prepared_during_its_step_and_sent_at_its_end() -> None:
    scheduler = Scheduler(SimParams(jitter=0, speed=8, tokens_per_step=2))  # ~2.2 ms steps
    scheduler.start()
    try:
        a = Recorder(scheduler.submit(10, 5))  # events of 2, 2, 1 tokens
        b_live = scheduler.submit(10, 40)
        b = Recorder(b_live)
        await until(a.ended, "last event of sequence a")
        assert [(e.tokens, e.done) for e in a.sunk] == [(2, False), (2, False), (1, True)]
        assert all(s is p for s, p in zip(a.sunk, a.prepared, strict=True))  # the same objects
        times = [e.scheduled_ns for e in a.sunk]
        assert times == sorted(set(times))  # one event per step, at the step's end
        scheduler.cancel(b_live)  # b's event of the step under way is prepared already
        sent = len(b.sunk)
        assert b.sunk == b.prepared[:sent] and len(b.prepared) == sent + 1
        c = Recorder(scheduler.submit(10, 1))  # joins once the step under way has ended
        await until(c.ended, "event of sequence c")
        assert len(b.sunk) == sent  # the cancelled sequence's prepared event was never sent
    finally:
        await scheduler.stop()
