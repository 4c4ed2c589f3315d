"""The sweep view: a sweep document (:mod:`splitdesk.core.bench.sweep`) drawn and tabulated.

One non-modal dialog per sweep: the measured speed-up against N (points and line), the
ideal line y = N (dashed) and, on the built-in endpoint, the cost model's predicted
speed-up, with a legend and labelled axes; a table of the rows (N, combined and parallel
wall time in seconds — medians over the repeats —, measured and predicted speed-up); one
line naming the client's pattern. Every figure is the document's (computed in core); the
view only formats it. Exports: CSV (:func:`splitdesk.core.files.sweep_files.sweep_csv`), JSON
(the document itself, as ``splitdesk sweep --json`` writes it) and PNG of the plot
(pyqtgraph's ``ImageExporter``), each written off the GUI thread.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.bench.sweep import generated_note
from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.files.sweep_files import (
    SweepFileError,
    sweep_csv,
    sweeps_dir,
    write_sweep,
)
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.common.theme import Theme, ui_font
from splitdesk.ui.render.exports import save_png

#: The table's column headings (units in each).
COLUMNS = (
    "N",
    "combined\nwall (s)",
    "parallel\nwall (s)",
    "speed-up\n(×)",
    "predicted\n(×)",
    "note",
)
#: Legend names of the plot's curves.
MEASURED = "measured speed-up"
IDEAL = "ideal: y = N"
PREDICTED = "predicted (cost model)"
DISTURBED = "disturbed (not read)"
#: A PNG export is drawn at this many times the plot's size on screen.
PNG_SCALE = 2.0


def _num(x: float | None, nd: int = 2) -> str:
    return "—" if x is None else f"{x:.{nd}f}"


def row_note(row: dict[str, Any]) -> str:
    """The note column, in a few words: "not read (disturbed)" when the machine disturbed
    every run of the row, "runs left out" when it disturbed some (left out of the row's
    medians), "measured again" when a first measurement was dropped. The reasons are the
    cell's tooltip (:func:`row_reasons`) and the notes under the plot."""
    parts = []
    if row.get("disturbed"):
        parts.append("not read (disturbed)" if row.get("disturbed_all") else "runs left out")
    if row.get("remeasured"):
        parts.append("measured again")
    return ", ".join(parts)


def row_reasons(row: dict[str, Any]) -> str:
    """Why a row's note says what it says: each disturbed or re-measured run's reason."""
    parts = []
    if row.get("disturbed"):
        word = "disturbed, not read" if row.get("disturbed_all") else "left out"
        parts.append(f"{word}: {'; '.join(row['disturbed'])}")
    if row.get("remeasured"):
        parts.append(f"measured again, the first {'; the first '.join(row['remeasured'])}")
    return " · ".join(parts)


def table_cells(row: dict[str, Any]) -> list[str]:
    """The table's cells for a document row (:data:`COLUMNS`; ``—`` where unknown)."""
    return [
        str(row["n"]),
        _num(row.get("combined_wall_s")),
        _num(row.get("parallel_wall_s")),
        _num(row.get("speedup")),
        _num(row.get("predicted_speedup")),
        row_note(row),
    ]


def reading_line(doc: dict[str, Any]) -> str:
    """Where the measured curve leaves the ideal and why (the document's ``reading``,
    :mod:`splitdesk.core.analyse.sweep_reading`), or why nothing is said."""
    reading = doc.get("reading")
    if isinstance(reading, dict) and reading.get("text"):
        return f"Speed-up {reading['text']}"
    return "Too few N measured to say where the curve leaves the ideal."


def client_line(doc: dict[str, Any]) -> str:
    """The line naming the client's pattern the sweep used (``ClientPattern.describe``)."""
    client = doc.get("client")
    if not client:
        return "client: not recorded"
    pattern = ClientPattern(client.get("connections") == "cold", client.get("release", "barrier"))
    return pattern.describe()


class SweepView(QDialog):
    """A sweep document's plot, table, client line and exports; ``path`` is where the
    sweep is kept (``None`` when it could not be saved)."""

    def __init__(
        self,
        doc: dict[str, Any],
        path: Path | None,
        theme: Theme,
        scale: float = 1.0,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.doc = doc
        self.path = path
        self.theme = theme
        self.scale = scale
        rows = doc["rows"]
        ep = doc["endpoint"]
        last = rows[-1]["n"] if rows else 0
        self.setWindowTitle(f"Sweep N = 1…{doc['max_n']} · {ep.get('model') or ep.get('api')}")
        k = doc["repeat"]
        head = (
            f"<b>Speed-up against N = 1…{doc['max_n']}</b> · {k} repeat{'s' if k != 1 else ''}"
            f" per N{' (medians)' if k > 1 else ''}"
        )
        if last < doc["max_n"]:
            head += f" · stopped after N = {last} of {doc['max_n']}"
        self.title = QLabel(head)
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setFont(ui_font(scale, 1))
        self.where = QLabel(
            f"{ep.get('url', '')} · {ep.get('api', '')} · {ep.get('model', '')} — speed-up = "
            "combined ÷ parallel wall time (makespan)"
        )
        self.where.setWordWrap(True)
        self.where.setObjectName("hint")
        self.where.setFont(ui_font(scale, -1))

        self.plot = pg.PlotWidget(background=theme.window)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        item = self.plot.getPlotItem()
        font = ui_font(scale, -1)
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            axis.setPen(pg.mkPen(theme.border))
            axis.setTextPen(pg.mkPen(theme.text))
            axis.setStyle(tickFont=font)
        size = {"font-size": f"{font.pointSizeF():.0f}pt"}  # as large as the tick labels
        item.setLabel(
            "bottom", "N (questions; parallel: one request each)", color=theme.muted, **size
        )
        item.setLabel("left", "speed-up (×)", color=theme.muted, **size)
        item.showGrid(x=True, y=True, alpha=0.25)
        self.legend = item.addLegend(offset=(10, 10), labelTextColor=theme.text)
        self.legend.setLabelTextSize(f"{font.pointSizeF():.0f}pt")
        top = max(doc["max_n"], 1)
        if top <= 16:
            item.getAxis("bottom").setTicks([[(n, str(n)) for n in range(1, top + 1)]])
        dash = pg.mkPen(theme.muted, width=2, style=Qt.PenStyle.DashLine)
        #: the drawn curves by legend name (``(xs, ys)``, for tests and exports)
        self.curves: dict[str, tuple[list[float], list[float]]] = {}
        self._curve(IDEAL, [1, top], [1, top], pen=dash)
        predicted = [(r["n"], r["predicted_speedup"]) for r in rows if r.get("predicted_speedup")]
        if predicted:
            self._curve(
                PREDICTED,
                [n for n, _ in predicted],
                [y for _, y in predicted],
                pen=pg.mkPen(theme.good, width=2, style=Qt.PenStyle.DashLine),
                # over the measured line, dashed: where the two agree both stay visible
                z=1,
            )
        # a row the machine disturbed in every run is no measurement: drawn apart, hollow
        bad = [(r["n"], r["speedup"]) for r in rows if r.get("disturbed_all") and r.get("speedup")]
        if bad:
            self._curve(
                DISTURBED,
                [n for n, _ in bad],
                [y for _, y in bad],
                pen=None,
                symbol="o",
                symbolSize=14,
                symbolBrush=None,
                symbolPen=pg.mkPen(theme.error, width=3),
            )
        measured = [
            (r["n"], r["speedup"])
            for r in rows
            if r.get("speedup") is not None and not r.get("disturbed_all")
        ]
        self._curve(
            MEASURED,
            [n for n, _ in measured],
            [y for _, y in measured],
            pen=pg.mkPen(theme.accent, width=5),
            symbol="o",
            symbolSize=10,
            symbolBrush=theme.accent,
            symbolPen=pg.mkPen(theme.window),
        )
        item.setXRange(0.5, top + 0.5, padding=0)

        self.reading = QLabel(reading_line(doc))
        self.reading.setWordWrap(True)
        self.reading.setFont(ui_font(scale, 0))
        self.client = QLabel(client_line(doc))
        self.client.setFont(ui_font(scale, -1))
        notes = []
        generated = generated_note(doc)
        if generated:
            notes.append(generated)
        failed = [str(r["n"]) for r in rows if r.get("failed")]
        if failed:
            notes.append(f"Requests failed at N = {', '.join(failed)}: those speed-ups are —.")
        for r in rows:  # the machine's disturbances, each with its reason
            if r.get("disturbed") or r.get("remeasured"):
                notes.append(f"N = {r['n']}: {row_reasons(r)}.")
        self.notes = QLabel(" ".join(notes))
        self.notes.setWordWrap(True)
        self.notes.setVisible(bool(notes))
        self.notes.setFont(ui_font(scale, -1))

        self.table = QTableWidget(len(rows), len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        for i, row in enumerate(rows):
            for j, text in enumerate(table_cells(row)):
                cell = QTableWidgetItem(text)
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if j == len(COLUMNS) - 1:
                    cell.setToolTip(row_reasons(row))
                self.table.setItem(i, j, cell)

        self.kept = QLabel(f"Kept in {path}" if path is not None else "Not kept (see status)")
        self.kept.setObjectName("hint")
        self.kept.setFont(ui_font(scale, -2))
        self.kept.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # a long path never widens the dialog past its window: cut, whole in the tooltip
        self.kept.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.kept.setToolTip(str(path) if path is not None else "")
        buttons = QHBoxLayout()
        buttons.addWidget(self.kept, 1)
        self.buttons: dict[str, QPushButton] = {}
        for kind in ("CSV", "JSON", "PNG"):
            button = QPushButton(f"Export {kind}…")
            button.clicked.connect(lambda _c=False, k=kind: self._ask_export(k))
            buttons.addWidget(button)
            self.buttons[kind] = button
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        buttons.addWidget(close)

        # the plot and the table side by side: a projector's short window keeps the plot tall
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(self.plot)
        self.split.addWidget(self.table)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 2)
        self.split.setChildrenCollapsible(False)
        self.table.resizeColumnsToContents()
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setMinimumWidth(self._table_width())
        lay = QVBoxLayout(self)
        lay.addWidget(self.title)
        lay.addWidget(self.where)
        lay.addWidget(self.reading)
        lay.addWidget(self.split, 1)
        lay.addWidget(self.client)
        lay.addWidget(self.notes)
        lay.addLayout(buttons)
        self._fit(parent)

    def _table_width(self) -> int:
        """Every column whole, with room for a vertical scroll bar."""
        columns = sum(self.table.columnWidth(j) for j in range(self.table.columnCount()))
        scroll = self.table.verticalScrollBar().sizeHint().width()
        return columns + scroll + 2 * self.table.frameWidth() + 8

    def _curve(
        self, name: str, xs: list[float], ys: list[float], z: float = 0, **style: Any
    ) -> None:
        self.curves[name] = (list(xs), list(ys))
        self.plot.getPlotItem().plot(xs, ys, name=name, **style).setZValue(z)

    def _fit(self, parent: QWidget | None) -> None:
        """About 900×700 (scaled), never larger than the window it belongs to."""
        w, h = int(900 * self.scale), int(700 * self.scale)
        if parent is not None and parent.width() > 0:
            w = min(w, int(parent.width() * 0.9))
            h = min(h, int(parent.height() * 0.9))
        self.resize(w, h)

    def rows(self) -> list[list[str]]:
        """The table's cells as shown, row by row."""
        out = []
        for i in range(self.table.rowCount()):
            cells = (self.table.item(i, j) for j in range(self.table.columnCount()))
            out.append([c.text() if c is not None else "" for c in cells])
        return out

    # -- exports ---------------------------------------------------------------------------------
    def _ask_export(self, kind: str) -> None:
        suffix = kind.lower()
        stem = self.path.stem if self.path is not None else f"sweep-n1-{self.doc['max_n']}"
        default = str((self.path.parent if self.path else sweeps_dir()) / f"{stem}.{suffix}")
        name, _ = QFileDialog.getSaveFileName(
            self, f"Export the sweep as {kind}", default, f"{kind} (*.{suffix})"
        )
        if name:
            spawn(self.export(kind, Path(name)))

    async def export(self, kind: str, path: Path) -> Path | None:
        """Write the sweep as ``kind`` (``"CSV"``, ``"JSON"``, ``"PNG"``) to ``path``;
        returns it, or ``None`` when it could not be written (the kept-line says why)."""
        try:
            if kind == "PNG":
                image = self.image()
                await asyncio.to_thread(save_png, image, path)
            elif kind == "JSON":
                await asyncio.to_thread(write_sweep, self.doc, path)
            else:
                text = sweep_csv(self.doc)
                await asyncio.to_thread(_write_text, path, text)
        except (OSError, SweepFileError) as exc:
            self.kept.setText(f"Export failed: {exc}")
            return None
        self.kept.setText(f"Exported {kind}: {path}")
        self.kept.setToolTip(str(path))
        return path

    def image(self, scale: float = PNG_SCALE) -> QImage:
        """The plot (curves, legend, axes) drawn at ``scale`` × its size on screen."""
        item = self.plot.getPlotItem()
        rect = item.sceneBoundingRect()
        import pyqtgraph.exporters as pg_exporters  # on first export, not at start (svg_fix)

        exporter = pg_exporters.ImageExporter(item)
        exporter.parameters()["width"] = max(1, round(rect.width() * scale))
        image: QImage = exporter.export(toBytes=True)
        return image


def _write_text(path: Path, text: str) -> None:
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc.strerror or exc}") from None
