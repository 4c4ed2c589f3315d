"""The N-sweep in the window (issue 12): Engineer ▸ Sweep N = 1…Nmax runs the window's
endpoint through its own controller, shows the speed-up against N beside y = N and the
cost model's prediction, keeps the sweep in the data folder and exports it; Cancel stops
the current run and the rest. One window for all of it (one engine and endpoint start)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QPushButton
from starved import on_schedule_async
from ui.conftest import wait_until

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.files.sweep_files import read_sweep, sweeps_dir
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.engineer.sweep_view import IDEAL, MEASURED, PREDICTED, table_cells

#: Short answers (~40 tokens) at speed 6 (~3 ms steps), as tests/cli/test_cli_sweep.py: the
#: six runs of N = 1…3 take ~1.4 s of requests.
FAST = {"answer_tokens": 40}
SPEED = 6.0


@pytest.mark.asyncio
async def test_window_sweep_plots_keeps_exports_and_cancels(
    make_window: Any, tmp_path: Path
) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=SPEED)))
    window.controller.sim_overrides = dict(FAST)

    actions = [a.text() for a in window.engineer.menu.actions()]
    assert "Sweep N = 1…Nmax…" in actions and "Open a saved sweep…" in actions

    async def measure() -> Any:
        sweeps = window.engineer.sweeps
        dialog = sweeps.ask()  # what Engineer ▸ Sweep N = 1…Nmax… opens
        assert sweeps.repeat_box.value() == 1  # K defaults to 1
        sweeps.max_n_box.setValue(3)
        dialog.accept()
        session = sweeps.session
        assert session is not None and session.max_n == 3 and session.repeat == 1
        await wait_until(lambda: session.finished, 60, "the sweep of N = 1…3 ended")
        return session

    def check(session: Any) -> None:
        rows = session.doc["rows"]
        assert [r["n"] for r in rows] == [1, 2, 3]
        for r in rows:  # as tests/cli/test_cli_sweep.py: within 10 % of the cost model
            assert r["predicted_speedup"] is not None and r["speedup"] is not None, r
            assert abs(r["speedup"] - r["predicted_speedup"]) <= 0.10 * r["predicted_speedup"], r
        # one question: no gain but the parallel prompt's shorter prefill (the model: 1.12×)
        assert 0.95 <= rows[0]["speedup"] <= 1.25, rows[0]
        assert rows[0]["speedup"] < rows[1]["speedup"] < rows[2]["speedup"], rows

    def slips(session: Any) -> list[tuple[str, float | None, float | None]]:
        rows = session.doc["rows"]
        return [(f"N={r['n']}", r["parallel_wall_s"], r["endpoint_slip_s"]) for r in rows]

    session = await on_schedule_async(measure, check, slips)
    doc, view = session.doc, session.view
    rows = doc["rows"]
    assert not window.controller.busy and session.progress.isHidden()
    assert doc["generated_questions"] == 0 and doc["questions"] == window.questions.questions()[:3]
    assert doc["endpoint"]["profile"] == "batching"

    # the view: one table row per N with the document's figures, the three curves
    assert view.isVisible()
    assert view.rows() == [table_cells(r) for r in rows]
    assert view.rows()[2][3] == f"{rows[2]['speedup']:.2f}"
    assert view.curves[MEASURED] == ([1, 2, 3], [r["speedup"] for r in rows])
    assert view.curves[IDEAL] == ([1, 3], [1, 3])
    assert view.curves[PREDICTED] == ([1, 2, 3], [r["predicted_speedup"] for r in rows])
    assert [label.text for _sample, label in view.legend.items] == [IDEAL, PREDICTED, MEASURED]
    assert view.client.text() == ClientPattern().describe()

    # kept in the data folder, and the kept file reopens the same view
    assert session.path is not None and session.path.parent == sweeps_dir()
    assert read_sweep(session.path) == doc
    again = await window.engineer.sweeps.open(session.path)
    assert again is not None and again.rows() == view.rows()

    # exports: CSV rows, the JSON document (= splitdesk sweep --json's), the plot as PNG
    out = await view.export("CSV", tmp_path / "sweep.csv")
    assert out is not None
    with out.open(newline="") as f:
        table = list(csv.DictReader(f))
    assert [int(r["n"]) for r in table] == [1, 2, 3]
    assert [float(r["speedup"]) for r in table] == [r["speedup"] for r in rows]
    assert [float(r["ideal_speedup"]) for r in table] == [1, 2, 3]
    assert [float(r["parallel_wall_s"]) for r in table] == [r["parallel_wall_s"] for r in rows]
    out = await view.export("JSON", tmp_path / "sweep.json")
    assert out is not None
    exported = json.loads(out.read_text(encoding="utf-8"))
    assert exported == doc and [table_cells(r) for r in exported["rows"]] == view.rows()
    out = await view.export("PNG", tmp_path / "sweep.png")
    assert out is not None
    image = QImage(str(out))
    width = round(view.plot.getPlotItem().sceneBoundingRect().width() * 2)
    assert image.width() == width and image.height() > 100
    accent = view.theme.qcolor("accent").rgb() & 0xFFFFFF
    pixels = {
        image.pixel(x, y) & 0xFFFFFF
        for x in range(0, image.width(), 2)
        for y in range(0, image.height(), 2)
    }
    assert accent in pixels, "the measured curve is drawn in the PNG"

    # Cancel (one window for both: its engine and endpoint start once) while N = 2's
    # combined run is starting: that run ends stopped, no other starts, the view shows N = 1
    session = window.engineer.sweeps.sweep(3)
    assert session is not None
    cancel = session.progress.findChild(QPushButton)  # the progress dialog's Cancel button
    current: list[Any] = []

    def planned(_plan: Any, questions: list[str]) -> None:
        if len(questions) == 2 and not current:  # N = 2's combined run is starting: Cancel
            current.append(window.controller.state)
            cancel.click()

    window.controller.runPlanned.connect(planned)
    await wait_until(lambda: session.finished, 60, "the sweep ended on Cancel at N = 2")
    window.controller.runPlanned.disconnect(planned)
    assert current and current[0].ended is not None and current[0].ended.stopped
    assert [(r.step.n, r.step.mode) for r in session.runs] == [(1, "combined"), (1, "parallel")]
    assert not window.controller.busy and window.controller.live is None  # no run left
    assert [r["n"] for r in session.doc["rows"]] == [1]
    assert session.view.rows() == [table_cells(session.doc["rows"][0])]
    assert "stopped after N = 1 of 3" in session.view.title.text()
    assert "Sweep cancelled after N = 1." in window.statusBar().currentMessage()


def test_the_view_says_where_the_curve_leaves_the_ideal_and_marks_disturbed_rows(
    qtbot: Any,
) -> None:
    from paths import FIXTURES
    from splitdesk.core.analyse.sweep_reading import read_sweep as read_rows
    from splitdesk.ui.common.theme import DARK
    from splitdesk.ui.engineer.sweep_view import COLUMNS, DISTURBED, SweepView

    # a real llama-server sweep with 4 slots; one row as the issue's: every run of N = 5
    # disturbed (the endpoint 9.46 s behind), another measured again
    doc = json.loads((FIXTURES / "llamacpp" / "sweep-np4.json").read_text("utf-8"))
    reason = "parallel run 1: the built-in endpoint ran 9.46 s behind its schedule in 1.20 s"
    doc["rows"][4].update(speedup=18.97, disturbed=[reason], disturbed_all=True)
    doc["rows"][2].update(remeasured=["parallel run 1: the machine was busy"])
    reading = read_rows(doc["rows"], doc["server_limit"])
    assert reading is not None
    doc["reading"] = reading.to_json()
    view = SweepView(doc, None, DARK)
    qtbot.addWidget(view)
    view.show()
    assert view.reading.isVisible()
    assert view.reading.text() == f"Speed-up {reading.text}"
    assert "the server runs 4 sequences at once" in view.reading.text()
    # the disturbed row is drawn apart, not on the measured line
    assert view.curves[DISTURBED] == ([5], [18.97])
    assert 5 not in view.curves[MEASURED][0]
    note = COLUMNS.index("note")
    assert view.rows()[4][note] == "not read (disturbed)"
    assert view.table.item(4, note).toolTip() == f"disturbed, not read: {reason}"
    assert view.rows()[2][note] == "measured again"
    assert f"N = 5: disturbed, not read: {reason}." in view.notes.text()


@pytest.mark.asyncio
async def test_cancel_between_two_sweep_runs_starts_no_further_run(make_window: Any) -> None:
    """Cancel pressed after N = 1 ended and before N = 2's first run is under way (the
    controller asked to start it, not busy yet): that run is stopped as soon as it starts,
    no other starts, and the sweep ends with N = 1."""
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=SPEED)))
    window.controller.sim_overrides = dict(FAST)
    controller = window.controller
    session = window.engineer.sweeps.sweep(3)
    assert session is not None
    cancel = session.progress.findChild(QPushButton)
    start = controller.start
    states: list[Any] = []
    clicked: list[bool] = []

    async def start_then(request: Any) -> None:
        if len(request.questions) == 2 and not clicked:  # N = 2, between the runs
            assert not controller.busy
            clicked.append(True)
            cancel.click()
        await start(request)
        states.append(controller.state)

    controller.start = start_then  # type: ignore[method-assign]
    try:
        await wait_until(lambda: session.finished, 60, "the sweep ended on Cancel before N = 2")
    finally:
        controller.start = start  # type: ignore[method-assign]
    assert [(r.step.n, r.step.mode) for r in session.runs] == [(1, "combined"), (1, "parallel")]
    late = states[2:]
    assert all(s is None or (s.ended is not None and s.ended.stopped) for s in late), late
    assert len(states) <= 3, "no run after the one being started when Cancel came"
    assert not controller.busy and controller.live is None
    assert "Sweep cancelled after N = 1." in window.statusBar().currentMessage()


@pytest.mark.asyncio
async def test_a_sweep_of_questions_about_one_document_sends_the_document(
    make_window: Any,
) -> None:
    """The set's shared context opens every prompt of the window's sweep, as it does the
    window's own run and `splitdesk sweep` (it was left out: the sweep measured questions
    without their document)."""
    from splitdesk.core.run.questions import Question, QuestionSet

    window = make_window(AppSettings(endpoint=EndpointSettings(speed=SPEED)))
    window.controller.sim_overrides = dict(FAST)
    document = "HARBOUR STREET LIBRARY AGREEMENT. The library opens at nine. " * 20
    window.questions.set_question_set(
        QuestionSet(
            questions=[Question(text="When does it open?"), Question(text="Who signs it?")],
            context=document,
        )
    )
    plans: list[Any] = []
    window.controller.runPlanned.connect(lambda plan, _q: plans.append(plan))
    session = window.engineer.sweeps.sweep(2)
    assert session is not None
    await wait_until(lambda: session.finished, 90, "the two-step sweep with a document ended")
    assert [(r.step.n, r.step.mode) for r in session.runs] == [
        (1, "combined"),
        (1, "parallel"),
        (2, "combined"),
        (2, "parallel"),
    ]
    # one plan per run sent: a run the loaded machine distorted is sent once more
    # (sweep_session: "measured again"), and that one must carry the document too
    again = sum(1 for r in session.runs if r.remeasured)
    assert len(plans) == 4 + again and all(p.has_context for p in plans)
    for plan in plans:
        for r in plan.requests:
            text = (r.system or "") + r.prompt
            assert document.strip() in text and r.context_chars == len(document.strip())
