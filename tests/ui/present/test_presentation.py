"""Presentation mode (issue #11): a real window, offscreen, at a projector's sizes.

A scenario runs live on the built-in endpoint (a child process, real loopback HTTP); the
text sizes are read from the widgets' fonts, the layout from their geometry (helpers of
``test_geometry``); every key drives the window through Qt's own key events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontInfo
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QToolBar, QWidget
from ui.conftest import tasks_left, wait_signal, wait_until
from ui.shell.test_geometry import assert_disjoint, check_grid, check_timeline, rect_in, text_fits

from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.analyse.metrics import summarize
from splitdesk.core.analyse.plain import measured_line
from splitdesk.core.analyse.token_curves import token_curve
from splitdesk.core.files.recording import load_recording, suggested_name
from splitdesk.core.files.scenarios import builtin_scenarios, load_scenario
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.common.gc import GuiGarbageCollector
from splitdesk.ui.common.theme import DARK, PRESENT_DARK, PRESENT_LIGHT, THEMES, apply_theme
from splitdesk.ui.replay.recordings import demo_files
from splitdesk.ui.run.controller import RunController
from splitdesk.ui.shell.main_window import MainWindow

SETTINGS = AppSettings(endpoint=EndpointSettings(speed=4.0), sidebar_collapsed=False)


def said(state: Any) -> str:
    """What presentation mode says beside the caption once ``state`` has ended."""
    return f"Measured: {measured_line(state, diagnose_state(state))}"


@pytest_asyncio.fixture
async def window_sized(qtbot: Any) -> AsyncIterator[Callable[..., MainWindow]]:
    """A window of the given size at the normal look, shown and active; closed (runs and
    endpoint stopped) and the app's look restored afterwards."""
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    saved = (app.font(), app.styleSheet(), app.palette())
    app.setQuitOnLastWindowClosed(False)
    collector = GuiGarbageCollector()
    made: list[MainWindow] = []

    def make(size: tuple[int, int], settings: AppSettings = SETTINGS) -> MainWindow:
        theme = THEMES[settings.theme]  # as splitdesk.app chooses it
        apply_theme(app, theme, 1.0)
        window = MainWindow(settings, RunController(), theme, 1.0)
        window.resize(*size)
        window.show()
        window.activateWindow()
        made.append(window)
        return window

    yield make
    for window in made:
        if not window._closed:
            window.close()
            await wait_signal(window.closed, 30, "the window closed at the end of the test")
    left = await tasks_left()  # before the loop closes: a task left there could hang it
    assert not left, f"tasks left after closing the window: {left}"
    for window in made:
        window.deleteLater()
    app.setStyleSheet(saved[1])
    app.setFont(saved[0])
    app.setPalette(saved[2])
    collector.stop()


async def listen(signal: Any, timeout: float, what: str) -> asyncio.Future[tuple[Any, ...]]:
    """Start waiting for ``signal`` now (connected before the action that emits it)."""
    future = asyncio.ensure_future(wait_signal(signal, timeout, what))
    await asyncio.sleep(0)  # the coroutine runs up to its connect
    return future


def key(window: MainWindow, k: Qt.Key) -> None:
    """Press ``k`` in the window, as a person would (the focused widget gets it first)."""
    target = QApplication.focusWidget() or window
    QTest.keyClick(target, k)


def px(widget: QWidget) -> int:
    """The pixel size of the font the widget is drawn with."""
    return QFontInfo(widget.font()).pixelSize()


async def active(window: MainWindow) -> None:
    await wait_until(
        lambda: QApplication.activeWindow() is window, 10, "the window became the active one"
    )


def check_caption(window: MainWindow) -> None:
    """The caption area's texts are whole, inside it and apart."""
    bar = window.presentation.caption_bar
    assert bar.isVisible()
    for label in (bar.where, bar.keys):
        text_fits(label)
    parts = [(name, rect_in(w, bar)) for name, w in (("where", bar.where), ("keys", bar.keys))]
    for name, label in (("caption", bar.caption), ("measured", bar.measured)):
        if label.text():
            need = label.heightForWidth(label.width())
            assert label.height() >= need, f"{name} cut: {label.height()} < {need}"
            parts.append((name, rect_in(label, bar)))
    assert_disjoint(parts, "caption area")
    for name, r in parts:
        assert bar.rect().contains(r), f"{name} sticks out of the caption area"


def check_summary_whole(window: MainWindow) -> None:
    """Every line of the summary strip is whole and inside the window."""
    summary = window.stage.summary
    assert window.rect().contains(rect_in(summary, window)), "summary outside the window"
    for label in summary.findChildren(QLabel):
        if label.isVisible() and label.text():
            assert summary.rect().contains(rect_in(label, summary)), label.text()[:40]
            need = label.heightForWidth(label.width())
            assert label.height() >= need, f"{label.text()[:40]!r} cut: {label.height()} < {need}"


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)], ids=["1920x1080", "1280x720"])
async def test_a_live_scenario_in_presentation_mode_is_legible(
    window_sized: Any, size: tuple[int, int], tmp_path: Path
) -> None:
    window = window_sized(size)
    await active(window)
    key(window, Qt.Key.Key_F11)
    p = window.presentation
    assert p.active
    assert window.sidebar.isHidden() and window.statusBar().isHidden()
    assert all(b.isHidden() for b in window.findChildren(QToolBar))
    assert window.theme is PRESENT_DARK
    key(window, Qt.Key.Key_1)  # the batching scenario
    scenario = builtin_scenarios()["batching"]
    assert p.caption_bar.caption.text() == scenario.caption
    assert p.caption_bar.where.text() == "1 / 11 · Batching server"
    assert window.questions.questions() == scenario.questions

    finished = await listen(window.runFinished, 90, "the batching scenario's live run")
    key(window, Qt.Key.Key_Space)
    (state,) = await finished
    assert [r.outcome for r in state.requests] == ["done"] * 6
    await wait_until(
        lambda: all(pane.text.toPlainText() for pane in window.stage.grid.panes), 10, "panes filled"
    )
    # the measured diagnosis beside the caption: core/diagnosis.py's line, not recomputed
    assert p.caption_bar.measured.text() == said(state)
    assert p.caption_bar.measured_kind == "sooner"  # a win, in the colour of a win
    # engineer detail hidden: no prediction outlines, no predicted figures
    assert window.stage.look == "present"
    assert not window.stage.timeline.show_predictions and not window.stage.summary.show_predictions
    assert (
        not window.stage.timeline.ghost_item.isVisible()
        and window.stage.timeline.predictions is None
    )
    assert "predicted" not in window.stage.timeline.legend.text()

    QApplication.processEvents()
    labels = window.stage._labels
    check_grid(window, 5, labels)
    check_timeline(window, 5, labels)
    check_summary_whole(window)
    check_caption(window)
    pane_px = min(
        px(pane.text) for pane in [*window.stage.grid.panes, *window.stage.panes.values()]
    )
    summary_px = min(
        px(label) for label in window.stage.summary.findChildren(QLabel) if label.isVisible()
    )
    lane_px = QFontInfo(window.stage.timeline.lane_font).pixelSize()
    if size == (1920, 1080):  # the sizes for the back row
        assert pane_px >= 24, f"pane text {pane_px} px"
        assert summary_px >= 24, f"summary text {summary_px} px"
        assert lane_px >= 18, f"timeline labels {lane_px} px"
    else:  # a 720p projector fills the same wall: the same share of the screen's height
        share = size[1] / 1080
        assert pane_px >= 24 * share and summary_px >= 24 * share, (pane_px, summary_px)
        assert lane_px >= 18 * share, f"timeline labels {lane_px} px"
    assert px(p.caption_bar.caption) > px(p.caption_bar.measured) >= pane_px
    shot = tmp_path / f"presentation-{size[0]}x{size[1]}.png"
    assert window.grab().save(str(shot)) and shot.stat().st_size > 10_000


@pytest.mark.asyncio
async def test_every_key_drives_the_window(window_sized: Any) -> None:
    window = window_sized((1280, 720))
    await active(window)
    p = window.presentation
    normal_scale = window.scale

    key(window, Qt.Key.Key_F11)  # F11 enters …
    assert p.active and window.sidebar.isHidden()
    key(window, Qt.Key.Key_Escape)  # … Esc, with nothing running, leaves …
    assert not p.active and not window.sidebar.isHidden()
    assert window.scale == normal_scale and window.theme is DARK
    assert window.stage.look == "window" and window.stage.timeline.show_predictions
    p.action.trigger()  # … and so does the toolbar button
    assert p.active
    scale = window.scale

    key(window, Qt.Key.Key_Right)  # → the first scenario, → the next, ← back
    assert p.index == 0
    key(window, Qt.Key.Key_Right)
    assert p.index == 1 and window.endpoint.settings().profile == "single-slot"
    key(window, Qt.Key.Key_Left)
    assert p.index == 0 and window.endpoint.settings().profile == "batching"
    key(window, Qt.Key.Key_3)  # 1–9 jump
    rate = builtin_scenarios()["rate-limit"]
    assert p.index == 2 and p.caption_bar.caption.text() == rate.caption
    assert window.endpoint.settings().profile == "rate-limited"
    assert window.endpoint.settings().retry_429 == rate.spec.run.retry_429
    assert window.controller.sim_overrides == dict(rate.spec.endpoint.params)
    key(window, Qt.Key.Key_7)
    assert p.index == 6 and window.mode.currentData() == "dependent"
    key(window, Qt.Key.Key_9)  # the ninth: one document with the prefix cache (issue 24)
    assert p.index == 8 and window.controller.sim_overrides == {"prefix_cache": True}
    assert window.questions.context().startswith("HARBOUR STREET")

    key(window, Qt.Key.Key_Plus)  # +/− type size
    assert window.scale == pytest.approx(scale * 1.1)
    assert px(window.presentation.caption_bar.caption) > 0
    key(window, Qt.Key.Key_Minus)
    key(window, Qt.Key.Key_Minus)
    assert window.scale == pytest.approx(scale / 1.1)
    key(window, Qt.Key.Key_Plus)
    assert window.scale == pytest.approx(scale)

    # a replay of a recording (no network): Space pauses and resumes, R restarts it
    key(window, Qt.Key.Key_R)  # nothing recorded yet
    assert window.recordings.replay.player is None
    path = dict(demo_files())["batching"]
    recording = load_recording(path)
    assert window.recordings.show_recording(recording, speed=0.25)
    player = window.recordings.replay.player
    assert player is not None and player.playing
    key(window, Qt.Key.Key_Space)
    assert not player.playing
    key(window, Qt.Key.Key_Space)
    assert player.playing
    key(window, Qt.Key.Key_Escape)  # Esc pauses a playing replay, stays presenting
    assert not player.playing and p.active
    player.seek(player.duration / 2)
    key(window, Qt.Key.Key_R)  # R: the last run again, from its start (presentation's player)
    replayed = p.player
    assert replayed is not None and replayed.playing and replayed.position < player.duration / 2
    assert window.recordings.replay.player is None  # one driver of the stage at a time
    assert not window.recordings.replay.bar.isVisible()  # keys drive it, not the bar
    finished = await listen(window.runFinished, 60, "the replay to finish")
    replayed.set_speed(4.0)
    (state,) = await finished
    assert p.caption_bar.measured.text() == said(state)

    # a live run: Space runs, Esc stops it (and does not leave)
    key(window, Qt.Key.Key_1)
    started = await listen(window.controller.runStarted, 60, "the live run to start")
    key(window, Qt.Key.Key_Space)
    await started
    assert window.controller.busy
    stopped = await listen(window.runFinished, 30, "the stopped run to end")
    key(window, Qt.Key.Key_Escape)
    (state,) = await stopped
    assert state.ended is not None and state.ended.stopped and p.active
    assert p.caption_bar.measured.text() == "Stopped: nothing measured."
    assert p.caption_bar.measured_kind == "no-verdict"  # not in the colour of a win
    key(window, Qt.Key.Key_Escape)  # now Esc leaves
    assert not p.active


@pytest.mark.asyncio
async def test_the_light_theme_presents_in_the_light_high_contrast_palette(
    window_sized: Any,
) -> None:
    window = window_sized((1280, 720), SETTINGS.model_copy(update={"theme": "light"}))
    await active(window)
    window.presentation.set_active(True)
    assert window.theme is PRESENT_LIGHT
    assert window.presentation.caption_bar.isVisible()


@pytest.mark.asyncio
async def test_dependent_questions_measure_the_combined_request_against_the_chain(
    window_sized: Any,
) -> None:
    window = window_sized((1280, 720))
    await active(window)
    window.presentation.set_active(True)
    key(window, Qt.Key.Key_7)
    finished = await listen(window.runFinished, 90, "the dependent scenario's live run")
    key(window, Qt.Key.Key_Space)
    (state,) = await finished
    assert [r.group for r in state.requests] == ["combined", "sequential", "sequential"]
    groups = summarize(state).groups
    combined, chain = groups["combined"].makespan_s, groups["sequential"].makespan_s
    assert combined is not None and chain is not None and combined < chain
    assert window.presentation.caption_bar.measured.text() == (
        f"Measured: The combined request finished in {combined:.1f} s, the chain of 2 "
        f"requests in {chain:.1f} s — combining finished {chain - combined:.1f} s sooner."
    )


@pytest.mark.asyncio
async def test_the_tokens_chart_follows_a_replay_and_ends_at_the_group_totals(
    window_sized: Any,
) -> None:
    window = window_sized((1920, 1080))
    await active(window)
    window.presentation.set_active(True)
    chart = window.stage.chart
    assert chart.isHidden()
    assert not chart._ticker.isActive()  # hidden, it polls nothing
    key(window, Qt.Key.Key_T)  # T shows it beside the timeline
    assert chart.isVisible()
    assert chart._ticker.isActive()
    assert chart.parentWidget() is window.stage.timeline.parentWidget()  # side by side
    recording = load_recording(dict(demo_files())["batching"])
    finished = await listen(window.runFinished, 60, "the replay to finish")
    assert window.recordings.show_recording(recording, speed=2.0)

    def drawn(group: str) -> int:
        xs = chart.curves[group].getData()[0]
        return 0 if xs is None else len(xs)

    await wait_until(lambda: drawn("combined") > 1, 20, "the combined curve grew during replay")
    (state,) = await finished
    await wait_until(lambda: drawn("parallel") > 1, 5, "the chart drew the parallel curve")
    await wait_until(
        lambda: drawn("parallel") == len(token_curve(state.group("parallel"))),
        5,
        "the chart caught up with the last events",
    )
    groups = summarize(state).groups
    for group in ("combined", "parallel"):
        xs, ys = chart.curves[group].getData()
        expected = token_curve(state.group(group))
        assert list(xs) == [t for t, _ in expected] and list(ys) == [n for _, n in expected]
        assert ys[-1] == pytest.approx(groups[group].output_tokens)
    # the parallel streams together climb faster than the one combined stream
    assert groups["parallel"].makespan_s < groups["combined"].makespan_s
    key(window, Qt.Key.Key_T)
    assert chart.isHidden()
    assert not chart._ticker.isActive()


@pytest.mark.asyncio
async def test_every_scenario_shows_its_own_state_never_anothers(
    window_sized: Any, tmp_path: Path
) -> None:
    """The talk walked with the keys: each scenario's caption, headline and panes belong to
    it — an empty stage saying what Space does, its own result once it ran (also when the
    talk comes back to it), its own recording (a user's scenario that replays one)."""
    window = window_sized((1280, 720))
    await active(window)
    p = window.presentation
    key(window, Qt.Key.Key_F11)
    scenarios = list(builtin_scenarios().values())
    n = len(p.scenarios)
    for k, s in enumerate(scenarios):
        if k == 0:
            key(window, Qt.Key.Key_Right)
        elif k < 9:
            key(window, getattr(Qt.Key, f"Key_{k + 1}"))
        else:
            key(window, Qt.Key.Key_Right)
        assert p.index == k and p.caption_bar.where.text() == f"{k + 1} / {n} · {s.title}"
        assert p.caption_bar.caption.text() == s.caption
        assert window.stage.state is None and not window.stage.panes, s.name
        assert f"Press Space to run “{s.title}”." in window.stage.summary.headline.text()
        assert p.caption_bar.measured.text() == ""
        assert p.caption_bar.keys.text().startswith("Space run ·")
    # run the first; its result is on the stage, named in the caption
    key(window, Qt.Key.Key_1)
    finished = await listen(window.runFinished, 90, "the batching scenario's live run")
    key(window, Qt.Key.Key_Space)
    (first,) = await finished
    measured = said(first)
    # its recording is named after the scenario (the auto-saved file too)
    await wait_until(lambda: bool(window.recordings.history.entries), 10, "the run recorded")
    recording = window.recordings.history.entries[0].recording
    assert recording is not None and recording.title == scenarios[0].title
    slug = "-".join(scenarios[0].title.lower().split())
    assert suggested_name(recording).endswith(f"-{slug}.splitdesk.json")
    assert p.caption_bar.measured.text() == measured
    assert "sooner" in window.stage.summary.headline.text()
    # → the next: not the first one's result
    key(window, Qt.Key.Key_Right)
    assert window.stage.state is None and "sooner" not in window.stage.summary.headline.text()
    assert p.caption_bar.measured.text() == ""
    # ← back: the first one's own result again, at its end
    shown = await listen(window.runFinished, 20, "the first scenario's result shown again")
    key(window, Qt.Key.Key_Left)
    (again,) = await shown
    assert [r.text for r in again.requests] == [r.text for r in first.requests]
    assert p.caption_bar.measured.text() == measured
    assert "sooner" in window.stage.summary.headline.text()
    # a user's scenario that replays a recording: its recording at its start, Space plays it
    demo = dict(demo_files())["single-slot"]
    path = tmp_path / "replay.toml"
    path.write_text(
        'version = 1\ntitle = "Replay of a single-slot run"\n'
        'caption = "One request at a time: no gain."\nquestions = "everyday-five"\n'
        f'[endpoint]\nrecording = "{demo}"\n',
        encoding="utf-8",
    )
    p.open_scenario(load_scenario(path))
    await wait_until(lambda: p.player is not None, 10, "the scenario's recording opened")
    assert p.player is not None and not p.player.playing and p.player.position == 0.0
    assert p.caption_bar.keys.text().startswith("Space play ·")
    replayed = await listen(window.runFinished, 60, "the scenario's recording played")
    key(window, Qt.Key.Key_Space)
    assert p.player.playing
    p.player.set_speed(4.0)
    (state,) = await replayed
    assert p.caption_bar.measured.text() == said(state)
    assert "sooner" not in window.stage.summary.headline.text()  # its own, not batching's
