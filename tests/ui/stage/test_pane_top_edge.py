"""A pane's text, scrolled to its end, shows nothing of the line above its first whole
line: the view scrolls by whole lines, and that line's descenders ("g", "p", ",") had
reached a pixel or two into the view, dots along the top of every compact pane on a
projector (the presentation at 1280×720 ×1.5)."""

from __future__ import annotations

from typing import Any

import pytest

from splitdesk.ui.common.theme import DARK, apply_theme, present_scale
from splitdesk.ui.stage.panes import RequestPane

#: every line full of descenders, so the line above the view reaches as low as a line can
PROSE = " ".join(["gaps, jumps, quippy pygmy typography;"] * 40)


#: the window's scales, and the presentation's at a projector's sizes (fractional sizes)
SCALES = [1.0, 1.5, 2.0] + [
    present_scale(w, h) for w, h in ((1280, 720), (1024, 768), (1920, 1080))
]


@pytest.mark.parametrize("scale", SCALES, ids=lambda s: f"{s:.3f}")
def test_nothing_of_the_line_above_shows_at_the_top(qtbot: Any, qapp: Any, scale: float) -> None:
    saved = (qapp.font(), qapp.styleSheet(), qapp.palette())
    apply_theme(qapp, DARK, scale)  # the app's fonts at this scale, as on a projector
    try:
        pane = RequestPane("Q1", "a question", "#3366cc", DARK, scale)
        qtbot.addWidget(pane)
        pane.resize(int(300 * scale), int(200 * scale))
        pane.show()
        pane.set_compact(True)  # two lines, following the end
        pane.text.append_text(PROSE)
        text = pane.text
        qtbot.waitUntil(lambda: text.verticalScrollBar().value() > 0, timeout=5000)
        top = text.first_line_top()
        assert top > 0, "the view starts at a line's top: nothing above it to look at"
        image = text.viewport().grab().toImage()
        background = text.viewport().palette().color(text.viewport().backgroundRole())
        inked = [
            (x, y)
            for y in range(top)
            for x in range(image.width())
            if image.pixelColor(x, y).rgb() != background.rgb()
        ]
        assert inked == [], f"{len(inked)} pixels of the line above in the top {top} px"
        # the first whole line is drawn: ink right under the cleared strip
        below = {
            image.pixelColor(x, y).rgb()
            for y in range(top, top + text.fontMetrics().height())
            for x in range(image.width())
        }
        assert len(below) > 1, "no text under the cleared strip"
    finally:
        qapp.setStyleSheet(saved[1])
        qapp.setFont(saved[0])
        qapp.setPalette(saved[2])
