"""Typed content parts and mirrored reasoning channels (shared by the dialects), and every
dialect's judgement of a stream's end: complete only with its own completion signal."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from splitdesk.providers import PROVIDERS, get_provider
from splitdesk.providers.base import Delta, ErrorDelta, ErrorKind, TextDelta, UsageDelta
from splitdesk.providers.content import ReasoningChannels, missing_tail, parts_text
from splitdesk.providers.openai_chat import find_usage


def test_parts_text_splits_answer_and_reasoning() -> None:
    assert parts_text("plain") == ("plain", "")
    assert parts_text(None) == ("", "")
    assert parts_text({"type": "text", "text": "one"}) == ("one", "")
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]},  # Magistral
        {"type": "text", "text": "A"},
        "B",
        {"type": "output_text", "text": "C"},
        {"type": "reasoning", "text": ", ok"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "refusal", "refusal": "D"},
    ]
    assert parts_text(parts) == ("ABCD", "hm, ok")
    assert parts_text([{"type": "text", "text": {"value": "v", "annotations": []}}]) == ("v", "")


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


@given(
    text=st.text(min_size=1, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=8),
    order=st.lists(st.booleans(), min_size=1, max_size=50),
)
def test_reasoning_mirrored_on_two_channels_counts_once(
    text: str, cuts: list[int], order: list[bool]
) -> None:
    """The same deltas on channels A and B, interleaved in any order: emitted once, in order."""
    deltas = _split(text, cuts)
    queues = {"a": list(deltas), "b": list(deltas)}
    channels = ReasoningChannels()
    out = ""
    flips = iter(order * (2 * len(deltas) + 1))
    while queues["a"] or queues["b"]:
        name = "a" if (next(flips) and queues["a"]) or not queues["b"] else "b"
        out += channels.take(name, queues[name].pop(0))
    assert out == text


def test_reasoning_on_separate_channels_is_all_kept() -> None:
    channels = ReasoningChannels()
    got = [
        channels.take("summary", "**Plan**"),
        channels.take("raw", "First, add."),
        channels.take("summary", " then check"),
    ]
    assert got == ["**Plan**", "First, add.", " then check"]


# -- every dialect judges the end of its stream ---------------------------------------------

#: per dialect: one event of partial text, and the event(s) that complete the stream
EVENTS: dict[str, tuple[str, list[str]]] = {
    "openai-chat": (
        json.dumps({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}),
        [json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})],
    ),
    "openai-completions": (
        json.dumps({"choices": [{"index": 0, "text": "Hi"}]}),
        [json.dumps({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]})],
    ),
    "openai-responses": (
        json.dumps({"type": "response.output_text.delta", "delta": "Hi"}),
        [json.dumps({"type": "response.completed", "response": {"status": "completed"}})],
    ),
    "anthropic": (
        json.dumps({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hi"}}),
        [json.dumps({"type": "message_stop"})],
    ),
    "ollama-chat": (
        json.dumps({"message": {"content": "Hi"}, "done": False}),
        [json.dumps({"message": {"content": ""}, "done": True, "done_reason": "stop"})],
    ),
    "ollama-generate": (
        json.dumps({"response": "Hi", "done": False}),
        [json.dumps({"response": "", "done": True})],
    ),
    "tgi": (
        json.dumps({"token": {"id": 1, "text": "Hi", "special": False}}),
        [
            json.dumps(
                {
                    "token": {"id": 2, "text": "</s>", "special": True},
                    "generated_text": "Hi",
                    "details": None,
                }
            )
        ],
    ),
}
EVENTS["azure-openai"] = EVENTS["openai-chat"]
#: dialects whose streams a ``data: [DONE]`` line alone completes (OpenAI's)
DONE_COMPLETES = {"openai-chat", "openai-completions", "azure-openai"}


def test_every_dialect_is_judged_here() -> None:
    assert set(EVENTS) == set(PROVIDERS)


def _errors(deltas: list[Delta]) -> list[ErrorKind]:
    return [d.error.kind for d in deltas if isinstance(d, ErrorDelta)]


@pytest.mark.parametrize("api", sorted(EVENTS))
def test_a_stream_is_complete_only_with_its_dialects_signal(api: str) -> None:
    partial, ending = EVENTS[api]
    cut = get_provider(api).decoder()
    cut.on_event(partial, "", 1)
    (error,) = cut.on_end(2, done_seen=False)
    assert isinstance(error, ErrorDelta) and error.error.kind == ErrorKind.TRUNCATED
    assert error.t_ns == 2 and "cut off" in error.error.message

    whole = get_provider(api).decoder()
    for data in [partial, *ending]:
        whole.on_event(data, "", 1)
    assert whole.on_end(2, done_seen=False) == []

    sentinel = get_provider(api).decoder()
    sentinel.on_event(partial, "", 1)
    ended = _errors(sentinel.on_end(2, done_seen=True))
    assert ended == ([] if api in DONE_COMPLETES else [ErrorKind.TRUNCATED])


#: per dialect: an event carrying text *and* a top-level error
ERROR_BESIDE_TEXT: dict[str, dict[str, Any]] = {
    "openai-chat": {"choices": [{"index": 0, "delta": {"content": "Hi"}}], "error": "boom"},
    "openai-completions": {"choices": [{"index": 0, "text": "Hi"}], "error": {"message": "boom"}},
    "openai-responses": {"type": "response.output_text.delta", "delta": "Hi", "error": "boom"},
    "anthropic": {"type": "message_delta", "delta": {}, "error": {"message": "boom"}},
    "ollama-chat": {"message": {"content": "Hi"}, "done": False, "error": "boom"},
    "ollama-generate": {"response": "Hi", "done": False, "error": "boom"},
    "tgi": {"token": {"id": 1, "text": "Hi", "special": False}, "error": "boom"},
}
ERROR_BESIDE_TEXT["azure-openai"] = ERROR_BESIDE_TEXT["openai-chat"]


@pytest.mark.parametrize("api", sorted(ERROR_BESIDE_TEXT))
def test_a_top_level_error_in_any_event_is_an_error(api: str) -> None:
    deltas = get_provider(api).decoder().on_event(json.dumps(ERROR_BESIDE_TEXT[api]), "", 1)
    assert isinstance(deltas[-1], ErrorDelta) and deltas[-1].error.kind == ErrorKind.SERVER
    assert "boom" in deltas[-1].error.message
    text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    # the text the same event carried is kept (Anthropic's message_delta carries none)
    assert text == ("" if api == "anthropic" else "Hi")
    null = (
        get_provider(api)
        .decoder()
        .on_event(json.dumps({**ERROR_BESIDE_TEXT[api], "error": None}), "", 1)
    )
    assert not _errors(null)  # "error": null is no error


def test_usage_is_read_where_vendors_put_it() -> None:
    def tokens(obj: dict[str, Any]) -> list[int | None]:
        return [d.output_tokens for d in find_usage(obj, 0) if isinstance(d, UsageDelta)]

    assert tokens({"usage": {"completion_tokens": 3}}) == [3]
    assert tokens(
        {"usage": {"completion_tokens": 0}, "x_groq": {"usage": {"completion_tokens": 7}}}
    ) == [7]
    assert tokens({"choices": [{"index": 0, "usage": {"output_tokens": 4}}]}) == [4]
    assert tokens({"meta": {"billed_units": {"output_tokens": 5}}}) == [5]
    assert tokens({"stats": {"completion_tokens": 6}}) == [6]
    assert tokens({"timings": {"predicted_n": 9}, "usage": None}) == []  # not a usage report


@given(
    whole=st.text(alphabet="ab ", max_size=12),
    before=st.text(alphabet="ab ", max_size=8),
    k=st.integers(0, 12),
)
def test_missing_tail_completes_what_the_deltas_gave(whole: str, before: str, k: int) -> None:
    delivered = before + whole[: min(k, len(whole))]
    rest = missing_tail(delivered, whole)
    assert (delivered + rest).endswith(whole)  # the whole text is there, at the end
    assert len(rest) <= len(whole) - min(k, len(whole))  # never repeats what was delivered


def test_missing_tail_cases() -> None:
    assert missing_tail("", "abc") == "abc"
    assert missing_tail("xxabc", "abc") == ""
    assert missing_tail("xxab", "abc") == "c"
    assert missing_tail("abab", "ababc") == "c"


@pytest.mark.parametrize("api", ["openai-chat", "openai-completions", "azure-openai"])
def test_an_sse_event_named_error_is_an_error(api: str) -> None:
    data = json.dumps({"message": "model overloaded", "code": 503})
    (error,) = get_provider(api).decoder().on_event(data, "error", 1)
    assert isinstance(error, ErrorDelta) and error.error.kind == ErrorKind.SERVER
    assert "model overloaded" in error.error.message
