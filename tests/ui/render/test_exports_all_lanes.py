"""Timeline exports hold every lane, also those the window has no room for (they are
behind the lane scroll bar on screen, or packed into one "Parallel (N)" block): the
single-slot demo in a small window shows one lane, its PNG and SVG show all six. The
window's own timeline is left as it was."""

from __future__ import annotations

import xml.dom.minidom
from pathlib import Path

import pytest
from PySide6.QtGui import QFontMetrics, QImage

from paths import ROOT
from splitdesk.core.files.recording import load_recording
from splitdesk.ui.common.theme import DARK, ui_font
from splitdesk.ui.render.exports import ReplayFrames, timeline_png, timeline_svg
from splitdesk.ui.stage.timeline import LANE_PITCH, Timeline

SINGLE_SLOT = ROOT / "resources" / "demos" / "single-slot.splitdesk.json"


def lanes_missing_from_svg(timeline: Timeline, lanes: list[str], path: Path) -> list[str]:
    """Export ``timeline`` as SVG to ``path``; the lane names none of its texts holds."""
    timeline_svg(timeline, path)
    dom = xml.dom.minidom.parse(str(path))
    texts = {
        "".join(c.data for c in t.childNodes if c.nodeType == c.TEXT_NODE).strip()
        for t in dom.getElementsByTagName("text")
    }
    return [name for name in lanes if name not in texts]


@pytest.mark.asyncio
async def test_png_and_svg_hold_every_lane_of_a_small_window(qtbot: object, tmp_path: Path) -> None:
    frames = ReplayFrames(load_recording(SINGLE_SLOT), 0, (640, 400), DARK, 1.0, look="window")
    try:
        await frames.frame(frames.duration)
        timeline = frames.stage.timeline
        lanes = list(timeline.lanes)
        assert len(lanes) == 6
        assert timeline.lanes_shown < len(lanes), "all lanes fit: nothing to prove here"
        shown, size = timeline.lanes_shown, timeline.plot.size()

        missing = lanes_missing_from_svg(timeline, lanes, tmp_path / "t.svg")
        assert not missing, f"lanes missing from the SVG: {missing}"

        w, h = timeline_png(timeline, tmp_path / "t.png", 1.0)
        image = QImage(str(tmp_path / "t.png"))
        assert (image.width(), image.height()) == (w, h)
        pitch = QFontMetrics(ui_font(timeline.scale, 0)).height() * LANE_PITCH
        assert h >= len(lanes) * pitch, f"{h} px high: too short for {len(lanes)} lanes"

        # the window keeps its layout: same plot size, same lanes in view
        assert timeline.plot.size() == size
        assert timeline.lanes_shown == shown
    finally:
        frames.dispose()


@pytest.mark.asyncio
async def test_a_packed_parallel_block_exports_every_lane_by_name(
    qtbot: object, tmp_path: Path
) -> None:
    """Where the parallel lanes are packed into one "Parallel (5)" block on screen (room
    for three lanes here), the SVG still names every lane; the window's timeline is packed
    again afterwards."""
    frames = ReplayFrames(load_recording(SINGLE_SLOT), 0, (1280, 720), DARK, 1.0, look="window")
    try:
        await frames.frame(frames.duration)
        timeline = frames.stage.timeline
        lanes = list(timeline.lanes)
        plot = timeline.plot
        chrome = plot.height() - plot.getPlotItem().getViewBox().height()
        pitch = QFontMetrics(ui_font(timeline.scale, -2)).height() * LANE_PITCH
        plot.resize(plot.width(), int(chrome + 3 * pitch))
        timeline.refresh()
        assert timeline.packed, "room for three of six lanes: the five parallel ones pack"
        assert timeline.shown_names == ["Combined (5)", "Parallel (5)"]
        assert timeline.lanes_shown == 6 and not timeline.lane_bar.isVisible()
        # every parallel bar drawn, in the block between the combined lane and the axis
        ys = [
            y for y, g in zip(timeline.lane_y, timeline.lane_groups, strict=True) if g == "parallel"
        ]
        assert len(ys) == 5 and ys == sorted(ys) and ys[0] > timeline.lane_y[0]
        for bar in timeline.bars:  # hovering a thin bar names its own request
            if bar.kind == "stream" and timeline.lane_groups[bar.lane] == "parallel":
                hit = timeline.bar_at((bar.x0 + bar.x1) / 2, timeline.lane_y[bar.lane])
                assert hit is not None and hit.lane == bar.lane

        missing = lanes_missing_from_svg(timeline, lanes, tmp_path / "t.svg")
        assert not missing, f"lanes missing from the SVG: {missing}"
        assert timeline.packed and timeline.shown_names == ["Combined (5)", "Parallel (5)"]
    finally:
        frames.dispose()
