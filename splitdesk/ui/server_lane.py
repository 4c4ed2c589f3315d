"""The server lane under the timeline: the server's own batch size and queue over time.

While a run is live a :class:`~splitdesk.core.server_metrics.MetricsPoller` reads the
endpoint's ``/metrics`` on its own thread (4 times a second, off the measuring engine);
the lane redraws from the samples gathered so far a few times a second, on the timeline's
time axis (x-linked to it). It shows what the server says, nothing inferred: when the
server publishes no known metrics, the lane says so in one line and draws nothing.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from splitdesk.core.endpoints import EndpointSettings
from splitdesk.core.run_state import RunState
from splitdesk.core.server_metrics import LoadSeries, MetricsPoller, load_series, metrics_url
from splitdesk.ui.theme import Theme, ui_font

REDRAW_MS = 250


class ServerLane(QWidget):
    """A small plot of the server's running (batch) and waiting (queue) counts."""

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
        layout.addWidget(self.caption)
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
            self.setVisible(False)
            return
        verify: bool | str = settings.ca_bundle or settings.verify_tls
        self.poller = MetricsPoller(url, verify=verify).start()
        self.caption.setText(f"Server: asking {url} …")
        self.setVisible(True)
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
