"""Repeats in the window (issue 12): the options dialog's choices reach the runs actually
sent (sides alternate as core's mode_order says, every run's prompts open with their own
nonce as the built-in endpoint received them, the warm-up run is not counted), the strip
plots hold one dot per counted run per side and figure, the exports hold the same figures,
and Cancel stops the warm-up and the pause with no run left running. One window for all
of it: its built-in endpoint starts once."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QPushButton
from ui.conftest import wait_until

from splitdesk.core.analyse.metrics import summarize
from splitdesk.core.bench.repeats import RepeatOptions, mode_order
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.questions import Question, QuestionSet
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.engineer.repeat_options import RepeatOptionsDialog
from splitdesk.ui.engineer.repeat_results import StripPlots

#: Fast built-in endpoint, short answers: one one-after-another run takes well under 1 s.
FAST = AppSettings(endpoint=EndpointSettings(speed=20.0, max_tokens=24), mode="one-after-another")
#: The same endpoint with long answers (a run still sending when Cancel comes).
SLOW = EndpointSettings(speed=20.0, max_tokens=400)
QUESTIONS = ["Why is the sky blue?", "How do vaccines work?", "What is a black hole?"]


def first_side(state: RunState) -> str:
    """The side whose phase started first (the phases' recorded start times)."""
    starts = {
        side: state.phase_starts[min(r.phase for r in state.group(side))]
        for side in ("combined", "parallel")
    }
    return min(starts, key=lambda s: starts[s])


async def received_heads(root: str, state: RunState) -> list[str]:
    """What the built-in endpoint read as each request's prompt (its emission log)."""
    async with httpx.AsyncClient(base_url=root, timeout=10) as client:
        out = []
        for r in state.requests:
            assert r.request_id, f"request {r.req} has no x-request-id"
            reply = await client.get(f"/_splitdesk/trace/{r.request_id}")
            reply.raise_for_status()
            out.append(reply.json()["prompt_head"])
        return out


def y_values(plots: StripPlots, figure: str, strip: str) -> list[float]:
    _, ys = plots.dots[(figure, strip)].getData()
    return [float(y) for y in ys]


@pytest.mark.asyncio
async def test_repeats_alternate_with_warmup_nonces_plots_exports_and_cancel(
    make_window: Any, tmp_path: Path
) -> None:
    # one window for every case: the built-in endpoint starts once (CI time)
    window = make_window(FAST)
    window.questions.set_question_set(
        QuestionSet(title="three", questions=[Question(text=q) for q in QUESTIONS])
    )
    dialog = window.engineer._ask_repeat()  # Engineer ▸ Repeat the comparison…
    assert isinstance(dialog, RepeatOptionsDialog) and dialog.isVisible()
    assert dialog.options() == RepeatOptions()  # 5 runs, alternate, no warm-up/pause, nonce
    assert "prefix cache" in dialog.nonce.toolTip()
    dialog.runs.setValue(3)
    dialog.warmup.setValue(1)
    dialog.accept()  # Run
    session = window.engineer.session
    assert session is not None and session.options == RepeatOptions(3, True, 1, 0.0, True)
    await wait_until(lambda: session.figures is not None, 60, "the warm-up and 3 counted runs")

    # the warm-up was sent (parallel first: repeat -1) but is not counted
    assert len(session.warmups) == 1 and len(session.states) == 3
    assert session.figures.runs == 3 and len(session.rows) == 3
    warm = session.warmups[0]
    assert all(warm is not s for s in session.states)
    assert first_side(warm) == mode_order(["combined", "parallel"], -1)[0] == "parallel"
    # the counted runs alternate as core says: combined, parallel, combined first
    firsts = [first_side(s) for s in session.states]
    assert firsts == [mode_order(["combined", "parallel"], k)[0] for k in range(3)]
    assert firsts == ["combined", "parallel", "combined"]
    assert [r.order for r in session.rows] == [
        ("combined", "parallel"),
        ("parallel", "combined"),
        ("combined", "parallel"),
    ]

    # every run's prompts open with its own nonce, as the endpoint received them
    nonces = [session.schedule[0].nonce, *session.nonces]
    assert all(nonces) and len(set(nonces)) == 4
    root = window.controller.sim.url
    for state, nonce in zip([warm, *session.states], nonces, strict=True):
        heads = await received_heads(root, state)
        assert heads and all(h.startswith(f"[run {nonce}]\n") for h in heads), (nonce, heads)

    # per-run figures are the runs' own (the figure set), the text is core's
    for row, state in zip(session.rows, session.states, strict=True):
        groups = summarize(state).groups
        assert row.makespan_s == {g: m.makespan_s for g, m in groups.items()}
        assert row.speedup == summarize(state).speedup
    results = session.results
    assert results is not None and results.isVisible()
    text = results.text.text()
    assert session.options.line() in text
    assert "combined and parallel alternate which goes first" in text
    assert "1 warm-up round discarded" in text and "a per-run nonce opens every prompt" in text

    # the strip plots: K dots per side per figure, at the rows' values, median marked
    f = session.figures
    plots = results.plots
    for side in ("combined", "parallel"):
        assert y_values(plots, "makespan", side) == [r.makespan_s[side] for r in session.rows]
        assert y_values(plots, "ttft", side) == [r.ttft_s[side] for r in session.rows]
        assert plots.medians[("makespan", side)] == f.makespan[side].median
        assert plots.medians[("ttft", side)] == f.ttft[side].median
    assert y_values(plots, "speedup", "speedup") == [r.speedup for r in session.rows]
    assert plots.medians[("speedup", "speedup")] == f.speedup.median
    assert results.table.rowCount() == 3

    # exports hold the same figures
    results.save_csv(tmp_path / "r.csv")
    table = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text("utf-8"))))
    assert [float(t["parallel_makespan_s"]) for t in table] == pytest.approx(
        [r.makespan_s["parallel"] for r in session.rows], abs=1e-6
    )
    assert [float(t["speedup"]) for t in table] == pytest.approx(
        [r.speedup for r in session.rows], abs=1e-6
    )
    assert [t["nonce"] for t in table] == session.nonces
    assert [t["order"] for t in table] == [
        "combined then parallel",
        "parallel then combined",
        "combined then parallel",
    ]
    results.save_json(tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text("utf-8"))
    rep = doc["repeats"]
    assert rep["runs"] == [r.to_json() for r in session.rows]
    assert (rep["repeat"], rep["warmup"], rep["nonce"], rep["alternate"]) == (3, 1, True, True)
    assert rep["order"][1] == ["parallel", "combined"]
    assert doc["summary"]["speedup"] == round(f.speedup.median, 4)
    assert doc["summary"]["combined_wall_s"] == round(f.makespan["combined"].median, 6)
    assert doc["summary"]["parallel_wall_s_range"] == [
        round(f.makespan["parallel"].min, 6),
        round(f.makespan["parallel"].max, 6),
    ]
    assert [(r["mode"], r["repeat"]) for r in doc["runs"]] == [
        (m, k) for k in range(3) for m in ("combined", "parallel")
    ]
    w, h = results.save_png(tmp_path / "r.png")
    image = QImage(str(tmp_path / "r.png"))
    assert not image.isNull() and (image.width(), image.height()) == (w, h)
    assert w >= 2 * plots.width() - 2

    # Cancel while a warm-up runs: it stops, nothing is counted, nothing else starts
    ctl = window.controller
    window.endpoint.set_settings(SLOW)  # long answers: the warm-up is still sending
    session = window.engineer.repeat(RepeatOptions(repeat=2, warmup=1))
    await wait_until(lambda: ctl.live is not None, 30, "the warm-up run is sending")
    started = ctl.state
    session.progress.findChild(QPushButton).click()  # the progress dialog's Cancel
    await wait_until(lambda: session.figures is not None, 30, "the session ended on Cancel")
    assert session.cancelled and session.figures.runs == 0 and session.states == []
    assert started.ended is not None and started.ended.stopped
    assert not ctl.busy and ctl.live is None and ctl.state is started

    # Cancel during the pause after the first counted run: no further run starts
    window.endpoint.set_settings(FAST.endpoint)  # short answers: the first run ends soon
    session = window.engineer.repeat(RepeatOptions(repeat=3, pause_s=60.0))
    await wait_until(lambda: session.pausing, 60, "the first run ended and the pause began")
    assert len(session.states) == 1 and "Pausing 60 s" in session.progress.labelText()
    last = ctl.state
    session.progress.findChild(QPushButton).click()
    await wait_until(lambda: session.figures is not None, 10, "the pause ended on Cancel")
    assert session.figures.runs == 1 and not session.pausing
    assert not ctl.busy and ctl.live is None and ctl.state is last  # no run after the pause
    async with httpx.AsyncClient(base_url=ctl.sim.url, timeout=10) as client:
        info = (await client.get("/_splitdesk/info")).json()
    assert info["active_requests"] == 0 and info["running"] == 0
