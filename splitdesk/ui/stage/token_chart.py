"""The live tokens chart beside the timeline: cumulative output tokens over time of the
combined request against the sum of the parallel streams (issue #11). Its curves are
:func:`splitdesk.core.analyse.token_curves.token_curve` of each group; while shown it checks
the run once per two frames and redraws only when events were applied, however many
arrive.

The stage holds it beside the timeline (:meth:`~splitdesk.ui.stage.stage.Stage.show_chart`);
View → Tokens chart (and T in presentation mode) shows or hides it.
"""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from splitdesk.core.analyse.token_curves import token_curve
from splitdesk.core.run.events import Group
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import Theme, opaque_plot, ui_font
from splitdesk.ui.common.throttle import FRAME_MS

#: The groups drawn, with their legend names.
SERIES: tuple[tuple[Group, str], ...] = (
    ("combined", "combined"),
    ("parallel", "parallel, summed"),
)


class TokenChart(QWidget):
    """Cumulative tokens of the combined request and of the parallel streams summed."""

    def __init__(self, theme: Theme, scale: float = 1.0, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.title = QLabel("Tokens received")
        self.title.setWordWrap(True)
        self.title.setObjectName("sectionTitle")
        self.title.setFont(ui_font(scale, 0, bold=True))
        # the key in the title, never over the curves
        key = " &nbsp;".join(
            f"<span style='color:{self._colors()[group]}'>━</span>&nbsp;"
            + name.replace(" ", "&nbsp;")
            for group, name in SERIES
        )
        self.title.setText(f"Tokens so far: {key}")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(self.title)
        self._scale = scale
        #: The plot and its curves, built the first time the chart is shown (hidden by
        #: default: a pyqtgraph plot is ~50 ms of the window's cold start; issue 25).
        self.plot: pg.PlotWidget | None = None
        self.curves: dict[Group, pg.PlotDataItem] = {}
        self.source: Callable[[], RunState | None] = lambda: None
        self._seen: tuple[int, int] = (0, -1)
        self._ticker = QTimer(self)
        self._ticker.setInterval(FRAME_MS * 2)  # at most one redraw per two frames
        self._ticker.timeout.connect(self._tick)

    def _colors(self) -> dict[Group, str]:
        return {"combined": self.theme.combined, "parallel": self.theme.accent}

    def _build_plot(self) -> None:
        """Make the plot and its two curves (once, on first show)."""
        plot = self.plot = pg.PlotWidget(background=self.theme.window)
        opaque_plot(plot)  # a frame of it repaints it alone
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.setMouseEnabled(x=False, y=False)
        item = plot.getPlotItem()
        font = ui_font(self._scale, -1)
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            axis.setPen(pg.mkPen(self.theme.border))
            axis.setTextPen(pg.mkPen(self.theme.text))
            axis.setStyle(tickFont=font)
        item.getAxis("bottom").setLabel("seconds", color=self.theme.muted)
        colors = self._colors()
        self.curves = {
            group: item.plot([], [], name=name, pen=pg.mkPen(colors[group], width=3))
            for group, name in SERIES
        }
        layout = self.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.addWidget(plot, 1)

    def bind(self, source: Callable[[], RunState | None]) -> None:
        """Draw the run ``source()`` returns (the window's current run, live or replayed):
        polled every two frames while shown (hidden, the chart costs nothing: no timer),
        redrawn only when events were applied."""
        self.source = source
        if self.isVisible():
            self._ticker.start()

    def _tick(self) -> None:
        state = self.source()
        seen = (id(state), state.events_applied if state is not None else -1)
        if self.isVisible() and seen != self._seen:
            self._seen = seen
            self.refresh()

    def data(self) -> dict[Group, list[tuple[float, float]]]:
        """The curves as drawn: group → ``(seconds, tokens)`` steps (core/token_curves.py)."""
        state = self.source()
        if state is None:
            return {}
        return {group: token_curve(state.group(group)) for group, _ in SERIES}

    def refresh(self) -> None:
        """Redraw both curves from the run's traces (nothing before the chart was first
        shown: it has no plot yet)."""
        for group, points in self.data().items():
            if group in self.curves:
                self.curves[group].setData([p[0] for p in points], [p[1] for p in points])

    def showEvent(self, event: QShowEvent) -> None:
        """Shown: draw the current run at once, and follow it."""
        super().showEvent(event)
        if self.plot is None:
            self._build_plot()
        self._seen = (0, -1)
        self._tick()
        self._ticker.start()

    def hideEvent(self, event: QHideEvent) -> None:
        """Hidden: stop polling."""
        super().hideEvent(event)
        self._ticker.stop()
