"""Repeat the comparison from the window (Engineer ▸ Repeat the comparison…).

Runs the window's current run as a :class:`~splitdesk.core.bench.repeats.RepeatOptions` asks:
an optional warm-up run (sent, not counted), then K counted runs, with a pause between runs;
each run's plan is arranged by its :class:`~splitdesk.core.bench.repeats.RepeatRun` (which side
goes first, :func:`~splitdesk.core.bench.repeats.mode_order`; the per-run nonce line,
:func:`~splitdesk.core.bench.repeats.with_nonce`) — handed to the controller
(``RunController.next_repeat``) before the window's run starts, and applied by the
controller to the plan it sends (``RunRequest.plan``).
A non-modal progress dialog says "run k of K" (or the warm-up, or the pause) with the ETA
(:func:`~splitdesk.core.bench.repeats.eta_s`: the mean run so far, pauses included, times the
runs left); Cancel stops the current run (or the pause, or the warm-up) and runs no more.
Then :class:`~splitdesk.ui.engineer.repeat_results.RepeatResults` shows the finished counted runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QProgressDialog

from splitdesk.core.analyse.predict import schedule_slip_s
from splitdesk.core.bench.repeats import (
    RepeatFigures,
    RepeatOptions,
    RepeatRow,
    RepeatRun,
    eta_s,
    repeat_figures,
    window_rows,
)
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.engineer.repeat_results import RepeatResults, spread_text

if TYPE_CHECKING:
    from splitdesk.ui.port import Port

__all__ = ["RepeatSession", "spread_text"]


class RepeatSession:
    """The runs of ``options`` on ``window``; :attr:`figures` is set (and :attr:`results`
    shown) when the session ends, also after Cancel (the counted runs that finished).

    :attr:`states` and :attr:`nonces`: the counted runs and their nonces, in order;
    :attr:`warmups`: the warm-up runs' states (not counted)."""

    def __init__(self, port: Port, options: RepeatOptions | int) -> None:
        self.port = port
        #: an int: that many runs with the default options
        self.options = RepeatOptions(repeat=options) if isinstance(options, int) else options
        options = self.options
        self.k = options.repeat
        self.schedule = options.schedule()
        self.states: list[RunState] = []
        self.nonces: list[str | None] = []
        #: the built-in endpoint's slip during each counted run (seconds; ``None``: another
        #: endpoint), which flags a run the machine disturbed
        self.slips: list[float | None] = []
        self.warmups: list[RunState] = []
        self.rows: list[RepeatRow] = []
        self.cancelled = False
        self.pausing = False
        self.figures: RepeatFigures | None = None
        self.results: RepeatResults | None = None
        self._starting = False  # a run was asked for and has not ended
        self._stop_connected = False
        self._wake = asyncio.Event()
        total = len(self.schedule)
        self.progress = QProgressDialog(self._label(0), "Cancel", 0, total, port.widget)
        self.progress.setWindowTitle("Repeating the comparison")
        self.progress.setWindowModality(Qt.WindowModality.NonModal)
        self.progress.setMinimumDuration(0)
        self.progress.setAutoReset(False)
        self.progress.setAutoClose(False)
        self.progress.canceled.connect(self.cancel)

    def _label(self, i: int, eta: float | None = None, pause: bool = False) -> str:
        """The progress line before run ``i`` of the schedule (0-based)."""
        w = self.options.warmup
        if i < w:
            what = f"Warm-up run{f' {i + 1} of {w}' if w > 1 else ''} (discarded)"
        else:
            what = f"Run {i - w + 1} of {self.k}"
        if pause:
            what = f"Pausing {self.options.pause_s:g} s · next: {what[0].lower()}{what[1:]}"
        left = f" · about {eta:.0f} s left" if eta is not None else ""
        return f"{what}…{left}"

    def cancel(self) -> None:
        """Stop the current run (or pause) and run no more. A run still being prepared (the
        controller not busy yet) is stopped as soon as it starts."""
        self.cancelled = True
        self._wake.set()
        controller = self.port.runs
        controller.stop()
        if self._starting and not controller.busy:
            controller.busyChanged.connect(self._stop_when_busy)
            self._stop_connected = True

    def _stop_when_busy(self, busy: bool) -> None:
        if busy:
            self.port.runs.stop()

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` or until Cancel."""
        self.pausing = True
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), seconds)
        finally:
            self.pausing = False

    async def _one(self, run: RepeatRun) -> RunState:
        """Start the window's run arranged by ``run`` and wait for its end."""
        w = self.port
        ended: asyncio.Future[RunState] = asyncio.get_running_loop().create_future()

        def finished(state: RunState) -> None:
            if not ended.done():
                ended.set_result(state)

        disconnect = w.on_run_shown(finished)
        try:
            self._starting = True
            w.runs.next_repeat = run  # the controller arranges the plan it sends
            w.start_run()
            return await ended
        finally:
            self._starting = False
            w.runs.next_repeat = None
            disconnect()
            if self._stop_connected:
                w.runs.busyChanged.disconnect(self._stop_when_busy)
                self._stop_connected = False

    def _sim_url(self) -> str | None:
        """The built-in endpoint's root while the window runs on it (its schedule slip is
        read around each run), else ``None``."""
        sim = self.port.runs.sim
        if sim is None or not self.port.endpoint_settings().is_builtin:
            return None
        return str(sim.url)

    def _cannot_start(self) -> str | None:
        """Why the window would not start a run now (``None``: it would)."""
        w = self.port
        if w.runs.busy:
            return "a run is already in progress"
        problem: str | None = w.question_problem()
        return problem

    async def run(self) -> RepeatFigures:
        """Send the schedule's runs and show the results (also after Cancel)."""
        t0 = time.monotonic()
        eta: float | None = None
        for i, run in enumerate(self.schedule):
            if i and self.options.pause_s and not self.cancelled:
                self.progress.setLabelText(self._label(i, eta, pause=True))
                await self._pause(self.options.pause_s)
            if self.cancelled:
                break
            problem = self._cannot_start()
            if problem is not None:  # start_run would not start (nor end) a run
                self.port.say(f"Repeat stopped: {problem}")
                break
            self.progress.setLabelText(self._label(i, eta))
            sim = self._sim_url()
            slip0 = await schedule_slip_s(sim) if sim is not None else None
            state = await self._one(run)
            slip1 = await schedule_slip_s(sim) if sim is not None else None
            if state.ended is None or state.ended.stopped:
                break
            if run.warmup:
                self.warmups.append(state)
            else:
                self.states.append(state)
                self.nonces.append(run.nonce)
                self.slips.append(
                    slip1 - slip0 if slip0 is not None and slip1 is not None else None
                )
            self.progress.setValue(i + 1)
            eta = eta_s(i + 1, len(self.schedule), time.monotonic() - t0)
        self.progress.reset()
        self.progress.hide()
        self.rows = window_rows(self.states, self.nonces, self.slips)
        self.figures = repeat_figures(self.rows)
        # side by side: both sides in one phase, no order to alternate
        together = any("+" in side for r in self.rows for side in r.order) or (
            not self.rows and self.port.mode_chosen() == "side-by-side"
        )
        self.results = RepeatResults(
            self.port.widget,
            self.port.theme,
            self.options,
            self.states,
            self.nonces,
            self.rows,
            self.figures,
            together,
            self.port.scale,
            self.slips,
        )
        self.results.show()
        self.text = self.results.text  # the median (min–max) text
        return self.figures
