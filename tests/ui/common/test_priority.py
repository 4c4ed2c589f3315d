"""The measurement wins the CPU over painting, and is ready before Run (issue 13).

The app starts the measuring engine and the built-in endpoint while its window builds, from
threads that keep the normal priority, then lowers its GUI thread's priority: the children
run at the app's original nice value, the GUI thread 5 (GUI_NICE) above. A built-in endpoint started
ahead is the one the first run uses; one started for other settings is stopped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ui.conftest import wait_signal
from ui.run.test_exit_mid_run import children, wait_gone

from splitdesk import cpus
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.sim.launcher import start_sim
from splitdesk.ui.common.priority import GUI_NICE, thread_nice
from splitdesk.ui.run.controller import RunController, RunRequest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice: Linux only")
def test_app_lowers_its_gui_thread_not_its_children_and_starts_them_before_run(
    tmp_path: Path,
) -> None:
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        SPLITDESK_CONFIG_DIR=str(tmp_path / "config"),
        SPLITDESK_DATA_DIR=str(tmp_path / "data"),
    )
    base = os.getpriority(os.PRIO_PROCESS, 0)
    app = subprocess.Popen(
        [sys.executable, "-m", "splitdesk"],  # no --run: nobody presses Run
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        sims: list[int] = []
        engines: list[int] = []
        while time.monotonic() < deadline and not (sims and engines):
            kids = children(app.pid)
            sims = [p for p, cmd in kids.items() if " sim " in cmd]
            engines = [p for p, cmd in kids.items() if "engine" in cmd]
            time.sleep(0.05)
        assert sims and engines, (
            f"the app did not start its endpoint and engine before Run within 30 s: {kids}"
        )
        # the GUI (main) thread is lowered once the window has shown (it builds at the
        # normal priority, sharing the CPU evenly with the children's start)
        lowered = min(19, base + GUI_NICE)
        while time.monotonic() < deadline and thread_nice(app.pid) != lowered:
            time.sleep(0.05)
        assert thread_nice(app.pid) == lowered, "the GUI thread's nice value was not raised"
        assert thread_nice(sims[0]) == base
        assert thread_nice(engines[0]) == base
    finally:
        app.send_signal(signal.SIGTERM)
        try:
            app.wait(15)
        finally:
            if app.poll() is None:
                app.kill()
            app.communicate()
    assert not wait_gone(sims + engines, 5), "children left after the app exited"


@pytest.mark.asyncio
async def test_the_first_run_uses_the_endpoint_started_ahead(qtbot: Any) -> None:
    controller = RunController()
    try:
        controller.prestart_builtin("batching", 4.0)
        assert controller._prestarted is not None
        ahead = controller._prestarted[1]
        sim = await controller.ensure_builtin("batching", 4.0)
        assert ahead.result() is sim and sim.alive()  # no second endpoint started
    finally:
        await controller.shutdown()
    assert not wait_gone([sim.pid], 5)


@pytest.mark.asyncio
async def test_an_endpoint_started_ahead_for_other_settings_is_stopped(qtbot: Any) -> None:
    controller = RunController()
    try:
        controller.prestart_builtin("batching", 2.0)
        assert controller._prestarted is not None
        ahead = controller._prestarted[1]
        sim = await controller.ensure_builtin("batching", 4.0)
        stale = ahead.result(30)
        assert sim is not stale and sim.alive()
        assert not wait_gone([stale.pid], 10), "the endpoint started at speed 2 still runs"
    finally:
        await controller.shutdown()
    assert not wait_gone([sim.pid], 5)


@pytest.mark.asyncio
async def test_closing_before_any_run_stops_the_endpoint_started_ahead(qtbot: Any) -> None:
    controller = RunController()
    controller.prestart_builtin("batching", 4.0)
    assert controller._prestarted is not None
    ahead = controller._prestarted[1]
    await controller.shutdown()
    assert not wait_gone([ahead.result(30).pid], 5), "the endpoint started ahead still runs"


@pytest.mark.asyncio
async def test_run_pressed_while_the_endpoint_starts_plans_the_panes_at_once(qtbot: Any) -> None:
    """The views' settling time and the endpoint's start overlap: the panes are planned
    before the built-in endpoint is up, and the run still streams from it."""
    controller = RunController()
    planned_while_starting: list[bool] = []
    try:
        controller.prestart_builtin("batching", 4.0)
        assert controller._prestarted is not None
        ahead = controller._prestarted[1]
        controller.runPlanned.connect(lambda *_: planned_while_starting.append(not ahead.done()))
        endpoint = EndpointSettings(speed=4.0, max_tokens=8)
        request = RunRequest(endpoint, None, ["Hi?", "Ho?"], CombinedTemplate(), "parallel")
        finished = asyncio.ensure_future(
            wait_signal(controller.runFinished, 60, "the run started as the endpoint started")
        )
        await controller.start(request)
        (state,) = await finished
        assert planned_while_starting == [True]
        assert [r.outcome for r in state.requests] == ["done", "done"]
        assert controller.sim is ahead.result()
    finally:
        await controller.shutdown()


@pytest.mark.asyncio
@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(cpus.allowed_cpus()) < 2,
    reason="CPU affinity needs Linux and at least two CPUs",
)
async def test_many_streams_on_the_builtin_endpoint_get_it_a_cpu_of_its_own_and_only_them(
    qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of MANY_STREAMS concurrent requests or more on the built-in endpoint: the
    endpoint on one CPU, the engine off it (splitdesk/cpus.py). A smaller run, or a run on
    any other endpoint: both run anywhere again. (The threshold is lowered to 2 here, so
    the runs stay small.)"""
    monkeypatch.setattr(cpus, "MANY_STREAMS", 2)
    controller = RunController()
    allowed = set(cpus.allowed_cpus())

    async def run(settings: EndpointSettings, questions: list[str]) -> None:
        finished = asyncio.ensure_future(
            wait_signal(controller.runFinished, 60, f"a run of {len(questions)} on {settings}")
        )
        request = RunRequest(settings, None, questions, CombinedTemplate(), "parallel")
        await controller.start(request)
        (state,) = await finished
        assert all(r.outcome == "done" for r in state.requests)

    try:
        builtin = EndpointSettings(speed=4.0, max_tokens=8)
        await run(builtin, ["Hi?", "Ho?"])
        assert controller.sim is not None and controller.engine.pid is not None
        (cpu,) = os.sched_getaffinity(controller.sim.pid)
        assert os.sched_getaffinity(controller.engine.pid) == allowed - {cpu}

        await run(builtin, ["Hi?"])  # one stream: nothing to keep apart
        assert os.sched_getaffinity(controller.sim.pid) == allowed
        assert os.sched_getaffinity(controller.engine.pid) == allowed

        await run(builtin, ["Hi?", "Ho?"])
        other = EndpointSettings(  # the same server, measured as a real one would be
            preset="custom", base_url=controller.sim.openai_base_url, model="splitdesk-sim"
        )
        await run(other, ["Hi?", "Ho?"])
        assert os.sched_getaffinity(controller.engine.pid) == allowed
    finally:
        await controller.shutdown()


@pytest.mark.asyncio
async def test_while_the_endpoint_starts_the_summary_says_so_beside_the_planned_panes(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The panes are planned at once (the endpoint's start and the views' settling overlap),
    and the summary says what the run waits for until it starts."""
    from splitdesk.ui.run import controller as controller_module

    def slow_start(profile: str, overrides: dict[str, Any]) -> Any:
        time.sleep(1.0)  # a slow machine: the endpoint takes a second to come up
        return start_sim(profile, overrides)

    monkeypatch.setattr(controller_module, "start_sim", slow_start)
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    planned = asyncio.ensure_future(
        wait_signal(window.controller.runPlanned, 30, "the run's panes planned")
    )
    finished = asyncio.ensure_future(wait_signal(window.runFinished, 60, "the run's end"))
    window.run_button.click()
    await planned
    await asyncio.sleep(0.2)  # the planned panes are being built
    assert window.controller.sim is None, "the endpoint was up before the panes were planned"
    assert "starting the built-in endpoint" in window.stage.summary.headline.text()
    (state,) = await finished
    assert all(r.outcome == "done" for r in state.requests)
    assert "starting" not in window.stage.summary.headline.text()
