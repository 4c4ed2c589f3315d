"""The built-in endpoint over real loopback HTTP: the official OpenAI SDK as a client, bad
input, rate limiting, the emission log, and slots freed by disconnecting clients."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import openai
import pytest

from splitdesk.sim.launcher import start_sim

MODEL = "splitdesk-sim"


@pytest.mark.asyncio
async def test_openai_sdk_streams_chat_with_usage(sim_batching: Any) -> None:
    async with openai.AsyncOpenAI(
        base_url=sim_batching.openai_base_url, api_key="unused"
    ) as client:
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Why is the sky blue?"}],
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=40,
        )
        chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usage = chunks[-1].usage
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].choices[0].delta.content == ""  # role-only first chunk, like real servers
    assert chunks[-1].choices == []
    assert usage is not None and usage.completion_tokens == 40
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert len(text.split()) > 20


@pytest.mark.asyncio
async def test_openai_sdk_completions_and_non_streaming(sim_batching: Any) -> None:
    async with openai.AsyncOpenAI(
        base_url=sim_batching.openai_base_url, api_key="unused"
    ) as client:
        stream = await client.completions.create(
            model=MODEL,
            prompt="How do vaccines work?",
            stream=True,
            max_tokens=12,
            stream_options={"include_usage": True},
        )
        chunks = [c async for c in stream]
        whole = await client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "How do vaccines work?"}],
            max_tokens=12,
        )
    streamed = "".join(c.choices[0].text for c in chunks if c.choices)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 12
    assert whole.usage is not None and whole.usage.completion_tokens == 12
    # Same question, same seed: the same answer whichever API asks.
    assert whole.choices[0].message.content == streamed
    assert whole.choices[0].finish_reason == "length"


@pytest.mark.asyncio
async def test_openai_sdk_gets_rate_limit_error(sim_rate_limited: Any) -> None:
    async with openai.AsyncOpenAI(
        base_url=sim_rate_limited.openai_base_url, api_key="unused", max_retries=0
    ) as client:

        async def ask(i: int) -> Any:
            return await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": f"Question {i}?"}], max_tokens=30
            )

        results = await asyncio.gather(*(ask(i) for i in range(4)), return_exceptions=True)
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(errors) == 2
    assert all(isinstance(e, openai.RateLimitError) for e in errors)
    err = errors[0]
    assert isinstance(err, openai.RateLimitError)
    assert err.response.headers["retry-after"] == "1"  # 2 s at 4× speed, rounded up
    assert err.response.headers["retry-after-ms"] == "500"  # the precise wait
    assert "Rate limit" in err.message and "retry after 1 s" in err.message


BAD_REQUESTS = [
    ("invalid JSON", "/v1/chat/completions", b"{not json", 400, "parse the JSON"),
    ("not an object", "/v1/chat/completions", b"[1, 2]", 400, "JSON object"),
    (
        "missing messages",
        "/v1/chat/completions",
        json.dumps({"model": MODEL}).encode(),
        400,
        "messages",
    ),
    (
        "empty messages",
        "/v1/chat/completions",
        json.dumps({"model": MODEL, "messages": []}).encode(),
        400,
        "messages",
    ),
    (
        "negative max_tokens",
        "/v1/chat/completions",
        json.dumps(
            {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": -5}
        ).encode(),
        400,
        "max_tokens",
    ),
    ("missing prompt", "/v1/completions", json.dumps({"model": MODEL}).encode(), 400, "prompt"),
    (
        "unknown model",
        "/v1/chat/completions",
        json.dumps({"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}).encode(),
        404,
        "gpt-9",
    ),
    (
        "huge body",
        "/v1/chat/completions",
        b'{"x": "' + b"a" * (3 * 1024 * 1024) + b'"}',
        413,
        "too large",
    ),
    ("unknown route", "/v1/nothing-here", b"{}", 404, "Unknown route"),
    (
        "lone surrogate escape",
        "/v1/chat/completions",
        b'{"model": "splitdesk-sim", "messages": [{"role": "user", "content": "hi \\udcff"}]}',
        400,
        "surrogates not allowed",
    ),
    (
        "NaN in a plan",
        "/_splitdesk/predict",
        b'{"requests": [{"api": "openai-chat", "send_s": NaN, "body": {}}]}',
        400,
        "NaN is not a JSON number",
    ),
    (
        "true as a time",
        "/_splitdesk/predict",
        json.dumps(
            {
                "requests": [
                    {
                        "api": "openai-chat",
                        "send_s": True,
                        "body": {"model": MODEL, "messages": [{"role": "user", "content": "a"}]},
                    }
                ]
            }
        ).encode(),
        400,
        "send_s must be a number >= 0",
    ),
]


@pytest.mark.parametrize(
    ("case", "path", "body", "status", "words"), BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS]
)
@pytest.mark.asyncio
async def test_bad_input_gets_openai_shaped_4xx(
    sim_batching: Any, case: str, path: str, body: bytes, status: int, words: str
) -> None:
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        response = await client.post(
            path, content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == status
        error = response.json()["error"]
        assert words in error["message"]
        assert set(error) >= {"message", "type", "param", "code"}
        still_up = await client.get("/v1/models")
    assert still_up.status_code == 200
    assert still_up.json()["data"][0]["id"] == MODEL


@pytest.mark.asyncio
async def test_wrong_method_gets_405_with_allow(sim_batching: Any) -> None:
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        response = await client.get("/v1/chat/completions")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert "Unknown route GET /v1/chat/completions" in response.json()["error"]["message"]


@pytest.mark.asyncio
async def test_emission_log_matches_the_stream(sim_batching: Any) -> None:
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Why?"}],
        "stream": True,
        "max_tokens": 15,
    }
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=10) as client:
        async with client.stream("POST", "/v1/chat/completions", json=body) as response:
            rid = response.headers["x-request-id"]
            lines = [ln async for ln in response.aiter_lines() if ln.startswith("data: {")]
        trace = (await client.get(f"/_splitdesk/trace/{rid}")).json()
    token_chunks = [ln for ln in lines if '"content":"' in ln and '"content":""' not in ln]
    assert len(trace["events"]) == len(token_chunks) == 15
    assert trace["finish_reason"] == "length"
    assert all(e["emitted_ns"] >= e["scheduled_ns"] for e in trace["events"])
    times = [e["scheduled_ns"] for e in trace["events"]]
    assert times == sorted(times)


@pytest.mark.asyncio
async def test_disconnect_mid_stream_frees_the_slot() -> None:
    """One slot: a client that walks away mid-answer must not delay the next request."""
    sim = await asyncio.to_thread(
        start_sim, "single-slot", {"speed": 4, "answer_tokens": 400, "jitter": 0}
    )
    try:
        body = {
            "model": MODEL,
            "messages": [{"role": "user", "content": "Long one?"}],
            "stream": True,
        }
        async with httpx.AsyncClient(base_url=sim.url, timeout=10) as client:
            async with client.stream("POST", "/v1/chat/completions", json=body) as response:
                rid = response.headers["x-request-id"]
                n = 0
                async for line in response.aiter_lines():
                    n += line.startswith("data:")
                    if n >= 5:
                        break
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            short = {
                "model": MODEL,
                "messages": [{"role": "user", "content": "Short?"}],
                "max_tokens": 5,
            }
            second = await client.post("/v1/chat/completions", json=short)
            elapsed = loop.time() - t0
            first = (await client.get(f"/_splitdesk/trace/{rid}")).json()
            info = (await client.get("/_splitdesk/info")).json()
    finally:
        await asyncio.to_thread(sim.stop)
    assert second.status_code == 200
    # 5 steps of ~4.4 ms; waiting for the abandoned ~400-token answer would take ~1.7 s.
    assert elapsed < 0.25
    assert first["disconnected"] is True
    assert len(first["events"]) < 100
    # the trace counts what was emitted before the client left, not the planned answer
    assert first["output_tokens"] == sum(e["tokens"] for e in first["events"]) > 0
    assert info["running"] == 0 and info["waiting"] == 0


def test_sim_cli_lists_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    from splitdesk.cli.main import main

    assert main(["sim", "--list-profiles"]) == 0
    out = capsys.readouterr().out
    for name in ("batching", "single-slot", "rate-limited", "slow-network", "compute-bound"):
        assert name in out


def test_sim_cli_rejects_bad_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    from splitdesk.cli.main import main

    assert main(["sim", "--t-base", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--t-base" in err and "greater than or equal to 0" in err


def test_sim_cli_rejects_a_port_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    from splitdesk.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["sim", "--port", "70000"])
    assert exited.value.code == 2
    assert "70000 is not a port number (0-65535)" in capsys.readouterr().err


#: every route that reads a JSON body
JSON_ROUTES = [
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/responses",
    "/openai/deployments/splitdesk-sim/chat/completions",
    "/v1/messages",
    "/api/chat",
    "/api/generate",
    "/generate_stream",
    "/generate",
    "/_splitdesk/predict",
    "/_splitdesk/faults",
]


@pytest.mark.parametrize("depth", [100, 100_000], ids=["deeper-than-64", "beyond-the-stack"])
@pytest.mark.parametrize("path", JSON_ROUTES)
@pytest.mark.asyncio
async def test_deeply_nested_json_gets_the_dialects_json_error(
    sim_batching: Any, path: str, depth: int
) -> None:
    """Nested deeper than any API request (and deeper than Python's parser can go): a 400 in
    the route's own JSON error shape, never a plain-text 500; the endpoint keeps serving."""
    body = b'{"model": "splitdesk-sim", "x": ' + b"[" * depth + b"]" * depth + b"}"
    async with httpx.AsyncClient(base_url=sim_batching.url, timeout=30) as client:
        response = await client.post(
            path, content=body, headers={"content-type": "application/json"}
        )
        # 400; TGI answers validation errors 422, as the real server does
        assert response.status_code == (422 if path.startswith("/generate") else 400), (
            response.text[:300]
        )
        assert response.headers["content-type"].startswith("application/json")
        from splitdesk.providers.base import error_message

        assert "nested deeper than 64 levels" in error_message(response.json())
        still_up = await client.get("/v1/models")
    assert still_up.status_code == 200


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--rtt", "inf", "finite number"),
        ("--rtt", "1e9", "less than or equal to 60"),
        ("--retry-after", "inf", "finite number"),
        ("--speed", "nan", "finite number"),
        ("--t-base", "1e300", "less than or equal to 10"),
        ("--max-num-seqs", "100000000", "less than or equal to 4096"),
    ],
)
def test_every_simulator_parameter_is_finite_and_bounded(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, words: str
) -> None:
    """Out of range (inf, NaN, absurdly large): refused at once with the bound and what
    the parameter is, exit 2 — never a hung run or HTTP 500s (``--retry-after inf``)."""
    from splitdesk.cli.main import main

    assert main(["sim", flag, value]) == 2
    err = capsys.readouterr().err
    assert flag in err and words in err and "\n" not in err.strip()
