"""Every injected fault in every dialect, through the engine (the runner over real
loopback HTTP to the built-in endpoint): the faulted request ends in a clear typed error
with its partial text and timings, the others of the run finish normally, and what the
client holds equals what the server's emission log says it delivered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import faultcases
import pytest

from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import SimProcess, start_sim


@pytest.fixture(scope="module")
def fault_sim() -> Iterator[SimProcess]:
    """A built-in endpoint for fault runs (short answers, 20× speed)."""
    sim = start_sim("batching", faultcases.SIM_OVERRIDES)
    try:
        yield sim
    finally:
        sim.stop()


@pytest.mark.asyncio
@pytest.mark.parametrize("api", faultcases.DIALECTS)
async def test_every_fault_ends_its_request_clearly_and_spares_the_others(
    api: str, fault_sim: SimProcess
) -> None:
    await faultcases.arm(fault_sim.url)
    questions = faultcases.questions()
    endpoint = EndpointConfig(
        get_provider(api).base_url_for_root(fault_sim.url), api, "splitdesk-sim"
    )
    config = RunConfig(endpoint, timeouts=Timeouts(read=faultcases.READ_TIMEOUT_S))
    state = RunState()
    # side by side: the combined request (its prompt carries no fault tag) runs alongside
    plan = make_plan("side-by-side", questions, CombinedTemplate(), 64)
    await Runner(config, state.apply).run(questions, plan)

    assert state.ended is not None and not state.ended.stopped
    records = await faultcases.server_records(fault_sim.url, state.requests)
    combined, *parallel = state.requests
    faultcases.check_request(None, combined, records[0])
    cases: list[Any] = [*faultcases.CASES, *[None] * len(faultcases.CLEAN)]
    assert len(parallel) == len(cases)
    for case, r, record in zip(cases, parallel, records[1:], strict=True):
        faultcases.check_request(case, r, record)
