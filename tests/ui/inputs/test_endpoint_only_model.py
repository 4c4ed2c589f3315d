"""``splitdesk --endpoint URL`` without ``--model``: the window asks the endpoint (over real
loopback HTTP, off the GUI thread) and takes its only model, as ``splitdesk bench`` does."""

from __future__ import annotations

from typing import Any

import pytest

from splitdesk.app import WindowEndpoint
from splitdesk.core.run.endpoints import EndpointSettings


@pytest.mark.asyncio
async def test_without_a_model_the_window_takes_the_endpoints_only_one(
    make_window: Any, sim_batching: Any
) -> None:
    from splitdesk.core.files.settings import AppSettings

    url = str(sim_batching.openai_base_url)
    window = make_window(AppSettings(endpoint=WindowEndpoint(url).settings(EndpointSettings())))
    assert window.endpoint.settings().model == ""
    assert await window.endpoint.choose_only_model() == "splitdesk-sim"
    assert window.endpoint.settings().model == "splitdesk-sim"
    assert "the endpoint's only model: splitdesk-sim" in window.endpoint.model_note.text()
