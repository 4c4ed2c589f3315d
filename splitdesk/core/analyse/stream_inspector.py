"""The stream inspector: every event of one response as it arrived, and what it counted for.

Input: the response body's reads with their arrival times (``time.perf_counter_ns``), as
the runner's optional raw capture (``RunConfig.capture_raw``) or a fixture stream holds
them. Output: one :class:`InspectedEvent` per wire event — an SSE event (its lines up to
the blank line), an SSE comment (keep-alive), or an NDJSON line — with:

* ``t_s``: arrival, seconds after the first read (the read that completed the event);
* ``gap_s``: since the previous event's arrival (``None`` for the first);
* ``bytes``: the event's UTF-8 size on the wire (its lines, without the blank line);
* ``kind``: ``text``, ``reasoning``, ``role-only`` (no text: role or empty delta),
  ``usage``, ``finish``, ``keep-alive`` (SSE comment), ``end`` (the ``[DONE]``
  terminator), ``tool``, ``error``, ``other``;
* ``counts_for_ttft``: only events carrying visible text (answer or reasoning) count — the
  first such event is where TTFT is stamped (:mod:`splitdesk.core.analyse.metrics`);
* ``tokens``: tokens the event carried *when the server says so* — the rise of its
  cumulative output-token count since the previous count (vLLM's continuous usage stats,
  a usage chunk); ``None`` otherwise; ``several_tokens`` flags a text event that carried
  more than one, which is why ITL looks odd then;
* ``raw``: the raw lines, with any API key masked (never shown).

The framing follows :mod:`splitdesk.providers.stream` (the same line splitter and event
assembly, :mod:`splitdesk.providers.sse`; the dialect's own
:class:`~splitdesk.providers.base.StreamDecoder` decodes each event), so the inspector
classifies exactly what the runner measured.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import dataclass

from splitdesk.core.run.redaction import redact
from splitdesk.providers import get_provider
from splitdesk.providers.base import (
    Delta,
    ErrorDelta,
    FinishDelta,
    StreamDecoder,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from splitdesk.providers.sse import EventAssembler, LineSplitter

#: Kinds of events that carry no visible text (never TTFT).
NOT_COUNTED = ("role-only", "usage", "finish", "keep-alive", "end", "tool", "error", "other")


@dataclass(frozen=True)
class InspectedEvent:
    """One wire event of a response (module docstring)."""

    index: int
    t_s: float
    gap_s: float | None
    bytes: int
    kind: str
    counts_for_ttft: bool
    first_token: bool
    tokens: int | None
    several_tokens: bool
    text: str
    raw: str


def _kind(deltas: list[Delta]) -> str:
    if any(isinstance(d, ErrorDelta) for d in deltas):
        return "error"
    texts = [d for d in deltas if isinstance(d, TextDelta) and d.text]
    if texts:
        return "text" if any(not d.reasoning for d in texts) else "reasoning"
    if any(isinstance(d, ToolCallDelta) for d in deltas):
        return "tool"
    if any(isinstance(d, UsageDelta) for d in deltas):
        return "usage"
    if any(isinstance(d, FinishDelta) for d in deltas):
        return "finish"
    return "role-only"


class _Builder:
    def __init__(self, api_key: str | None) -> None:
        self.events: list[InspectedEvent] = []
        self.api_key = api_key
        self.t_first: int | None = None
        self.last_t: int | None = None
        self.last_count: int | None = None
        self.seen_text = False

    def add(self, t_ns: int, kind: str, raw: str, deltas: list[Delta]) -> None:
        if self.t_first is None:
            self.t_first = t_ns
        tokens = None
        for d in deltas:
            if isinstance(d, UsageDelta) and d.output_tokens is not None:
                if self.last_count is not None and d.output_tokens >= self.last_count:
                    tokens = d.output_tokens - self.last_count
                elif self.last_count is None and kind in ("text", "reasoning"):
                    tokens = d.output_tokens  # the first count, on a text event
                self.last_count = d.output_tokens
        counted = kind in ("text", "reasoning")
        first = counted and not self.seen_text
        self.seen_text = self.seen_text or counted
        text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
        self.events.append(
            InspectedEvent(
                index=len(self.events),
                t_s=(t_ns - self.t_first) / 1e9,
                gap_s=None if self.last_t is None else (t_ns - self.last_t) / 1e9,
                bytes=len(raw.encode("utf-8")),
                kind=kind,
                counts_for_ttft=counted,
                first_token=first,
                tokens=tokens,
                several_tokens=counted and tokens is not None and tokens > 1,
                text=text,
                raw=redact(raw, self.api_key),
            )
        )
        self.last_t = t_ns


def _decode(decoder: StreamDecoder, data: str, event: str, t_ns: int) -> list[Delta] | None:
    """The event's deltas; ``None`` when it is malformed (the runner reports it as an
    error; the inspector lists it as ``other``)."""
    try:
        return decoder.on_event(data, event, t_ns)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def inspect_stream(
    reads: Sequence[tuple[int, bytes]], api: str, api_key: str | None = None
) -> list[InspectedEvent]:
    """Every wire event of the body ``reads`` (``(arrival_ns, bytes)`` per network read) in
    dialect ``api``. Raises ``KeyError`` for an unknown dialect."""
    provider = get_provider(api)
    decoder = provider.decoder()
    out = _Builder(api_key)
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
    if provider.framing == "ndjson":
        buffer = ""
        for t_ns, chunk in reads:
            buffer += utf8.decode(chunk)
            if buffer.startswith("\ufeff") and not out.events:  # a byte-order mark opens it
                buffer = buffer[1:]
            *lines, buffer = buffer.split("\n")
            for line in lines:
                if line.strip():
                    deltas = _decode(decoder, line.strip(), "", t_ns)
                    kind = "other" if deltas is None else _kind(deltas)
                    out.add(t_ns, kind, line, deltas or [])
        return out.events
    lines_dec = LineSplitter()
    sse = EventAssembler()
    pending: list[str] = []
    for t_ns, chunk in reads:
        text = utf8.decode(chunk)
        for line in lines_dec.feed(text):
            if line.startswith(":"):
                out.add(t_ns, "keep-alive", line, [])
                continue
            if line:
                pending.append(line)
                sse.line(line)
                continue
            raw = "\n".join(pending)
            pending = []
            event = sse.line(line)
            if event is None:
                continue
            kind_of_event, data = event
            if decoder.is_terminator(data):
                out.add(t_ns, "end", raw, [])
                continue
            deltas = _decode(decoder, data, kind_of_event, t_ns)
            kind = "other" if deltas is None else _kind(deltas)
            out.add(t_ns, kind, raw, deltas or [])
    return out.events
