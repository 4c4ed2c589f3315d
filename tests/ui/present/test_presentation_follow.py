"""Panes follow their newest text through a change of type size: in presentation mode,
+ and − re-lay every pane's text out (its scroll range changes), and a pane that was showing
its end still shows it after; a pane the reader scrolled up stays where it was put."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from ui.conftest import wait_until
from ui.present.test_presentation import active, key, window_sized  # noqa: F401 (fixture)

from splitdesk.core.files.recording import load_recording
from splitdesk.ui.replay.recordings import demo_files
from splitdesk.ui.shell.main_window import MainWindow
from splitdesk.ui.stage.panes import TextStream


def end_in_sight(text: TextStream) -> bool:
    """The end of the pane's last line with text is inside its view."""
    block = text.document().lastBlock()
    while not block.text() and block.previous().isValid():
        block = block.previous()
    end = QTextCursor(block)
    end.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    rect = text.cursorRect(end)
    return rect.top() >= 0 and rect.bottom() <= text.viewport().height() + 1


def streams(window: MainWindow) -> list[TextStream]:
    """The answer text of every pane on screen, with some text in it."""
    panes = [p for p in window.stage.panes.values() if p.isVisible() and p.text.toPlainText()]
    return [p.text for p in panes if p.text.verticalScrollBar().maximum() > 0]


@pytest.mark.asyncio
async def test_panes_keep_their_newest_text_in_sight_through_a_type_size_change(
    window_sized: Any,  # noqa: F811 (the fixture imported above)
) -> None:
    window = window_sized((1280, 720))
    await active(window)
    window.presentation.set_active(True)
    assert window.recordings.show_recording(load_recording(dict(demo_files())["batching"]))
    replay = window.recordings.replay
    assert replay.player is not None
    replay.seek(replay.player.duration)  # the run's end: every pane holds its whole answer

    def all_at_end(but: TextStream | None = None) -> bool:
        shown = [t for t in streams(window) if t is not but]
        return len(shown) >= 2 and all(end_in_sight(t) for t in shown)

    await wait_until(all_at_end, 5, "the panes on screen showing their newest text")
    for k in (Qt.Key.Key_Minus,):
        scale = window.scale
        key(window, k)
        assert window.scale != scale, f"{k.name} changed nothing"
        await wait_until(all_at_end, 5, f"every pane showing its newest text after {k.name}")

    # the reader scrolls Q1 back to its start; a larger font re-wraps every answer (new
    # scroll ranges): Q1 stays where the reader put it, the others follow their end
    q1 = window.stage.panes[1].text
    bar = q1.verticalScrollBar()
    bar.setSliderPosition(0)  # as a drag of the scroll bar does
    before = {t: t.verticalScrollBar().maximum() for t in streams(window)}
    assert q1 in before and bar.value() == 0 < bar.maximum() - 4 and not end_in_sight(q1)
    for text in before:
        font = text.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        text.setFont(font)

    def relaid_and_followed() -> bool:
        changed = [t for t in streams(window) if t.verticalScrollBar().maximum() != before.get(t)]
        return q1 in changed and len(changed) >= 3 and all_at_end(but=q1)

    await wait_until(
        relaid_and_followed, 5, "new ranges in the larger font, the other panes at their end"
    )
    assert bar.value() == 0 and not end_in_sight(q1), (
        f"the pane the reader scrolled up was moved ({bar.value()}/{bar.maximum()})"
    )
