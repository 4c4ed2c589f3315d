"""Base URLs a user types: one that is not a URL httpx can send to fails every request with
that reason (never ``stopped`` with no error), and one pasted with its full path or doubling
``/v1`` names the base URL to use — through the runner against the built-in endpoint, and
on ``splitdesk bench``'s command line before anything is sent."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest

from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.measure.urls import base_url_fix
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig


@pytest.mark.parametrize(
    ("api", "given", "fixed"),
    [
        ("openai-chat", "http://h:8000/v1/chat/completions", "http://h:8000/v1"),
        ("openai-chat", "http://h:8000/v1/chat/completions/", "http://h:8000/v1"),
        ("openai-chat", "http://h:8000/v1/models", "http://h:8000/v1"),
        ("openai-chat", "http://h:8000/v1/v1", "http://h:8000/v1"),
        ("openai-completions", "https://h/v1/completions", "https://h/v1"),
        ("openai-responses", "https://h/v1/responses", "https://h/v1"),
        ("anthropic", "https://h/v1/messages", "https://h"),
        ("anthropic", "https://h/v1", "https://h"),  # the client adds /v1/messages itself
        ("ollama-chat", "http://h:11434/api/chat", "http://h:11434"),
        ("ollama-generate", "http://h:11434/api/generate", "http://h:11434"),
        ("tgi", "http://h:8080/generate_stream", "http://h:8080"),
        (
            "azure-openai",
            "https://r.openai.azure.com/openai/deployments/gpt/chat/completions?api-version=1",
            "https://r.openai.azure.com/openai/deployments/gpt?api-version=1",
        ),
        # right as they are: never refused
        ("openai-chat", "http://h:8000/v1", None),
        ("openai-chat", "https://openrouter.ai/api/v1", None),
        ("openai-chat", "http://h/chat", None),
        ("anthropic", "https://h", None),
        ("ollama-generate", "http://gateway/generate", None),  # another dialect's path
    ],
)
def test_the_base_url_to_use(api: str, given: str, fixed: str | None) -> None:
    assert base_url_fix(given, api) == fixed


async def _run(base_url: str, api: str = "openai-chat") -> RunState:
    state = RunState()
    config = RunConfig(
        EndpointConfig(base_url, api, "splitdesk-sim"), timeouts=Timeouts(connect=5, read=30)
    )
    plan = make_plan("parallel", ["a", "b"], CombinedTemplate(), 8)
    await Runner(config, state.apply).run(["a", "b"], plan)
    return state


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "base",
    ["http://[::1/v1", "http://ex\u00e4mple\u2028.test/v1", "http://h/v1\x00", "http://h:99999"],
)
async def test_a_url_httpx_cannot_send_to_fails_every_request_with_the_reason(base: str) -> None:
    state = await _run(base)
    for trace in state.requests:
        assert trace.outcome == "failed", trace.outcome  # not "stopped", not silent
        assert trace.error is not None
        assert trace.error.message.startswith(f"invalid base URL {base!r}: ")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("api", "suffix", "words"),
    [
        ("openai-chat", "/v1/chat/completions", "ends in /chat/completions"),
        ("openai-chat", "/v1/v1", "repeats /v1"),
        ("anthropic", "/v1", "ends in /v1, which the anthropic client adds itself"),
    ],
)
async def test_a_pasted_path_names_the_base_url_to_use(
    sim_batching: Any, api: str, suffix: str, words: str
) -> None:
    """Against the real built-in endpoint: each request fails before sending, naming the
    base URL that works — and that URL works."""
    state = await _run(sim_batching.url + suffix, api)
    right = get_provider(api).base_url_for_root(sim_batching.url)
    for trace in state.requests:
        assert trace.outcome == "failed" and trace.error is not None
        assert words in trace.error.message
        assert trace.error.message.endswith(f"use {right} as the base URL")
        assert trace.t_headers is None  # nothing was sent
    state = await _run(right, api)
    assert [t.outcome for t in state.requests] == ["done", "done"]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "splitdesk", "bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_bench_names_the_base_url_to_use_before_sending() -> None:
    proc = _bench("--endpoint", "http://127.0.0.1:9/v1/chat/completions", "-q", "a", "-q", "b")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.endswith("use http://127.0.0.1:9/v1 as the base URL"), line
    assert "--model" not in line and "developer.mozilla.org" not in line


def test_an_unreachable_endpoint_prints_its_cause_not_a_table_of_dashes() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _bench("--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m", "-q", "a", "-q", "b")
    assert proc.returncode == 1
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2, proc.stdout  # the header, and one line per distinct cause
    assert lines[1].startswith("  ! 5 requests (combined; parallel Q1, Q2; sequential Q1, Q2)")
    assert f"is the server running at http://127.0.0.1:{port}/v1?" in lines[1]
    # the cause in words that name the fix; the socket library's errno text goes to the log
    assert "(connection refused: nothing listens on that port)" in lines[1]
    assert "Errno" not in proc.stdout + proc.stderr
    assert "—        —" not in proc.stdout
