"""Child processes start the same way installed and frozen (``splitdesk/childproc.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from splitdesk import childproc


def test_installed_children_run_with_python_dash_m_in_safe_path_mode() -> None:
    assert childproc.module_command("splitdesk.core.measure.engine_worker") == [
        sys.executable,
        "-P",
        "-m",
        "splitdesk.core.measure.engine_worker",
    ]
    assert childproc.child_env({"PATH": "/bin"})["PYTHONSAFEPATH"] == "1"


def test_a_splitdesk_not_installed_gives_its_children_its_own_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run from a source folder without an install, the children find the package through
    PYTHONPATH (safe-path mode keeps the working directory off their path)."""
    monkeypatch.setattr(childproc, "_source_root", lambda: "/src/splitdesk-clone")
    env = childproc.child_env({"PYTHONPATH": "/other"})
    assert env["PYTHONPATH"] == f"/src/splitdesk-clone{os.pathsep}/other"
    monkeypatch.setattr(childproc, "_source_root", lambda: None)  # installed: left alone
    assert childproc.child_env({"PYTHONPATH": "/other"})["PYTHONPATH"] == "/other"


@pytest.mark.parametrize("shadow", ["empty folder", "a clone's package"])
def test_children_start_from_a_folder_holding_a_splitdesk_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shadow: str
) -> None:
    """Started from the folder of a clone (a ``splitdesk/`` directory in the working
    directory, as a desktop-menu launch may be), the built-in endpoint answers and the
    engine process starts: neither imports the working directory's folder."""
    from splitdesk.core.measure.engine import EngineProcess
    from splitdesk.sim.launcher import start_sim

    package = tmp_path / "splitdesk"
    package.mkdir()
    if shadow != "empty folder":
        (package / "__init__.py").write_text(
            'raise ImportError("the working directory\'s splitdesk/ was imported")\n'
        )
    monkeypatch.chdir(tmp_path)
    with start_sim(timeout=60.0) as sim:
        reply = httpx.get(f"{sim.openai_base_url}/models", timeout=30.0)
        assert reply.status_code == 200 and reply.json()["data"], reply.text
    engine = EngineProcess()
    try:
        engine.start(timeout=60.0)
        assert engine.alive
    finally:
        engine.stop()


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
