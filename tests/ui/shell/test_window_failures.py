"""The window is never left busy and never silent: whatever goes wrong while starting or
during a run, Run comes back, every pane and the status bar say what happened, and the
last error stays in view. The engine process survives a bad run; killed under a run, it is
restarted and the window says so. Real widgets (offscreen), the real engine process, the
built-in endpoint over loopback."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

import pytest
from ui.conftest import wait_signal, wait_until

from splitdesk.core.files.settings import AppSettings, read_settings
from splitdesk.core.run.endpoints import EndpointSettings, KeySource
from splitdesk.sim.params import PROFILES
from splitdesk.ui.common import tasks
from splitdesk.ui.run.controller import ENGINE_DIED

FAST = EndpointSettings(speed=4.0)


def pane_errors(window: Any) -> list[str]:
    return [pane.error.text() for pane in window.stage.panes.values()]


def assert_failed_everywhere(window: Any, state: Any, words: str) -> None:
    assert state.requests and all(r.outcome == "failed" for r in state.requests)
    for r in state.requests:
        assert r.error is not None and words in r.error.message, r.error
    for pane in window.stage.panes.values():
        assert "failed" in pane.state.text()
    status = window.statusBar().currentMessage()
    assert words in status and not status.startswith("Done"), status
    assert window.run_button.isEnabled() and not window.stop_button.isEnabled()
    assert not window.controller.busy


def write_unknown_dialect(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = AppSettings(endpoint=FAST).model_dump(mode="json")
    data["endpoint"]["api"] = "openai-realtime"
    data["endpoint"]["profile"] = "warp-drive"
    path.write_text(json.dumps(data), encoding="utf-8")


async def run_once(window: Any, what: str, timeout: float = 30) -> Any:
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, timeout, what)
    return state


@pytest.mark.asyncio
async def test_a_bad_url_fails_every_request_clearly_and_the_engine_survives(
    make_window: Any,
) -> None:
    endpoint = EndpointSettings(preset="custom", base_url="localhost:8000/v1", model="m")
    window = make_window(AppSettings(endpoint=endpoint))
    await window.controller.start_engine()
    pid = window.controller.engine.pid
    state = await run_once(window, "the run with an invalid base URL")
    assert_failed_everywhere(window, state, "invalid base URL 'localhost:8000/v1'")
    assert all("stopped" not in pane.state.text() for pane in window.stage.panes.values())
    assert window.controller.engine.pid == pid  # the bad run did not take the engine down
    # and the same window runs again once the URL is fixed
    window.endpoint.set_settings(FAST)
    window.endpoint.changed.emit()
    state = await run_once(window, "the run on the built-in endpoint after the bad one")
    assert all(r.outcome == "done" for r in state.requests)
    assert window.controller.engine.pid == pid


@pytest.mark.asyncio
async def test_an_unknown_dialect_that_slipped_through_ends_the_run_with_its_name(
    make_window: Any,
) -> None:
    # validation makes this impossible from a file (see the next test); a settings object
    # built without validation must still not leave the window busy
    endpoint = EndpointSettings.model_construct(**{**FAST.model_dump(), "api": "openai-realtime"})
    window = make_window(AppSettings(endpoint=FAST))
    window.endpoint._settings = endpoint
    state = await run_once(window, "the run with an unknown dialect")
    assert_failed_everywhere(window, state, "unknown API dialect 'openai-realtime'")
    assert "Cannot run: unknown API dialect" in window.stage.summary.headline.text()


@pytest.mark.asyncio
async def test_an_unknown_dialect_in_the_settings_file_is_reset_and_the_window_runs(
    make_window: Any, config_dir: Path
) -> None:
    path = config_dir / "settings.json"
    await asyncio.to_thread(write_unknown_dialect, path)
    loaded = await asyncio.to_thread(read_settings, path, PROFILES)  # as splitdesk.app does
    assert loaded.problem and "API dialect (was 'openai-realtime')" in loaded.problem
    window = make_window(loaded.settings)
    state = await run_once(window, "the run after the settings were reset")
    assert all(r.outcome == "done" for r in state.requests)
    assert window.endpoint.settings().speed == 4.0  # the valid fields were kept


@pytest.mark.asyncio
async def test_a_missing_key_is_said_before_anything_is_sent(
    make_window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as listener:  # a server that counts connections
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        monkeypatch.delenv("SPLITDESK_NO_SUCH_KEY", raising=False)
        endpoint = EndpointSettings(
            preset="custom",
            base_url=f"http://127.0.0.1:{port}/v1",
            model="m",
            key_source=KeySource.ENV,
            key_env="SPLITDESK_NO_SUCH_KEY",
        )
        window = make_window(AppSettings(endpoint=endpoint))
        state = await run_once(window, "the run without its key")
        assert_failed_everywhere(window, state, "$SPLITDESK_NO_SUCH_KEY is not set")
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected: not one request was sent


@pytest.mark.asyncio
async def test_proxy_and_ca_problems_show_in_the_panel_before_a_run(
    make_window: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "gone.pem"))
    endpoint = EndpointSettings(preset="custom", base_url="https://127.0.0.1:9/v1", model="m")
    window = make_window(AppSettings(endpoint=endpoint))
    note = window.endpoint.env_note
    await wait_until(lambda: "SSL_CERT_FILE" in note.text(), 10, "the panel names SSL_CERT_FILE")
    assert f"SSL_CERT_FILE={tmp_path / 'gone.pem'} does not exist" in note.text()
    assert not note.isHidden()
    state = await run_once(window, "the run under a broken SSL_CERT_FILE")
    assert_failed_everywhere(window, state, "SSL_CERT_FILE=")
    # a plain-http endpoint on this machine is not concerned: the note goes away
    window.endpoint.base_url.setText("http://127.0.0.1:9/v1")
    window.endpoint.base_url.editingFinished.emit()
    await wait_until(lambda: note.isHidden(), 10, "the SSL_CERT_FILE note is gone for http")


@pytest.mark.asyncio
async def test_the_engine_killed_mid_run_is_restarted_and_the_window_says_so(
    make_window: Any,
) -> None:
    window = make_window(AppSettings())  # speed 1: a run of several seconds
    window.run_button.click()
    await wait_until(
        lambda: (
            window.state is not None
            and bool(window.state.requests)
            and any(r.text_len > 0 for r in window.state.requests)
        ),
        30,
        "the first text of the run",
    )
    finished = asyncio.ensure_future(
        wait_signal(window.runFinished, 20, "the run whose engine was killed")
    )
    old = window.controller.engine.pid
    assert old is not None
    os.kill(old, signal.SIGKILL)
    (state,) = await finished
    assert_failed_everywhere(window, state, ENGINE_DIED)
    assert any(r.text_len > 0 for r in state.requests)  # what arrived is kept
    await wait_until(
        lambda: "was restarted" in window.statusBar().currentMessage(),
        30,
        "the status bar says the engine was restarted",
    )
    assert window.controller.engine.alive and window.controller.engine.pid != old
    window.endpoint.set_settings(FAST)
    window.endpoint.changed.emit()
    state = await run_once(window, "the run on the restarted engine")
    assert all(r.outcome == "done" for r in state.requests)


@pytest.mark.asyncio
async def test_closing_cancels_a_slot_task_still_waiting_on_the_network(
    make_window: Any,
) -> None:
    """ "Test connection" against a server that accepts and never answers, then close: the
    slot's task is cancelled at once (the fixture checks no task is left), not left to
    time out after 15 s or be destroyed pending."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # the kernel completes the handshake; nobody ever reads
        base = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        window = make_window(AppSettings(endpoint=EndpointSettings(preset="custom", base_url=base)))
        window.endpoint.test_button.click()
        await wait_until(lambda: tasks.pending() > 0, 10, "the Test connection task started")
        await asyncio.sleep(0.3)  # it is now waiting for the response
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        window.close()
        await wait_signal(window.closed, 30, "the window closed")
        assert loop.time() - t0 < 3.0
        # (a task's bookkeeping ends a loop turn after it returns: wait for it, briefly)
        await wait_until(lambda: tasks.pending() == 0, 5, "no task is left pending")
