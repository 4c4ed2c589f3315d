"""Ending the app in the middle of a run: closing the window or SIGTERM exits within 2 s;
after SIGKILL, which the app cannot see, its children — the built-in endpoint and the
measuring engine — notice by themselves (their stdin pipe from the app reaches end of file;
the endpoint also polls its parent pid) and exit within 2 s."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cputime import RunQueueMeter
from ui.conftest import wait_signal, wait_until

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings

EXIT_WITHIN_S = 2.0


def children(pid: int) -> dict[int, str]:
    """Live children of ``pid`` and their command lines (Linux /proc)."""
    out: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    with contextlib.suppress(OSError):
                        cmd = Path(f"/proc/{child}/cmdline").read_bytes()
                        out[int(child)] = cmd.replace(b"\0", b" ").decode(errors="replace")
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_app_mid_run(tmp_path: Path) -> tuple[subprocess.Popen[str], int, int]:
    """The app, pressing Run at start, once its endpoint streams and its engine runs:
    (app, endpoint pid, engine pid)."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    app = subprocess.Popen(
        [sys.executable, "-m", "splitdesk", "--run"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        kids = children(app.pid)
        sims = [p for p, cmd in kids.items() if " sim " in cmd]
        engines = [p for p, cmd in kids.items() if "engine" in cmd]
        if sims and engines and sims[0] in children(app.pid):
            time.sleep(1.5)  # into the run (speed 1: the combined reply streams ~10 s)
            return app, sims[0], engines[0]
        time.sleep(0.05)
    app.kill()
    app.wait()
    pytest.fail("the app never started both its endpoint and its engine within 30 s")


def wait_gone(pids: list[int], within: float) -> list[int]:
    """Wait up to ``within`` seconds for ``pids`` to exit; the ones still alive."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if alive(p)]


def test_sigkill_leaves_no_child_behind(tmp_path: Path) -> None:
    app, sim, engine = start_app_mid_run(tmp_path)
    # The bound is on the children's own time: the wall clock minus the time they waited
    # for a CPU held by other processes (each is sampled until it exits).
    with RunQueueMeter(sim, engine) as cpu:
        app.kill()
        app.wait(5)
        app.communicate()
        t0 = time.monotonic()
        left = wait_gone([sim, engine], EXIT_WITHIN_S)
        while left and time.monotonic() - t0 - cpu.waited_s < EXIT_WITHIN_S:
            left = wait_gone(left, 0.1)  # wall time beyond the bound went to other processes
        took = time.monotonic() - t0
    assert not left, (
        f"still running {took - cpu.waited_s:.1f} s of their own time "
        f"({took:.1f} s wall clock) after SIGKILL: {left}"
    )


def test_sigterm_mid_run_exits_within_two_seconds(tmp_path: Path) -> None:
    app, sim, engine = start_app_mid_run(tmp_path)
    # The bound is on the app's own time: the wall clock minus the time the app and its
    # children (which it stops on the way out) waited for a CPU held by other processes.
    with RunQueueMeter(app.pid, descendants=True) as cpu:
        t0 = time.monotonic()
        app.send_signal(signal.SIGTERM)
        try:
            code = app.wait(EXIT_WITHIN_S + 10)
        finally:
            if app.poll() is None:
                app.kill()
        took = time.monotonic() - t0
    _, err = app.communicate()
    assert code == 0, err[-2000:]
    own = took - cpu.waited_s
    assert own < EXIT_WITHIN_S, f"exit took {own:.2f} s of the app's own time ({took:.2f} s wall)"
    assert not wait_gone([sim, engine], 0.5)
    assert "Traceback" not in err


@pytest.mark.asyncio
async def test_closing_the_window_mid_run_is_done_within_two_seconds(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=1.0)))
    window.run_button.click()
    await wait_until(
        lambda: (
            window.state is not None
            and bool(window.state.requests)
            and all(r.text_len > 10 for r in window.state.requests)
        ),
        20,
    )
    engine_pid = window.controller.engine.pid
    sim = window.controller.sim
    assert engine_pid is not None and sim is not None
    loop = asyncio.get_running_loop()
    # The bound is on the app's own time: the wall clock minus the time this process, the
    # engine and the endpoint (both stopped on closing) waited for a CPU held by others.
    with RunQueueMeter(os.getpid(), engine_pid, sim.pid) as cpu:
        t0 = loop.time()
        window.close()
        await wait_signal(window.closed, EXIT_WITHIN_S + 10, "the window closed")
        took = loop.time() - t0
    own = took - cpu.waited_s
    assert own < EXIT_WITHIN_S, f"closing took {own:.2f} s of own time ({took:.2f} s wall)"
    assert not window.controller.engine.alive and window.controller.sim is None
    assert not await asyncio.to_thread(wait_gone, [engine_pid, sim.pid], 0.5)
