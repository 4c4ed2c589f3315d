"""How late the measuring client's own event loop ran during a run (a busy machine).

A ticker task sleeps :data:`PERIOD_S` at a time on the run's event loop and adds up each
wake's lateness beyond :data:`TOLERANCE_S` (``asyncio`` timers are millisecond-precise, so
a wake a millisecond or two late is the timer, not the machine). The sum (seconds) is the
time the client wanted the CPU and did not get it: requests built, sent or read late. It
costs one wake-up per period. :mod:`splitdesk.core.analyse.disturbance` reads it as
``client_lag_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType

#: the ticker's period (seconds)
PERIOD_S = 0.01
#: lateness of one wake that is the timer's own imprecision (seconds)
TOLERANCE_S = 0.003


class LoopLag:
    """``async with LoopLag() as lag: …`` then ``lag.late_s``: seconds the loop woke late
    (beyond :data:`TOLERANCE_S` per wake) while the block ran; ``lag.worst_s`` the worst
    single wake."""

    def __init__(self, period_s: float = PERIOD_S) -> None:
        self.period_s = period_s
        self.late_s = 0.0
        self.worst_s = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            due = time.monotonic() + self.period_s
            await asyncio.sleep(self.period_s)
            late = time.monotonic() - due
            if late > TOLERANCE_S:
                self.late_s += late - TOLERANCE_S
                self.worst_s = max(self.worst_s, late)

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.ensure_future(self._tick())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
