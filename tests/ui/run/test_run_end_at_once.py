"""A run's end is on the stage as soon as its last event is in, however slow the live views'
frame: on a busy machine the frame stretches to 400 ms (``throttle.BUSY_PACE``), and the
drain that waited for the frame kept the verdict back for up to one of them. Real widgets
(offscreen), the real engine process and the built-in endpoint over loopback."""

from __future__ import annotations

import os
import time
from concurrent.futures import Future
from typing import Any

import pytest
from cputime import tree_delays, waited_between
from ui.conftest import wait_signal, wait_until

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.common import throttle
from splitdesk.ui.run import controller as controller_module

#: The live views' frame the run is held at (s): far longer than the bound below.
FRAME_S = 10.0
#: Most a finished run may take, of the app's own time, from its last event's arrival in
#: the window's process to the window saying it finished (s): its panes' final figures,
#: the timeline's last frame and the summary, each in a turn of its own.
SHOWN_WITHIN_S = 0.5


@pytest.mark.asyncio
async def test_a_finished_run_is_shown_at_once_at_any_frame(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controller_module, "set_live_pace", lambda factor: None)  # held
    throttle.set_live_pace(FRAME_S * 1000 / throttle.LIVE_FRAME_MS)
    try:
        window = make_window(AppSettings(endpoint=EndpointSettings(speed=8.0)))
        over: list[tuple[float, dict[tuple[int, int], int]]] = []

        def run_over(_future: Future[None]) -> None:  # on the engine's reader thread
            over.append((time.monotonic(), tree_delays([os.getpid()], descendants=False)))

        window.run_button.click()
        await wait_until(
            lambda: window.controller.live is not None, 10, "the run reached the engine"
        )
        window.controller.live.future.add_done_callback(run_over)
        (state,) = await wait_signal(window.runFinished, 60, "the default run's end")
        shown, delays = time.monotonic(), tree_delays([os.getpid()], descendants=False)
    finally:
        throttle.set_live_pace(1.0)
    assert over, "the run's future completed"
    t_over, delays_over = over[0]
    own = shown - t_over - waited_between(delays_over, delays)
    assert own < SHOWN_WITHIN_S, (
        f"at a {FRAME_S:g} s frame, the run's end took {own * 1000:.0f} ms of the app's own "
        f"time ({(shown - t_over) * 1000:.0f} ms wall clock) to show"
    )
    assert all(r.outcome == "done" for r in state.requests)
    assert "done" in window.stage.panes[state.requests[-1].req].state.text()
