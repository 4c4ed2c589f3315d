"""The diagnosis end to end: each built-in profile over real loopback HTTP, in both window
modes (side by side and one after another), names the right case from the trace alone."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from splitdesk.core.analyse.diagnosis import Diagnosis, decompose_groups, diagnose_state
from splitdesk.core.analyse.metrics import summarize
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig

QUESTIONS = [
    "Why is the sky blue?",
    "How do vaccines work?",
    "What is inflation?",
    "Why do we sleep?",
    "How do tides work?",
]
PROFILES = ["batching", "single-slot", "rate-limited", "slow-network", "compute-bound"]
EXPECTED = {
    "batching": "batching",
    "single-slot": "one-at-a-time",
    "rate-limited": "rate-limited",
    "slow-network": "network-bound",
    "compute-bound": "compute-bound",
}


@dataclass
class Sim:
    """A running built-in endpoint and the profile it serves."""

    profile: str
    process: Any

    @property
    def openai_base_url(self) -> str:
        return str(self.process.openai_base_url)


@pytest.fixture(scope="module", params=PROFILES)
def sim(request: pytest.FixtureRequest) -> Iterator[Sim]:
    """One built-in endpoint per profile, 4× speed, shared by this module's tests."""
    from splitdesk.sim.launcher import start_sim

    process = start_sim(request.param, {"speed": 4})
    try:
        yield Sim(request.param, process)
    finally:
        process.stop()


async def run_mode(sim: Sim, mode: str, with_sequential: bool = False) -> RunState:
    """Run the five questions in ``mode`` against ``sim`` and return the state."""
    endpoint = EndpointConfig(sim.openai_base_url, "openai-chat", "splitdesk-sim")
    state = RunState()
    plan = make_plan(mode, QUESTIONS, CombinedTemplate(), 200, with_sequential)  # type: ignore[arg-type]
    await asyncio.wait_for(
        Runner(RunConfig(endpoint), state.apply).run(QUESTIONS, plan),
        60,
    )
    assert state.finished, "the run did not end within 60 s"
    return state


def check(profile: str, d: Diagnosis, state: RunState) -> None:
    assert d.code == EXPECTED[profile], d.to_json()
    assert d.text and d.evidence
    if profile == "rate-limited":
        refused = [t for t in state.group("parallel") if t.error and t.error.status == 429]
        assert refused, "the rate-limited profile refused no parallel request"
        assert d.evidence["parallel_refused"] == len(refused)
        assert f"{len(refused)} of 5 parallel requests refused" in d.text
    if profile == "compute-bound":
        assert isinstance(d.evidence["rate_ratio"], float) and d.evidence["rate_ratio"] < 0.6
    if profile == "slow-network":
        assert isinstance(d.evidence["ttfb_min_s"], float) and d.evidence["ttfb_min_s"] >= 0.1


@pytest.mark.asyncio
async def test_side_by_side_names_the_profiles_case(sim: Sim) -> None:
    state = await run_mode(sim, "side-by-side")
    d = diagnose_state(state)
    check(sim.profile, d, state)
    if sim.profile == "single-slot":
        assert "same slot" in d.text


@pytest.mark.asyncio
async def test_one_after_another_names_the_case_and_decomposes(sim: Sim) -> None:
    state = await run_mode(sim, "one-after-another", with_sequential=True)
    d = diagnose_state(state)
    check(sim.profile, d, state)
    summary = summarize(state)
    dec = decompose_groups(summary.groups)
    if sim.profile == "rate-limited":
        assert dec is None  # refused requests: no makespan to decompose
        return
    assert dec is not None and summary.speedup is not None
    assert dec.speedup == pytest.approx(summary.speedup, rel=1e-9)
    if sim.profile == "single-slot":
        # the server does not batch: sequential ≈ parallel, so no concurrency gain
        assert dec.concurrency_factor == pytest.approx(1.0, abs=0.15)
    if sim.profile == "batching":
        assert dec.concurrency_factor > 3
