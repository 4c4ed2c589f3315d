"""TLS verification: on by default, a CA bundle or "do not verify" per endpoint, and the
arrival stamps still taken on an encrypted stream. A real TLS server on loopback, with a
certificate from a throwaway CA (trustme)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from splitdesk.core.measure.netenv import client_settings
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig, ErrorKind
from streamserver import ReplayServer

CHUNKS = [
    b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n',
    b"data: [DONE]\n\n",
]


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def server_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context


async def one_request(url: str, verify: str | bool, state: RunState | None = None) -> RequestTrace:
    state = state or RunState()
    endpoint = EndpointConfig(url + "/v1", "openai-chat", "m", verify=verify)
    plan = make_plan("parallel", ["q"], CombinedTemplate(), 8)
    await Runner(RunConfig(endpoint), state.apply).run(["q"], plan)
    (trace,) = state.requests
    return trace


@pytest.mark.asyncio
async def test_an_unknown_certificate_is_refused_by_default(
    server_context: ssl.SSLContext,
) -> None:
    async with ReplayServer(
        200, {"content-type": "text/event-stream"}, CHUNKS, 0.01, tls=server_context
    ) as server:
        trace = await one_request(server.url, True)
    assert trace.outcome == "failed" and trace.error is not None
    assert trace.error.kind == ErrorKind.CONNECT
    assert trace.error.message.startswith("TLS failure talking to 127.0.0.1:")
    assert "CERTIFICATE_VERIFY_FAILED" in trace.error.message
    assert trace.text == "" and trace.first_text_t is None


@pytest.mark.asyncio
async def test_the_endpoints_ca_bundle_is_trusted_and_arrivals_are_stamped(
    ca: trustme.CA, server_context: ssl.SSLContext, tmp_path: Path
) -> None:
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    async with ReplayServer(
        200, {"content-type": "text/event-stream"}, CHUNKS, 0.02, tls=server_context
    ) as server:
        state = RunState()
        trace = await one_request(server.url, str(bundle), state)
        writes = list(server.write_times)
    assert trace.outcome == "done", trace.error
    assert trace.text == "Hello"
    assert state.info is not None and trace.first_text_t is not None
    # the first token's stamp is taken after the server wrote it and before the next write
    t_ns = state.info.t0_ns + trace.first_text_t * 1e9
    assert writes[0] <= t_ns + 1000 < writes[1]  # 1 µs: float rounding of seconds


@pytest.mark.asyncio
async def test_verification_off_for_one_endpoint_accepts_the_certificate(
    server_context: ssl.SSLContext,
) -> None:
    async with ReplayServer(
        200, {"content-type": "text/event-stream"}, CHUNKS, 0.01, tls=server_context
    ) as server:
        trace = await one_request(server.url, False)
    assert trace.outcome == "done" and trace.text == "Hello"


@pytest.mark.asyncio
async def test_an_unreadable_ca_bundle_fails_every_request_with_its_name(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ca.pem"
    trace = await one_request("https://127.0.0.1:9", str(missing))
    assert trace.outcome == "failed" and trace.error is not None
    assert trace.error.kind == ErrorKind.CONNECT
    assert trace.error.message.startswith(f"cannot use CA bundle {missing}:")


def test_a_tls_context_is_made_once_per_ca_file_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Making a context loads its CA bundle (~20 ms of CPU per run, issue 25): the same
    settings share one, and a bundle rewritten, another bundle or another verify setting
    each get their own, trusting what the file now holds."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    default = client_settings("https://example.test/v1").verify
    assert client_settings("https://example.test/v1").verify is default
    assert client_settings("http://127.0.0.1:8000/v1").verify is default
    assert client_settings("https://example.test/v1", False).verify is not default

    first, second = trustme.CA(), trustme.CA()
    bundle = tmp_path / "ca.pem"
    first.cert_pem.write_to_path(str(bundle))
    ours = client_settings("https://example.test/v1", str(bundle)).verify
    assert client_settings("https://example.test/v1", str(bundle)).verify is ours
    assert len(ours.get_ca_certs()) == 1

    second.cert_pem.write_to_path(str(bundle))  # rewritten in place: read again
    first.cert_pem.write_to_path(str(bundle), append=True)
    again = client_settings("https://example.test/v1", str(bundle)).verify
    assert again is not ours
    assert len(again.get_ca_certs()) == 2

    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))  # the environment's bundle: its own
    from_env = client_settings("https://example.test/v1").verify
    assert from_env is not default
    assert len(from_env.get_ca_certs()) == 2
