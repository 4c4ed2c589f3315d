"""What the window shows at the end of a run does not depend on how its frames went.

The views repaint live on frame throttles (panes 20 times a second on one shared frame
grid, the timeline on the same grid, its time axis grown in steps while the run streams; issue
13). A live run on the built-in endpoint must end with exactly the picture the same run's
events give when the views take them all in one go: every pane's text, state and figures,
the timeline's lanes, bars (with their hover texts), answer numbers and end labels, its
time and lane ranges, and the summary. Real window offscreen, real engine and endpoint.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.events import RunEvent
from splitdesk.core.run.plans import RunPlan
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.shell.main_window import MainWindow
from splitdesk.ui.stage.panes import CombinedPane, RequestPane


def final_picture(window: MainWindow) -> dict[str, Any]:
    """Everything the views show of a finished run, as plain values."""
    tl = window.stage.timeline
    vb = tl.plot.getPlotItem().getViewBox()
    labels = sorted(
        (label.toPlainText(), round(label.pos().x(), 9), round(label.pos().y(), 9))
        for label in tl.labels
        if label.isVisible()
    )
    return {
        "panes": {
            i: (p.text.toPlainText(), p.state.text(), p.stats.full_text())
            for i, p in window.stage.panes.items()
        },
        "lanes": list(tl.lanes),
        "lane_names": list(tl.shown_names),
        "segments": dict(tl.segment_counts),
        "bars": [(b.lane, b.x0, b.x1, b.kind, b.color, b.tip) for b in tl.bars],
        "labels": labels,
        "x_range": [round(v, 9) for v in vb.viewRange()[0]],
        "y_range": [round(v, 9) for v in vb.viewRange()[1]],
        "headline": window.stage.summary.headline.text(),
        "details": window.stage.summary.details.text(),
    }


async def settled(window: MainWindow) -> dict[str, Any]:
    """Paint what the throttles still hold and let Qt lay out, until the picture stays the
    same over two looks 50 ms apart; returns it."""
    last: dict[str, Any] | None = None
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while True:
        for pane in window.stage.panes.values():
            pane.throttle.flush()
        window.stage.timeline.throttle.request()
        window.stage.timeline.throttle.flush()
        window.stage.summary.throttle.request()
        window.stage.summary.throttle.flush()
        await asyncio.sleep(0.05)
        now = final_picture(window)
        if now == last:
            return now
        if loop.time() > end:
            raise AssertionError("the window's picture kept changing for 10 s after the run")
        last = now


@pytest.mark.asyncio
async def test_live_run_ends_with_the_picture_its_events_give_at_once(make_window: Any) -> None:
    window: MainWindow = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    c = window.controller
    events: list[RunEvent] = []
    planned: list[tuple[RunPlan, list[str]]] = []
    predictions: list[list[PredictedRequest]] = []
    c.runPlanned.connect(lambda plan, questions: planned.append((plan, list(questions))))
    c.runStarted.connect(lambda state: state.subscribe(events.append))
    c.predictionsReady.connect(predictions.append)
    window.run_button.click()
    (live_state,) = await wait_signal(window.runFinished, 60, "the end of the live run")
    live = await settled(window)
    assert live_state.ended is not None and not live_state.ended.stopped
    assert predictions, "the built-in endpoint gave no prediction (no ghost bars to compare)"

    # The picture shows what arrived: each parallel pane holds its request's whole text.
    parallel = [p for p in window.stage.panes.values() if type(p) is RequestPane]
    assert len(parallel) == 5 and any(
        isinstance(p, CombinedPane) for p in window.stage.panes.values()
    )
    for pane in parallel:
        assert pane.trace is not None
        assert pane.text.toPlainText() == "".join(pane.trace.text_parts)

    # The same events, all applied between two frames, through the run path of a second
    # window of the same size that has shown nothing before (as the first had not).
    other: MainWindow = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    (plan, questions) = planned[-1]
    state = RunState()
    other.stage.client_note = window.stage.client_note  # how the live run was sent
    other.stage.plan(plan, questions, other.questions.labels())  # as the window plans it
    other.stage.bind(state)
    other.stage.predictions(predictions[-1])
    for event in events:
        state.apply(event)
    # what the live run measured of splitdesk's own CPU (no event holds it: a replay sets
    # it from the recording's client_cpu before the end, as here); on a busy machine the
    # details line says it
    other.stage.observe(window.stage.summary.observer)
    other.stage.finish(state)
    at_once = await settled(other)
    for key in live:
        assert at_once[key] == live[key], f"{key} differs between the live run and at once"
