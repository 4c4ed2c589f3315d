"""The stream inspector dialog: one row per wire event of one request's response.

The rows are :func:`splitdesk.core.analyse.stream_inspector.inspect_stream`'s events (computed in
core); this dialog only shows them: arrival, gap, bytes, kind, whether the event counts
for TTFT (events without text — role-only, usage, finish, keep-alive, the end marker —
say "not counted for TTFT"), tokens it carried when the server says (several flagged),
the text it carried, and the raw line whole (API keys masked).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.stream_inspector import InspectedEvent

COLUMNS = ("#", "arrival (s)", "gap (ms)", "bytes", "event", "TTFT", "tokens", "text", "raw")


def ttft_cell(e: InspectedEvent) -> str:
    """The TTFT column's words for ``e``."""
    if e.first_token:
        return "first token: TTFT stamped here"
    return "counted" if e.counts_for_ttft else "not counted for TTFT"


def tokens_cell(e: InspectedEvent) -> str:
    """The tokens column: the count when the server said it, flagged when several."""
    if e.tokens is None:
        return ""
    return f"{e.tokens} ⚠ several in one chunk" if e.several_tokens else str(e.tokens)


def text_cell(e: InspectedEvent) -> str:
    """The text the event carried, quoted so spaces show (``" very"``); empty for none."""
    return repr(e.text) if e.text else ""


def raw_cell(e: InspectedEvent) -> str:
    """The event's raw lines on one line (``⏎`` between them), whole: never elided."""
    return e.raw.replace("\n", " ⏎ ")


class InspectorDialog(QDialog):
    """Lists ``events`` (one table row each) under ``title``.

    Every row is one line: the raw column holds the whole raw line (no eliding, no
    wrapping; the table scrolls sideways), the text column what the event carried, so rows
    that all begin ``data: {"choices":…`` still read apart; the selected event's raw lines
    are shown whole, wrapped, under the table (:attr:`detail`)."""

    def __init__(
        self, title: str, events: list[InspectedEvent], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Stream inspector · {title}")
        self.events = events
        layout = QVBoxLayout(self)
        counted = sum(e.counts_for_ttft for e in events)
        several = sum(e.several_tokens for e in events)
        summary = (
            f"{len(events)} events as they arrived; {counted} carried text (TTFT is stamped "
            f"at the first), {len(events) - counted} did not"
        )
        if several:
            summary += f"; {several} carried several tokens at once (ITL looks uneven then)"
        self.summary = QLabel(summary)
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.table = QTableWidget(len(events), len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        for row, e in enumerate(events):
            cells = (
                str(e.index),
                f"{e.t_s:.4f}",
                "" if e.gap_s is None else f"{e.gap_s * 1000:.1f}",
                str(e.bytes),
                e.kind,
                ttft_cell(e),
                tokens_cell(e),
                text_cell(e),
                raw_cell(e),
            )
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col >= len(cells) - 2:  # text and raw: as sent, in a fixed-width font
                    item.setFont(mono)
                if col == len(cells) - 1:
                    item.setToolTip(e.raw)
                self.table.setItem(row, col, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        # the raw column is as wide as its longest line: its name stays at its left edge
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.table.resizeRowsToContents()
        layout.addWidget(self.table, 4)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setFont(mono)
        self.detail.setPlaceholderText("Select an event to see its raw lines whole.")
        layout.addWidget(self.detail, 1)
        self.table.currentCellChanged.connect(lambda row, *_: self._show(row))
        if events:
            self.table.selectRow(0)
        self.resize(1000, 600)

    def _show(self, row: int) -> None:
        """Show event ``row``'s raw lines whole in :attr:`detail`."""
        if 0 <= row < len(self.events):
            self.detail.setPlainText(self.events[row].raw)
