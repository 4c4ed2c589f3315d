"""Failures as users read them, whatever the dialect: what went wrong and what to do, never
the raw HTML or the key."""

from __future__ import annotations

import json
from typing import Any

import pytest

from splitdesk.core.bench.compare import resolve_key
from splitdesk.core.bench.options import BenchOptions
from splitdesk.core.measure.runner import RunConfig, Runner, redact
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig, ErrorKind
from streamserver import ReplayServer

KEY = "sk-errors-0123456789abcdef"


async def one_request(base_url: str, api: str, model: str = "m") -> RequestTrace:
    state = RunState()
    plan = make_plan("parallel", ["q"], CombinedTemplate(), 8)
    await Runner(RunConfig(EndpointConfig(base_url, api, model, KEY)), state.apply).run(["q"], plan)
    (trace,) = state.requests
    assert trace.outcome == "failed" and trace.error is not None
    return trace


@pytest.mark.parametrize(
    ("api", "model", "served"),
    [
        ("anthropic", "claude-x", "splitdesk-sim"),
        ("ollama-chat", "llama3", "splitdesk-sim:latest"),
        ("openai-responses", "gpt-9", "splitdesk-sim"),
    ],
)
@pytest.mark.asyncio
async def test_unknown_model_names_the_served_ones(
    sim_batching: Any, api: str, model: str, served: str
) -> None:
    base = get_provider(api).base_url_for_root(sim_batching.url)
    trace = await one_request(base, api, model)
    assert trace.error is not None and trace.error.status == 404
    assert model in trace.error.message
    assert trace.error.message.endswith(f"the endpoint serves: {served}")


@pytest.mark.asyncio
async def test_404_without_a_model_list_points_at_the_base_url() -> None:
    body = json.dumps({"detail": "Not Found"}).encode()
    async with ReplayServer(404, {"content-type": "application/json"}, [body], 0.001) as server:
        trace = await one_request(server.url, "tgi")
    assert trace.error is not None
    assert "its model list is not found either: check the base URL" in trace.error.message


@pytest.mark.asyncio
async def test_dns_failure_and_tls_failure(sim_batching: Any) -> None:
    dns = await one_request("http://nonexistent.invalid", "ollama-generate")
    assert dns.error is not None and dns.error.kind == ErrorKind.CONNECT
    assert "cannot resolve nonexistent.invalid" in dns.error.message
    plain = await one_request(sim_batching.url.replace("http:", "https:"), "anthropic")
    assert plain.error is not None and plain.error.kind == ErrorKind.CONNECT
    assert plain.error.message.startswith("127.0.0.1:")
    assert "does not speak TLS — use http:// instead of https://" in plain.error.message


@pytest.mark.asyncio
async def test_429_shows_retry_after_and_html_shows_only_the_title() -> None:
    async with ReplayServer(
        429, {"content-type": "application/json", "retry-after": "12"}, [b"{}"], 0.001
    ) as server:
        limited = await one_request(server.url, "anthropic")
    page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>oops</h1></body></html>"
    async with ReplayServer(502, {"content-type": "text/html"}, [page], 0.001) as server:
        proxy = await one_request(server.url + "/v1", "openai-responses")
    assert limited.error is not None and limited.error.retry_after_s == 12.0
    assert "rate limited; retry after 12 s" in limited.error.message
    assert proxy.error is not None and proxy.error.status == 502
    assert "502 Bad Gateway" in proxy.error.message and "<" not in proxy.error.message


def test_redact_removes_a_key_cut_by_a_clip() -> None:
    assert redact(f"bad key {KEY}.", KEY) == "bad key ***."
    assert redact(f"echo: {KEY[:14]}…", KEY) == "echo: ***…"
    assert redact(f"echo: {KEY[:9]}", KEY) == "echo: ***"
    assert redact("sk-e is not a key", KEY) == "sk-e is not a key"


def test_a_key_read_from_the_environment_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPLITDESK_TEST_KEY", f" {KEY}\n")
    opts = BenchOptions(["q"], endpoint="http://h:1", api_key_env="SPLITDESK_TEST_KEY")
    assert resolve_key(opts) == KEY


@pytest.mark.asyncio
async def test_a_proxy_that_refuses_is_named_not_the_server(
    sim_batching: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment's proxy refuses the connection: the error names the proxy, its
    variable and the fixes, not the server, which is up (it read "cannot connect to
    127.0.0.1:PORT … is the server running?")."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://user:hunter2@127.0.0.1:{dead}")
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    trace = await one_request(sim_batching.openai_base_url, "openai-chat", "splitdesk-sim")
    assert trace.error is not None and trace.error.kind == ErrorKind.CONNECT
    message = trace.error.message
    assert message.startswith(f"cannot connect to the proxy http://user:***@127.0.0.1:{dead}")
    assert "set by HTTP_PROXY (connection refused" in message and "NO_PROXY" in message
    assert "hunter2" not in message and "is the server running" not in message


@pytest.mark.asyncio
async def test_an_html_page_labelled_an_event_stream_is_named_for_what_it_is() -> None:
    """A 200 labelled ``text/event-stream`` whose body is an HTML page: the error says the
    stream held no event and shows the page's start (it said "expected an event stream,
    got text/event-stream")."""
    page = b"<html><body><h1>Sign in to the gateway</h1></body></html>"
    async with ReplayServer(200, {"content-type": "text/event-stream"}, [page], 0.001) as srv:
        trace = await one_request(srv.url + "/v1", "openai-chat")
    assert trace.error is not None and trace.error.kind == ErrorKind.PROTOCOL
    message = trace.error.message
    assert "labelled text/event-stream, holds no event" in message, message
    assert "Sign in to the gateway" in message and "expected an event stream" not in message
