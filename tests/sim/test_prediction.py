"""Measured against predicted: the built-in endpoint keeps the cost model's promises over
real loopback HTTP, measured by the engine the window uses."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from starved import on_schedule_async

from splitdesk.core.analyse.metrics import group_metrics, request_metrics
from splitdesk.core.analyse.predict import predict_plan, predicted_makespan, schedule_slip_s
from splitdesk.core.measure.loop_lag import LoopLag
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.questions import DEFAULT_SET, builtin_sets
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
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


async def measure(sim: Any, mode: str) -> tuple[RunState, list[Any], tuple[float, float]]:
    """The run of ``mode``, its prediction, and how late things ran meanwhile (seconds;
    starved.py): the endpoint behind its schedule, and the measuring client's own loop
    (a client starved of the CPU stamps every byte late, in no prediction either)."""
    await wait_idle(sim)
    endpoint = EndpointConfig(sim.openai_base_url, "openai-chat", "splitdesk-sim")
    plan = make_plan(mode, QUESTIONS, CombinedTemplate(), 512)  # type: ignore[arg-type]
    predicted = await predict_plan(sim.url, endpoint, plan)
    state = RunState()
    slip0 = await schedule_slip_s(sim.url)
    async with LoopLag() as lag:
        await Runner(RunConfig(endpoint), state.apply).run(QUESTIONS, plan)
    slip1 = await schedule_slip_s(sim.url)
    assert slip0 is not None and slip1 is not None, "the built-in endpoint reports its slip"
    return state, predicted, (slip1 - slip0, lag.late_s)


Measured = tuple[tuple[RunState, list[Any], tuple[float, float]], ...]


def slips(pair: Measured) -> list[tuple[str, float | None, float | None]]:
    """``(label, makespan, lateness)`` of a measured combined/parallel pair: the endpoint's
    schedule slip and the measuring client's loop lag of each run."""
    out = []
    for mode, (state, _, (slip, lag)) in zip(("combined", "parallel"), pair, strict=True):
        g = group_metrics(state.requests, mode, 5)
        out.append((mode, g.makespan_s, slip))
        out.append((f"{mode} (the measuring client's loop)", g.makespan_s, lag))
    return out


async def measure_pair(sim: Any) -> Measured:
    return (await measure(sim, "combined"), await measure(sim, "parallel"))


def within(measured: float, predicted: float) -> bool:
    return abs(measured - predicted) <= max(0.10 * predicted, 0.030)


@pytest.mark.asyncio
async def test_batching_speedup_matches_prediction(sim_batching: Any) -> None:
    def check(pair: Measured) -> None:
        (combined, pc, _), (parallel, pp, _) = pair
        c = group_metrics(combined.requests, "combined", 5)
        p = group_metrics(parallel.requests, "parallel", 5)
        assert c.makespan_s and p.makespan_s
        measured = c.makespan_s / p.makespan_s
        predicted = predicted_makespan(pc) / predicted_makespan(pp)  # type: ignore[operator]
        assert measured >= 4.0
        assert abs(measured - predicted) <= 0.10 * predicted, (measured, predicted)
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

    # a starved endpoint's late steps are in the wall times, not the model: starved.py
    pair = await on_schedule_async(lambda: measure_pair(sim_batching), check, slips)
    (combined, _, _), (parallel, _, _) = pair
    c = group_metrics(combined.requests, "combined", 5)
    p = group_metrics(parallel.requests, "parallel", 5)
    # The combined reply holds all five answers, found by the section parser, in order.
    sections = combined.requests[0].sections
    assert sorted(sections) == [0, 1, 2, 3, 4]
    starts = [sections[q].start_t for q in range(5)]
    assert starts == sorted(starts)
    assert c.answer_start_s[4] > 3 * p.answer_start_s[4]


@pytest.mark.asyncio
async def test_single_slot_gives_no_speedup(sim_single_slot: Any) -> None:
    def check(pair: Measured) -> None:
        (combined, _, _), (parallel, pp, _) = pair
        c = group_metrics(combined.requests, "combined", 5)
        p = group_metrics(parallel.requests, "parallel", 5)
        assert c.makespan_s and p.makespan_s
        assert c.makespan_s / p.makespan_s <= 1.2, (c.makespan_s, p.makespan_s)
        predicted = predicted_makespan(pp)
        assert predicted is not None and within(p.makespan_s, predicted), (p.makespan_s, predicted)

    # a starved endpoint's late steps are in the wall times, not the model: starved.py
    await on_schedule_async(lambda: measure_pair(sim_single_slot), check, slips)
