"""The grid's "+N more" counts the panes a user cannot read without scrolling: a pane whose
header and first text line are in sight is on screen, even when its bottom is cut."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QRect
from ui.conftest import wait_until

from splitdesk.ui.common.theme import DARK
from splitdesk.ui.stage.grid import PaneGrid
from splitdesk.ui.stage.panes import RequestPane


async def grid_of(qtbot: Any, n: int, width: int, height: int) -> PaneGrid:
    grid = PaneGrid("no panes")
    qtbot.addWidget(grid)
    for i in range(n):
        pane = RequestPane(f"Q{i + 1}", f"question {i + 1}", "#3366cc", DARK)
        pane.text.append_text("\n".join(f"line {k} of answer {i + 1}" for k in range(30)))
        grid.add(pane)
    grid.resize(width, height)
    grid.show()
    grid.relayout_now()
    bar = grid.verticalScrollBar()
    # laid out: the grid scrolls, the panes fill the viewport's width, "+N more" was set
    await wait_until(
        lambda: (
            bar.isVisible()
            and grid.widget().width() == grid.viewport().width()
            and grid.more_label.isVisible()
        ),
        5,
        "the grid laid out with a scroll bar and its +N more label",
    )
    return grid


def shown(grid: PaneGrid) -> QRect:
    bar = grid.verticalScrollBar()
    return QRect(0, bar.value(), grid.viewport().width(), grid.viewport().height())


@pytest.mark.asyncio
async def test_a_pane_cut_only_at_the_bottom_is_not_counted_as_more(qtbot: Any) -> None:
    grid = await grid_of(qtbot, 6, 420, 250)
    bar = grid.verticalScrollBar()
    assert bar.maximum() > 0, "the panes fit: nothing to scroll"
    # scroll so that the first pane reaching the viewport's bottom has its bottom edge
    # 8 px below the visible part: its header and text are in sight, only its frame's
    # last pixels are not (was counted as "more")
    vp = grid.viewport().height()
    cut = next(p for p in grid.panes if p.geometry().bottom() - 8 - vp + 1 > 0)
    bar.setValue(cut.geometry().bottom() - 8 - vp + 1)
    view = shown(grid)
    assert view.intersects(cut.geometry()) and not view.contains(cut.geometry())
    assert cut not in grid.hidden_panes()
    # the panes wholly out of sight (below) are the ones counted, and the label says so
    out_of_sight = [p for p in grid.panes if not view.intersects(p.geometry())]
    assert out_of_sight
    await wait_until(lambda: grid.more_label.text() != "", 5)
    cut_at_top = [p for p in grid.panes if p.geometry().top() < view.top()]
    hidden = grid.hidden_panes()
    assert set(out_of_sight) <= set(hidden)
    assert len(hidden) == len(out_of_sight) + len([p for p in cut_at_top if p not in out_of_sight])
    arrow = "↓" if not any(p.geometry().top() < view.top() for p in hidden) else "↕"
    assert grid.more_label.text() == f"+{len(hidden)} more {arrow} scroll"


@pytest.mark.asyncio
async def test_scrolled_to_the_end_the_panes_above_are_more_upwards(qtbot: Any) -> None:
    grid = await grid_of(qtbot, 6, 420, 250)
    bar = grid.verticalScrollBar()
    bar.setValue(bar.maximum())
    await wait_until(lambda: grid.more_label.text().endswith("↑ scroll"), 5)
    view = shown(grid)
    assert grid.panes[-1] not in grid.hidden_panes()
    above = [p for p in grid.panes if p.geometry().top() < view.top()]
    assert grid.more_label.text() == f"+{len(above)} more ↑ scroll"


@pytest.mark.asyncio
async def test_a_failed_pane_whose_error_begins_in_sight_is_not_more(qtbot: Any) -> None:
    """A failed pane shows its error instead of text: its header and the error's first
    line in sight put it on screen, though the rest of a long error is cut below (two
    questions on the rate-limited profile at 1280×720 ×1.5 said "+1 more" beside both
    panes in sight)."""
    grid = await grid_of(qtbot, 6, 420, 250)
    failed = grid.panes[-1]  # the last row: scrolled to, cut inside its error
    failed.text.hide()
    failed.error.setText("✕ HTTP 429: Rate limit reached: at most 2 concurrent requests. " * 8)
    failed.error.show()
    grid.relayout_now()
    await wait_until(
        lambda: failed.error.isVisibleTo(failed) and failed.error.height() > 40,
        5,
        "the failed pane laid out with its long error",
    )
    error = failed.error.geometry().translated(failed.pos())
    line = failed.error.fontMetrics().height()
    bar = grid.verticalScrollBar()
    bar.setValue(error.top() + line + 6 - grid.viewport().height())  # its first line in sight
    view = shown(grid)
    assert view.contains(failed.geometry().topLeft()) and view.bottom() < error.bottom()
    assert failed not in grid.hidden_panes()


@pytest.mark.asyncio
async def test_the_count_follows_the_panes_when_they_change_height(qtbot: Any) -> None:
    """Panes that grow after the grid counted them are counted again: the note always
    says how many are out of sight."""
    grid = await grid_of(qtbot, 6, 420, 250)
    before = len(grid.hidden_panes())
    for pane in grid.panes:  # taller panes: more of them out of sight, no grid resize
        pane.setMinimumHeight(pane.height() * 2)
    await wait_until(
        lambda: len(grid.hidden_panes()) > before,
        5,
        "the taller panes laid out, more of them out of sight",
    )
    await wait_until(
        lambda: grid.more_label.text().startswith(f"+{len(grid.hidden_panes())} more"),
        5,
        "the note to count the panes out of sight",
    )


@pytest.mark.asyncio
async def test_figures_give_way_where_that_shows_every_pane(qtbot: Any) -> None:
    """Five panes a few pixels short of three one-line rows: the tight panes without
    their figures (on hover still) show all five, rather than "+1 more" over an empty
    strip (the default run at the default size on the single-slot and compute-bound
    profiles, whose longer summaries leave the grid shorter)."""
    grid = PaneGrid("no panes")
    qtbot.addWidget(grid)
    for i in range(5):
        pane = RequestPane(f"Q{i + 1}", f"question {i + 1}", "#3366cc", DARK)
        pane.text.append_text("\n".join(f"line {k} of answer {i + 1}" for k in range(30)))
        grid.add(pane)
    one_line = grid.panes[0].compact_height(1)
    spacing = 8
    # two one-line rows fit, three do not: 5 px short of the third
    height = 3 * one_line + 2 * spacing - 5
    grid.resize(600, height)
    grid.show()
    grid.relayout_now()
    await wait_until(lambda: grid.tight, 5, "the grid to turn its panes tight")
    await wait_until(lambda: not grid.more_label.isVisible(), 5, "every pane in sight")
    assert grid.hidden_panes() == []
    assert not grid.verticalScrollBar().isVisible()
