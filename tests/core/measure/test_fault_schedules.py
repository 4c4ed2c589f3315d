"""Random fault schedules (hypothesis, seeded, bounded): whatever mix of faults the built-in
endpoint draws for a run's requests, every request's token count and text on the client
equal what the server's emission log says it delivered — nothing lost, duplicated or
reordered — and every request the schedule spared finishes normally."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from splitdesk.core.analyse.metrics import request_figures
from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import SimProcess, start_sim

READ_TIMEOUT_S = 0.3

#: Faults that end within a read timeout (no endless hang); stalls both shorter and longer
#: than the read timeout.
FAULTS = st.one_of(
    st.sampled_from(
        ["refuse", "reset", "no-end", "split-utf8", "status:429", "status:500", "html:502"]
    ),
    st.builds(
        lambda name, k: f"{name}:{k}",
        st.sampled_from(["reset-mid", "malformed", "error-event"]),
        st.integers(0, 12),
    ),
    st.builds(lambda n: f"huge:{n}", st.integers(1, 200_000)),
    st.sampled_from(["stall-mid:0.05", "stall-mid:1", "stall-headers:0.05", "hang:0.05"]),
)


@st.composite
def schedules(draw: st.DrawFn) -> dict[str, Any]:
    """``POST /_splitdesk/faults`` bodies: up to four rules whose shares add up to ≤ 1."""
    rules = draw(st.lists(FAULTS, min_size=1, max_size=4))
    shares = draw(st.lists(st.integers(1, 25), min_size=len(rules), max_size=len(rules)))
    return {
        "faults": [f"{rule}@{share / 100:g}" for rule, share in zip(rules, shares, strict=True)],
        "seed": draw(st.integers(0, 2**16)),
    }


@pytest.fixture(scope="module")
def fast_sim() -> Iterator[SimProcess]:
    sim = start_sim("batching", {"speed": 20, "answer_tokens": 12, "answer_spread": 0.5})
    try:
        yield sim
    finally:
        sim.stop()


async def run_with(sim: SimProcess, api: str, schedule: dict[str, Any], n: int) -> None:
    async with httpx.AsyncClient(base_url=sim.url, timeout=10) as client:
        (await client.post("/_splitdesk/faults", json=schedule)).raise_for_status()
        questions = [f"Question {i}: why is {i} interesting?" for i in range(n)]
        endpoint = EndpointConfig(
            get_provider(api).base_url_for_root(sim.url), api, "splitdesk-sim"
        )
        state = RunState()
        config = RunConfig(endpoint, timeouts=Timeouts(read=READ_TIMEOUT_S))
        plan = make_plan("parallel", questions, CombinedTemplate(), 64)
        await Runner(config, state.apply).run(questions, plan)
        (await client.post("/_splitdesk/faults", json={})).raise_for_status()
        assert state.ended is not None and not state.ended.stopped
        for r in state.requests:
            assert r.outcome in ("done", "failed"), r.outcome
            if r.request_id is None:  # cut before the headers: nothing may have arrived
                assert r.outcome == "failed" and r.text == "" and not r.event_times
                continue
            record = (await client.get(f"/_splitdesk/trace/{r.request_id}")).json()
            fault = record["fault"]
            assert r.text == record["sent_text"], fault
            assert len(r.event_times) == record["sent_events"], fault
            figures = request_figures(r)
            assert figures.output_tokens == record["sent_tokens"], (fault, figures)
            spared = fault is None or fault.startswith(("split-utf8", "huge", "hang", "stall"))
            if fault is not None and fault.startswith("stall-mid:1"):
                spared = False  # longer than the read timeout
            if fault is not None and fault.split(":")[0] in (
                "reset-mid",
                "malformed",
                "error-event",
            ):
                spared = record["sent_events"] < int(fault.split(":")[1])  # ended before K
            if spared:
                assert r.outcome == "done" and r.error is None, (fault, r.error)
            else:
                assert r.outcome == "failed" and r.error is not None, fault


@pytest.mark.parametrize("api", ["openai-chat", "anthropic", "ollama-chat", "tgi"])
@seed(20261201)
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(schedule=schedules(), n=st.integers(2, 8))
def test_client_holds_exactly_what_the_server_delivered(
    api: str, fast_sim: SimProcess, schedule: dict[str, Any], n: int
) -> None:
    asyncio.run(run_with(fast_sim, api, schedule, n))
