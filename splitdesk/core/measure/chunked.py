"""HTTP/1.1 chunked transfer coding, decoded piece by piece as the pieces arrive.

The format is RFC 9112 §7.1 (https://www.rfc-editor.org/rfc/rfc9112#section-7.1): each
chunk is its size in hex, optional extensions after ``;``, CRLF, the data, CRLF; a chunk
of size 0 ends the data, followed by optional trailer fields and a blank line.

Hand-written because it *is* the measured path (:func:`splitdesk.core.measure.arrivals.
direct_body`): at 64 streams every token is one network read, and reading it through
httpx → httpcore → h11 cost six async-generator layers and h11's event machinery per
read, ~40 % of the engine's CPU there (py-spy, ``benchmarks/overhead.py --streams 64``;
issue 25). The rules follow h11's ``ChunkedReader`` (the parser httpx uses), so a body
that h11 accepts is accepted here and one it refuses is refused: 1–20 hex digits of
size, extensions ignored, optional spaces or tabs before the CRLF, exactly CRLF after the
data, the trailer section ended as h11 ends it (``\\n\\r?\\n``; its fields are left for h11
to read); a size line or trailer section longer
than :data:`MAX_LINE` (the bound httpcore gives h11 on an incomplete event) is refused.
"""

from __future__ import annotations

import re

#: The longest chunk-size line or trailer section (bytes) accepted without its end: the
#: ``max_incomplete_event_size`` httpcore gives h11 (``MAX_INCOMPLETE_EVENT_SIZE`` in
#: httpcore/_async/http11.py), past which h11 says "Receive buffer too long".
MAX_LINE = 100 * 1024

# chunk-size [ chunk-ext ] OWS, as h11's ``chunk_header`` (h11/_abnf.py)
_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*")  # "." takes no LF, as h11's
#: h11's words for a line or section past :data:`MAX_LINE` without its end
_TOO_LONG = "Receive buffer too long"
# the end of a trailer section that has fields, as h11's ``blank_line_regex``
_BLANK_LINE = re.compile(rb"\n\r?\n")


class ChunkedError(ValueError):
    """The body's chunked framing is malformed (the message says where)."""


class ChunkedDecoder:
    """Decodes one chunked body. :meth:`feed` takes the body's bytes in any pieces and
    returns the data they complete; :attr:`done` turns true once the last chunk and its
    trailer section have been read, and :attr:`rest` then holds any bytes fed past them.

    Raises :class:`ChunkedError` on malformed framing. Not thread-safe (one per body)."""

    __slots__ = ("_buf", "_footer", "_left", "_trailer", "done", "error", "rest", "trailer")

    def __init__(self) -> None:
        self._buf = b""  # bytes of a size line, footer or trailer not complete yet
        self._left = 0  # data bytes left in the chunk under way
        self._footer = 0  # bytes of the CRLF after a chunk's data still to come (2, 1, 0)
        self._trailer = False  # the last chunk came: reading the trailer section
        self.done = False
        #: the framing fault found after data that :meth:`feed` returned; raised next
        self.error: ChunkedError | None = None
        self.rest = b""
        #: the trailer section as received, its ending blank line included (``b"\r\n"``
        #: when there are no trailer fields); its fields are not read here: h11 reads them
        #: when the body's end is handed to it (:func:`~splitdesk.core.measure.arrivals.
        #: direct_body`), and refuses them where they are malformed
        self.trailer = b""

    def feed(self, data: bytes) -> bytes:
        """The body data completed by ``data`` (``b""`` when it holds only framing).

        Raises :class:`ChunkedError` on malformed framing — but where ``data`` completed
        some data before the fault, that data is returned and the error kept in
        :attr:`error` for the caller to raise next (h11 hands up a chunk's data before it
        reads the CRLF after it, so a reader of httpx's keeps it). Feeding after
        :attr:`done` or after an error raises."""
        if self.error is not None:
            raise self.error
        if self.done:
            raise ChunkedError("data after the end of the chunked body")
        buf = self._buf + data if self._buf else data
        self._buf = b""
        out: list[bytes] = []
        try:
            self._decode(buf, out)
        except ChunkedError as exc:
            if not any(out):
                raise
            self.error = exc
        if len(out) == 1:
            return out[0]
        return b"".join(out)

    def _decode(self, buf: bytes, out: list[bytes]) -> None:
        pos, end = 0, len(buf)
        while pos < end:
            if self._left:  # inside a chunk's data
                take = min(self._left, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._footer = 2
            elif self._footer:  # the CRLF that closes a chunk's data
                got, expected = buf[pos : pos + self._footer], b"\r\n"[2 - self._footer :]
                if got != expected[: len(got)]:  # worded as h11 words it
                    raise ChunkedError(
                        f"malformed chunk footer: {bytearray(got)!r} (expected {expected!r})"
                    )
                pos += len(got)
                self._footer -= len(got)
            elif self._trailer:  # the trailer section, ended by an empty line (as h11 ends it)
                if buf.startswith(b"\n", pos):
                    stop = pos + 1
                elif buf.startswith(b"\r\n", pos):
                    stop = pos + 2
                else:
                    found = _BLANK_LINE.search(buf, pos)
                    if found is None:
                        if end - pos > MAX_LINE:
                            raise ChunkedError(_TOO_LONG)
                        self._buf = buf[pos:]
                        break
                    stop = found.end()
                self.trailer = buf[pos:stop]
                self.done = True
                self.rest = buf[stop:]
                break
            else:  # a chunk-size line
                at = buf.find(b"\r\n", pos)
                if at < 0:
                    if end - pos > MAX_LINE:
                        raise ChunkedError(_TOO_LONG)
                    self._buf = buf[pos:]
                    break
                match = _SIZE_LINE.fullmatch(buf, pos, at)
                if match is None:  # worded as h11 words it: the same error either way
                    raise ChunkedError(f"illegal chunk header: {bytearray(buf[pos : at + 2])!r}")
                size = int(match[1], 16)
                pos = at + 2
                if size:
                    self._left = size
                else:
                    self._trailer = True
