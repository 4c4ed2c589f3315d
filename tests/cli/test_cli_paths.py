"""Every path an option names is checked before anything is sent or rendered: one line,
exit status 2, within seconds — not after a whole run (which then exited 0 or 1 without
its file). And two outputs may not name one file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paths import ROOT

DEMO = ROOT / "resources" / "demos" / "batching.splitdesk.json"


def splitdesk(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"QT_QPA_PLATFORM": "offscreen", **os.environ},
    )
    return proc, time.monotonic() - t0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["bench", "--record", "{tmp}/missing/run.splitdesk.json"], "--record"),
        (["bench", "--record", "{tmp}"], "is a folder"),
        (["bench", "--json", "{tmp}/missing/out.json"], "does not exist"),
        (
            [
                "bench",
                "--endpoint",
                "https://127.0.0.1:9/v1",
                "--ca-bundle",
                "{tmp}/no-such-ca.pem",
            ],
            "--ca-bundle {tmp}/no-such-ca.pem: does not exist",
        ),
        (
            ["bench", "--json", "{tmp}/same.json", "--record", "{tmp}/./same.json"],
            "--json and --record name one file",
        ),
        (["sweep", "--max-n", "2", "--json", "{tmp}/missing/sweep.json"], "does not exist"),
        (["--screenshot", "{tmp}/missing/shot.png", "--quit"], "--screenshot"),
        (["--quit"], "--quit closes the app after a run: add --run"),  # it never ended
        # a device is no file to rename a saved one over (as root, /dev/null was replaced)
        (["bench", "--json", "/dev/null"], "--json /dev/null: is a device, not a file"),
        (["--run", "--screenshot", "/dev/null", "--quit"], "is a device, not a file"),
        (["bench", "--record", "-"], "--record -: a recording is a file"),  # wrote "./-"
        (["replay", str(DEMO), "--screenshot", "{tmp}/missing/shot.png"], "--screenshot"),
        (["export", str(DEMO), "--csv", "{tmp}/a.csv", "--json", "{tmp}/a.csv"], "same file"),
        (["export", str(DEMO), "--png", "{tmp}/t.png", "--window-png", "{tmp}/t.png"], "same"),
        (
            ["export", "{tmp}/demo.json", "--json", "{tmp}/demo.json"],
            "the recording names the same",
        ),
    ],
)
def test_a_path_that_cannot_work_is_refused_before_anything_runs(
    tmp_path: Path, args: list[str], words: str
) -> None:
    source = tmp_path / "demo.json"  # a copy: an export over its own input must not touch it
    source.write_bytes(DEMO.read_bytes())
    given = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc, took = splitdesk(*given)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert words.replace("{tmp}", str(tmp_path)) in lines[0]
    assert "running" not in proc.stderr and "Traceback" not in proc.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != source]
    assert written == [], "nothing written"
    assert source.read_bytes() == DEMO.read_bytes()
    assert took < 60
