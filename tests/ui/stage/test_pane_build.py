"""Pressing Run does not freeze the window (issue 13).

A live run's panes are built a slice at a time over several event-loop turns, and the run
does not wait for them: a pane built after its request was planned (and started) binds to
its trace and shows what it already has. A pane makes its reasoning view only when
reasoning text arrives. The summary's headline changes ~10 times a second while a run
streams; a new headline as big as the last one re-lays out nothing above it.
"""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QObject
from PySide6.QtWidgets import QVBoxLayout, QWidget
from ui.conftest import wait_until

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.events import (
    RequestEnded,
    RequestPlanned,
    RequestSent,
    RunStarted,
    TextReceived,
)
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.stage.summary import SummaryStrip


@pytest.mark.asyncio
async def test_panes_built_after_their_requests_started_show_them(make_window: Any) -> None:
    window = make_window(AppSettings())
    questions = [f"Question number {i + 1}?" for i in range(24)]
    plan = make_plan("side-by-side", questions, CombinedTemplate(), 64)
    controller = window.controller
    controller.runPlanned.emit(plan, questions)
    assert not window.stage.panes, "panes were built in the turn that pressed Run"
    state = RunState()
    controller.runStarted.emit(state)
    state.apply(RunStarted(0.0, plan.mode, tuple(questions), {}, 0, len(plan.phases)))
    for i, spec in enumerate(plan.requests):  # planned and streaming before their panes
        state.apply(RequestPlanned(0.0, i, spec.group, spec.questions, spec.prompt))
        state.apply(RequestSent(0.01, i))
        state.apply(TextReceived(0.1, i, f"answer of request {i}"))
    state.apply(TextReceived(0.2, 3, "thinking it over", reasoning=True))
    for i in range(len(plan.requests)):  # ended: out of sight or not, a pane shows it
        state.apply(RequestEnded(0.3, i, "done", None, None))
    await wait_until(lambda: window.stage._laid_out, 10, "every pane built and laid out")
    assert len(window.stage.panes) == len(plan.requests) and len(window.stage.grid.panes) == 24
    for i, pane in window.stage.panes.items():
        assert pane.trace is state.requests[i], f"pane {i} not bound to its request"
        pane.throttle.flush()
        assert pane.text.toPlainText() == f"answer of request {i}"
    made = [i for i, p in window.stage.panes.items() if p._reasoning is not None]
    assert made == [3], f"reasoning views made for {made}, reasoning arrived for 3 only"
    assert window.stage.panes[3].reasoning.toPlainText() == "thinking it over"


class LayoutRequests(QObject):
    """Counts layout requests posted to the watched widget."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            self.count += 1
        return False


def frame() -> None:
    """Deliver what was posted, and what that posted (the box tells the strip's layout)."""
    QCoreApplication.sendPostedEvents()
    QCoreApplication.sendPostedEvents()


def test_a_headline_as_big_as_the_last_re_lays_out_nothing(qtbot: Any) -> None:
    holder = QWidget()
    lay = QVBoxLayout(holder)
    summary = SummaryStrip(DARK)
    lay.addWidget(summary)
    qtbot.addWidget(holder)
    holder.resize(900, 300)
    holder.show()
    summary.headline.setText("Combined <b>1.0 s</b>… · Parallel <b>1.0 s</b>…")
    qtbot.waitUntil(lambda: summary.headline.width() > 100, timeout=5000)
    frame()
    requests = LayoutRequests()
    summary.installEventFilter(requests)
    for n in range(2, 10):  # a streaming run's headline: the same size every time
        summary.headline.setText(f"Combined <b>{n}.0 s</b>… · Parallel <b>{n}.0 s</b>…")
        frame()
    assert requests.count == 0, f"{requests.count} layout requests for 8 same-size headlines"
    one_line = summary.headline.heightForWidth(summary.headline.width())
    summary.headline.setText(" · ".join(["Combined <b>12.0 s</b> and much more"] * 8))
    frame()
    assert requests.count > 0, "a longer, wrapped headline did not re-lay out the strip"
    frame()
    need = summary.headline.heightForWidth(summary.headline.width())
    assert need > one_line, "the long headline does not wrap: nothing to check"
    assert summary.headline.height() >= need, "the wrapped headline was not given its lines"
