"""Every real-world stream shape in tests/fixtures/streams gives exactly the expected text,
reasoning, output tokens, error and TTFT read — over loopback through the runner, and
under arbitrary re-chunking of the body (hypothesis). Folders named in
``SPLITDESK_STREAM_FIXTURES`` (``os.pathsep``-separated) join them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paths import FIXTURES
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import RunPlan, make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import PROVIDERS, get_provider
from splitdesk.providers.base import (
    EndpointConfig,
    ErrorDelta,
    ErrorKind,
    TextDelta,
    UsageDelta,
)
from splitdesk.providers.stream import iter_deltas
from streamserver import ReplayServer, StreamFixture

_FIXTURES_DIR = FIXTURES
#: the real-world sample (``streams``) and shapes written after the vendors' docs
#: (``streams_extra``: Anthropic thinking, OpenAI Responses, Ollama timings, TGI, Azure,
#: and one per kind of issue 8 in each dialect it applies to: truncated streams, an error
#: beside ``choices``, usage in a vendor's place, typed content parts, mirrored reasoning)
#: more folders of the same format, separated by ``os.pathsep`` (a sample kept outside the
#: repository; a folder that does not exist is an error, not silently nothing)
EXTRA_ENV = "SPLITDESK_STREAM_FIXTURES"


def _extra_dirs() -> list[Path]:
    dirs = [Path(d) for d in os.environ.get(EXTRA_ENV, "").split(os.pathsep) if d]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        raise FileNotFoundError(f"{EXTRA_ENV} names missing folders: {', '.join(missing)}")
    return dirs


FIXTURES = sorted(_FIXTURES_DIR.glob("streams/*.json")) + sorted(
    _FIXTURES_DIR.glob("streams_extra/*.json")
)
FIXTURES += [
    f
    for d in _extra_dirs()
    for f in sorted(d.glob("*.json"))
    if f.name not in {g.name for g in FIXTURES}  # a copy of one already here runs once
]
SUPPORTED = [f for f in FIXTURES if StreamFixture.load(f).api in PROVIDERS]

# What each expected error must say, as a user reads it (the fixture's `error` describes it).
ERROR_CHECKS: dict[str, tuple[ErrorKind, int | None, list[str]]] = {
    "17-llamacpp-nonstandard-error-field": (
        ErrorKind.SERVER,
        None,
        ["context size", "invalid_request_error"],
    ),
    "27-html-504-from-reverse-proxy": (ErrorKind.HTTP, 504, ["504", "Gateway Time-out"]),
    "31-anthropic-overloaded-error-midstream": (
        ErrorKind.SERVER,
        None,
        ["Overloaded", "overloaded_error"],
    ),
    "38-ollama-midstream-error-object": (ErrorKind.SERVER, None, ["unknown error was encountered"]),
    "53-openai-responses-error-event-midstream": (
        ErrorKind.SERVER,
        None,
        ["The server had an error", "server_error"],
    ),
    "57-tgi-error-event-midstream": (ErrorKind.SERVER, None, ["CUDA out of memory", "generation"]),
    "71-openrouter-error-beside-choices": (
        ErrorKind.SERVER,
        None,
        ["Provider disconnected unexpectedly", "502"],
    ),
    "72-openai-chat-error-string-beside-choices-with-text": (
        ErrorKind.SERVER,
        None,
        ["upstream model crashed"],
    ),
    "73-openai-chat-finish-reason-error-alone": (ErrorKind.SERVER, None, ["finish_reason 'error'"]),
    "74-openai-completions-error-beside-choices": (
        ErrorKind.SERVER,
        None,
        ["Internal server error", "server_error"],
    ),
    "75-ollama-chat-error-with-message": (
        ErrorKind.SERVER,
        None,
        ["model runner has unexpectedly stopped"],
    ),
}
#: what a truncated stream's message names, per dialect (its completion signal)
TRUNCATION_WORDS = {
    "openai-chat": ["finish_reason", "[DONE]"],
    "openai-completions": ["finish_reason", "[DONE]"],
    "azure-openai": ["finish_reason", "[DONE]"],
    "anthropic": ["stop_reason", "message_stop"],
    "openai-responses": ["response.completed"],
    "ollama-chat": ['"done": true'],
    "ollama-generate": ['"done": true'],
    "tgi": ["final event"],
}


def expected_error(fx: StreamFixture) -> tuple[ErrorKind | None, int | None, list[str]]:
    """(kind, status, words) the fixture's error must have. Fixtures named in
    :data:`ERROR_CHECKS` are checked exactly; an HTTP error status is an ``http`` error
    naming it; a description that starts with "truncated" is a truncation naming the
    dialect's completion signal; any other described error (a fixture added to the shared
    sample later) must at least fail with some kind (``None`` here)."""
    if fx.name in ERROR_CHECKS:
        return ERROR_CHECKS[fx.name]
    if fx.status >= 400:
        return ErrorKind.HTTP, fx.status, [str(fx.status)]
    if str(fx.expect["error"]).lower().startswith("truncated"):
        return ErrorKind.TRUNCATED, None, ["cut off", *TRUNCATION_WORDS[fx.api]]
    return None, None, []


def test_every_fixture_is_supported() -> None:
    assert {StreamFixture.load(f).api for f in FIXTURES} <= set(PROVIDERS)
    assert SUPPORTED == FIXTURES


@dataclass
class Decoded:
    text: str
    reasoning: str
    output_tokens: int | None
    error_kind: ErrorKind | None
    error_message: str
    error_status: int | None
    first_token_read: int | None


class _Reads(httpx.AsyncByteStream):
    """A response body delivered read by read; ``clock()`` tells which read we are in."""

    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads
        self.index = -1

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i, chunk in enumerate(self.reads):
            self.index = i
            yield chunk

    def clock(self) -> int:
        return self.index


async def decode(fx: StreamFixture, reads: list[bytes]) -> Decoded:
    """Run ``iter_deltas`` over ``reads`` with a clock that counts reads."""
    stream = _Reads([r for r in reads if r])

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(fx.status, headers=fx.headers, stream=stream)

    provider = get_provider(fx.api)
    text, reasoning = [], []
    tokens = None
    first = None
    error: ErrorDelta | None = None
    async with (
        httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client,
        client.stream("POST", "http://fixture.test/v1/x") as response,
    ):
        async for d in iter_deltas(response, provider.decoder(), provider.framing, stream.clock):
            if isinstance(d, TextDelta):
                (reasoning if d.reasoning else text).append(d.text)
                if first is None and d.text:
                    first = d.t_ns
            elif isinstance(d, UsageDelta) and d.output_tokens is not None:
                tokens = d.output_tokens
            elif isinstance(d, ErrorDelta):
                error = d
    return Decoded(
        "".join(text),
        "".join(reasoning),
        tokens,
        error.error.kind if error else None,
        error.error.message if error else "",
        error.error.status if error else None,
        first,
    )


def check(fx: StreamFixture, got: Decoded) -> None:
    exp = fx.expect
    assert got.text == exp["text"]
    assert got.reasoning == exp["reasoning_text"]
    assert got.output_tokens == exp["output_tokens"]
    if exp["error"] is None:
        assert got.error_kind is None, got.error_message
    else:
        kind, status, words = expected_error(fx)
        assert got.error_kind is not None, "the stream must fail"
        if kind is not None:
            assert got.error_kind == kind, got.error_message
            assert got.error_status == status
        for w in words:
            assert w in got.error_message
        assert "<" not in got.error_message  # never raw HTML


def first_token_byte(fx: StreamFixture) -> int | None:
    """Offset of the byte that completes the first visible event (one-byte reads)."""
    import asyncio

    body = fx.body
    got = asyncio.run(decode(fx, [body[i : i + 1] for i in range(len(body))]))
    return got.first_token_read


def read_of_byte(reads: list[bytes], offset: int) -> int:
    pos = 0
    for i, r in enumerate(r for r in reads if r):
        pos += len(r)
        if offset < pos:
            return i
    raise AssertionError("offset beyond the body")


@pytest.mark.parametrize("path", SUPPORTED, ids=lambda p: p.stem)
@pytest.mark.asyncio
async def test_fixture_as_recorded(path: Path) -> None:
    fx = StreamFixture.load(path)
    got = await decode(fx, fx.chunks)
    check(fx, got)
    assert got.first_token_read == fx.expect["first_token_chunk_index"]


@pytest.mark.parametrize("path", SUPPORTED, ids=lambda p: p.stem)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fixture_rechunked(path: Path, data: st.DataObject) -> None:
    import asyncio

    fx = StreamFixture.load(path)
    body = fx.body
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=12)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    got = asyncio.run(decode(fx, reads))
    check(fx, got)
    byte = first_token_byte(fx)
    expected = None if byte is None else read_of_byte(reads, byte)
    assert got.first_token_read == expected


@pytest.mark.parametrize("path", SUPPORTED, ids=lambda p: p.stem)
@pytest.mark.asyncio
async def test_fixture_over_loopback_through_the_runner(path: Path) -> None:
    """The real path: a loopback server writes each read with a pause; the runner's trace
    has the expected content and stamps TTFT between the right two writes."""
    fx = StreamFixture.load(path)
    async with ReplayServer(fx.status, fx.headers, fx.chunks, pause=0.02) as server:
        provider = get_provider(fx.api)
        endpoint = EndpointConfig(provider.base_url_for_root(server.url), fx.api, "m")
        state = RunState()
        plan: RunPlan = make_plan("parallel", ["q"], CombinedTemplate(), 64)
        await Runner(RunConfig(endpoint), state.apply).run(["q"], plan)
    trace = state.requests[0]
    exp = fx.expect
    assert trace.text == exp["text"]
    assert trace.reasoning_text == exp["reasoning_text"]
    assert trace.usage_output_tokens == exp["output_tokens"]
    assert (trace.error is None) == (exp["error"] is None)
    assert trace.outcome == ("done" if exp["error"] is None else "failed")
    kind = expected_error(fx)[0] if exp["error"] is not None else None
    if kind is not None:
        assert trace.error is not None and trace.error.kind == kind  # also in events and bench
    idx = exp["first_token_chunk_index"]
    if idx is None:
        assert trace.first_text_t is None
    else:
        assert state.info is not None and trace.first_text_t is not None
        t_ns = state.info.t0_ns + trace.first_text_t * 1e9
        assert server.write_times[idx] <= t_ns + 1000  # float rounding of seconds
        if idx + 1 < len(server.write_times):
            assert t_ns < server.write_times[idx + 1]
