"""The fake-key test extended to the window's recordings: a run against an endpoint that
echoes the API key (in its answers) with the key in a custom header too is auto-saved and
saved by hand; neither file, nor anything else in the auto-save folder, holds the key or
a piece of it, nor the custom header's value."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.files.recording import autosave_dir, load_recording
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings, KeySource
from splitdesk.core.run.events import TextReceived
from streamserver import ReplayServer

KEY = "sk-LEAKCHECK-0123456789abcdef"
HEAD = KEY[:8]
HEADER_SECRET = "team-SECRET-42ffee"


def _sse(obj: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def _chunk(text: str) -> bytes:
    return _sse({"choices": [{"index": 0, "delta": {"content": text}}]})


BODY = [
    _chunk("Answer 1: your key is "),
    _chunk(KEY),
    _chunk(" and the header "),
    _chunk(HEADER_SECRET[:9]),
    _chunk("\nAnswer 2: fine."),
    _sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    b"data: [DONE]\n\n",
]


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


@pytest.mark.asyncio
async def test_saved_and_auto_saved_recordings_hold_no_key(
    make_window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPLITDESK_LEAKCHECK_KEY", KEY)
    async with ReplayServer(200, {"content-type": "text/event-stream"}, BODY, pause=0.01) as srv:
        endpoint = EndpointSettings(
            preset="custom",
            base_url=srv.url + "/v1",
            model="m",
            key_source=KeySource.ENV,
            key_env="SPLITDESK_LEAKCHECK_KEY",
            headers={"X-Team-Token": HEADER_SECRET},
        )
        window = make_window(AppSettings(endpoint=endpoint))
        ui = window.recordings
        saved: asyncio.Future[Path] = asyncio.get_running_loop().create_future()
        ui.autosaved.connect(lambda p: saved.done() or saved.set_result(p))
        window.run_button.click()
        (state,) = await wait_signal(window.runFinished, 30)
        auto = await asyncio.wait_for(saved, 10)
        assert any(KEY.encode() in head for head, _ in srv.requests)  # the key was sent
    # the answer on screen is what the server sent (a model's output is shown as is) …
    assert any(KEY in r.text for r in state.requests)
    # … but no file keeps it
    recording = ui.current_recording()
    assert recording is not None
    by_hand = tmp_path / "by-hand.splitdesk.json"
    await ui.save_to(recording, by_hand)
    files = [p for p in autosave_dir().rglob("*") if p.is_file()]
    assert auto in files
    for path in [*files, by_hand]:
        text = _text(path)
        assert KEY not in text and HEAD not in text, f"the key leaked into {path}"
        assert HEADER_SECRET not in text, f"a header value leaked into {path}"
    loaded = load_recording(auto)
    assert loaded.endpoint.header_names == ["X-Team-Token"]
    answers = "".join(e.text for e in loaded.runs[0].events if isinstance(e, TextReceived))
    assert "your key is ***" in answers
