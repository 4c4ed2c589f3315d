"""A failed pane's error never makes the pane taller than the grid's view: where a row of
the view cannot hold the whole message (a projector, 1280×720 ×1.5, the rate-limited
profile), it ends in "…" on its last line that fits and the whole message is on hover;
where there is room, the whole message shows. Before, the row grew to the message's
height and the view cut the panes, their text and their frames, mid-line at the bottom."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel
from ui.conftest import wait_until

from splitdesk.ui.common.clamped_label import ClampedLabel, wrapped_lines
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.stage.grid import PaneGrid
from splitdesk.ui.stage.panes import RequestPane

MESSAGE = (
    "✕ HTTP 429: Rate limit reached: at most 2 concurrent requests. Please retry after "
    "2 s. (rate_limit_error) — rate limited; retry after 2 s"
)


def test_a_clamped_label_shows_whole_lines_and_ends_in_an_ellipsis(qtbot: Any) -> None:
    label = ClampedLabel()
    qtbot.addWidget(label)
    label.resize(160, 400)
    label.show()  # a hidden widget hears of its new size only once shown
    label.setText(MESSAGE)
    width = label.contentsRect().width()
    lines = wrapped_lines(MESSAGE, label, width)
    assert len(lines) > 3, lines  # the message wraps at this width
    assert label.text() == MESSAGE and label.toolTip() == "" and not label.is_clamped()
    label.set_max_lines(2)
    shown = label.text().split("\n")
    assert len(shown) == 2 and shown[0] == lines[0].rstrip()
    assert shown[1].endswith("…")
    metrics = label.fontMetrics()
    assert all(metrics.horizontalAdvance(line) <= width for line in shown)
    assert label.toolTip() == MESSAGE and label.full_text() == MESSAGE and label.is_clamped()
    # wide enough for the whole message on two lines: nothing left out
    label.resize(metrics.horizontalAdvance(MESSAGE) // 2 + 80, 400)
    assert label.text() == MESSAGE and label.toolTip() == ""
    label.set_max_lines(None)
    assert label.text() == MESSAGE
    with pytest.raises(ValueError, match="at least one line"):
        label.set_max_lines(0)


async def failed_grid(qtbot: Any, width: int, height: int) -> tuple[PaneGrid, RequestPane]:
    grid = PaneGrid("no panes", scale=1.5)
    qtbot.addWidget(grid)
    for i in range(3):
        pane = RequestPane(f"Q{i + 1}", f"question {i + 1}", "#3366cc", DARK, 1.5)
        grid.add(pane)
    failed = grid.panes[1]
    failed.error.setText(MESSAGE)
    failed.error.show()
    grid.panes[0].text.append_text("an answer that streamed. " * 40)
    grid.resize(width, height)
    grid.show()
    grid.relayout_now()
    await wait_until(
        lambda: failed.error.isVisibleTo(failed) and failed.error.height() > 0,
        5,
        "the grid laid out with the failed pane's error",
    )
    return grid, failed


@pytest.mark.asyncio
async def test_a_long_error_in_a_short_grid_keeps_the_pane_inside_the_view(qtbot: Any) -> None:
    grid, failed = await failed_grid(qtbot, 700, 190)
    view = grid.viewport().height()
    await wait_until(
        lambda: all(p.height() <= view for p in grid.panes if p.isVisibleTo(grid)),
        5,
        f"every pane at most the view's {view} px high",
    )
    error = failed.error
    assert error.is_clamped() and error.text().endswith("…"), error.text()
    assert error.toolTip() == MESSAGE
    # the error whole inside its pane: no line of it cut by the pane's edge
    bottom = error.mapTo(failed, error.rect().bottomLeft()).y()
    assert bottom < failed.height()
    assert error.height() >= error.heightForWidth(error.width())


@pytest.mark.asyncio
async def test_where_there_is_room_the_whole_error_shows(qtbot: Any) -> None:
    _grid, failed = await failed_grid(qtbot, 700, 600)
    error = failed.error
    await wait_until(
        lambda: error.height() >= error.heightForWidth(error.width()),
        5,
        "the failed pane laid out with its whole error",
    )
    assert error.text() == MESSAGE and not error.is_clamped() and error.toolTip() == ""


def test_blank_lines_and_long_words_count_as_the_label_shows_them(qtbot: Any) -> None:
    """The lines counted are the label's own: an empty paragraph is one line (a server's
    message keeps its blank lines), and a word longer than a line keeps one line, running
    past it, as a word-wrapped QLabel lays it out (not broken inside, which counted more
    lines than shown and clamped a message that fitted)."""
    label = ClampedLabel()
    qtbot.addWidget(label)
    label.resize(280, 400)
    label.show()
    width = label.contentsRect().width()
    assert wrapped_lines("", label, width) == [""]
    assert len(wrapped_lines("a\n\nb", label, width)) == 3
    assert len(wrapped_lines("a\n", label, width)) == 2
    label.set_max_lines(3)
    label.setText("HTTP 429\n\nslow down")
    assert label.text() == "HTTP 429\n\nslow down" and not label.is_clamped()
    label.setText("")
    assert label.text() == "" and label.toolTip() == ""
    token = "✕ HTTP 404 https://api.example.com/v1/" + "x" * 120 + "/chat/completions"
    reference = QLabel()
    qtbot.addWidget(reference)
    reference.setWordWrap(True)
    reference.setTextFormat(Qt.TextFormat.PlainText)
    reference.resize(280, 400)
    reference.setText(token)
    pitch = reference.fontMetrics().lineSpacing()
    shown = round(reference.heightForWidth(width) / pitch)
    assert len(wrapped_lines(token, label, width)) == shown
    label.set_max_lines(shown)
    label.setText(token)
    assert not label.is_clamped(), label.text()
    label.setText("old message")
    label.clear()  # Qt's clear() empties the whole text, not just what is shown
    label.set_max_lines(1)
    assert label.text() == "" and label.full_text() == ""


@pytest.mark.asyncio
async def test_failed_panes_ask_for_no_more_height_than_their_content(qtbot: Any) -> None:
    """Four of five panes refused (the rate-limited profile at 1920×1080): a failed pane's
    layout has a height for its width (its error wraps), which adds its widgets'
    preferred heights, and the empty text view's preferred ~190 px made each row of
    failed panes ~310 px: the grid scrolled with "+1 more" where all five fit."""
    grid = PaneGrid("no panes")
    qtbot.addWidget(grid)
    for i in range(5):
        pane = RequestPane(f"Q{i + 1}", f"question {i + 1}", "#3366cc", DARK)
        grid.add(pane)
        if i:
            pane.error.setText(MESSAGE)
            pane.error.show()
    grid.panes[0].text.append_text("an answer that streamed. " * 40)
    grid.resize(900, 544)
    grid.show()
    grid.relayout_now()
    await wait_until(
        lambda: all(p.error.height() > 0 for p in grid.panes[1:]),
        5,
        "the grid laid out with the failed panes' errors",
    )
    view = grid.viewport().height()
    await wait_until(
        lambda: grid.widget().height() <= view, 5, "the panes to fit the view's height"
    )
    assert not grid.compact, "room for every pane as it is"
    assert not grid.verticalScrollBar().isVisible()
    assert grid.hidden_panes() == [] and not grid.more_label.isVisible()
    for pane in grid.panes[1:]:  # each message whole
        assert not pane.error.is_clamped() and pane.error.text() == MESSAGE
