"""A word-wrapped label that shows at most a given number of whole lines.

A failed pane's error message wraps under its header, whole wherever the pane has the
room. On a projector (1280×720 at ×1.5) a row of panes may have less height than a long
message needs: the message then ends, on its last line that fits, in "…", and the whole
message stays on hover (and in the summary, the status bar and every export), instead of
the pane growing taller than the grid and being cut mid-line at the bottom.

Qt's own eliding (``QFontMetrics.elidedText``) is one line only; the line breaks come from
``QTextLayout``, the same layout engine (and wrap mode) the label's own wrapping uses.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent, QTextLayout, QTextOption
from PySide6.QtWidgets import QLabel, QWidget


def wrapped_lines(text: str, label: QLabel, width: int) -> list[str]:
    """``text`` broken into the lines ``label``'s font lays it out in at ``width`` pixels,
    as a word-wrapped ``QLabel`` does (at word boundaries; a word longer than a line keeps
    a line of its own, running past it); each line's text with its trailing spaces.
    Explicit newlines end lines; an empty paragraph is one empty line."""
    out: list[str] = []
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WordWrap)  # QLabel's own (qlabel.cpp)
    for paragraph in text.split("\n"):
        layout = QTextLayout(paragraph, label.font())
        layout.setTextOption(option)
        layout.beginLayout()
        while True:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(max(1, width))
            out.append(paragraph[line.textStart() : line.textStart() + line.textLength()])
        layout.endLayout()  # an empty paragraph made one (empty) line
    return out


class ClampedLabel(QLabel):
    """A plain-text, word-wrapped label showing at most :meth:`max_lines` lines (all of
    them by default); past that, the last shown line ends in "…" and the full text is
    its tooltip. :meth:`setText` sets the whole text; :meth:`full_text` returns it, and
    ``text()`` what is shown."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self._full = ""
        self._max_lines: int | None = None
        self._width = -1  #: the width the shown text was worked out for

    def full_text(self) -> str:
        """The whole text, as set."""
        return self._full

    def max_lines(self) -> int | None:
        """The most lines shown (None: every line)."""
        return self._max_lines

    def setText(self, text: str) -> None:
        """Show ``text`` (at most :meth:`max_lines` lines of it)."""
        self._full = text
        self._clamp()

    def clear(self) -> None:
        """No text (and no tooltip): as ``setText("")``."""
        self.setText("")

    def set_max_lines(self, lines: int | None) -> None:
        """Show at most ``lines`` lines (≥ 1; None: all). Raises ValueError below 1."""
        if lines is not None and lines < 1:
            raise ValueError(f"a clamped label shows at least one line, not {lines}")
        if lines != self._max_lines:
            self._max_lines = lines
            self._clamp()

    def is_clamped(self) -> bool:
        """Whether some of the text is left out (it ends in "…")."""
        return self.text() != self._full

    def _clamp(self) -> None:
        width = self.contentsRect().width()
        self._width = width
        shown = self._full
        n = self._max_lines
        if n is not None and width > 0:
            lines = wrapped_lines(self._full, self, width)
            if len(lines) > n:
                metrics = self.fontMetrics()
                head = [line.rstrip() for line in lines[: n - 1]]
                rest = " ".join(line.strip() for line in lines[n - 1 :])
                # the rest, cut to one line; an ellipsis even when the cut fell at its end
                last = metrics.elidedText(rest + " …", Qt.TextElideMode.ElideRight, width)
                shown = "\n".join([*head, last])
        if shown != self.text():
            super().setText(shown)  # what is shown; setText sets the whole
        tip = "" if shown == self._full else self._full
        if tip != self.toolTip():
            self.setToolTip(tip)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Another width breaks the lines elsewhere: work the shown lines out again."""
        super().resizeEvent(event)
        if self._max_lines is not None and self.contentsRect().width() != self._width:
            self._clamp()
