"""The engine loop hands each token event to its sequence's ``prepare`` while the step
runs and the very same event to its ``sink`` at the step's end: the events the cost model
emits, nothing for a sequence cancelled in between. Bytes a ``prepare`` hands back are
written by the loop itself at the step's end, before any sink runs."""

from __future__ import annotations

import asyncio
import time

import pytest

from splitdesk.sim.params import SimParams
from splitdesk.sim.scheduler import LiveSequence, Prepared, Scheduler, TokenEvent


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


class Wire:
    """A connection a prepared event is written to: what was written, and when."""

    def __init__(self, closing: bool = False) -> None:
        self.closing = closing
        self.written: list[tuple[bytes, int]] = []

    def write(self, data: bytes) -> None:
        self.written.append((data, time.perf_counter_ns()))

    def is_closing(self) -> bool:
        return self.closing


class Writing(Recorder):
    """A stream whose ``prepare`` hands the engine loop its bytes to write (the short path)."""

    def __init__(self, live: LiveSequence, wire: Wire) -> None:
        super().__init__(live)
        self.wire = wire
        self.handed: list[Prepared] = []
        self.at_sink: list[int] = []  # how many writes the wire had when the sink was called
        live.prepare = self.prepare

    def prepare(self, event: TokenEvent) -> Prepared:
        self.prepared.append(event)
        prepared = Prepared(self.wire, b"event %d" % len(self.prepared))
        self.handed.append(prepared)
        return prepared

    def sink(self, event: TokenEvent) -> None:
        self.at_sink.append(len(self.wire.written))
        super().sink(event)


@pytest.mark.asyncio
async def test_prepared_bytes_are_written_by_the_loop_at_the_step_end_then_sunk() -> None:
    scheduler = Scheduler(SimParams(jitter=0, speed=8, tokens_per_step=2))  # ~2.2 ms steps
    scheduler.start()
    try:
        wire = Wire()
        a = Writing(scheduler.submit(10, 5), wire)  # events of 2, 2, 1 tokens
        closed = Writing(scheduler.submit(10, 5), Wire(closing=True))
        b_live = scheduler.submit(10, 40)
        b = Writing(b_live, Wire())
        await until(a.ended, "last event of sequence a")
        assert [data for data, _ in wire.written] == [b"event 1", b"event 2", b"event 3"]
        assert a.at_sink == [1, 2, 3]  # each event's bytes were written before its sink ran
        for event, prepared, (_, written_ns) in zip(a.sunk, a.handed, wire.written, strict=True):
            # written at the step's end, never before; stamped as the write returned
            assert event.scheduled_ns <= written_ns <= prepared.sent_ns
        assert closed.wire.written == [] and all(p.sent_ns == 0 for p in closed.handed)
        assert len(closed.sunk) == 3  # the sink still hears of each event (and ends the stream)
        scheduler.cancel(b_live)  # b's event of the step under way is prepared already
        sent = len(b.wire.written)
        c = Recorder(scheduler.submit(10, 1))  # joins once the step under way has ended
        await until(c.ended, "event of sequence c")
        assert len(b.handed) == sent + 1 and len(b.wire.written) == sent  # never written
        assert b.handed[-1].sent_ns == 0
    finally:
        await scheduler.stop()
