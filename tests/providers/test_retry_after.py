"""``Retry-After`` in both forms of RFC 9110 §10.2.3 (delay-seconds and HTTP-date), and the
cap on every wait: an infinite or huge wait is capped, said so, and never reaches the
bench JSON as ``Infinity``; a retrying run never sleeps for ever."""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import time

import pytest
from loopback import Connections

from splitdesk.core.files.report import BenchRun, bench_document
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.events import RequestRetrying
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.providers.retry_after import MAX_RETRY_AFTER_S, parse_retry_after

NOW = 1_700_000_000.0  # Tue, 14 Nov 2023 22:13:20 GMT


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        ("1.5", 1.5),
        ("Tue, 14 Nov 2023 22:13:50 GMT", 30.0),  # IMF-fixdate
        ("Tuesday, 14-Nov-23 22:14:20 GMT", 60.0),  # obsolete RFC 850 form
        ("Tue Nov 14 22:13:25 2023", 5.0),  # obsolete asctime form (GMT, no zone)
        ("Tue, 14 Nov 2023 22:00:00 GMT", 0.0),  # a date already past: retry at once
    ],
)
def test_both_forms_give_the_wait_in_seconds(value: str, seconds: float) -> None:
    wait = parse_retry_after({"retry-after": value}, now=lambda: NOW)
    assert wait is not None and wait.seconds == pytest.approx(seconds) and not wait.capped


@pytest.mark.parametrize(
    "value", ["inf", "1e999", "Infinity", "86400", "Tue, 14 Nov 2024 22:13:20 GMT"]
)
def test_a_wait_beyond_the_cap_is_capped_and_finite(value: str) -> None:
    wait = parse_retry_after({"retry-after": value}, now=lambda: NOW)
    assert wait is not None and wait.capped
    assert wait.seconds == MAX_RETRY_AFTER_S and math.isfinite(wait.seconds)


def test_nan_and_garbage_are_unreadable() -> None:
    """Neither is a number of seconds: the client's own back-off applies to both (a NaN
    had meant "retry at once")."""
    for value in ("soon", "nan", "NaN", "-nan"):
        assert parse_retry_after({"retry-after": value}) is None, value
    assert parse_retry_after({"retry-after-ms": "nan"}) is None
    # an unreadable retry-after-ms leaves the Retry-After header to decide
    both = parse_retry_after({"retry-after-ms": "nan", "retry-after": "2"})
    assert both is not None and both.seconds == 2.0


class _RateLimited:
    """Loopback OpenAI-chat server: the first request gets 429 with ``retry_after`` (a
    header value, or a callable making it at the moment of answering), later ones an
    answer. ``sent`` holds when each request arrived (``time.monotonic``)."""

    def __init__(self, retry_after: str | None = None, date_in_s: float | None = None) -> None:
        self.retry_after = retry_after
        self.date_in_s = date_in_s
        self.arrived: list[float] = []
        self.connections = Connections(self._handle)
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> _RateLimited:
        self._server = await asyncio.start_server(self.connections.accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        await self.connections.close(self._server)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/v1"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length:
                await reader.readexactly(length)
            if head.startswith(b"GET"):  # the warm-up's model list
                body = b'{"object":"list","data":[{"id":"m","object":"model"}]}'
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
                continue
            self.arrived.append(time.monotonic())
            if len(self.arrived) == 1:
                value = self.retry_after
                if self.date_in_s is not None:
                    value = email.utils.formatdate(time.time() + self.date_in_s, usegmt=True)
                body = b'{"error":{"message":"Rate limit reached","type":"rate_limit"}}'
                writer.write(
                    b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
                    + f"retry-after: {value}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
                continue
            chunk = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
            body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                + f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()


@pytest.mark.asyncio
async def test_a_retry_after_date_is_obeyed_not_replaced_by_the_default_backoff() -> None:
    async with _RateLimited(date_in_s=3.0) as server:
        endpoint = EndpointConfig(server.base_url, "openai-chat", "m")
        state = RunState()
        config = RunConfig(endpoint, retry_429=1, backoff_s=0.2)
        plan = make_plan("parallel", ["q"], CombinedTemplate(), 16)
        await asyncio.wait_for(Runner(config, state.apply).run(["q"], plan), 30)
    trace = state.requests[0]
    assert trace.outcome == "done", trace.error
    (retry,) = trace.retries
    # the date is 3 s ahead, to the second: the wait is 2-3 s, not the 0.2 s backoff
    assert 2.0 <= retry.delay_s <= 3.0, retry
    assert server.arrived[1] - server.arrived[0] >= 1.9


@pytest.mark.asyncio
@pytest.mark.parametrize("value", ["inf", "1e999"])
async def test_an_infinite_retry_after_is_capped_said_and_valid_json(value: str) -> None:
    async with _RateLimited(retry_after=value) as server:
        endpoint = EndpointConfig(server.base_url, "openai-chat", "m")
        state = RunState()
        runner = Runner(RunConfig(endpoint, retry_429=1), state.apply)
        retried = asyncio.Event()

        def watch(event: object) -> None:
            state.apply(event)  # type: ignore[arg-type]
            if isinstance(event, RequestRetrying):
                retried.set()

        runner.emit = watch
        plan = make_plan("parallel", ["q"], CombinedTemplate(), 16)
        task = asyncio.create_task(runner.run(["q"], plan))
        await asyncio.wait_for(retried.wait(), 30)  # the retry is scheduled, finite
        runner.cancel()
        await asyncio.wait_for(task, 10)
    (retry,) = state.requests[0].retries
    assert retry.delay_s == MAX_RETRY_AFTER_S
    assert retry.error is not None and "capped at 600 s" in retry.error.message
    assert "for ever" in retry.error.message
    doc = bench_document(
        {"url": endpoint.base_url, "api": "openai-chat", "model": "m"},
        ["q"],
        [BenchRun("parallel", 0, state, None, None, None)],
    )
    json.dumps(doc, allow_nan=False)  # no Infinity anywhere: the document is JSON
