"""The live engine loop of the built-in endpoint: the cost model driven by the wall clock.

One asyncio task runs :class:`~splitdesk.sim.costmodel.BatchEngine` steps back to back.
Each step is scheduled from the previous step's *scheduled* end (not from when the loop
happened to wake up), so lateness does not accumulate; a step's token events are handed
to each sequence's queue at the step's end. A stream that prepared its event's bytes
(:class:`Prepared`) has them written by this loop first, all streams' writes back to back
as the step ends, before any bookkeeping. Times are ``time.perf_counter_ns()``: on Linux
that is ``CLOCK_MONOTONIC``, shared by every process on the machine, so a client in
another process can compare its arrival times with these.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from splitdesk.sim.costmodel import BatchEngine, Sequence, Step
from splitdesk.sim.params import SimParams

# When the loop falls this far behind the schedule (an overloaded machine), restart the
# schedule from now instead of emitting a burst of overdue steps.
_RESYNC_NS = 50_000_000
# The event loop's timers are only millisecond-precise (epoll): sleep until this close to
# a step's end, then yield to the loop until it is due.
_SPIN_NS = 1_200_000
# ... but of that last stretch, sleep the thread itself (a precise kernel timer, no CPU)
# until this close to the step's end, and yield to the loop only for the rest: requests
# that arrived meanwhile are still read before the step ends. Spinning the whole 1.2 ms
# cost a core 4-7 % at 17-30 ms steps, taken from the machine it measures.
_LOOP_NS = 200_000

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenEvent:
    """Tokens a sequence emitted at the end of a step.

    ``tokens``: how many (``tokens_per_step`` or fewer at the end); ``scheduled_ns``: the
    step's scheduled end (perf_counter_ns); ``done``: this was the sequence's last event.
    """

    tokens: int
    scheduled_ns: int
    done: bool


class Writer(Protocol):
    """Where a prepared event's bytes go (an :class:`asyncio.Transport` is one)."""

    def write(self, data: bytes) -> None:
        """Write ``data`` without blocking."""

    def is_closing(self) -> bool:
        """The connection is closed or closing: nothing more is written."""


@dataclass(eq=False, slots=True)
class Prepared:
    """An event's bytes, ready for the engine loop to write at the step's end.

    ``sent_ns``: set by the loop to ``perf_counter_ns()`` as the write returned (the
    bytes are in the kernel's hands), or left 0 when ``writer`` was closing (not written).
    """

    writer: Writer
    data: bytes
    sent_ns: int = 0


@dataclass(eq=False)
class LiveSequence:
    """A request inside the live engine. Its :class:`TokenEvent` s go to ``sink`` when one
    is set (called synchronously at the step's end: it must not block), else to ``queue``.

    ``prepare``, when set, is called with each event as soon as its step is planned, while
    the step's time runs: the work that does not depend on the moment (formatting the
    event's bytes) is done then. When it returns a :class:`Prepared`, the loop writes its
    bytes itself at the step's end, with every other stream's, before calling any sink.
    The same :class:`TokenEvent` object then goes to ``sink``, unless the sequence was
    cancelled in between (then nothing is written either).
    """

    seq: Sequence
    queue: asyncio.Queue[TokenEvent] = field(default_factory=asyncio.Queue)
    sink: Callable[[TokenEvent], None] | None = None
    prepare: Callable[[TokenEvent], Prepared | None] | None = None
    #: when the step that admitted it into the batch began (perf_counter_ns; 0: waiting)
    admitted_ns: int = 0
    #: leading prompt tokens it may cache or read (Anthropic: up to its last breakpoint)
    cacheable: int = 0


class Scheduler:
    """Continuous-batching engine loop for one server process.

    :meth:`submit` a sequence, then read ``queue``; :meth:`cancel` frees its slot at once
    (the client went away). Start with :meth:`start` inside the server's event loop and
    stop with :meth:`stop`.
    """

    def __init__(self, params: SimParams) -> None:
        self.params = params
        self.engine = BatchEngine(params)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._keys = itertools.count()
        self._live: dict[int, LiveSequence] = {}
        #: Nanoseconds the loop fell behind the cost model's schedule and never made up
        #: (a CPU-starved process): schedule restarts after a late wake-up, and the lateness
        #: of a last step before the engine went idle. Cumulative since start; served as
        #: ``schedule_slip_s`` by ``/_splitdesk/info`` so a measurement can tell whether the
        #: endpoint kept the schedule it was compared with.
        self.slipped_ns = 0
        self._last_late_ns = 0

    def start(self) -> None:
        """Start the engine task on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="sim-engine")

    async def stop(self) -> None:
        """Stop the engine task."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @property
    def running(self) -> int:
        """Sequences decoding now."""
        return len(self.engine.running)

    @property
    def waiting(self) -> int:
        """Sequences queued for a slot."""
        return len(self.engine.waiting)

    def submit(
        self, prompt_tokens: int, output_tokens: int, blocks: tuple[bytes, ...] = ()
    ) -> LiveSequence:
        """Queue a sequence; it joins the batch at the next step boundary with a free slot
        and room in the step's token budget. ``blocks``: its cacheable prompt blocks' names
        (:func:`splitdesk.sim.prefix_cache.block_hashes`)."""
        live = LiveSequence(Sequence(next(self._keys), prompt_tokens, output_tokens, blocks=blocks))
        self._live[live.seq.key] = live
        self.engine.add(live.seq)
        self._wake.set()
        return live

    def cancel(self, live: LiveSequence) -> None:
        """Remove ``live`` from the engine (no-op when it already finished)."""
        self.engine.cancel(live.seq)
        self._live.pop(live.seq.key, None)

    def _prepare(
        self, step: Step, deadline: int
    ) -> tuple[dict[int, TokenEvent], list[tuple[int, Prepared]]]:
        """The event each live sequence of ``step`` will emit at ``deadline`` (what
        :meth:`BatchEngine.finish_step` will say for it: nothing but a step's end changes a
        sequence's count), handed to its ``prepare`` now, while the step's time runs; and
        the writes prepared for them, by sequence key."""
        per_step = self.engine.params.tokens_per_step
        upcoming: dict[int, TokenEvent] = {}
        writes: list[tuple[int, Prepared]] = []
        for seq in step.running:
            live = self._live.get(seq.key)
            if live is None:
                continue
            n = min(per_step, seq.remaining)
            event = upcoming[seq.key] = TokenEvent(n, deadline, seq.remaining == n)
            if live.prepare is not None:
                try:
                    prepared = live.prepare(event)
                except Exception:  # one broken stream must not stop the engine
                    log.exception("token prepare failed")
                else:
                    if prepared is not None:
                        writes.append((seq.key, prepared))
        return upcoming, writes

    @staticmethod
    def _write(writes: list[tuple[int, Prepared]], live_by_key: dict[int, LiveSequence]) -> None:
        """Write every prepared event of the step that just ended, back to back: the part
        of a step's end each stream waits for, so nothing else is done in between (no
        accounting, no garbage collection)."""
        now = time.perf_counter_ns
        collecting = gc.isenabled()
        gc.disable()
        try:
            for key, prepared in writes:
                if key in live_by_key:  # not cancelled while the step ran
                    writer = prepared.writer
                    try:
                        if not writer.is_closing():
                            writer.write(prepared.data)
                            prepared.sent_ns = now()
                    except Exception:  # one broken stream must not stop the engine
                        log.exception("token write failed")
        finally:
            if collecting:
                gc.enable()

    async def _run(self) -> None:
        loop_start: int | None = None
        while True:
            if self.engine.idle:
                self.slipped_ns += self._last_late_ns  # the last step's lateness stays
                self._last_late_ns = 0
                self._wake.clear()
                await self._wake.wait()
                loop_start = None
            now = time.perf_counter_ns()
            if loop_start is not None and now - loop_start > _RESYNC_NS:
                self.slipped_ns += now - loop_start
                loop_start = now
            elif loop_start is None:
                loop_start = now
            step = self.engine.plan_step()
            for seq in step.admitted:
                joined = self._live.get(seq.key)
                if joined is not None:
                    joined.admitted_ns = loop_start
            deadline = loop_start + int(step.duration * 1e9)
            upcoming, writes = self._prepare(step, deadline)
            delay = (deadline - _SPIN_NS - time.perf_counter_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            rest = (deadline - _LOOP_NS - time.perf_counter_ns()) / 1e9
            if rest > 0:
                time.sleep(rest)  # noqa: ASYNC251 - under 1 ms, see _LOOP_NS
            while time.perf_counter_ns() < deadline:  # noqa: ASYNC110 - a deadline, not an event
                await asyncio.sleep(0)
            # The writes first, then each stream's accounting, the engine's bookkeeping last:
            # a sequence cancelled during the step left self._live (Scheduler.cancel) as it
            # left the engine's batch, so these are the emissions finish_step returns, in
            # its order.
            live_by_key = self._live
            if writes:
                self._write(writes, live_by_key)
            emitted = 0
            for key, event in upcoming.items():
                live = live_by_key.get(key)
                if live is None:
                    continue
                emitted += 1
                if live.sink is not None:
                    try:
                        live.sink(event)
                    except Exception:  # one broken stream must not stop the engine
                        log.exception("token sink failed")
                else:
                    live.queue.put_nowait(event)
                if event.done:
                    del live_by_key[key]
            emissions = self.engine.finish_step(step)
            if len(emissions) != emitted:  # a sequence left the batch some other way: a bug
                log.error(
                    "step %d: %d events sent, %d emitted", step.index, emitted, len(emissions)
                )
            self._last_late_ns = max(0, time.perf_counter_ns() - deadline)
            loop_start = deadline
