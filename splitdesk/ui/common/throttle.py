"""A repaint throttle: coalesce many change notifications into at most one call per frame.

Streams deliver hundreds of events per second; each view marks itself dirty and asks its
throttle to repaint. The throttle calls back at most once per ``interval_ms`` (16 ms ≈ 60
frames per second), on a frame grid shared by every throttle of that interval (so views
refresh, and Qt paints them, together), and :meth:`Throttle.flush` runs the callback at once, so the last
tokens of a finished stream are always painted (qutebrowser's ``misc/throttle.py`` idea).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

FRAME_MS = 16
#: The frame of the views that follow a streaming run (ms): panes append text, the
#: timeline grows its bars, and the controller takes the engine's events, all on this
#: grid, 20 times a second. At 30 (33 ms) the window used 13-15 % of a core on the default
#: run, at 20 about 10 % (``benchmarks/window_cpu.py``; issue 13): most of the cost is per
#: frame (text layout, painting), not per token, and 20 frames a second still reads as a
#: smooth stream.
LIVE_FRAME_MS = 50
#: Figures written as text while a run streams (a pane's header, the summary) change at
#: most this often (ms): numbers rewritten 20 times a second cannot be read, and each
#: rewrite measures and lays out its text. A run's final figures are written at once.
LIVE_TEXT_MS = 200
#: While the machine's CPUs are busy (a CPU-bound local server beside the window), the
#: live views' frame is this many times longer: 20 → 5 frames a second, a quarter of the
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


class Throttle(QObject):
    """Calls ``callback`` at most once per ``interval_ms`` milliseconds.

    :meth:`request` schedules a call (immediately if the last one is older than the
    interval, else at the interval's end); :meth:`flush` calls now if a call is pending;
    :meth:`cancel` drops a pending call. ``calls`` counts callbacks made.
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
        #: The interval stretches with :func:`live_pace` (a live view's frame).
        self.paced = paced
        self._last = 0.0
        self._pending = False
        self.calls = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._fire)

    def set_interval(self, interval_ms: int) -> None:
        """Change the shortest time between two calls."""
        self._interval = interval_ms

    @property
    def pending(self) -> bool:
        return self._pending

    def request(self) -> None:
        """Ask for a call; several requests within one interval make one call.

        The call comes at the next multiple of the interval on the monotonic clock (and
        never sooner than an interval after the last call), so every view throttled at
        the same interval refreshes in the same turn of the event loop and Qt paints them
        all in one pass — not one pass per pane at scattered times."""
        if self._pending:
            return
        self._pending = True
        interval = self._interval * _pace[0] if self.paced else self._interval
        now_ms = time.monotonic() * 1000
        delay = interval - now_ms % interval
        since_last = now_ms - self._last * 1000
        if since_last + delay < interval:  # same slot as the last call: next one
            delay += interval
        self._timer.start(max(0, round(delay)))

    def flush(self) -> None:
        """Make the pending call now (no-op when none is pending)."""
        if self._pending:
            self._timer.stop()
            self._fire()

    def cancel(self) -> None:
        """Forget a pending call."""
        self._timer.stop()
        self._pending = False

    def _fire(self) -> None:
        self._pending = False
        self._last = time.monotonic()
        self.calls += 1
        self._callback()
