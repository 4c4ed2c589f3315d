"""An API key or a custom header that HTTP cannot carry (a character outside ASCII, a line
break inside it) is refused before anything is sent, in one line that never shows the key
or the header's value: ``bench`` and ``sweep`` exit 2; the window says it where it says
every "Cannot run:" problem, and ``--run --quit`` exits 1 with that line. Before, httpx
raised ``UnicodeEncodeError`` inside the first request: a traceback from the bench, "run
failed unexpectedly" and exit 0 from the window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from counting_listener import CountingListener, counting_listener

from splitdesk.providers.base import header_problem

SECRET = "sk-caf\u00e9\u201csecret"  # pasted out of a document: é and a typographic quote
NON_ASCII = "holds a character outside ASCII"


@pytest.fixture
def listener() -> Iterator[CountingListener]:
    with counting_listener() as server:
        yield server


def splitdesk(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "splitdesk", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "SPLITDESK_CONFIG_DIR": str(tmp_path / "config"),
            **env,
        },
    )


@pytest.mark.parametrize(
    ("key", "words"),
    [(SECRET, NON_ASCII), ("sk-one\ntwo", "holds a control character")],
)
@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_a_key_http_cannot_carry_is_one_line_and_exit_2_before_anything_is_sent(
    listener: CountingListener, tmp_path: Path, command: str, key: str, words: str
) -> None:
    extra = ["--max-n", "2"] if command == "sweep" else ["--mode", "parallel", "-q", "a"]
    proc = splitdesk(
        [command, "--endpoint", listener.url, "--model", "ok", "--api-key-env", "K1", *extra],
        tmp_path,
        K1=key,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        f"splitdesk {command}: error: $K1: the API key {words}"
        + (
            " (a typographic quote or an accented letter?)"
            if words == NON_ASCII
            else " (a line break?)"
        )
        + ": an HTTP header carries visible ASCII only"
    ], proc.stderr
    assert "caf" not in proc.stderr + proc.stdout and "secret" not in proc.stderr
    assert listener.accepted == 0, "nothing is sent"


def test_the_dialects_own_key_variable_is_checked_too(
    listener: CountingListener, tmp_path: Path
) -> None:
    proc = splitdesk(
        ["bench", "--endpoint", listener.url, "--model", "ok", "--mode", "parallel", "-q", "a"],
        tmp_path,
        OPENAI_API_KEY=SECRET,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().startswith(
        f"splitdesk bench: error: $OPENAI_API_KEY: the API key {NON_ASCII}"
    )
    assert listener.accepted == 0


def _window_run(
    listener: CountingListener, tmp_path: Path, headers: dict[str, str], **env: str
) -> subprocess.CompletedProcess[str]:
    """``splitdesk --run --quit`` with the endpoint (and its headers) saved in settings, as
    the Endpoint panel keeps them."""
    config = tmp_path / "config"
    config.mkdir()
    endpoint = {
        "preset": "custom",
        "base_url": listener.url,
        "api": "openai-chat",
        "model": "ok",
        "key_source": "env" if env else "none",
        "key_env": "K1" if env else "",
        "headers": headers,
    }
    settings = {"version": 2, "endpoint": endpoint}
    (config / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return splitdesk(["--run", "--quit"], tmp_path, **env)


@pytest.mark.parametrize(
    ("headers", "env", "said"),
    [
        ({}, {"K1": SECRET}, f"the API key {NON_ASCII}"),
        ({"X-Note": "caf\u00e9"}, {}, f"header X-Note: its value {NON_ASCII}"),
        (
            {"X-Trace": "a\r\nInjected: 1"},
            {},
            "header X-Trace: its value holds a control character",
        ),
        ({"Bad Name": "1"}, {}, "header name 'Bad Name' must be ASCII letters"),
    ],
)
def test_the_window_says_cannot_run_and_exits_1_before_anything_is_sent(
    listener: CountingListener,
    tmp_path: Path,
    headers: dict[str, str],
    env: dict[str, str],
    said: str,
) -> None:
    proc = _window_run(listener, tmp_path, headers, **env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = [line for line in proc.stderr.splitlines() if "requests failed" in line]
    assert len(summary) == 1, proc.stderr[-3000:]
    assert f"requests failed: {said}" in summary[0]
    assert "Traceback" not in proc.stderr and "unexpectedly" not in proc.stderr
    assert (
        "caf" not in proc.stderr and "secret" not in proc.stderr and "Injected" not in proc.stderr
    )
    assert listener.accepted == 0, "nothing is sent"


def test_header_problem_passes_what_http_carries() -> None:
    assert header_problem("sk-proj-AZaz09_-.~+/=", {"X-Title": "My app (v2)\tok"}) is None
    assert header_problem(None, {}) is None
    problem = header_problem(None, {"Authorization": "Bearer t\u00f6ken"})
    assert problem is not None and "t\u00f6ken" not in problem and "Authorization" in problem
