"""The window says which endpoint it talks to: the toolbar names a remote endpoint's host
and model, the status line never claims the built-in endpoint when another is chosen, and
the wait before the first request says what it waits for."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def headlines_set_by_clear(window: Any) -> list[str]:
    """Every text the summary strip is cleared to from now on (observed, then passed on)."""
    shown: list[str] = []
    clear = window.stage.summary.clear

    def record(text: str = "") -> None:
        shown.append(text)
        clear(text)

    window.stage.summary.clear = record
    return shown


@pytest.mark.asyncio
async def test_a_chosen_endpoint_is_named_by_host_and_model(make_window: Any) -> None:
    port = free_port()
    endpoint = EndpointSettings(
        preset="custom", base_url=f"http://127.0.0.1:{port}/v1", model="llama-3-8b"
    )
    window = make_window(AppSettings(endpoint=endpoint))
    assert f"127.0.0.1:{port} · llama-3-8b" in window.endpoint_button.text()
    status = window.statusBar().currentMessage()
    assert "built-in" not in status.lower()
    assert f"127.0.0.1:{port}" in status
    shown = headlines_set_by_clear(window)
    window.run_button.click()
    await wait_signal(window.runFinished, 20)
    assert f"connecting to 127.0.0.1:{port}…" in shown
    assert not any("built-in" in text for text in shown)


@pytest.mark.asyncio
async def test_the_first_run_says_it_starts_the_built_in_endpoint(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    assert window.endpoint_button.text().startswith("Built-in · batching")
    assert "built-in endpoint" in window.statusBar().currentMessage()
    shown = headlines_set_by_clear(window)
    window.run_button.click()
    await wait_signal(window.runFinished, 30)
    assert shown[0] == "starting the built-in endpoint…"
    # a second run reuses the running endpoint: nothing to start
    shown.clear()
    window.run_button.click()
    await wait_signal(window.runFinished, 30)
    assert "starting the built-in endpoint…" not in shown
