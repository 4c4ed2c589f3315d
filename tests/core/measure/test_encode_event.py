"""The engine pipe's fast line for text events (``encode_event``) reads back, through the
window's validating decoder, as the very event the pydantic encoding gives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splitdesk.core.measure.engine_protocol import (
    EventLine,
    TextsLine,
    decode_line,
    encode,
    encode_event,
    encode_text_row,
    texts_line,
)
from splitdesk.core.run.events import RequestEnded, TextReceived, UsageReported
from splitdesk.providers.base import ErrorKind, RequestError

# any Unicode text but lone surrogates (pydantic refuses those too: see the last test)
unicode_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    run=st.integers(0, 10**6),
    t=st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
    req=st.integers(0, 10**4),
    text=unicode_text,
    reasoning=st.booleans(),
)
def test_a_text_line_decodes_to_the_event_the_model_encoding_gives(
    run: int, t: float, req: int, text: str, reasoning: bool
) -> None:
    event = TextReceived(t, req, text, reasoning)
    fast, model = encode_event(run, event), encode(EventLine(run=run, event=event))
    assert decode_line(fast) == decode_line(model) == EventLine(run=run, event=event)
    assert json.loads(fast) == json.loads(model)  # same keys, same values
    assert b"\n" not in fast  # one line


def test_the_line_is_byte_for_byte_pydantic_s_for_usual_times() -> None:
    event = TextReceived(1.234567891, 3, ' sc"a\\t\n\x01\x7f é 😀 \u2028', False)
    assert encode_event(1, event) == encode(EventLine(run=1, event=event))


def test_other_events_take_the_model_encoding() -> None:
    for event in (
        UsageReported(2.0, 1, 120, 30),
        RequestEnded(2.5, 3, "failed", None, RequestError(ErrorKind.HTTP, "HTTP 429", 429, 2.0)),
    ):
        assert encode_event(4, event) == encode(EventLine(run=4, event=event))


def test_a_lone_surrogate_fails_as_the_model_encoding_does() -> None:
    event = TextReceived(1.0, 0, "a\ud83d", False)
    with pytest.raises(ValueError, match="surrogates not allowed"):
        encode(EventLine(run=1, event=event))
    with pytest.raises(ValueError, match="surrogates not allowed"):
        encode_event(1, event)


@settings(max_examples=100, deadline=None)
@given(
    run=st.integers(0, 10**6),
    rows=st.lists(
        st.tuples(
            st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
            st.integers(0, 10**4),
            unicode_text,
            st.booleans(),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_a_batch_of_text_events_decodes_to_the_same_events_in_order(
    run: int, rows: list[tuple[float, int, str, bool]]
) -> None:
    """The engine's one line for a few milliseconds of text events (``TextsLine``) gives
    the window the very events, in the order they came."""
    events = [TextReceived(t, req, text, reasoning) for t, req, text, reasoning in rows]
    encoded = [encode_text_row(e) for e in events]
    assert all(row is not None for row in encoded)
    line = texts_line(run, [row for row in encoded if row is not None])
    message = decode_line(line)
    assert isinstance(message, TextsLine) and message.run == run
    assert message.events() == events
    assert b"\n" not in line


def test_only_a_text_event_with_valid_unicode_makes_a_row() -> None:
    assert encode_text_row(UsageReported(2.0, 1, 120, 30)) is None
    assert encode_text_row(TextReceived(1.0, 0, "a\ud83d", False)) is None  # encode_event fails it
    assert encode_text_row(TextReceived(float("inf"), 0, "a", False)) is None
