"""The parallel panes' grid: readable from 2 to 16 questions, scrolling beyond.

Columns follow the available width (a pane never gets narrower than its header needs:
badge, whole label, expand button); rows share the height down to ``min_height`` each.
When the panes do not fit at that height they turn compact (header, state, the last two
lines, or the last line where that shows a row more), then tight (state and figures in
the header row, one line), and when even those do not all fit the grid scrolls, with its
scroll bar shown and :attr:`PaneGrid.more_label` saying how many panes are out of sight
("+11 more ↓": header or first text line not in view; ↑ when they are above, ↕ both
ways). One pane can be expanded to fill the grid and restored.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import shiboken6
from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QWidget

from splitdesk.ui.stage.panes import RequestPane


def dispose(pane: QWidget) -> None:
    """Delete ``pane`` now, and let its Python side go of what it held (its run).

    Now, not at the event loop's next turn (``deleteLater``): the next run's panes are
    built right after, and a run's set alive beside the next one (64 panes hold some 25 MB
    of Qt objects) left that much freed memory in the allocator, never returned to the
    system (``benchmarks/soak.py``: RSS +20 MB on the second run of 64 streams).

    A deleted pane's Python object lives on while it is in a reference cycle (its throttle
    holds its bound ``refresh``) until a full garbage collection, up to a minute later; it
    held its trace and the :class:`~splitdesk.core.run.run_state.RunState`, and through them
    every event of the run: several runs' events at once. Its attributes are dropped."""
    shiboken6.delete(pane)
    vars(pane).clear()


class _Mode(NamedTuple):
    """One way to lay the panes out (:meth:`RequestPane.set_compact`) and the least size
    (px) a pane needs in it."""

    compact: bool
    tight: bool
    one_line: bool
    min_width: int
    min_height: int


class PaneGrid(QScrollArea):
    """A scrolling grid of :class:`RequestPane` s with an empty-state message."""

    def __init__(self, placeholder: str, scale: float = 1.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self._scale = scale
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.base_min_width = int(200 * scale)
        self.min_width = self.base_min_width
        self.min_height = int(125 * scale)
        self.compact = False
        self.tight = False
        self.one_line = False
        #: Whoever sees the grid can scroll it (False in an exported picture or clip: the
        #: note then says how many panes are not shown, not where to scroll).
        self.scrolls = True
        #: "+11 more ↓" while panes are scrolled out of sight (placed by the window).
        self.more_label = QLabel("")
        self.more_label.setObjectName("more")
        self.more_label.setToolTip("Scroll the parallel panes to see the others")
        self.more_label.hide()
        self.verticalScrollBar().valueChanged.connect(lambda _v: self._update_more())
        self.verticalScrollBar().rangeChanged.connect(lambda _a, _b: self._update_more())
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
        self._relayouting = False  #: inside :meth:`_relayout`
        # "+N more" counted again whenever the grid's inner widget is laid out anew (a
        # pane's height changes after the relayout that counted: "+5 more" had stayed
        # beside 4 panes out of sight); coalesced to one count per turn
        self._more_timer = QTimer(self)
        self._more_timer.setSingleShot(True)
        self._more_timer.setInterval(0)
        self._more_timer.timeout.connect(self._update_more)
        self._inner.installEventFilter(self)

    def clear(self) -> None:
        """Remove every pane (:func:`dispose`) and show the placeholder."""
        for pane in self.panes:
            self._grid.removeWidget(pane)
            dispose(pane)
        self.panes = []
        self.focused = None
        self._columns = 0
        self.compact = self.tight = self.one_line = False
        self.more_label.hide()
        self._placeholder.show()
        self._grid.addWidget(self._placeholder, 0, 0)

    def add(self, pane: RequestPane, relayout: bool = True) -> None:
        """Append ``pane`` to the grid, laid out once the current batch of adds is done
        (``relayout=False``: when the caller says, :meth:`relayout_now`).

        The pane becomes a (hidden) child of the grid's inner widget now: reparenting and
        polishing a pane (its style, for every child widget) is part of its cost, paid
        here, pane by pane, rather than all at once by the one layout pass that shows
        them (a run of 64 panes is built over several event-loop turns, issue 13)."""
        self.panes.append(pane)
        pane.focusToggled.connect(lambda p=pane: self.toggle_focus(p))
        pane.needChanged.connect(self.relayout_soon)
        pane.setParent(self._inner)
        pane.ensurePolished()
        self._placeholder.hide()
        self._columns = 0
        if relayout:
            self.relayout_soon()

    def relayout_soon(self) -> None:
        """Lay the grid out again once this event-loop turn is done (one pass for many
        calls: a batch of panes added, every refused pane's message shown at once)."""
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
        """How many columns ``n`` panes get in ``width`` × ``height`` pixels (1–4): of the
        layouts whose columns are at least ``min_width`` wide, the one whose panes are
        furthest above their minimum size in both directions."""
        if n <= 1:
            return 1

        def score(cols: int) -> float:
            rows = math.ceil(n / cols)
            spare = cols * rows - n  # empty cells waste space
            return (
                min(width / cols / self.min_width, height / rows / self.min_height) - 0.05 * spare
            )

        spacing = self._grid.spacing()
        fitting = [
            c for c in range(1, min(n, 4) + 1) if (width - (c - 1) * spacing) / c >= self.min_width
        ]  # never so many columns that a header's label is cut
        return max(fitting or [1], key=score)

    def _relayout(self) -> None:
        """Choose the panes' mode and columns for the grid's size now (a layout asked for
        while one is under way comes once it is done: :meth:`relayout_soon`)."""
        if self._relayouting:
            self.relayout_soon()
            return
        self._relayouting = True
        try:
            self._lay_out()
        finally:
            self._relayouting = False

    def _lay_out(self) -> None:
        visible = [p for p in self.panes if self.focused is None or p is self.focused]
        if not visible:
            return
        spacing = self._grid.spacing()
        # the whole height: the margin that hides a partial row (_fit_rows) decides nothing
        height = self.viewport().height() + self.viewportMargins().bottom()
        # The width with no scroll bar, whether one shows now or not: a layout chosen for
        # the width left beside the bar that needs no bar (or the reverse) would flip the
        # bar on and off, each flip a resize and a new layout, until the stack overflowed
        # (a window whose grid was a few pixels either side of two columns crashed).
        full = self.width() - 2 * self.frameWidth()
        bar = self.verticalScrollBar().sizeHint().width()

        def shown_at(width: int, min_width: int, min_height: int) -> int:
            """How many panes are wholly in sight with these minimum sizes."""
            self.min_width, self.min_height = min_width, min_height
            cols = self.columns_for(width, height, len(visible))
            rows = (height + spacing) // (min_height + spacing)  # a pane taller shows none
            return min(len(visible), cols * rows)

        # a failure's message gets the lines a row of the view can hold (all of them
        # wherever there is room; an expanded pane has the whole view)
        for p in visible:
            p.fit_error(height)
        # normal panes while they all fit; else the way that shows the most panes at
        # once: compact (header, state row, two lines), compact with one line (the five
        # panes of the default run at the window's default size: two lines left the
        # fifth out of sight under ~100 px of empty rows) or tight (state and figures in
        # the header row, one line)
        header = max([self.base_min_width] + [p.header_min_width() for p in visible])
        # normal: 125 px, or what a pane's message needs with one line of text under it
        # (a refused pane's message had been cut mid-line in a 125 px row)
        normal_h = max([int(125 * self._scale)] + [p.compact_height(1) for p in visible])
        modes = [_Mode(False, False, False, header, normal_h)]
        if self.focused is None:
            modes.append(
                _Mode(True, False, False, header, max(p.compact_height() for p in visible))
            )
            one_line_h = max(p.compact_height(1) for p in visible)
            modes.append(_Mode(True, False, True, header, one_line_h))
            tight_h = max(p.tight_height() for p in visible)
            tight_width = max([self.base_min_width] + [p.tight_min_width() for p in visible])
            modes.append(_Mode(True, True, True, tight_width, tight_h))
        # tight with no room for the figures (they drop; their tooltip keeps them): only
        # where every way with figures leaves more than half the panes out of sight (two
        # questions at 1280×720 ×1.5 showed one pane and "+1 more"), or some out of
        # sight where this shows them all (the default five at the default size on the
        # single-slot profile, whose longer summary left the grid 5 px short of three
        # one-line rows: "+1 more" over an empty strip)
        bare = None
        if self.focused is None:
            bare_width = max([self.base_min_width] + [p.tight_min_width(False) for p in visible])
            bare = modes[-1]._replace(min_width=bare_width)

        def shows(width: int, mode: _Mode) -> int:
            return shown_at(width, mode.min_width, mode.min_height)

        def choose(width: int) -> tuple[_Mode, int]:
            best = modes[0]
            if shows(width, best) < len(visible):  # a tie: the first of compact … normal
                order = modes[1:] + modes[:1]
                best = max(order, key=lambda m: (shows(width, m), -order.index(m)))
            shown = shows(width, best)
            if bare is not None and shows(width, bare) > shown:
                few = 2 * shown <= len(visible)
                if few or shows(width, bare) == len(visible):
                    best = bare
            self.min_width, self.min_height = best.min_width, best.min_height
            return best, self.columns_for(width, height, len(visible))

        best, cols = choose(full)
        rows = math.ceil(len(visible) / cols)
        if rows * (best.min_height + spacing) - spacing > height:  # it scrolls: the bar takes room
            best, cols = choose(full - bar)
        self.min_width, self.min_height = best.min_width, best.min_height
        for p in self.panes:
            p.set_compact(best.compact, best.tight, best.one_line)
        self.compact, self.tight, self.one_line = best.compact, best.tight, best.one_line
        for p in visible:
            p.setMinimumHeight(self.min_height)
        if cols == self._columns:
            self._fit_rows(math.ceil(len(visible) / cols))
            self._update_more()
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
        self._fit_rows(rows)
        QTimer.singleShot(0, self._update_more)  # once the new layout has its geometry

    def _fit_rows(self, rows: int) -> None:
        """When the rows do not all fit, the view shows whole rows only: the pixels left
        under the last whole row stay empty (a viewport margin) instead of showing the next
        row's header cut in half, and a scroll step is one row, so a scroll keeps rows
        whole."""
        spacing = self._grid.spacing()
        pitch = self.min_height + spacing
        full = self.height() - 2 * self.frameWidth()
        margin = 0
        if pitch > 0 and rows * pitch - spacing > full:
            shown = max(1, (full + spacing) // pitch)
            margin = max(0, full - (shown * pitch - spacing))
        if margin != self.viewportMargins().bottom():
            self.setViewportMargins(0, 0, 0, margin)
        self.verticalScrollBar().setSingleStep(max(1, pitch))

    def _shown_rect(self) -> QRect:
        """The part of the grid's inner widget in sight, in its coordinates."""
        bar = self.verticalScrollBar()
        return QRect(0, bar.value(), self.viewport().width(), self.viewport().height())

    @staticmethod
    def _readable_part(pane: RequestPane) -> QRect:
        """What of ``pane`` must be in sight for it to be read: its header down to the
        first line of its text (a pane cut only below that is on screen, not "more")."""
        g = pane.geometry()
        text = pane.text
        if text.isVisibleTo(pane):
            bottom = text.mapTo(pane, QPoint(0, 0)).y() + pane._lines_height(1)
        elif pane.error.isVisibleTo(pane):  # a failed pane: the first line of its error
            error = pane.error
            bottom = error.mapTo(pane, QPoint(0, 0)).y() + error.fontMetrics().height()
        else:
            return g
        return QRect(g.left(), g.top(), g.width(), min(g.height(), bottom))

    def hidden_panes(self) -> list[RequestPane]:
        """Panes out of sight: their header or the first line of their text is not inside
        the visible part of the grid (scrolled above or below it)."""
        shown = self._shown_rect()
        return [
            p
            for p in self.panes
            if p.isVisibleTo(self) and not shown.contains(self._readable_part(p))
        ]

    def _update_more(self) -> None:
        hidden = self.hidden_panes() if self.panes else []
        top = self._shown_rect().top()
        above = sum(1 for p in hidden if self._readable_part(p).top() < top)
        arrow = "↓" if not above else "↑" if above == len(hidden) else "↕"
        if not self.scrolls:  # a picture or a clip: nobody can scroll it
            self.more_label.setText(f"+{len(hidden)} more not shown" if hidden else "")
        else:
            self.more_label.setText(f"+{len(hidden)} more {arrow} scroll" if hidden else "")
        self.more_label.setVisible(bool(hidden))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The inner widget laid out or resized: count "+N more" again, next turn."""
        # QScrollArea filters its own children's events from its constructor on
        inner, timer = self.__dict__.get("_inner"), self.__dict__.get("_more_timer")
        if (
            timer is not None
            and watched is inner
            and event.type()
            in (
                QEvent.Type.LayoutRequest,
                QEvent.Type.Resize,
            )
        ):
            timer.start()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """A new size lays the panes out again. ``setViewportMargins`` (:meth:`_fit_rows`)
        sends this widget a resize event of the same size: that one is not a new size, and
        laying out again from it had recursed without end where a layout's margin changed
        the scroll bar and so the panes' widths and their messages' heights (refused panes
        at 1280×720 ×1.5: a RecursionError, then a segmentation fault)."""
        super().resizeEvent(event)
        if event.size() != event.oldSize():
            self._relayout()
