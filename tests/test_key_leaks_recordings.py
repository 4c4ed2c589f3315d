"""The fake-key test extended to recordings: ``splitdesk bench --record`` against servers
that echo the key (in a 401 body, an in-stream error, a malformed event, a truncated
stream) in every dialect writes a recording holding neither the key nor a piece of it,
while the key did go out in the dialect's own header."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

import pytest
from test_key_leaks import (
    FAILURES,
    KEY,
    KEY_ENV,
    KEY_HEADER,
    READ_TIMEOUT,
    WIRES,
    _headers,
    assert_clean,
    serve,
)

from splitdesk.cli.main import main
from splitdesk.core.files.recording import load_recording
from splitdesk.providers import PROVIDERS, get_provider

ECHOING = ["401-echoing-key", "in-stream-error", "malformed-event", "truncated", "429"]


@pytest.mark.parametrize("failure", ECHOING)
@pytest.mark.parametrize("api", sorted(PROVIDERS))
@pytest.mark.asyncio
async def test_a_recording_never_holds_the_key(
    api: str,
    failure: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    spec, wire, provider = FAILURES[failure], WIRES[api], get_provider(api)
    path = tmp_path / "run.splitdesk.json.gz"
    async with serve(spec, wire) as (root, requests):
        base = provider.base_url_for_root(root)
        code = await asyncio.to_thread(
            main,
            [
                "bench",
                "--endpoint",
                f"{base}?api_key={KEY}" if api != "azure-openai" else base,
                "--api",
                api,
                "--model",
                "m",
                "--mode",
                "parallel",
                "-q",
                "q",
                "--api-key-env",
                KEY_ENV,
                "--read-timeout",
                str(READ_TIMEOUT),
                "--record",
                str(path),
            ],
        )
        # the API's requests (bench --record also polls the server's /metrics, keyless)
        sent = [_headers(head) for head, _ in requests if not head.startswith(b"GET /metrics")]
    capsys.readouterr()
    assert code == 1
    text = gzip.decompress(path.read_bytes()).decode()
    assert_clean("the recording", text)
    recording = load_recording(path)  # still a valid recording after masking
    (run,) = recording.runs
    assert run.figures["requests"][0]["outcome"] == "failed"
    name, value = KEY_HEADER[api]
    assert sent and all(h.get(name) == value for h in sent)  # the key went where it belongs
