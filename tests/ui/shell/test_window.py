"""The window end to end: real widgets (offscreen), the real engine thread, the built-in
endpoint in a child process, real loopback HTTP."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from cputime import RunQueueMeter
from PySide6.QtCore import Qt
from ui.conftest import wait_signal, wait_until

from splitdesk.core.files.settings import AppSettings, load_settings
from splitdesk.core.run.endpoints import EndpointSettings, KeySource
from splitdesk.core.run.questions import DEFAULT_SET, builtin_sets
from splitdesk.sim import textgen
from splitdesk.sim.params import SimParams
from splitdesk.ui.stage.panes import CombinedPane
from streamserver import ReplayServer

QUESTIONS = builtin_sets()[DEFAULT_SET].texts
FAST = AppSettings(endpoint=EndpointSettings(speed=4.0))


def expected_answer(question: str) -> str:
    p = SimParams()
    return "".join(textgen.answer_tokens(question, 0, p.answer_tokens, p.answer_spread))


@pytest.mark.asyncio
async def test_full_run_fills_every_pane_and_tells_the_story(make_window: Any) -> None:
    window = make_window(FAST)
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 90, "the full run to finish")

    n = len(QUESTIONS)
    combined = [p for p in window.stage.panes.values() if isinstance(p, CombinedPane)]
    parallel = window.stage.grid.panes
    assert len(combined) == 1 and len(parallel) == n
    # Every parallel pane shows exactly the answer the built-in endpoint sent for its question.
    for q, pane in enumerate(parallel):
        assert pane.text.toPlainText() == expected_answer(QUESTIONS[q])
        assert "done" in pane.state.text()
        # A narrow pane drops figures rather than cutting one; hovering shows them all.
        full = pane.stats.full_text()
        assert "TTFT" in full and "tok/s" in full and " tok · " in full and "end" in full
        shown = pane.stats.text()
        assert shown.startswith("TTFT") and "end" in shown and "…" not in shown
        assert pane.stats.toolTip() == ("" if shown == full else full)
    # The combined pane holds all N answers, each marker found and painted as a heading.
    text = combined[0].text.toPlainText()
    for q in range(n):
        assert f"Answer {q + 1}:" in text
        assert expected_answer(QUESTIONS[q]) in text
    assert sorted(combined[0]._headed) == list(range(n))
    # Timeline: 1 + N lanes; the combined lane in N answer segments, the others in one.
    timeline = window.stage.timeline
    assert len(timeline.lanes) == 1 + n
    assert timeline.lanes[0].startswith("Combined")
    combined_req = next(r.req for r in state.requests if r.group == "combined")
    assert timeline.segment_counts[combined_req] == n
    assert all(timeline.segment_counts[r.req] == 1 for r in state.requests if r.group == "parallel")
    # Answer 5 starts late in the combined lane, with everyone else's start in the parallel lanes.
    starts = [b.x0 for b in timeline.bars if b.kind == "stream" and b.lane == 0]
    assert starts == sorted(starts) and starts[-1] > 1.0
    assert max(b.x0 for b in timeline.bars if b.kind == "stream" and b.lane > 0) < 0.3
    # Summary: the speed-up on the batching profile.
    summary = window.stage.summary.summary
    assert summary is not None and summary.speedup is not None and summary.speedup > 2
    assert "Parallel finished" in window.stage.summary.headline.text()
    assert "sooner" in window.stage.summary.headline.text()
    assert "Stop" in window.stop_button.text() and not window.stop_button.isEnabled()
    assert window.run_button.isEnabled()


@pytest.mark.asyncio
async def test_one_after_another_with_the_sequential_baseline(make_window: Any) -> None:
    window = make_window(
        AppSettings(
            endpoint=EndpointSettings(speed=4.0), mode="one-after-another", with_sequential=True
        )
    )
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 100, "all three phases to finish")
    n = len(QUESTIONS)
    assert [r.group for r in state.requests].count("sequential") == n
    # The sequential lane: N numbered segments, one after another, one end label.
    timeline = window.stage.timeline
    assert timeline.lanes[-1] == "Sequential" and len(timeline.lanes) == 1 + n + 1
    seq_lane = len(timeline.lanes) - 1
    segments = sorted(
        (b.x0, b.x1) for b in timeline.bars if b.kind == "stream" and b.lane == seq_lane
    )
    assert len(segments) == n
    assert all(a[1] <= b[0] + 1e-6 for a, b in itertools.pairwise(segments))
    shown = [lb for lb in timeline.labels if lb.isVisible()]
    numbers = [lb.toPlainText() for lb in shown if round(lb.pos().y()) == seq_lane]
    # the lane's end label: how long after the baseline's first send its last token came
    # (the bars sit on the run's one clock, after the combined and parallel phases)
    origin = min(r.t_send or 0.0 for r in state.requests if r.group == "sequential")
    assert origin > 0.5, "the baseline ran after the other two ways, on the same axis"
    assert numbers == [str(q + 1) for q in range(n)] + [f"{segments[-1][1] - origin:.1f} s"]
    ends = [lb for lb in shown if lb.toPlainText().endswith(" s")]
    assert len(ends) == len(timeline.lanes)  # one end label per lane
    # The SEQ pane sums up the whole baseline, and the summary names all three.
    seq = window.stage._sequential
    assert seq is not None
    assert seq.stats.full_text().startswith(f"{n}/{n} answered · TTFT ")
    assert "Sequential" in window.stage.summary.headline.text()


@pytest.mark.asyncio
async def test_stop_mid_run_stops_every_pane_quickly_and_keeps_text(make_window: Any) -> None:
    window = make_window(AppSettings())  # speed 1: ~10 s of combined reply
    window.run_button.click()
    # Waits for things that come for sure, however loaded the machine (the endpoint and the
    # engine start as child processes): generous, and each says what it waited for.
    await wait_signal(window.controller.runStarted, 60, "the built-in endpoint, engine, run")
    # every request planned (an empty list would pass all()) and >30 characters in
    await wait_until(
        lambda: (
            window.state is not None
            and len(window.state.requests) == 1 + len(QUESTIONS)
            and all(r.text_len > 30 for r in window.state.requests)
        ),
        60,
        "every request has streamed more than 30 characters",
    )
    loop = asyncio.get_running_loop()
    engine = window.controller.engine.pid
    assert engine is not None
    finished = asyncio.ensure_future(wait_signal(window.runFinished, 20, "the stopped run"))
    # The bound is on the app's own time: the wall clock minus the time the GUI process and
    # the engine (the stop's path) waited for a CPU that other processes held (2 shared cores).
    with RunQueueMeter(os.getpid(), engine) as cpu:
        t0 = loop.time()
        window.stop_button.click()
        await wait_until(
            lambda: all("stopped" in p.state.text() for p in window.stage.panes.values()),
            2,
            "every pane says stopped",
        )
        took = loop.time() - t0
    own = took - cpu.waited_s
    assert own < 0.2, f"stop took {own:.3f} s of the app's own time ({took:.3f} s wall clock)"
    for pane in window.stage.panes.values():
        assert len(pane.text.toPlainText()) > 30  # partial text kept
    await finished
    assert "stopped" in window.stage.summary.headline.text()
    assert window.run_button.isEnabled()


@pytest.mark.asyncio
async def test_refused_connection_shows_one_banner_with_the_cause_and_the_fix(
    make_window: Any,
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    endpoint = EndpointSettings(preset="custom", base_url=f"http://127.0.0.1:{port}/v1", model="m")
    window = make_window(AppSettings(endpoint=endpoint))
    window.run_button.click()
    await wait_signal(window.runFinished, 60, "the run to finish")
    assert window.stage.panes
    # the cause and the fix once, in the summary's banner ...
    banner = window.stage.summary.banner
    assert banner.isVisible()
    assert f"All {len(window.stage.panes)} requests failed the same way" in banner.text()
    assert f"cannot connect to 127.0.0.1:{port}" in banner.text()
    assert "is the server running at" in banner.text()
    # ... not N copies: each pane says it failed and points there
    for pane in window.stage.panes.values():
        assert "failed" in pane.state.text()
        assert pane.error.isVisible()
        assert "is the server running at" not in pane.error.text()
        assert "shown once, in the summary" in pane.error.text()
    # the headline counts the failures instead of showing a time
    headline = window.stage.summary.headline.text()
    assert "Combined: " in headline and "1 of 1 failed (cannot connect)" in headline
    assert f"{len(QUESTIONS)} of {len(QUESTIONS)} failed (cannot connect)" in headline


@pytest.mark.asyncio
async def test_test_connection_says_what_to_do_when_nothing_listens(make_window: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    window = make_window(AppSettings(endpoint=EndpointSettings(preset="custom", base_url=base)))
    panel = window.endpoint
    panel.test_button.click()
    await wait_until(lambda: panel.test_note.text().startswith("✕"), 30, "the test's ✕ note")
    assert f"cannot connect to 127.0.0.1:{port}" in panel.test_note.text()
    assert f"is the server running at {base}?" in panel.test_note.text()


@pytest.mark.asyncio
async def test_http_401_says_to_check_the_key_and_never_shows_it(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-window-test-SECRET-42"
    monkeypatch.setenv("SPLITDESK_TEST_KEY", key)
    body = json.dumps(
        {
            "error": {
                "message": f"Incorrect API key provided: {key}",
                "type": "invalid_request_error",
            }
        }
    )
    async with ReplayServer(401, {"content-type": "application/json"}, [body.encode()]) as server:
        endpoint = EndpointSettings(
            preset="custom",
            base_url=server.url + "/v1",
            model="m",
            key_source=KeySource.ENV,
            key_env="SPLITDESK_TEST_KEY",
        )
        window = make_window(AppSettings(endpoint=endpoint))
        window.run_button.click()
        await wait_signal(window.runFinished, 60, "the run to finish")
        assert any(key.encode() in head for head, _ in server.requests)
    banner = window.stage.summary.banner
    assert banner.isVisible()
    assert "HTTP 401" in banner.text() and "check the API key" in banner.text()
    assert key not in banner.text()
    for pane in window.stage.panes.values():
        assert "failed" in pane.error.text() and "HTTP 401" not in pane.error.text()
        assert key not in pane.error.text()
    assert key not in window.stage.summary.headline.text() + window.stage.summary.explain.text()


@pytest.mark.asyncio
async def test_command_line_endpoint_is_for_this_session_only(
    make_window: Any, config_dir: Path
) -> None:
    saved = EndpointSettings(preset="custom", base_url="http://gpu-box:8000/v1", model="m")
    session = EndpointSettings(profile="single-slot", speed=4.0)  # splitdesk --profile … --speed 4
    window = make_window(AppSettings(endpoint=session), saved_endpoint=saved)
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 90, "the full run to finish")
    assert all(r.outcome == "done" for r in state.requests)  # ran on the built-in endpoint
    window.close()
    await wait_signal(window.closed, 30, "the window closed")
    assert (config_dir / "settings.json").exists()
    stored, problem = load_settings()
    assert problem is None
    assert stored.endpoint == saved  # the user's own endpoint is still there next time
    assert stored.window_size == (1400, 900)  # and the window opens at its last size


@pytest.mark.asyncio
async def test_fewer_than_two_questions_disable_run_with_a_reason(make_window: Any) -> None:
    window = make_window(AppSettings())
    editor = window.questions
    while editor.list.count() > 1:
        editor.list.setCurrentRow(0)
        editor.remove()
    assert not window.run_button.isEnabled()
    assert "at least 2 questions" in window.problem_label.text()
    editor.paste_lines(["What is a prime number?", "", "Why do cats purr?"])
    assert window.run_button.isEnabled()
    assert editor.questions()[-2:] == ["What is a prime number?", "Why do cats purr?"]


def test_questions_editor_rows(qtbot: Any) -> None:
    from splitdesk.ui.common.theme import DARK
    from splitdesk.ui.inputs.questions_editor import QuestionsEditor

    editor = QuestionsEditor(DARK)
    qtbot.addWidget(editor)
    editor.show()
    qtbot.waitExposed(editor)
    n = len(editor.questions())
    editor.list.setCurrentRow(0)
    editor.duplicate()
    assert editor.questions()[0] == editor.questions()[1] and len(editor.questions()) == n + 1
    editor.list.setCurrentRow(0)
    qtbot.keyClick(editor.list, Qt.Key.Key_Down, Qt.KeyboardModifier.ControlModifier)
    assert editor.list.currentRow() == 1
    editor.add_empty()
    assert len(editor.questions()) == n + 1  # the empty row is skipped
    assert "empty row" in editor.problem_label.text()
    with qtbot.waitSignal(editor.changed):
        editor.list.item(editor.list.count() - 1).setText("Line one\nLine two")
    assert editor.questions()[-2:] == ["Line one", "Line two"]
    qtbot.keyClick(editor.list, Qt.Key.Key_Delete)
    assert len(editor.questions()) == n + 2
    assert "Line one" not in editor.questions()
