"""Proxy and CA settings from the environment that cannot work give one clear sentence
naming the variable — and a plain-http endpoint on this machine keeps working whenever they
do not concern it. Real runs against the built-in endpoint over loopback."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from typing import Any

import pytest

from splitdesk.core.measure.netenv import NetworkSetupError, client_settings, environment_problems
from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("socksio") is not None,
    reason="these tests need an environment without socksio (httpx[socks])",
)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy")
PROXY_VARS += ("all_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


async def run_on(sim: Any) -> RunState:
    base = get_provider("openai-chat").base_url_for_root(sim.url)
    state = RunState()
    config = RunConfig(
        EndpointConfig(base, "openai-chat", "splitdesk-sim"), timeouts=Timeouts(connect=5, read=30)
    )
    await Runner(config, state.apply).run(
        ["a", "b"], make_plan("parallel", ["a", "b"], CombinedTemplate(), 8)
    )
    return state


def test_a_socks_proxy_without_socksio_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://user:pw@proxy.example:1080")
    with pytest.raises(NetworkSetupError) as caught:
        client_settings("https://api.openai.com/v1")
    message = str(caught.value)
    assert message.startswith("HTTPS_PROXY=socks5://user:***@proxy.example:1080 is a SOCKS")
    assert "pip install 'httpx[socks]'" in message and "pw" not in message
    assert environment_problems("https://api.openai.com/v1") == [message]
    # plain http is not the proxy's business: that client leaves the broken mount out
    settings = client_settings("http://127.0.0.1:8000/v1")
    assert (settings.trust_env, settings.proxy) == (False, None)
    assert environment_problems("http://127.0.0.1:8000/v1") == []


def test_an_unknown_proxy_scheme_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "ftp://proxy.example:21")
    assert environment_problems("http://gpu-box:8000/v1") == [
        "ALL_PROXY=ftp://proxy.example:21: httpx cannot use a 'ftp' proxy (it knows http, "
        "https, socks5, socks5h) — fix or unset ALL_PROXY"
    ]
    monkeypatch.setenv("NO_PROXY", "gpu-box")
    assert environment_problems("http://gpu-box:8000/v1") == []


def test_missing_ca_files_are_named_for_https_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "gone.pem"))
    (problem,) = environment_problems("https://api.openai.com/v1")
    assert problem.startswith(f"SSL_CERT_FILE={tmp_path / 'gone.pem'} does not exist")
    assert environment_problems("http://127.0.0.1:8000/v1") == []
    monkeypatch.delenv("SSL_CERT_FILE")
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "no-dir"))
    (problem,) = environment_problems("https://api.openai.com/v1")
    assert problem.startswith(f"SSL_CERT_DIR={tmp_path / 'no-dir'} does not exist")
    # verification off, or an explicit CA bundle: the environment's CA settings do not apply
    assert environment_problems("https://api.openai.com/v1", verify=False) == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HTTPS_PROXY", "socks5://127.0.0.1:1"),
        ("SSL_CERT_FILE", "/nonexistent/ca.pem"),
        ("SSL_CERT_DIR", "/nonexistent/certs"),
    ],
)
async def test_plain_http_loopback_keeps_working(
    sim_batching: Any, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    state = await run_on(sim_batching)
    assert [r.outcome for r in state.requests] == ["done", "done"]


@pytest.mark.asyncio
async def test_a_proxy_that_concerns_the_endpoint_fails_each_request_clearly(
    sim_batching: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1")
    state = await run_on(sim_batching)
    assert [r.outcome for r in state.requests] == ["failed", "failed"]
    for r in state.requests:
        assert r.error is not None and r.error.message.startswith("ALL_PROXY=socks5://127.0.0.1:1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # the fix the message names
    state = await run_on(sim_batching)
    assert [r.outcome for r in state.requests] == ["done", "done"]


def test_bench_names_the_problem_on_stderr_and_fails_the_run(tmp_path: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env["SSL_CERT_FILE"] = str(tmp_path / "gone.pem")
    out = tmp_path / "out.json"
    args = ["--endpoint", f"https://127.0.0.1:{port}/v1", "--model", "m", "--mode", "parallel"]
    args += ["-q", "a", "-q", "b", "--json", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "bench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first == (
        f"splitdesk bench: SSL_CERT_FILE={tmp_path / 'gone.pem'} does not exist, so no TLS "
        "certificate can be verified — point it at a CA bundle (PEM) or unset it"
    )
    assert "Traceback" not in proc.stderr
    assert "SSL_CERT_FILE" in out.read_text(encoding="utf-8")  # each request's error
