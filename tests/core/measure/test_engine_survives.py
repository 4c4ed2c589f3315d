"""The engine process outlives a bad run: a run it cannot even set up (an unknown dialect)
ends with its error reported, and the same process then runs a good plan."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from splitdesk.core.measure.engine import MAX_COMMAND_BYTES, EngineProcess
from splitdesk.core.measure.engine_worker import command_lines
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


def test_a_command_line_over_the_limit_is_refused_and_never_kills_the_engine(
    engine: EngineProcess, sim_batching: Any
) -> None:
    """A run too large for one command line is refused before it is sent (one line naming
    the size); one that reaches the worker anyway (written past the check) is skipped
    whole, and the same process then runs a good plan. It used to kill the engine."""
    pid = engine.pid
    base = get_provider("openai-chat").base_url_for_root(sim_batching.url)
    endpoint = EndpointConfig(base, "openai-chat", "splitdesk-sim")
    huge = ["x" * (MAX_COMMAND_BYTES // 2), "y" * (MAX_COMMAND_BYTES // 2)]
    with pytest.raises(ValueError, match=r"the run is \d+ MB as one engine command"):
        engine.run(RunConfig(endpoint), huge, make_plan("parallel", huge, CombinedTemplate(), 8))
    proc = engine._proc  # past the check: straight into the worker's stdin
    assert proc is not None and proc.stdin is not None
    proc.stdin.write(b'{"cmd": "run", "questions": ["' + b"z" * (MAX_COMMAND_BYTES + 10) + b'"]}\n')
    proc.stdin.flush()
    state, error = run(engine, endpoint)
    assert error is None
    assert [r.outcome for r in state.requests] == ["done", "done"]
    assert engine.alive and engine.pid == pid
    assert any(
        f"a command over {MAX_COMMAND_BYTES} bytes was skipped" in line
        for line in engine.stderr_tail
    )


@pytest.mark.asyncio
async def test_command_lines_split_and_drop_over_long_lines_across_reads() -> None:
    reader = asyncio.StreamReader()
    for piece in (b"one\ntw", b"o\n" + b"x" * 30, b"x" * 30 + b"\nthree", b"\nfour"):
        reader.feed_data(piece)
    reader.feed_eof()
    got = [line async for line in command_lines(reader, limit=40)]
    assert got == [b"one", b"two", None, b"three", b"four"]
