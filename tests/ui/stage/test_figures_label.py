"""A pane's live figures: drawn exactly as a ``QLabel`` draws them, and a new text repaints
the label without laying out its pane and the window again (issue 13)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication, QHBoxLayout, QLabel, QWidget

from splitdesk.ui.common.theme import DARK, ui_font
from splitdesk.ui.stage.panes import FiguresLabel

FIGURES = "TTFT 0.21 s · ~182 tok · 61 tok/s · end 3.19 s"


def row(label: QLabel, qtbot: Any) -> QWidget:
    """``label`` in a pane-like row (a state word beside it), wide enough for ``FIGURES``
    in the label's font (whatever the application font is)."""
    holder = QWidget()
    qtbot.addWidget(holder)
    lay = QHBoxLayout(holder)
    lay.addWidget(QLabel("● streaming"))
    label.setObjectName("paneStats")  # the theme's colour for pane figures
    label.setFont(ui_font(1.0, -0.5))
    lay.addWidget(label, 1)
    holder.setStyleSheet(f"QLabel#paneStats {{ color: {DARK.muted}; }}")
    state_px = QFontMetrics(QApplication.font()).horizontalAdvance("● streaming")
    holder.resize(label.fontMetrics().horizontalAdvance(FIGURES) + state_px + 120, 40)
    holder.show()
    return holder


def test_figures_look_like_a_label(qtbot: Any) -> None:
    plain = QLabel(FIGURES)
    figures = FiguresLabel(FIGURES)
    a, b = row(plain, qtbot), row(figures, qtbot)
    qtbot.waitUntil(lambda: plain.width() > 100 and figures.width() > 100, timeout=5000)
    assert figures.text() == FIGURES
    assert (figures.size(), figures.sizeHint().height()) == (
        plain.size(),
        plain.sizeHint().height(),
    )
    assert figures.grab().toImage() == plain.grab().toImage(), "figures drawn unlike a QLabel"
    assert a.grab().toImage() == b.grab().toImage()


class LayoutRequests(QObject):
    """Counts layout requests posted to the watched widget."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            self.count += 1
        return False


def test_new_figures_repaint_without_a_new_layout(qtbot: Any) -> None:
    figures = FiguresLabel("TTFT …")
    holder = row(figures, qtbot)
    qtbot.waitUntil(lambda: figures.width() > 100, timeout=5000)
    QCoreApplication.sendPostedEvents()  # the row's own first layout
    requests = LayoutRequests()
    holder.installEventFilter(requests)
    painted: list[str] = []
    for n in range(1, 31):
        figures.set_variants([f"TTFT 0.21 s · ~{n} tok · 61 tok/s", f"TTFT 0.21 s · ~{n} tok"])
        figures.repaint()
        QCoreApplication.sendPostedEvents()  # one frame: whatever the change posted
        painted.append(figures.text())
    assert painted[-1] == "TTFT 0.21 s · ~30 tok · 61 tok/s"
    assert requests.count == 0, f"{requests.count} layout requests for 30 new figure texts"
