"""The stream inspector dialog: one row per wire event of one request's response.

The rows are :func:`splitdesk.core.analyse.stream_inspector.inspect_stream`'s events (computed in
core); this dialog only shows them: arrival, gap, bytes, kind, whether the event counts
for TTFT (events without text — role-only, usage, finish, keep-alive, the end marker —
say "not counted for TTFT"), tokens it carried when the server says (several flagged),
and the raw line (API keys masked).
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.stream_inspector import InspectedEvent

COLUMNS = ("#", "arrival (s)", "gap (ms)", "bytes", "event", "TTFT", "tokens", "raw")


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


class InspectorDialog(QDialog):
    """Lists ``events`` (one table row each) under ``title``."""

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
        for row, e in enumerate(events):
            cells = (
                str(e.index),
                f"{e.t_s:.4f}",
                "" if e.gap_s is None else f"{e.gap_s * 1000:.1f}",
                str(e.bytes),
                e.kind,
                ttft_cell(e),
                tokens_cell(e),
                e.raw.replace("\n", " ⏎ "),
            )
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col == len(cells) - 1:
                    item.setToolTip(e.raw)
                self.table.setItem(row, col, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        layout.addWidget(self.table)
        self.resize(1000, 600)
