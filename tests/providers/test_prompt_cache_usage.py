"""Prompt and cached prompt tokens read from each dialect's own usage, ``None`` when a
server reports none; llama.cpp's ``timings``; and the requests a shared context makes (a
system message where the dialect has one, Anthropic's ``cache_control``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import openai
import pytest

from paths import FIXTURES
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import PROVIDERS, get_provider
from splitdesk.providers.anthropic import AnthropicDecoder
from splitdesk.providers.base import EndpointConfig, GenParams, Prompt, UsageDelta
from splitdesk.providers.openai_chat import ChatDecoder
from splitdesk.providers.openai_responses import ResponsesDecoder
from streamserver import ReplayServer, StreamFixture

CACHE_FIXTURES = sorted((FIXTURES / "streams_cache").glob("*.json"))


def _usage(deltas: list[object]) -> list[UsageDelta]:
    return [d for d in deltas if isinstance(d, UsageDelta)]


@pytest.mark.asyncio
@pytest.mark.parametrize("path", CACHE_FIXTURES, ids=lambda p: p.stem)
async def test_real_llamacpp_streams_give_prompt_cached_and_prefill(path: Path) -> None:
    fx = StreamFixture.load(path)
    async with ReplayServer(fx.status, fx.headers, fx.chunks, pause=0.001) as server:
        state = RunState()
        plan = make_plan("parallel", ["Question?"], CombinedTemplate(), 8)
        config = RunConfig(EndpointConfig(server.url + "/v1", fx.api, "m"))
        await Runner(config, state.apply).run(["Question?"], plan)
    (trace,) = state.requests
    want = fx.expect
    assert trace.outcome == "done" and trace.text == want["text"]
    assert trace.usage_prompt_tokens == want["prompt_tokens"]
    assert trace.usage_cached_prompt_tokens == want["cached_prompt_tokens"]
    assert trace.server_timings == pytest.approx(want["server_timings"])
    # prompt_n (computed) + cache_n (reused) is the whole prompt, as usage says
    timings = trace.server_timings
    assert timings["prompt_n"] + timings["cache_n"] == want["prompt_tokens"]


@pytest.mark.asyncio
@pytest.mark.parametrize("path", CACHE_FIXTURES, ids=lambda p: p.stem)
async def test_the_openai_sdk_reads_the_same_usage_from_llamacpp(path: Path) -> None:
    fx = StreamFixture.load(path)
    server = ReplayServer(fx.status, fx.headers, fx.chunks, pause=0.001)
    async with server, openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="u") as c:
        stream = await c.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Question?"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    usage = chunks[-1].usage
    assert usage is not None and usage.prompt_tokens == fx.expect["prompt_tokens"]
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == fx.expect["cached_prompt_tokens"]


def _chat_usage(usage: dict[str, object]) -> list[UsageDelta]:
    chunk = {"id": "x", "object": "chat.completion.chunk", "choices": [], "usage": usage}
    return _usage(ChatDecoder().on_event(json.dumps(chunk), "", 1))


def test_openai_cached_tokens_and_none_when_not_reported() -> None:
    (u,) = _chat_usage(
        {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        }
    )
    assert (u.prompt_tokens, u.cached_prompt_tokens, u.output_tokens) == (2006, 1920, 300)
    (zero,) = _chat_usage(
        {"prompt_tokens": 90, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 0}}
    )
    assert zero.cached_prompt_tokens == 0  # a reported zero is a report
    (plain,) = _chat_usage({"prompt_tokens": 90, "completion_tokens": 3})
    assert plain.cached_prompt_tokens is None  # vLLM without --enable-prompt-tokens-details
    (deepseek,) = _chat_usage(
        {
            "prompt_tokens": 1000,
            "completion_tokens": 5,
            "prompt_cache_hit_tokens": 896,
            "prompt_cache_miss_tokens": 104,
        }
    )
    assert deepseek.cached_prompt_tokens == 896


def test_anthropic_prompt_is_input_plus_cache_reads_and_writes() -> None:
    dec = AnthropicDecoder()
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {
                "input_tokens": 21,
                "cache_creation_input_tokens": 188,
                "cache_read_input_tokens": 6200,
                "output_tokens": 1,
            },
        },
    }
    (u,) = _usage(dec.on_event(json.dumps(start), "message_start", 1))
    assert (u.prompt_tokens, u.cached_prompt_tokens, u.output_tokens) == (6409, 6200, None)
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 57},
    }
    (d,) = _usage(dec.on_event(json.dumps(delta), "message_delta", 2))
    assert d.output_tokens == 57 and d.cached_prompt_tokens is None  # not in this report
    plain = {**start, "message": {**start["message"], "usage": {"input_tokens": 30}}}
    (p,) = _usage(AnthropicDecoder().on_event(json.dumps(plain), "message_start", 1))
    assert (p.prompt_tokens, p.cached_prompt_tokens) == (30, None)


def test_responses_cached_tokens() -> None:
    done = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "status": "completed",
            "output": [],
            "usage": {
                "input_tokens": 5000,
                "input_tokens_details": {"cached_tokens": 4864},
                "output_tokens": 40,
                "total_tokens": 5040,
            },
        },
    }
    (u,) = _usage(ResponsesDecoder().on_event(json.dumps(done), "response.completed", 1))
    assert (u.prompt_tokens, u.cached_prompt_tokens) == (5000, 4864)


ENDPOINT = EndpointConfig("http://127.0.0.1:1/v1", "openai-chat", "m")
SYSTEM = Prompt("Question one?", system="<the document>")


@pytest.mark.parametrize(
    ("api", "where"),
    [
        ("openai-chat", lambda b: b["messages"][0]),
        ("azure-openai", lambda b: b["messages"][0]),
        ("ollama-chat", lambda b: b["messages"][0]),
        ("anthropic", lambda b: {"role": "system", "content": b["system"]}),
        ("openai-responses", lambda b: {"role": "system", "content": b["instructions"]}),
        ("ollama-generate", lambda b: {"role": "system", "content": b["system"]}),
    ],
)
def test_a_system_context_goes_where_each_dialect_keeps_system_text(
    api: str, where: object
) -> None:
    body = get_provider(api).build_request(ENDPOINT, SYSTEM, GenParams(16)).json
    assert where(body) == {"role": "system", "content": "<the document>"}  # type: ignore[operator]


@pytest.mark.parametrize("api", ["openai-completions", "tgi"])
def test_dialects_without_a_system_role_open_the_prompt_with_it(api: str) -> None:
    body = get_provider(api).build_request(ENDPOINT, SYSTEM, GenParams(16)).json
    text = body.get("prompt", body.get("inputs"))
    assert text == "<the document>\n\nQuestion one?"


def test_every_dialect_is_covered_by_the_system_tests() -> None:
    covered = {
        "openai-chat",
        "azure-openai",
        "ollama-chat",
        "anthropic",
        "openai-responses",
        "ollama-generate",
        "openai-completions",
        "tgi",
    }
    assert covered == set(PROVIDERS)


def test_anthropic_cache_control_marks_the_shared_part() -> None:
    provider = get_provider("anthropic")
    head = "[run a/parallel]\n<document>\nD\n</document>\n\n"
    user = Prompt(head + "Q?", shared_chars=len(head))
    marked = provider.build_request(ENDPOINT, replace(user, cache_control=True), GenParams(8))
    blocks = marked.json["messages"][0]["content"]
    assert blocks[0] == {"type": "text", "text": head, "cache_control": {"type": "ephemeral"}}
    assert blocks[1] == {"type": "text", "text": "Q?"}
    unmarked = provider.build_request(ENDPOINT, user, GenParams(8)).json
    assert unmarked["messages"][0]["content"] == user.user
    system = provider.build_request(
        ENDPOINT, Prompt("Q?", system="D", cache_control=True), GenParams(8)
    ).json
    assert system["system"] == [
        {"type": "text", "text": "D", "cache_control": {"type": "ephemeral"}}
    ]
    assert system["messages"][0]["content"] == "Q?"
