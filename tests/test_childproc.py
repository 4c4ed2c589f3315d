"""Child processes start the same way installed and frozen (``splitdesk/childproc.py``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from splitdesk import childproc


def test_installed_children_run_with_python_dash_m() -> None:
    assert childproc.module_command("splitdesk.core.measure.engine_worker") == [
        sys.executable,
        "-m",
        "splitdesk.core.measure.engine_worker",
    ]


def test_frozen_children_run_through_the_bundle_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/splitdesk/splitdesk")
    assert childproc.module_command("splitdesk") == ["/opt/splitdesk/splitdesk"]
    assert childproc.module_command("splitdesk.core.measure.engine_worker") == [
        "/opt/splitdesk/splitdesk",
        "_engine",
    ]
    with pytest.raises(ValueError, match="cannot run module 'json'"):
        childproc.module_command("json")


def test_the_hidden_engine_command_serves_the_engine_protocol() -> None:
    """``splitdesk _engine`` (what a frozen bundle runs) is the engine worker: it says it
    is ready and exits when its stdin closes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "splitdesk", childproc.ENGINE_COMMAND],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        first = proc.stdout.readline()
        assert json.loads(first) == {"ready": True}, proc.stderr.read() if proc.stderr else ""
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
