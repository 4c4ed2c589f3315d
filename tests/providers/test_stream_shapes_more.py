"""Stream shapes a bug hunt found read wrong, one test per kind, each over loopback through
the runner (real HTTP, a server writing the bytes read by read):

* an SSE event of a type the dialect does not read, whose data is not JSON (sse-starlette's
  ``event: ping`` with a timestamp, every 15 s until 1.3.4): skipped, in every SSE dialect,
  where it had failed the stream (the combined request, the long one, first of all); a
  malformed event of a type the dialect reads still fails it;
* NDJSON labelled ``application/json``: read line by line, each line at its arrival, and
  done at its ``done`` line even when the server holds the response open; a pretty-printed
  JSON error under that label is still read whole;
* a redirect (3xx) says where it points, not "truncated" or "an HTML page";
* a ``data: [DONE]`` line that ends the body without its blank line completes the stream.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from paths import FIXTURES
from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig, ErrorKind
from streamserver import ReplayServer, StreamFixture

#: sse-starlette's keep-alive until 1.3.4 (its ``_ping``: an event named ping whose data
#: is the time), CRLF-terminated as it wrote it
OLD_PING = b"event: ping\r\ndata: 2023-04-19 04:06:33.118712\r\n\r\n"

#: one clean fixture per SSE dialect, each from the real-world sample or the vendors' docs
SSE_FIXTURES = [
    "streams/03-include-usage-final-chunk-empty-choices.json",  # openai-chat
    "streams/29-localai-completions-missing-fields-zero-usage.json",  # openai-completions
    "streams/30-anthropic-ping-and-cumulative-usage.json",  # anthropic
    "streams/41-tgi-generate-stream-special-eos-token.json",  # tgi
    "streams_extra/52-openai-responses-reasoning-summary-and-text.json",  # openai-responses
    "streams_extra/59-azure-openai-deployment-stream-with-usage.json",  # azure-openai
]


async def run_one(srv: ReplayServer, api: str, read_timeout: float = 30.0) -> RequestTrace:
    provider = get_provider(api)
    endpoint = EndpointConfig(provider.base_url_for_root(srv.url), api, "m")
    state = RunState()
    config = RunConfig(endpoint, timeouts=Timeouts(read=read_timeout), warm_connections=False)
    runner = Runner(config, state.apply)
    await asyncio.wait_for(
        runner.run(["q"], make_plan("parallel", ["q"], CombinedTemplate(), 64)), 30
    )
    return state.requests[0]


@pytest.mark.parametrize("name", SSE_FIXTURES)
@pytest.mark.asyncio
async def test_a_keepalive_event_whose_data_is_not_json_is_skipped_in_every_dialect(
    name: str,
) -> None:
    fx = StreamFixture.load(FIXTURES / name)
    assert fx.expect["error"] is None
    chunks = [fx.chunks[0], OLD_PING, *fx.chunks[1:-1], OLD_PING, fx.chunks[-1]]
    async with ReplayServer(fx.status, fx.headers, chunks, pause=0.005) as srv:
        trace = await run_one(srv, fx.api)
    assert trace.outcome == "done", trace.error
    assert trace.text == fx.expect["text"]


@pytest.mark.asyncio
async def test_a_malformed_event_of_a_type_the_dialect_reads_still_fails_the_stream() -> None:
    fx = StreamFixture.load(FIXTURES / "streams/30-anthropic-ping-and-cumulative-usage.json")
    broken = b"event: content_block_delta\ndata: 2023-04-19 04:06:33\n\n"
    async with ReplayServer(fx.status, fx.headers, [fx.chunks[0], broken], pause=0.005) as srv:
        trace = await run_one(srv, fx.api)
    assert trace.outcome == "failed"
    assert trace.error is not None and trace.error.kind == ErrorKind.PROTOCOL
    assert "malformed event" in trace.error.message and "2023-04-19" in trace.error.message


def ollama_lines(words: list[str]) -> list[bytes]:
    """Ollama /api/chat NDJSON lines, one per word, then the done line."""
    lines = [
        json.dumps({"model": "m", "message": {"role": "assistant", "content": w}, "done": False})
        for w in words
    ]
    lines.append(
        json.dumps(
            {
                "model": "m",
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "stop",
                "eval_count": len(words),
            }
        )
    )
    return [(line + "\n").encode() for line in lines]


@pytest.mark.parametrize("hold_open", [False, True])
@pytest.mark.asyncio
async def test_ndjson_labelled_application_json_streams_line_by_line(hold_open: bool) -> None:
    words = ["Blue", " light", " scatters", " more."]
    headers = {"content-type": "application/json; charset=utf-8"}
    async with ReplayServer(
        200, headers, ollama_lines(words), pause=0.1, hold_open=hold_open
    ) as srv:
        # a held-open response ends at its done line, long before this read timeout
        trace = await asyncio.wait_for(run_one(srv, "ollama-chat", read_timeout=20.0), 10)
    assert trace.outcome == "done", trace.error
    assert trace.text == "".join(words)
    assert trace.usage_output_tokens == len(words)
    # each word stamped at its own line's arrival (100 ms apart), not all at the body's end
    arrivals = sorted(set(trace.event_times))
    assert len(arrivals) == len(words) and arrivals[-1] - arrivals[0] >= 0.25, arrivals


@pytest.mark.asyncio
async def test_a_pretty_printed_json_error_labelled_application_json_is_read_whole() -> None:
    body = json.dumps({"error": "model 'm' not found, try pulling it first"}, indent=2)
    assert "\n" in body
    headers = {"content-type": "application/json"}
    async with ReplayServer(200, headers, [body.encode()], pause=0.005) as srv:
        trace = await run_one(srv, "ollama-chat")
    assert trace.outcome == "failed"
    assert trace.error is not None and "not found, try pulling it" in trace.error.message


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (308, b"", ""),  # Caddy's http -> https
        (301, b"<html><head><title>301 Moved Permanently</title></head></html>", "text/html"),
    ],
)
@pytest.mark.asyncio
async def test_a_redirect_says_where_it_points(status: int, body: bytes, content_type: str) -> None:
    headers = {"location": "https://api.example.test/v1/chat/completions"}
    if content_type:
        headers["content-type"] = content_type
    async with ReplayServer(status, headers, [body] if body else [], pause=0.005) as srv:
        trace = await run_one(srv, "openai-chat")
    assert trace.outcome == "failed"
    error = trace.error
    assert error is not None and error.kind == ErrorKind.HTTP and error.status == status
    assert error.message.startswith(f"HTTP {status}: the server redirects to https://api.example")
    assert "base URL" in error.message


@pytest.mark.asyncio
async def test_a_redirect_to_a_relative_path_names_the_whole_address() -> None:
    async with ReplayServer(307, {"location": "/api/v1/chat/completions"}, [], pause=0.0) as srv:
        trace = await run_one(srv, "openai-chat")
        root = srv.url
    assert trace.error is not None
    assert f"redirects to {root}/api/v1/chat/completions" in trace.error.message


@pytest.mark.asyncio
async def test_a_done_line_that_ends_the_body_without_its_blank_line_completes_it() -> None:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}],
    }
    body = [f"data: {json.dumps(chunk)}\n\n".encode(), b"data: [DONE]\n"]
    headers = {"content-type": "text/event-stream"}
    async with ReplayServer(200, headers, body, pause=0.005) as srv:
        trace = await run_one(srv, "openai-chat")
    assert trace.outcome == "done", trace.error
    assert trace.text == "Hi"


@pytest.mark.asyncio
async def test_a_validation_error_list_reads_as_a_sentence() -> None:
    """FastAPI's 422 ``detail`` (pydantic's list of errors) reads as ``where: what``, not
    as a Python list's repr (``[{'type': 'missing', …}]``)."""
    detail = [
        {"type": "missing", "loc": ["body", "model"], "msg": "Field required", "input": {}},
        {
            "type": "int_parsing",
            "loc": ["body", "max_tokens"],
            "msg": "Input should be a valid integer",
        },
    ]
    body = json.dumps({"detail": detail}).encode()
    async with ReplayServer(422, {"content-type": "application/json"}, [body], pause=0.0) as srv:
        trace = await run_one(srv, "openai-chat")
    assert trace.error is not None
    assert trace.error.message == (
        "HTTP 422: body.model: Field required; body.max_tokens: Input should be a valid integer"
    )


def _anthropic(events: list[tuple[str, dict[str, object]]]) -> list[bytes]:
    return [f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode() for name, obj in events]


@pytest.mark.parametrize("api", ["anthropic", "ollama-chat"])
@pytest.mark.asyncio
async def test_an_output_count_of_zero_is_a_placeholder_not_a_count(api: str) -> None:
    """A server that reports 0 output tokens beside a streamed answer sends a placeholder
    (the fixtures' README): no count, not "0 tokens" and a rate of zero."""
    if api == "anthropic":
        text = {"type": "text_delta", "text": "Hi there"}
        chunks = _anthropic(
            [
                ("message_start", {"type": "message_start", "message": {"usage": {}}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": text}),
                (
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn"},
                        "usage": {"output_tokens": 0},
                    },
                ),
                ("message_stop", {"type": "message_stop"}),
            ]
        )
        headers = {"content-type": "text/event-stream"}
    else:
        lines = ollama_lines(["Hi", " there"])
        done = json.loads(lines[-1])
        done["eval_count"] = 0
        chunks = [*lines[:-1], (json.dumps(done) + "\n").encode()]
        headers = {"content-type": "application/x-ndjson"}
    async with ReplayServer(200, headers, chunks, pause=0.0) as srv:
        trace = await run_one(srv, api)
    assert trace.outcome == "done", trace.error
    assert trace.text == "Hi there"
    assert trace.usage_output_tokens is None


@pytest.mark.asyncio
async def test_events_ended_by_one_newline_are_named_as_such() -> None:
    """A server that ends its events with one newline (no blank line) sends one event, as
    an event stream reads it, read only at the body's end: the error says so, not "ended
    without a finish_reason" with the text silently dropped."""
    chunks = [
        json.dumps(
            {"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": f}]}
        ).encode()
        for w, f in (("Hi", None), (" there", "stop"))
    ]
    body = [b"data: " + c + b"\n" for c in chunks]
    async with ReplayServer(200, {"content-type": "text/event-stream"}, body, pause=0.0) as srv:
        trace = await run_one(srv, "openai-chat")
    assert trace.outcome == "failed"
    assert trace.error is not None and trace.error.kind == ErrorKind.PROTOCOL
    assert "ended its events with one newline, not a blank line" in trace.error.message
    assert "2 events ran together" in trace.error.message


@pytest.mark.parametrize("content_type", ["text/event-stream", "text/plain"])
@pytest.mark.asyncio
async def test_a_json_error_labelled_as_a_stream_says_the_servers_words(
    content_type: str,
) -> None:
    """HTTP 200, one JSON error document, labelled an event stream or text (a framework
    that labels every reply so): the server's error in its words, as for the same body
    labelled JSON, not "the body holds no event"."""
    body = json.dumps({"error": {"message": "model is overloaded", "type": "server_error"}})
    async with ReplayServer(200, {"content-type": content_type}, [body.encode()]) as srv:
        trace = await run_one(srv, "openai-chat")
    assert trace.outcome == "failed"
    assert trace.error is not None and "model is overloaded" in trace.error.message
    assert "holds no event" not in trace.error.message
    async with ReplayServer(200, {"content-type": "application/json"}, [body.encode()]) as srv:
        labelled_json = await run_one(srv, "openai-chat")
    assert labelled_json.error is not None
    assert (trace.error.kind, trace.error.message) == (
        labelled_json.error.kind,
        labelled_json.error.message,
    )
