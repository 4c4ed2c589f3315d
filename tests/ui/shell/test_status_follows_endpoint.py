"""The status bar's ready line follows the endpoint: after switching from the built-in
endpoint to a custom one it no longer says the built-in endpoint needs no network."""

from __future__ import annotations

from typing import Any

import pytest

from splitdesk.core.files.settings import AppSettings


@pytest.mark.asyncio
async def test_the_ready_line_follows_a_switch_to_a_custom_endpoint(make_window: Any) -> None:
    window = make_window(AppSettings())
    bar = window.statusBar()
    assert bar.currentMessage() == "Ready. The built-in endpoint needs no network."
    panel = window.endpoint
    panel.preset.activated.emit(panel.preset.findData("vllm"))  # the user picks a preset
    assert panel.settings().preset == "vllm"
    assert "needs no network" not in bar.currentMessage()
    assert bar.currentMessage().startswith("Ready. Endpoint: localhost:8000")
    panel.preset.activated.emit(panel.preset.findData("builtin"))
    assert bar.currentMessage() == "Ready. The built-in endpoint needs no network."
    bar.showMessage("Done.")  # another message is not replaced by the ready line
    panel.preset.activated.emit(panel.preset.findData("vllm"))
    assert bar.currentMessage() == "Done."
