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


#: The most characters one SSE line, or the ``data`` of one event, may hold (64 Mi, the
#: size of 64 MiB of ASCII): a stream that sends more without a line end (or a blank line)
#: fails with :class:`EventTooLargeError` instead of growing the client's memory without end.
#: Real events are a few hundred bytes; a whole long answer in one event stays far below.
MAX_EVENT_CHARS = 64 * 1024 * 1024


class EventTooLargeError(ValueError):
    """One SSE line or event exceeded :data:`MAX_EVENT_CHARS` (``limit``): the stream is
    refused there; events completed before it were already returned."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"one SSE line or event ran past {limit:,} characters ({limit / 2**20:g} Mi) "
            "without its end: splitdesk's bound on one event; the stream was cut there "
            "(the events before it are kept)"
        )
        self.limit = limit


class LineSplitter:
    """Text of one event stream, fed in pieces as they arrive, split into complete lines.

    A line ends at CRLF, LF or CR (WHATWG HTML §9.2.5). A CR that ends a piece ends its line
    at once; an LF opening the next piece is then the second half of that CRLF and is
    dropped. One U+FEFF opening the stream is dropped.

    A line that spans many pieces is kept as a list of them and joined once, when it ends,
    and only the new piece is searched for line ends: the cost is linear in the line's
    length however many reads bring it (joining the partial line to every read was
    quadratic: one 40 MB event took 35 s). A line longer than ``limit`` characters raises
    :class:`EventTooLargeError`.
    """

    __slots__ = ("_parts", "_size", "_skip_lf", "_started", "limit")

    def __init__(self, limit: int = MAX_EVENT_CHARS) -> None:
        self._parts: list[str] = []  # the line begun and not ended, piece by piece
        self._size = 0  # its length in characters
        self._skip_lf = False
        self._started = False
        self.limit = limit

    def feed(self, text: str) -> list[str]:
        """The lines ``text`` completes (without their line ends), oldest first.

        Raises :class:`EventTooLargeError` when the line under way passes :attr:`limit`."""
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
        if "\n" not in text:  # the line goes on
            self._parts.append(text)
            self._size += len(text)
            if self._size > self.limit:
                raise EventTooLargeError(self.limit)
            return []
        lines = text.split("\n")
        if self._parts:
            if self._size + len(lines[0]) > self.limit:
                raise EventTooLargeError(self.limit)
            self._parts.append(lines[0])
            lines[0] = "".join(self._parts)
            self._parts = []
        rest = lines.pop()
        if rest:
            self._parts.append(rest)
        self._size = len(rest)
        # a line inside ``text`` can pass the bound only when ``text`` itself does
        if self._size > self.limit or (
            len(text) > self.limit and max(map(len, lines)) > self.limit
        ):
            raise EventTooLargeError(self.limit)
        return lines

    def flush(self) -> list[str]:
        """The last line when the stream ended without its line end (else nothing)."""
        rest = "".join(self._parts)
        self._parts, self._size = [], 0
        return [rest] if rest else []


class EventStream:
    """Events of one stream, assembled from its lines (WHATWG HTML §9.2.6).

    :meth:`feed` takes text as it arrives and returns the events it completed, each as
    ``(event type, data)`` (type ``""`` when the event named none; ``data`` its ``data``
    lines joined with ``\\n``; events with empty data are not dispatched, as the spec
    says), plus ``(ERROR_FIELD, value)`` for each ``error:`` line at once. ``id`` and
    ``retry`` are ignored (a measuring client never reconnects).

    Raises :class:`EventTooLargeError` when one line, or one event's ``data`` lines together,
    pass ``limit`` characters (:data:`MAX_EVENT_CHARS`); the events returned before stay
    valid.
    """

    __slots__ = ("_data", "_event", "_lines", "_size", "limit")

    def __init__(self, limit: int = MAX_EVENT_CHARS) -> None:
        self._lines = LineSplitter(limit)
        self._event = ""
        self._data: list[str] = []
        self._size = 0  # characters in ``_data``
        self.limit = limit

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
                    self._size = 0
                self._event = ""
                continue
            if line.startswith("data:"):  # the common line first
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
                self._size += len(value)
                if self._size > self.limit:
                    raise EventTooLargeError(self.limit)
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
                self._size += len(value)
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
