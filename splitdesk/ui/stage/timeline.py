"""The timeline: one lane per request, seconds from the run's start, drawn live.

Lanes (top to bottom): the combined request, then one per parallel request, then the
sequential baseline. Each request is a bar from send to its last token: the wait for the
first token hatched, streaming solid in the question's colour. Inside the combined bar
each answer is its own segment, coloured and numbered, so "answer 5 starts late" is
visible at a glance while the parallel lanes all start together. A dashed line marks
"now"; outlined ghost bars show the cost model's prediction (built-in endpoint). When
the lanes do not fit (many questions on a projector), the parallel lanes are packed into
one block named "Parallel (N)", thin but all in sight, rather than scrolled out of it.

pyqtgraph items are created once and updated in place (one :class:`LaneBars` per style),
repainted at most ~30 times a second while a run is live. While bars grow, only the strip
where they changed is repainted (:meth:`LaneBars.set_bars`), not the whole plot. The
timeline reads the run's state; it measures nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QCursor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QHBoxLayout,
    QLabel,
    QScrollBar,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.diagnosis import explain_wait, no_markers
from splitdesk.core.analyse.metrics import RequestFigures, request_figures
from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.run.labels import question_label
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.ui.common.theme import Theme, ink_on, lane_hex, opaque_plot, ui_font
from splitdesk.ui.common.throttle import LIVE_FRAME_MS, Throttle

BAR_HEIGHT = 0.62
#: The live timeline's frame (ms): the views' shared one.
LIVE_MS = LIVE_FRAME_MS
#: With more lanes than :data:`MANY_LANES`, a slower frame (ms): each frame rebuilds every
#: lane's bars (5 a second, as it ran until issue 25: see ``throttle.LIVE_FRAME_MS``).
MANY_LANES = 16
MANY_LANES_MS = 2 * LIVE_FRAME_MS
#: While a run streams, the x axis grows by this factor when the bars outgrow it, so the
#: plot is not re-laid out (axis, ticks, every label's transform) on every frame.
LIVE_SPAN_STEP = 1.25
#: Lanes are at least this many lines of their names' text apart.
LANE_PITCH = 1.25
#: When the lanes do not fit even at the smaller names, the parallel lanes are packed
#: into one block named "Parallel (N)" (no scrolling: the combined lane and every parallel
#: bar in sight, as the talk's audience needs them), each lane at least this many pixels
#: apart; thinner than that, they scroll instead.
PACKED_MIN_PX = 3.0


def prefill_tip(name: str, f: RequestFigures) -> str:
    """A prefill bar's hover text (formatting only): the server's prefill and queue times
    and the prompt tokens it computed and read from its cache (usage)."""
    split = f.split
    lines = [name]
    if split is not None and split.prefill_s is not None:
        lines.append(
            f"prefill {split.prefill_s:.3f} s of TTFT {split.ttft_s:.3f} s (server's figure)"
        )
        if split.queue_s:
            lines.append(f"queued {split.queue_s:.3f} s before it")
    if f.prompt_tokens is not None:
        cached = (
            f", {f.cached_prompt_tokens:,} from cache" if f.cached_prompt_tokens is not None else ""
        )
        lines.append(f"{f.prompt_tokens:,} prompt tokens{cached}")
    return "\n".join(lines)


def ttft_text(f: RequestFigures) -> str:
    """A wait bar's TTFT wording from the figure set (formatting only): TTFT (from the
    first send: the user's wait) and, for a retried request, the attempt TTFT beside it,
    named; a tool-call-only reply has no TTFT and says when its first tool call came."""
    if f.ttft_s is None:
        if f.first_tool_call_s is not None:
            return f"no text (no TTFT) · first tool call {f.first_tool_call_s:.3f} s"
        return "no token yet"
    if f.retries and f.attempt_ttft_s is not None:
        return (
            f"TTFT {f.ttft_s:.3f} s from the first send · attempt TTFT "
            f"{f.attempt_ttft_s:.3f} s from the answered attempt's"
        )
    return f"TTFT {f.ttft_s:.3f} s"


@dataclass
class Bar:
    """One drawn rectangle and what it means (for the hover text). ``tip`` may be given as
    a function: it is then worked out when read (on hover), not on every live frame."""

    lane: int
    x0: float
    x1: float
    kind: str  # "connect", "wait", "prefill", "backoff", "stream", "ghost"
    color: str
    make_tip: str | Callable[[], str] = field(repr=False)

    @property
    def tip(self) -> str:
        """The hover text."""
        if callable(self.make_tip):
            self.make_tip = self.make_tip()
        return self.make_tip


#: A drawn bar: x0, x1 (seconds), the lane's centre y, the lane's height factor (1 for a
#: lane of its own, less for a packed parallel lane), brush (``None``: the item's own).
Rect = tuple[float, float, float, float, "QBrush | None"]


#: a connection wait this long (seconds) is named on its segment
CONNECT_LABEL_S = 0.5


def _conn_tip(name: str, start: float, f: RequestFigures) -> str:
    """A connection bar's hover text: when it opened, when the server answered on it."""
    wait = f.connection_wait_s or 0.0
    c = f.connection_connect_s
    tcp = f" (TCP connect {c * 1000:.0f} ms)" if c is not None else ""
    text = f"{name}\nconnection opened at {start:.3f} s{tcp}; the server answered on it after {wait:.3f} s"
    if wait >= CONNECT_LABEL_S:
        text += "\nit waited to be taken up: the server's connection handlers were busy"
    return text


class LaneBars(pg.GraphicsObject):
    """Bars of one style, drawn from a list of rectangles in plot coordinates.

    :meth:`set_bars` repaints only what changed since the last call: while a run streams
    that is the narrow strip where bars grew, not the whole plot (pyqtgraph's
    ``BarGraphItem`` re-lays out its whole bounding rect on every ``setOpts``). Its
    bounding rect grows in steps, so Qt's scene index is not told of a new geometry every
    frame. Painting is the same as ``BarGraphItem``'s: one pen and brush for all bars
    (``drawRects``), or, with a brush per bar, each bar filled with its own brush."""

    def __init__(self, height: float, pen: QPen, brush: QBrush | None) -> None:
        super().__init__()
        self._height = height
        self._pen = pen
        self._brush = brush if brush is not None else QBrush(Qt.BrushStyle.NoBrush)
        self._bars: list[Rect] = []
        self._rects: list[QRectF] = []
        self._bounds = QRectF()  #: data bounds held (grown in steps)
        self._pad = (0.0, 0.0)  #: a few pixels, in data units (pens, antialiasing)
        no_pen = pen.style() == Qt.PenStyle.NoPen
        self._pen_px = 0.0 if no_pen else max(pen.widthF(), 1.0)

    def set_bars(self, bars: list[Rect]) -> None:
        """Draw ``bars`` from now on; repaint the area where they differ from the last."""
        old, self._bars = self._bars, bars
        if bars == old:
            return
        h = self._height
        self._rects = [QRectF(x0, y - h * k / 2, x1 - x0, h * k) for x0, x1, y, k, _ in bars]
        dirty: QRectF | None = None
        for i in range(max(len(old), len(bars))):
            a = old[i] if i < len(old) else None
            b = bars[i] if i < len(bars) else None
            if a == b:
                continue
            if a is not None and b is not None and a[0] == b[0] and a[2:] == b[2:]:
                lo, hi = sorted((a[1], b[1]))  # only the end moved: the strip between
                r = QRectF(lo, b[2] - h * b[3] / 2, hi - lo, h * b[3])
            else:
                r = QRectF()
                for it in (a, b):
                    if it is not None:
                        r = r.united(QRectF(it[0], it[2] - h * it[3] / 2, it[1] - it[0], h * it[3]))
            dirty = r if dirty is None else dirty.united(r)
        if dirty is None:
            return
        need = dirty if self._bounds.isNull() else self._bounds.united(dirty)
        if need != self._bounds:  # outgrown: hold room for the bars to grow into
            grown = QRectF(need)
            if not self._bounds.isNull() and need.right() > self._bounds.right():
                grown.setRight(need.left() + (need.right() - need.left()) * LIVE_SPAN_STEP)
            self.prepareGeometryChange()
            self._bounds = grown
            self.update()
            return
        px, py = self._pad
        self.update(dirty.adjusted(-px, -py, px, py))

    def viewTransformChanged(self) -> None:
        """The view moved or zoomed: the pixel margin in data units changed."""
        super().viewTransformChanged()
        vx, vy = self.pixelVectors()
        pad_px = self._pen_px / 2 + 2  # the pen and antialiased edges
        pad = (
            pad_px * (vx.length() if vx is not None else 0.0),
            pad_px * (vy.length() if vy is not None else 0.0),
        )
        if pad != self._pad:
            self.prepareGeometryChange()
            self._pad = pad

    def boundingRect(self) -> QRectF:
        if self._bounds.isNull():
            return QRectF()
        px, py = self._pad
        return self._bounds.adjusted(-px, -py, px, py)

    def paint(self, p: QPainter, *args: object) -> None:
        if not self._rects:
            return
        if self._bars[0][4] is None:  # one brush for all
            p.setPen(self._pen)
            p.setBrush(self._brush)
            p.drawRects(self._rects)
            return
        p.setPen(self._pen)
        for rect, bar in zip(self._rects, self._bars, strict=True):
            p.setBrush(bar[4] or self._brush)
            p.drawRect(rect)


class Timeline(QWidget):
    """The live timeline of a run (see module docstring)."""

    def __init__(
        self,
        theme: Theme,
        scale: float = 1.0,
        parent: QWidget | None = None,
        show_predictions: bool = True,
    ) -> None:
        super().__init__(parent)
        self.theme = theme
        self.scale = scale
        #: Draw the cost model's predicted bars (off in the presentation look: the
        #: audience sees what was measured).
        self.show_predictions = show_predictions
        self.state: RunState | None = None
        self.questions: list[str] = []
        #: Each question's short label (lane names: "Q3 Inflation").
        self.question_labels: list[str] = []
        #: Lane layout: the first lane shown, how many fit, the lane-name font (smaller
        #: when lanes crowd) and the names as shown on the axis.
        self.lane_top = 0
        self.lanes_shown = 0
        self.lane_font = ui_font(scale, 0)
        self.shown_names: list[str] = []
        self.predictions: list[PredictedRequest] | None = None
        self.bars: list[Bar] = []
        self.lanes: list[str] = []
        #: Each lane's group ("combined", "parallel", "sequential"), as ``lanes``.
        self.lane_groups: list[str] = []
        #: Each lane's centre y and height factor (1: a lane of its own; less: a packed
        #: parallel lane, :data:`PACKED_MIN_PX`); lane i sits at y = i unless packed.
        self.lane_y: list[float] = []
        self.lane_k: list[float] = []
        #: The lane names on the axis and their y (one "Parallel (N)" for a packed block).
        self.lane_ticks: list[tuple[float, str]] = []
        self.segment_counts: dict[int, int] = {}
        self._ticked: list[str] = []
        #: Room right of the longest bar for its end label ("12.0 s").
        self._end_label_px = QFontMetrics(ui_font(scale, 0, bold=True)).horizontalAdvance("000.0 s")
        #: What the lane layout was last worked out for (:meth:`_set_lane_ticks`).
        self._lanes_for: tuple[object, ...] | None = None
        self._brushes: dict[str, QBrush] = {}

        pg.setConfigOptions(antialias=True)
        self.plot = pg.PlotWidget(background=theme.window)
        opaque_plot(self.plot)  # a frame of it repaints it alone
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        item = self.plot.getPlotItem()
        item.invertY(True)
        font = ui_font(scale, 0)
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            axis.setPen(pg.mkPen(theme.border))
            axis.setTextPen(pg.mkPen(theme.text))
            axis.setStyle(tickFont=font)
        # The "now" line spans the plot and its ticks reach into the time axis, and growing
        # bars repaint beside the lane names: both axes are kept as pixmaps, so a frame
        # blits them rather than drawing their ticks and text again (an axis still redraws
        # whenever its range or ticks change)
        for name in ("left", "bottom"):
            item.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        item.getAxis("bottom").setLabel(
            "seconds since the run started",
            color=theme.muted,
            **{"font-size": f"{round(10 * scale)}pt"},
        )

        wait_brush = QBrush(QColor(theme.waiting), Qt.BrushStyle.BDiagPattern)
        self.wait_item = LaneBars(BAR_HEIGHT, pg.mkPen(theme.waiting), wait_brush)
        # the server's prefill inside the wait (where it reports one): the same colour, solid
        self.prefill_item = LaneBars(
            BAR_HEIGHT, pg.mkPen(theme.waiting), QBrush(QColor(theme.waiting))
        )
        backoff_color = QColor(theme.error)
        backoff_color.setAlpha(70)
        self.backoff_item = LaneBars(
            BAR_HEIGHT * 0.5,
            pg.mkPen(theme.error, style=Qt.PenStyle.DotLine),
            QBrush(backoff_color),
        )
        # a connection's set-up before its request (warm connections): a thin hollow bar
        self.connect_item = LaneBars(
            BAR_HEIGHT * 0.35, pg.mkPen(theme.muted, width=1.5), QBrush(Qt.BrushStyle.NoBrush)
        )
        self.stream_item = LaneBars(BAR_HEIGHT, pg.mkPen(None), None)
        ghost_pen = pg.mkPen(theme.muted, width=1.5, style=Qt.PenStyle.DashLine)
        self.ghost_item = LaneBars(BAR_HEIGHT + 0.18, ghost_pen, None)
        self.ghost_item.setZValue(-5)
        self.marks = pg.ScatterPlotItem(size=14 * scale, pxMode=True)
        self.now_line = pg.InfiniteLine(
            angle=90, pen=pg.mkPen(theme.accent, width=2, style=Qt.PenStyle.DashLine)
        )
        for it in (
            self.ghost_item,
            self.connect_item,
            self.wait_item,
            self.prefill_item,
            self.backoff_item,
            self.stream_item,
            self.marks,
            self.now_line,
        ):
            self.plot.addItem(it)
            it.hide()
        self.labels: list[pg.TextItem] = []
        #: What each label shows (x, y, text, colour), ``None`` when hidden.
        self._label_shown: list[tuple[float, float, str, str] | None] = []
        self._advances_for = ""  #: the font the cached text widths are for
        self._advances: dict[str, int] = {}
        self._metrics = QFontMetrics(QFont())
        #: While a run streams, the x range is set with room to grow (``LIVE_SPAN_STEP``)
        #: and kept until the bars outgrow it; the finished run gets the exact range.
        self._live_span: float | None = None
        self._y_set: tuple[int, float] | None = None
        self.placeholder = pg.TextItem(
            "Each request becomes a lane here: sent → first token → answers → last token",
            color=theme.muted,
            anchor=(0.5, 0.5),
        )
        self.placeholder.setFont(ui_font(scale, 1))
        self.plot.addItem(self.placeholder)

        self.legend = QLabel(self._legend_html())
        self.legend.setObjectName("hint")
        self.legend.setFont(ui_font(scale, -0.5))
        self.legend.setWordWrap(True)  # a narrow window wraps it rather than growing
        #: "+15 more lanes ↓ scroll" while lanes are out of sight (the grid's "+N more"),
        #: said after the axis's label, where it takes no room from the lanes.
        self.more_lanes = ""
        self._axis_mode = ""
        #: Whoever sees the timeline can scroll it (False in an exported picture or clip).
        self.scrolls = True
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(self.legend)
        #: Beside the plot when more lanes exist than fit at a readable pitch.
        self.lane_bar = QScrollBar(Qt.Orientation.Vertical)
        self.lane_bar.setToolTip("More lanes: scroll")
        self.lane_bar.hide()
        self.lane_bar.valueChanged.connect(lambda _v: self._set_lane_ticks())
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self.plot, 1)
        row.addWidget(self.lane_bar)
        lay.addLayout(row, 1)

        self.throttle = Throttle(self.refresh, LIVE_MS, self, paced=True)
        self._ticker = QTimer(self)
        self._ticker.setInterval(LIVE_MS)
        self._ticker.timeout.connect(self.throttle.request)
        self.plot.scene().sigMouseMoved.connect(self._hover)
        self.plot.getPlotItem().getViewBox().sigResized.connect(self._set_lane_ticks)
        self._show_idle(True)

    @property
    def packed(self) -> bool:
        """Whether the parallel lanes are packed into one named block (they did not fit)."""
        return any(k < 1.0 for k in self.lane_k)

    def hasHeightForWidth(self) -> bool:
        """No: the wrapped legend would make the window's lower half ask for the plot's
        preferred height and push the summary strip below the window's edge; the plot
        takes whatever height is left (its lanes scroll)."""
        return False

    def _show_idle(self, idle: bool) -> None:
        """Before any run: a sentence instead of an empty chart with a meaningless axis."""
        item = self.plot.getPlotItem()
        item.getAxis("bottom").setStyle(showValues=not idle)
        self.placeholder.setVisible(idle)
        self._y_set = None  # the lanes' y range is set anew
        if idle:
            self.plot.setXRange(0, 1, padding=0)
            self.plot.setYRange(-0.5, 0.5, padding=0)
            self.placeholder.setPos(0.5, 0.0)

    def _legend_html(self) -> str:
        t = self.theme
        sw = "display:inline-block;"
        return (
            f"<span style='color:{t.waiting}'>▨</span> waiting for the first token "
            f"(<span style='color:{t.waiting}'>█</span> prefill) &nbsp; "
            f"<span style='color:{lane_hex(0)}'>■</span><span style='color:{lane_hex(1)}'>■</span>"
            f"<span style='color:{lane_hex(2)}'>■</span> streaming (1 2 3: the combined "
            f"reply's answers) &nbsp; "
            f"<span style='color:{t.accent};{sw}'>┆</span> now"
        ) + (
            f" &nbsp; <span style='color:{t.muted}'>┄▭</span> predicted"
            if self.show_predictions
            else ""
        )

    # -- binding --------------------------------------------------------------------------------
    def bind(self, state: RunState, questions: list[str], labels: list[str] | None = None) -> None:
        """Draw ``state`` from now on (clears the previous run); ``labels`` are the
        questions' short labels (default: derived from the texts). Many lanes repaint less
        often: a 64-lane picture costs ~10 ms, and the measurement shares the CPU."""
        self.state = state
        self.questions = questions
        if labels is None or len(labels) != len(questions):
            labels = [question_label(q) for q in questions]
        self.question_labels = labels
        self.lane_bar.setValue(0)
        self._live_span = None
        self._show_idle(False)
        interval = LIVE_MS if len(questions) <= MANY_LANES else MANY_LANES_MS
        self._ticker.setInterval(interval)
        self.throttle.set_interval(interval)
        self.predictions = None
        self._ticked = []
        self._ticker.start()
        self.throttle.request()

    def clear(self) -> None:
        """Show nothing (a new run is about to start): no bar of the last run stays up."""
        self.state = None
        self.predictions = None
        self._ticker.stop()
        self.bars = []
        self.lanes = []
        self.lane_groups = []
        self.segment_counts = {}
        for item in (
            self.ghost_item,
            self.wait_item,
            self.backoff_item,
            self.stream_item,
            self.marks,
            self.now_line,
        ):
            item.hide()
        for label in self.labels:
            label.hide()
        self._label_shown = [None] * len(self.labels)
        self._set_lane_ticks()

    def set_predictions(self, predictions: list[PredictedRequest]) -> None:
        """Ghost bars for the predicted timing of each request (index order); ignored
        when :attr:`show_predictions` is off."""
        if not self.show_predictions:
            return
        self.predictions = predictions
        self.throttle.request()

    def finish(self) -> None:
        """The run is over: stop the live ticker and paint the final picture."""
        self._ticker.stop()
        self.throttle.request()
        self.throttle.flush()

    # -- geometry of the run --------------------------------------------------------------------
    def _origins(self, state: RunState) -> dict[int, float]:
        """Per phase: the earliest send. Bars are drawn on the run's one time axis (seconds
        since the run started, the server lane's too); a lane's end label says how long
        after its phase's first send its last token came (the figure the summary gives:
        the combined request's 12.0 s, the parallel phase's 2.7 s)."""
        origins: dict[int, float] = {}
        for r in state.requests:
            if r.t_send is not None:
                origins[r.phase] = min(origins.get(r.phase, r.t_send), r.t_send)
        return origins

    def _lane_of(self, r: RequestTrace, lanes: dict[str, int]) -> int:
        key = "sequential" if r.group == "sequential" else f"{r.group}:{r.req}"
        if key not in lanes:
            lanes[key] = len(lanes)
        return lanes[key]

    def _label(self, r: RequestTrace) -> str:
        if r.group == "combined":
            return f"Combined ({len(r.questions)} in 1)"
        if r.group == "sequential":
            return "Sequential"
        q = r.questions[0]
        label = self.question_labels[q] if q < len(self.question_labels) else ""
        return f"Q{q + 1} {label}".rstrip()

    def _set_axis_label(self, mode: str) -> None:
        """Say what the time axis measures: the run's one clock, in every mode (the ways
        sent one after another follow each other on it)."""
        self._axis_mode = mode
        text = (
            "seconds since the run started (each way after the one before)"
            if mode in ("one-after-another", "all", "dependent")
            else "seconds since the run started"
        )
        if self.more_lanes:
            text += f" · {self.more_lanes}"
        if text != getattr(self, "_axis_text", None):
            self._axis_text = text
            self.plot.getPlotItem().getAxis("bottom").setLabel(
                text, color=self.theme.muted, **{"font-size": f"{round(10 * self.scale)}pt"}
            )

    # -- painting -------------------------------------------------------------------------------
    def refresh(self) -> None:
        state = self.state
        if state is None or state.info is None:
            return
        self._set_axis_label(state.info.mode)
        running = state.ended is None
        now_abs = state.now() if running else None  # a replay's clock is its position
        origins = self._origins(state)
        lanes: dict[str, int] = {}
        lane_names: dict[int, str] = {}
        bars: list[Bar] = []
        marks: list[tuple[float, int, str, str]] = []
        # lane → its last token on the axis, and how long after its phase's first send
        end_labels: dict[int, tuple[float, float]] = {}
        seg_labels: list[tuple[float, int, str, str]] = []
        backoff_labels: list[tuple[float, int, str]] = []  # "Retry-After 2 s" on its segment
        self.segment_counts = {}
        for r in state.requests:
            lane = self._lane_of(r, lanes)
            lane_names[lane] = self._label(r)
            if r.t_send is None:
                continue
            o = 0.0  # the run's one axis: every lane (and the server lane) on its clock
            f = request_figures(r)
            send = r.t_send - o
            live_now = (now_abs - o) if (now_abs is not None and r.outcome is None) else None
            first = f.t_first_output  # text or tool call: where streaming begins
            last = f.t_last_token
            color = self.theme.combined if r.group == "combined" else lane_hex(r.questions[0])
            name = lane_names[lane]
            wait = f.connection_wait_s
            if wait is not None and r.t_conn_start is not None:  # the connection's own phase
                c0 = r.t_conn_start - o
                bars.append(
                    Bar(lane, c0, c0 + wait, "connect", self.theme.muted, _conn_tip(name, c0, f))
                )
                if wait >= CONNECT_LABEL_S:  # a wait worth naming: said on its segment
                    backoff_labels.append((c0, lane, f"connection waited {wait:.1f} s"))
            # Each refused attempt: its wait, then the back-off it obeyed (own segment).
            attempt_send = send
            for b in f.backoffs:
                if b.start - o > attempt_send:
                    bars.append(
                        Bar(
                            lane,
                            attempt_send,
                            b.start - o,
                            "wait",
                            self.theme.waiting,
                            f"{name}\nattempt {b.attempt} sent at {attempt_send:.3f} s · "
                            f"HTTP {b.status or '?'} at {b.start - o:.3f} s",
                        )
                    )
                b_end = (
                    (b.end - o)
                    if b.end is not None
                    else (live_now if live_now is not None else (r.t_end or b.start) - o)
                )
                bars.append(
                    Bar(
                        lane,
                        b.start - o,
                        max(b_end, b.start - o),
                        "backoff",
                        self.theme.error,
                        f"{name}\n{b.message}\nwaited {b_end - (b.start - o):.2f} s "
                        f"({b.label}) before attempt {b.attempt + 1}",
                    )
                )
                backoff_labels.append((b.start - o, lane, b.label))
                attempt_send = b_end
            # the answered (or current) attempt's wait; none while a back-off runs
            wait_start = max(
                (f.t_attempt_send - o) if f.t_attempt_send is not None else send, attempt_send
            )
            wait_end = (
                (first - o)
                if first is not None
                else (live_now if live_now is not None else (r.t_end or r.t_send) - o)
            )
            if wait_end > wait_start:
                bars.append(
                    Bar(
                        lane,
                        wait_start,
                        wait_end,
                        "wait",
                        self.theme.waiting,
                        self._wait_tip(name, wait_start, f, r, state),
                    )
                )
                prefill = f.prefill_span  # the server's own figure, ending at the first token
                if prefill is not None and prefill[1] - o > wait_start:
                    p0 = max(prefill[0] - o, wait_start)
                    bars.append(
                        Bar(
                            lane,
                            p0,
                            prefill[1] - o,
                            "prefill",
                            self.theme.waiting,
                            prefill_tip(name, f),
                        )
                    )
            if first is not None:
                stream_end = (
                    live_now
                    if live_now is not None
                    else ((last if last is not None else first) - o)
                )
                count = self._stream_bars(
                    r, lane, o, first - o, stream_end, color, name, bars, seg_labels
                )
                self.segment_counts[r.req] = count
                if r.group == "sequential":  # numbered like the combined lane's answers
                    q = r.questions[0]
                    seg_labels.append((first - o, lane, str(q + 1), lane_hex(q)))
                if r.finished:  # a settled label: live ones would re-render every frame
                    x0 = end_labels.get(lane, (0.0, 0.0))[0]
                    if stream_end >= x0:
                        end_labels[lane] = (stream_end, stream_end - origins[r.phase])
            if r.outcome == "failed":
                x = (r.t_end or r.t_send) - o
                marks.append(
                    (
                        x,
                        lane,
                        self.theme.error,
                        f"{name}\nfailed at {x:.2f} s: {r.error.message if r.error else ''}",
                    )
                )
            elif r.outcome == "stopped":
                x = (r.t_end or r.t_send) - o
                marks.append((x, lane, self.theme.muted, f"{name}\nstopped at {x:.2f} s"))
            if self.predictions is not None and r.req < len(self.predictions):
                p = self.predictions[r.req]
                if not p.rejected:
                    bars.append(
                        Bar(
                            lane,
                            send,
                            send + p.e2e_s,
                            "ghost",
                            self.theme.muted,
                            f"{name}\npredicted: TTFT {p.ttft_s or 0:.3f} s · last token {p.e2e_s:.2f} s",
                        )
                    )
        self.bars = bars
        self.lanes = [lane_names[i] for i in range(len(lanes))]
        self.lane_groups = [""] * len(lanes)
        for key, i in lanes.items():
            self.lane_groups[i] = key.split(":", 1)[0]
        ends = [(x, lane, f"{took:.1f} s") for lane, (x, took) in end_labels.items()]
        ends += backoff_labels
        for r in state.requests:  # say so where answer numbers would be
            if no_markers(r) and r.first_text_t is not None and r.phase in origins:
                ends.append(
                    (
                        r.first_text_t,
                        lanes[f"combined:{r.req}"],
                        "no answer markers found",
                    )
                )
        self._draw(bars, marks, seg_labels, ends, len(lanes))
        if now_abs is not None and origins:
            self.now_line.setPos(now_abs)
            self.now_line.show()
        else:
            self.now_line.hide()

    @staticmethod
    def _wait_tip(
        name: str, start: float, f: RequestFigures, r: RequestTrace, state: RunState
    ) -> Callable[[], str]:
        """A wait bar's hover text, worked out when read: what the wait was made of
        (:func:`~splitdesk.core.analyse.diagnosis.explain_wait` looks at every request of the run)."""

        def tip() -> str:
            why = explain_wait(r, state.requests)
            return f"{name}\nsent at {start:.3f} s · {ttft_text(f)}" + (f"\n{why}" if why else "")

        return tip

    def _stream_bars(
        self,
        r: RequestTrace,
        lane: int,
        o: float,
        start: float,
        end: float,
        color: str,
        name: str,
        bars: list[Bar],
        seg_labels: list[tuple[float, int, str, str]],
    ) -> int:
        """Streaming bars of one request; returns how many segments were drawn."""
        if r.group != "combined" or not r.sections:
            bars.append(
                Bar(
                    lane,
                    start,
                    max(end, start),
                    "stream",
                    color,
                    f"{name}\nstreaming {start:.2f} → {end:.2f} s",
                )
            )
            return 1
        count = 0
        spans = sorted(r.sections.values(), key=lambda s: s.start_t)
        first_start = spans[0].start_t - o
        if spans[0].offset > 0 and first_start > start:  # text before the first marker
            bars.append(
                Bar(
                    lane,
                    start,
                    first_start,
                    "stream",
                    self.theme.combined,
                    f"{name}\npreamble before the first answer",
                )
            )
            count += 1
        for i, s in enumerate(spans):
            # A reply that opens with a marker: that answer starts with the first token.
            s0 = start if i == 0 and s.offset == 0 else s.start_t - o
            nxt = spans[i + 1].start_t - o if i + 1 < len(spans) else None
            s1 = (s.end_t - o) if s.end_t is not None else (nxt if nxt is not None else end)
            s1 = max(s1, s0)
            q = s.question
            bars.append(
                Bar(
                    lane,
                    s0,
                    s1,
                    "stream",
                    lane_hex(q),
                    f"Answer {q + 1} inside the combined reply\nstarts {s0:.2f} s · ends {s1:.2f} s",
                )
            )
            seg_labels.append((s0, lane, str(q + 1), lane_hex(q)))
            count += 1
        return count

    def _draw(
        self,
        bars: Sequence[Bar],
        marks: list[tuple[float, int, str, str]],
        seg_labels: list[tuple[float, int, str, str]],
        end_labels: list[tuple[float, int, str]],
        n_lanes: int,
    ) -> None:
        self._set_lane_ticks()  # the lanes' layout (packed or not) before the bars' places
        ys, ks = self.lane_y, self.lane_k
        for kind, item in (
            ("connect", self.connect_item),
            ("wait", self.wait_item),
            ("prefill", self.prefill_item),
            ("backoff", self.backoff_item),
            ("stream", self.stream_item),
            ("ghost", self.ghost_item),
        ):
            per_bar = kind == "stream"  # a brush per bar (each question's colour)
            mine: list[Rect] = [
                (
                    b.x0,
                    b.x0 + max(b.x1 - b.x0, 1e-4),
                    ys[b.lane],
                    ks[b.lane],
                    self._brush(b.color) if per_bar else None,
                )
                for b in bars
                # a packed lane's dashed outline would only blur the block's bars
                if b.kind == kind and (kind != "ghost" or ks[b.lane] == 1.0)
            ]
            item.set_bars(mine)
            if item.isVisible() != bool(mine):
                item.setVisible(bool(mine))
        if marks:
            self.marks.setData(
                x=[m[0] for m in marks],
                y=[ys[m[1]] for m in marks],
                symbol=["x"] * len(marks),
                brush=[pg.mkBrush(m[2]) for m in marks],
                pen=[pg.mkPen(m[2], width=2) for m in marks],
            )
            self.marks.show()
        else:
            self.marks.hide()
        xmax = max([b.x1 for b in bars] + [1.0])
        # room right of the longest bar for its end label ("12.0 s"), however narrow the plot
        label_px = self._end_label_px
        plot_px = max(self.plot.getPlotItem().getViewBox().width(), 2 * label_px)
        span = xmax * max(1.08, plot_px / (plot_px - label_px))
        live = self.state is not None and self.state.ended is None
        held = self._live_span
        if live and held is not None and held / LIVE_SPAN_STEP**2 <= span <= held:
            pass  # the growing bars fit: no new axis, ticks and label transforms this frame
        else:
            self._x_span = span * (LIVE_SPAN_STEP if live else 1.0)
            self._live_span = self._x_span if live else None
            self.plot.setXRange(0, self._x_span, padding=0)
        self._draw_labels(seg_labels, end_labels)

    def _set_lane_ticks(self) -> None:
        """Lane names on the left axis, which is made as wide as the widest (pyqtgraph
        silently drops a tick label that does not fit), and the lanes' vertical layout.

        Lanes never get closer than a line of their names' text: when all lanes do not fit
        at the normal size, names shrink to a smaller font; when they still do not fit,
        the timeline shows as many as fit and a scroll bar beside the plot reaches the
        rest. Names shrink to their badge ("Q7") when full names would take more than a
        quarter of the timeline's width."""
        if self._lanes_key() == self._lanes_for and self._ticked:
            return  # the same lanes in the same room: nothing to lay out (every live frame)
        placed = (self.lane_y, self.lane_k)
        self._lay_out_lanes()
        self._lanes_for = self._lanes_key()
        if (self.lane_y, self.lane_k) != placed and self.state is not None:
            self.throttle.request()  # bars, marks and labels follow the lanes' new places

    def _say_more_lanes(self, top: int, extra: int) -> None:
        """Say after the axis's label that ``extra`` lanes are out of sight ("+N more
        lanes"), and where (``top``: lanes scrolled above); nothing when all show."""
        if not extra:
            text = ""
        elif not self.scrolls:  # a picture or a clip: nobody can scroll it
            text = f"+{extra} more lanes not shown"
        else:
            arrow = "↓" if top == 0 else "↑" if top >= extra else "↕"
            text = f"+{extra} more lanes {arrow} scroll"
        if text != self.more_lanes:
            self.more_lanes = text
            self._set_axis_label(self._axis_mode)

    def _fit_lane_bar(self) -> None:
        """Lay out the plot and the lane scroll bar beside it again (:meth:`_lay_out_lanes`)."""
        lay = self.layout()
        if lay is not None:
            lay.invalidate()
            lay.activate()

    def _lanes_key(self) -> tuple[object, ...]:
        """What the lane layout depends on."""
        vb_h = self.plot.getPlotItem().getViewBox().height()
        return (
            tuple(self.lanes),
            tuple(self.lane_groups),
            vb_h,
            self.plot.width(),
            self.lane_bar.value(),
            self._y_set,
        )

    def _lay_out_lanes(self) -> None:
        """:meth:`_set_lane_ticks`' work."""
        n = len(self.lanes)
        vb_h = self.plot.getPlotItem().getViewBox().height()
        font = ui_font(self.scale, 0)
        if vb_h > 0 and n * QFontMetrics(font).height() * LANE_PITCH > vb_h:
            font = ui_font(self.scale, -2)  # smaller names before scrolling
        pitch = QFontMetrics(font).height() * LANE_PITCH
        fit = max(1, int(vb_h // pitch)) if vb_h > 0 else max(n, 1)
        groups = self.lane_groups if len(self.lane_groups) == n else [""] * n
        parallel = groups.count("parallel")
        k = 1.0
        if n > fit and parallel >= 2:  # pack the parallel lanes rather than scroll
            room = vb_h / pitch - (n - parallel) - 0.2  # in lanes; 0.2: the margins
            k = room / parallel
            if k * pitch < PACKED_MIN_PX:
                k = 1.0  # too thin to see: they scroll
            else:  # packed, few names are left to show: at the normal size when they fit
                normal = ui_font(self.scale, 0)
                n_pitch = QFontMetrics(normal).height() * LANE_PITCH
                n_k = (vb_h / n_pitch - (n - parallel) - 0.2) / parallel
                if n_k * n_pitch >= PACKED_MIN_PX:
                    font, pitch, k = normal, n_pitch, n_k
        ys, ks = [], []
        cursor = -0.5  # a lane of its own is centred on its index
        for g in groups:
            k_lane = k if g == "parallel" else 1.0
            ys.append(cursor + k_lane / 2)
            ks.append(k_lane)
            cursor += k_lane
        self.lane_y, self.lane_k = ys, ks
        shown = n if self.packed else min(max(n, 1), fit)
        extra = max(0, n - shown)
        if self.lane_bar.maximum() != extra:
            self.lane_bar.setRange(0, extra)
        self.lane_bar.setPageStep(shown)
        if self.lane_bar.isHidden() == (extra > 0):
            self.lane_bar.setVisible(extra > 0)
            # shown from inside a layout pass (the view box's resize), the bar kept the
            # geometry of a hidden widget, 0 px wide: lanes out of sight and no way to
            # scroll to them (16 questions at 1280×720 ×1.5); laid out again next turn
            QTimer.singleShot(0, self, self._fit_lane_bar)
        top = min(self.lane_bar.value(), extra)
        self.lane_top, self.lanes_shown = top, shown
        self._say_more_lanes(top, extra)
        bottom = cursor + 0.1 if self.packed else top + shown - 0.4
        if self._y_set != (top, bottom):  # re-setting the same range still re-lays out
            self._y_set = (top, bottom)
            self.plot.setYRange(top - 0.6, bottom, padding=0)
        metrics = QFontMetrics(font)
        crowded = extra or self.packed
        full = [n_.replace(" in 1)", ")") if crowded else n_ for n_ in self.lanes]
        widest_full = max((metrics.horizontalAdvance(x) for x in full), default=0)
        short = widest_full > 0.25 * max(self.plot.width(), 1)
        names = [x.split(" ", 1)[0] if short and x[:1] == "Q" else x for x in full]
        if short:
            names = [x.replace(" in 1)", ")") for x in names]
        if self.packed:  # one name for the block, at its middle
            block = [ys[i] for i, g in enumerate(groups) if g == "parallel"]
            ticks = [(ys[i], name) for i, name in enumerate(names) if groups[i] != "parallel"]
            ticks = sorted([*ticks, ((block[0] + block[-1]) / 2, f"Parallel ({parallel})")])
        else:
            ticks = list(zip(ys, names, strict=True))
        wanted = [*[f"{y:.4f} {name}" for y, name in ticks], font.toString()]
        if wanted == self._ticked:
            return  # setTicks regenerates the axis picture: only when the lanes change
        self._ticked = wanted
        self.lane_font = font
        self.shown_names = [name for _y, name in ticks]
        self.lane_ticks = ticks
        axis = self.plot.getPlotItem().getAxis("left")
        axis.setStyle(tickFont=font)
        widest = max((metrics.horizontalAdvance(x) for _y, x in ticks), default=40)
        axis.setWidth(widest + int(24 * self.scale))
        axis.setTicks([[(y, name) for y, name in ticks]])
        for label in self.labels:
            label.setFont(self._label_font())

    def _label_font(self) -> QFont:
        """Numbers and end labels in the lanes: bold, as tall as the lane names."""
        font = QFont(self.lane_font)
        font.setBold(True)
        return font

    def lane_name_rects(self) -> list[tuple[str, QRectF]]:
        """Where each shown lane's name is drawn, in plot-widget pixels: right-aligned in
        the left axis, centred on its lane (for layout checks)."""
        item = self.plot.getPlotItem()
        vb, axis = item.getViewBox(), item.getAxis("left")
        metrics = QFontMetrics(self.lane_font)
        right = axis.sceneBoundingRect().right() - axis.style["tickTextOffset"][0] - 5
        out = []
        lo, hi = self.lane_top - 0.5, self.lane_top + self.lanes_shown - 0.5
        for at, name in self.lane_ticks:
            if not lo <= at <= hi and not self.packed:
                continue  # scrolled out of sight
            y = vb.mapViewToScene(QPointF(0, at)).y()
            w, h = metrics.horizontalAdvance(name), metrics.height()
            out.append((name, QRectF(right - w, y - h / 2, w, h)))
        return out

    def lane_rects(self) -> list[tuple[int, QRectF]]:
        """Each shown lane's band (its bars' height) in plot-widget pixels."""
        vb = self.plot.getPlotItem().getViewBox()
        out = []
        for lane in range(self.lane_top, min(self.lane_top + self.lanes_shown, len(self.lanes))):
            y, half = self.lane_y[lane], self.lane_k[lane] * BAR_HEIGHT / 2
            top = vb.mapViewToScene(QPointF(0, y - half))
            bottom = vb.mapViewToScene(QPointF(0, y + half))
            r = vb.sceneBoundingRect()
            out.append((lane, QRectF(r.left(), top.y(), r.width(), bottom.y() - top.y())))
        return out

    def text_rects(self) -> list[tuple[str, QRectF]]:
        """Every number and end label shown in the lanes, in plot-widget pixels."""
        return [
            (label.toPlainText(), label.sceneBoundingRect())
            for label in self.labels
            if label.isVisible()
        ]

    def _brush(self, color: str) -> QBrush:
        brush = self._brushes.get(color)
        if brush is None:
            brush = self._brushes[color] = pg.mkBrush(color)
        return brush

    def _draw_labels(
        self,
        seg_labels: list[tuple[float, int, str, str]],
        end_labels: list[tuple[float, int, str]],
    ) -> None:
        """Numbers and end labels in the lanes, never on top of one another: end labels
        first, then each answer number that has room on its lane (a segment too narrow
        for its number keeps it in the hover text)."""
        vb = self.plot.getPlotItem().getViewBox()
        px_per_s = vb.width() / max(getattr(self, "_x_span", 1.0), 1e-9)
        font = self._label_font()
        if self._advances_for != font.key():  # text widths, measured once per font
            self._advances_for = font.key()
            self._advances = {}
            self._metrics = QFontMetrics(font)
        advances = self._advances
        taken: dict[int, list[tuple[float, float]]] = {}

        def fits(x: float, lane: int, text: str) -> bool:
            width = advances.get(text)
            if width is None:
                width = advances[text] = self._metrics.horizontalAdvance(text)
            left = x * px_per_s
            right = left + width + 14  # TextItem's margins, a gap
            spans = taken.setdefault(lane, [])
            if any(left < r and l_ < right for l_, r in spans):
                return False
            spans.append((left, right))
            return True

        ys, ks = self.lane_y, self.lane_k
        packed = [i for i, k in enumerate(ks) if k < 1.0]
        if packed:  # no room in a packed lane: one end label for the whole block
            in_block = set(packed)
            block = [it for it in end_labels if it[1] in in_block and it[2].endswith(" s")]
            seg_labels = [it for it in seg_labels if ks[it[1]] == 1.0]
            end_labels = [it for it in end_labels if ks[it[1]] == 1.0]
            if block:  # the block's last bar, and how long it took
                x, _lane, text = max(block, key=lambda it: it[0])
                end_labels.append((x, packed[len(packed) // 2], text))
        ends = [(x, ys[lane], text, self.theme.text) for x, lane, text in end_labels]
        ends = [
            it
            for it, (_x, lane, _t) in zip(ends, end_labels, strict=True)
            if fits(it[0], lane, it[2])
        ]
        items = [
            (x, ys[lane], text, ink_on(color))
            for x, lane, text, color in seg_labels
            if fits(x, lane, text)
        ] + ends  # numbers in lane order, then the end labels
        while len(self.labels) < len(items):
            label = pg.TextItem(anchor=(0, 0.5))
            label.textItem.document().setDocumentMargin(1)  # as tall as its line: lanes pack
            label.setFont(font)
            self.plot.addItem(label)
            self.labels.append(label)
            self._label_shown.append(None)
        for i in range(len(items), len(self.labels)):
            if self._label_shown[i] is not None:
                self.labels[i].hide()
                self._label_shown[i] = None
        for i, (label, item) in enumerate(zip(self.labels, items, strict=False)):
            shown = self._label_shown[i]
            if shown == item:
                continue  # as drawn last frame: no Qt call at all
            x, y, text, color = item
            new_look = shown is None or shown[2:] != item[2:]
            if new_look and (label.toPlainText() != text or label.color != QColor(color)):
                label.setText(text, color=color)  # re-renders: only when it changed
            if label.pos() != QPointF(x, y):
                label.setPos(QPointF(x, y))
            label.show()
            self._label_shown[i] = item

    # -- hover ----------------------------------------------------------------------------------
    def bar_at(self, x: float, y: float) -> Bar | None:
        """The bar under plot coordinates (``x`` s, ``y`` lane), preferring real over ghost."""
        near = [
            i
            for i, (at, k) in enumerate(zip(self.lane_y, self.lane_k, strict=True))
            if abs(y - at) <= k * (BAR_HEIGHT / 2 + 0.1)
        ]
        if not near:
            return None
        lane = min(near, key=lambda i: abs(y - self.lane_y[i]))
        hits = [b for b in self.bars if b.lane == lane and b.x0 <= x <= b.x1]
        # the prefill inside a wait before the wait, anything real before a ghost outline
        hits.sort(key=lambda b: {"ghost": 2, "wait": 1}.get(b.kind, 0))
        return hits[0] if hits else None

    def _hover(self, pos: QPointF) -> None:
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            return
        p = vb.mapSceneToView(pos)
        bar = self.bar_at(p.x(), p.y())
        if bar is None:
            QToolTip.hideText()
            return
        QToolTip.showText(QCursor.pos(), bar.tip, self.plot)
