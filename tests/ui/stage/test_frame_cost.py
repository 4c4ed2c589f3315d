"""What keeps the window cheap while a run streams (issue 13), as a user sees it: figures
that change at a readable pace, a server lane that does nothing when nothing is new, and a
collector that no longer scans the window built at start. Real widgets (offscreen), the
real engine process and the built-in endpoint over loopback."""

from __future__ import annotations

import gc
import itertools
import time
from typing import Any

import pytest
from ui.conftest import wait_signal, wait_until

from splitdesk.core.analyse.metrics import request_figures, summarize
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.ui.common.gc import GuiGarbageCollector, freeze_built_window
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.common.throttle import LIVE_TEXT_MS
from splitdesk.ui.run.controller import RunController
from splitdesk.ui.stage.panes import (
    HEADER_MS,
    MANY_PANES,
    MANY_PANES_MS,
    PANE_MS,
    RequestPane,
    header_variants,
)
from splitdesk.ui.stage.stage import Stage
from splitdesk.ui.stage.summary import SummaryStrip
from splitdesk.ui.stage.timeline import MANY_LANES_MS


@pytest.mark.asyncio
async def test_header_and_summary_figures_change_at_a_readable_pace_and_end_exact(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: dict[int, list[tuple[float, str]]] = {}
    original = RequestPane._update_header

    def update_header(pane: RequestPane) -> None:
        if pane.trace is not None:
            state = request_figures(pane.trace).state
            writes.setdefault(id(pane), []).append((time.monotonic(), state))
        original(pane)

    monkeypatch.setattr(RequestPane, "_update_header", update_header)
    summaries: list[tuple[float, bool]] = []  # (when, while streaming)
    refresh = SummaryStrip.refresh

    def summary_refresh(strip: SummaryStrip) -> None:
        st = strip.state
        streaming = st is not None and st.ended is None and any(r.t_send for r in st.requests)
        summaries.append((time.monotonic(), streaming))
        refresh(strip)

    monkeypatch.setattr(SummaryStrip, "refresh", summary_refresh)
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=2.0)))
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 60, "the default run, built-in endpoint")
    assert all(r.outcome == "done" for r in state.requests)
    live = [t1 - t0 for (t0, s0), (t1, s1) in itertools.pairwise(summaries) if s0 and s1]
    assert len(live) > 5, "the summary hardly followed the run"
    assert min(live) >= 0.95 * LIVE_TEXT_MS / 1000, sorted(live)[:5]
    assert window.stage.summary.summary == summarize(state)  # the end is exact
    gaps = [
        t1 - t0
        for seen in writes.values()
        for (t0, s0), (t1, s1) in itertools.pairwise(seen)
        if s0 == s1 == "streaming"
    ]
    assert len(gaps) > 10, "the panes hardly rewrote their figures while streaming"
    # a timer fires late under load, never early: no two rewrites of a streaming pane's
    # figures closer than HEADER_MS (Qt's coarse timers may fire up to 5 % early)
    assert min(gaps) >= 0.95 * HEADER_MS / 1000, sorted(gaps)[:5]
    for key, pane in window.stage.panes.items():  # the end is exact, not held back
        assert pane.trace is not None and pane.trace.finished
        assert pane.stats._variants == header_variants(request_figures(pane.trace)), key


@pytest.mark.asyncio
async def test_a_lane_redraw_without_a_new_sample_sets_nothing(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    window.run_button.click()
    await wait_signal(window.runFinished, 60, "a run on the built-in endpoint")
    lane = window.stage.server_lane
    assert lane.series.t_s, "the lane drew no sample of the run"
    calls: list[str] = []
    for name in ("running_curve", "waiting_curve", "kv_curve"):
        curve = getattr(lane, name)
        original = curve.setData
        curve.setData = lambda *a, _n=name, _o=original, **k: (calls.append(_n), _o(*a, **k))
    drawn = lane.series
    lane._draw(drawn, lane._source)  # the same samples again: a redraw tick with nothing new
    assert calls == []
    lane._draw(drawn.until(drawn.t_s[-1] / 2), lane._source)  # different samples: drawn
    assert "running_curve" in calls


def test_the_built_window_is_frozen_out_of_collections_until_stop(qtbot: Any) -> None:
    collector = GuiGarbageCollector()
    try:
        freeze_built_window()
        assert gc.get_freeze_count() > 0
        assert gc.get_count()[0] < 100  # collected just before: nothing young left over
    finally:
        collector.stop()
    assert gc.get_freeze_count() == 0  # stop gives every object back to the collector


@pytest.mark.asyncio
async def test_a_runs_end_is_shown_over_turns_and_exact_at_run_finished(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The drain that takes a run's last events refreshes no pane (64 final refreshes and
    the timeline's last frame in that one turn froze the window for 40-70 ms); every pane
    shows its whole answer and final figures when the window says the run finished."""
    refreshes = [0]
    in_ending_drain: list[int] = []
    pane_refresh = RequestPane.refresh
    drain = RunController._drain

    def counting_refresh(pane: RequestPane) -> None:
        refreshes[0] += 1
        pane_refresh(pane)

    def watched_drain(controller: RunController, defer_end: bool = True) -> None:
        state, before = controller.state, refreshes[0]
        was_open = state is not None and state.ended is None
        drain(controller, defer_end)
        if was_open and state is not None and state.ended is not None:
            in_ending_drain.append(refreshes[0] - before)

    monkeypatch.setattr(RequestPane, "refresh", counting_refresh)
    monkeypatch.setattr(RunController, "_drain", watched_drain)
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 60, "the default run's end")
    assert in_ending_drain == [0], f"pane refreshes in the run-ending drain: {in_ending_drain}"
    assert state.ended is not None and all(r.outcome == "done" for r in state.requests)
    for key, pane in window.stage.panes.items():
        assert pane.trace is not None
        if type(pane) is RequestPane:  # the combined pane adds headings to its text
            assert pane.text.toPlainText() == "".join(pane.trace.text_parts), key
        assert pane.stats._variants == header_variants(request_figures(pane.trace)), key


@pytest.mark.asyncio
async def test_a_pane_whose_request_ended_stops_its_waiting_clock(make_window: Any) -> None:
    """A pane's 200 ms clock counts "waiting 1.8 s" while its request waits; once the
    request ended it waits for nothing, and the clock stops (it had ticked until the run's
    end: 280 ticks of five finished panes in a default run, each a turn of Python)."""
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=2.0)))
    window.run_button.click()

    def parallel_done_run_going() -> bool:
        st = window.state
        return st is not None and st.ended is None and any(t.finished for t in st.group("parallel"))

    await wait_until(parallel_done_run_going, 30, "a parallel request ended, the run going on")
    st = window.state
    assert st is not None
    ended = [window.stage.panes[t.req] for t in st.group("parallel") if t.finished]
    await wait_until(
        lambda: all(not p._clock.isActive() for p in ended),
        5,
        "the ended requests' panes stopped their clocks",
    )
    combined = next(p for r, p in window.stage.panes.items() if st.requests[r].group == "combined")
    assert st.ended is None and not st.requests[combined.trace.req].finished
    assert combined._clock.isActive()  # still streaming: its clock goes on
    await wait_signal(window.runFinished, 60)


@pytest.mark.parametrize(("n", "slow"), [(16, False), (17, True), (64, True)])
def test_many_parallel_panes_refresh_between_the_timelines_ticks(
    qtbot: Any, n: int, slow: bool
) -> None:
    """More than MANY_PANES parallel panes: each refreshes every MANY_PANES_MS, halfway
    between the timeline's ticks (as slow with as many lanes), so one tick never holds
    both views' work; a few panes keep the shared frame."""
    assert MANY_PANES == 16 and MANY_PANES_MS == MANY_LANES_MS
    stage = Stage(DARK)
    qtbot.addWidget(stage)
    questions = [f"question {i + 1}?" for i in range(n)]
    stage.plan(make_plan("parallel", questions, CombinedTemplate(), None), questions)
    qtbot.waitUntil(lambda: len(stage.grid.panes) == n, timeout=10000)
    for pane in stage.grid.panes:
        if slow:
            assert (pane.throttle.interval_ms, pane.throttle.phase_ms) == (
                MANY_PANES_MS,
                MANY_PANES_MS // 2,
            )
        else:
            assert (pane.throttle.interval_ms, pane.throttle.phase_ms) == (PANE_MS, 0)
