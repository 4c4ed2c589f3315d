"""A connection the server takes up late is measured, shown as such and named.

llama.cpp's server keeps each connection on one of a fixed number of HTTP threads until it
has idled for its keep-alive timeout; a new connection accepted while every thread is held
waits unanswered (the run the issue describes "started" 5.13 s late). Here the built-in
endpoint sits behind :class:`handler_pool.HandlerPoolProxy`, a proxy with the same pool
(3 handlers, 1 s keep-alive), over real loopback HTTP.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import pytest
from handler_pool import HandlerPoolProxy

from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.analyse.metrics import request_figures
from splitdesk.core.files.report import request_json
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig

QUESTIONS = [f"Question {i}: why does thing {i} happen?" for i in range(5)]


async def _run(base_url: str) -> RunState:
    endpoint = EndpointConfig(base_url, "openai-chat", "splitdesk-sim")
    state = RunState()
    plan = make_plan("parallel", QUESTIONS, CombinedTemplate(), 40)
    await asyncio.wait_for(Runner(RunConfig(endpoint), state.apply).run(QUESTIONS, plan), 60)
    assert state.finished, "the run did not end within 60 s"
    return state


@pytest.mark.asyncio
async def test_connections_the_server_took_up_late_are_measured_and_named(
    sim_batching: Any,
) -> None:
    port = urlsplit(str(sim_batching.url)).port
    assert port is not None
    async with HandlerPoolProxy(port, handlers=3, keepalive_s=1.0) as proxy:
        state = await _run(f"http://127.0.0.1:{proxy.port}/v1")
    assert all(t.outcome == "done" for t in state.requests), [t.error for t in state.requests]
    figures = [request_figures(t) for t in state.requests]
    waits = sorted(f.connection_wait_s or 0.0 for f in figures)
    # three connections got a handler at once; two waited for an idle one to time out (1 s)
    assert waits[:3] == pytest.approx([0.0, 0.0, 0.0], abs=0.3), waits
    assert waits[3:] == pytest.approx([1.0, 1.0], abs=0.5), waits
    # the connect time of each warmed connection, apart from the request's own (none)
    assert all(
        f.connection_connect_s is not None and f.connection_connect_s < 0.5 for f in figures
    ), [f.connection_connect_s for f in figures]
    # (a request whose warmed connection the proxy dropped after its keep-alive reconnects
    # inside its own time: that connect is its connect_s)
    # the phase waited for them: no request went out before the slow warm-ups answered
    ready = max(t.t_conn_ready or 0.0 for t in state.requests)
    assert min(t.t_send or 0.0 for t in state.requests) >= ready
    note = next((n for n in diagnose_state(state).notes if n.code == "connection-wait"), None)
    assert note is not None, diagnose_state(state).to_json()
    assert note.evidence["waited"] == 2 and note.evidence["connections"] == 5
    assert note.evidence["connection_wait_s"] == pytest.approx(1.0, abs=0.5)
    assert "2 of 5 connections waited" in note.text
    slow = next(t for t in state.requests if (request_figures(t).connection_wait_s or 0) > 0.5)
    row = request_json(slow)
    assert row["connection_wait_s"] == pytest.approx(1.0, abs=0.5)
    assert row["connection_started_s"] < row["connection_ready_s"] <= row["t_send_s"]


@pytest.mark.asyncio
async def test_connections_taken_up_at_once_are_not_named(sim_batching: Any) -> None:
    state = await _run(str(sim_batching.openai_base_url))
    figures = [request_figures(t) for t in state.requests]
    assert all(f.connection_wait_s is not None for f in figures)
    assert all(f.connection_connect_s is not None for f in figures)
    assert not [n for n in diagnose_state(state).notes if n.code == "connection-wait"]
