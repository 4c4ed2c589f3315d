"""The sweep's pieces the window and ``splitdesk sweep`` share (core/sweep.py,
core/sweep_files.py): its runs in order, rows from finished runs, the time left, the kept
file and its CSV, the documents' endpoint object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splitdesk.core.bench.sweep import (
    SweepRun,
    SweepStep,
    sweep_document,
    sweep_eta_s,
    sweep_rows,
    sweep_steps,
)
from splitdesk.core.files.report import endpoint_info
from splitdesk.core.files.sweep_files import (
    SweepFileError,
    read_sweep,
    save_sweep,
    saved_sweeps,
    sweep_csv,
)
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.run.events import (
    RequestEnded,
    RequestPlanned,
    RequestSent,
    RunEnded,
    RunStarted,
    TextReceived,
)
from splitdesk.core.run.run_state import RunState


def finished(step: SweepStep, wall_s: float, stopped: bool = False) -> SweepRun:
    """A run of ``step`` whose every request was sent at 0 and streamed its last token at
    ``wall_s`` (its makespan), ended stopped or not, as the runner's events say it."""
    state = RunState()
    questions = tuple(f"Q{i}?" for i in range(step.n))
    state.apply(RunStarted(0.0, step.mode, questions, {"url": "u", "api": "a", "model": "m"}, 0))
    reqs = [tuple(range(step.n))] if step.mode == "combined" else [(i,) for i in range(step.n)]
    for req, qs in enumerate(reqs):
        state.apply(RequestPlanned(0.0, req, step.mode, qs, "prompt"))
    for req in range(len(reqs)):
        state.apply(RequestSent(0.0, req))
        state.apply(TextReceived(wall_s, req, "answer"))
        state.apply(RequestEnded(wall_s, req, "stopped" if stopped else "done", "stop"))
    state.apply(RunEnded(wall_s, stopped))
    return SweepRun(step, state, predicted_wall_s=wall_s * 0.9, endpoint_slip_s=0.001)


def test_steps_go_n_by_n_each_repeat_combined_then_parallel() -> None:
    assert sweep_steps(2, 2) == [
        SweepStep(1, 0, "combined"),
        SweepStep(1, 0, "parallel"),
        SweepStep(1, 1, "combined"),
        SweepStep(1, 1, "parallel"),
        SweepStep(2, 0, "combined"),
        SweepStep(2, 0, "parallel"),
        SweepStep(2, 1, "combined"),
        SweepStep(2, 1, "parallel"),
    ]
    assert SweepStep(2, 0, "parallel").questions(["a", "b", "c"]) == ["a", "b"]
    with pytest.raises(ValueError, match="max_n and repeat"):
        sweep_steps(0, 1)


def test_rows_from_runs_and_only_complete_repeats_after_cancel() -> None:
    runs = [
        finished(SweepStep(1, 0, "combined"), 1.2),
        finished(SweepStep(1, 0, "parallel"), 1.0),
        finished(SweepStep(2, 0, "combined"), 2.4),
        finished(SweepStep(2, 0, "parallel"), 0.3, stopped=True),  # Cancel came here
    ]
    every = [r.to_json() for r in sweep_rows(runs)]
    assert [r["n"] for r in every] == [1, 2] and every[1]["stopped"] and not every[0]["stopped"]
    complete = [r.to_json() for r in sweep_rows(runs, complete_only=True)]
    assert [r["n"] for r in complete] == [1]
    row = complete[0]
    assert row["speedup"] == pytest.approx(1.2) and row["predicted_speedup"] == pytest.approx(1.2)
    assert row["combined_wall_s"] == pytest.approx(1.2) and row["parallel_wall_s"] == 1.0
    assert row["endpoint_slip_s"] == 0.001 and not row["failed"]
    doc = sweep_document({"url": "u"}, ["a", "b"], 0, 2, 1, sweep_rows(runs), ClientPattern())
    assert doc["client"] == {"connections": "warm", "release": "barrier"}


def test_eta_fits_each_side_linear_in_n() -> None:
    c, p = "combined", "parallel"
    assert sweep_eta_s([], sweep_steps(2, 1)) is None
    assert sweep_eta_s([(SweepStep(1, 0, c), 1.0)], []) == 0.0
    # one N so far: proportional to N, the parallel side borrowing the combined side's
    left = [SweepStep(1, 0, p), SweepStep(2, 0, c), SweepStep(2, 0, p)]
    assert sweep_eta_s([(SweepStep(1, 0, c), 1.0)], left) == pytest.approx(1 + 2 + 2)
    # two N: combined grows 1 s per N, parallel stays at 0.5 s (a batching server)
    done = [
        (SweepStep(1, 0, c), 1.0),
        (SweepStep(1, 0, p), 0.5),
        (SweepStep(2, 0, c), 2.0),
        (SweepStep(2, 0, p), 0.5),
    ]
    left = [SweepStep(3, 0, c), SweepStep(3, 0, p)]
    assert sweep_eta_s(done, left) == pytest.approx(3.0 + 0.5)


def test_kept_sweeps_read_back_and_csv(tmp_path: Path) -> None:
    runs = [finished(SweepStep(1, 0, "combined"), 1.2), finished(SweepStep(1, 0, "parallel"), 1.0)]
    doc = sweep_document(
        endpoint_info("http://127.0.0.1:1/v1", "openai-chat", "m", "batching"),
        ["a?"],
        0,
        1,
        1,
        sweep_rows(runs),
        ClientPattern(cold=True),
    )
    at = 1_764_000_000.25  # both saves in one second, whatever the clock does meanwhile
    first, second = save_sweep(doc, tmp_path, at), save_sweep(doc, tmp_path, at)
    assert first != second and second.name == first.name.removesuffix(".json") + "-2.json"
    assert read_sweep(first) == doc and set(saved_sweeps(tmp_path)) == {first, second}
    assert doc["endpoint"] == {
        "url": "builtin:batching (http://127.0.0.1:1/v1)",
        "api": "openai-chat",
        "model": "m",
        "profile": "batching",
    }
    assert endpoint_info("https://x/v1", "a", "m") == {
        "url": "https://x/v1",
        "api": "a",
        "model": "m",
    }
    assert sweep_csv(doc).splitlines() == [
        "n,combined_wall_s,parallel_wall_s,speedup,predicted_speedup,ideal_speedup,disturbed",
        "1,1.2,1.0,1.2,1.2,1,",
    ]
    bad = tmp_path / "sweep-bad.json"
    bad.write_text(json.dumps({**doc, "rows": [{"n": "three"}]}), encoding="utf-8")
    with pytest.raises(SweepFileError, match=r"sweep-bad.json is not a sweep: `rows.0.n`"):
        read_sweep(bad)
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(SweepFileError, match="is not JSON"):
        read_sweep(bad)
