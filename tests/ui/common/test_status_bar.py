"""The status bar's message ends in "…" where it is wider than the bar, whole on hover;
``currentMessage()`` stays the whole message (a refused run's message at 1280×720 ×1.5
had ended "Please retry afte", cut at the window's edge)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtWidgets import QMainWindow

from splitdesk.ui.common.status_bar import ElidingStatusBar

MESSAGE = (
    "Finished — 4 of 6 request(s) failed: HTTP 429: Rate limit reached: at most 2 "
    "concurrent requests. Please retry after 2 s. (rate_limit_error)"
)


@pytest.fixture
def windows() -> Iterator[list[QMainWindow]]:
    """The test's windows, alive until it ends (qtbot keeps weak references only)."""
    made: list[QMainWindow] = []
    yield made
    for window in made:
        window.close()


def bar_in_window(qtbot: Any, windows: list[QMainWindow], width: int) -> ElidingStatusBar:
    window = QMainWindow()
    windows.append(window)
    qtbot.addWidget(window)
    bar = ElidingStatusBar()
    window.setStatusBar(bar)
    window.resize(width, 200)
    window.show()

    def laid_out() -> None:  # the bar at the window's width, its size grip at its end
        left, right = bar.message_rect()
        assert bar.width() == width and right - left > width // 2

    qtbot.waitUntil(laid_out, timeout=5000)
    return bar


def test_a_long_message_is_elided_and_whole_on_hover(qtbot: Any, windows: Any) -> None:
    bar = bar_in_window(qtbot, windows, 400)
    bar.showMessage(MESSAGE)
    shown = bar.shown_message()
    assert bar.currentMessage() == MESSAGE
    assert shown.endswith("…") and MESSAGE.startswith(shown[:-1])
    left, right = bar.message_rect()
    assert bar.fontMetrics().horizontalAdvance(shown) <= right - left
    assert bar.toolTip() == MESSAGE
    # painted: the message's first glyphs are on the bar, in its text colour
    image = bar.grab().toImage()
    background = image.pixelColor(2, 2)
    inked = {
        image.pixelColor(x, y).name()
        for x in range(left, left + 40)
        for y in range(image.height())
        if image.pixelColor(x, y) != background
    }
    assert inked, "no text drawn at the message's place"


def test_a_message_that_fits_is_whole_with_no_tooltip(qtbot: Any, windows: Any) -> None:
    bar = bar_in_window(qtbot, windows, 400)
    bar.showMessage(MESSAGE)
    assert bar.toolTip() == MESSAGE
    bar.showMessage("Done.")
    assert bar.shown_message() == "Done." and bar.toolTip() == ""
    bar.showMessage(MESSAGE)
    bar.window().resize(bar.fontMetrics().horizontalAdvance(MESSAGE) + 200, 200)
    qtbot.waitUntil(lambda: bar.shown_message() == MESSAGE, timeout=5000)
    assert bar.toolTip() == ""  # it fits once the window is wide enough
    bar.clearMessage()
    assert bar.toolTip() == ""


def test_the_window_uses_it(make_window: Any) -> None:
    from splitdesk.core.files.settings import AppSettings

    window = make_window(AppSettings())
    assert isinstance(window.statusBar(), ElidingStatusBar)
    window.resize(1280, 720)
    window.say(MESSAGE * 2)
    assert window.statusBar().currentMessage() == MESSAGE * 2
