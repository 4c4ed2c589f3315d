"""The server lane under the timeline: the server's own batch size and queue over time.

While a run is live a :class:`~splitdesk.core.measure.server_metrics.MetricsPoller` reads the
endpoint's ``/metrics`` on its own thread (4 times a second, off the measuring engine);
the lane redraws from the samples gathered so far a few times a second, on the timeline's
time axis (x-linked to it). It shows what the server says, nothing inferred: when the
server publishes no known metrics, the lane says so in one line and draws nothing. Its
KV-cache use (as ``resources/server_metrics.toml`` maps it: a 0–1 fraction drawn as percent,
or tokens) is a dotted line on its own right-hand axis; a server that publishes no KV figure
gets no KV line, axis or words (never a zero).

A replay draws the samples its recording kept (:meth:`ServerLane.replay`) up to the
playback position; a recording without samples (older files, a server without
``/metrics``) replays with no lane.

On a short window (a projector) the lane gives way so the timeline keeps room for all its
lanes (:meth:`ServerLane.set_fold`, decided by the window): first it folds to its caption
line, then, if that is still too tall, it hides. The arrow before the caption folds or
unfolds it by hand, View → Server lane hides or shows it; such a choice is the user's and
is kept for the session.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QGraphicsItem, QHBoxLayout, QToolButton, QVBoxLayout, QWidget

from splitdesk.core.measure.server_metrics import (
    LoadSeries,
    MetricsPoller,
    ServerSeriesRecord,
    load_series,
    metrics_url,
    series_record,
)
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.events import RequestSent, RunEvent
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import Theme, opaque_fill, opaque_plot, ui_font
from splitdesk.ui.common.throttle import LIVE_FRAME_MS, Throttle
from splitdesk.ui.stage.panes import FiguresLabel

REDRAW_MS = 250
#: How often a live run polls the endpoint's ``/metrics`` (per second).
POLL_HZ = 4.0


class ServerLane(QWidget):
    """A small plot of the server's running (batch) and waiting (queue) counts and its
    KV-cache use (right-hand axis), live from a poller or replayed from a recording."""

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
        self._unsubscribe: Callable[[], None] | None = None  # watching for the first send
        self.series = LoadSeries([], [], [])
        self._source = ""  # what the drawn series came from ("recorded", "from its /metrics")
        self._y_top = 0.0  # the top of the y range set last
        #: The recording's samples while a replay is shown (:meth:`replay`), else None.
        self.recorded: LoadSeries | None = None
        layout = QVBoxLayout(self)
        # no side margin: pyqtgraph's x-link aligns two plots by ViewBox.screenGeometry,
        # which counts the plot widget's offset in its parent twice, so the plot sits at x 0
        # of this lane as the timeline's plot does in its row (4 px in put every moment 4 px
        # left of the timeline's column)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        #: One line that never widens the window: a shorter wording, then "…", when narrow
        #: (the whole text on hover). Its figures change with every sample: a new text
        #: only repaints it, never re-lays out the stage (:class:`FiguresLabel`).
        self.caption = FiguresLabel("")
        opaque_fill(self.caption, theme.window)  # the window's colour is behind it
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
        header.setContentsMargins(4, 0, 4, 0)
        header.setSpacing(4)
        header.addWidget(self.fold_button)
        header.addWidget(self.caption, 1)
        layout.addLayout(header)
        self.plot = pg.PlotWidget(background=theme.window)
        opaque_plot(self.plot)  # a frame of it repaints it alone
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
        # Each new sample redraws the curves, whose repaint reaches the axes beside them:
        # kept as pixmaps, the axes are blitted then, not drawn again (as the timeline's)
        for name in ("left", "bottom", "right"):
            item.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        item.setYRange(0, 1, padding=0.1)
        self.running_curve = self.plot.plot(
            [], [], pen=pg.mkPen(theme.accent, width=2), name="batch"
        )
        self.waiting_curve = self.plot.plot(
            [], [], pen=pg.mkPen(theme.waiting, width=2, style=Qt.PenStyle.DashLine)
        )
        # KV-cache use on a view of its own (right-hand axis), x-linked to the counts.
        self.kv_view = pg.ViewBox(enableMenu=False)
        self.kv_view.setMouseEnabled(x=False, y=False)
        item.showAxis("right")
        right = item.getAxis("right")
        right.setPen(pg.mkPen(theme.border))
        right.setTextPen(pg.mkPen(theme.good))
        right.setStyle(tickFont=ui_font(scale, -1))
        right.linkToView(self.kv_view)
        item.scene().addItem(self.kv_view)
        self.kv_view.setXLink(item.getViewBox())
        # Dots with flat caps: Qt's square caps grow each 2 px dot into a 4 px dash (the
        # line read as a second dashed one beside the queue's), and stroking those
        # antialiased dashes was two thirds of a lane repaint (0.46 of 0.67 ms)
        dots = pg.mkPen(theme.good, width=2, style=Qt.PenStyle.DotLine)
        dots.setCapStyle(Qt.PenCapStyle.FlatCap)
        self.kv_curve = pg.PlotCurveItem([], [], pen=dots)
        self.kv_view.addItem(self.kv_curve)
        item.getViewBox().sigResized.connect(self._fit_kv_view)
        item.hideAxis("right")
        self._link_to = link_to
        if link_to is not None:
            self.plot.setXLink(link_to)
            # the linked range follows the timeline's changes, not this plot's own resizes
            # (its right-hand KV axis appearing narrows it): a moment would sit pixels off
            # the timeline's column for it until the next change of range
            item.getViewBox().sigResized.connect(self._follow_link)
        layout.addWidget(self.plot)
        self._timer = QTimer(self)
        self._timer.setInterval(REDRAW_MS)
        # drawn in the views' next frame: Qt paints the lane in their pass, not in one more
        self._frame = Throttle(self.redraw, LIVE_FRAME_MS, self, paced=True)
        self._timer.timeout.connect(self._frame.request)
        #: once after a run with no sample: the poller's last word (:meth:`finish`)
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.timeout.connect(self._settled)
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

    def _follow_link(self) -> None:
        """Re-align the x range with the linked timeline's (same moment, same column)."""
        if self._link_to is not None:
            mine = self.plot.getPlotItem().getViewBox()
            mine.linkedViewChanged(self._link_to.getPlotItem().getViewBox(), mine.XAxis)

    def _fit_kv_view(self) -> None:
        self.kv_view.setGeometry(self.plot.getPlotItem().getViewBox().sceneBoundingRect())

    def polling(self) -> bool:
        """Whether the lane has a source: a run polling a server, or a replay of recorded
        samples (it is shown unless folded off)."""
        return self.poller is not None or self.recorded is not None

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
        self.recorded = None
        self._clear()
        try:
            url = f"{sim_root}/metrics" if settings.is_builtin and sim_root else None
            url = url or metrics_url(settings.base_url.strip())
        except ValueError:
            self.poller = None
            self.setVisible(False)
            return
        verify: bool | str = settings.ca_bundle or settings.verify_tls
        # Polled from the run's first request sent: a run that fails before sending (no
        # key, a bad setting) asks nothing of the server, /metrics included.
        self.poller = MetricsPoller(url, rate_hz=POLL_HZ, verify=verify)
        self._unsubscribe = state.subscribe(self._on_event)
        self.caption.setText(f"Server: asking {url} …")
        self._show()
        self._timer.start()

    def _on_event(self, event: RunEvent) -> None:
        if isinstance(event, RequestSent):
            self._stop_watching()
            poller = self.poller
            if poller is not None and not poller.running and poller.status == "not started":
                poller.start()

    def _stop_watching(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def replay(self, state: RunState, series: LoadSeries | None) -> None:
        """Show ``series`` (a recording's samples) for the replayed run ``state``, up to its
        playback position (``state.now()``, seconds). ``None`` or no sample (an older
        recording, a server without metrics): the lane hides, saying nothing."""
        self.stop()
        self.poller = None
        self.state = state
        self._clear()
        self.recorded = series if series is not None and series.t_s else None
        if self.recorded is None:
            self.caption.setText("")
            self.setVisible(False)
            return
        self.caption.setText(f"Server ({self.recorded.family}, recorded): …")
        self._show()
        self.redraw()
        self._timer.start()

    def record(self, state: RunState) -> ServerSeriesRecord | None:
        """The samples this lane took while the run ``state`` went (from its origin to its
        ``run_ended`` event: what a replay of the recording reaches), for its recording,
        whatever has been drawn yet; ``None`` when the lane did not poll that run or the
        server answered with no known metrics."""
        poller = self.poller
        if poller is None or self.state is not state or state.info is None:
            return None
        series = load_series(list(poller.samples), state.info.t0_ns)
        if state.ended is not None:
            series = series.until(state.ended.t)
        return series_record(series)

    def _clear(self) -> None:
        self.series = LoadSeries([], [], [])
        self._source, self._y_top = "", 0.0
        self.running_curve.setData([], [])
        self.waiting_curve.setData([], [])
        self.kv_curve.setData([], [])
        self.plot.getPlotItem().hideAxis("right")

    def finish(self, state: RunState | None = None) -> None:
        """The run ended: stop polling (without waiting for the thread) and draw the last
        samples. With none, the caption says why instead of "asking …" (the run sent
        nothing; the server's answer, read again once the poller's last attempt is over)."""
        self.stop()
        self.redraw()
        poller = self.poller
        if poller is None or self.recorded is not None or poller.samples:
            return
        if not poller.started:
            self.caption.setText("Server: not asked (the run sent no request)")
            return
        self.caption.setText(self._none_text(poller))
        # a timer of the lane's own: it dies with the lane (a stage rebuilt for presenting)
        self._settle.start(round(max(poller.period_s, 1.0) * 1000) + 200)

    @staticmethod
    def _none_text(poller: MetricsPoller) -> str:
        """The caption of a run whose server gave no sample: its last answer, or that the
        run ended before it answered."""
        if poller.status in ("not started", "ok"):
            return "Server metrics: none (the run ended before the server answered)"
        return f"Server metrics: none ({poller.status})"

    def _settled(self) -> None:
        """After the last attempt of a finished run's poller: its final word."""
        poller = self.poller
        if poller is not None and not poller.samples and self.recorded is None:
            self.caption.setText(self._none_text(poller))

    def stop(self) -> None:
        """Stop the poller without blocking the GUI thread."""
        self._stop_watching()
        self._timer.stop()
        self._frame.cancel()
        self._settle.stop()
        if self.poller is not None:
            self.poller.stop(timeout=0)

    def redraw(self) -> None:
        """Draw the samples gathered so far, or a replay's up to its position (the figures
        come from core)."""
        state = self.state
        if state is None:
            return
        if self.recorded is not None:
            # a replay's playback position; a run shown whole, up to its end. (A state
            # rebuilt from a recording without a playback clock has no "now": its origin
            # is another boot's monotonic clock, and the lane drew nothing on a machine
            # up for less time than the recording's.)
            now = state.ended.t if state.ended is not None else state.now()
            self._draw(self.recorded.until(now if now is not None else 0.0), "recorded")
            return
        poller = self.poller
        if poller is None or state.info is None:
            return
        series = load_series(list(poller.samples), state.info.t0_ns)
        if not series.t_s:
            if poller.status not in ("not started", "ok"):
                self.caption.setText(f"Server metrics: none ({poller.status})")
            return
        self._draw(series, "from its /metrics")

    def _draw(self, s: LoadSeries, source: str) -> None:
        if s == self.series and source == self._source:
            return  # no new sample since the last redraw: nothing to set, nothing repaints
        self.series, self._source = s, source
        item = self.plot.getPlotItem()
        self.running_curve.setData(s.t_s, s.running)
        self.waiting_curve.setData(s.t_s, s.waiting)
        top = max(s.peak, 1.0)
        if top != self._y_top:  # a new range re-lays out the axes: only when it grows
            self._y_top = top
            item.setYRange(0, top, padding=0.1)
        text = f"Server ({s.family}, {source})"
        # narrower, the line styles are said with their glyphs (the caption is the legend)
        keyed = short = f"Server ({s.family})"
        if s.t_s:
            text += (
                f": batch size (solid) {s.running[-1]:g} · queue (dashed) {s.waiting[-1]:g}"
                f" · peak batch {s.peak_running:g}"
            )
            keyed += (
                f": batch ━ {s.running[-1]:g} · queue ╌ {s.waiting[-1]:g}"
                f" · peak batch {s.peak_running:g}"
            )
            short += (
                f": batch {s.running[-1]:g} · queue {s.waiting[-1]:g}"
                f" · peak batch {s.peak_running:g}"
            )
        if s.has_kv:
            kv = [math.nan if v is None else v for v in s.kv]
            self.kv_curve.setData(s.t_s, kv, connect="finite")
            right = item.getAxis("right")
            if not right.isVisible():
                item.showAxis("right")
            if s.kv_unit == "fraction":
                right.setScale(100.0)  # ticks in percent
                self.kv_view.setYRange(0, 1, padding=0.1)
            else:
                right.setScale(1.0)
                self.kv_view.setYRange(0, max(s.peak_kv or 0.0, 1.0), padding=0.1)
            self._fit_kv_view()
            last = kv_text(next(v for v in reversed(s.kv) if v is not None), s.kv_unit)
            text += f" · KV cache (dotted, right) {last}"
            keyed += f" · KV ┈ {last} (right)"
            short += f" · KV {last}"
        else:
            self.kv_curve.setData([], [])
            if item.getAxis("right").isVisible():
                item.hideAxis("right")
        rate = s.last_cache_hit_rate  # the run's own lookups (core: cache_hit_rates)
        if rate is not None:
            text += f" · prefix-cache hits {rate:.0%} of the prompt tokens looked up since the first sample"
            keyed += f" · cache hits {rate:.0%}"
            short += f" · cache {rate:.0%}"
        self.caption.set_variants([text, keyed, short])


def kv_text(value: float, unit: str) -> str:
    """A KV-cache figure for the caption: a fraction as percent (``"28 %"``, ``"0.118 %"``),
    tokens as a count (``"133 tokens"``)."""
    if unit == "tokens":
        return f"{value:g} tokens"
    return f"{value * 100:.3g} %"
