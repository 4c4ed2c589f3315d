"""``splitdesk scenarios``: the list with captions, and checking a file of one's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from splitdesk.cli.main import main
from splitdesk.core.files.scenarios import builtin_scenarios


def test_lists_every_scenario_with_its_caption(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    for k, (name, s) in enumerate(builtin_scenarios().items(), start=1):
        assert f"{k}. {name} — {s.title}" in out
        assert f"   {s.caption}\n" in out
    assert "2 questions, dependent, builtin:batching (rtt=0.8)" in out


def test_check_names_the_bad_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "talk.toml"
    path.write_text(
        'version = 1\ntitle = "T"\ncaption = "C"\nquestions = "three-short"\n'
        '[run]\nretry_429 = "many"\n',
        encoding="utf-8",
    )
    assert main(["scenarios", "--check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("splitdesk scenarios: error: talk.toml: ")
    assert "`run.retry_429`" in err[0]
    path.write_text(path.read_text().replace('"many"', "2"), encoding="utf-8")
    assert main(["scenarios", "--check", str(path)]) == 0
    assert "3 questions, one-after-another, builtin:batching" in capsys.readouterr().out


def test_export_writes_clips_of_every_scene_of_a_talk(tmp_path: Path) -> None:
    """``splitdesk scenarios --export DIR --talk FOLDER``: a scenario that replays a
    recording and one that runs on the built-in endpoint each give an MP4, a GIF and a
    poster PNG at the size asked, named in the talk's order, with no Qt warning."""
    import subprocess
    import sys

    import imageio_ffmpeg
    from PIL import Image

    from paths import ROOT

    talk = tmp_path / "talk"
    talk.mkdir()
    demo = ROOT / "resources" / "demos" / "single-slot.splitdesk.json"
    (talk / "a-replay.toml").write_text(
        'version = 1\ntitle = "Replay"\ncaption = "One at a time."\nquestions = "everyday-five"\n'
        f'[endpoint]\nrecording = "{demo}"\n',
        encoding="utf-8",
    )
    (talk / "b-run.toml").write_text(
        'version = 1\ntitle = "Two short"\ncaption = "Batching."\nquestions = "three-short"\n'
        '[run]\nmode = "side-by-side"\nmax_tokens = 20\n[endpoint]\nprofile = "batching"\n'
        "[endpoint.params]\nspeed = 8\n",
        encoding="utf-8",
    )
    out = tmp_path / "clips"
    args = ["--export", str(out), "--talk", str(talk), "--size", "320x180", "--fps", "10"]
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "scenarios", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "propagateSizeHints" not in proc.stderr and "Warning" not in proc.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        f"{k:02d}-{n}.{kind}"
        for k, n in ((1, "a-replay"), (2, "b-run"))
        for kind in ("gif", "mp4", "png")
    ]
    for k, name in ((1, "a-replay"), (2, "b-run")):
        with Image.open(out / f"{k:02d}-{name}.png") as poster:
            assert poster.size == (320, 180)
        with Image.open(out / f"{k:02d}-{name}.gif") as gif:
            assert gif.size == (320, 180) and gif.n_frames > 1
        frames, secs = imageio_ffmpeg.count_frames_and_secs(str(out / f"{k:02d}-{name}.mp4"))
        with Image.open(out / f"{k:02d}-{name}.gif") as gif:
            assert frames == gif.n_frames
        assert secs == pytest.approx(frames / 10, abs=0.2)  # plays at the recorded pace
    assert proc.stdout.count("mp4: wrote") == 2 and proc.stdout.count("png: wrote") == 2
    assert "scene 2/2 b-run: running “Two short” on the built-in endpoint" in proc.stderr


def test_export_refuses_a_bad_folder_before_running_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["scenarios", "--export", str(blocker)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"splitdesk scenarios: error: --export {blocker}: is a file; give a folder"]
    assert main(["scenarios", "--export", str(tmp_path / "o"), "--only", "nope"]) == 2
    assert "--only nope: unknown" in capsys.readouterr().err
