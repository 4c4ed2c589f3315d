"""Timeline exports hold every lane, also those the window has no room for (they are
behind the lane scroll bar on screen): the single-slot demo in a small window shows one
lane, its PNG and SVG show all six. The window's own timeline is left as it was."""

from __future__ import annotations

import xml.dom.minidom
from pathlib import Path

import pytest
from PySide6.QtGui import QFontMetrics, QImage

from splitdesk.core.recording import load_recording
from splitdesk.core.settings import AppSettings
from splitdesk.ui.exports import ReplayFrames, timeline_png, timeline_svg
from splitdesk.ui.theme import DARK, ui_font
from splitdesk.ui.timeline import LANE_PITCH

ROOT = Path(__file__).resolve().parents[2]
SINGLE_SLOT = ROOT / "resources" / "demos" / "single-slot.splitdesk.json"


@pytest.mark.asyncio
async def test_png_and_svg_hold_every_lane_of_a_small_window(qtbot: object, tmp_path: Path) -> None:
    frames = ReplayFrames(load_recording(SINGLE_SLOT), 0, (640, 400), AppSettings(), DARK)
    try:
        await frames.frame(frames.duration)
        timeline = frames.window.timeline
        lanes = list(timeline.lanes)
        assert len(lanes) == 6
        assert timeline.lanes_shown < len(lanes), "all lanes fit: nothing to prove here"
        shown, size = timeline.lanes_shown, timeline.plot.size()

        timeline_svg(timeline, tmp_path / "t.svg")
        dom = xml.dom.minidom.parse(str(tmp_path / "t.svg"))
        texts = {
            "".join(c.data for c in t.childNodes if c.nodeType == c.TEXT_NODE).strip()
            for t in dom.getElementsByTagName("text")
        }
        missing = [name for name in lanes if name not in texts]
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
