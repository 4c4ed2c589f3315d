"""The engine process's pipe protocol: typed, validated messages both ways."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from scripted_server import ScriptedServer

from splitdesk.core.measure.engine import EngineProcess
from splitdesk.core.measure.engine_protocol import (
    CancelCommand,
    EndLine,
    EventLine,
    ProtocolError,
    Ready,
    RunCommand,
    decode_command,
    decode_line,
    encode,
)
from splitdesk.core.measure.runner import RunConfig, Timeouts
from splitdesk.core.run.events import (
    EVENT_TYPES,
    ConnectionOpened,
    HeadersReceived,
    PhaseStarted,
    RequestEnded,
    RequestPlanned,
    RequestRetrying,
    RequestSent,
    RunEnded,
    RunStarted,
    SectionEnded,
    SectionStarted,
    ServerTimings,
    TextReceived,
    ToolCallReceived,
    UsageReported,
)
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig, ErrorKind, RequestError

ERR = RequestError(ErrorKind.HTTP, "HTTP 429: slow down", 429, 2.0)
EVENTS: list[Any] = [
    RunStarted(0.0, "parallel", ("a", "b"), {"url": "u", "api": "openai-chat", "model": "m"}, 7),
    RequestPlanned(0.0, 0, "parallel", (0,), "a", 0, 64),
    RequestSent(0.001, 0, 1),
    HeadersReceived(0.01, 0, 200, "req-1", 0.0004),
    ConnectionOpened(0.0008, 0, 0.0002, 0.0003),
    TextReceived(0.05, 0, "hé\n", reasoning=True),
    ToolCallReceived(0.06, 0, "lookup", '{"q": 1}'),
    UsageReported(0.07, 0, 12, 30),
    ServerTimings(0.08, 0, {"eval_s": 0.5}),
    SectionStarted(0.09, 0, 1, 3, 13),
    SectionEnded(0.1, 0, 1, 40),
    RequestRetrying(0.11, 0, 1, 2.0, ERR),
    RequestEnded(0.2, 0, "failed", "length", ERR),
    PhaseStarted(0.0, 0, "parallel"),
    RunEnded(0.3, stopped=True),
]


def test_every_event_kind_round_trips_exactly() -> None:
    assert {type(e).kind for e in EVENTS} == set(EVENT_TYPES)
    for event in EVENTS:
        message = decode_line(encode(EventLine(run=3, event=event)))
        assert isinstance(message, EventLine) and message.run == 3
        assert message.event == event and type(message.event) is type(event)


def test_control_lines_and_commands_round_trip() -> None:
    assert decode_line(encode(Ready())) == Ready()
    assert decode_line(encode(EndLine(run=2, error="boom"))) == EndLine(run=2, error="boom")
    config = RunConfig(
        EndpointConfig("http://h:1/v1", "openai-chat", "m", "sk-test", {"x-a": "b"}, "/ca.pem"),
        timeouts=Timeouts(connect=3.0, read=40.0),
        retry_429=2,
    )
    plan = make_plan("side-by-side", ["a", "b"], CombinedTemplate(), 64)
    command = RunCommand(run=1, config=config, questions=["a", "b"], plan=plan, gated=True)
    back = decode_command(encode(command))
    assert isinstance(back, RunCommand)
    assert back.config == config and back.plan == plan and back.gated
    assert back.config.endpoint.api_key == "sk-test"  # the pipe is where the key travels
    assert decode_command(encode(CancelCommand(run=4))) == CancelCommand(run=4)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        (b'{"cmd": "run", "run": 1}', "run.config"),
        (b'{"cmd": "pause", "run": 1}', "'pause'"),
        (b'{"cmd": "cancel", "run": "one"}', "cancel.run"),
        (b"not json", "Invalid JSON"),
    ],
)
def test_a_bad_command_names_its_field(line: bytes, named: str) -> None:
    with pytest.raises(ProtocolError, match=named.replace("(", r"\(")):
        decode_command(line)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        (b'{"run": 1, "event": {"kind": "text", "t": "soon", "req": 0, "text": "a"}}', "t"),
        (b'{"run": 1, "event": {"kind": "teleport", "t": 0}}', "'teleport'"),
        (b'{"run": 1, "event": {"kind": "request_ended", "t": 1, "req": 0}}', "outcome"),
        (b'{"run": 1, "end": true, "error": 3}', "error"),
    ],
)
def test_a_bad_line_names_its_field(line: bytes, named: str) -> None:
    with pytest.raises(ProtocolError, match=named):
        decode_line(line)


@pytest.mark.asyncio
async def test_engine_process_skips_a_bad_command_and_still_runs() -> None:
    """A line that is not a command is reported on the engine's stderr; the next run works
    and its events arrive typed."""
    engine = EngineProcess()
    await asyncio.to_thread(engine.start)
    try:
        assert engine._proc is not None and engine._proc.stdin is not None
        engine._proc.stdin.write(b'{"cmd": "run", "run": 99}\n')
        engine._proc.stdin.flush()
        async with ScriptedServer(pause=0.005) as server:
            config = RunConfig(EndpointConfig(server.url, "openai-chat", "m"))
            questions = ["[ordinary] a", "[tool] b"]
            plan = make_plan("parallel", questions, CombinedTemplate(), 32)
            run = engine.run(config, questions, plan)
            await asyncio.wait_for(asyncio.wrap_future(run.future), 20.0)
        state = RunState()
        for event in run.drain():
            state.apply(event)
        assert [r.outcome for r in state.requests] == ["done", "done"]
        assert state.requests[0].text == "Blue light scatters more."
        assert state.requests[1].first_tool_t is not None
        # stderr is read by its own thread: wait until the report is there
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10.0
        while not any("bad command skipped (run.config" in ln for ln in engine.stderr_tail):
            assert loop.time() < deadline, (
                f"waited 10 s for the engine to report the bad command: {list(engine.stderr_tail)}"
            )
            await asyncio.sleep(0.01)
    finally:
        await asyncio.to_thread(engine.stop)


@pytest.mark.asyncio
async def test_batched_text_events_keep_the_runs_order() -> None:
    """The engine sends text events in batches (``TextsLine``) and the others one by one:
    the window still gets each request's events in the order they happened — its
    connection, sent, headers, its texts in arrival order, its end last."""
    engine = EngineProcess()
    await asyncio.to_thread(engine.start)
    try:
        async with ScriptedServer(pause=0.002) as server:
            config = RunConfig(EndpointConfig(server.url, "openai-chat", "m"))
            questions = ["[ordinary] a", "[ordinary] b", "[ordinary] c"]
            plan = make_plan("parallel", questions, CombinedTemplate(), 32)
            run = engine.run(config, questions, plan)
            await asyncio.wait_for(asyncio.wrap_future(run.future), 20.0)
        events = run.drain()
    finally:
        await asyncio.to_thread(engine.stop)
    for req in range(3):
        kinds = [e.kind for e in events if getattr(e, "req", None) == req]
        # its warm connection's set-up (ConnectionOpened) comes before it is sent
        assert kinds[:4] == ["request_planned", "connection", "request_sent", "headers"], kinds
        assert kinds[-1] == "request_ended", kinds
        texts = [e for e in events if isinstance(e, TextReceived) and e.req == req]
        assert len(texts) > 1 and "".join(e.text for e in texts) == "Blue light scatters more."
        assert [e.t for e in texts] == sorted(e.t for e in texts)
    assert events[-1].kind == "run_ended"
