"""``NO_PROXY`` in the forms curl, Go and requests honour: IPv4 and IPv6 ranges, leading
dots and ``*.``, ports, brackets, URL-shaped entries — matched as those clients match them,
and through real clients: a loopback "proxy" answers only the requests that must go
through it, and an IPv6 range no longer kills ``splitdesk bench``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from paths import FIXTURES
from splitdesk.core.measure.netenv import proxy_for
from splitdesk.core.measure.no_proxy import parse_no_proxy
from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from streamserver import ReplayServer, StreamFixture

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
PROXY_VARS += tuple(v.lower() for v in PROXY_VARS)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


# (NO_PROXY, host, port, bypassed)
CASES = [
    # host names: the name and its subdomains, never a longer name
    ("example.com", "example.com", 80, True),
    ("example.com", "api.example.com", 80, True),
    ("example.com", "badexample.com", 80, False),
    ("Example.COM", "API.example.com", 80, True),  # case-insensitive
    (".example.com", "api.example.com", 80, True),  # leading dot: curl, Go, requests
    (".example.com", "example.com", 80, True),  # curl >= 7.86 and requests (module doc)
    ("*.example.com", "deep.api.example.com", 443, True),
    ("example.com.", "example.com", 80, True),  # a trailing dot is the same name
    ("localhost", "localhost", 8000, True),
    ("localhost", "127.0.0.1", 8000, False),  # names are never resolved
    # IPv4 addresses and ranges
    ("10.1.2.3", "10.1.2.3", 80, True),
    ("10.0.0.0/8", "10.200.3.4", 80, True),
    ("10.0.0.0/8", "11.0.0.1", 80, False),
    ("192.168.0.0/16", "192.168.44.5", 80, True),
    ("127.0.0.0/8", "127.0.0.1", 8000, True),
    ("127.0.0.1/32", "127.0.0.2", 8000, False),
    # IPv6 addresses and ranges, bare and in brackets
    ("::1", "::1", 8000, True),
    ("[::1]", "[::1]", 8000, True),
    ("fd00::/8", "fd12:3456::1", 80, True),
    ("fd00::/8", "fe80::1", 80, False),
    ("[fd00::]/8", "[fd12::9]", 80, True),
    ("[fd00::/8]", "fd12::9", 80, True),
    ("2001:db8::/32", "2001:db8:1::7", 443, True),
    ("10.0.0.0/8", "::ffff:1.2.3.4", 80, False),  # the families never cross
    # ports: only that port bypasses
    ("example.com:8080", "example.com", 8080, True),
    ("example.com:8080", "example.com", 80, False),
    ("10.1.2.3:80", "10.1.2.3", 80, True),
    ("10.1.2.3:80", "10.1.2.3", 443, False),
    ("[::1]:8000", "::1", 8000, True),
    ("[::1]:8000", "::1", 9000, False),
    # URL-shaped entries (httpx's own form) and lists
    ("http://example.com", "www.example.com", 80, True),
    ("a.test, 10.0.0.0/8 ,fd00::/8,  b.test", "fd00::5", 80, True),
    ("a.test,,b.test", "c.test", 80, False),
    ("*", "anything.at.all", 1234, True),
    ("a.test,*", "other.test", 80, True),
    ("", "example.com", 80, False),
]


@pytest.mark.parametrize(("value", "host", "port", "bypassed"), CASES)
def test_no_proxy_forms(value: str, host: str, port: int, bypassed: bool) -> None:
    assert parse_no_proxy(value).bypasses(host, port) is bypassed


def test_entries_no_form_reads_are_listed_not_fatal() -> None:
    parsed = parse_no_proxy("ok.test,host:notaport,[::1,10.0.0.0/99,[::1]:99999")
    assert parsed.unreadable == ("host:notaport", "[::1", "10.0.0.0/99", "[::1]:99999")
    assert parsed.bypasses("ok.test", 80)


def test_the_schemes_own_proxy_wins_over_all_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "http://all.proxy:3128")
    monkeypatch.setenv("HTTPS_PROXY", "secure.proxy:3128")
    monkeypatch.setenv("NO_PROXY", "fd00::/8,.internal")
    assert proxy_for("https://api.example.com/v1") == ("http://secure.proxy:3128", "HTTPS_PROXY")
    assert proxy_for("http://api.example.com/v1") == ("http://all.proxy:3128", "ALL_PROXY")
    assert proxy_for("http://[fd00::1]:8000/v1") is None
    assert proxy_for("http://gpu.internal:8000/v1") is None


FIXTURE = FIXTURES / "streams/03-include-usage-final-chunk-empty-choices.json"


async def _run(base_url: str) -> RunState:
    state = RunState()
    config = RunConfig(
        EndpointConfig(base_url, "openai-chat", "m"),
        timeouts=Timeouts(connect=5, read=30),
        warm_connections=False,
    )
    await Runner(config, state.apply).run(
        ["q"], make_plan("parallel", ["q"], CombinedTemplate(), 8)
    )
    return state


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("no_proxy", "through_proxy"),
    [
        ("10.0.0.0/8,fd00::/8,other.invalid", True),  # no entry matches: proxied
        ("fd00::/8,.api.invalid", False),  # the leading-dot entry matches: sent directly
        ("api.invalid:9999,fd00::/8", True),  # another port: proxied
        ("api.invalid:80", False),  # this port: sent directly
    ],
)
async def test_a_real_client_goes_through_the_proxy_exactly_when_no_proxy_says(
    monkeypatch: pytest.MonkeyPatch, no_proxy: str, through_proxy: bool
) -> None:
    """A loopback server stands in for the proxy (httpx sends it the absolute URL); the
    endpoint's name does not resolve, so a request sent directly fails to connect."""
    fx = StreamFixture.load(FIXTURE)
    async with ReplayServer(fx.status, fx.headers, fx.chunks, pause=0.0) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy)
        state = await _run("http://api.invalid/v1")
    trace = state.requests[0]
    if through_proxy:
        assert trace.outcome == "done", trace.error
        assert proxy.requests[0][0].startswith(b"POST http://api.invalid/v1/chat/completions ")
    else:
        assert proxy.requests == []
        assert trace.outcome == "failed" and trace.error is not None
        assert "cannot resolve api.invalid" in trace.error.message


def test_bench_with_an_ipv6_range_in_no_proxy_measures_the_loopback_endpoint(
    tmp_path: Path,
) -> None:
    """``NO_PROXY`` with an IPv6 range and an IPv4 range covering 127.0.0.1, and a proxy
    that does not exist: bench reaches the built-in endpoint directly, exit 0, no
    traceback (httpx's own reading raised InvalidURL on the range)."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env["HTTP_PROXY"] = "http://127.0.0.1:9"  # nothing listens there
    env["NO_PROXY"] = "fd00::/8,127.0.0.0/8,[::1]"
    out = tmp_path / "out.json"
    args = ["bench", "--mode", "parallel", "-q", "a", "--max-tokens", "4", "--json", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert out.is_file()
