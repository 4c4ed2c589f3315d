"""The caption bar's measured line: only a win is drawn in the colour of a win."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtGui import QColor

from splitdesk.core.analyse.plain import VerdictKind
from splitdesk.ui.common.theme import PRESENT_DARK, PRESENT_LIGHT, Theme
from splitdesk.ui.stage.caption import CaptionBar


def _has(label: Any, color: str) -> bool:
    """Whether any pixel of ``label`` as drawn is (about) ``color``: the glyphs' colour."""
    image = label.grab().toImage()
    want = QColor(color)
    for y in range(0, image.height(), 2):
        for x in range(0, image.width(), 2):
            c = image.pixelColor(x, y)
            if (
                abs(c.red() - want.red())
                + abs(c.green() - want.green())
                + abs(c.blue() - want.blue())
                < 24
            ):
                return True
    return False


@pytest.mark.parametrize("theme", [PRESENT_DARK, PRESENT_LIGHT], ids=["dark", "light"])
@pytest.mark.parametrize(
    ("kind", "green"), [("sooner", True), ("same", False), ("later", False), ("no-verdict", False)]
)
def test_only_a_win_is_green(qtbot: Any, theme: Theme, kind: VerdictKind, green: bool) -> None:
    bar = CaptionBar()
    qtbot.addWidget(bar)
    bar.restyle(theme, 1.0)
    bar.resize(900, 120)
    bar.show()
    bar.show_measured("Measured: no speed-up (1.05×): 11.8 s against 11.3 s", kind)
    assert _has(bar.measured, theme.good) is green
    assert _has(bar.measured, theme.good if green else theme.text)


def test_the_colour_follows_the_verdict_across_a_restyle(qtbot: Any) -> None:
    bar = CaptionBar()
    qtbot.addWidget(bar)
    bar.restyle(PRESENT_DARK, 1.0)
    bar.resize(900, 120)
    bar.show()
    bar.show_measured("Measured: Parallel finished 4.5× sooner: 12.0 s against 2.7 s", "sooner")
    assert _has(bar.measured, PRESENT_DARK.good)
    bar.show_measured("Measured: no speed-up (1.05×): 11.8 s against 11.3 s", "same")
    assert not _has(bar.measured, PRESENT_DARK.good)
    bar.restyle(PRESENT_LIGHT, 1.0)
    assert not _has(bar.measured, PRESENT_LIGHT.good) and _has(bar.measured, PRESENT_LIGHT.text)
