"""Read an HTTP response into timestamped frames and hand them to a dialect's decoder.

Framing:

* **SSE** (WHATWG HTML, "Server-sent events"): :mod:`splitdesk.providers.sse` splits the
  lines and assembles the events, fed read by read so that each event is stamped with the
  arrival time of the read that completed it (a bare-CR line end included; that module
  says why httpx-sse's decoders are not used).
* **NDJSON** (Ollama): one JSON document per ``\\n``-terminated line.
* **One JSON body**: a server that ignores ``stream`` sends the whole reply at once.

A byte-order mark opening the body is dropped in every framing. The request ends at its
dialect's last event (``data: [DONE]``, ``message_stop``, ``response.completed``, Ollama's
``done`` line, TGI's final event: :attr:`~splitdesk.providers.base.StreamDecoder.final`),
not at the close: a server or proxy that holds the response open after it does not keep
the request waiting for the read timeout.

Anything else (HTML error pages from proxies, text) becomes a clear :class:`RequestError`.
Every body that ends without an error is judged by the decoder's
:meth:`~splitdesk.providers.base.StreamDecoder.on_end`: without its dialect's completion
signal it is ``truncated``.
"""

from __future__ import annotations

import codecs
import contextlib
import html
import json
import re
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any, cast

import httpx

from splitdesk.providers.base import (
    Delta,
    ErrorDelta,
    ErrorKind,
    Framing,
    RequestError,
    StreamDecoder,
    error_message,
)
from splitdesk.providers.retry_after import parse_retry_after, retry_hint
from splitdesk.providers.sse import ERROR_FIELD, MAX_EVENT_CHARS, EventStream, EventTooLargeError

#: A UTF-8 byte-order mark: dropped where a body begins with one (RFC 8259 §8.1 lets a
#: JSON parser ignore it; WHATWG's event-stream parser ignores it).
_BOM_BYTES = codecs.BOM_UTF8

#: Most bytes of an error body read to build a message.
ERROR_BODY_LIMIT = 64 * 1024

Clock = Callable[[], int]

_TITLE_RE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_H1_RE = re.compile(r"<h1[^>]*>(.*?)</h1>", re.IGNORECASE | re.DOTALL)
_TAG_RE = re.compile(r"<[^>]+>")


def _clip(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def html_title(body: str) -> str:
    """The ``<title>`` (or first ``<h1>``) of an HTML page, as plain one-line text."""
    m = _TITLE_RE.search(body) or _H1_RE.search(body)
    text = m.group(1) if m else _TAG_RE.sub(" ", body)
    return _clip(html.unescape(_TAG_RE.sub("", text)), 100)


def is_html(content_type: str, body: str) -> bool:
    """True when a body is an HTML page (by type, or by its first tag)."""
    head = body.lstrip()[:64].lower()
    return "html" in content_type or head.startswith(("<!doctype html", "<html"))


def http_error(
    status: int, reason: str, headers: httpx.Headers, body: str, host: str
) -> RequestError:
    """A :class:`RequestError` for an HTTP error status, with what to do next.

    The body is summarised (an HTML page by its title, JSON by its error message); it is
    never echoed whole.
    """
    content_type = headers.get("content-type", "").lower()
    if is_html(content_type, body):
        detail = html_title(body)
        if not detail:
            detail = reason
        detail += " (HTML page from a proxy or web server, not an API response)"
    elif body.strip():
        detail = error_message(body)
    else:
        detail = reason or "no body"
    wait = parse_retry_after(headers) if status in (429, 503) else None
    retry = wait.seconds if wait is not None else None
    hint = ""
    if status in (401, 403):
        hint = f" — check the API key for {host}"
    elif status == 404:
        hint = " — unknown model or wrong base URL; list the models to check"
    elif status == 429:
        hint = f" — {retry_hint(wait)}"
    elif status >= 500:
        hint = " — the server failed; try again later"
    return RequestError(ErrorKind.HTTP, _clip(f"HTTP {status}: {detail}{hint}", 300), status, retry)


def response_error(response: httpx.Response) -> RequestError:
    """:func:`http_error` of a read response with an error status (its first
    :data:`ERROR_BODY_LIMIT` characters of body), for the short calls around a run: a
    models list, a check."""
    return http_error(
        response.status_code,
        response.reason_phrase,
        response.headers,
        response.text[:ERROR_BODY_LIMIT],
        response.request.url.host,
    )


async def read_capped(response: httpx.Response, limit: int = ERROR_BODY_LIMIT) -> str:
    """Up to ``limit`` bytes of the body as text (for error messages)."""
    parts: list[bytes] = []
    size = 0
    async with contextlib.aclosing(_reads(response)) as reads:
        async for chunk in reads:
            parts.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
    return b"".join(parts)[:limit].decode("utf-8", errors="replace")


def _reads(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """The body's reads, typed as the async generator httpx returns (to close it early)."""
    return cast(AsyncGenerator[bytes, None], response.aiter_bytes())


def _stream_reads(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """The body's reads for a streaming parser: without a content coding, httpx's raw reads
    (what ``aiter_bytes`` yields then, read for read, one generator fewer per read); with
    one (a proxy's gzip), the decoded reads."""
    if "content-encoding" in response.headers or response.is_stream_consumed:
        return _reads(response)
    return cast(AsyncGenerator[bytes, None], response.aiter_raw())


def _protocol(t_ns: int, message: str) -> ErrorDelta:
    return ErrorDelta(t_ns, RequestError(ErrorKind.PROTOCOL, message))


def iter_deltas(
    response: httpx.Response,
    decoder: StreamDecoder,
    framing: Framing,
    clock: Clock = time.perf_counter_ns,
    body: AsyncGenerator[bytes, None] | None = None,
) -> AsyncGenerator[Delta, None]:
    """Deltas of ``response`` in arrival order, each stamped with its read's arrival time.
    ``body``: the body's reads where the caller reads them itself (the measuring
    runner's direct read of a chunked stream), used for a streamed body; ``None``: httpx's.

    HTTP errors, HTML pages and malformed frames end the iteration with one
    :class:`ErrorDelta`; transport errors (timeouts, resets) propagate as httpx exceptions
    for the caller to classify. Status and headers have arrived, so the framing is chosen
    here and its generator returned as it is: no generator in between re-yields every
    delta (close it with ``contextlib.aclosing`` as any async generator).
    """
    if response.status_code >= 400:
        return _http_error(response, clock)
    if 300 <= response.status_code < 400:
        return _redirected(response, clock)
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json" and framing == "sse":
        return _json_or_sse(response, decoder, content_type, clock)
    if content_type == "application/json" and framing == "ndjson":
        return _json_or_ndjson(response, decoder, content_type, clock)
    if content_type == "application/json" or "html" in content_type:
        return _whole_body(response, decoder, framing, content_type, clock)
    if framing == "ndjson":
        return _ndjson(response, decoder, clock, body)
    return _sse(response, decoder, content_type, clock, body)


async def _http_error(response: httpx.Response, clock: Clock) -> AsyncGenerator[Delta, None]:
    """The one :class:`ErrorDelta` of a response with an HTTP error status."""
    body = await read_capped(response)
    yield ErrorDelta(
        clock(),
        http_error(
            response.status_code,
            response.reason_phrase,
            response.headers,
            body,
            response.request.url.host,
        ),
    )


async def _redirected(response: httpx.Response, clock: Clock) -> AsyncGenerator[Delta, None]:
    """The one :class:`ErrorDelta` of a redirect (3xx): requests are never sent on to
    another address (a POST's body and the API key would follow it), so the message says
    where the server points, for the user to take as the base URL. A proxy's http→https
    redirect (Caddy, nginx) had read as a stream cut short, or as an HTML page."""
    body = await read_capped(response)
    location = response.headers.get("location", "").strip()
    if location:
        with contextlib.suppress(httpx.InvalidURL):  # relative: resolved against the request
            location = str(response.request.url.join(location))
        where = f"the server redirects to {_clip(location, 160)}"
        hint = " — use that address's base URL (splitdesk does not follow redirects)"
    else:
        detail = html_title(body) if is_html(response.headers.get("content-type", ""), body) else ""
        where = f"a redirect with no Location header{': ' + detail if detail else ''}"
        hint = " — check the base URL"
    status = response.status_code
    message = _clip(f"HTTP {status}: {where}{hint}", 300)
    yield ErrorDelta(clock(), RequestError(ErrorKind.HTTP, message, status))


#: How an SSE body begins (its first line names a field, or is a comment), as opposed
#: to a JSON document ("{", "["): https://html.spec.whatwg.org/multipage/server-sent-events.html
_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":")


async def _prefixed(
    first: list[bytes], reads: AsyncGenerator[bytes, None]
) -> AsyncGenerator[bytes, None]:
    """The reads ``first`` (already taken from ``reads``), then the rest of ``reads``."""
    async with contextlib.aclosing(reads):
        for chunk in first:
            yield chunk
        async for chunk in reads:
            yield chunk


async def _json_or_sse(
    response: httpx.Response, decoder: StreamDecoder, content_type: str, clock: Clock
) -> AsyncGenerator[Delta, None]:
    """A stream asked for and labelled ``application/json``: a server that streams SSE
    under that label (a misconfigured proxy or framework; the OpenAI SDK reads such a
    body as SSE whatever its label) is read as SSE, each event at its read's arrival;
    a JSON document (a non-streaming reply, or an error body) is read whole. The first
    bytes that are not whitespace decide, as soon as they arrive."""
    reads = _stream_reads(response)
    first: list[bytes] = []
    start = b""
    try:
        async for chunk in reads:
            first.append(chunk)
            start = (start + chunk).lstrip().removeprefix(_BOM_BYTES).lstrip()
            # decided once the bytes so far cannot still become a BOM or a field name
            # ("d", "dat" and half a BOM wait for the next read)
            if start and not any(
                len(start) < len(word) and word.startswith(start)
                for word in (*_SSE_STARTS, _BOM_BYTES)
            ):
                break
    except BaseException:  # a transport error for the caller: no generator left suspended
        await reads.aclose()
        raise
    rest = _prefixed(first, reads)
    inner = (
        _sse(response, decoder, content_type, clock, rest)
        if start.startswith(_SSE_STARTS)
        else _whole_body(response, decoder, "sse", content_type, clock, rest)
    )
    async with contextlib.aclosing(inner):
        async for delta in inner:
            yield delta


def _is_json(data: bytes | str) -> bool:
    """True when ``data`` is one whole JSON document (surrounding whitespace allowed)."""
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _json_lines(data: str) -> int:
    """How many JSON documents ``data`` holds one per line, when it is several and not one
    document over several lines (0 otherwise): ``data:`` lines that no blank line ended."""
    if "\n" not in data or _is_json(data):
        return 0
    lines = [line for line in data.split("\n") if line.strip()]
    return len(lines) if len(lines) > 1 and all(_is_json(line) for line in lines) else 0


async def _json_or_ndjson(
    response: httpx.Response, decoder: StreamDecoder, content_type: str, clock: Clock
) -> AsyncGenerator[Delta, None]:
    """An NDJSON stream asked for and labelled ``application/json`` (Ollama behind a proxy
    or framework that relabels it): read line by line, each line at its read's arrival,
    when its first line is a whole JSON document; a body whose first line is not (a
    pretty-printed document, an error page) is read whole. Read whole, such a stream had
    every token stamped at its end, and one held open after its ``done`` line lost the
    whole answer to the read timeout."""
    reads = _stream_reads(response)
    first: list[bytes] = []
    seen = bytearray()
    line = b""
    try:
        async for chunk in reads:
            first.append(chunk)
            seen += chunk
            if len(seen) > MAX_EVENT_CHARS:
                line = b"{}"  # one line past the bound: NDJSON's reader says so
                break
            if b"\n" in chunk:
                head = bytes(seen).removeprefix(_BOM_BYTES).lstrip()
                if b"\n" in head:  # a whole first line, past any blank ones
                    line = head.split(b"\n", 1)[0]
                    break
    except BaseException:  # a transport error for the caller: no generator left suspended
        await reads.aclose()
        raise
    rest = _prefixed(first, reads)
    inner = (
        _ndjson(response, decoder, clock, rest)
        if line and _is_json(line)
        else _whole_body(response, decoder, "ndjson", content_type, clock, rest)
    )
    async with contextlib.aclosing(inner):
        async for delta in inner:
            yield delta


async def _whole_body(
    response: httpx.Response,
    decoder: StreamDecoder,
    framing: Framing,
    content_type: str,
    clock: Clock,
    body_reads: AsyncGenerator[bytes, None] | None = None,
) -> AsyncGenerator[Delta, None]:
    parts: list[bytes] = []
    t_ns = clock()
    async with contextlib.aclosing(body_reads or _reads(response)) as reads:
        async for chunk in reads:
            t_ns = clock()
            parts.append(chunk)
    text = b"".join(parts).removeprefix(_BOM_BYTES).decode("utf-8", errors="replace")
    if is_html(content_type, text):
        yield _protocol(t_ns, f"expected a stream, got an HTML page: {html_title(text)}")
        return
    try:
        body: Any = json.loads(text)
    except ValueError:
        if framing == "ndjson":  # NDJSON labelled application/json
            lines = text.splitlines()
            for n, line in enumerate(lines, start=1):
                if line.strip():
                    cut = n == len(lines) and not text.endswith("\n")
                    decode = _decode_tail if cut else _decode
                    for delta in decode(decoder, line, "", t_ns):
                        yield delta
                        if isinstance(delta, ErrorDelta):
                            return
            for delta in decoder.on_end(t_ns, False):
                yield delta
            return
        what = f"not valid JSON: {_clip(text)}" if text.strip() else "empty (no reply in it)"
        yield _protocol(t_ns, f"the body is {what}")
        return
    async for delta in _json_document(decoder, text, t_ns, body):
        yield delta


async def _json_document(
    decoder: StreamDecoder, text: str, t_ns: int, body: Any = None
) -> AsyncGenerator[Delta, None]:
    """The deltas of one whole JSON reply ``text`` (``body``: it parsed, when given),
    judged at its end like a stream."""
    try:
        deltas = decoder.on_json_body(json.loads(text) if body is None else body, t_ns)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        yield _protocol(t_ns, f"unexpected JSON body ({exc}): {_clip(text)}")
        return
    for delta in deltas:
        yield delta
        if isinstance(delta, ErrorDelta):
            return
    for delta in decoder.on_end(t_ns, False):  # a whole reply is judged like a stream
        yield delta


async def _cut(response: httpx.Response) -> bool:
    """The response's last event arrived (DESIGN.md, "Every stream judged at its end"):
    close its connection, so that a server or proxy holding the response open cannot keep
    the request waiting for the close or the read timeout. The read loop then runs on to
    the read error that follows, inside this task: every generator between here and the
    socket (httpx's, httpcore's) ends as at a normal end of body, none is left suspended
    for the garbage collector to finish outside its task or loop. Returns False when the
    transport exposes no network stream (a test's mock transport): leave the loop then."""
    stream = response.extensions.get("network_stream")
    if stream is None:
        return False
    with contextlib.suppress(Exception):
        await stream.aclose()
    return True


#: what a decoder raises for a malformed event (:meth:`StreamDecoder.on_event`)
_MALFORMED = (ValueError, KeyError, TypeError, AttributeError)


def _malformed(t_ns: int, exc: Exception, data: str) -> list[Delta]:
    return [_protocol(t_ns, f"malformed event ({type(exc).__name__}): {_clip(data)}")]


def _decode(decoder: StreamDecoder, data: str, event: str, t_ns: int) -> list[Delta]:
    try:
        return decoder.on_event(data, event, t_ns)
    except _MALFORMED as exc:
        return _malformed(t_ns, exc, data)


def _decode_tail(decoder: StreamDecoder, data: str, event: str, t_ns: int) -> list[Delta]:
    """The body's last event or line, which its terminator (blank line, newline) never
    ended: decoded if it is whole; if it is not, the body was cut inside it, which is a
    truncation for :meth:`StreamDecoder.on_end` to judge, not a malformed event."""
    try:
        return decoder.on_event(data, event, t_ns)
    except _MALFORMED:
        return []


async def _sse(
    response: httpx.Response,
    decoder: StreamDecoder,
    content_type: str,
    clock: Clock,
    body_reads: AsyncGenerator[bytes, None] | None = None,
) -> AsyncGenerator[Delta, None]:
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    events = EventStream()
    done = False  # a data: [DONE] line arrived
    ended = False  # the dialect's last event arrived: the request ends there
    saw_event = False
    t_ns = clock()
    head = ""
    # bound once: this loop runs per event, thousands of times a second
    decode_text, feed = utf8.decode, events.feed
    on_event, is_terminator = decoder.on_event, decoder.is_terminator
    try:
        async with contextlib.aclosing(body_reads or _stream_reads(response)) as reads:
            async for chunk in reads:
                if ended:
                    continue  # read after the last event (the connection is being cut)
                t_ns = clock()
                text = decode_text(chunk)
                if not text:
                    continue
                if len(head) < ERROR_BODY_LIMIT and not saw_event:  # what came, if no event
                    head += text[: ERROR_BODY_LIMIT - len(head)]
                try:
                    found = feed(text)
                except EventTooLargeError as exc:  # the events before it were yielded: kept
                    yield _protocol(t_ns, str(exc))
                    return
                for event, data in found:
                    saw_event = True
                    if event == ERROR_FIELD:
                        for delta in decoder.on_sse_error_field(data, t_ns):
                            yield delta
                            if isinstance(delta, ErrorDelta):
                                return
                        continue
                    if is_terminator(data):
                        done = ended = True
                        break
                    try:  # _decode, inlined
                        deltas = on_event(data, event, t_ns)
                    except _MALFORMED as exc:
                        if not decoder.reads_event(event) and not _is_json(data):
                            continue  # a keep-alive's timestamp (StreamDecoder.reads_event)
                        deltas = _malformed(t_ns, exc, data)
                    for delta in deltas:
                        yield delta
                        if isinstance(delta, ErrorDelta):
                            return
                    if decoder.final:
                        ended = True
                        break
                if ended and not await _cut(response):
                    break  # nothing to cut: leave the loop (its generators are plain)
    except httpx.TransportError:
        if not ended:
            raise  # a transport failure before the last event: the caller classifies it
    if not ended:
        # The body ended without a terminator: an event missing its blank line still counts.
        tail = utf8.decode(b"", final=True)
        try:
            found = (feed(tail) if tail else []) + events.finish()
        except EventTooLargeError as exc:
            yield _protocol(t_ns, str(exc))
            return
        for event, data in found:
            if event != ERROR_FIELD and is_terminator(data):
                saw_event = done = True  # the last line, without its blank line: it arrived
            elif event != ERROR_FIELD:
                saw_event = True
                if (lines := _json_lines(data)) > 1:
                    yield _protocol(
                        t_ns,
                        f"the server ended its events with one newline, not a blank line "
                        f"(not an event stream: WHATWG HTML, server-sent events): {lines} "
                        "events ran together into one, read only when the body ended",
                    )
                    return
                for delta in _decode_tail(decoder, data, event, t_ns):
                    yield delta
                    if isinstance(delta, ErrorDelta):
                        return
    if not saw_event and head.strip():
        document = head.strip().removeprefix("\ufeff")
        if document.startswith(("{", "[")) and _is_json(document):
            # one JSON document, labelled an event stream (an error body from a framework
            # that labels every reply so): read as the JSON body it is, its error in the
            # server's words rather than "holds no event"
            async for delta in _json_document(decoder, document, t_ns):
                yield delta
            return
        said = "text/event-stream" in (content_type or "").lower()
        yield _protocol(
            t_ns,
            # labelled an event stream yet without one event: say what came, not "expected
            # text/event-stream, got text/event-stream"
            f"the body, labelled text/event-stream, holds no event: {_clip(head)}"
            if said
            else f"expected an event stream, got {content_type or 'no content type'}: "
            f"{_clip(head)}",
        )
        return
    for delta in decoder.on_end(t_ns, done):
        yield delta


def _line_too_long(limit: int) -> str:
    return (
        f"one NDJSON line ran past {limit:,} bytes ({limit / 2**20:g} MiB) without its end: "
        "splitdesk's bound on one line; the stream was cut there (the lines before it are kept)"
    )


async def _ndjson(
    response: httpx.Response,
    decoder: StreamDecoder,
    clock: Clock,
    body_reads: AsyncGenerator[bytes, None] | None = None,
) -> AsyncGenerator[Delta, None]:
    # the line under way; only each new read is searched for its end, so a long line costs
    # time linear in its length (``bytes +=`` and a split of the whole buffer per read were
    # quadratic), and a line past MAX_EVENT_CHARS bytes ends the request with a clear error
    buffer = bytearray()
    t_ns = clock()
    first = True
    ended = False  # the done line arrived: the request ends there (module doc)
    try:
        async with contextlib.aclosing(body_reads or _stream_reads(response)) as reads:
            async for chunk in reads:
                if ended:
                    continue  # read after the last line (the connection is being cut)
                t_ns = clock()
                if b"\n" not in chunk:
                    buffer += chunk
                    if len(buffer) > MAX_EVENT_CHARS:
                        yield _protocol(t_ns, _line_too_long(MAX_EVENT_CHARS))
                        return
                    continue
                head, _, tail = chunk.rpartition(b"\n")
                buffer += head
                complete = buffer.split(b"\n")
                # a line here can pass the bound only when the buffer does
                if len(buffer) > MAX_EVENT_CHARS and max(map(len, complete)) > MAX_EVENT_CHARS:
                    yield _protocol(t_ns, _line_too_long(MAX_EVENT_CHARS))
                    return
                buffer = bytearray(tail)
                for raw in complete:
                    if first:
                        raw, first = raw.removeprefix(_BOM_BYTES), False
                    line = raw.decode("utf-8", errors="replace").strip()
                    if not line:
                        continue
                    for delta in _decode(decoder, line, "", t_ns):
                        yield delta
                        if isinstance(delta, ErrorDelta):
                            return
                    if decoder.final:
                        ended = True
                        break
                if ended and not await _cut(response):
                    break
    except httpx.TransportError:
        if not ended:
            raise
    if ended:
        for delta in decoder.on_end(t_ns, False):
            yield delta
        return
    if first:
        buffer = buffer.removeprefix(_BOM_BYTES)
    line = buffer.decode("utf-8", errors="replace").strip()
    if line:
        for delta in _decode_tail(decoder, line, "", t_ns):
            yield delta
            if isinstance(delta, ErrorDelta):
                return
    for delta in decoder.on_end(t_ns, False):
        yield delta
