"""The app as a process: closing it mid-run, or killing it, leaves nothing behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cputime import RunQueueMeter


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(p) for p in (task / "children").read_text().split()]
    return out


def cmdline(pid: int) -> bytes:
    """The command line of ``pid``; empty once it has exited (short-lived helpers such as
    the ``ldconfig`` ctypes runs come and go between listing and reading)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_app(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    app = subprocess.Popen(
        [sys.executable, "-m", "splitdesk", "--run", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            sims = [c for c in children(app.pid) if b"sim" in cmdline(c)]
            if sims:
                time.sleep(1.5)  # well into the run: streams are open
                return app, sims[0]
            time.sleep(0.05)
        pytest.fail("the app never started its built-in endpoint within 20 s")
    except BaseException:
        app.kill()  # a failed start leaves no process behind for the next test to trip on
        app.communicate()
        raise


def test_closing_mid_run_exits_cleanly_and_stops_the_endpoint(tmp_path: Path) -> None:
    app, sim = start_app(tmp_path)
    # The bound is on the app's own time: the wall clock minus the time the app and its
    # children (which it stops on the way out) waited for a CPU held by other processes.
    with RunQueueMeter(app.pid, descendants=True) as cpu:
        t0 = time.monotonic()
        app.send_signal(signal.SIGTERM)  # the window closes as if the user closed it
        code = app.wait(10)
        took = time.monotonic() - t0
    _, err = app.communicate()
    assert code == 0, err
    own = took - cpu.waited_s
    assert own < 2.0, f"exit took {own:.2f} s of the app's own time ({took:.2f} s wall clock)"
    assert not alive(sim)
    assert "Traceback" not in err
    assert (tmp_path / "settings.json").exists()  # settings were saved on the way out


def test_killed_app_takes_its_endpoint_along(tmp_path: Path) -> None:
    app, sim = start_app(tmp_path)
    app.kill()
    app.wait(5)
    app.communicate()
    deadline = time.monotonic() + 3
    while alive(sim) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(sim)


def test_screenshot_after_a_run_then_quit(tmp_path: Path) -> None:
    """``--run --screenshot PATH --quit``: the docs' and CI's way to see the window."""
    shot = tmp_path / "window.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "splitdesk",
            "--screenshot",
            str(shot),
            "--quit",
            "--speed",
            "6",
            "--size",
            "1280x720",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"screenshot saved to {shot}" in proc.stdout
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 720)  # --size: a 720p projector
    saved = json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))
    assert saved["window_size"] is None  # --size is for this session only


def test_a_bad_window_size_is_refused_in_one_line(tmp_path: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "--size", "1280by720"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "splitdesk: error: argument --size: '1280by720': expected WIDTHxHEIGHT, e.g. 1280x720 "
        "(see splitdesk --help)"
    ]


def test_a_run_that_failed_says_why_on_stderr_when_the_window_quits(tmp_path: Path) -> None:
    """``--run --quit`` against an endpoint where nothing listens: exit 1 and one line on
    stderr with the cause, as ``bench`` says it (the window closed by itself in silence)."""
    with socket.socket() as s:  # a free port: nothing listens on it once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "splitdesk",
            "--endpoint",
            f"http://127.0.0.1:{port}/v1",
            "--model",
            "x",
            "--run",
            "--quit",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("splitdesk: ")]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("splitdesk: 6 of 6 requests failed: ")
    assert "connection refused" in lines[0].lower() or "nothing listens" in lines[0]
    assert "Traceback" not in proc.stderr


def test_refused_panes_at_projector_size_settle_and_the_window_quits(tmp_path: Path) -> None:
    """The rate-limited profile at 1280×720 ×1.5 (four of five parallel requests refused):
    the grid's layout settles. Its viewport margin had sent the grid a resize event that
    laid it out again, whose margin sent another, without end: a RecursionError, then a
    segmentation fault, the run lost (exit -11, no screenshot)."""
    shot = tmp_path / "window.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "splitdesk", "--run", "--quit", "--screenshot", str(shot)),
            *("--size", "1280x720", "--scale", "1.5", "--profile", "rate-limited"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]  # refused requests: a failed run
    assert "4 of 6 requests failed: HTTP 429" in proc.stderr
    assert "Recursion" not in proc.stderr and "Traceback" not in proc.stderr
    assert f"screenshot saved to {shot}" in proc.stdout


def test_run_and_quit_with_one_question_says_why_and_exits_2(tmp_path: Path) -> None:
    """``--run --quit`` with one question: the window says why on stderr and closes, exit
    2 (bad input, as bench says it). It had waited for a run that never started, forever."""
    questions = tmp_path / "one.txt"
    questions.write_text("Only one?\n", encoding="utf-8")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "--questions", str(questions), "--run", "--quit"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("splitdesk: ")]
    assert lines == [
        "splitdesk: cannot run: Add at least 2 questions to compare one combined request "
        "with parallel ones (1 now)."
    ], proc.stderr[-2000:]
