"""The server lane under the timeline: the server's own batch size and queue over time.

While a run is live a :class:`~splitdesk.core.server_metrics.MetricsPoller` reads the
endpoint's ``/metrics`` on its own thread (4 times a second, off the measuring engine);
the lane redraws from the samples gathered so far a few times a second, on the timeline's
time axis (x-linked to it). It shows what the server says, nothing inferred: when the
server publishes no known metrics, the lane says so in one line and draws nothing.

On a short window (a projector) the lane gives way so the timeline keeps room for all its
lanes (:meth:`ServerLane.set_fold`, decided by the window): first it folds to its caption
line, then, if that is still too tall, it hides. The arrow before the caption folds or
unfolds it by hand, View → Server lane hides or shows it; such a choice is the user's and
is kept for the session.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from splitdesk.core.endpoints import EndpointSettings
from splitdesk.core.run_state import RunState
from splitdesk.core.server_metrics import LoadSeries, MetricsPoller, load_series, metrics_url
from splitdesk.ui.theme import Theme, ui_font

REDRAW_MS = 250


class ServerLane(QWidget):
    """A small plot of the server's running (batch) and waiting (queue) counts."""

    #: The fold changed ("open", "line" or "off"): the window re-divides the height between
    #: the panes and the timeline.
    foldChanged = Signal(str)

    def __init__(
        self,
        theme: Theme,
        scale: float = 1.0,
        link_to: pg.PlotWidget | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.theme = theme
        self.poller: MetricsPoller | None = None
        self.state: RunState | None = None
        self.series = LoadSeries([], [], [])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(0)
        self.caption = QLabel("")
        self.caption.setFont(ui_font(scale, -1))
        self.caption.setStyleSheet(f"color: {theme.muted}")
        #: "open" (caption and plot), "line" (the caption line only) or "off" (hidden
        #: while a run polls the server) (:meth:`set_fold`).
        self.fold = "open"
        #: The user's own choice (fold arrow, View menu); None: the window decides.
        self.fold_by_user: str | None = None
        self.fold_button = QToolButton()
        self.fold_button.setAutoRaise(True)
        self.fold_button.setText("▾")  # the style's drawn arrow is dark on the dark theme
        self.fold_button.setFont(ui_font(scale, -1))
        self.fold_button.setToolTip("Fold the server lane to this line, or show its plot")
        self.fold_button.setFixedHeight(self.caption.sizeHint().height())  # one text line
        self.fold_button.clicked.connect(
            lambda: self.set_fold("open" if self.fold == "line" else "line", by_user=True)
        )
        #: View → Server lane: shown (checked) or hidden.
        self.action = QAction("Server lane (/metrics)", self)
        self.action.setCheckable(True)
        self.action.setChecked(True)
        self.action.setToolTip("The server's own batch size and queue under the timeline")
        self.action.triggered.connect(
            lambda on: self.set_fold("open" if on else "off", by_user=True)
        )
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.setSpacing(4)
        header.addWidget(self.fold_button)
        header.addWidget(self.caption, 1)
        layout.addLayout(header)
        self.plot = pg.PlotWidget(background=theme.window)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        self.plot.setFixedHeight(round(70 * scale))
        item = self.plot.getPlotItem()
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            axis.setPen(pg.mkPen(theme.border))
            axis.setTextPen(pg.mkPen(theme.text))
            axis.setStyle(tickFont=ui_font(scale, -1))
        item.getAxis("bottom").setStyle(showValues=False)
        item.setYRange(0, 1, padding=0.1)
        self.running_curve = self.plot.plot(
            [], [], pen=pg.mkPen(theme.accent, width=2), name="batch"
        )
        self.waiting_curve = self.plot.plot(
            [], [], pen=pg.mkPen(theme.waiting, width=2, style=Qt.PenStyle.DashLine)
        )
        if link_to is not None:
            self.plot.setXLink(link_to)
        layout.addWidget(self.plot)
        self._timer = QTimer(self)
        self._timer.setInterval(REDRAW_MS)
        self._timer.timeout.connect(self.redraw)
        self.setVisible(False)

    def set_fold(self, fold: str, by_user: bool = False) -> None:
        """Show the lane whole (``"open"``), as its caption line (``"line"``) or not at all
        (``"off"``); ``by_user``: the user's choice, which the window then keeps.
        Raises ValueError for another ``fold``."""
        if fold not in ("open", "line", "off"):
            raise ValueError(f"fold must be open, line or off, not {fold!r}")
        if by_user:
            self.fold_by_user = fold
        if fold == self.fold:
            return
        self.fold = fold
        self.plot.setVisible(fold == "open")
        self.fold_button.setText("▾" if fold == "open" else "▸")
        self.action.setChecked(fold != "off")
        self._show()
        self.foldChanged.emit(fold)

    def polling(self) -> bool:
        """Whether a run has this lane poll a server (it is shown unless folded off)."""
        return self.poller is not None

    def _show(self) -> None:
        self.setVisible(self.polling() and self.fold != "off")

    def line_height(self) -> int:
        """Pixels of the caption line (the lane folded to ``"line"``)."""
        return max(self.caption.sizeHint().height(), self.fold_button.height())

    def open_height(self) -> int:
        """Pixels of the whole lane: the caption line and the plot."""
        return self.line_height() + self.plot.minimumHeight()

    def start(self, state: RunState, settings: EndpointSettings, sim_root: str | None) -> None:
        """Poll the endpoint of ``settings`` for the run ``state`` (``sim_root``: the built-in
        endpoint's root URL when it serves the run). An endpoint URL that names no server
        leaves the lane hidden."""
        self.stop()
        self.state = state
        self.series = LoadSeries([], [], [])
        try:
            url = f"{sim_root}/metrics" if settings.is_builtin and sim_root else None
            url = url or metrics_url(settings.base_url.strip())
        except ValueError:
            self.poller = None
            self.setVisible(False)
            return
        verify: bool | str = settings.ca_bundle or settings.verify_tls
        self.poller = MetricsPoller(url, verify=verify).start()
        self.caption.setText(f"Server: asking {url} …")
        self._show()
        self._timer.start()

    def finish(self, state: RunState | None = None) -> None:
        """The run ended: stop polling (without waiting for the thread) and draw the last
        samples."""
        self.stop()
        self.redraw()

    def stop(self) -> None:
        """Stop the poller without blocking the GUI thread."""
        self._timer.stop()
        if self.poller is not None:
            self.poller.stop(timeout=0)

    def redraw(self) -> None:
        """Draw the samples gathered so far (the figures come from core)."""
        poller, state = self.poller, self.state
        if poller is None or state is None or state.info is None:
            return
        self.series = load_series(list(poller.samples), state.info.t0_ns)
        s = self.series
        if not s.t_s:
            if poller.status not in ("not started", "ok"):
                self.caption.setText(f"Server metrics: none ({poller.status})")
            return
        self.running_curve.setData(s.t_s, s.running)
        self.waiting_curve.setData(s.t_s, s.waiting)
        self.plot.getPlotItem().setYRange(0, max(s.peak, 1.0), padding=0.1)
        family = poller.samples[-1].load.family
        self.caption.setText(
            f"Server ({family}, from its /metrics): batch size (solid) {s.running[-1]:g} · "
            f"queue (dashed) {s.waiting[-1]:g} · peak batch {s.peak_running:g}"
        )
