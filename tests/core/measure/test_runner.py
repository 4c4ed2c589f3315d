"""The runner over real loopback HTTP: stopping, failures as users read them, secrets."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import httpx
import pytest

from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.events import RequestEnded, RunEnded, RunEvent
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig, ErrorKind
from streamserver import ReplayServer

QUESTIONS = ["Why is the sky blue?", "How do vaccines work?", "What is inflation?"]
FAKE_KEY = "sk-test-SECRET-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def run(endpoint: EndpointConfig, mode: str = "parallel", **config: Any) -> RunState:
    state = RunState()
    plan = make_plan(mode, QUESTIONS, CombinedTemplate(), 64)  # type: ignore[arg-type]
    await Runner(RunConfig(endpoint, **config), state.apply).run(QUESTIONS, plan)
    return state


@pytest.mark.asyncio
async def test_stop_mid_run_ends_every_stream_promptly_and_keeps_partial_text(
    sim_batching: Any,
) -> None:
    endpoint = EndpointConfig(sim_batching.openai_base_url, "openai-chat", "splitdesk-sim")
    state = RunState()
    runner = Runner(RunConfig(endpoint), state.apply)
    plan = make_plan("side-by-side", QUESTIONS, CombinedTemplate(), 400)
    streaming = asyncio.Event()

    def watch(event: RunEvent) -> None:
        if state.requests and all(r.text_len > 20 for r in state.requests):
            streaming.set()

    state.subscribe(watch)
    task = asyncio.create_task(runner.run(QUESTIONS, plan))
    await asyncio.wait_for(streaming.wait(), 10)
    loop = asyncio.get_running_loop()
    t_cancel = loop.time()
    runner.cancel()
    await task
    took = loop.time() - t_cancel
    assert took < 0.2
    assert state.ended is not None and state.ended.stopped
    for r in state.requests:
        assert r.outcome == "stopped"
        assert r.text_len > 20 and r.first_text_t is not None  # partial text and timings kept
    assert 0 in state.requests[0].sections  # the combined reply's first answer was found
    async with httpx.AsyncClient() as client:  # the server saw every connection go
        for _ in range(50):
            info = (await client.get(f"{sim_batching.url}/_splitdesk/info")).json()
            if info["active_requests"] == 0:
                break
            await asyncio.sleep(0.01)
    assert info["active_requests"] == 0 and info["running"] == 0


@pytest.mark.asyncio
async def test_connection_refused_says_what_to_do() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    state = await run(EndpointConfig(url, "openai-chat", "m", FAKE_KEY))
    for r in state.requests:
        assert r.outcome == "failed" and r.error is not None
        assert r.error.kind == ErrorKind.CONNECT
        assert "is the server running at" in r.error.message and url in r.error.message


@pytest.mark.asyncio
async def test_http_401_names_the_key_problem_without_the_key() -> None:
    body = json.dumps(
        {
            "error": {
                "message": f"Incorrect API key provided: {FAKE_KEY}",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
    )
    async with ReplayServer(401, {"content-type": "application/json"}, [body.encode()]) as server:
        state = await run(EndpointConfig(server.url + "/v1", "openai-chat", "m", FAKE_KEY))
        sent_auth = [head for head, _ in server.requests if FAKE_KEY.encode() in head]
    assert sent_auth  # the key went where it belongs: the Authorization header
    for r in state.requests:
        assert r.error is not None and r.error.kind == ErrorKind.HTTP and r.error.status == 401
        assert "check the API key for 127.0.0.1" in r.error.message
        assert FAKE_KEY not in r.error.message and "***" in r.error.message


@pytest.mark.asyncio
async def test_read_timeout_between_events() -> None:
    chunks = [b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n', b"data: [DONE]\n\n"]
    async with ReplayServer(
        200, {"content-type": "text/event-stream"}, chunks, pause=0.6
    ) as server:
        state = await run(
            EndpointConfig(server.url + "/v1", "openai-chat", "m"),
            timeouts=Timeouts(read=0.3),
            warm_connections=False,
        )
    r = state.requests[0]
    assert r.error is not None and r.error.kind == ErrorKind.TIMEOUT
    assert "read timeout between events" in r.error.message


@pytest.mark.asyncio
async def test_connection_cut_mid_stream_keeps_the_partial_answer() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 5000\r\n\r\n"
        )
        writer.write(b'data: {"choices":[{"index":0,"delta":{"content":"Partial"}}]}\n\n')
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.transport.abort()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        state = await run(
            EndpointConfig(f"http://127.0.0.1:{port}/v1", "openai-chat", "m"),
            warm_connections=False,
        )
    r = state.requests[0]
    assert r.text == "Partial"
    assert r.error is not None and r.error.kind == ErrorKind.PROTOCOL
    assert "mid-stream" in r.error.message


@pytest.mark.asyncio
async def test_429_is_retried_with_the_servers_retry_after(sim_rate_limited: Any) -> None:
    endpoint = EndpointConfig(sim_rate_limited.openai_base_url, "openai-chat", "splitdesk-sim")
    events: list[RunEvent] = []
    state = RunState()
    state.subscribe(events.append)
    plan = make_plan("parallel", QUESTIONS, CombinedTemplate(), 8)
    await Runner(RunConfig(endpoint, retry_429=3), state.apply).run(QUESTIONS, plan)
    assert all(r.outcome == "done" for r in state.requests)
    retried = [r for r in state.requests if r.retries]
    assert len(retried) == 1  # two slots: the third request waited for one
    # the profile's Retry-After is 2 s, at 4x speed 0.5 s: sent precisely as retry-after-ms
    assert retried[0].retries[0].delay_s == 0.5 and retried[0].retries[0].error.status == 429
    ends = [e for e in events if isinstance(e, RequestEnded)]
    assert len(ends) == 3 and isinstance(events[-1], RunEnded)


@pytest.mark.asyncio
async def test_stop_before_the_run_starts_sends_nothing() -> None:
    state = RunState()
    runner = Runner(
        RunConfig(EndpointConfig("http://127.0.0.1:9/v1", "openai-chat", "m")), state.apply
    )
    runner.cancel()
    await runner.run(QUESTIONS, make_plan("parallel", QUESTIONS, CombinedTemplate(), 8))
    assert [r.outcome for r in state.requests] == ["stopped"] * 3
    assert all(r.t_send is None for r in state.requests)
    assert state.ended is not None and state.ended.stopped
