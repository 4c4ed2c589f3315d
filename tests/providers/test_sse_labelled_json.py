"""A stream labelled ``Content-Type: application/json`` that holds SSE events (a
misconfigured proxy or framework; the OpenAI SDK reads it as SSE whatever the label) is
read as SSE, each event stamped at its read's arrival, not refused as "not valid JSON"
after the whole body. A real JSON reply under the same label is still read whole. Real
loopback servers writing a real fixture's reads."""

from __future__ import annotations

import asyncio
import json

import pytest

from paths import FIXTURES
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig
from streamserver import ReplayServer, StreamFixture

CHAT = "streams/03-include-usage-final-chunk-empty-choices.json"


async def run_one(srv: ReplayServer, api: str = "openai-chat") -> RunState:
    provider = get_provider(api)
    endpoint = EndpointConfig(provider.base_url_for_root(srv.url), api, "m")
    state = RunState()
    runner = Runner(RunConfig(endpoint, warm_connections=False), state.apply)
    await asyncio.wait_for(
        runner.run(["q"], make_plan("parallel", ["q"], CombinedTemplate(), 64)), 30
    )
    return state


@pytest.mark.parametrize("lead", [b"", b"\r\n", b"\xef\xbb\xbf"])  # as sent, after a blank, a BOM
@pytest.mark.asyncio
async def test_sse_labelled_application_json_streams_event_by_event(lead: bytes) -> None:
    fx = StreamFixture.load(FIXTURES / CHAT)
    headers = {**fx.headers, "content-type": "application/json; charset=utf-8"}
    chunks = [lead + fx.chunks[0], *fx.chunks[1:]]
    async with ReplayServer(fx.status, headers, chunks, pause=0.05) as srv:
        state = await run_one(srv)
    trace = state.requests[0]
    assert trace.outcome == "done", trace.error
    assert trace.text == fx.expect["text"]
    assert trace.usage_output_tokens == fx.expect["output_tokens"]
    assert state.info is not None
    # text stamped as its reads arrived (50 ms apart), not all at the body's end
    arrivals = sorted(set(trace.event_times))
    assert len(arrivals) >= 2 and arrivals[-1] - arrivals[0] >= 0.04, arrivals


@pytest.mark.asyncio
async def test_a_json_reply_labelled_application_json_is_still_read_whole() -> None:
    reply = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Whole."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    body = json.dumps(reply).encode()
    async with ReplayServer(200, {"content-type": "application/json"}, [b"  ", body]) as srv:
        state = await run_one(srv)
    trace = state.requests[0]
    assert trace.outcome == "done", trace.error
    assert trace.text == "Whole."
    assert trace.usage_output_tokens == 2


@pytest.mark.parametrize("split", [1, 3, 2])  # byte by byte, "dat" | "a: …", half a BOM
@pytest.mark.asyncio
async def test_sse_labelled_application_json_split_before_its_field_name(split: int) -> None:
    fx = StreamFixture.load(FIXTURES / CHAT)
    headers = {**fx.headers, "content-type": "application/json"}
    body = (b"\xef\xbb\xbf" if split == 2 else b"") + b"".join(fx.chunks)
    head = [body[i : i + 1] for i in range(8)] if split == 1 else [body[:split]]
    chunks = [*head, body[len(b"".join(head)) :]]
    async with ReplayServer(fx.status, headers, chunks, pause=0.01) as srv:
        state = await run_one(srv)
    trace = state.requests[0]
    assert trace.outcome == "done", trace.error
    assert trace.text == fx.expect["text"]


@pytest.mark.parametrize("chunks", [[b""], [b"  \r\n\n\t  \n"]])
@pytest.mark.asyncio
async def test_an_empty_json_body_is_said_to_be_empty(chunks: list[bytes]) -> None:
    async with ReplayServer(200, {"content-type": "application/json"}, chunks) as srv:
        state = await run_one(srv)
    trace = state.requests[0]
    assert trace.outcome == "failed"
    assert trace.error is not None and trace.error.message == "the body is empty (no reply in it)"
