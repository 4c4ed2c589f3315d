"""A status bar whose message ends in "…" when it is wider than the bar.

``QStatusBar`` draws its message clipped at the bar's right edge: on a projector (1280×720
at ×1.5) a refused run's message ended "Please retry afte". This bar draws the message
elided instead, with the whole message on hover. ``currentMessage()`` and
``messageChanged`` are Qt's, unchanged: only the drawing differs.

Hand-written because Qt has no elide mode for the status bar's message: the paint event
below is ``QStatusBar::paintEvent`` (qstatusbar.cpp, Qt 6) with ``elidedText`` in place
of the clipped text, for a bar with no permanent widgets (the window adds none).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QSizeGrip, QStatusBar, QStyle, QStyleOption, QWidget


class ElidingStatusBar(QStatusBar):
    """A ``QStatusBar`` whose message is elided at its right edge, whole on hover."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.messageChanged.connect(lambda _text: self._update_tip())

    def message_rect(self) -> tuple[int, int]:
        """The message's left and right edges (px), as Qt places it: 6 px in, and 12 px
        short of the right edge or up to the size grip when one shows."""
        left, right = 6, self.width() - 12
        grip = self.findChild(QSizeGrip)
        if grip is not None and grip.isVisible():
            right = grip.x()
        return left, right

    def shown_message(self) -> str:
        """The message as drawn: whole, or elided to the bar's width."""
        left, right = self.message_rect()
        return self.fontMetrics().elidedText(
            self.currentMessage(), Qt.TextElideMode.ElideRight, max(0, right - left)
        )

    def _update_tip(self) -> None:
        message = self.currentMessage()
        self.setToolTip(message if self.shown_message() != message else "")

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_tip()

    def paintEvent(self, event: QPaintEvent) -> None:
        message = self.currentMessage()
        if not message:
            super().paintEvent(event)
            return
        p = QPainter(self)
        opt = QStyleOption()
        opt.initFrom(self)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelStatusBar, opt, p, self)
        left, right = self.message_rect()
        p.setPen(self.palette().windowText().color())
        flags = Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter
        p.drawText(
            left,
            0,
            max(0, right - left),
            self.height(),
            flags.value | Qt.TextFlag.TextSingleLine.value,
            self.shown_message(),
        )
        p.end()
