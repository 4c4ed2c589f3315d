"""Fast paths of event decoding: the OpenAI chat decoder's for plain text chunks
(``plain_text``) gives the deltas the full reading (``ChoiceReader.read``) gives, for any
chunk; ``parse_event_json`` gives what ``json.loads`` gives, value or error."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splitdesk.providers.base import TextDelta, parse_event_json
from splitdesk.providers.openai_chat import ChatDecoder, ChoiceReader, plain_text

PLAIN = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1700000000,
    "model": "m",
    "system_fingerprint": None,
    "choices": [{"index": 0, "delta": {"content": " hi"}, "logprobs": None, "finish_reason": None}],
    "usage": None,
}

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "x", "é😀"]))
texts = st.one_of(st.none(), st.sampled_from(["", " hi", "\n", "😀"]), st.integers(0, 1))
usage = st.one_of(
    st.none(),
    st.fixed_dictionaries({"completion_tokens": st.integers(0, 3)}),
    st.fixed_dictionaries({"prompt_tokens": st.integers(0, 3), "output_tokens": st.integers(0, 3)}),
)
delta = st.fixed_dictionaries(
    {"content": texts},
    optional={
        "role": st.just("assistant"),
        "reasoning_content": texts,
        "reasoning": texts,
        "refusal": texts,
        "tool_calls": st.one_of(
            st.none(), st.just([]), st.just([{"function": {"name": "f", "arguments": "{}"}}])
        ),
        "other": scalars,
    },
)
choice = st.fixed_dictionaries(
    {"delta": st.one_of(delta, st.none(), st.just("text"))},
    optional={
        "index": st.sampled_from([0, 1]),
        "finish_reason": st.sampled_from([None, "", "stop", "error"]),
        "usage": usage,
        "logprobs": st.none(),
    },
)
chunk = st.fixed_dictionaries(
    {"choices": st.one_of(st.lists(choice, max_size=2), st.none())},
    optional={
        "id": st.just("c1"),
        "usage": usage,
        "error": st.one_of(scalars, st.just({"message": "boom"})),
        "x_groq": st.fixed_dictionaries({"usage": usage}),
        "obfuscation": st.just("abc"),
    },
)


#: chunks one field away from plain, most of which the fast path takes
near_plain = st.fixed_dictionaries(
    {
        "choices": st.tuples(
            st.fixed_dictionaries(
                {
                    "index": st.just(0),
                    "delta": st.fixed_dictionaries(
                        {"content": texts},
                        optional={
                            "role": st.just("assistant"),
                            "reasoning": st.sampled_from([None, "", "r"]),
                            "tool_calls": st.sampled_from([None, []]),
                        },
                    ),
                    "finish_reason": st.sampled_from([None, None, "length"]),
                },
                optional={"usage": usage, "logprobs": st.none()},
            )
        ).map(list),
        "system_fingerprint": st.none(),
    },
    optional={"usage": usage, "error": scalars, "obfuscation": st.just("abc")},
)


def full_reading(obj: dict[str, Any]) -> list[Any]:
    return ChoiceReader().read(obj, "delta", "content", 7)


@settings(max_examples=150, deadline=None)
@given(st.one_of(chunk, near_plain))
def test_the_fast_path_reads_every_chunk_as_the_full_reading_does(obj: dict[str, Any]) -> None:
    obj = json.loads(json.dumps(obj))  # what the decoder gets: plain JSON values
    text = plain_text(obj)
    if text is not None:
        assert ([TextDelta(7, text)] if text else []) == full_reading(obj)
    assert ChatDecoder().on_event(json.dumps(obj), "", 7) == full_reading(obj)


def test_a_plain_chunk_takes_the_fast_path_and_the_others_do_not() -> None:
    assert plain_text(PLAIN) == " hi"
    role = json.loads(json.dumps(PLAIN))
    role["choices"][0]["delta"] = {"role": "assistant", "content": ""}
    assert plain_text(role) == ""
    for change in (
        {"usage": {"completion_tokens": 3}},
        {"error": "overloaded"},
        {"x_groq": {"usage": {"completion_tokens": 3}}},
        {"choices": []},
        {"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}]},
        {"choices": [{"index": 0, "delta": {"content": "", "reasoning_content": "think"}}]},
        {"choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": "a"}]}}]},
    ):
        assert plain_text({**PLAIN, **change}) is None, change


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from(["", " ", "\n", "\ufeff", "x", "}", " 1"]), st.booleans())
def test_event_json_parses_as_json_loads(value: Any, extra: str, before: bool) -> None:
    text = json.dumps(value, ensure_ascii=False)
    text = extra + text if before else text + extra
    try:
        expected = json.loads(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError, match=re.escape(str(exc))):
            parse_event_json(text)
        return
    assert parse_event_json(text) == expected
