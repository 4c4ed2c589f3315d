"""A response held open after its dialect's last event: the request ends at that event
(``[DONE]``, ``message_stop``, ``response.completed``, the ``done`` line, TGI's final
event), not at the close or the read timeout. Real loopback servers that write a real
fixture's reads, then neither end the body nor close until the client leaves."""

from __future__ import annotations

import asyncio

import pytest

from paths import FIXTURES
from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig
from streamserver import ReplayServer, StreamFixture

#: one complete stream per dialect, each ending with its dialect's last event
COMPLETE = {
    "openai-chat": "streams/03-include-usage-final-chunk-empty-choices.json",
    "openai-completions": "streams_extra/78-openai-completions-vendor-usage.json",
    "azure-openai": "streams_extra/59-azure-openai-deployment-stream-with-usage.json",
    "anthropic": "streams/30-anthropic-ping-and-cumulative-usage.json",
    "openai-responses": "streams_extra/52-openai-responses-reasoning-summary-and-text.json",
    "ollama-chat": "streams/36-ollama-chat-ndjson-lines-split-and-coalesced.json",
    "ollama-generate": "streams_extra/55-ollama-generate-thinking-and-done-timings.json",
    "tgi": "streams/41-tgi-generate-stream-special-eos-token.json",
}

READ_TIMEOUT_S = 60.0


@pytest.mark.parametrize("api", sorted(COMPLETE))
@pytest.mark.asyncio
async def test_request_ends_at_the_last_event_of_a_held_open_response(api: str) -> None:
    fx = StreamFixture.load(FIXTURES / COMPLETE[api])
    assert fx.api == api and fx.expect["error"] is None
    async with ReplayServer(fx.status, fx.headers, fx.chunks, pause=0.01, hold_open=True) as srv:
        provider = get_provider(api)
        endpoint = EndpointConfig(provider.base_url_for_root(srv.url), api, "m")
        # no warm-up GET: this server answers every request with the held-open stream
        config = RunConfig(endpoint, timeouts=Timeouts(read=READ_TIMEOUT_S), warm_connections=False)
        state = RunState()
        plan = make_plan("parallel", ["q"], CombinedTemplate(), 64)
        runner = Runner(config, state.apply)
        task = asyncio.create_task(runner.run(["q"], plan))
        done, _ = await asyncio.wait([task], timeout=20.0)
        if not done:
            runner.cancel()
            await task
            pytest.fail(
                f"{api}: the request still waited after 20 s on a response held open after "
                "its last event (it must end at that event)"
            )
        await asyncio.wait_for(srv.client_left.wait(), 10.0)  # and the connection was let go
    trace = state.requests[0]
    assert trace.outcome == "done", trace.error
    assert trace.text == fx.expect["text"]
    assert trace.usage_output_tokens == fx.expect["output_tokens"]
    assert state.info is not None and trace.t_end is not None
    last_write = (srv.write_times[-1] - state.info.t0_ns) / 1e9
    # ended when the last event arrived (plus the loopback hop), far from the read timeout
    assert trace.t_end - last_write < 2.0, (trace.t_end, last_write)


@pytest.mark.asyncio
async def test_a_stream_held_open_after_its_finish_reason_without_done_is_answered() -> None:
    """OpenAI chat: the finish reason, then the usage chunk, then no ``[DONE]`` and no
    close. The request is done with its whole text and usage, ended at its last bytes —
    not failed on the read timeout (with ``--read-timeout 5``), nor kept waiting the
    default 300 s until the server closes."""
    fx = StreamFixture.load(FIXTURES / COMPLETE["openai-chat"])
    chunks = [c.replace(b"data: [DONE]\n\n", b"") for c in fx.chunks]
    chunks = [c for c in chunks if c]
    assert b"[DONE]" not in b"".join(chunks) and b'"finish_reason":"stop"' in b"".join(chunks)
    async with ReplayServer(fx.status, fx.headers, chunks, pause=0.01, hold_open=True) as srv:
        endpoint = EndpointConfig(
            get_provider("openai-chat").base_url_for_root(srv.url), "openai-chat", "m"
        )
        config = RunConfig(endpoint, timeouts=Timeouts(read=READ_TIMEOUT_S), warm_connections=False)
        state = RunState()
        plan = make_plan("parallel", ["q"], CombinedTemplate(), 64)
        runner = Runner(config, state.apply)
        task = asyncio.create_task(runner.run(["q"], plan))
        done, _ = await asyncio.wait([task], timeout=20.0)
        if not done:
            runner.cancel()
            await task
            pytest.fail("the request still waited 20 s after its finish reason and usage")
        await asyncio.wait_for(srv.client_left.wait(), 10.0)  # the connection was let go
    trace = state.requests[0]
    assert trace.outcome == "done", trace.error
    assert trace.finish_reason == "stop"
    assert trace.text == fx.expect["text"]
    assert trace.usage_output_tokens == fx.expect["output_tokens"]
    assert state.info is not None and trace.t_end is not None
    last_write = (srv.write_times[-1] - state.info.t0_ns) / 1e9
    # ended at its last bytes (the loopback hop), not after the wait for more
    assert trace.t_end - last_write < 0.5, (trace.t_end, last_write)
