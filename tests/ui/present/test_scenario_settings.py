"""A scenario shown for a talk changes the window for this session only: the settings
file keeps the user's own endpoint, mode and questions (a rehearsal of the rate-limit
scenario must not make the next plain start a rate-limited, one-after-another window)."""

from __future__ import annotations

from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.files.scenarios import builtin_scenarios
from splitdesk.core.files.settings import AppSettings, read_settings
from splitdesk.core.run.endpoints import EndpointSettings


@pytest.mark.asyncio
async def test_a_scenario_leaves_the_saved_inputs_alone(make_window: Any) -> None:
    own = AppSettings(endpoint=EndpointSettings(profile="batching", retry_429=0))
    window = make_window(own)
    before = window._persisted()
    scenario = builtin_scenarios()["rate-limit"]
    window.presentation.open_scenario(scenario)
    shown = window.endpoint.settings()
    assert shown.profile == "rate-limited" and shown.retry_429 == scenario.spec.run.retry_429
    assert window.mode.currentData() == scenario.spec.run.mode
    window.close()
    await wait_signal(window.closed, 30, "the window closed and saved its settings")
    saved = read_settings().settings
    assert saved.endpoint == before.endpoint
    assert saved.endpoint.profile == "batching" and saved.endpoint.retry_429 == 0
    assert saved.mode == before.mode
    assert saved.question_set == before.question_set
