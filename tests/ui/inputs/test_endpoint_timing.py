"""The endpoint panel's "Test connection" shows the time core measured (core/model_list.py)
and measures nothing itself: its note is that figure, formatted."""

from __future__ import annotations

from typing import Any

import pytest
from ui.conftest import wait_until

from splitdesk.core.measure import model_list
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.providers.base import EndpointConfig
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.inputs import endpoint_panel
from splitdesk.ui.inputs.endpoint_panel import EndpointPanel


@pytest.mark.asyncio
async def test_test_connection_shows_the_time_core_measured(
    qtbot: Any, sim_batching: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = sim_batching.openai_base_url
    checks: list[model_list.ModelCheck] = []

    async def measured(endpoint: EndpointConfig, client_timeout_s: float) -> Any:
        checks.append(await model_list.check_models(endpoint, client_timeout_s))
        return checks[-1]

    async def resolve(s: EndpointSettings, key: str | None) -> EndpointConfig:
        return EndpointConfig(base, "openai-chat", s.model)

    monkeypatch.setattr(endpoint_panel, "check_models", measured)  # records core's result
    panel = EndpointPanel(DARK, resolve)
    qtbot.addWidget(panel)
    panel.set_settings(EndpointSettings(preset="custom", base_url=base, model="splitdesk-sim"))
    panel.test_button.click()
    await wait_until(lambda: panel.test_note.text().startswith("✓"), 20, "the test's ✓ note")
    (check,) = checks
    assert panel.test_note.text() == (
        f"✓ {base} answered in {check.answered_s * 1000:.0f} ms, 1 model(s)"
    )
