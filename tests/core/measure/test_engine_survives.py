"""The engine process outlives a bad run: a run it cannot even set up (an unknown dialect)
ends with its error reported, and the same process then runs a good plan."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from splitdesk.core.measure.engine import EngineProcess
from splitdesk.core.measure.runner import RunConfig
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig

QUESTIONS = ["Why is the sky blue?", "What is a prime number?"]


@pytest.fixture
def engine() -> Iterator[EngineProcess]:
    process = EngineProcess()
    process.start()
    try:
        yield process
    finally:
        process.stop(2.0)


def run(engine: EngineProcess, endpoint: EndpointConfig) -> tuple[RunState, BaseException | None]:
    live = engine.run(
        RunConfig(endpoint), QUESTIONS, make_plan("parallel", QUESTIONS, CombinedTemplate(), 8)
    )
    live.release()
    error = None
    try:
        live.future.result(30)
    except Exception as exc:  # the run's reported error
        error = exc
    state = RunState()
    for event in live.drain():
        state.apply(event)
    return state, error


def test_a_run_the_engine_cannot_set_up_does_not_take_it_down(
    engine: EngineProcess, sim_batching: Any
) -> None:
    pid = engine.pid
    _, error = run(engine, EndpointConfig("http://127.0.0.1:9/v1", "nope-dialect", "m"))
    assert error is not None and "unknown API dialect 'nope-dialect'" in str(error)
    assert engine.alive and engine.pid == pid
    base = get_provider("openai-chat").base_url_for_root(sim_batching.url)
    state, error = run(engine, EndpointConfig(base, "openai-chat", "splitdesk-sim"))
    assert error is None
    assert [r.outcome for r in state.requests] == ["done", "done"]
    assert engine.pid == pid
