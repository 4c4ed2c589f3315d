"""Read an HTTP response into timestamped frames and hand them to a dialect's decoder.

Framing:

* **SSE** (WHATWG HTML, "Server-sent events"): lines are split and events assembled by
  httpx-sse's own decoders (``SSELineDecoder``/``SSEDecoder``), fed read by read so that
  each event is stamped with the arrival time of the read that completed it. httpx-sse's
  ``EventSource`` is not used directly because it hides that time, refuses non-SSE content
  types before the body can be read, and drops the non-standard ``error:`` field that
  llama.cpp sends errors in.
* **NDJSON** (Ollama): one JSON document per ``\\n``-terminated line.
* **One JSON body**: a server that ignores ``stream`` sends the whole reply at once.

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
from httpx_sse._decoders import SSEDecoder, SSELineDecoder  # stable since 0.4; see module doc

from splitdesk.providers.base import (
    Delta,
    ErrorDelta,
    ErrorKind,
    Framing,
    RequestError,
    StreamDecoder,
    error_message,
)

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


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (Azure OpenAI, precise) or ``Retry-After``
    (RFC 9110 §10.2.3, delay-seconds form), else None."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: rare for APIs; the message still says 429


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
    retry = _retry_after(headers) if status in (429, 503) else None
    hint = ""
    if status in (401, 403):
        hint = f" — check the API key for {host}"
    elif status == 404:
        hint = " — unknown model or wrong base URL; list the models to check"
    elif status == 429:
        hint = (
            f" — rate limited; retry after {retry:g} s" if retry is not None else " — rate limited"
        )
    elif status >= 500:
        hint = " — the server failed; try again later"
    return RequestError(ErrorKind.HTTP, _clip(f"HTTP {status}: {detail}{hint}", 300), status, retry)


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
) -> AsyncGenerator[Delta, None]:
    """Deltas of ``response`` in arrival order, each stamped with its read's arrival time.

    HTTP errors, HTML pages and malformed frames end the iteration with one
    :class:`ErrorDelta`; transport errors (timeouts, resets) propagate as httpx exceptions
    for the caller to classify. Status and headers have arrived, so the framing is chosen
    here and its generator returned as it is: no generator in between re-yields every
    delta (close it with ``contextlib.aclosing`` as any async generator).
    """
    if response.status_code >= 400:
        return _http_error(response, clock)
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json" or "html" in content_type:
        return _whole_body(response, decoder, framing, content_type, clock)
    if framing == "ndjson":
        return _ndjson(response, decoder, clock)
    return _sse(response, decoder, content_type, clock)


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


async def _whole_body(
    response: httpx.Response,
    decoder: StreamDecoder,
    framing: Framing,
    content_type: str,
    clock: Clock,
) -> AsyncGenerator[Delta, None]:
    parts: list[bytes] = []
    t_ns = clock()
    async with contextlib.aclosing(_reads(response)) as reads:
        async for chunk in reads:
            t_ns = clock()
            parts.append(chunk)
    text = b"".join(parts).decode("utf-8", errors="replace")
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
        yield _protocol(t_ns, f"the body is not valid JSON: {_clip(text)}")
        return
    try:
        deltas = decoder.on_json_body(body, t_ns)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        yield _protocol(t_ns, f"unexpected JSON body ({exc}): {_clip(text)}")
        return
    for delta in deltas:
        yield delta
        if isinstance(delta, ErrorDelta):
            return
    for delta in decoder.on_end(t_ns, False):  # a whole reply is judged like a stream
        yield delta


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
    response: httpx.Response, decoder: StreamDecoder, content_type: str, clock: Clock
) -> AsyncGenerator[Delta, None]:
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = SSELineDecoder()
    sse = SSEDecoder()
    done = False
    saw_event = False
    t_ns = end_ns = clock()
    head = ""
    # bound once: this loop runs per event, thousands of times a second
    decode_text, split_lines, decode_line = utf8.decode, lines.decode, sse.decode
    on_event, is_terminator = decoder.on_event, decoder.is_terminator
    async with contextlib.aclosing(_stream_reads(response)) as reads:
        async for chunk in reads:
            if done:
                continue  # after the terminator: read to the end so the connection closes cleanly
            t_ns = clock()
            text = decode_text(chunk)
            if not text:
                continue
            if len(head) < 200:
                head += text[:200]
            for line in split_lines(text):
                if line.startswith("error:"):
                    saw_event = True
                    for delta in decoder.on_sse_error_field(line[6:].removeprefix(" "), t_ns):
                        yield delta
                        if isinstance(delta, ErrorDelta):
                            return
                    continue
                event = decode_line(line)
                if event is None:
                    continue
                data = event.data
                if not data:
                    continue
                saw_event = True
                if is_terminator(data):
                    done = True
                    end_ns = t_ns
                    break
                try:  # _decode, inlined
                    deltas = on_event(data, event.event, t_ns)
                except _MALFORMED as exc:
                    deltas = _malformed(t_ns, exc, data)
                for delta in deltas:
                    yield delta
                    if isinstance(delta, ErrorDelta):
                        return
    if not done:
        # The body ended without a terminator: an event missing its blank line still counts.
        tail = utf8.decode(b"", final=True)
        rest = (lines.decode(tail) if tail else []) + lines.flush() + [""]
        for line in rest:
            event = sse.decode(line)
            if event is not None and event.data and not decoder.is_terminator(event.data):
                saw_event = True
                for delta in _decode_tail(decoder, event.data, event.event, t_ns):
                    yield delta
                    if isinstance(delta, ErrorDelta):
                        return
    if not saw_event and head.strip():
        yield _protocol(
            t_ns,
            f"expected an event stream, got {content_type or 'no content type'}: {_clip(head)}",
        )
        return
    for delta in decoder.on_end(end_ns if done else t_ns, done):
        yield delta


async def _ndjson(
    response: httpx.Response, decoder: StreamDecoder, clock: Clock
) -> AsyncGenerator[Delta, None]:
    buffer = b""
    t_ns = clock()
    async with contextlib.aclosing(_stream_reads(response)) as reads:
        async for chunk in reads:
            t_ns = clock()
            buffer += chunk
            if b"\n" not in chunk:
                continue
            *complete, buffer = buffer.split(b"\n")
            for raw in complete:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line:
                    continue
                for delta in _decode(decoder, line, "", t_ns):
                    yield delta
                    if isinstance(delta, ErrorDelta):
                        return
    line = buffer.decode("utf-8", errors="replace").strip()
    if line:
        for delta in _decode_tail(decoder, line, "", t_ns):
            yield delta
            if isinstance(delta, ErrorDelta):
                return
    for delta in decoder.on_end(t_ns, False):
        yield delta
