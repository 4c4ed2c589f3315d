"""The model-list check is measured in core (core/model_list.py): the models the
built-in endpoint lists over real loopback HTTP, and the time it took to answer — never
more than the wall time around the call. An HTTP error is explained, not raised raw."""

from __future__ import annotations

import time
from typing import Any

import pytest

from splitdesk.core.measure.model_list import check_models
from splitdesk.providers.base import EndpointConfig


@pytest.mark.asyncio
async def test_the_built_in_endpoint_lists_its_model_and_the_answer_is_timed(
    sim_batching: Any,
) -> None:
    endpoint = EndpointConfig(sim_batching.openai_base_url, "openai-chat", "x")
    t0 = time.perf_counter()
    check = await check_models(endpoint, 10.0)
    wall = time.perf_counter() - t0
    assert check.models == ["splitdesk-sim"]
    assert 0 < check.answered_s <= wall


@pytest.mark.asyncio
async def test_an_http_error_is_explained(sim_batching: Any) -> None:
    endpoint = EndpointConfig(sim_batching.url + "/no/such/v1", "openai-chat", "x")
    with pytest.raises(ValueError, match="HTTP 404"):
        await check_models(endpoint, 10.0)
