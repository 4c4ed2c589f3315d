"""``splitdesk bench --record FILE`` writes the window's recording format: one run per
repeat holding every mode as its phases, whose figures rebuilt from the events are the
bench JSON's figures; and
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
from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.analyse.metrics import group_metrics, request_figures
from splitdesk.core.files.recording import load_recording, rebuild_state

FIXTURE = FIXTURES / "recordings" / "v1.splitdesk.json"


def test_bench_record_of_mode_all_replays_the_whole_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run holding every mode as its phases (combined, parallel, sequential) on one
    clock, with the set's titles, the predicted requests and the server's samples: its
    figures are the bench JSON's, its diagnosis the bench's."""
    questions = tmp_path / "two.toml"
    questions.write_text(
        'title = "two"\n[[questions]]\ntext = "What is 2+2?"\ntitle = "Sum"\n'
        '[[questions]]\ntext = "Name a colour."\ntitle = "Colour"\n',
        encoding="utf-8",
    )
    path = tmp_path / "bench.splitdesk.json.gz"
    code = main(
        [
            "bench",
            "--mode",
            "all",
            "--questions",
            str(questions),
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
    assert [q.title for q in recording.questions] == ["Sum", "Colour"]
    assert recording.question_texts == ["What is 2+2?", "Name a colour."]
    assert recording.endpoint.profile == "batching"
    (run,) = recording.runs  # one repeat: one run, its modes as phases
    assert run.mode == "one-after-another" and recording.settings.with_sequential
    state = rebuild_state(run)
    assert [r.group for r in state.requests] == ["combined"] + ["parallel"] * 2 + ["sequential"] * 2
    assert [r.phase for r in state.requests] == [0, 1, 1, 2, 2]
    for bench_run in doc["runs"]:
        mine = [r for r in state.requests if r.group == bench_run["mode"]]
        g = group_metrics(mine, bench_run["mode"], 2)
        assert g.makespan_s is not None
        assert round(g.makespan_s, 6) == pytest.approx(bench_run["wall_s"], abs=2e-6)
        assert [r.text for r in mine] == [r["text"] for r in bench_run["requests"]]
        # each warm connection's set-up on the one clock too: the waits bench measured
        # (a later phase's connection start left on its own clock made up waits of 4-5 s)
        waits = [request_figures(r).connection_wait_s for r in mine]
        assert all(w is not None for w in waits)
        assert waits == pytest.approx(
            [r["connection_wait_s"] for r in bench_run["requests"]], abs=2e-6
        )
    # one clock: each way after the one before
    ends = {
        g: max(r.t_end or 0.0 for r in state.requests if r.group == g)
        for g in ("combined", "parallel")
    }
    sends = {
        g: min(r.t_send or 0.0 for r in state.requests if r.group == g)
        for g in ("parallel", "sequential")
    }
    assert ends["combined"] <= sends["parallel"] and ends["parallel"] <= sends["sequential"]
    diagnosis = diagnose_state(state)
    assert diagnosis.text == doc["summary"]["diagnosis"]["text"]
    assert not any("connections waited" in n.text for n in diagnosis.notes)
    assert run.predictions is not None and len(run.predictions) == len(state.requests)
    assert run.server is not None and run.server.family == "splitdesk"
    # the server ran the two parallel requests together: a batch of 2 in that phase
    batch_two = [t for t, n in zip(run.server.t_s, run.server.running, strict=True) if n >= 2]
    assert batch_two and all(
        sends["parallel"] - 0.3 <= t <= ends["parallel"] + 0.3 for t in batch_two
    )


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
        "splitdesk (0.1.0) reads (format 3), and the part it knows cannot be shown "
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
