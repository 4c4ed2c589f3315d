"""Replays in the window: a live run saved, loaded and replayed at 4× shows the same
figures, pane texts and timeline segments; the scrubber shows any moment; bad files give a
clear message and leave the window usable; demos need no endpoint; two runs compare on
one time axis. Real widgets (offscreen), the real engine and built-in endpoint."""

from __future__ import annotations

import asyncio
import gzip
import time
from pathlib import Path
from typing import Any

import pytest
from core.files.test_recording import bad_files, deny_reading
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from ui.conftest import wait_signal, wait_until

from paths import RECORDINGS
from splitdesk.core.files.recording import (
    autosave_dir,
    figures_of,
    load_recording,
    rebuild_state,
)
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.events import TextReceived
from splitdesk.ui.replay.recordings import demo_files
from splitdesk.ui.shell.main_window import MainWindow

FAST = AppSettings(endpoint=EndpointSettings(speed=4.0))
FIXTURE = RECORDINGS / "v1.splitdesk.json"


def snapshot(window: MainWindow) -> dict[str, Any]:
    """What the views show: every pane's text, state and figures, the timeline's lanes and
    segments (with their hover texts), and the summary."""
    panes = {
        i: (p.text.toPlainText(), p.state.text(), p.stats.full_text())
        for i, p in window.stage.panes.items()
    }
    bars = [(b.lane, b.x0, b.x1, b.kind, b.tip) for b in window.stage.timeline.bars]
    return {
        "panes": panes,
        "lanes": list(window.stage.timeline.lanes),
        "segments": dict(window.stage.timeline.segment_counts),
        "bars": bars,
        "headline": window.stage.summary.headline.text(),
        "details": window.stage.summary.details.text(),
    }


def pane_texts(window: MainWindow) -> dict[int, str]:
    return {i: p.text.toPlainText() for i, p in window.stage.panes.items()}


async def settled(window: MainWindow) -> None:
    """Let the views' throttles paint the final picture."""
    for pane in window.stage.panes.values():
        pane.throttle.flush()
    window.stage.timeline.throttle.request()
    window.stage.timeline.throttle.flush()
    window.stage.summary.throttle.request()
    window.stage.summary.throttle.flush()
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_live_run_saved_loaded_and_replayed_at_4x_looks_the_same(
    make_window: Any, tmp_path: Path
) -> None:
    window = make_window(FAST)
    ui = window.recordings
    saved: asyncio.Future[Path] = asyncio.get_running_loop().create_future()
    ui.autosaved.connect(lambda p: saved.done() or saved.set_result(p))
    window.run_button.click()
    (live_state,) = await wait_signal(window.runFinished, 30)
    await settled(window)
    live = snapshot(window)
    auto = await asyncio.wait_for(saved, 10)
    assert auto.parent == autosave_dir() and auto.is_file()

    # the session history has the run, with the figures of the core figure set
    assert ui.history.table.rowCount() == 1
    figures = figures_of(live_state)
    row = [ui.history.table.item(0, c).text() for c in range(ui.history.table.columnCount())]
    assert row[4] == "5" and row[7] == f"{figures['speedup']:.2f}×" and row[8] == "done"
    assert row[5] == f"{figures['groups']['combined']['makespan_s']:.2f} s"

    # File → Save (gzip by name), then open that file and replay it at 4×
    target = tmp_path / "talk.splitdesk.json.gz"
    recording = ui.current_recording()
    assert recording is not None
    await ui.save_to(recording, target)
    assert gzip.decompress(target.read_bytes()).startswith(b'{"format":"splitdesk-recording"')
    t0 = time.monotonic()
    await ui.open_path(target, speed=4)
    driver = ui.replay
    assert driver.active and driver.player is not None and driver.player.speed == 4
    assert driver.bar.banner.text().startswith("REPLAY of built-in · batching")
    assert window.windowTitle().startswith("REPLAY")
    (replayed,) = await wait_signal(window.runFinished, 30)
    took = time.monotonic() - t0
    await settled(window)
    # driven by the recorded times: never sooner than a quarter of the recorded run
    assert took >= recording.runs[0].duration_s / 4 - 0.05
    assert replayed is not live_state
    assert figures_of(replayed) == figures
    now = snapshot(window)
    assert [b for b in now["bars"] if b not in live["bars"]] == []
    assert [b for b in live["bars"] if b not in now["bars"]] == []
    assert now == live
    assert window.controller.sim is not None  # the live run's endpoint, untouched by replay
    # the replay is not recorded again
    assert ui.history.table.rowCount() == 1

    # the history reopens the run; the comparison shows both on one time axis
    dialog = ui.compare(recording, load_recording(FIXTURE))
    upper, lower = dialog.timelines
    assert lower.plot.getViewBox().linkedView(0) is upper.plot.getViewBox()
    assert upper.lanes[0].startswith("Combined") and len(upper.lanes) == 6
    assert len(lower.lanes) == 3
    dialog.close()
    # the history row reopens the live run as a replay
    ui.history.table.selectRow(0)
    assert ui.history.replay_button.isEnabled() and not ui.history.compare_button.isEnabled()
    ui.history.replay_button.click()
    assert driver.recording is ui.history.entries[0].recording
    driver.seek(driver.player.duration if driver.player else 0.0)
    await settled(window)
    assert snapshot(window) == live


@pytest.mark.asyncio
async def test_scrubber_shows_the_state_at_any_moment_and_pause_holds(make_window: Any) -> None:
    window = make_window(AppSettings())
    recording = load_recording(FIXTURE)
    ui = window.recordings
    assert ui.show_recording(recording, speed=0.25)
    driver = ui.replay
    player = driver.player
    assert player is not None and player.playing
    run = recording.runs[0]
    final = rebuild_state(run)
    whole = next(r for r in final.requests if r.group == "combined")
    assert whole.first_text_t is not None and whole.last_token_t is not None
    moment = (whole.first_text_t + whole.last_token_t) / 2

    driver.seek(moment)
    assert not player.playing and player.position == moment
    then = rebuild_state(run, moment)
    expected = {r.req: r.text for r in then.requests}
    # new panes paint once laid out and visible
    await wait_until(lambda: pane_texts(window) == expected, 5)
    texts = pane_texts(window)
    assert 0 < len(texts[whole.req]) < len(whole.text)
    assert window.state is player.state and window.state.now() == moment
    assert "running" in window.stage.summary.headline.text()

    # paused: nothing moves
    applied = player.state.events_applied
    await asyncio.sleep(0.1)
    assert player.state.events_applied == applied and player.position == moment

    # back to an earlier moment: the views show less again
    early = (whole.first_text_t + moment) / 2
    driver.seek(early)
    earlier = {r.req: r.text for r in rebuild_state(run, early).requests}
    await wait_until(lambda: pane_texts(window) == earlier, 5)
    assert len(earlier[whole.req]) < len(texts[whole.req])

    # resume to the end, then restart from the start
    driver.bar.play_button.click()
    assert player.playing
    (state,) = await wait_signal(window.runFinished, 10)
    await settled(window)
    assert pane_texts(window) == {r.req: r.text for r in final.requests}
    assert driver.bar.play_button.text() == "▶ Play"
    driver.bar.restart_button.click()
    assert player.playing and player.position < moment and player.state is not state
    driver.bar.close_button.click()
    assert not driver.active and driver.bar.isHidden()
    assert not window.windowTitle().startswith("REPLAY")


def test_speed_is_kept_between_quarter_and_four() -> None:
    from splitdesk.ui.stage.playback import ReplayPlayer

    assert ReplayPlayer.clamp_speed(10) == 4.0
    assert ReplayPlayer.clamp_speed(0.01) == 0.25
    assert ReplayPlayer.clamp_speed(2) == 2


@pytest.mark.asyncio
async def test_bad_files_say_what_is_wrong_and_the_window_stays_usable(
    make_window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = make_window(AppSettings())
    ui = window.recordings
    good = load_recording(FIXTURE)
    assert ui.show_recording(good, speed=4)
    await wait_signal(window.runFinished, 10)
    await settled(window)
    before = snapshot(window)
    banner = ui.replay.bar.banner.text()
    messages: list[str] = []
    ui.openFailed.connect(messages.append)
    cases = bad_files(tmp_path)
    deny_reading(monkeypatch, cases["no-permission"][0])
    for name, (path, needle) in cases.items():
        await ui.open_path(path)
        message = window.statusBar().currentMessage()
        assert needle in message, f"{name}: {message}"
        assert str(path) in message
        assert messages[-1] == message
        # what was on screen is still there
        assert ui.replay.bar.banner.text() == banner
        assert snapshot(window) == before
    assert len(messages) == len(cases)
    assert len(ui._notices) == len(cases)  # non-modal notes: the window stays usable
    assert all(not box.isModal() for box in ui._notices)
    # still usable: a good file opens and plays to its end
    await ui.open_path(FIXTURE, speed=4)
    await wait_signal(window.runFinished, 10)
    assert window.run_button.isEnabled()


@pytest.mark.asyncio
async def test_demos_menu_replays_without_any_endpoint(make_window: Any) -> None:
    demos = dict(demo_files())
    assert set(demos) >= {"batching", "single-slot", "rate-limited", "slow-network"}
    window = make_window(AppSettings())
    ui = window.recordings
    ui.demo_actions["single-slot"].trigger()
    await wait_until(lambda: ui.replay.active, 10)
    driver = ui.replay
    assert driver.player is not None
    assert "single-slot" in driver.bar.banner.text()
    finished = asyncio.ensure_future(wait_signal(window.runFinished, 10))
    await asyncio.sleep(0)  # the waiter is connected
    driver.seek(driver.player.duration)  # to the end at once: finishes synchronously
    (state,) = await finished
    assert window.controller.sim is None and not window.controller.engine.alive
    assert len(window.stage.panes) == 1 + len(state.info.questions)
    assert all(r.outcome == "done" for r in state.requests)
    assert state.finished and driver.player.done


@pytest.mark.asyncio
async def test_dropping_a_recording_on_the_window_replays_it(make_window: Any) -> None:
    window = make_window(AppSettings())
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(FIXTURE))])
    pos = QPointF(200, 200)
    actions = Qt.DropAction.CopyAction
    buttons, mods = Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(pos.toPoint(), actions, mime, buttons, mods)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    QApplication.sendEvent(window, QDropEvent(pos, actions, mime, buttons, mods))
    await wait_until(lambda: window.recordings.replay.active, 10)
    (state,) = await wait_signal(window.runFinished, 10)
    texts = [e.text for e in load_recording(FIXTURE).runs[0].events if isinstance(e, TextReceived)]
    assert sum(len(r.text) + len(r.reasoning_text) for r in state.requests) == sum(
        len(t) for t in texts
    )


@pytest.mark.asyncio
async def test_auto_save_can_be_turned_off_and_stays_off(make_window: Any) -> None:
    window = make_window(AppSettings())
    ui = window.recordings
    assert ui.autosave_enabled and ui.autosave_action.isChecked()  # on by default
    ui.autosave_action.trigger()
    assert not ui.autosave_enabled
    assert window.settings.autosave_recordings is False
    window._persist.flush()
    await wait_until(lambda: load_settings_file().get("autosave_recordings") is False, 5)


def load_settings_file() -> dict[str, Any]:
    import json
    import os

    path = Path(os.environ["SPLITDESK_CONFIG_DIR"]) / "settings.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data


@pytest.mark.asyncio
async def test_a_bench_recording_offers_each_of_its_runs(make_window: Any, tmp_path: Path) -> None:
    recording = load_recording(FIXTURE)
    run = recording.runs[0]
    two = recording.model_copy(
        update={"runs": [run, run.model_copy(update={"label": "parallel · repeat 2"})]}
    )
    window = make_window(AppSettings())
    ui = window.recordings
    assert ui.show_recording(two, speed=4)
    bar = ui.replay.bar
    assert bar.runs_action.isVisible() and bar.runs.count() == 2
    bar.runs.setCurrentIndex(1)
    bar.runs.activated.emit(1)
    assert ui.replay.player is not None and ui.replay.player.run.label == "parallel · repeat 2"
    assert bar.banner.text().endswith("· parallel · repeat 2")
    assert ui.show_recording(recording)
    assert not bar.runs_action.isVisible()


@pytest.mark.asyncio
async def test_a_run_in_phases_replays_the_same(make_window: Any) -> None:
    """One after another with the sequential baseline: three phases, each from its own
    t = 0 on the timeline, the SEQ pane summing the baseline."""
    from splitdesk.core.run.questions import Question, QuestionSet

    questions = QuestionSet(
        title="two", questions=[Question(text="What is 2+2?"), Question(text="Name a colour.")]
    )
    window = make_window(
        AppSettings(
            endpoint=EndpointSettings(speed=4.0),
            mode="one-after-another",
            with_sequential=True,
            question_set=questions,
        )
    )
    ui = window.recordings
    window.run_button.click()
    (live_state,) = await wait_signal(window.runFinished, 60)
    await settled(window)
    live = snapshot(window)
    assert [r.group for r in live_state.requests].count("sequential") == 2
    recording = ui.current_recording()
    assert recording is not None and recording.settings.with_sequential
    assert ui.show_recording(recording, speed=4)
    (replayed,) = await wait_signal(window.runFinished, 60)
    await settled(window)
    assert figures_of(replayed) == figures_of(live_state)
    assert snapshot(window) == live


@pytest.mark.asyncio
async def test_replay_labels_panes_and_lanes_with_the_recorded_titles(make_window: Any) -> None:
    """The panes and lanes of a replay are named by the recording's question titles, not by
    whatever questions the editor holds now (nor labels derived from the texts)."""
    from splitdesk.core.run.questions import Question, QuestionSet

    recording = load_recording(dict(demo_files())["batching"])
    titles = [q.title for q in recording.questions]
    assert all(titles), "the batching demo's questions have titles"
    window = make_window(AppSettings())
    other = [Question(text="What is the capital of France?"), Question(text="Why is ice slippery?")]
    window.questions.set_question_set(QuestionSet(title="Two", questions=other))
    window.recordings.demo_actions["batching"].trigger()
    await wait_until(lambda: window.recordings.replay.active, 10)
    parallel = [window.stage.panes[i] for i in range(1, 1 + len(titles))]  # 0: the combined one
    assert [p.title.full_text() for p in parallel] == titles
    driver = window.recordings.replay
    assert driver.player is not None
    driver.seek(driver.player.duration)  # to the end at once
    await wait_until(lambda: len(window.stage.timeline.lanes) == 1 + len(titles), 10)
    assert [lane.split(" ", 1)[1] for lane in window.stage.timeline.lanes[1:]] == titles
