"""Stop in the window in every phase of the requests — connecting, waiting for headers,
waiting for the first token, streaming, retry back-off: every pane says ``stopped`` within
200 ms and keeps its text, and the engine process is left with no socket, thread or
active request more than before the run (counted in its /proc entries). The window
fixture then checks that closing leaves no task, engine or endpoint behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cputime import RunQueueMeter
from ui.conftest import wait_signal, wait_until

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.questions import Question, QuestionSet
from splitdesk.core.run.run_state import RequestTrace
from splitdesk.sim.launcher import SimProcess, start_sim
from splitdesk.ui.common import throttle
from splitdesk.ui.run import controller as controller_module

STOP_WITHIN_S = 0.200


@pytest.fixture(scope="module")
def slow_sim() -> Iterator[SimProcess]:
    """Real speed, long answers; ``[hang]``/``[stall]``/``[429]`` questions get those faults."""
    sim = start_sim("batching", {"answer_tokens": 240, "answer_spread": 0.0})
    try:
        rules = {"[hang]": "hang", "[stall]": "stall-headers", "[429]": "status:429"}
        httpx.post(f"{sim.url}/_splitdesk/faults", json={"by_prompt": rules}).raise_for_status()
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def full_backlog() -> Iterator[str]:
    """A base URL whose accept queue is full: connecting to it hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(3):
        s = socket.socket()
        s.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            s.connect(("127.0.0.1", port))
        fillers.append(s)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        for s in [*fillers, server]:
            s.close()


def engine_resources(pid: int) -> tuple[int, int]:
    """(open sockets, threads) of the engine process (Linux /proc)."""
    sockets = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            sockets += os.readlink(fd).startswith("socket:")
    return sockets, len(os.listdir(f"/proc/{pid}/task"))


PHASES: dict[str, tuple[str, Callable[[RequestTrace], bool]]] = {
    "connecting": ("", lambda r: r.t_headers is None),
    "waiting for headers": ("[hang] ", lambda r: r.t_send is not None and r.t_headers is None),
    "waiting for the first token": (
        "[stall] ",
        lambda r: r.t_headers is not None and r.first_text_t is None,
    ),
    "streaming": ("", lambda r: r.text_len > 40),
    "retry back-off": ("[429] ", lambda r: bool(r.retries)),
}


async def run_until_in_phase(
    phase: str, slow_sim: SimProcess, full_backlog: str, make_window: Any
) -> tuple[Any, int, tuple[int, int]]:
    """A window whose run of three questions has every parallel request in ``phase``:
    (the window, its engine's pid, the engine's resources before the run)."""
    tag, in_phase = PHASES[phase]
    base = full_backlog if phase == "connecting" else slow_sim.openai_base_url
    endpoint = EndpointSettings(
        preset="custom", base_url=base, model="splitdesk-sim", retry_429=3, connect_timeout=30
    )
    window = make_window(AppSettings(endpoint=endpoint))
    questions = [f"{tag}Why is the sky blue?", f"{tag}What is rain?", f"{tag}Why do cats purr?"]
    window.questions.set_question_set(
        QuestionSet(title="stop", questions=[Question(text=q) for q in questions])
    )
    await window.controller.start_engine()
    engine_pid = window.controller.engine.pid
    assert engine_pid is not None
    before = engine_resources(engine_pid)
    window.run_button.click()
    # side by side: the combined request (no tag) is in its own phase; the parallel ones
    # are the ones this test stops in the phase
    await wait_until(
        lambda: (
            window.state is not None
            and len(window.state.requests) == 4
            and all(in_phase(r) for r in window.state.group("parallel"))
        ),
        20,
        f"every parallel request is {phase}",
    )
    await asyncio.sleep(0.1)
    state = window.state
    assert state is not None and all(in_phase(r) for r in state.group("parallel")), phase
    return window, engine_pid, before


async def stop_and_time(window: Any, engine_pid: int) -> tuple[float, float]:
    """Press Stop and wait until every pane says so: (the app's own time, the wall clock
    time) it took (s). The own time is the wall clock minus the time the GUI process and
    the engine (the stop's path) waited for a CPU that other processes held (2 shared
    cores)."""
    loop = asyncio.get_running_loop()
    with RunQueueMeter(os.getpid(), engine_pid) as cpu:
        t0 = loop.time()
        window.stop_button.click()
        await wait_until(
            lambda: all("stopped" in p.state.text() for p in window.stage.panes.values()),
            2,
            "every pane says stopped",
        )
        took = loop.time() - t0
    return took - cpu.waited_s, took


@pytest.mark.asyncio
@pytest.mark.parametrize("phase", list(PHASES))
async def test_stop_in_every_phase_in_the_window(
    phase: str, slow_sim: SimProcess, full_backlog: str, make_window: Any
) -> None:
    window, engine_pid, before = await run_until_in_phase(
        phase, slow_sim, full_backlog, make_window
    )
    state = window.state
    text_before = [r.text for r in state.requests]
    finished = asyncio.ensure_future(wait_signal(window.runFinished, 10, "the stopped run"))
    own, took = await stop_and_time(window, engine_pid)
    assert own < STOP_WITHIN_S, (
        f"stopping while {phase} took {own * 1000:.0f} ms of the app's own time "
        f"({took * 1000:.0f} ms wall clock)"
    )
    await finished
    for r, text in zip(state.requests, text_before, strict=True):
        assert r.outcome == "stopped" and r.text.startswith(text)
    for pane, r in zip(window.stage.grid.panes, state.group("parallel"), strict=True):
        assert pane.text.toPlainText() == r.text
    # The engine process let go of every connection and thread of the run.
    await wait_until(
        lambda: engine_resources(engine_pid) == before,
        10,
        "the engine process holds the sockets and threads it had before the run",
    )
    if phase != "connecting":
        async with httpx.AsyncClient(base_url=slow_sim.url, timeout=5) as client:

            async def idle() -> bool:
                info = (await client.get("/_splitdesk/info")).json()
                return bool(info["active_requests"] == 0 and info["running"] == 0)

            loop = asyncio.get_running_loop()
            end = loop.time() + 10  # a wait, not a bound: the endpoint's own clean-up
            for _ in range(10_000):
                if await idle() or loop.time() > end:
                    break
                await asyncio.sleep(0.01)
            assert await idle(), "the endpoint still serves the stopped requests"


@pytest.mark.asyncio
@pytest.mark.parametrize("phase", ["waiting for headers", "streaming"])
async def test_stop_answers_at_once_however_slow_the_views_frame(
    phase: str,
    slow_sim: SimProcess,
    full_backlog: str,
    make_window: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stop answers the user, not the views' frame: on a busy machine the live views slow
    to a frame of 400 ms (``throttle.BUSY_PACE``), and a drain that waited for the frame
    made Stop take up to two of them. Here the frame is held at 2 s all run long."""
    monkeypatch.setattr(controller_module, "set_live_pace", lambda factor: None)  # held
    throttle.set_live_pace(2000 / throttle.LIVE_FRAME_MS)
    try:
        window, engine_pid, _before = await run_until_in_phase(
            phase, slow_sim, full_backlog, make_window
        )
        finished = asyncio.ensure_future(wait_signal(window.runFinished, 10, "the stopped run"))
        own, took = await stop_and_time(window, engine_pid)
        await finished
    finally:
        throttle.set_live_pace(1.0)
    assert own < STOP_WITHIN_S, (
        f"at a 2 s frame, stopping while {phase} took {own * 1000:.0f} ms of the app's "
        f"own time ({took * 1000:.0f} ms wall clock)"
    )
    assert all(r.outcome == "stopped" for r in window.state.requests)
