"""A repaint throttle: coalesce many change notifications into at most one call per frame.

Streams deliver hundreds of events per second; each view marks itself dirty and asks its
throttle to repaint. The throttle calls back at most once per ``interval_ms`` (16 ms ≈ 60
frames per second), on a frame grid shared by every throttle and called by one precise
timer (:class:`FrameClock`: the views refresh, and Qt paints them, in one pass), and
:meth:`Throttle.flush` runs the callback at once, so the last tokens of a finished stream
are always painted (qutebrowser's ``misc/throttle.py`` idea).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
import weakref
from collections.abc import Callable

import shiboken6
from PySide6.QtCore import QObject, Qt, QTimer

FRAME_MS = 16
#: The frame of the views that follow a streaming run (ms): panes append text, the
#: timeline grows its bars, and the controller takes the engine's events, all on this
#: grid, 10 times a second. Most of the window's cost is per frame (text layout,
#: painting), not per token: on the default run (``benchmarks/window_cpu.py``) the window
#: took 0.81 CPU s per 1,000 token events at 20 frames a second and 0.56-0.74 at 10
#: (issue 25; at 30, 13-15 % of a core, issue 13). Until issue 25 the frame was meant to
#: be 50 ms, but a throttle whose call ran a little after its tick skipped the next slot
#: (:meth:`Throttle.request`), so the views ran at 10 frames a second all along: the
#: rate users saw, now chosen, at the cost it was measured at.
LIVE_FRAME_MS = 100
#: Figures written as text while a run streams (a pane's header, the summary) change at
#: most this often (ms): numbers rewritten many times a second cannot be read, and each
#: rewrite measures and lays out its text. A run's final figures are written at once.
#: (Meant as 200 until issue 25, it was in fact 400, as :data:`LIVE_FRAME_MS`.)
LIVE_TEXT_MS = 400
#: While the machine's CPUs are busy (a CPU-bound local server beside the window), the
#: live views' frame is this many times longer: 10 → 2.5 frames a second, a quarter of the
#: window's per-frame work left to the server (issue 25). The run's controller sets it
#: from the machine's load (``ui/run/controller.py``, :func:`set_live_pace`).
BUSY_PACE = 4.0

_pace = [1.0]


def live_pace() -> float:
    """How many times longer than their interval the live views' frames are now (1.0:
    as set; :data:`BUSY_PACE` while the machine's CPUs are busy)."""
    return _pace[0]


def set_live_pace(factor: float) -> None:
    """Make every paced throttle's frame ``factor`` times its interval from its next
    request on (``factor`` ≥ 1; 1 restores the intervals)."""
    _pace[0] = max(1.0, factor)


#: A throttle due within this much of the frame clock's tick is called in that tick (ms):
#: Qt's millisecond timer would otherwise wake the loop again for it a moment later, and
#: Qt would paint twice.
TICK_SLACK_MS = 1.0


class FrameClock(QObject):
    """One precise timer that calls every throttle due at a tick of the frame grid in the
    same turn of the event loop, so Qt paints what they changed in one pass.

    A timer per throttle did not: Qt's coarse timers fire up to 5 % of their interval early
    or late, so of two views due at the same frame one often fired 2–3 ms before it (and
    before the run's events were drained for that frame) and one after, and Qt painted the
    window twice (``benchmarks/window_cpu.py``: 338 paint passes in an 11.4 s default run
    for 228 frames; issue 25). Throttles are held by weak reference: a pane deleted while a
    call is pending is skipped."""

    _instance: FrameClock | None = None

    def __init__(self) -> None:
        super().__init__()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._tick)
        self._due: list[tuple[float, int, weakref.ref[Throttle], int]] = []
        self._order = itertools.count()
        self._armed_for: float | None = None

    @classmethod
    def shared(cls) -> FrameClock:
        """The clock of every throttle (made on first use, on the GUI thread)."""
        clock = cls._instance
        if clock is None or not shiboken6.isValid(clock):
            clock = cls._instance = cls()
        return clock

    def schedule(self, throttle: Throttle, at_ms: float, ticket: int) -> None:
        """Call ``throttle`` (its call ``ticket``) at ``at_ms`` (``time.monotonic()``
        milliseconds)."""
        heapq.heappush(self._due, (at_ms, next(self._order), weakref.ref(throttle), ticket))
        self._arm()

    def _arm(self) -> None:
        if not self._due:
            self._timer.stop()
            self._armed_for = None
            return
        first = self._due[0][0]
        if self._armed_for == first and self._timer.isActive():
            return
        self._armed_for = first
        self._timer.start(max(0, math.ceil(first - time.monotonic() * 1000)))

    def _tick(self) -> None:
        self._armed_for = None
        # what is due as the tick starts; a call requested meanwhile waits for its own
        # tick, so a tick whose callbacks outlast a frame still ends (and the loop runs)
        due_by = time.monotonic() * 1000 + TICK_SLACK_MS
        try:
            while self._due and self._due[0][0] <= due_by:
                _at, _n, ref, ticket = heapq.heappop(self._due)
                throttle = ref()
                if throttle is not None and shiboken6.isValid(throttle):
                    throttle._due(ticket)
        finally:  # a view's callback that raised leaves the others their tick
            self._arm()


class Throttle(QObject):
    """Calls ``callback`` at most once per ``interval_ms`` milliseconds.

    :meth:`request` schedules a call at the next tick of its interval's grid (the one
    after, when the last call was in the current slot); :meth:`flush` calls now if a call
    is pending; :meth:`cancel` drops a pending call. ``calls`` counts callbacks made.
    """

    def __init__(
        self,
        callback: Callable[[], None],
        interval_ms: int = FRAME_MS,
        parent: QObject | None = None,
        paced: bool = False,
    ) -> None:
        super().__init__(parent)
        self._callback = callback
        self._interval = interval_ms
        self._phase = 0  #: ms after each multiple of the interval (:meth:`set_interval`)
        #: The interval stretches with :func:`live_pace` (a live view's frame).
        self.paced = paced
        #: The grid tick (``time.monotonic()`` ms) whose slot the last call took: the
        #: tick it was scheduled for, or, flushed between ticks, the next one.
        self._slot_ms = -math.inf
        self._at_ms = 0.0  #: the tick the pending call is scheduled for
        self._pending = False
        #: The latest scheduled call's number: an earlier one, cancelled, is skipped.
        self._ticket = 0
        self.calls = 0

    def set_interval(self, interval_ms: int, phase_ms: int = 0) -> None:
        """Change the shortest time between two calls (ms). ``phase_ms``: the calls come
        that long after each multiple of the interval, between another grid's ticks (a
        view on a slower frame whose work would otherwise add to theirs)."""
        self._interval = interval_ms
        self._phase = phase_ms % interval_ms if interval_ms else 0

    @property
    def interval_ms(self) -> int:
        """The shortest time between two calls (ms), before :func:`live_pace`."""
        return self._interval

    @property
    def phase_ms(self) -> int:
        """How long after each multiple of the interval the calls come (ms)."""
        return self._phase

    def _interval_now(self) -> float:
        """The interval (ms), stretched by :func:`live_pace` for a paced throttle."""
        return self._interval * _pace[0] if self.paced else self._interval

    def _phase_now(self) -> float:
        """The phase (ms), stretched with the interval."""
        return self._phase * _pace[0] if self.paced else self._phase

    @property
    def pending(self) -> bool:
        return self._pending

    def request(self) -> None:
        """Ask for a call; several requests within one interval make one call.

        The call comes at the next multiple of the interval on the monotonic clock (the
        one after, when the last call was made for that tick), so every view throttled at
        the same interval refreshes in the same turn of the event loop and Qt paints them
        all in one pass — not one pass per pane at scattered times."""
        if self._pending:
            return
        self._pending = True
        interval, phase = self._interval_now(), self._phase_now()
        tick = (math.floor((time.monotonic() * 1000 - phase) / interval) + 1) * interval + phase
        # The last call's slot is the tick it was made for, not when it ran: the frame
        # clock runs a tick's calls up to a few ms after it (a busy loop, Qt's timer
        # rounding). Measured from the run time, every call requested after one such
        # late tick skipped a slot, and every view refreshed at half its rate (10
        # frames a second where 20 were meant; issue 25).
        if tick <= self._slot_ms + TICK_SLACK_MS:  # that slot's call was made: the next
            tick = (math.floor((self._slot_ms - phase) / interval + 0.5) + 1) * interval + phase
        self._at_ms = tick
        self._ticket += 1
        FrameClock.shared().schedule(self, tick, self._ticket)

    def flush(self) -> None:
        """Make the pending call now (no-op when none is pending)."""
        if self._pending:
            # made now: the slot of the tick it was waiting for, if that has come (a
            # flush just after it, before the frame clock ran it), else of the next one
            interval, phase = self._interval_now(), self._phase_now()
            now_tick = math.ceil((time.monotonic() * 1000 - phase) / interval) * interval + phase
            self._at_ms = min(self._at_ms, now_tick)
            self._fire()

    def cancel(self) -> None:
        """Forget a pending call."""
        self._pending = False

    def _due(self, ticket: int) -> None:
        """The frame clock's call ``ticket``: the pending call, unless it was flushed or
        cancelled (and perhaps requested again, for a later tick) since."""
        if self._pending and ticket == self._ticket:
            self._fire()

    def _fire(self) -> None:
        self._pending = False
        self._slot_ms = self._at_ms
        self.calls += 1
        self._callback()
