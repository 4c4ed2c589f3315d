"""Very long lines: one SSE event (or NDJSON line) of many megabytes arrives whole, read by
read, in time linear in its length; one past the bound on an event
(:data:`~splitdesk.providers.sse.MAX_EVENT_CHARS`) ends the request with an error naming the
bound, and keeps the text that arrived before it. Real loopback servers write the body in
64 KiB HTTP chunks, as a fast server does."""

from __future__ import annotations

import asyncio
import json

import pytest

from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig
from splitdesk.providers.sse import MAX_EVENT_CHARS, EventStream, EventTooLargeError
from streamserver import ReplayServer

READ = 64 * 1024


def _chat_event(content: str, finish: str | None = None) -> bytes:
    delta = {"content": content} if content else {}
    chunk = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _ollama_line(content: str, done: bool = False) -> bytes:
    line: dict[str, object] = {"model": "m", "message": {"role": "assistant", "content": content}}
    line["done"] = done
    if done:
        line.update(done_reason="stop", eval_count=3, prompt_eval_count=2)
    return json.dumps(line).encode() + b"\n"


def _reads(body: bytes) -> list[bytes]:
    return [body[i : i + READ] for i in range(0, len(body), READ)]


async def _run(api: str, body: bytes, limit_s: float = 120.0) -> RequestTrace:
    """One request to a loopback server that sends ``body``; its trace once it ended."""
    headers = {"Content-Type": "application/x-ndjson" if "ollama" in api else "text/event-stream"}
    async with ReplayServer(200, headers, _reads(body), pause=0) as srv:
        provider = get_provider(api)
        endpoint = EndpointConfig(provider.base_url_for_root(srv.url), api, "m")
        config = RunConfig(endpoint, timeouts=Timeouts(read=60.0), warm_connections=False)
        state = RunState()
        runner = Runner(config, state.apply)
        task = asyncio.create_task(
            runner.run(["q"], make_plan("parallel", ["q"], CombinedTemplate(), 64))
        )
        done, _ = await asyncio.wait([task], timeout=limit_s)
        if not done:
            runner.cancel()
            await task
            pytest.fail(f"{api}: a {len(body):,}-byte body still not read after {limit_s} s")
    return state.requests[0]


@pytest.mark.asyncio
async def test_a_20_mb_sse_event_arrives_whole() -> None:
    big = "QUJD" * (5 * 1024 * 1024)  # 20 MiB, no space, no line end: base64-like
    body = _chat_event("Hi ") + _chat_event(big) + _chat_event("", "stop") + b"data: [DONE]\n\n"
    trace = await _run("openai-chat", body)
    assert trace.outcome == "done", trace.error
    assert trace.text == "Hi " + big


@pytest.mark.asyncio
async def test_an_sse_event_past_the_bound_fails_naming_it_and_keeps_what_came_before() -> None:
    big = "a" * (MAX_EVENT_CHARS + READ)
    body = _chat_event("kept ") + _chat_event(big) + _chat_event("", "stop") + b"data: [DONE]\n\n"
    trace = await _run("openai-chat", body)
    assert trace.outcome == "failed"
    assert trace.error is not None and f"{MAX_EVENT_CHARS:,} characters" in trace.error.message
    assert trace.text == "kept "


@pytest.mark.asyncio
async def test_a_line_with_no_end_past_the_bound_fails_naming_it() -> None:
    body = _chat_event("kept ") + b"data: " + b"x" * (MAX_EVENT_CHARS + READ)
    trace = await _run("openai-chat", body)
    assert trace.outcome == "failed"
    assert trace.error is not None and "64 Mi" in trace.error.message
    assert trace.text == "kept "


@pytest.mark.asyncio
async def test_an_ndjson_line_past_the_bound_fails_naming_it_and_keeps_what_came_before() -> None:
    big = "a" * (MAX_EVENT_CHARS + READ)
    body = _ollama_line("kept ") + _ollama_line(big) + _ollama_line("", done=True)
    trace = await _run("ollama-chat", body)
    assert trace.outcome == "failed"
    assert trace.error is not None and f"{MAX_EVENT_CHARS:,} bytes" in trace.error.message
    assert trace.text == "kept "


@pytest.mark.asyncio
async def test_a_20_mb_ndjson_line_arrives_whole() -> None:
    big = "QUJD" * (5 * 1024 * 1024)
    body = _ollama_line("Hi ") + _ollama_line(big) + _ollama_line("", done=True)
    trace = await _run("ollama-chat", body)
    assert trace.outcome == "done", trace.error
    assert trace.text == "Hi " + big


def test_an_event_whose_data_lines_together_pass_the_bound_is_refused() -> None:
    events = EventStream(limit=1000)
    assert events.feed("data: ok\n\n") == [("", "ok")]
    for _ in range(9):  # no blank line: one event growing, 900 characters so far
        assert events.feed("data: " + "x" * 99 + "\n") == []
    with pytest.raises(EventTooLargeError, match="1,000 characters"):
        events.feed("data: " + "x" * 200 + "\n")


def test_a_line_fed_one_character_at_a_time_is_joined_once_whole() -> None:
    events = EventStream()
    line = "data: " + "Zm9v" * 5000
    found: list[tuple[str, str]] = []
    for ch in line + "\r\r":  # bare-CR line ends: the event is complete at its second CR
        found += events.feed(ch)
    assert found == [("", "Zm9v" * 5000)]
