"""The parallel panes' grid: readable from 2 to 16 questions, scrolling beyond.

Columns follow the available width (a pane never gets narrower than ``min_width``); rows
share the height down to ``min_height`` each, then the grid scrolls. One pane can be
expanded to fill the grid and restored.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QWidget

from splitdesk.ui.panes import RequestPane


class PaneGrid(QScrollArea):
    """A scrolling grid of :class:`RequestPane` s with an empty-state message."""

    def __init__(self, placeholder: str, scale: float = 1.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.min_width = int(260 * scale)
        self.min_height = int(125 * scale)
        self.panes: list[RequestPane] = []
        self.focused: RequestPane | None = None
        self._inner = QWidget()
        self._grid = QGridLayout(self._inner)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setSpacing(8)
        self._placeholder = QLabel(placeholder)
        self._placeholder.setObjectName("hint")
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._placeholder.setWordWrap(True)
        self._grid.addWidget(self._placeholder, 0, 0)
        self.setWidget(self._inner)
        self._columns = 0
        self._relayout_pending = False

    def clear(self) -> None:
        """Remove every pane and show the placeholder."""
        for pane in self.panes:
            self._grid.removeWidget(pane)
            pane.deleteLater()
        self.panes = []
        self.focused = None
        self._columns = 0
        self._placeholder.show()
        self._grid.addWidget(self._placeholder, 0, 0)

    def add(self, pane: RequestPane) -> None:
        """Append ``pane`` to the grid (laid out once the current batch of adds is done)."""
        self.panes.append(pane)
        pane.focusToggled.connect(lambda p=pane: self.toggle_focus(p))
        self._placeholder.hide()
        self._columns = 0
        if not self._relayout_pending:
            self._relayout_pending = True
            QTimer.singleShot(0, self._deferred_relayout)

    def _deferred_relayout(self) -> None:
        if self._relayout_pending:
            self._relayout_pending = False
            self._relayout()

    def relayout_now(self) -> None:
        """Lay the panes out now instead of at the next event-loop turn."""
        self._relayout_pending = False
        self._relayout()

    def toggle_focus(self, pane: RequestPane) -> None:
        """Expand ``pane`` over the grid, or go back to all panes."""
        self.focused = None if self.focused is pane else pane
        for p in self.panes:
            p.setVisible(self.focused is None or p is self.focused)
            p.focus_button.setText("⤡" if p is self.focused else "⤢")
        self._columns = 0
        self._relayout()

    def columns_for(self, width: int, height: int, n: int) -> int:
        """How many columns ``n`` panes get in ``width`` × ``height`` pixels (1–4): the
        layout whose panes are furthest above their minimum size in both directions."""
        if n <= 1:
            return 1

        def score(cols: int) -> float:
            rows = math.ceil(n / cols)
            spare = cols * rows - n  # empty cells waste space
            return (
                min(width / cols / self.min_width, height / rows / self.min_height) - 0.05 * spare
            )

        return max(range(1, min(n, 4) + 1), key=score)

    def _relayout(self) -> None:
        visible = [p for p in self.panes if self.focused is None or p is self.focused]
        if not visible:
            return
        cols = self.columns_for(self.viewport().width(), self.viewport().height(), len(visible))
        if cols == self._columns:
            return
        self._columns = cols
        for p in self.panes:
            self._grid.removeWidget(p)
        for c in range(8):
            self._grid.setColumnStretch(c, 0)
            self._grid.setRowStretch(c, 0)
        for i, p in enumerate(visible):
            last = i == len(visible) - 1
            span = cols - i % cols if last else 1  # the last pane fills its row
            self._grid.addWidget(p, i // cols, i % cols, 1, span)
        rows = math.ceil(len(visible) / cols)
        for c in range(cols):
            self._grid.setColumnStretch(c, 1)
        for r in range(rows):
            self._grid.setRowStretch(r, 1)
        for p in visible:
            p.setMinimumHeight(self.min_height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._relayout()
