"""Exports are valid files: the timeline PNG decodes at the asked size (2× by default), the
SVG parses as XML and holds the lane labels (pyqtgraph's exporter with the Qt ≥ 6.11 fix),
the window PNG is the window at 2×, and MP4, GIF and WebP animations of a replay have the
expected frame count (± 1) and duration. Real widgets offscreen, real encoders, short
recordings and small sizes."""

from __future__ import annotations

import asyncio
import os
import xml.dom.minidom
from pathlib import Path

import imageio_ffmpeg
import pytest
from PIL import Image
from PySide6.QtGui import QImage

from paths import ROOT
from splitdesk.core.files.recording import load_recording
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.render.encoders import EncodeError
from splitdesk.ui.render.exports import (
    AnimationOptions,
    ExportCancelledError,
    ReplayFrames,
    frame_count,
    render_animation,
    timeline_png,
    timeline_svg,
    window_png,
)

SHORT = ROOT / "tests" / "fixtures" / "recordings" / "v1.splitdesk.json"  # 0.21 s
BATCHING = ROOT / "resources" / "demos" / "batching.splitdesk.json"


@pytest.mark.asyncio
async def test_timeline_png_svg_and_window_png(qtbot: object, tmp_path: Path) -> None:
    frames = ReplayFrames(load_recording(BATCHING), 0, (1280, 720), DARK, 1.0, look="window")
    try:
        await frames.frame(frames.duration)
        timeline = frames.stage.timeline
        plot = timeline.plot.getPlotItem().sceneBoundingRect()
        size = timeline_png(timeline, tmp_path / "t.png")
        image = QImage(str(tmp_path / "t.png"))
        assert (image.width(), image.height()) == size
        assert size == (round(plot.width() * 2), round(plot.height() * 2))  # 2× for slides
        assert timeline_png(timeline, tmp_path / "t1.png", 1.0) == (
            round(plot.width()),
            round(plot.height()),
        )
        timeline_svg(timeline, tmp_path / "t.svg")
        dom = xml.dom.minidom.parse(str(tmp_path / "t.svg"))  # well-formed XML
        assert dom.documentElement.tagName == "svg"
        texts = {
            "".join(c.data for c in t.childNodes if c.nodeType == c.TEXT_NODE).strip()
            for t in dom.getElementsByTagName("text")
        }
        lanes = timeline.lanes
        assert len(lanes) == 6 and all(name in texts for name in lanes), (lanes, texts)
        w, h = window_png(frames.stage, tmp_path / "w.png", 2.0)
        assert (w, h) == (2560, 1440)
        assert (
            QImage(str(tmp_path / "w.png")).width(),
            QImage(str(tmp_path / "w.png")).height(),
        ) == (w, h)
        with pytest.raises(OSError, match="does not exist"):
            timeline_png(timeline, tmp_path / "missing" / "t.png")
    finally:
        frames.dispose()


@pytest.mark.parametrize("kind", ["gif", "mp4", "webp"])
@pytest.mark.asyncio
async def test_animation_has_the_expected_frames_and_duration(
    qtbot: object, tmp_path: Path, kind: str
) -> None:
    recording = load_recording(SHORT)
    duration = recording.runs[0].duration_s
    fps = 20.0
    expected = frame_count(duration, fps)
    assert expected == 6  # 0.21 s at 20 fps: frames at 0, 0.05 … 0.25 (clamped to the end)
    path = tmp_path / f"run.{kind}"
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> bool:
        seen.append((done, total))
        return True

    n = await render_animation(
        recording, path, AnimationOptions(kind, (320, 240), fps), DARK,
        progress=progress,
    )  # fmt: skip
    assert n == expected and seen[-1] == (expected, expected)
    if kind in ("gif", "webp"):
        with Image.open(path) as im:
            assert im.format == kind.upper() and im.size == (320, 240)
            assert getattr(im, "is_animated", False) and im.info.get("loop") == 0
            assert abs(im.n_frames - expected) <= 1
            total_ms = 0
            for i in range(im.n_frames):
                im.seek(i)
                im.load()  # WebP reads a frame's duration as it decodes it
                total_ms += im.info["duration"]
        assert total_ms / 1000 == pytest.approx(expected / fps, abs=0.01)
    else:
        frames, secs = await asyncio.to_thread(imageio_ffmpeg.count_frames_and_secs, str(path))
        assert abs(frames - expected) <= 1
        assert secs == pytest.approx(expected / fps, abs=1.5 / fps)
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left


@pytest.mark.asyncio
async def test_cancel_leaves_no_file_and_caps_are_enforced(qtbot: object, tmp_path: Path) -> None:
    recording = load_recording(SHORT)
    path = tmp_path / "run.gif"
    with pytest.raises(ExportCancelledError):
        await render_animation(
            recording, path, AnimationOptions("gif", (320, 240), 20.0), DARK,
            progress=lambda done, total: done < 2,
        )  # fmt: skip
    assert os.listdir(tmp_path) == []
    for opts, message in (
        (AnimationOptions("gif", (320, 240), 90.0), "1-50"),
        (AnimationOptions("mp4", (321, 240), 30.0), "even"),
        (AnimationOptions("mp4", (8000, 240), 30.0), "16-3840"),
        (AnimationOptions("gif", (320, 240), 20.0, run=3), "holds 1 run"),
    ):
        with pytest.raises(EncodeError, match=message):
            await render_animation(recording, path, opts, DARK)
    assert os.listdir(tmp_path) == []


@pytest.mark.asyncio
async def test_every_frame_of_a_clip_is_whole_and_nothing_moves_at_its_end(qtbot: object) -> None:
    """A clip's frames are taken with every layout done: the caption bar has its final
    height from the first frame (the measured line is held, undrawn, until the end), the
    measured line is whole in the last frame (it was cut there), every pane's text view
    shows its end, and the grid's note says how many panes are not shown (a clip cannot
    be scrolled)."""
    from splitdesk.core.files.scenarios import builtin_scenarios
    from splitdesk.ui.common.follow_end import end_in_sight

    recording = load_recording(BATCHING)
    scene = builtin_scenarios()["batching"]
    frames = ReplayFrames(recording, 0, (960, 540), DARK, caption=("1 / 11 · x", scene.caption))
    try:
        caption = frames.stage.caption
        heights = []
        for k in range(0, 9):
            t = frames.duration * k / 8
            await frames.frame(t)
            heights.append(caption.height())
            drawn = caption.measured.grab().toImage()
            ink = {
                drawn.pixelColor(x, y).name()
                for x in range(0, drawn.width(), 3)
                for y in range(0, drawn.height(), 3)
            }
            done = frames.player.done
            assert (len(ink) > 2) == done, f"the measured line drawn at {t:.1f} s: {done}"
            for pane in frames.stage.panes.values():
                if pane.isVisible() and pane.text.toPlainText():
                    assert end_in_sight(pane.text), f"{pane.badge.text()} not at its end"
        assert len(set(heights)) == 1, f"the caption bar's height changed: {heights}"
        m = caption.measured
        assert m.text().startswith("Measured: Parallel finished")
        assert m.height() >= m.heightForWidth(m.width()), "the measured line cut"
        grid = frames.stage.grid
        hidden = grid.hidden_panes()
        assert hidden, "at 960×540 five panes do not all fit: the note is tested"
        assert grid.more_label.text() == f"+{len(hidden)} more not shown"
    finally:
        frames.dispose()


@pytest.mark.asyncio
async def test_the_timeline_svg_reads_right_outside_qt(qtbot: object, tmp_path: Path) -> None:
    """The SVG has its size on its root, a background that fills it, and text in a font
    list ending in a generic family: QtSvg (a renderer other than the painter that wrote
    it) fills the whole picture with the background, and no ``Sans Serif`` is left that a
    browser would replace with its serif default."""
    from PySide6.QtGui import QColor, QPainter
    from PySide6.QtSvg import QSvgRenderer

    frames = ReplayFrames(load_recording(BATCHING), 0, (1280, 720), DARK, 1.0, look="window")
    try:
        frames.player.show_end()
        path = tmp_path / "t.svg"
        timeline_svg(frames.stage.timeline, path)
    finally:
        frames.dispose()
    dom = xml.dom.minidom.parse(str(path))
    root = dom.documentElement
    _x, _y, w, h = root.getAttribute("viewBox").split()
    assert (root.getAttribute("width"), root.getAttribute("height")) == (w, h)
    families = {e.getAttribute("font-family") for e in dom.getElementsByTagName("*")} - {""}
    assert families and all(f.endswith("sans-serif") for f in families), families
    assert "Sans Serif" not in path.read_text(encoding="utf-8")
    renderer = QSvgRenderer(str(path))
    assert renderer.isValid()
    image = QImage(int(float(w)), int(float(h)), QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    background = QColor(DARK.window).rgb() & 0xFFFFFF
    for x, y in (
        (image.width() - 2, image.height() - 2),
        (image.width() - 2, 1),
        (1, image.height() - 2),
    ):
        assert image.pixel(x, y) & 0xFFFFFF != 0xFFFFFF, f"the corner ({x}, {y}) left white"
    assert any(
        image.pixel(x, image.height() - 2) & 0xFFFFFF == background
        for x in range(0, image.width(), 7)
    )
