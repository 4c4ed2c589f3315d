"""The built-in endpoint speaks every dialect over real loopback HTTP: Anthropic Messages,
Ollama chat/generate (NDJSON), TGI, OpenAI Responses and Azure OpenAI — wire shapes, finish
reasons, usage, errors in each dialect's own shape, and the official OpenAI SDK as a client
of the Responses and Azure routes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from httpx_sse import aconnect_sse

from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import PROVIDERS, get_provider
from splitdesk.providers.base import EndpointConfig, GenParams

MODEL = "splitdesk-sim"
USER = [{"role": "user", "content": "Why is the sky blue?"}]


async def sse_events(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    async with aconnect_sse(client, "POST", path, json=body) as source:
        assert source.response.status_code == 200
        return [(e.event, json.loads(e.data)) async for e in source.aiter_sse()]


# -- Anthropic ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_anthropic_stream_shape_and_usage(sim_batching: Any) -> None:
    body = {"model": MODEL, "max_tokens": 12, "messages": USER, "stream": True}
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        events = await sse_events(client, "/v1/messages", body)
        whole = (await client.post("/v1/messages", json={**body, "stream": False})).json()
    names = [name for name, _ in events]
    assert all(name == data["type"] for name, data in events)  # event: line = JSON type
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    assert events[0][1]["message"]["usage"]["output_tokens"] == 1  # provisional
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "max_tokens" and delta["usage"]["output_tokens"] == 12
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert whole["type"] == "message" and whole["content"] == [{"type": "text", "text": text}]
    assert whole["stop_reason"] == "max_tokens" and whole["usage"]["output_tokens"] == 12


@pytest.mark.asyncio
async def test_anthropic_errors_and_model_list(sim_batching: Any) -> None:
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        no_cap = await client.post("/v1/messages", json={"model": MODEL, "messages": USER})
        unknown = await client.post(
            "/v1/messages", json={"model": "claude-x", "max_tokens": 5, "messages": USER}
        )
        models = await client.get("/v1/models", headers={"anthropic-version": "2023-06-01"})
    assert no_cap.status_code == 400
    assert no_cap.json()["type"] == "error"
    assert no_cap.json()["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in no_cap.json()["error"]["message"]
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "not_found_error"
    assert models.json()["data"][0]["id"] == MODEL and models.json()["has_more"] is False


# -- Ollama ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_ollama_chat_streams_ndjson_by_default_with_real_durations(
    sim_batching: Any,
) -> None:
    body = {"model": f"{MODEL}:latest", "messages": USER, "options": {"num_predict": 20}}
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        async with client.stream("POST", "/api/chat", json=body) as response:
            assert response.headers["content-type"].startswith("application/x-ndjson")
            lines = [json.loads(ln) async for ln in response.aiter_lines() if ln]
        wall_ns = response.elapsed.total_seconds() * 1e9
    *tokens, done = lines
    assert all(not ln["done"] and ln["message"]["role"] == "assistant" for ln in tokens)
    assert done["done"] is True and done["done_reason"] == "length"
    assert done["eval_count"] == 20 and done["prompt_eval_count"] > 0
    durations = [done[k] for k in ("load_duration", "prompt_eval_duration", "eval_duration")]
    assert all(isinstance(d, int) and d >= 0 for d in durations)
    assert sum(durations) <= done["total_duration"] <= wall_ns * 1.5
    # 20 tokens at ~4.4 ms per step (speed 4): the decode took tens of milliseconds
    assert 0.02e9 < done["eval_duration"] < 1e9


@pytest.mark.asyncio
async def test_ollama_generate_whole_body_tags_and_errors(sim_batching: Any) -> None:
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        whole = await client.post(
            "/api/generate",
            json={"model": MODEL, "prompt": "Why?", "stream": False, "options": {"num_predict": 7}},
        )
        tags = (await client.get("/api/tags")).json()
        unknown = await client.post("/api/chat", json={"model": "llama3", "messages": USER})
    body = whole.json()
    assert body["done"] is True and body["eval_count"] == 7 and body["response"]
    assert tags["models"][0]["name"] == f"{MODEL}:latest"
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "model 'llama3' not found, try pulling it first"}


# -- TGI -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_tgi_stream_ends_with_special_eos_and_details(sim_batching: Any) -> None:
    body = {"inputs": "Why?", "parameters": {"details": True}}
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        async with client.stream("POST", "/generate_stream", json=body) as response:
            raw = b"".join([chunk async for chunk in response.aiter_bytes()])
        cut = (
            await sse_events(
                client, "/generate_stream", {"inputs": "Why?", "parameters": {"max_new_tokens": 5}}
            )
        )[-1][1]
        info = (await client.get("/info")).json()
    assert raw.startswith(b"data:{")  # TGI's router writes no space after the colon
    events = [json.loads(e[5:]) for e in raw.decode().split("\n\n") if e]
    *tokens, last = events
    assert not any(e["token"]["special"] for e in tokens)
    assert last["token"] == {"id": 2, "text": "</s>", "logprob": -0.5, "special": True}
    assert last["generated_text"] == "".join(e["token"]["text"] for e in tokens)
    assert last["details"]["finish_reason"] == "eos_token"
    assert last["details"]["generated_tokens"] == len(tokens)
    assert cut["token"]["special"] is False and cut["details"] is None  # not asked for
    assert info["model_id"] == MODEL


@pytest.mark.asyncio
async def test_tgi_length_whole_body_and_validation_error(sim_batching: Any) -> None:
    params = {"max_new_tokens": 6, "details": True}
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        events = await sse_events(
            client, "/generate_stream", {"inputs": "Why?", "parameters": params}
        )
        whole = await client.post("/generate", json={"inputs": "Why?", "parameters": params})
        bad = await client.post("/generate", json={"inputs": "", "parameters": {}})
    assert len(events) == 6 and events[-1][1]["details"]["finish_reason"] == "length"
    assert whole.json()["generated_text"] == events[-1][1]["generated_text"]
    assert whole.json()["details"]["generated_tokens"] == 6
    assert bad.status_code == 422 and bad.json()["error_type"] == "validation"


# -- OpenAI Responses and Azure, through the official SDK ---------------------------------------


@pytest.mark.asyncio
async def test_openai_sdk_reads_responses_stream(sim_batching: Any) -> None:
    async with openai.AsyncOpenAI(
        base_url=sim_batching.openai_base_url, api_key="unused"
    ) as client:
        stream = await client.responses.create(
            model=MODEL, input="Why is the sky blue?", stream=True, max_output_tokens=20
        )
        events = [e async for e in stream]
        whole = await client.responses.create(
            model=MODEL, input="Why is the sky blue?", max_output_tokens=40
        )
    types = [e.type for e in events]
    assert types[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert types[-1] == "response.incomplete"  # max_output_tokens cut it
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert final.usage is not None and final.usage.output_tokens == 20
    assert final.incomplete_details is not None
    assert final.incomplete_details.reason == "max_output_tokens"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert final.output_text == text
    assert whole.status == "incomplete" and whole.output_text.startswith(text)


@pytest.mark.asyncio
async def test_openai_sdk_reads_azure_deployment(sim_batching: Any) -> None:
    async with openai.AsyncAzureOpenAI(
        azure_endpoint=sim_batching.url, api_key="unused", api_version="2024-10-21"
    ) as client:
        stream = await client.chat.completions.create(
            model=MODEL,  # the deployment
            messages=USER,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=15,
        )
        chunks = [c async for c in stream]
    assert chunks[0].choices == []  # Azure's prompt_filter_results chunk
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 15
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        path = f"/openai/deployments/{MODEL}/chat/completions"
        missing = await client.post(path, json={"messages": USER})
        unknown = await client.post(
            "/openai/deployments/gpt4o/chat/completions",
            params={"api-version": "2024-10-21"},
            json={"messages": USER},
        )
    assert missing.status_code == 400 and "api-version" in missing.json()["error"]["message"]
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "DeploymentNotFound"


# -- every dialect ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_every_dialect_gives_the_same_answer_and_usage(sim_batching: Any) -> None:
    """Same question, same seed: the same text and token count whichever API asks, read
    back by each dialect's own provider through the runner."""
    seen: dict[str, tuple[str, int | None, str | None]] = {}
    for api, provider in PROVIDERS.items():
        endpoint = EndpointConfig(provider.base_url_for_root(sim_batching.url), api, MODEL)
        state = RunState()
        plan = make_plan("parallel", ["Why is the sky blue?"], CombinedTemplate(), 25)
        await Runner(RunConfig(endpoint), state.apply).run(["Why is the sky blue?"], plan)
        r = state.requests[0]
        assert r.outcome == "done", (api, r.error)
        seen[api] = (r.text, r.usage_output_tokens, r.finish_reason)
    assert len({(text, tokens) for text, tokens, _ in seen.values()}) == 1
    assert next(iter(seen.values()))[1] == 25
    assert {api: finish for api, (_, _, finish) in seen.items()} == {
        "openai-chat": "length",
        "openai-completions": "length",
        "azure-openai": "length",
        "openai-responses": "max_output_tokens",
        "anthropic": "max_tokens",
        "ollama-chat": "length",
        "ollama-generate": "length",
        "tgi": "length",
    }


@pytest.mark.asyncio
async def test_predict_knows_every_dialect(sim_batching: Any) -> None:
    items = []
    for api, provider in PROVIDERS.items():
        endpoint = EndpointConfig(provider.base_url_for_root(sim_batching.url), api, MODEL)
        body = provider.build_request(endpoint, "Why?", GenParams(max_tokens=9)).json
        items.append({"send_s": 0.0, "api": api, "body": body})
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(
            f"{sim_batching.url}/_splitdesk/predict", json={"requests": items}
        )
    assert response.status_code == 200, response.text
    predictions = response.json()["predictions"]
    assert [p["output_tokens"] for p in predictions] == [9] * len(PROVIDERS)
    assert all(p["ttft_s"] > 0 and not p["rejected"] for p in predictions)
    assert get_provider("tgi").build_request(
        EndpointConfig(sim_batching.url, "tgi", ""), "x", GenParams()
    ).json == {"inputs": "x", "parameters": {"details": True}}
