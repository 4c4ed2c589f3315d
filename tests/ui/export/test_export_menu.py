"""File → Export in the window: every entry is in the menu; the replay shown exports its
timeline (PNG at 2×, SVG), the window, figures, trace and a GIF under a progress dialog
whose Cancel stops the render and leaves no file; the window stays usable throughout."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from PySide6.QtGui import QImage
from ui.conftest import wait_signal, wait_until

from paths import ROOT
from splitdesk.core.files.recording import load_recording
from splitdesk.core.files.settings import AppSettings

SHORT = ROOT / "tests" / "fixtures" / "recordings" / "v1.splitdesk.json"  # 0.21 s
DEMO = ROOT / "resources" / "demos" / "batching.splitdesk.json"


@pytest.mark.asyncio
async def test_export_menu_writes_every_kind(make_window: Any, tmp_path: Path) -> None:
    window = make_window(AppSettings())
    menu = window.exports
    assert [a.text() for a in menu.menu.actions() if not a.isSeparator()] == [
        "Timeline as PNG (2×)…",
        "Timeline as SVG…",
        "Stage as PNG (2×): what the audience sees…",
        "Figures as CSV…",
        "Figures as JSON (bench document)…",
        "Trace for Perfetto (JSON)…",
        "Animation as GIF (size, frame rate)…",
        "Animation as MP4 (size, frame rate)…",
        "Animation as WebP, for the web (size, frame rate)…",
        "Clips of the talk for slides (every scenario)…",
    ]
    recording = load_recording(SHORT)
    assert window.recordings.show_recording(recording)
    driver = window.recordings.replay
    assert driver.player is not None
    driver.seek(driver.player.duration)

    plot = window.stage.timeline.plot.getPlotItem().sceneBoundingRect()  # drawn at once, as now
    await menu.export_timeline_png(tmp_path / "t.png")
    image = QImage(str(tmp_path / "t.png"))
    assert (image.width(), image.height()) == (round(plot.width() * 2), round(plot.height() * 2))
    await menu.export_timeline_svg(tmp_path / "t.svg")
    assert b"<svg" in (tmp_path / "t.svg").read_bytes()
    await menu.export_window_png(tmp_path / "w.png")
    stage_png = QImage(str(tmp_path / "w.png"))  # the stage alone: no menus, bars or sidebar
    assert (stage_png.width(), stage_png.height()) == (
        window.stage.width() * 2,
        window.stage.height() * 2,
    )
    assert stage_png.height() < window.height() * 2 - 2 * window.menuBar().height()
    for kind in ("csv", "json", "trace"):
        await menu.export_data(recording, kind, tmp_path / f"f.{kind}")
    assert len((tmp_path / "f.csv").read_text().splitlines()) == 1 + len(
        recording.runs[0].figures["requests"]
    )
    assert "traceEvents" in json.loads((tmp_path / "f.trace").read_text())
    assert "summary" in json.loads((tmp_path / "f.json").read_text())

    task = menu.export_animation(recording, "gif", tmp_path / "a.gif", size=(320, 240), fps=20)
    assert menu.busy and menu.progress is not None and menu.progress.isVisible()
    await task
    assert not menu.busy
    with Image.open(tmp_path / "a.gif") as im:
        assert im.n_frames == 6 and im.size == (320, 240)
    assert "Exported" in window.statusBar().currentMessage()


@pytest.mark.asyncio
async def test_cancel_stops_the_animation_and_leaves_no_file(
    make_window: Any, tmp_path: Path
) -> None:
    window = make_window(AppSettings())
    menu = window.exports
    recording = load_recording(SHORT)
    out = tmp_path / "out"
    out.mkdir()
    task = menu.export_animation(recording, "mp4", out / "a.mp4", size=(320, 240), fps=60)
    dialog = menu.progress
    assert dialog is not None
    await wait_until(lambda: dialog.value() >= 1, 20, "the first frame was rendered")
    dialog.cancel()
    await asyncio.wait_for(task, 20)
    assert os.listdir(out) == []
    assert window.statusBar().currentMessage() == "Animation export cancelled; no file was written."
    assert not menu.busy and window.run_button.isEnabled()  # the window is still usable


@pytest.mark.asyncio
async def test_nothing_to_export_says_so(make_window: Any) -> None:
    window = make_window(AppSettings())
    window.exports.actions["csv"].trigger()
    assert window.statusBar().currentMessage().startswith("Nothing to export yet")


def _ffmpeg_children() -> list[int]:
    """This process's child processes running ffmpeg (``/proc``), zombies included."""
    found = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:  # a thread that ended between the listing and the read has no children
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in kids:
            with contextlib.suppress(OSError):
                if b"ffmpeg" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
    return found


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["mp4", "gif", "webp"])
async def test_closing_the_window_mid_export_leaves_no_file_and_no_ffmpeg(
    make_window: Any, tmp_path: Path, kind: str
) -> None:
    """Closing the window while an animation renders ends the export: ffmpeg is killed and
    reaped, and neither the output nor its temporary ``.part`` file is left."""
    window = make_window(AppSettings())
    menu = window.exports
    recording = load_recording(DEMO)  # 12 s: hundreds of frames, still rendering at close
    out = tmp_path / "out"
    out.mkdir()
    task = menu.export_animation(recording, kind, out / f"a.{kind}", size=(320, 240), fps=30)
    dialog = menu.progress
    assert dialog is not None
    await wait_until(lambda: dialog.value() >= 3, 30, "three frames were rendered")
    if kind != "gif":
        assert _ffmpeg_children(), f"ffmpeg runs while the {kind.upper()} renders"
    window.close()
    await wait_signal(window.closed, 30, "the window closed")
    assert task.done()
    assert os.listdir(out) == [], "no output and no .part file after closing"
    assert _ffmpeg_children() == [], "no ffmpeg left, not even a zombie"


@pytest.mark.asyncio
async def test_the_animation_dialog_offers_sizes_and_rates(make_window: Any) -> None:
    window = make_window(AppSettings())
    assert window.recordings.show_recording(load_recording(SHORT))
    dialog = window.exports._animation_dialog("gif")
    assert dialog is not None
    sizes = [dialog.size_box.itemData(i) for i in range(dialog.size_box.count())]
    assert sizes[:3] == [(1280, 720), (1920, 1080), (3840, 2160)]
    rates = [dialog.fps_box.itemData(i) for i in range(dialog.fps_box.count())]
    assert rates == [30.0, 24.0, 15.0]  # a GIF plays at most 50 fps
    dialog.size_box.setCurrentIndex(1)
    dialog.fps_box.setCurrentIndex(2)
    assert dialog.choice() == ((1920, 1080), 15.0)
    dialog.close()
    mp4 = window.exports._animation_dialog("mp4")
    assert mp4 is not None and mp4.fps_box.findData(60.0) >= 0
    mp4.close()
