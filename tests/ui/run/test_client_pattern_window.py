"""The client's own pattern from the window's Engineer menu (issue 12): the run sends the
chosen way, the summary names it beside the speed-up and the recording keeps it."""

from __future__ import annotations

from typing import Any

import pytest
from ui.conftest import wait_signal, wait_until

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings


@pytest.mark.asyncio
async def test_cold_as_scheduled_from_the_engineer_menu(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    window.mode.setCurrentIndex(window.mode.findData("one-after-another"))
    window.engineer.cold.setChecked(True)
    window.engineer.as_scheduled.setChecked(True)
    entries: list[Any] = []
    window.recordings.recorded.connect(entries.append)
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 90, "the one-after-another run finished")
    # every request opened its connection inside its measured time
    assert all(t.connect_s is not None and t.connect_s > 0 for t in state.requests)
    # how the client sent is an engineer's detail, beside the figures, not in the verdict
    assert "client: cold · as scheduled" in window.stage.summary.details.text()
    assert window.stage.summary.details.text().count("client:") == 1  # said once
    assert "client:" not in window.stage.summary.headline.text()
    assert "Parallel finished" in window.stage.summary.headline.text()
    await wait_until(lambda: bool(entries), 30, "the run's recording")
    assert entries[0].recording.settings.cold_connections is True
    assert entries[0].recording.settings.release == "as-scheduled"


@pytest.mark.asyncio
async def test_default_pattern_is_warm_and_said(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    window.run_button.click()  # the window's default mode
    (state,) = await wait_signal(window.runFinished, 90, "the run finished")
    assert all(t.connect_s is None for t in state.requests)  # warmed before the phase
    assert window.engineer.used.cold is False and window.engineer.used.release == "barrier"
