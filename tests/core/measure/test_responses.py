"""Requests leave no cyclic garbage (:mod:`splitdesk.core.measure.responses`): every httpx and
httpcore
object of a run is freed by reference counting as the run drops it, so a soak's heap stays
flat and no full collection pauses a timed stream. Over real loopback HTTP to the built-in
endpoint; the cyclic garbage is read from the collector itself (``gc.DEBUG_SAVEALL``)."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from splitdesk.core.measure import responses
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.measure.server_metrics import MetricsPoller
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig

QUESTIONS = [f"Question {i}: why does {i} matter?" for i in range(1, 9)]


@contextmanager
def cyclic_garbage() -> Iterator[Counter[str]]:
    """Counts, by type, the httpx/httpcore objects that only the cyclic collector could free
    among those that became garbage inside the block."""
    found: Counter[str] = Counter()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
        gc.collect()
        for obj in gc.garbage:
            module = getattr(type(obj), "__module__", "") or ""
            if module.split(".")[0] in ("httpx", "httpcore"):
                found[f"{module}.{type(obj).__qualname__}"] += 1
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.asyncio
async def test_a_run_of_streams_leaves_no_cyclic_garbage(sim_batching: Any) -> None:
    endpoint = EndpointConfig(sim_batching.openai_base_url, "openai-chat", "splitdesk-sim")
    plan = make_plan("side-by-side", QUESTIONS, CombinedTemplate(), 24)
    with cyclic_garbage() as found:
        state = RunState()
        await Runner(RunConfig(endpoint), state.apply).run(QUESTIONS, plan)
        assert [r.outcome for r in state.requests] == ["done"] * 9, "the run did not finish"
        del state
    assert not found, f"a run's requests left cyclic garbage: {dict(found)}"


def test_metrics_polls_leave_no_cyclic_garbage(sim_batching: Any) -> None:
    poller = MetricsPoller(f"{sim_batching.url}/metrics", rate_hz=8.0)
    with cyclic_garbage() as found, httpx.Client() as client:
        for _ in range(5):
            assert poller._poll_once(client), f"/metrics did not answer: {poller.status}"
    assert not found, f"/metrics polls left cyclic garbage: {dict(found)}"


@pytest.mark.asyncio
async def test_unbind_waits_for_the_close_and_keeps_elapsed(sim_batching: Any) -> None:
    async with httpx.AsyncClient() as client:
        request = client.build_request("GET", f"{sim_batching.url}/metrics")
        response = await client.send(request, stream=True)
        responses.unbind(response)  # still open: the stream must still set elapsed on close
        await response.aread()
        await responses.aclose(response)
        assert response.is_closed
        assert response.elapsed.total_seconds() > 0  # set by the bound stream's close
        assert getattr(response.stream, "_response", None) is None, (
            "httpx's bound stream no longer links back through _response: "
            "splitdesk/core/responses.py needs the new name of that link"
        )
