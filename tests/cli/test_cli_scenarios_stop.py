"""``splitdesk scenarios --export DIR``: a stop (Ctrl-C, or SIGTERM: the window's Cancel)
while the scenes are still *running* on the built-in endpoint exits 130 with the one
"stopped" line, keeping the recordings of the scenes that finished; a size, rate or
format the clips cannot have is refused before any scene runs (exit 2, one line)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from splitdesk.cli.main import main
from splitdesk.core.files.recording import load_recording


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux's /proc; the built-in endpoint is one)."""
    tasks = Path(f"/proc/{pid}/task")
    found: list[int] = []
    for task in tasks.iterdir() if tasks.exists() else []:
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _talk(folder: Path) -> None:
    folder.mkdir()
    (folder / "a-quick.toml").write_text(
        'version = 1\ntitle = "Quick"\ncaption = "Short."\nquestions = "three-short"\n'
        '[run]\nmode = "parallel"\nmax_tokens = 10\n[endpoint]\nprofile = "batching"\n'
        "[endpoint.params]\nspeed = 8\n",
        encoding="utf-8",
    )
    (folder / "b-slow.toml").write_text(  # about a minute at its own pace
        'version = 1\ntitle = "Slow"\ncaption = "Long."\nquestions = "everyday-five"\n'
        '[run]\nmode = "side-by-side"\nmax_tokens = 2000\n[endpoint]\nprofile = "batching"\n',
        encoding="utf-8",
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_while_a_scene_runs_exits_130_and_keeps_the_finished_runs(
    sig: signal.Signals, tmp_path: Path
) -> None:
    _talk(tmp_path / "talk")
    out = tmp_path / "clips"
    proc = subprocess.Popen(
        [sys.executable, "-m", "splitdesk", "scenarios", "--export", str(out), "--talk",
         str(tmp_path / "talk"), "--size", "320x180", "--fps", "5", "--formats", "gif"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )  # fmt: skip
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while "scene 2/2 b-slow: running" not in (line := proc.stderr.readline()):
        assert line, f"the export ended before scene 2 ran (status {proc.wait()})"
        assert time.monotonic() < deadline, "scene 2 did not start within 120 s"
    # the second scene's bench has started its built-in endpoint (a child process) and
    # handles the signals itself from then on: the case that exited 1 before
    while not _children(proc.pid):
        assert proc.poll() is None, "the export ended while scene 2 was to run"
        assert time.monotonic() < deadline, "scene 2's built-in endpoint did not start"
        time.sleep(0.02)
    time.sleep(1.0)  # its event loop installs the handlers right after the endpoint is up
    proc.send_signal(sig)
    try:
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the export did not exit within 60 s of the signal") from None
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines() == [
        "splitdesk scenarios: stopped; the files written so far are kept"
    ]
    kept = out / "01-a-quick.splitdesk.json.gz"
    assert sorted(p.name for p in out.iterdir()) == [kept.name]  # nothing of the stopped run
    assert f"recording: wrote {kept}" in stdout
    assert load_recording(kept).title == "Quick"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--formats", "gif", "--fps", "1000"], "--fps 1000: a GIF takes 1-50 frames"),
        (["--formats", "webp", "--fps", "61"], "--fps 61: an animation takes 1-60 frames"),
        (["--formats", "mp4", "--size", "321x180"], "--size 321x180: an MP4 (H.264) needs even"),
        (["--formats", "gif,nope"], "--formats gif,nope: each of"),
    ],
)
def test_clip_options_are_checked_before_any_scene_runs(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "clips"
    code = main(["scenarios", "--export", str(out), "--only", "slow-network", *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"splitdesk scenarios: error: {message}")
    assert "running" not in err  # said before the scene ran
    assert not out.exists() or list(out.iterdir()) == []


def test_export_shares_the_clip_option_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``splitdesk export`` says the same for the same rate (one check, not two)."""
    from paths import ROOT

    demo = ROOT / "resources" / "demos" / "batching.splitdesk.json"
    assert main(["export", str(demo), "--gif", str(tmp_path / "a.gif"), "--fps", "1000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("splitdesk export: error: --fps 1000: a GIF takes 1-50 frames")
    assert main(["export", str(demo), "--mp4", str(tmp_path / "a.mp4"), "--fps", "0.5"]) == 2
    assert "--fps 0.5: an animation takes 1-60 frames" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
