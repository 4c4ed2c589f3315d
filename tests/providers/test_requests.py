"""What each provider sends (URL, key header, body, query) and what it reads besides text:
finish reasons, tool calls, Ollama's own timings, model lists."""

from __future__ import annotations

import json
from typing import Any

import pytest

from paths import FIXTURES
from splitdesk.providers import PROVIDERS, get_provider
from splitdesk.providers.base import (
    Delta,
    EndpointConfig,
    FinishDelta,
    GenParams,
    ServerTimingDelta,
    ToolCallDelta,
    UsageDelta,
)
from streamserver import StreamFixture

KEY = "sk-unit-0123456789"
EXTRA = FIXTURES / "streams_extra"
PARAMS = GenParams(max_tokens=77, temperature=0.5, seed=3)

# api → (base URL, URL of a generation request, header that carries the key)
ROUTES = {
    "openai-chat": ("http://h:1/v1", "http://h:1/v1/chat/completions", "Authorization"),
    "openai-completions": ("http://h:1/v1", "http://h:1/v1/completions", "Authorization"),
    "openai-responses": ("http://h:1/v1", "http://h:1/v1/responses", "Authorization"),
    "azure-openai": (
        "https://r.openai.azure.com/openai/deployments/gpt4o",
        "https://r.openai.azure.com/openai/deployments/gpt4o/chat/completions",
        "api-key",
    ),
    "anthropic": ("http://h:1", "http://h:1/v1/messages", "x-api-key"),
    "ollama-chat": ("http://h:1", "http://h:1/api/chat", "Authorization"),
    "ollama-generate": ("http://h:1", "http://h:1/api/generate", "Authorization"),
    "tgi": ("http://h:1", "http://h:1/generate_stream", "Authorization"),
}


def test_every_provider_has_a_route_here() -> None:
    assert set(ROUTES) == set(PROVIDERS)


@pytest.mark.parametrize("api", sorted(ROUTES))
def test_request_url_and_key_header(api: str) -> None:
    base, url, key_header = ROUTES[api]
    call = get_provider(api).build_request(EndpointConfig(base, api, "m", KEY), "Q?", PARAMS)
    assert call.method == "POST" and call.url == url
    carrying = [k for k, v in call.headers.items() if KEY in v]
    assert carrying == [key_header]
    assert KEY not in json.dumps(call.json) and KEY not in json.dumps(call.params)


@pytest.mark.parametrize("api", sorted(ROUTES))
def test_no_key_no_key_header(api: str) -> None:
    base, _, key_header = ROUTES[api]
    call = get_provider(api).build_request(EndpointConfig(base, api, "m"), "Q?", PARAMS)
    assert key_header not in call.headers and "Authorization" not in call.headers


def test_anthropic_body_and_version_header() -> None:
    p = get_provider("anthropic")
    ep = EndpointConfig("http://h:1", "anthropic", "claude", KEY)
    call = p.build_request(ep, "Q?", PARAMS)
    assert call.headers["anthropic-version"] == "2023-06-01"
    assert call.json == {
        "model": "claude",
        "max_tokens": 77,
        "messages": [{"role": "user", "content": "Q?"}],
        "stream": True,
        "temperature": 0.5,
    }
    assert p.build_request(ep, "Q?", GenParams()).json["max_tokens"] == 1024  # required
    models = p.models_request(ep)
    assert models.url == "http://h:1/v1/models" and models.headers["x-api-key"] == KEY
    assert p.parse_models({"data": [{"type": "model", "id": "claude"}], "has_more": False}) == [
        "claude"
    ]


@pytest.mark.parametrize(
    ("api", "key", "value"),
    [("ollama-chat", "messages", None), ("ollama-generate", "prompt", "Q?")],
)
def test_ollama_bodies(api: str, key: str, value: Any) -> None:
    p = get_provider(api)
    body = p.build_request(EndpointConfig("http://h:1", api, "llama3"), "Q?", PARAMS).json
    assert body["model"] == "llama3" and body["stream"] is True
    assert body["options"] == {"num_predict": 77, "temperature": 0.5, "seed": 3}
    assert body[key] == (value or [{"role": "user", "content": "Q?"}])
    assert p.framing == "ndjson" and p.key_env is None
    assert p.models_request(EndpointConfig("http://h:1", api, "x")).url == "http://h:1/api/tags"
    assert p.parse_models({"models": [{"name": "llama3:latest"}, {"name": "qwen3:0.6b"}]}) == [
        "llama3:latest",
        "qwen3:0.6b",
    ]


def test_tgi_body_info_and_greedy_temperature() -> None:
    p = get_provider("tgi")
    ep = EndpointConfig("http://h:1", "tgi", "")
    assert p.build_request(ep, "Q?", PARAMS).json == {
        "inputs": "Q?",
        "parameters": {"details": True, "max_new_tokens": 77, "temperature": 0.5, "seed": 3},
    }
    greedy = p.build_request(ep, "Q?", GenParams(temperature=0.0)).json["parameters"]
    assert greedy == {"details": True, "do_sample": False}  # TGI rejects temperature 0
    assert p.build_request(ep, "Q?", GenParams(stream=False)).url == "http://h:1/generate"
    assert p.models_request(ep).url == "http://h:1/info"
    assert p.parse_models({"model_id": "bigscience/bloom-560m"}) == ["bigscience/bloom-560m"]
    with pytest.raises(ValueError, match="model_id"):
        p.parse_models({"version": "3.0"})


def test_responses_body() -> None:
    p = get_provider("openai-responses")
    body = p.build_request(EndpointConfig("http://h:1/v1", "openai-responses", "o4"), "Q?", PARAMS)
    assert body.json == {
        "model": "o4",
        "input": "Q?",
        "stream": True,
        "max_output_tokens": 77,
        "temperature": 0.5,
    }


def test_azure_query_deployment_and_models() -> None:
    p = get_provider("azure-openai")
    base = "https://r.openai.azure.com/openai/deployments/gpt4o"
    ep = EndpointConfig(base, "azure-openai", "", KEY)
    assert p.build_request(ep, "Q?", PARAMS).params == {"api-version": "2024-10-21"}
    pinned = EndpointConfig(base, "azure-openai", "", KEY, query={"api-version": "2025-01-01"})
    assert p.build_request(pinned, "Q?", PARAMS).params == {"api-version": "2025-01-01"}
    assert p.model_from_url(ep) == "gpt4o"
    models = p.models_request(ep)
    assert models.url == "https://r.openai.azure.com/openai/models"
    assert models.headers == {"api-key": KEY} and models.params == {"api-version": "2024-10-21"}
    assert p.base_url_for_root("http://127.0.0.1:5") == (
        "http://127.0.0.1:5/openai/deployments/splitdesk-sim"
    )
    assert get_provider("openai-chat").model_from_url(ep) is None


def _decode(name: str) -> list[Delta]:
    fx = StreamFixture.load(EXTRA / f"{name}.json")
    decoder = get_provider(fx.api).decoder()
    body = fx.body.decode()
    out: list[Delta] = []
    if get_provider(fx.api).framing == "ndjson":
        for line in body.splitlines():
            out += decoder.on_event(line, "", 0)
        return out
    for block in body.split("\n\n"):
        data = "\n".join(
            ln.removeprefix("data:").removeprefix(" ")
            for ln in block.splitlines()
            if ln.startswith("data:")
        )
        if data and not decoder.is_terminator(data):
            out += decoder.on_event(data, "", 0)
    return out


def test_ollama_done_line_reports_its_own_timings_in_seconds() -> None:
    deltas = _decode("55-ollama-generate-thinking-and-done-timings")
    (timings,) = [d for d in deltas if isinstance(d, ServerTimingDelta)]
    assert timings.timings == {
        "total_s": 2.5,
        "load_s": 1.2,
        "prompt_eval_s": 0.3,
        "eval_s": 0.9,
        "eval_count": 6.0,
        "prompt_eval_count": 11.0,
    }
    assert [d.reason for d in deltas if isinstance(d, FinishDelta)] == ["stop"]
    assert [(d.output_tokens, d.prompt_tokens) for d in deltas if isinstance(d, UsageDelta)] == [
        (6, 11)
    ]


def test_anthropic_tool_call_finish_and_last_cumulative_usage() -> None:
    deltas = _decode("50-anthropic-thinking-signature-and-tool-use")
    calls = [d for d in deltas if isinstance(d, ToolCallDelta)]
    assert calls[0].name == "get_weather"
    assert "".join(c.arguments for c in calls) == '{"city": "Paris"}'
    assert [d.reason for d in deltas if isinstance(d, FinishDelta)] == ["tool_use"]
    usage = [d for d in deltas if isinstance(d, UsageDelta)]
    assert usage[0].output_tokens is None and usage[0].prompt_tokens == 52  # provisional dropped
    assert [u.output_tokens for u in usage[1:]] == [9, 47]  # cumulative: the last one wins


def test_responses_incomplete_is_a_finish_not_an_error() -> None:
    deltas = _decode("54-openai-responses-incomplete-max-output-tokens")
    assert [d.reason for d in deltas if isinstance(d, FinishDelta)] == ["max_output_tokens"]
    assert not [d for d in deltas if type(d).__name__ == "ErrorDelta"]


def test_tgi_finish_reasons() -> None:
    deltas = _decode("58-tgi-length-details-on-last-token")
    assert [d.reason for d in deltas if isinstance(d, FinishDelta)] == ["length"]
