"""The timeline says what it shows: the time axis in each mode, what each wait was made of,
and a combined reply whose answer markers were never found."""

from __future__ import annotations

from typing import Any

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


def test_axis_says_each_way_starts_at_zero_one_after_another(qtbot: Any) -> None:
    t = timeline_of(build(batching(), mode="one-after-another"), qtbot)
    assert axis_label(t) == "seconds since each way's own start (one after another)"
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
    assert "parallel 1.8× faster than combined" in head
    assert "from the prompt's shape, not concurrency" in head
    assert "the 1.8× speed-up came from the prompt's shape" in strip.explain.text()
