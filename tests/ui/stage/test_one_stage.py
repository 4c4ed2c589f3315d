"""Where two features meet they agree: one stage shows every run (issue 20's seams).

Each test is a place where two views of one run disagreed before the stage: the server
lane on another clock than the timeline, a column title over what it did not hold, the
sequential pane's count against the summary's, the history dock taking the timeline's
lanes, an animation painting the editor, an exported JSON saying another diagnosis and
no prediction."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from core.analyse.test_diagnosis import Req, build
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication, QMainWindow, QMenuBar, QStatusBar, QToolBar
from ui.conftest import wait_signal, wait_until

from paths import ROOT
from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.analyse.plain import measured_line
from splitdesk.core.files.figures_export import figures_json
from splitdesk.core.files.recording import load_recording
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.plans import Phase, RequestSpec, RunPlan
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import DARK, PRESENT_DARK
from splitdesk.ui.render.exports import ReplayFrames
from splitdesk.ui.stage.stage import Stage

DEMOS = ROOT / "resources" / "demos"


def said(state: Any) -> str:
    """What presentation mode says beside the caption once ``state`` has ended."""
    return f"Measured: {measured_line(state, diagnose_state(state))}"


def plan_of_state(state: RunState) -> RunPlan:
    """The plan a built state followed (one phase per phase index)."""
    phases: dict[int, list[RequestSpec]] = {}
    for r in state.requests:
        phases.setdefault(r.phase, []).append(RequestSpec(r.group, r.questions, "p", None))
    mode = state.info.mode if state.info is not None else "side-by-side"
    return RunPlan(
        mode,  # type: ignore[arg-type]
        tuple(
            Phase(str(k), tuple(s), sequential=s[0].group == "sequential")
            for k, s in sorted(phases.items())
        ),
    )


def shown(stage: Stage, state: RunState) -> None:
    stage.plan(plan_of_state(state), [f"q{i}" for i in range(5)])
    stage.bind(state)
    stage.finish(state)


@pytest.fixture
def stage(qtbot: Any) -> Stage:
    s = Stage(DARK)
    qtbot.addWidget(s)
    s.resize(1400, 800)
    s.show()
    return s


def test_the_sequential_pane_counts_the_failures_the_summary_counts(stage: Stage) -> None:
    reqs = [Req("combined", 0.0, first=0.01, tokens=200)]
    reqs += [
        Req(
            "sequential",
            10.0 + i,
            first=10.01 + i,
            tokens=20,
            phase=1,
            status=500 if i < 3 else 200,
        )
        for i in range(5)
    ]
    state = build(reqs)
    shown(stage, state)
    seq = stage._sequential
    assert seq is not None
    assert seq.stats.full_text().startswith("2/5 answered · 3 failed")
    assert "failed" in seq.state.text() and "done" not in seq.state.text()
    assert "Sequential: " in stage.summary.headline.text()
    assert "3 of 5" in stage.summary.headline.text()


def test_each_column_says_what_it_holds(stage: Stage) -> None:
    # the sequential baseline beside the combined request: the title names both
    reqs = [Req("combined", 0.0, first=0.01, tokens=200)]
    reqs += [Req("sequential", 5.0 + i, first=5.01 + i, tokens=20, phase=1) for i in range(5)]
    shown(stage, build(reqs))
    assert (
        stage.combined_title.text() == "COMBINED · 1 request  +  SEQUENTIAL · 5 one after another"
    )
    assert stage.combined_column.isVisible() and not stage.parallel_column.isVisible()
    # one line, its longest wording that fits; what it holds on hover either way
    title = stage.combined_title
    shorter = "COMBINED  +  SEQUENTIAL · 5"
    title.resize(title.fontMetrics().horizontalAdvance(shorter) + 4, title.height())
    assert title.text() == shorter
    tip = stage.combined_title.toolTip()
    assert tip.startswith("COMBINED · 1 request  +  SEQUENTIAL · 5 one after another\n")
    assert "one prompt asking every question" in tip and "sequential baseline" in tip
    # a parallel-only run (a bench recording's parallel mode): no empty combined column
    shown(stage, build([Req("parallel", 0.0, first=0.01, tokens=20) for _ in range(5)]))
    assert not stage.combined_column.isVisible() and stage.parallel_column.isVisible()
    assert stage.parallel_title.text() == "PARALLEL · 5 requests"


@pytest.mark.asyncio
async def test_the_server_lane_reads_the_timelines_clock_one_after_another(
    make_window: Any,
) -> None:
    window = make_window(
        AppSettings(endpoint=EndpointSettings(speed=4.0), mode="one-after-another")
    )
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 100, "both phases of the run to finish")
    stage = window.stage
    lane, timeline = stage.server_lane, stage.timeline
    await wait_until(lambda: bool(lane.series.t_s), 10, "the server lane drew its samples")
    parallel = [r for r in state.requests if r.group == "parallel"]
    p0 = min(r.t_send or 0.0 for r in parallel)
    p1 = max((r.t_end or 0.0) for r in parallel)
    bars = [b for b in timeline.bars if b.kind == "stream" and b.lane > 0]
    assert bars and min(b.x0 for b in bars) >= p0 - 1e-6  # the parallel bars on the run's clock
    # the samples where the server ran all five at once lie under those bars, on the axis
    five = [t for t, n in zip(lane.series.t_s, lane.series.running, strict=True) if n >= 5]
    assert five, f"no sample with the batch of five: {lane.series.running}"
    assert all(p0 - 0.3 <= t <= p1 + 0.3 for t in five), (five, p0, p1)

    # x-linked: a moment sits at the same screen column in both plots (their axes differ in
    # width, so their ranges do too)
    def screen_x(plot: Any, t: float) -> float:
        vb = plot.getPlotItem().getViewBox()
        scene = vb.mapViewToScene(QPointF(t, 0.0))
        return float(plot.mapToGlobal(plot.mapFromScene(scene)).x())

    for t in (p0, max(five)):
        assert screen_x(lane.plot, t) == pytest.approx(screen_x(timeline.plot, t), abs=2)
    x_timeline = timeline.plot.getPlotItem().getViewBox().viewRange()[0]
    assert max(five) <= x_timeline[1], "a batch-of-five sample past the end of the axis"


@pytest.mark.asyncio
async def test_opening_the_history_dock_leaves_the_timeline_every_lane(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    window.resize(1280, 720)
    window.run_button.click()
    await wait_signal(window.runFinished, 100, "the run to finish")
    timeline = window.stage.timeline
    await wait_until(lambda: timeline.lanes_shown == len(timeline.lanes), 5, "every lane shown")
    window.recordings.history.show()
    QApplication.processEvents()

    def every_lane_in_sight() -> bool:
        return timeline.lanes_shown >= len(timeline.lanes) or timeline.packed

    await wait_until(every_lane_in_sight, 5, "every lane in sight with the dock open")
    assert window.recordings.history.isVisible()


@pytest.mark.asyncio
async def test_an_animation_paints_the_bare_stage_in_the_presentation_look(qtbot: Any) -> None:
    recording = load_recording(DEMOS / "batching.splitdesk.json")
    frames = ReplayFrames(recording, 0, (640, 360), DARK)
    try:
        stage = frames.stage
        assert stage.window() is stage and not isinstance(stage, QMainWindow)  # no window around it
        for chrome in (QToolBar, QMenuBar, QStatusBar):
            assert not stage.findChildren(chrome)
        assert stage.look == "present" and stage.theme is PRESENT_DARK
        assert stage.caption.isVisible() and stage.caption.where.text() == recording.describe()
        assert not stage.server_lane.isVisible() and not stage.timeline.show_predictions
        image = await frames.frame(frames.duration)
        assert len(image) == 640 * 360 * 4
        # the end: the measured line beside the caption, as presentation mode says it
        assert stage.caption.measured.text() == said(frames.player.state)
    finally:
        frames.dispose()


@pytest.mark.asyncio
@pytest.mark.parametrize("demo", ["batching", "single-slot"])
async def test_an_exported_json_says_what_the_window_says(make_window: Any, demo: str) -> None:
    recording = load_recording(DEMOS / f"{demo}.splitdesk.json")
    window = make_window(AppSettings())
    assert window.recordings.show_recording(recording)
    player = window.recordings.replay.player
    assert player is not None
    finished = asyncio.ensure_future(wait_signal(window.runFinished, 10, "the replay's end"))
    await asyncio.sleep(0)  # connected before the seek that ends it
    player.seek(player.duration)
    await finished
    doc = json.loads(json.dumps(figures_json(recording)))
    state = window.stage.state
    assert state is not None
    assert doc["summary"]["diagnosis"]["text"] == diagnose_state(state).text
    headline = window.stage.summary.headline.text() + window.stage.summary.details.text()
    predicted = doc["summary"]["predicted_speedup"]
    assert predicted is not None, "the recorded prediction reaches the export"
    if demo == "batching":  # a verdict: the window says the prediction beside it
        assert f"predicted {predicted:.1f}×" in headline
    else:  # no verdict (one at a time): the window names no predicted speed-up at all
        assert "predicted" not in headline


@pytest.mark.asyncio
async def test_a_bench_recording_replays_the_whole_comparison(
    make_window: Any, tmp_path: Any
) -> None:
    """``bench --record`` of ``--mode all``: the replay shows combined, parallel and the
    sequential baseline on one clock, named by the set's titles, with the server lane."""
    questions = tmp_path / "two.toml"
    questions.write_text(
        '[[questions]]\ntext = "What is 2+2?"\ntitle = "Sum"\n'
        '[[questions]]\ntext = "Name a colour."\ntitle = "Colour"\n',
        encoding="utf-8",
    )
    path = tmp_path / "bench.splitdesk.json"
    args = ["bench", "--mode", "all", "--questions", str(questions), "--sim-param", "speed=4"]
    bench = [sys.executable, "-m", "splitdesk", *args, "--record", str(path)]
    done = await asyncio.to_thread(subprocess.run, bench, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    window = make_window(AppSettings())
    finished = asyncio.ensure_future(wait_signal(window.runFinished, 30, "the replay's end"))
    await asyncio.sleep(0)
    assert window.recordings.show_recording(load_recording(path), speed=4.0)
    (state,) = await finished
    stage = window.stage
    assert stage.timeline.lanes == ["Combined (2 in 1)", "Q1 Sum", "Q2 Colour", "Sequential"]
    assert (
        "Combined" in stage.summary.headline.text()
        and "Sequential" in stage.summary.headline.text()
    )
    assert stage.server_lane.isVisible() and stage.server_lane.series.peak_running >= 2
    assert not window.recordings.replay.bar.runs_action.isVisible()  # one run, not one per mode
    assert diagnose_state(state).code != "unclear"


@pytest.mark.asyncio
async def test_the_answers_side_by_side_pair_each_question(make_window: Any) -> None:
    """View → Answers side by side: per question its combined section next to its own
    answer, with lengths; on the built-in endpoint the view says the text is synthetic."""
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    window.answers_action.trigger()
    assert window.statusBar().currentMessage().startswith("Nothing to compare yet")
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 100, "the run to finish")
    window.answers_action.trigger()
    dialog = window.stage.answers
    assert dialog is not None and dialog.isVisible()
    view = dialog.view
    assert len(view.rows) == len(state.info.questions)
    assert view.note.isVisible()  # the built-in endpoint's text is synthetic
    for (name, combined, parallel), lengths, pair in zip(
        view.rows, view.lengths, view.pairs, strict=True
    ):
        assert name.text().startswith(f"Q{pair.question + 1} ")
        assert pair.combined_text and pair.parallel_text
        assert (combined.text(), parallel.text()) == (pair.combined_text, pair.parallel_text)
        assert lengths[0].text() == f"~{round(pair.combined_tokens or 0)} tokens"
        assert lengths[1].text() == f"{pair.parallel_tokens} tokens"
    dialog.close()
