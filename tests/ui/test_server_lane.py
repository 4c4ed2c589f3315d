"""The server lane under the timeline: the built-in endpoint's own /metrics, polled during
a real run in the window (issue 12, must show)."""

from __future__ import annotations

from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.endpoints import EndpointSettings
from splitdesk.core.settings import AppSettings


@pytest.mark.asyncio
async def test_lane_shows_batch_of_n_in_parallel_and_1_in_combined(make_window: Any) -> None:
    # speed 1: the parallel phase's full batch lasts ~1.4 s, several 4 Hz samples
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=1.0)))
    window.mode.setCurrentIndex(window.mode.findData("one-after-another"))
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 90, "the one-after-another run finished")
    lane = window.server_lane
    assert lane.isVisible()
    n = len(state.info.questions)
    combined = next(t for t in state.requests if t.group == "combined")
    parallel = [t for t in state.requests if t.group == "parallel"]
    assert combined.outcome == "done" and all(t.outcome == "done" for t in parallel)
    during_c = lane.series.at(combined.t_send + 0.25, combined.t_end - 0.25)
    assert len(during_c) >= 4 and set(during_c) == {1.0}
    p_start = min(t.t_send for t in parallel)
    p_first_end = min(t.t_end for t in parallel)
    during_p = lane.series.at(p_start + 0.25, p_first_end - 0.25)
    assert during_p and set(during_p) == {float(n)}
    assert lane.series.peak_running == float(n)
    x, y = lane.running_curve.getData()
    assert list(y) == lane.series.running and len(x) == len(y)
    assert f"peak batch {n}" in lane.caption.text() and "splitdesk" in lane.caption.text()
