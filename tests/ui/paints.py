"""Paint events seen by widgets, for tests of what the window paints and when."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget


class PaintCounter(QObject):
    """Counts the paint events each watched widget receives; with ``probe``, also keeps
    what ``probe()`` returned at each of them (:attr:`seen`, in order)."""

    def __init__(self, *widgets: QWidget, probe: Callable[[], Any] | None = None) -> None:
        super().__init__()
        self.counts = {id(w): 0 for w in widgets}
        self.probe = probe
        self.seen: list[Any] = []
        for w in widgets:
            w.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and id(watched) in self.counts:
            self.counts[id(watched)] += 1
            if self.probe is not None:
                self.seen.append(self.probe())
        return False

    def of(self, widget: QWidget) -> int:
        return self.counts[id(widget)]

    def stop(self, *widgets: QWidget) -> None:
        """Watch ``widgets`` no more."""
        for w in widgets:
            w.removeEventFilter(self)
