"""``splitdesk export`` stopped by Ctrl-C or SIGTERM while an animation renders: exit 130
with one line, the outputs finished so far kept whole, no ``.part`` file, and an older
file at a target not yet written left as it was (as ``bench`` and ``scenarios --export``
stop)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from paths import ROOT

DEMO = ROOT / "resources" / "demos" / "batching.splitdesk.json"


def _wait_for(what: str, done: object, proc: subprocess.Popen[str], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not done():  # type: ignore[operator]
        if proc.poll() is not None:
            raise AssertionError(f"the export ended (status {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.communicate()
            raise AssertionError(f"waited {seconds:.0f} s for {what}")
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stopped_export_keeps_what_it_wrote_and_leaves_nothing_partial(
    sig: signal.Signals, tmp_path: Path
) -> None:
    gif, mp4, webp = tmp_path / "a.gif", tmp_path / "a.mp4", tmp_path / "a.webp"
    mp4.write_bytes(b"an older video")  # a target not yet written when the stop comes
    proc = subprocess.Popen(
        [sys.executable, "-m", "splitdesk", "export", str(DEMO), "--gif", str(gif),
         "--mp4", str(mp4), "--webp", str(webp), "--size", "640x360"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    # the GIF is rendered first; stop while the MP4's frames are being rendered
    _wait_for("the GIF to be written", gif.exists, proc)
    _wait_for("the MP4's temporary file", lambda: list(tmp_path.glob(".a.mp4.*")), proc)
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the export did not exit within 60 s of the signal") from None
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [
        "splitdesk export: stopped; the files written so far are kept"
    ]
    assert f"gif: wrote {gif}" in out and "mp4: wrote" not in out
    with Image.open(gif) as image:  # the finished output, whole
        assert image.n_frames > 100
    assert mp4.read_bytes() == b"an older video"
    assert not webp.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gif", "a.mp4"]  # no .part
