"""``--ca-bundle FILE`` (and the Endpoint panel's CA bundle) that no certificate can be
read from — text that is not PEM, an empty file, a FIFO or device — is refused before
anything is sent: one line and exit 2 from bench and sweep; "Cannot run:" in the window,
whose ``--run --quit`` exits 1 with it. Before, it was found only once requests started:
the same line three times and exit 1. A real bundle still gets through."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import certifi
import pytest
from counting_listener import CountingListener, counting_listener

NOT_PEM = "not a CA bundle: no PEM certificate could be read from it"


@pytest.fixture
def listener() -> Iterator[CountingListener]:
    with counting_listener() as server:
        yield server


def https(listener: CountingListener) -> str:
    return f"https://127.0.0.1:{listener.port}/v1"


def splitdesk(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
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
        },
    )


def bad_bundle(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A CA bundle of ``kind`` and what the refusal says about it."""
    path = tmp_path / f"{kind}.pem"
    if kind == "text":
        path.write_text("my company's CA, pasted from the wiki\n", encoding="utf-8")
        return path, f"{NOT_PEM} (NO_CERTIFICATE_OR_CRL_FOUND)"
    if kind == "empty":
        path.touch()
        return path, f"{NOT_PEM} (NO_CERTIFICATE_OR_CRL_FOUND)"
    if kind == "truncated":  # a certificate cut off after its first line
        path.write_text("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n", encoding="ascii")
        return path, f"{NOT_PEM} (a certificate in it is damaged or cut short)"
    os.mkfifo(path)  # nobody writes: OpenSSL would wait for ever
    return path, "is not a file: give a CA bundle file (PEM) or a folder of certificates"


KINDS = ["text", "empty", "truncated", "fifo"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", ["bench", "sweep"])
def test_a_ca_bundle_without_certificates_is_one_line_and_exit_2_before_sending(
    listener: CountingListener, tmp_path: Path, command: str, kind: str
) -> None:
    bundle, said = bad_bundle(tmp_path, kind)
    extra = ["--max-n", "2"] if command == "sweep" else ["--mode", "parallel", "-q", "a"]
    args = [command, "--endpoint", https(listener), "--model", "ok", "--ca-bundle", str(bundle)]
    proc = splitdesk([*args, *extra], tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"splitdesk {command}: error: --ca-bundle {bundle}: {said}"
    ], proc.stderr[-2000:]
    assert listener.accepted == 0, "nothing is sent"


def test_a_real_bundle_gets_through_to_the_endpoint(
    listener: CountingListener, tmp_path: Path
) -> None:
    args = ["bench", "--endpoint", https(listener), "--model", "ok", "--mode", "parallel"]
    proc = splitdesk([*args, "-q", "a", "--ca-bundle", certifi.where()], tmp_path)
    assert "--ca-bundle" not in proc.stderr, proc.stderr[-2000:]
    assert listener.accepted >= 1, "the bench connected to the endpoint"


def test_the_window_says_cannot_run_and_exits_1_before_sending(
    listener: CountingListener, tmp_path: Path
) -> None:
    bundle, said = bad_bundle(tmp_path, "text")
    config = tmp_path / "config"
    config.mkdir()
    endpoint = {
        "preset": "custom",
        "base_url": https(listener),
        "api": "openai-chat",
        "model": "ok",
        "verify_tls": True,
        "ca_bundle": str(bundle),
    }
    settings = json.dumps({"version": 2, "endpoint": endpoint})
    (config / "settings.json").write_text(settings, encoding="utf-8")
    proc = splitdesk(["--run", "--quit"], tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = [line for line in proc.stderr.splitlines() if "requests failed" in line]
    assert len(summary) == 1, proc.stderr[-3000:]
    assert f"requests failed: CA bundle {bundle}: {said}" in summary[0]
    assert "Traceback" not in proc.stderr
    assert listener.accepted == 0, "nothing is sent"
