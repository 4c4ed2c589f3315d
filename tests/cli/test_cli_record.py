"""``splitdesk bench --record FILE`` writes the window's recording format: one run per mode
and repeat, whose figures rebuilt from the events are the bench JSON's figures; and
``splitdesk replay`` checks a file before any window opens, then replays it headless
to a screenshot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paths import FIXTURES
from splitdesk.cli.main import main
from splitdesk.core.analyse.metrics import group_metrics
from splitdesk.core.files.recording import load_recording, rebuild_state

FIXTURE = FIXTURES / "recordings" / "v1.splitdesk.json"


def test_bench_record_holds_every_run_with_the_bench_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bench.splitdesk.json.gz"
    code = main(
        [
            "bench",
            "--mode",
            "all",
            "-q",
            "What is 2+2?",
            "-q",
            "Name a colour.",
            "--sim-param",
            "speed=4",
            "--record",
            str(path),
            "--json",
            "-",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert path.read_bytes()[:2] == b"\x1f\x8b"  # gzip, as the name asks
    recording = load_recording(path)
    assert recording.source == "bench"
    assert [r.mode for r in recording.runs] == ["combined", "parallel", "sequential"]
    assert recording.question_texts == ["What is 2+2?", "Name a colour."]
    assert recording.endpoint.profile == "batching"
    for run, bench_run in zip(recording.runs, doc["runs"], strict=True):
        state = rebuild_state(run)
        g = group_metrics(state.requests, run.mode, 2)
        assert g.makespan_s is not None
        assert round(g.makespan_s, 6) == bench_run["wall_s"]
        texts = [r.text for r in state.requests]
        assert texts == [r["text"] for r in bench_run["requests"]]


def test_replay_refuses_a_bad_file_before_any_window(tmp_path: Path) -> None:
    bad = tmp_path / "bad.splitdesk.json"
    bad.write_text('{"format": "splitdesk-recording", "version": 99}')
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "replay", str(bad)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"splitdesk replay: error: {bad}: version: recording format 99 is newer than this "
        "splitdesk (0.1.0) reads (format 2), and the part it knows cannot be shown "
        "(created_at: Field required (and 5 more problem(s))); update splitdesk to open it"
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "replay", str(FIXTURE), "--speed", "9"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "0.25-4" in proc.stderr


def test_replay_to_a_screenshot_and_quit(tmp_path: Path) -> None:
    shot = tmp_path / "replay.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPLITDESK_CONFIG_DIR=str(tmp_path))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "splitdesk",
            "replay",
            str(FIXTURE),
            "--speed",
            "4",
            "--screenshot",
            str(shot),
            "--quit",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"screenshot saved to {shot}" in proc.stdout
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
