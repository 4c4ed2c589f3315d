"""Repeat the comparison K times from the window (Engineer ▸ Repeat the comparison…).

Runs the window's current run K times, one after another, with a progress dialog (run k
of K, ETA from the mean run so far, Cancel stops the current run and the rest), then shows
the median and spread (min–max) per side of the makespan and of TTFT (every request
pooled) and of the speed-up, all computed in core (:func:`splitdesk.core.repeats.
repeat_figures`). In the window the runs keep the mode's order and the questions as typed
(no alternation and no nonce yet: ``splitdesk bench --repeat`` has both); the results say so.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLabel, QProgressDialog, QVBoxLayout

from splitdesk.core.metrics import Spread
from splitdesk.core.repeats import RepeatFigures, eta_s, repeat_figures
from splitdesk.core.run_state import RunState


def spread_text(s: Spread | None, unit: str = " s", nd: int = 2) -> str:
    """``median (min–max)`` of ``s``; ``—`` when unknown."""
    if s is None:
        return "—"
    return f"{s.median:.{nd}f}{unit} ({s.min:.{nd}f}–{s.max:.{nd}f})"


class RepeatSession:
    """K runs of the window's current run; :attr:`done` resolves with the figures."""

    def __init__(self, window: Any, k: int) -> None:
        self.window = window
        self.k = k
        self.states: list[RunState] = []
        self.cancelled = False
        self.figures: RepeatFigures | None = None
        self.results: QDialog | None = None
        self.progress = QProgressDialog(f"Run 1 of {k}…", "Cancel", 0, k, window)
        self.progress.setWindowTitle("Repeating the comparison")
        self.progress.setWindowModality(Qt.WindowModality.NonModal)
        self.progress.setMinimumDuration(0)
        self.progress.canceled.connect(self.cancel)

    def cancel(self) -> None:
        """Stop the current run and run no more."""
        self.cancelled = True
        self.window.controller.stop()

    async def run(self) -> RepeatFigures:
        """Run the K runs and show the results (also after Cancel: the runs that finished)."""
        w = self.window
        t0 = time.monotonic()
        for _ in range(self.k):
            if self.cancelled:
                break
            loop = asyncio.get_running_loop()
            ended: asyncio.Future[RunState] = loop.create_future()

            def finished(state: RunState, fut: asyncio.Future[RunState] = ended) -> None:
                if not fut.done():
                    fut.set_result(state)

            w.runFinished.connect(finished)
            try:
                w.start_run()
                state = await ended
            finally:
                w.runFinished.disconnect(finished)
            if state.ended is None or state.ended.stopped:
                break
            self.states.append(state)
            done = len(self.states)
            self.progress.setValue(done)
            eta = eta_s(done, self.k, time.monotonic() - t0)
            if done < self.k:
                left = f" · about {eta:.0f} s left" if eta is not None else ""
                self.progress.setLabelText(f"Run {done + 1} of {self.k}…{left}")
        self.progress.reset()
        self.progress.hide()
        self.figures = repeat_figures(self.states)
        self.results = self._show(self.figures)
        return self.figures

    def _show(self, f: RepeatFigures) -> QDialog:
        dialog = QDialog(self.window)
        dialog.setWindowTitle(f"Repeated {f.runs} of {self.k} runs")
        layout = QVBoxLayout(dialog)
        lines = [f"<b>{f.runs} run{'s' if f.runs != 1 else ''}</b> — median (min–max)"]
        lines.append(f"Speed-up: <b>{spread_text(f.speedup, '×')}</b>")
        for side, m in f.makespan.items():
            lines.append(
                f"{side.capitalize()}: makespan {spread_text(m)} · TTFT "
                f"{spread_text(f.ttft.get(side))}"
            )
        lines.append(
            "In the window the runs keep the mode's order and identical prompts (the "
            "server's prefix cache may serve repeats); splitdesk bench --repeat alternates "
            "the sides and adds a per-run nonce."
        )
        self.text = QLabel("<br>".join(lines))
        self.text.setWordWrap(True)
        layout.addWidget(self.text)
        dialog.show()
        return dialog
