"""The window's Engineer menu: the client's own pattern (:mod:`splitdesk.core.client_pattern`).

Two checkable actions choose how the next run sends: cold connections (opened inside the
timed phase) and release as scheduled (no barrier). The pattern a run used is kept
(:attr:`EngineerMenu.used`), shown beside the speed-up in the summary and saved in the
run's recording.
"""

from __future__ import annotations

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow

from splitdesk.core.client_pattern import ClientPattern


class EngineerMenu:
    """Adds the menu to ``window``'s menu bar."""

    def __init__(self, window: QMainWindow) -> None:
        self.window = window
        self.menu = window.menuBar().addMenu("&Engineer")
        client = self.menu.addMenu("Client pattern")
        client.setToolTipsVisible(True)
        self.cold = QAction("Cold connections (opened inside the timed phase)", window)
        self.cold.setCheckable(True)
        self.cold.setToolTip(
            "Off (default): every connection is opened before a phase, so TTFT measures the "
            "server. On: each request opens its own, as a plain script does."
        )
        self.as_scheduled = QAction("Release as scheduled (no barrier)", window)
        self.as_scheduled.setCheckable(True)
        self.as_scheduled.setToolTip(
            "Off (default): the N requests are built first and sent together. On: each is "
            "sent when the event loop gets to it, as a plain script's asyncio.gather does."
        )
        client.addAction(self.cold)
        client.addAction(self.as_scheduled)
        #: The pattern of the run started last.
        self.used = ClientPattern()

    def pattern(self) -> ClientPattern:
        """The pattern the menu selects now."""
        return ClientPattern(
            cold=self.cold.isChecked(),
            release="as-scheduled" if self.as_scheduled.isChecked() else "barrier",
        )

    def take(self) -> ClientPattern:
        """The pattern for a run starting now (remembered as :attr:`used`)."""
        self.used = self.pattern()
        return self.used
