"""The API key never leaks: a recognisable fake key goes through every dialect and every
failure kind, and must appear in no error message, no run event, no bench JSON document,
no stdout/stderr and no log record — while it *is* sent, in the dialect's own header.

Servers that echo the key are the hard case: a 401 body quoting it, a malformed event or an
in-stream error containing it, placed so that the message clip (120 or 300 characters)
cuts the key in two."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from splitdesk.cli.main import main
from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.events import RunEvent, event_to_json
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import PROVIDERS, get_provider
from splitdesk.providers.base import EndpointConfig, ErrorKind
from streamserver import ReplayServer

KEY = "sk-LEAKCHECK-0123456789abcdef"
#: any piece of the key this long must not show either (clipped messages cut keys in two)
HEAD = KEY[:8]
KEY_ENV = "SPLITDESK_LEAKCHECK_KEY"
#: the read timeout of every case (s): 30× the scripted servers' pause between reads, so
#: a loaded machine's late wake-up is not taken for a timeout (at 0.1 s an in-stream error
#: 10 ms after the first event read as a timeout once, at load 5)
READ_TIMEOUT = 0.3

#: the header (lower case) and value each dialect sends the key in
KEY_HEADER = {
    "openai-chat": ("authorization", f"Bearer {KEY}"),
    "openai-completions": ("authorization", f"Bearer {KEY}"),
    "openai-responses": ("authorization", f"Bearer {KEY}"),
    "azure-openai": ("api-key", KEY),
    "anthropic": ("x-api-key", KEY),
    "ollama-chat": ("authorization", f"Bearer {KEY}"),
    "ollama-generate": ("authorization", f"Bearer {KEY}"),
    "tgi": ("authorization", f"Bearer {KEY}"),
}


def _sse(obj: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj) + "\n").encode()


_LONG = "x" * 280 + " " + KEY  # a 300-character clip cuts the key


@dataclass(frozen=True)
class Wire:
    """One dialect's first text event, an in-stream error echoing the key, its media type."""

    first: bytes
    error: bytes
    media_type: str
    ndjson: bool = False


_OPENAI_ERROR = _sse({"error": {"message": _LONG, "type": "server_error"}})
WIRES = {
    "openai-chat": Wire(
        _sse({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}),
        _OPENAI_ERROR,
        "text/event-stream",
    ),
    "azure-openai": Wire(
        _sse({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}),
        _OPENAI_ERROR,
        "text/event-stream",
    ),
    "openai-completions": Wire(
        _sse({"choices": [{"index": 0, "text": "Hi"}]}), _OPENAI_ERROR, "text/event-stream"
    ),
    "openai-responses": Wire(
        _sse({"type": "response.output_text.delta", "delta": "Hi"}, "response.output_text.delta"),
        _sse({"type": "error", "code": "server_error", "message": _LONG}, "error"),
        "text/event-stream",
    ),
    "anthropic": Wire(
        _sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hi"},
            },
            "content_block_delta",
        ),
        _sse({"type": "error", "error": {"type": "api_error", "message": _LONG}}, "error"),
        "text/event-stream",
    ),
    "ollama-chat": Wire(
        _line({"message": {"role": "assistant", "content": "Hi"}, "done": False}),
        _line({"error": _LONG}),
        "application/x-ndjson",
        ndjson=True,
    ),
    "ollama-generate": Wire(
        _line({"response": "Hi", "done": False}),
        _line({"error": _LONG}),
        "application/x-ndjson",
        ndjson=True,
    ),
    "tgi": Wire(
        b'data:{"token":{"id":1,"text":"Hi","special":false}}\n\n',
        b"data:" + json.dumps({"error": _LONG, "error_type": "generation"}).encode() + b"\n\n",
        "text/event-stream",
    ),
}


def _malformed(wire: Wire) -> bytes:
    text = '{"echo": "' + "y" * 90 + KEY + '", broken'  # the 120-character clip cuts the key
    return (text + "\n").encode() if wire.ndjson else f"data: {text}\n\n".encode()


_JSON = {"content-type": "application/json"}
_HTML_500 = (
    b"<html><head><title>500 Internal Server Error</title></head><body><pre>"
    b"request headers: x-api-key: " + KEY.encode() + b"</pre></body></html>"
)


@dataclass(frozen=True)
class Failure:
    """A scripted response (status, headers, reads, pause) or a transport failure."""

    kind: ErrorKind
    status: int | None = None
    headers: dict[str, str] | None = None
    chunks: Callable[[Wire], list[bytes]] | None = None
    pause: float = 0.01
    transport: str | None = None  # "refused", "dns", "reset"
    partial: bool = False  # the first event arrives before the failure


FAILURES: dict[str, Failure] = {
    "refused": Failure(ErrorKind.CONNECT, transport="refused"),
    "dns": Failure(ErrorKind.CONNECT, transport="dns"),
    "401-echoing-key": Failure(
        ErrorKind.HTTP,
        401,
        _JSON,
        lambda w: [json.dumps({"error": {"message": _LONG, "type": "auth"}}).encode()],
    ),
    "404": Failure(
        ErrorKind.HTTP,
        404,
        _JSON,
        lambda w: [json.dumps({"error": f"model 'm' not found ({KEY})"}).encode()],
    ),
    "429": Failure(
        ErrorKind.HTTP,
        429,
        {**_JSON, "retry-after": "7"},
        lambda w: [json.dumps({"error": {"message": f"slow down, {KEY}"}}).encode()],
    ),
    "500-html": Failure(ErrorKind.HTTP, 500, {"content-type": "text/html"}, lambda w: [_HTML_500]),
    "malformed-event": Failure(
        ErrorKind.PROTOCOL, chunks=lambda w: [w.first, _malformed(w)], partial=True
    ),
    "in-stream-error": Failure(ErrorKind.SERVER, chunks=lambda w: [w.first, w.error], partial=True),
    "read-timeout": Failure(
        ErrorKind.TIMEOUT, chunks=lambda w: [w.first, w.first], pause=READ_TIMEOUT * 4
    ),
    "reset-mid-stream": Failure(ErrorKind.PROTOCOL, transport="reset", partial=True),
    # the body ends cleanly after the first event: no finish reason, terminal event or done line
    "truncated": Failure(ErrorKind.TRUNCATED, chunks=lambda w: [w.first], partial=True),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ResetServer:
    """Sends the headers and one event, then resets the connection."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.requests: list[tuple[bytes, bytes]] = []
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            head = await reader.readuntil(b"\r\n\r\n")
            self.requests.append((head, b""))
            writer.write(
                f"HTTP/1.1 200 OK\r\ncontent-type: {self.wire.media_type}\r\n"
                "content-length: 5000\r\n\r\n".encode()
                + self.wire.first
            )
            await writer.drain()
            await asyncio.sleep(0.02)
        writer.transport.abort()

    async def __aenter__(self) -> ResetServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()


@contextlib.asynccontextmanager
async def serve(failure: Failure, wire: Wire) -> AsyncIterator[tuple[str, list[Any]]]:
    """(server root URL, list of (request head, body)) for ``failure``."""
    if failure.transport == "refused":
        yield f"http://127.0.0.1:{_free_port()}", []
    elif failure.transport == "dns":
        yield "http://nonexistent.invalid", []
    elif failure.transport == "reset":
        async with ResetServer(wire) as reset:
            yield reset.url, reset.requests
    else:
        assert failure.chunks is not None
        headers = failure.headers or {"content-type": wire.media_type}
        async with ReplayServer(
            failure.status or 200, headers, failure.chunks(wire), pause=failure.pause
        ) as server:
            yield server.url, server.requests


def _headers(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines if ln)}


def assert_clean(where: str, text: str) -> None:
    assert KEY not in text, f"the key leaked into {where}: {text[:500]}"
    assert HEAD not in text, f"part of the key leaked into {where}: {text[:500]}"


@pytest.mark.parametrize("failure", list(FAILURES))
@pytest.mark.parametrize("api", sorted(PROVIDERS))
@pytest.mark.asyncio
async def test_the_key_never_leaks(
    api: str,
    failure: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_ENV, KEY)
    spec, wire, provider = FAILURES[failure], WIRES[api], get_provider(api)
    async with serve(spec, wire) as (root, requests):
        base = provider.base_url_for_root(root)
        # 1. the runner: every event, every error message
        events: list[RunEvent] = []
        state = RunState()
        state.subscribe(events.append)
        await Runner(
            RunConfig(
                EndpointConfig(base, api, "m", KEY),
                timeouts=Timeouts(connect=5, read=READ_TIMEOUT),
                warm_connections=False,
            ),
            state.apply,
        ).run(["q"], make_plan("parallel", ["q"], CombinedTemplate(), 16))
        (trace,) = state.requests
        assert trace.outcome == "failed" and trace.error is not None
        assert (trace.error.kind, trace.error.status) == (spec.kind, spec.status)
        assert trace.text == ("Hi" if spec.partial else "")  # partial text is kept
        assert_clean("the error message", trace.error.message)
        for event in events:
            assert_clean(f"a {event.kind} event", json.dumps(event_to_json(event)))
        sent = [_headers(head) for head, _ in requests]
        # 2. the bench: JSON document on stdout, table and progress on stderr
        code = await asyncio.to_thread(
            main,
            [
                "bench",
                "--endpoint",
                base,
                "--api",
                api,
                "--model",
                "m",
                "--mode",
                "parallel",
                "-q",
                "q",
                "--api-key-env",
                KEY_ENV,
                "--read-timeout",
                str(READ_TIMEOUT),
                "--json",
                "-",
            ],
        )
        sent += [_headers(head) for head, _ in requests[len(sent) :]]
    out, err = capsys.readouterr()
    assert code == 1
    doc = json.loads(out)
    bench_error = doc["runs"][0]["requests"][0]["error"]
    assert bench_error is not None and bench_error["kind"] == str(spec.kind)  # bench says why
    assert_clean("the bench JSON", out)
    assert_clean("the bench's stderr", err)
    for record in caplog.records:
        assert_clean(f"a log record of {record.name}", record.getMessage())
    if spec.transport not in ("refused", "dns"):
        name, value = KEY_HEADER[api]
        assert sent and all(h.get(name) == value for h in sent)  # the key went where it belongs
        others = [k for h in sent for k, v in h.items() if KEY in v and k != name]
        assert not others


@pytest.mark.parametrize("failure", ["401-echoing-key", "in-stream-error", "malformed-event"])
@pytest.mark.parametrize("api", sorted(PROVIDERS))
@pytest.mark.asyncio
async def test_the_key_never_reaches_the_log_file(
    api: str,
    failure: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """``splitdesk --debug bench``: DEBUG records of every layer (and httpx's) go to the
    rotating log file and stderr; the key, echoed back by the server, reaches neither."""
    from splitdesk import logs

    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("SPLITDESK_LOG_DIR", str(tmp_path))
    spec, wire, provider = FAILURES[failure], WIRES[api], get_provider(api)
    args = ["--debug", "bench", "--api", api, "--model", "m", "--mode", "parallel", "-q", "q"]
    args += ["--api-key-env", KEY_ENV, "--read-timeout", str(READ_TIMEOUT)]
    try:
        async with serve(spec, wire) as (root, requests):
            base = provider.base_url_for_root(root)
            code = await asyncio.to_thread(main, [*args, "--endpoint", base, "--json", "-"])
        logs.flush()
        text = (tmp_path / logs.FILE_NAME).read_text(encoding="utf-8")
    finally:
        logs.teardown_logging()
    out, err = capsys.readouterr()
    assert code == 1 and requests  # the requests went out, with the key, and failed
    assert "DEBUG" in text and "httpx" in text  # a verbose log was written
    assert_clean("the log file", text)
    assert_clean("the --debug stderr", err)
    assert_clean("the bench JSON", out)


#: custom headers that carry the same secret (a gateway's own key, a bearer token set by
#: hand): their values are as secret as the API key (EndpointConfig.secrets)
SECRET_HEADERS = {
    "gateway-key": {"X-Gateway-Key": KEY},
    "bearer-by-hand": {"Authorization": f"Bearer {KEY}"},
}


@pytest.mark.parametrize("carried", list(SECRET_HEADERS))
@pytest.mark.parametrize("failure", list(FAILURES))
@pytest.mark.parametrize("api", ["openai-chat", "anthropic", "ollama-chat"])
@pytest.mark.asyncio
async def test_a_custom_headers_value_never_leaks(
    api: str, failure: str, carried: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The key in a custom header instead of the API key: a server echoing it (a 401 body,
    an in-stream error, a malformed event) shows it in no error message, event or log
    record, though it is sent. (Only the API key was taken out of messages: a gateway's
    401 quoted its ``X-Api-Key`` value whole, into the pane and the recording.)"""
    caplog.set_level(logging.DEBUG)
    spec, wire, provider = FAILURES[failure], WIRES[api], get_provider(api)
    headers = SECRET_HEADERS[carried]
    async with serve(spec, wire) as (root, requests):
        events: list[RunEvent] = []
        state = RunState()
        state.subscribe(events.append)
        await Runner(
            RunConfig(
                EndpointConfig(provider.base_url_for_root(root), api, "m", headers=headers),
                timeouts=Timeouts(connect=5, read=READ_TIMEOUT),
                warm_connections=False,
            ),
            state.apply,
        ).run(["q"], make_plan("parallel", ["q"], CombinedTemplate(), 16))
    (trace,) = state.requests
    assert trace.outcome == "failed" and trace.error is not None
    assert (trace.error.kind, trace.error.status) == (spec.kind, spec.status)
    assert_clean("the error message", trace.error.message)
    for event in events:
        assert_clean(f"a {event.kind} event", json.dumps(event_to_json(event)))
    for record in caplog.records:
        assert_clean(f"a log record of {record.name}", record.getMessage())
    if spec.transport not in ("refused", "dns"):
        ((name, value),) = headers.items()
        assert requests and all(_headers(h).get(name.lower()) == value for h, _ in requests)
