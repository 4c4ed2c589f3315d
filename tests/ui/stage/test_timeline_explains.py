"""The timeline says what it shows: the time axis in each mode, what each wait was made of,
and a combined reply whose answer markers were never found."""

from __future__ import annotations

from typing import Any

import pytest
from core.analyse.test_diagnosis import Req, batching, build

from splitdesk.ui.common.theme import DARK
from splitdesk.ui.stage.summary import SummaryStrip
from splitdesk.ui.stage.timeline import Timeline

QUESTIONS = [f"q{i}" for i in range(5)]


def timeline_of(state: Any, qtbot: Any) -> Timeline:
    timeline = Timeline(DARK)
    qtbot.addWidget(timeline)
    timeline.resize(1000, 400)
    timeline.show()
    timeline.bind(state, QUESTIONS)
    timeline.finish()
    return timeline


def axis_label(timeline: Timeline) -> str:
    return str(timeline.plot.getPlotItem().getAxis("bottom").labelText)


def test_one_after_another_runs_on_the_runs_one_clock(qtbot: Any) -> None:
    """Every lane on one time axis (the server lane's too): the ways sent one after
    another follow each other on it, and each lane's end label says how long its way took."""
    state = build(batching(), mode="one-after-another")
    t = timeline_of(state, qtbot)
    assert axis_label(t) == "seconds since the run started (each way after the one before)"
    combined = next(r for r in state.requests if r.group == "combined")
    parallel = [r for r in state.requests if r.group == "parallel"]
    assert all(r.t_send is not None and combined.t_end is not None for r in parallel)
    first_parallel = min(b.x0 for b in t.bars if b.lane > 0)
    assert first_parallel == pytest.approx(min(r.t_send or 0.0 for r in parallel), abs=1e-9)
    assert first_parallel >= (combined.t_end or 0.0) - 1e-9, "parallel starts after combined"
    reqs = [Req("combined", 0.0, first=0.01, tokens=500)] + [
        Req("parallel", 0.0, first=0.01, tokens=100) for _ in range(5)
    ]
    t = timeline_of(build(reqs, mode="side-by-side"), qtbot)
    assert axis_label(t) == "seconds since the run started"


def test_wait_bars_name_what_the_wait_was(qtbot: Any) -> None:
    reqs = [Req("parallel", first=0.01 + 2.0 * i, tokens=100) for i in range(3)]
    t = timeline_of(build(reqs, mode="parallel"), qtbot)
    waits = {b.lane: b.tip for b in t.bars if b.kind == "wait"}
    assert "then 4.01 s queued behind 2 requests" in waits[2]
    assert "then 0.01 s prefill" in waits[0]


def test_a_reply_without_markers_says_so_in_its_lane(qtbot: Any) -> None:
    reqs = batching()
    reqs[0].markers = False
    t = timeline_of(build(reqs), qtbot)
    shown = [lb.toPlainText() for lb in t.labels if lb.isVisible()]
    assert "no answer markers found" in shown
    t = timeline_of(build(batching()), qtbot)
    assert "no answer markers found" not in [lb.toPlainText() for lb in t.labels if lb.isVisible()]


def test_a_speed_up_without_concurrency_says_where_it_came_from(qtbot: Any) -> None:
    # one slot, one after another: the combined reply is longer (1.8x), parallel ones queue
    reqs = [Req("combined", 0.0, first=0.01, tokens=900)] + [
        Req("parallel", 20.0, first=20.01 + 2.0 * i, tokens=100, phase=1) for i in range(5)
    ]
    strip = SummaryStrip(DARK)
    qtbot.addWidget(strip)
    state = build(reqs)
    strip.bind(state)
    strip.refresh()
    head = strip.headline.text()
    assert "Parallel finished 1.8× sooner" in head
    assert "from the prompt's shape, not concurrency" in head
    assert "the 1.8× speed-up came from the prompt's shape" in strip.explain.text()
