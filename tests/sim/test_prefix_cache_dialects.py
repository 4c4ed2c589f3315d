"""The built-in endpoint's prefix cache over real loopback HTTP, in every dialect: the
cached part of the prompt is reported in the dialect's own usage field, the providers read
it back, and the OpenAI SDK reads the same numbers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from splitdesk.core.bench.repeats import with_nonce
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.dialects import API_NAMES
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import start_sim

MODEL = "splitdesk-sim"
DOC = (
    "Section 4. Heavy equipment is lent for three days. A deposit of 50 pounds is held for "
    "items below 400 pounds and 100 pounds above. Concession members pay half. "
) * 40  # ~1,600 tokens
QUESTIONS = ["How long is heavy equipment lent?", "What deposit is held?", "Who pays half?"]
#: dialects whose usage names no cached count: they report none, never a made-up 0
NO_CACHED_FIELD = {"ollama-chat", "ollama-generate", "tgi"}


@pytest.fixture(scope="module")
def sim_cache() -> Iterator[Any]:
    sim = start_sim("batching", {"speed": 8, "prefix_cache": True, "answer_tokens": 12})
    try:
        yield sim
    finally:
        sim.stop()


def _endpoint(sim: Any, api: str) -> EndpointConfig:
    base = get_provider(api).base_url_for_root(sim.url)
    if api == "azure-openai":
        base = f"{sim.url}/openai/deployments/{MODEL}"
    return EndpointConfig(base, api, MODEL, verify=False)


async def _sequential(sim: Any, api: str, template: CombinedTemplate, nonce: str) -> RunState:
    plan = with_nonce(make_plan("sequential", QUESTIONS, template, 16, context=DOC), nonce)
    state = RunState()
    await Runner(RunConfig(_endpoint(sim, api)), state.apply).run(QUESTIONS, plan)
    return state


@pytest.mark.asyncio
@pytest.mark.parametrize("api", API_NAMES)
async def test_later_requests_of_a_side_read_the_document_from_cache(
    sim_cache: Any, api: str
) -> None:
    template = CombinedTemplate(cache_control=api == "anthropic")
    state = await _sequential(sim_cache, api, template, f"t-{api}")
    traces = state.requests
    assert all(t.outcome == "done" for t in traces), [t.error for t in traces]
    prompts = [t.usage_prompt_tokens for t in traces]
    cached = [t.usage_cached_prompt_tokens for t in traces]
    if api == "tgi":  # TGI's stream names no prompt tokens at all
        assert prompts == cached == [None, None, None]
        return
    assert all(p is not None and p > 1500 for p in prompts), prompts
    if api in NO_CACHED_FIELD:
        assert cached == [None, None, None]
        return
    assert cached[0] == 0  # the first request of the side computed the document …
    for c, p in zip(cached[1:], prompts[1:], strict=True):  # … the others read it
        assert c is not None and p is not None and 1500 < c < p, (cached, prompts)


@pytest.mark.asyncio
async def test_anthropic_caches_nothing_without_cache_control(sim_cache: Any) -> None:
    state = await _sequential(sim_cache, "anthropic", CombinedTemplate(), "t-plain")
    assert [t.usage_cached_prompt_tokens for t in state.requests] == [0, 0, 0]


@pytest.mark.asyncio
async def test_each_dialect_names_the_cache_in_its_own_field(sim_cache: Any) -> None:
    system = "[run wire/parallel]\n" + DOC
    async with httpx.AsyncClient(base_url=sim_cache.url, timeout=20) as client:
        for q in QUESTIONS[:2]:  # the second of each pair finds the first's blocks
            chat = await client.post(
                "/v1/chat/completions",
                json={
                    "model": MODEL,
                    "messages": [
                        {"role": "system", "content": system},
                        {"role": "user", "content": q},
                    ],
                    "max_tokens": 4,
                },
            )
            responses = await client.post(
                "/v1/responses",
                json={"model": MODEL, "instructions": system, "input": q, "max_output_tokens": 4},
            )
            anthropic = await client.post(
                "/v1/messages",
                json={
                    "model": MODEL,
                    "max_tokens": 4,
                    "system": [
                        {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
                    ],
                    "messages": [{"role": "user", "content": q + " (anthropic)"}],
                },
                headers={"anthropic-version": "2023-06-01"},
            )
    usage = chat.json()["usage"]
    assert usage["prompt_tokens_details"]["cached_tokens"] > 1500
    assert chat.json()["timings"]["cache_n"] == usage["prompt_tokens_details"]["cached_tokens"]
    assert (
        chat.json()["timings"]["prompt_n"]
        == usage["prompt_tokens"] - usage["prompt_tokens_details"]["cached_tokens"]
    )
    assert responses.json()["usage"]["input_tokens_details"]["cached_tokens"] > 1500
    a = anthropic.json()["usage"]
    # Anthropic's input_tokens leaves out what was read from or written to the cache
    assert a["cache_read_input_tokens"] > 1500 and a["cache_creation_input_tokens"] >= 0
    assert a["input_tokens"] < 50


@pytest.mark.asyncio
async def test_the_openai_sdk_reads_the_cached_tokens_splitdesk_reads(sim_cache: Any) -> None:
    system = "[run sdk/sequential]\n" + DOC.strip()  # what with_nonce sends below
    async with openai.AsyncOpenAI(base_url=sim_cache.openai_base_url, api_key="unused") as c:
        usages = []
        for q in QUESTIONS:
            stream = await c.chat.completions.create(
                model=MODEL,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": q}],
                stream=True,
                stream_options={"include_usage": True},
                max_tokens=4,
            )
            chunks = [chunk async for chunk in stream]
            usages.append(chunks[-1].usage)
    template = CombinedTemplate(context_as="system")
    plan = make_plan("sequential", QUESTIONS, template, 4, context=DOC)
    plan = with_nonce(plan, "sdk")  # the same first line as the SDK's system message
    state = RunState()
    await Runner(RunConfig(_endpoint(sim_cache, "openai-chat")), state.apply).run(QUESTIONS, plan)
    sdk = [
        (
            u.prompt_tokens,
            u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else None,
        )
        for u in usages
        if u is not None
    ]
    ours = [(t.usage_prompt_tokens, t.usage_cached_prompt_tokens) for t in state.requests]
    assert [p for p, _ in sdk] == [p for p, _ in ours]
    # the SDK's three requests filled the cache: splitdesk's same prompts all hit it
    assert sdk[0][1] == 0 and all(c is not None and c > 1500 for _, c in sdk[1:])
    assert all(c is not None and c > 1500 for _, c in ours)


@pytest.mark.asyncio
async def test_prefix_cache_counters_on_metrics(sim_cache: Any) -> None:
    from splitdesk.core.measure.server_metrics import read_load

    async with httpx.AsyncClient(base_url=sim_cache.url, timeout=20) as client:
        before = read_load((await client.get("/metrics")).text)
        await asyncio.gather(
            *(
                client.post(
                    "/v1/chat/completions",
                    json={
                        "model": MODEL,
                        "messages": [{"role": "user", "content": f"[run m]\n{DOC}\n{q}"}],
                        "max_tokens": 2,
                    },
                )
                for q in QUESTIONS
            )
        )
        after = read_load((await client.get("/metrics")).text)
    assert before is not None and after is not None
    assert before.cache is not None and after.cache is not None
    assert before.cache.queries is not None and after.cache.queries is not None
    assert before.cache.hits is not None and after.cache.hits is not None
    looked = after.cache.queries - before.cache.queries
    found = after.cache.hits - before.cache.hits
    assert looked > 3 * 1500
    # sent together: the first admitted computes the document, the two others find it
    assert 2 * 1500 < found < looked
