"""The fake-key test extended to exports: a run against a server that echoes the key (a
401 body, an in-stream error) is recorded with ``splitdesk bench --record``, then exported
with ``splitdesk export`` in every format (CSV, bench JSON, Perfetto trace, timeline PNG and
SVG, window PNG, GIF, MP4) in a fresh process: no file holds the key or a piece of it.
Pictures and videos are checked as bytes (metadata, embedded text); what is drawn as
pixels is the window's own text, checked by the window's key tests."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_key_leaks import FAILURES, KEY, KEY_ENV, READ_TIMEOUT, WIRES, assert_clean, serve

from splitdesk.cli.main import main
from splitdesk.providers import get_provider

OUTPUTS = {
    "--csv": "f.csv",
    "--json": "f.json",
    "--trace": "f.trace.json",
    "--png": "t.png",
    "--svg": "t.svg",
    "--window-png": "w.png",
    "--gif": "a.gif",
    "--mp4": "a.mp4",
    "--webp": "a.webp",
}


@pytest.mark.parametrize("failure", ["401-echoing-key", "in-stream-error"])
@pytest.mark.asyncio
async def test_no_export_holds_the_key(
    failure: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    api = "openai-chat"
    monkeypatch.setenv(KEY_ENV, KEY)
    spec, wire, provider = FAILURES[failure], WIRES[api], get_provider(api)
    recording = tmp_path / "run.splitdesk.json"
    async with serve(spec, wire) as (root, _requests):
        base = provider.base_url_for_root(root)
        code = await asyncio.to_thread(
            main,
            [
                "bench", "--endpoint", f"{base}?api_key={KEY}", "--api", api, "--model", "m",
                "--mode", "parallel", "-q", "q", "--api-key-env", KEY_ENV,
                "--read-timeout", str(READ_TIMEOUT), "--record", str(recording),
            ],
        )  # fmt: skip
    capsys.readouterr()
    assert code == 1 and recording.exists()
    args = [sys.executable, "-m", "splitdesk", "export", str(recording), "--size", "320x240",
            "--fps", "10"]  # fmt: skip
    for flag, name in OUTPUTS.items():
        args += [flag, str(tmp_path / name)]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", KEY_ENV: KEY}
    done = await asyncio.to_thread(
        subprocess.run, args, capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert_clean("the export command's output", done.stdout + done.stderr)
    for name in OUTPUTS.values():
        data = (tmp_path / name).read_bytes()
        assert data, name
        assert_clean(name, data.decode("latin-1"))
