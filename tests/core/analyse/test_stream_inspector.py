"""The stream inspector (issue 12, must show): it lists exactly the events of a fixture
stream with the right flags, shows keep-alives and non-text events as not counted for
TTFT, flags chunks that carried several tokens, masks keys, and reads a live capture."""

from __future__ import annotations

import asyncio
import json

from paths import FIXTURES
from splitdesk.core.analyse.stream_inspector import inspect_stream
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import start_sim

STREAMS = FIXTURES / "streams"


def reads_of(name: str) -> tuple[list[tuple[int, bytes]], dict]:  # type: ignore[type-arg]
    doc = json.loads((STREAMS / name).read_text("utf-8"))
    # read k arrives at k ms: arrival times and gaps are then known exactly
    return [(k * 1_000_000, c.encode()) for k, c in enumerate(doc["body_chunks"])], doc


def test_every_event_of_a_fixture_stream_with_its_flags() -> None:
    reads, doc = reads_of("05-openrouter-processing-comments.json")
    events = inspect_stream(reads, doc["api"])
    assert [e.kind for e in events] == [
        "keep-alive",
        "keep-alive",
        "role-only",
        *["text"] * 11,
        "finish",
        "usage",
        "end",
    ]
    counted = [e for e in events if e.counts_for_ttft]
    assert [e.index for e in counted] == list(range(3, 14))
    assert "".join(e.text for e in counted) == doc["expect"]["text"]
    (first,) = [e for e in events if e.first_token]
    # TTFT is stamped in the read the fixture names (read k arrives at k ms)
    assert first.index == 3 and first.t_s == doc["expect"]["first_token_chunk_index"] / 1000
    assert [e.t_s for e in events[:4]] == [0.0, 0.001, 0.002, 0.003]
    assert [e.gap_s for e in events[:4]] == [None, 0.001, 0.001, 0.001]
    assert events[0].raw == ": OPENROUTER PROCESSING" and events[0].bytes == 23
    assert events[-1].raw == "data: [DONE]" and events[-1].bytes == 12
    assert all(not e.counts_for_ttft for e in events if e.kind != "text")
    assert not any(e.several_tokens for e in events)  # no per-chunk counts: not claimed
    assert all(e.tokens is None for e in events)


def test_colon_only_keepalives_and_role_only_chunk() -> None:
    reads, doc = reads_of("07-llamacpp-colon-only-keepalive.json")
    events = inspect_stream(reads, doc["api"])
    assert [e.kind for e in events[:4]] == ["keep-alive"] * 3 + ["role-only"]
    assert [e.raw for e in events[:3]] == [":"] * 3
    (first,) = [e for e in events if e.first_token]
    assert first.index == 4 and first.t_s == 0.004
    assert "".join(e.text for e in events if e.counts_for_ttft) == doc["expect"]["text"]


def _chunk(content: str, completion_tokens: int) -> bytes:
    body = {
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
        "usage": {"prompt_tokens": 9, "completion_tokens": completion_tokens},
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def test_a_chunk_carrying_several_tokens_is_flagged() -> None:
    # vLLM's continuous usage stats (stream_options.continuous_usage_stats): cumulative
    # counts in every chunk; the second chunk carried three tokens (synthetic stream)
    reads = [
        (0, _chunk("Hi", 1)),
        (10_000_000, _chunk(" there, you", 4)),
        (20_000_000, b"data: [DONE]\n\n"),
    ]
    events = inspect_stream(reads, "openai-chat")
    assert [(e.kind, e.tokens, e.several_tokens) for e in events] == [
        ("text", 1, False),
        ("text", 3, True),
        ("end", None, False),
    ]


def test_an_api_key_in_a_raw_line_is_never_shown() -> None:
    key = "sk-test-0123456789abcdef"
    body = {"choices": [{"index": 0, "delta": {"content": f"echo {key}"}}]}
    reads = [(0, f"data: {json.dumps(body)}\n\n".encode())]
    (event,) = inspect_stream(reads, "openai-chat", api_key=key)
    assert key not in event.raw and key[-6:] not in event.raw


def test_live_capture_lists_what_the_runner_measured() -> None:
    sim = start_sim("batching", {"speed": 8.0})
    try:
        questions = ["Why is the sky blue?", "What causes tides?"]
        plan = make_plan("parallel", questions, CombinedTemplate(), 30)
        endpoint = EndpointConfig(f"{sim.url}/v1", "openai-chat", "splitdesk-sim", None)
        state = RunState()
        runner = Runner(RunConfig(endpoint, capture_raw=True), state.apply)
        asyncio.run(runner.run(questions, plan))
        for trace in state.requests:
            events = inspect_stream(runner.raw[trace.req], "openai-chat")
            text_events = [e for e in events if e.counts_for_ttft]
            assert "".join(e.text for e in text_events) == trace.text
            assert len(text_events) == len(trace.event_times)
            assert events[-1].kind == "end"
    finally:
        sim.stop()
