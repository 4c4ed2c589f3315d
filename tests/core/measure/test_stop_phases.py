"""Stop in every phase of a request — connecting, waiting for headers, waiting for the
first token, streaming, retry back-off: every stream ends within 200 ms, as ``stopped``
with what had arrived, and nothing is left behind: no asyncio task, no socket or other
file descriptor, no thread, no child process (each counted, not assumed)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from splitdesk.core.measure.runner import RunConfig, Runner, Timeouts
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import SimProcess, start_sim

#: Longest a stop may take to end every stream (s).
STOP_WITHIN_S = 0.200


@pytest.fixture(scope="module")
def slow_sim() -> Iterator[SimProcess]:
    """A built-in endpoint at real speed with long answers (~4 s of streaming), questions
    tagged ``[hang]``/``[stall]``/``[429]`` getting those faults."""
    sim = start_sim("batching", {"answer_tokens": 240, "answer_spread": 0.0})
    try:
        rules = {"[hang]": "hang", "[stall]": "stall-headers", "[429]": "status:429"}
        httpx.post(f"{sim.url}/_splitdesk/faults", json={"by_prompt": rules}).raise_for_status()
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def full_backlog() -> Iterator[str]:
    """A base URL whose server never accepts and whose accept queue is full: connecting to
    it hangs (the kernel drops the SYNs; the client keeps retrying)."""
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


def open_fds() -> dict[int, str]:
    """This process's open file descriptors and what each points to (Linux /proc)."""
    out: dict[int, str] = {}
    for entry in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            out[int(entry.name)] = os.readlink(entry)
    return out


def children() -> set[int]:
    """Live child processes (Linux /proc; zombies not counted)."""
    pids: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(OSError):
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    if stat.rsplit(")", 1)[1].split()[0] != "Z":
                        pids.add(int(pid))
    return pids


async def wait_for(what: str, predicate: Callable[[], bool], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.005)


def in_phase(phase: str, r: RequestTrace) -> bool:
    if phase in ("connecting", "waiting for headers"):
        return r.t_send is not None and r.t_headers is None
    if phase == "waiting for the first token":
        return r.t_headers is not None and r.first_text_t is None
    if phase == "streaming":
        return r.text_len > 40
    return bool(r.retries)  # retry back-off


PHASES = {
    # phase: (question tag, config changes)
    "connecting": ("", {"warm_connections": False}),
    "waiting for headers": ("[hang] ", {}),
    "waiting for the first token": ("[stall] ", {}),
    "streaming": ("", {}),
    "retry back-off": ("[429] ", {"retry_429": 3}),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("phase", list(PHASES))
async def test_stop_in_every_phase_is_prompt_and_leaves_nothing_behind(
    phase: str, slow_sim: SimProcess, full_backlog: str
) -> None:
    tag, options = PHASES[phase]
    base = full_backlog if phase == "connecting" else slow_sim.openai_base_url
    questions = [f"{tag}Why is the sky blue?", f"{tag}What is rain?", f"{tag}Why do cats purr?"]
    fds_before = open_fds()
    threads_before = set(threading.enumerate())
    children_before = children()

    state = RunState()
    config = RunConfig(
        EndpointConfig(base, "openai-chat", "splitdesk-sim"),
        timeouts=Timeouts(connect=30, read=30),
        **options,  # type: ignore[arg-type]
    )
    runner = Runner(config, state.apply)
    plan = make_plan("parallel", questions, CombinedTemplate(), 512)
    task = asyncio.create_task(runner.run(questions, plan))
    await wait_for(
        f"every request to be {phase}",
        lambda: len(state.requests) == 3 and all(in_phase(phase, r) for r in state.requests),
        15,
    )
    await asyncio.sleep(0.05)  # well inside the phase
    assert all(in_phase(phase, r) for r in state.requests), phase
    text_before = [r.text for r in state.requests]
    t_stop = runner.now()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    runner.cancel()
    await task
    took = loop.time() - t0

    assert took < STOP_WITHIN_S, f"stopping while {phase} took {took * 1000:.0f} ms"
    assert state.ended is not None and state.ended.stopped
    for r, before in zip(state.requests, text_before, strict=True):
        assert r.outcome == "stopped" and r.error is None
        assert r.t_end is not None and r.t_end - t_stop < STOP_WITHIN_S
        assert r.text.startswith(before)  # what had arrived is kept
    # Nothing left behind.
    here = asyncio.current_task()
    await wait_for(
        "every asyncio task but the test's own to finish",
        lambda: all(
            t is here or t.done() or type(t.get_coro()).__name__ == "async_generator_athrow"
            for t in asyncio.all_tasks()
        ),
        1,
    )
    await wait_for("the run's sockets to close", lambda: open_fds().keys() <= fds_before.keys(), 1)
    assert set(threading.enumerate()) <= threads_before, "threads left running"
    assert children() <= children_before, "child processes left running"
    if phase != "connecting":
        # The server saw every connection go: no stream is still being generated.
        async with httpx.AsyncClient(timeout=5) as client:

            async def idle() -> bool:
                info = (await client.get(f"{slow_sim.url}/_splitdesk/info")).json()
                return bool(info["active_requests"] == 0 and info["running"] == 0)

            for _ in range(100):
                if await idle():
                    break
                await asyncio.sleep(0.01)
            assert await idle(), "the built-in endpoint still serves the stopped requests"
    assert open_fds().keys() <= fds_before.keys()
