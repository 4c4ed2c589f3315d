"""A reply of one huge unbroken string (base64-like, no space) or one endless paragraph:
the panes lay out at most PANE_TEXT_LIMIT characters, wrap anywhere once a run has no
space to break at, say how many characters they hold back, and the window stays
responsive; the run (and so recordings, exports, copies) keeps the full text. Real widgets
offscreen; the window test streams from a real loopback server."""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

import pytest
from cputime import tree_delays, waited_between
from PySide6.QtGui import QTextOption
from ui.conftest import wait_signal

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.stage.panes import LONG_RUN, PANE_TEXT_LIMIT, TextStream
from streamserver import ReplayServer

#: the worst GUI-loop lag the app itself may cause while 1 MB replies arrive (s; generous:
#: 0.17-0.25 s measured here, 0.03-0.04 s with a 1 KB reply; the old code froze for minutes)
MAX_LAG_S = 0.5

BLOB = "QUJD" * (256 * 1024)  # 1 MiB, no space, no line end


def test_a_pane_lays_out_its_limit_and_counts_the_rest(qtbot: Any) -> None:
    pane = TextStream()
    qtbot.addWidget(pane)
    pane.resize(400, 200)
    pane.show()
    pane.append_text("Hello ")
    assert pane.wordWrapMode() != QTextOption.WrapMode.WrapAnywhere  # prose wraps at words
    pane.append_text(BLOB[:300_000])
    pane.append_text(BLOB[:50_000])
    assert pane.wordWrapMode() == QTextOption.WrapMode.WrapAnywhere
    shown, note = pane.toPlainText().split("\n")
    assert shown == ("Hello " + BLOB)[:PANE_TEXT_LIMIT]
    held = 6 + 350_000 - PANE_TEXT_LIMIT
    assert note == f"… {held:,} more characters (the full text is in the recording and exports)"
    assert pane.shown_chars == PANE_TEXT_LIMIT and pane.held_back == held


def test_an_unbroken_run_split_across_appends_switches_to_wrap_anywhere(qtbot: Any) -> None:
    pane = TextStream()
    qtbot.addWidget(pane)
    for _ in range(LONG_RUN // 100 - 1):
        pane.append_text("x" * 100)
    assert pane.wordWrapMode() != QTextOption.WrapMode.WrapAnywhere
    pane.append_text("y" * 100)  # the run reaches LONG_RUN characters over many appends
    assert pane.wordWrapMode() == QTextOption.WrapMode.WrapAnywhere


class _Lag:
    """How late ``asyncio.sleep(0.01)`` wakes on the GUI loop, less the time this process
    waited for a CPU (a shared machine), as tests/ui/run/test_faults_window.py measures."""

    def __init__(self) -> None:
        self.own: list[float] = []
        self._task = asyncio.ensure_future(self._sample())

    async def _sample(self) -> None:
        while True:
            before = tree_delays([os.getpid()], descendants=False)
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            lag = time.perf_counter() - t - 0.01
            waited = waited_between(before, tree_delays([os.getpid()], descendants=False))
            self.own.append(max(0.0, lag - waited))

    async def stop(self) -> float:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        return max(self.own)


def _event(content: str, finish: str | None = None) -> bytes:
    delta = {"content": content} if content else {}
    chunk = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


@pytest.mark.asyncio
async def test_a_1_mb_unbroken_reply_keeps_the_window_responsive(make_window: Any) -> None:
    body = _event(BLOB) + _event("", "stop") + b"data: [DONE]\n\n"
    reads = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    headers = {"content-type": "text/event-stream"}
    async with ReplayServer(200, headers, reads, pause=0) as server:
        endpoint = EndpointSettings(preset="custom", base_url=server.url + "/v1", model="m")
        window = make_window(AppSettings(endpoint=endpoint))
        await asyncio.sleep(0)
        probe = _Lag()
        window.run_button.click()
        (state,) = await wait_signal(window.runFinished, 60, "the run of 1 MB replies to end")
        worst = await probe.stop()
    answered = [r for r in state.requests if r.outcome == "done"]
    assert answered and all(r.text == BLOB for r in answered)  # the run keeps every character
    assert len(probe.own) >= 5
    assert worst < MAX_LAG_S, f"the GUI loop lagged {worst * 1000:.0f} ms on 1 MB replies"
    for pane in window.stage.panes.values():
        if pane.trace is not None and pane.trace.outcome == "done":
            shown = pane.text.toPlainText()
            assert shown.startswith(BLOB[: PANE_TEXT_LIMIT // 2])
            assert shown.endswith("more characters (the full text is in the recording and exports)")
