"""Server-sent events parsed read by read, each event complete the moment its bytes are.

The event-stream format is WHATWG HTML's "Server-sent events" §9.2.5–9.2.6
(https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream):
lines end in CRLF, LF or a bare CR; a blank line dispatches the event; a line starting
with ``:`` is a comment; ``field: value`` with one optional space after the colon; one
U+FEFF (a UTF-8 byte-order mark) at the very start of the stream is ignored.

Why splitdesk parses it here and not with httpx-sse (its dependency for the SSE format
until this module): httpx-sse's public API is ``EventSource.aiter_sse()``, which reads
``response.aiter_text()`` itself, so it cannot say at which network read an event became
complete (the arrival time TTFT and ITL are stamped with), refuses a body whose content
type is not ``text/event-stream`` before it can be read, and drops the non-standard
``error:`` field llama.cpp sends its errors in. Its incremental decoders are private
(``httpx_sse._decoders``), and they hold a line ending in a bare CR back until the *next*
read (to see whether an LF follows): on a bare-CR stream every event would be stamped
with the following read's time, and the last one only at the close. They also keep a
leading byte-order mark in the first field's name, which loses the first event.

:class:`LineSplitter` ends a line at its CR at once and drops an LF that opens the next
read; :class:`EventStream` assembles events from the lines (``data`` joined with
``\\n``, ``event`` the type) and reports ``error:`` fields as they come.
"""

from __future__ import annotations

#: What :meth:`EventStream.feed` yields for a non-standard ``error:`` field (llama.cpp):
#: ``(ERROR_FIELD, value)``; every other item is ``(event type or "", data)``.
ERROR_FIELD = "\x00error"

_BOM = "\ufeff"


class LineSplitter:
    """Text of one event stream, fed in pieces as they arrive, split into complete lines.

    A line ends at CRLF, LF or CR (WHATWG HTML §9.2.5). A CR that ends a piece ends its line
    at once; an LF opening the next piece is then the second half of that CRLF and is
    dropped. One U+FEFF opening the stream is dropped.
    """

    __slots__ = ("_partial", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._partial = ""
        self._skip_lf = False
        self._started = False

    def feed(self, text: str) -> list[str]:
        """The lines ``text`` completes (without their line ends), oldest first."""
        if not text:
            return []
        if not self._started:
            self._started = True
            if text.startswith(_BOM):
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        if "\r" in text:
            self._skip_lf = text.endswith("\r")
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if self._partial:
            text = self._partial + text
        lines = text.split("\n")
        self._partial = lines.pop()
        return lines

    def flush(self) -> list[str]:
        """The last line when the stream ended without its line end (else nothing)."""
        rest, self._partial = self._partial, ""
        return [rest] if rest else []


class EventStream:
    """Events of one stream, assembled from its lines (WHATWG HTML §9.2.6).

    :meth:`feed` takes text as it arrives and returns the events it completed, each as
    ``(event type, data)`` (type ``""`` when the event named none; ``data`` its ``data``
    lines joined with ``\\n``; events with empty data are not dispatched, as the spec
    says), plus ``(ERROR_FIELD, value)`` for each ``error:`` line at once. ``id`` and
    ``retry`` are ignored (a measuring client never reconnects).
    """

    __slots__ = ("_data", "_event", "_lines")

    def __init__(self) -> None:
        self._lines = LineSplitter()
        self._event = ""
        self._data: list[str] = []

    def feed(self, text: str) -> list[tuple[str, str]]:
        """The events (and ``error:`` fields) that ``text`` completes, oldest first."""
        return self._take(self._lines.feed(text))

    def finish(self) -> list[tuple[str, str]]:
        """At the end of the body: an event that lacked only its blank line (a server that
        closed right after its last ``data:`` line), else nothing."""
        return self._take([*self._lines.flush(), ""])

    def _take(self, lines: list[str]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        data = self._data
        for line in lines:
            if not line:  # dispatch
                if data:
                    joined = "\n".join(data)
                    if joined:
                        out.append((self._event, joined))
                    data = self._data = []
                self._event = ""
                continue
            if line.startswith("data:"):  # the common line first
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
                continue
            if line.startswith(":"):
                continue  # a comment (keep-alive)
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                self._event = value
            elif name == "data":  # "data" with no colon: an empty data line
                data.append(value)
            elif name == "error":
                out.append((ERROR_FIELD, value))
        return out


class EventAssembler:
    """Line-by-line event assembly for tools that also need each line (the stream
    inspector): :meth:`line` returns ``(event type, data)`` when ``line`` dispatches an
    event with data, ``None`` otherwise. Same rules as :class:`EventStream`."""

    __slots__ = ("_stream",)

    def __init__(self) -> None:
        self._stream = EventStream()

    def line(self, line: str) -> tuple[str, str] | None:
        found = self._stream._take([line])
        return found[0] if found and found[0][0] != ERROR_FIELD else None
