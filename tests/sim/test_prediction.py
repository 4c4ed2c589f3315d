"""Measured against predicted: the built-in endpoint keeps the cost model's promises over
real loopback HTTP, measured by the engine the window uses."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from splitdesk.core.metrics import group_metrics, request_metrics
from splitdesk.core.plans import make_plan
from splitdesk.core.predict import predict_plan, predicted_makespan
from splitdesk.core.questions import DEFAULT_SET, builtin_sets
from splitdesk.core.run_state import RunState
from splitdesk.core.runner import RunConfig, Runner
from splitdesk.core.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig

QUESTIONS = builtin_sets()[DEFAULT_SET].texts


async def wait_idle(sim: Any, timeout: float = 10.0) -> None:
    """The session's shared endpoint may still be decoding for an earlier test's abandoned
    stream; a prediction is for an idle server, so wait until nothing runs or queues."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    async with httpx.AsyncClient(base_url=sim.url, timeout=5) as client:
        while True:
            info = (await client.get("/_splitdesk/info")).json()
            if info["running"] == 0 and info["waiting"] == 0:
                return
            assert loop.time() < end, f"the endpoint stayed busy: {info}"
            await asyncio.sleep(0.02)


async def measure(sim: Any, mode: str) -> tuple[RunState, list[Any]]:
    await wait_idle(sim)
    endpoint = EndpointConfig(sim.openai_base_url, "openai-chat", "splitdesk-sim")
    plan = make_plan(mode, QUESTIONS, CombinedTemplate(), 512)  # type: ignore[arg-type]
    predicted = await predict_plan(sim.url, endpoint, plan)
    state = RunState()
    await Runner(RunConfig(endpoint), state.apply).run(QUESTIONS, plan)
    return state, predicted


def within(measured: float, predicted: float) -> bool:
    return abs(measured - predicted) <= max(0.10 * predicted, 0.030)


@pytest.mark.asyncio
async def test_batching_speedup_matches_prediction(sim_batching: Any) -> None:
    combined, pc = await measure(sim_batching, "combined")
    parallel, pp = await measure(sim_batching, "parallel")
    c = group_metrics(combined.requests, "combined", 5)
    p = group_metrics(parallel.requests, "parallel", 5)
    assert c.makespan_s and p.makespan_s
    measured = c.makespan_s / p.makespan_s
    predicted = predicted_makespan(pc) / predicted_makespan(pp)  # type: ignore[operator]
    assert measured >= 4.0
    assert abs(measured - predicted) <= 0.10 * predicted
    # Every request's TTFT and E2E within 10 % (or 30 ms) of its prediction.
    for state, preds in ((combined, pc), (parallel, pp)):
        for trace, pred in zip(state.requests, preds, strict=True):
            m = request_metrics(trace)
            assert m.ttft_s is not None and pred.ttft_s is not None
            assert within(m.ttft_s, pred.ttft_s), (trace.req, m.ttft_s, pred.ttft_s)
            assert m.e2e_s is not None and within(m.e2e_s, pred.e2e_s), (
                trace.req,
                m.e2e_s,
                pred.e2e_s,
            )
            assert m.output_tokens == pred.output_tokens
    # The combined reply holds all five answers, found by the section parser, in order.
    sections = combined.requests[0].sections
    assert sorted(sections) == [0, 1, 2, 3, 4]
    starts = [sections[q].start_t for q in range(5)]
    assert starts == sorted(starts)
    assert c.answer_start_s[4] > 3 * p.answer_start_s[4]


@pytest.mark.asyncio
async def test_single_slot_gives_no_speedup(sim_single_slot: Any) -> None:
    combined, _ = await measure(sim_single_slot, "combined")
    parallel, pp = await measure(sim_single_slot, "parallel")
    c = group_metrics(combined.requests, "combined", 5)
    p = group_metrics(parallel.requests, "parallel", 5)
    assert c.makespan_s and p.makespan_s
    assert c.makespan_s / p.makespan_s <= 1.2
    assert within(p.makespan_s, predicted_makespan(pp))  # type: ignore[arg-type]
