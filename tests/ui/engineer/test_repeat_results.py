"""The repeat results: strip plots on a sensible axis, and runs the machine disturbed
flagged in the text, the plot, the table, the CSV and the JSON, and left out of the medians."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from PySide6.QtWidgets import QWidget

from splitdesk.core.bench.repeats import RepeatOptions, repeat_figures, window_rows
from splitdesk.core.run.events import (
    RequestEnded,
    RequestPlanned,
    RequestSent,
    RunEnded,
    RunStarted,
    TextReceived,
)
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.engineer.repeat_results import RepeatResults, strip_range


def run(combined_s: float, parallel_s: float) -> RunState:
    """A finished one-after-another run: the combined request ends at ``combined_s``, then
    two parallel requests from 100 s end ``parallel_s`` later."""
    state = RunState()
    state.apply(RunStarted(0.0, "one-after-another", ("a", "b"), {"url": "u"}, 0, 2))
    state.apply(RequestPlanned(0.0, 0, "combined", (0, 1), "p", 0))
    state.apply(RequestPlanned(0.0, 1, "parallel", (0,), "p", 1))
    state.apply(RequestPlanned(0.0, 2, "parallel", (1,), "p", 1))
    for req, (t0, t1) in enumerate(
        [(0.0, combined_s), (100.0, 100.0 + parallel_s), (100.0, 100.0 + parallel_s)]
    ):
        state.apply(RequestSent(t0, req))
        state.apply(TextReceived(t0 + 0.01, req, "x"))
        state.apply(TextReceived(t1, req, "y"))
        state.apply(RequestEnded(t1, req, "done", "stop"))
    state.apply(RunEnded(100.0 + parallel_s + 0.01))
    return state


#: the dialogs' parent windows, kept alive for the test session (a parent collected with
#: its Python name would delete the dialog with it)
PARENTS: list[QWidget] = []


def results(qtbot: Any, states: list[RunState], slips: list[float | None]) -> RepeatResults:
    parent = QWidget()
    parent.resize(1280, 720)
    PARENTS.append(parent)
    rows = window_rows(states, [None] * len(states), slips)
    dialog = RepeatResults(
        parent, DARK, RepeatOptions(repeat=len(states)), states, [None] * len(states),
        rows, repeat_figures(rows), False, 1.0, slips,
    )  # fmt: skip
    qtbot.addWidget(parent)
    dialog.show()
    return dialog


def test_runs_a_fraction_of_a_percent_apart_do_not_fill_the_axis(qtbot: Any) -> None:
    # five runs within 0.3 %: pyqtgraph's auto range made them look wildly apart
    states = [run(4.0 + 0.003 * i, 1.0) for i in range(5)]
    dialog = results(qtbot, states, [0.0] * 5)
    lo, hi = dialog.plots.ranges["makespan"]
    assert hi - lo >= 0.2 * 4.0 - 1e-9  # at least a fifth of the median
    assert lo >= 0
    values = [4.0 + 0.003 * i for i in range(5)]
    assert (max(values) - min(values)) / (hi - lo) < 0.02  # the spread is a sliver of it
    assert strip_range([1.0, 3.0]) == (1.0, 3.0)  # a real spread keeps its own range
    assert strip_range([0.01, 0.011]) == pytest.approx((0.00945, 0.01155))


def test_a_disturbed_run_is_flagged_everywhere_and_left_out_of_the_medians(qtbot: Any) -> None:
    # run 2's built-in endpoint fell 2 s behind its schedule: its parallel side took 3 s
    states = [run(4.0, 1.0), run(4.0, 3.0), run(4.0, 1.1)]
    dialog = results(qtbot, states, [0.001, 2.0, 0.0])
    rows = dialog.rows
    assert rows[1].disturbed is not None and "ran 2.00 s behind its schedule" in rows[1].disturbed
    assert dialog.figures.left_out == (1,)
    assert dialog.figures.speedup is not None
    assert dialog.figures.speedup.median == pytest.approx((4.0 / 1.0 + 4.0 / 1.1) / 2, rel=1e-3)
    assert dialog.left_out is not None and dialog.left_out.startswith(
        "Left out of the medians: run 2 (the built-in endpoint ran 2.00 s behind"
    )
    assert "Left out of the medians" in dialog.text.text()
    # the plot: run 2's dots are hollow rings in the error colour
    dots = dialog.plots.dots[("speedup", "speedup")]
    pens = [p.pen().color().name() for p in dots.points()]
    assert pens[1] == DARK.error and pens[0] != DARK.error
    # the table, the CSV and the JSON say it too
    col = dialog.columns.index("disturbed")
    assert "behind its schedule" in dialog.table.item(1, col).text()
    table = list(csv.DictReader(io.StringIO(dialog.csv_text())))
    assert table[1]["disturbed"] and not table[0]["disturbed"]
    doc = dialog.document()
    assert doc["repeats"]["runs"][1]["disturbed"] == rows[1].disturbed
    # which side the lateness hit is not known: both sides of run 2 are left out
    note = doc["summary"]["disturbed_note"]
    assert note.startswith("left out of the medians: combined run 2 (") and "parallel run 2" in note
    assert doc["summary"]["repeats_counted"] == 2
