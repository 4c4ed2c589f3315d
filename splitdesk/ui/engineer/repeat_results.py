"""The results of a repeated comparison: strip plots, the median and min–max text, the
per-run table, and exports (CSV, JSON, PNG).

Three strip plots side by side (pyqtgraph): makespan (E2E of each side's phase, s), TTFT
(each run's median over the side's requests, s) and the speed-up (×): one dot per counted
run per side, a short bar at the median. Every value is a :class:`~splitdesk.core.bench.repeats.
RepeatRow`'s (the figure set's); the text reads :func:`~splitdesk.core.bench.repeats.
repeat_figures` of the same rows, the table :func:`~splitdesk.core.bench.repeats.row_values`, the
CSV :func:`~splitdesk.core.bench.repeats.repeat_csv` and the JSON :func:`~splitdesk.core.bench.repeats.
window_document` (the ``splitdesk bench --json`` document with its ``repeats`` object).
The PNG is the three plots through pyqtgraph's ``ImageExporter`` at 2×.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics, QImage
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.metrics import Spread
from splitdesk.core.bench.repeats import (
    RepeatFigures,
    RepeatOptions,
    RepeatRow,
    repeat_csv,
    row_columns,
    row_values,
    window_document,
)
from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import Theme, ui_font
from splitdesk.ui.render.exports import png_bytes

#: The plots: (key, title, unit). ``speedup`` has one strip, the others one per side.
FIGURES = (("makespan", "Makespan", "s"), ("ttft", "TTFT", "s"), ("speedup", "Speed-up", "×"))
#: Width of the cloud of dots of one strip, and of its median bar (x units: one per strip).
JITTER = 0.36
MEDIAN_WIDTH = 0.5
#: The PNG's scale over the plots' size on screen.
PNG_SCALE = 2.0


def spread_text(s: Spread | None, unit: str = " s", nd: int = 2) -> str:
    """``median (min–max)`` of ``s``; ``—`` when unknown."""
    if s is None:
        return "—"
    return f"{s.median:.{nd}f}{unit} ({s.min:.{nd}f}–{s.max:.{nd}f})"


def strip_values(rows: Sequence[RepeatRow], figure: str) -> dict[str, list[float]]:
    """The dots of ``figure`` (``makespan``, ``ttft``, ``speedup``): per strip (a side, or
    ``speedup``) each counted run's value, in run order (unknown values left out)."""
    if figure == "speedup":
        return {"speedup": [r.speedup for r in rows if r.speedup is not None]}
    out: dict[str, list[float]] = {}
    for r in rows:
        for side, v in (r.makespan_s if figure == "makespan" else r.ttft_s).items():
            out.setdefault(side, []).append(v)
    order = ("combined", "parallel", "sequential")
    return {s: out[s] for s in order if s in out}


class StripPlots(pg.GraphicsLayoutWidget):
    """The three strip plots of ``rows``; :attr:`dots` maps (figure, strip) to its
    ``ScatterPlotItem`` and :attr:`medians` to its median (the values drawn)."""

    def __init__(
        self, rows: Sequence[RepeatRow], figures: RepeatFigures, theme: Theme, scale: float = 1.0
    ):
        super().__init__()
        self.setBackground(theme.window)
        self.dots: dict[tuple[str, str], pg.ScatterPlotItem] = {}
        self.medians: dict[tuple[str, str], float] = {}
        colours = {
            "combined": theme.combined,
            "parallel": theme.accent,
            "sequential": theme.muted,
            "speedup": theme.good,
        }
        font = ui_font(scale)
        for col, (key, title, unit) in enumerate(FIGURES):
            plot = self.addPlot(row=0, col=col)
            plot.setTitle(f"{title} ({unit})", color=theme.text, size=f"{round(11 * scale)}pt")
            plot.setMenuEnabled(False)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.showGrid(x=False, y=True, alpha=0.3)
            strips = strip_values(rows, key)
            ticks = []
            for x, (strip, values) in enumerate(strips.items()):
                n = len(values)
                xs = [x + (JITTER * (i / (n - 1) - 0.5) if n > 1 else 0.0) for i in range(n)]
                dots = pg.ScatterPlotItem(
                    xs, values, size=9, brush=pg.mkBrush(colours[strip]), pen=pg.mkPen(None)
                )
                plot.addItem(dots)
                self.dots[(key, strip)] = dots
                med = _median(figures, key, strip)
                if med is not None:
                    self.medians[(key, strip)] = med
                    half = MEDIAN_WIDTH / 2
                    plot.plot([x - half, x + half], [med, med], pen=pg.mkPen(theme.text, width=3))
                ticks.append((x, "speed-up" if strip == "speedup" else strip))
            plot.getAxis("bottom").setTicks([ticks])
            # room for the strip names' whole height (descenders included) at any scale
            plot.getAxis("bottom").setHeight(QFontMetrics(font).height() + round(14 * scale))
            plot.setXRange(-0.6, max(len(strips) - 1, 0) + 0.6, padding=0)
            plot.enableAutoRange(axis="y")  # the runs' own range: their spread shows
            for side in ("left", "bottom"):
                axis = plot.getAxis(side)
                axis.setTickFont(font)
                axis.setTextPen(theme.text)
                axis.setPen(theme.border)
        self.setMinimumHeight(round(200 * scale))

    def image(self, scale: float = PNG_SCALE) -> QImage:
        """The plots drawn at ``scale`` × their size on screen (pyqtgraph's
        ``ImageExporter`` on the layout)."""
        import pyqtgraph.exporters as ex

        item = self.ci
        rect = item.sceneBoundingRect()
        exporter = ex.ImageExporter(item)
        exporter.parameters()["width"] = max(1, round(rect.width() * scale))
        exporter.parameters()["height"] = max(1, round(rect.height() * scale))
        image: QImage = exporter.export(toBytes=True)
        return image


def _median(f: RepeatFigures, figure: str, strip: str) -> float | None:
    if figure == "speedup":
        return f.speedup.median if f.speedup else None
    s = (f.makespan if figure == "makespan" else f.ttft).get(strip)
    return s.median if s else None


def _header(column: str) -> str:
    """A table column's header: ``combined_makespan_s`` → ``combined makespan (s)``."""
    if column == "speedup":
        return "speed-up (×)"
    for suffix, words in (("_makespan_s", " makespan (s)"), ("_ttft_s", " TTFT (s)")):
        if column.endswith(suffix):
            return column.removesuffix(suffix) + words
    return column


def _cell(value: Any, column: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}×" if column == "speedup" else f"{value:.3f}"
    return str(value)


class RepeatResults(QDialog):
    """The results dialog of a finished (or cancelled) repeat session."""

    def __init__(
        self,
        parent: QWidget,
        theme: Theme,
        options: RepeatOptions,
        states: Sequence[RunState],
        nonces: Sequence[str | None],
        rows: Sequence[RepeatRow],
        figures: RepeatFigures,
        together: bool,
        scale: float = 1.0,
    ) -> None:
        super().__init__(parent)
        self.options, self.states, self.nonces = options, list(states), list(nonces)
        self.rows, self.figures = list(rows), figures
        self.setWindowTitle(f"Repeated the comparison: {figures.runs} of {options.repeat} runs")
        layout = QVBoxLayout(self)
        f = figures
        lines = [f"<b>{f.runs} run{'s' if f.runs != 1 else ''}</b> — median (min–max)"]
        lines.append(f"Speed-up: <b>{spread_text(f.speedup, '×')}</b>")
        for side, m in f.makespan.items():
            lines.append(
                f"{side.capitalize()}: makespan {spread_text(m)} · TTFT "
                f"{spread_text(f.ttft.get(side), nd=3)}"
            )
        #: how the runs were sent (core's repeats line)
        self.how = options.line(together)
        lines.append(self.how)
        self.text = QLabel("<br>".join(lines))
        self.text.setWordWrap(True)
        layout.addWidget(self.text)
        self.plots = StripPlots(self.rows, figures, theme, scale)
        layout.addWidget(self.plots, 3)
        self.columns = row_columns(self.rows)
        self.table = QTableWidget(len(self.rows), len(self.columns))
        self.table.setHorizontalHeaderLabels([_header(c) for c in self.columns])
        for i, row in enumerate(self.rows):
            for j, (col, value) in enumerate(
                zip(self.columns, row_values(row, self.columns), strict=True)
            ):
                self.table.setItem(i, j, QTableWidgetItem(_cell(value, col)))
        self.table.resizeColumnsToContents()
        self.table.verticalHeader().hide()
        layout.addWidget(self.table, 2)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        for label, slot in (
            ("Save CSV…", self._ask_csv),
            ("Save JSON…", self._ask_json),
            ("Save plot PNG…", self._ask_png),
        ):
            button = QPushButton(label)
            button.clicked.connect(slot)
            buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        room = parent.size()
        self.resize(
            min(round(900 * scale), round(room.width() * 0.95)),
            min(round(680 * scale), round(room.height() * 0.95)),
        )

    # -- exports ---------------------------------------------------------------------------
    def csv_text(self) -> str:
        """The per-run table as CSV (:func:`~splitdesk.core.bench.repeats.repeat_csv`)."""
        return repeat_csv(self.rows)

    def document(self) -> dict[str, Any]:
        """The JSON document (:func:`~splitdesk.core.bench.repeats.window_document`)."""
        return window_document(self.states, self.options, self.nonces)

    def save_csv(self, path: Path) -> None:
        """Write :meth:`csv_text` to ``path`` (``OSError`` when it cannot)."""
        write_atomic(path, self.csv_text())

    def save_json(self, path: Path) -> None:
        """Write :meth:`document` to ``path`` (``OSError`` when it cannot; ``ValueError``
        with no counted run)."""
        text = json.dumps(self.document(), indent=2, ensure_ascii=False)
        write_atomic(path, text + "\n")

    def save_png(self, path: Path, scale: float = PNG_SCALE) -> tuple[int, int]:
        """Write the strip plots as PNG at ``scale`` × (``OSError`` when it cannot).
        Returns (width, height) in pixels."""
        image = self.plots.image(scale)
        write_atomic(path, png_bytes(image))
        return image.width(), image.height()

    def _ask(self, title: str, name: str, pattern: str) -> Path | None:
        path, _ = QFileDialog.getSaveFileName(self, title, name, pattern)
        return Path(path) if path else None

    def _save(self, what: str, path: Path | None, write: Any) -> None:
        if path is None:
            return
        try:
            write(path)
        except (OSError, ValueError) as exc:
            self.text.setText(self.text.text() + f"<br>Could not save the {what}: {exc}")

    def _ask_csv(self) -> None:
        self._save(
            "CSV", self._ask("Save the runs as CSV", "repeats.csv", "CSV (*.csv)"), self.save_csv
        )

    def _ask_json(self) -> None:
        path = self._ask("Save the runs as JSON", "repeats.json", "JSON (*.json)")
        self._save("JSON", path, self.save_json)

    def _ask_png(self) -> None:
        path = self._ask("Save the plots as PNG", "repeats.png", "PNG (*.png)")
        self._save("PNG", path, self.save_png)
