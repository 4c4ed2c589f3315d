"""The chunked decoder of the measured path agrees with h11, the parser httpx reads with:
the same data from the same body however it is split, and a refusal where h11 refuses."""

from __future__ import annotations

import random

import h11
import pytest

from splitdesk.core.measure.chunked import MAX_LINE, ChunkedDecoder, ChunkedError

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"

#: bodies real servers send, and the corners RFC 9112 §7.1 allows
VALID = [
    b"5\r\nhello\r\n0\r\n\r\n",
    b'1d\r\ndata: {"a":1}\n\ndata: [DONE]\n\n\r\n0\r\n\r\n',  # vLLM: an event per chunk
    b"A;name=value\r\n0123456789\r\n0\r\n\r\n",  # an extension, upper-case hex
    b"3 \t\r\nabc\r\n0\r\n\r\n",  # spaces and tabs before the CRLF
    b"00003\r\nabc\r\n0\r\nx-trailer: 1\r\nother: two\r\n\r\n",  # leading zeros, trailers
    b"0\r\n\r\n",  # an empty body
    b"2\r\n\r\n\r\n1\r\n\n\r\n0\r\n\r\n",  # data that is itself CRLF and LF
    b"1\r\na\r\n0\r\nx-t: 1\n\n",  # a trailer section ended by bare LFs (h11 takes it)
]

INVALID = [
    b"g\r\nhello\r\n0\r\n\r\n",  # not hex
    b"5\r\nhelloXY0\r\n\r\n",  # no CRLF after the data
    b"\r\nhello\r\n",  # no size
    b"-5\r\nhello\r\n0\r\n\r\n",
    b"123456789012345678901\r\n",  # 21 digits
    b"3\r\nabc\r\n0\r\nno colon here\r\n\r\n",  # a trailer that is no field (h11 reads it)
    b"3;a\nb\r\nabc\r\n0\r\n\r\n",  # an extension holding a bare LF
]


def h11_connection() -> h11.Connection:
    """An h11 client connection as httpcore makes it (its incomplete-event bound), which
    sent a GET."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_LINE)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    return conn


def h11_body(body: bytes) -> bytes | None:
    """What h11 reads from ``body`` (``None``: it refuses it). The data is returned only
    once its EndOfMessage came."""
    conn = h11_connection()
    conn.receive_data(HEAD + body)
    out = b""
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                out += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return out
            elif event is h11.NEED_DATA:
                return None  # incomplete: not a whole body
    except h11.RemoteProtocolError:
        return None


def h11_until_fault(body: bytes) -> tuple[bytes, h11.RemoteProtocolError | None]:
    """The data h11 hands up from ``body`` and the error it then raises (``None``: it
    raised none before it needed more data or the message ended)."""
    conn = h11_connection()
    conn.receive_data(HEAD + body)
    got = b""
    try:
        while (event := conn.next_event()) is not h11.NEED_DATA:
            if isinstance(event, h11.Data):
                got += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
    except h11.RemoteProtocolError as exc:
        return got, exc
    return got, None


def decode(body: bytes, split: int | list[int] = 0) -> tuple[bytes, bytes] | None:
    """(data, rest) the decoder reads from ``body`` fed in pieces of ``split`` bytes
    (0: whole; a list: those cut points), ``None`` where it refuses or is not done."""
    cuts = split if isinstance(split, list) else list(range(split, len(body), split or 1))
    if split == 0:
        cuts = []
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    decoder = ChunkedDecoder()
    out = b""
    try:
        for piece in pieces:
            if decoder.done:
                decoder.rest += piece
                continue
            out += decoder.feed(piece)
    except ChunkedError:
        return None
    if not decoder.done:
        return None
    # direct_body hands the last chunk and the trailer section to h11, which reads the
    # trailer fields: a body is refused where h11 refuses them
    if h11_body(b"0\r\n" + decoder.trailer) is None:
        return None
    return out, decoder.rest


@pytest.mark.parametrize("body", VALID)
def test_every_split_of_a_valid_body_reads_what_h11_reads(body: bytes) -> None:
    expected = h11_body(body)
    assert expected is not None, "the case itself must be valid for h11"
    for size in range(len(body) + 1):
        assert decode(body, size) == (expected, b""), f"pieces of {size} bytes"


@pytest.mark.parametrize("body", INVALID)
def test_a_body_h11_refuses_is_refused(body: bytes) -> None:
    assert h11_body(body) is None
    for size in (0, 1, 2, 3):
        assert decode(body, size) is None, f"pieces of {size} bytes"


def test_random_bodies_and_corruptions_agree_with_h11() -> None:
    """Seeded random bodies (random chunk sizes and data, extensions, trailers), each cut
    at random points, then with one byte changed: the decoder reads what h11 reads, and
    refuses what h11 refuses."""
    rng = random.Random(25)
    for case in range(400):
        chunks = [rng.randbytes(rng.randint(1, 40)) for _ in range(rng.randint(0, 6))]
        body = b"".join(
            b"%x%s\r\n%s\r\n" % (len(c), b";x=1" if rng.random() < 0.2 else b"", c) for c in chunks
        )
        body += b"0\r\n" + (b"t: v\r\n" if rng.random() < 0.3 else b"") + b"\r\n"
        if case % 2:
            at = rng.randrange(len(body))
            body = body[:at] + bytes([rng.choice(b"0123456789abcdefgxyz\r\n ;:")]) + body[at + 1 :]
        expected = h11_body(body)
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(0, 8))))
        got = decode(body, cuts)
        if expected is None:
            # h11 refused it or found it incomplete: never read differently, only refuse,
            # or end early where a changed size byte made a shorter body that ends well
            assert got is None or got[1], f"case {case}: {body!r} read as {got!r}"
        else:
            assert got is not None and got[0] == expected, f"case {case}: {body!r}"


def test_bytes_past_the_end_are_kept_as_rest_and_feeding_on_is_refused() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"2\r\nhi\r\n0\r\n\r\nHTTP/1.1 200") == b"hi"
    assert decoder.done
    assert decoder.rest == b"HTTP/1.1 200"
    with pytest.raises(ChunkedError, match="after the end"):
        decoder.feed(b"x")


def test_a_size_line_or_trailer_without_end_is_refused_past_httpcores_bound() -> None:
    """Past the bound httpcore gives h11 (100 KiB), in h11's words; below it, a long
    extension or trailer field is read as h11 reads it."""
    long_ext = b"5;" + b"x" * 20_000 + b"\r\nhello\r\n0\r\nx-t: " + b"a" * 20_000 + b"\r\n\r\n"
    assert decode(long_ext, 7_000) == (b"hello", b"") == (h11_body(long_ext), b"")
    for start in (b"5;", b"0\r\nname: "):
        decoder = ChunkedDecoder()
        decoder.feed(start + b"x" * (MAX_LINE // 2))
        with pytest.raises(ChunkedError) as ours:
            decoder.feed(b"x" * MAX_LINE)
        _data, theirs = h11_until_fault(start + b"x" * (MAX_LINE // 2) + b"x" * MAX_LINE)
        assert str(ours.value) == str(theirs) == "Receive buffer too long"


@pytest.mark.parametrize(
    ("body", "data"),
    [
        (b"zz\r\n", b""),
        (b"2\r\nhiXY", b"hi"),
        (b"2\r\nhi\rY", b"hi"),
        (b"2\r\nhi\r\nzz\r\n", b"hi"),
    ],
)
def test_a_fault_is_worded_as_h11_words_it_after_the_data_before_it(
    body: bytes, data: bytes
) -> None:
    """The same message as h11's (what the request's error says either way), and the data
    completed before the fault handed up first, as h11 hands it up."""
    got, h11_error = h11_until_fault(body)
    assert got == data
    decoder = ChunkedDecoder()
    if data:
        assert decoder.feed(body) == data
        assert isinstance(decoder.error, ChunkedError)
        with pytest.raises(ChunkedError) as ours:
            decoder.feed(b"more")
    else:
        with pytest.raises(ChunkedError) as ours:
            decoder.feed(body)
    assert str(ours.value) == str(h11_error)
