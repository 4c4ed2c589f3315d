"""A text view that shows its end keeps showing it when its scroll range changes.

A pane's answer view (:class:`~splitdesk.ui.stage.panes.TextStream`) follows its newest text as
text arrives. Its scroll range also changes without any new text: the type size changes
(presentation mode's + and −, a theme), the pane is laid out at another size (panes are
made hidden at one size, then shown smaller in the grid), the document's lazy layout
finishes. Qt keeps the scroll *value* through such a change, so a view that was at its end
is left showing the middle of its text. :class:`EndFollower` puts it back at its end.

"Following" is the reader's choice: it stops when they scroll up (a wheel, the scroll
bar, the keys: the bar's ``actionTriggered``, which programmatic scrolling never emits)
and starts again when they scroll back to the end. The view is put back at its end one
event-loop turn after the range changed (one zero-time timer, however many changes came
in that turn), never from inside Qt's own layout code.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

#: Scroll-bar steps (lines, in a QPlainTextEdit) from the bottom that still count as at
#: the end, as in TextStream.append_text.
AT_END_STEPS = 4
#: Lines a view at its maximum may be stepped back to bring its last text line in sight.
MAX_STEP_BACK = 3


def end_in_sight(view: QPlainTextEdit) -> bool:
    """Whether the end of ``view``'s last line with text is inside its viewport (a view
    with no text shows its end)."""
    block = view.document().lastBlock()
    while not block.text() and block.previous().isValid():
        block = block.previous()
    if not block.text():
        return True
    end = QTextCursor(block)
    end.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    rect = view.cursorRect(end)
    return rect.top() >= 0 and rect.bottom() <= view.viewport().height() + 1


class EndFollower(QObject):
    """Keeps ``view`` at its end (``to_end`` scrolls it there) while :attr:`following`."""

    def __init__(self, view: QPlainTextEdit, to_end: Callable[[], None]) -> None:
        super().__init__(view)
        self.view = view
        self.to_end = to_end
        #: The reader has not scrolled away from the end (True until they do).
        self.following = True
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._follow)
        bar = view.verticalScrollBar()
        bar.actionTriggered.connect(self._reader_scrolled)
        bar.rangeChanged.connect(self._range_changed)

    def _reader_scrolled(self, _action: int) -> None:
        """A scroll by the reader: following when it leaves the view at its end. (The bar's
        slider position is already the new one; its value follows after this signal.)"""
        bar = self.view.verticalScrollBar()
        self.following = bar.sliderPosition() >= bar.maximum() - AT_END_STEPS
        if not self.following:
            self._timer.stop()

    def _range_changed(self, _low: int, _high: int) -> None:
        if self.following and not self._timer.isActive():
            self._timer.start()

    def flush(self) -> None:
        """Put the view at its end now if a range change is waiting for the next turn (a
        picture taken in this turn — an exported frame — shows the end, not the text the
        view held before)."""
        if self._timer.isActive():
            self._timer.stop()
            self._follow()

    def _follow(self) -> None:
        if not self.following or end_in_sight(self.view):  # streaming text: already there
            return
        self.to_end()
        # A view less than a line and the document's margin high has nothing in sight at
        # its maximum (QPlainTextEdit counts no line as fitting): a line or so back shows
        # the last one.
        bar = self.view.verticalScrollBar()
        if end_in_sight(self.view) or bar.value() < bar.maximum():
            return
        at_max = bar.value()
        for value in range(at_max - 1, max(-1, at_max - 1 - MAX_STEP_BACK), -1):
            bar.setValue(value)
            if end_in_sight(self.view):
                return
        bar.setValue(at_max)


def follow_end(view: QPlainTextEdit, to_end: Callable[[], None]) -> EndFollower:
    """``view``'s :class:`EndFollower` (made once; asking again returns the same one)."""
    found = view.findChild(EndFollower)
    if isinstance(found, EndFollower) and found.parent() is view:
        return found
    return EndFollower(view, to_end)
