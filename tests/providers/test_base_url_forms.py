"""Base URLs as users paste them: with a query string (applied to every request), a
fragment (never sent) or spaces around them. Each request goes to the dialect's path under
the base URL's, over loopback; the check and the client agree on what the URL is."""

from __future__ import annotations

import asyncio

import pytest

from paths import FIXTURES
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from streamserver import ReplayServer, StreamFixture

CHAT = "streams/03-include-usage-final-chunk-empty-choices.json"


@pytest.mark.parametrize(
    ("tail", "target"),
    [
        ("/v1?tenant=blue", "/v1/chat/completions?tenant=blue"),
        ("/v1/?tenant=blue", "/v1/chat/completions?tenant=blue"),
        ("/v1#docs", "/v1/chat/completions"),
        ("/v1  ", "/v1/chat/completions"),
    ],
)
@pytest.mark.asyncio
async def test_each_request_goes_under_the_base_urls_path(tail: str, target: str) -> None:
    fx = StreamFixture.load(FIXTURES / CHAT)
    async with ReplayServer(fx.status, fx.headers, fx.chunks, pause=0.0) as srv:
        endpoint = EndpointConfig(f"  {srv.url}{tail}", "openai-chat", "m")
        state = RunState()
        runner = Runner(RunConfig(endpoint, warm_connections=False), state.apply)
        await asyncio.wait_for(
            runner.run(["q"], make_plan("parallel", ["q"], CombinedTemplate(), 64)), 30
        )
        heads = [head.split(b"\r\n", 1)[0].decode() for head, _ in srv.requests]
    trace = state.requests[0]
    assert trace.outcome == "done", trace.error
    assert heads == [f"POST {target} HTTP/1.1"]
