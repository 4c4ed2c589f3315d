"""A chunked stream read straight off the socket (``arrivals.direct_body``) ends exactly as
httpx's own reading of it ends — the same text, finish, usage and error — whatever its
packets, and keeps every packet's arrival time and the connection's reuse.

A raw loopback server writes each response as scripted pieces, a pause between them, so
the client sees them as separate arrivals; every case runs once through the direct read
and once with it switched off (httpx → httpcore → h11, as before it existed)."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from loopback import Connections

from splitdesk.core.measure import arrivals
from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def event(data: dict[str, Any] | str) -> bytes:
    """One SSE event of an OpenAI chat stream."""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


def delta(text: str) -> bytes:
    return event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


FINISH = event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
USAGE = event(
    {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}}
)
DONE = event("[DONE]")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


LAST = b"0\r\n\r\n"
BODY = [chunk(delta("Hello")), chunk(delta(" wide")), chunk(delta(" world")), chunk(FINISH)]

#: Responses as the pieces the server writes apart; every one answers "Hello wide world".
LAYOUTS: dict[str, list[bytes]] = {
    "head, then an event per packet": [HEAD, *BODY, chunk(USAGE), chunk(DONE), LAST],
    "head and the first chunk in one packet": [
        HEAD + BODY[0],
        *BODY[1:],
        chunk(USAGE) + chunk(DONE) + LAST,
    ],
    "a chunk's size line split over packets": [
        HEAD,
        BODY[0][:1],
        BODY[0][1:3],
        BODY[0][3:],
        *BODY[1:],
        chunk(DONE)[:-1],
        chunk(DONE)[-1:] + LAST,
    ],
    "an event split over two chunks, a chunk over two packets": [
        HEAD,
        chunk(delta("Hello")[:9]),
        chunk(delta("Hello")[9:])[:5],
        chunk(delta("Hello")[9:])[5:],
        *BODY[1:],
        chunk(DONE),
        LAST,
    ],
    "a 100 Continue head first": [
        b"HTTP/1.1 100 Continue\r\n\r\n",
        HEAD,
        *BODY,
        chunk(DONE),
        LAST,
    ],
    "a head ended by bare LFs, the whole response in one packet": [
        HEAD.replace(b"\r\n", b"\n") + b"".join(BODY) + chunk(DONE) + LAST
    ],
    "a head ended by LF CRLF, the whole response in one packet": [
        HEAD[:-4] + b"\n\r\n" + b"".join(BODY) + chunk(DONE) + LAST
    ],
    "a 20 KB trailer field over two packets": [
        HEAD,
        *BODY,
        b"0\r\nx-t: " + b"a" * 17_000,
        b"a" * 3_000 + b"\r\n\r\n",
    ],
    "an extension and trailer fields, no [DONE]": [
        HEAD,
        b"%x;ext=1\r\n%s\r\n" % (len(delta("Hello")), delta("Hello")),
        *BODY[1:],
        chunk(USAGE),
        b"0\r\nx-trailer: yes\r\n\r\n",
    ],
}

#: Responses that fail part-way; each must fail as httpx's own reading fails it.
FAULTS: dict[str, list[bytes | None]] = {
    "cut inside a chunk": [HEAD, BODY[0], BODY[1][:7], None],
    "cut between chunks": [HEAD, BODY[0], BODY[1], None],
    "a chunk size that is not hex": [HEAD, BODY[0], b"zz\r\n" + delta("x") + b"\r\n", LAST],
    "no CRLF after a chunk's data": [HEAD, BODY[0], BODY[1][:-2] + b"XY", LAST],
    "a trailer that is no field": [HEAD, *BODY, b"0\r\nno colon\r\n\r\n"],
    "a chunk extension holding a bare LF": [
        HEAD,
        BODY[0],
        b"%x;a\nb\r\n%s\r\n" % (len(delta(" x")), delta(" x")),
        LAST,
    ],
}

#: Responses with no body to read, whatever their headers say: left to httpx.
NO_BODY: dict[str, list[bytes | None]] = {
    "204 labelled chunked": [HEAD.replace(b"200 OK", b"204 No Content")],
}


class PieceServer:
    """Answers each request on a connection with the next scripted response, its pieces
    ``gap`` s apart; ``None`` in a script closes the connection there. ``written``: when
    each piece was written (``time.perf_counter_ns``); ``connections``: how many came."""

    def __init__(self, scripts: Sequence[Sequence[bytes | None]], gap: float = 0.02) -> None:
        self.scripts = list(scripts)
        self.gap = gap
        self.written: list[int] = []
        self.finished = asyncio.Event()  #: every piece of a script was written
        self.connections = Connections(self._handle)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while self.scripts:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            for piece in self.scripts.pop(0):
                await asyncio.sleep(self.gap)
                if piece is None:
                    return
                writer.write(piece)
                await writer.drain()
                self.written.append(time.perf_counter_ns())
            self.finished.set()
        await reader.read()  # until the client hangs up

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[str]:
        server = await asyncio.start_server(self.connections.accept, "127.0.0.1", 0)
        try:
            yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        finally:
            await self.connections.close(server)


_DIRECT_BODY = arrivals.direct_body  # the real one, whatever a test patched in since


def count_direct(monkeypatch: pytest.MonkeyPatch, direct: bool) -> list[bool]:
    """Switch the direct read on or off for the runner; returns the list each request's
    choice is appended to (True: read directly)."""
    taken: list[bool] = []

    def choose(response: httpx.Response) -> Any:
        body = _DIRECT_BODY(response) if direct else None
        taken.append(body is not None)
        return body

    monkeypatch.setattr(arrivals, "direct_body", choose)
    return taken


async def run_one(
    script: Sequence[bytes | None], read_timeout: float = 30.0, gap: float = 0.02
) -> RunState:
    server = PieceServer([script], gap=gap)
    async with server.serve() as url:
        state = RunState()
        config = RunConfig(
            EndpointConfig(url + "/v1", "openai-chat", "m"),
            timeouts=Timeouts(read=read_timeout),
            warm_connections=False,
        )
        runner = Runner(config, state.apply)
        await runner.run(["q"], make_plan("parallel", ["q"], CombinedTemplate(), 16))
    return state


async def both_ways(
    monkeypatch: pytest.MonkeyPatch,
    script: Sequence[bytes | None],
    read_timeout: float = 30.0,
    gap: float = 0.02,
) -> tuple[dict[bool, tuple[Any, ...]], dict[bool, list[bool]]]:
    """``script`` run read directly (key True) and through httpx (False): each way's
    :func:`outcome`, and whether each of its requests was read directly."""
    results: dict[bool, tuple[Any, ...]] = {}
    taken: dict[bool, list[bool]] = {}
    for direct in (True, False):
        taken[direct] = count_direct(monkeypatch, direct)
        results[direct] = outcome(await run_one(script, read_timeout, gap))
    return results, taken


def outcome(state: RunState) -> tuple[Any, ...]:
    """What the request ended with; the server's port taken out of its error message."""
    r = state.requests[0]
    error = (
        (r.error.kind, re.sub(r"127\.0\.0\.1:\d+", "<server>", r.error.message))
        if r.error
        else None
    )
    return r.text, r.finish_reason, r.usage_output_tokens, r.outcome, error


@pytest.mark.asyncio
@pytest.mark.parametrize("layout", list(LAYOUTS))
async def test_a_chunked_stream_reads_alike_directly_and_through_httpx(
    layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, taken = await both_ways(monkeypatch, LAYOUTS[layout])
    assert taken == {True: [True], False: [False]}, f"the direct read taken: {taken}"
    text, finish, _usage, _outcome, error = results[True]
    assert (text, finish, error) == ("Hello wide world", "stop", None)
    assert results[True] == results[False]


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_broken_stream_fails_alike_directly_and_through_httpx(
    fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, _taken = await both_ways(monkeypatch, FAULTS[fault])
    text, _finish, _usage, _outcome, error = results[True]
    assert text.startswith("Hello"), "the text before the fault is kept"
    assert error is not None, "the request failed"
    assert results[True] == results[False]


@pytest.mark.asyncio
@pytest.mark.parametrize("case", list(NO_BODY))
async def test_a_response_without_a_body_is_left_to_httpx(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, taken = await both_ways(monkeypatch, NO_BODY[case], read_timeout=5.0)
    assert taken == {True: [False], False: [False]}, "never read directly"
    assert results[True] == results[False]
    assert results[True][0] == "", "no text"


@pytest.mark.asyncio
async def test_a_silence_inside_a_direct_body_is_the_read_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # one event, then silence (the server holds the connection open)
    results, _taken = await both_ways(monkeypatch, [HEAD, BODY[0]], read_timeout=0.3)
    text, _finish, _usage, _outcome, error = results[True]
    assert text == "Hello"
    assert error is not None and "read timeout" in error[1], error
    assert results[True] == results[False]


@pytest.mark.asyncio
async def test_each_read_keeps_the_arrival_time_of_its_own_packet() -> None:
    """The reader is busy while three events arrive 80 ms apart: each read still carries
    its own packet's arrival (the kernel's stamp), not the time it was read."""
    server = PieceServer([[HEAD, BODY[0], BODY[1], BODY[2], LAST]], gap=0.08)
    transport = httpx.AsyncHTTPTransport()
    assert arrivals.install(transport)
    async with (
        server.serve() as url,
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", url + "/v1/chat/completions", json={}) as response,
    ):
        body = arrivals.direct_body(response)
        assert body is not None, "a chunked 200 over plain TCP is read directly"
        assert arrivals.direct_body(response) is None, "the body is claimed once"
        stream = response.extensions["network_stream"]
        if not stream.kernel_stamps:
            pytest.skip("no kernel receive stamps on this platform (Linux only)")
        try:  # busy elsewhere while the events arrive
            await asyncio.wait_for(server.finished.wait(), 10)
        except TimeoutError:
            pytest.fail("the server did not write its script within 10 s")
        await asyncio.sleep(0.1)
        stamps = []
        async for data in body:
            stamps.append((data, stream.last_arrival_ns))
    assert [d for d, _ in stamps] == [delta("Hello"), delta(" wide"), delta(" world")]
    for (_, stamp), written in zip(stamps, server.written[1:4], strict=True):
        assert abs(stamp - written) < 5_000_000, (
            f"stamped {(stamp - written) / 1e6:.1f} ms from its packet's arrival"
        )


@pytest.mark.asyncio
async def test_a_connection_read_directly_is_reused_by_the_next_request() -> None:
    """Bodies that end without the dialect's last event (no [DONE]) leave the connection
    open: the next request goes out on it, as it did when httpx read the body."""
    script = [HEAD, BODY[0], b"0\r\n\r\n"]
    server = PieceServer([script, script, script], gap=0.005)
    transport = httpx.AsyncHTTPTransport()
    assert arrivals.install(transport)
    async with server.serve() as url, httpx.AsyncClient(transport=transport) as client:
        for _ in range(3):
            async with client.stream("POST", url + "/v1/chat/completions", json={}) as response:
                body = arrivals.direct_body(response)
                assert body is not None
                assert [data async for data in body] == [delta("Hello")]
                assert response.is_stream_consumed, "httpx read the body's end"
    assert len(server.connections.accepted) == 1, "every request on the one connection"


@pytest.mark.asyncio
async def test_bodies_that_are_not_chunked_or_not_2xx_or_to_head_are_left_to_httpx() -> None:
    plain = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n"
    error_head = HEAD.replace(b"200 OK", b"503 Service Unavailable")
    server = PieceServer(
        [
            [plain % len(delta("Hi")), delta("Hi")],
            [error_head, chunk(b'{"error": "busy"}'), LAST],
            [HEAD],  # to HEAD: the head alone, chunked or not
        ],
        gap=0.005,
    )
    transport = httpx.AsyncHTTPTransport()
    assert arrivals.install(transport)
    async with server.serve() as url, httpx.AsyncClient(transport=transport) as client:
        for expected in (delta("Hi"), b'{"error": "busy"}'):
            async with client.stream("POST", url + "/v1/chat/completions", json={}) as response:
                assert arrivals.direct_body(response) is None
                assert await response.aread() == expected
        async with client.stream("HEAD", url + "/v1/chat/completions") as response:
            assert response.status_code == 200
            assert arrivals.direct_body(response) is None, "a response to HEAD has no body"


def random_response(rng: random.Random, corrupt: bool) -> list[bytes | None]:
    """A streamed chat answer as a server might frame and send it: head lines ended by
    CRLF or LF, events cut into chunks of random sizes (with an extension now and then),
    trailer fields or not, [DONE] or not, sent in pieces cut at random points; with
    ``corrupt``, one byte after the head changed."""
    eol = rng.choice([b"\r\n", b"\n"])
    head = HEAD.replace(b"\r\n", eol)
    # short answers too: a whole response within one read (512 bytes) of the stream
    words = ("Hello", " wide", " world")[: rng.randint(1, 3)]
    events = b"".join(delta(w) for w in words) + FINISH
    if rng.random() < 0.5:
        events += USAGE
    if rng.random() < 0.7:
        events += DONE
    body, at = b"", 0
    while at < len(events):
        size = rng.randint(1, 90)
        ext = b";x=1" if rng.random() < 0.1 else b""
        body += b"%x%s\r\n%s\r\n" % (len(events[at : at + size]), ext, events[at : at + size])
        at += size
    body += b"0\r\n" + (b"x-t: 1\r\n" if rng.random() < 0.3 else b"") + b"\r\n"
    if corrupt:
        i = rng.randrange(len(body))
        body = body[:i] + bytes([rng.choice(b"0a\r\n;: x")]) + body[i + 1 :]
    whole = head + body
    cuts = sorted(rng.sample(range(1, len(whole)), rng.randint(0, 6)))
    return [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)], strict=True)]


@pytest.mark.asyncio
async def test_random_responses_end_alike_directly_and_through_httpx(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The whole kind, not a few examples: seeded random framings and packet cuts, whole
    or with one byte corrupted, end the same way read directly and through httpx."""
    rng = random.Random(2025)
    for case in range(60):
        script = random_response(rng, corrupt=case % 3 == 2)
        results, _taken = await both_ways(monkeypatch, script, read_timeout=2.0, gap=0.002)
        assert results[True] == results[False], f"case {case}: {script!r}"
        if case % 3 != 2:
            assert results[True][1] == "stop", f"case {case}: {results[True]}"
            assert "Hello wide world".startswith(results[True][0]), f"case {case}"
