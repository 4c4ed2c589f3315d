"""A run the machine disturbed is flagged, measured again and kept out of the medians.

The disturbance is real: the built-in endpoint's process is stopped (SIGSTOP) for 0.6 s
while it streams the first parallel run, so its engine loop falls behind its own schedule
(``endpoint_slip_s``), as on a machine busy enough to starve it (the issue's sweep printed
18.97× at N = 5 with ``endpoint_slip_s: 9.46``). Bench and sweep measure that run once more
and say so in the table and the JSON.
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest

from splitdesk.core.analyse.disturbance import disturbed_reason
from splitdesk.core.bench.compare import run_bench
from splitdesk.core.bench.options import BenchOptions
from splitdesk.core.bench.sweep import run_sweep
from splitdesk.core.files.report import BenchRun, summary_json
from splitdesk.core.run.run_state import RunState
from splitdesk.sim.launcher import start_sim

QUESTIONS = [f"Question {i}: why does thing {i} happen?" for i in range(4)]
STOP_S = 0.6


class StopOnce(io.StringIO):
    """The commands' progress stream: when ``trigger`` is first written, the endpoint's
    process is stopped for :data:`STOP_S` seconds, ``delay_s`` later (mid-stream)."""

    def __init__(self, trigger: str, pid: Callable[[], int], delay_s: float = 0.3) -> None:
        super().__init__()
        self.trigger, self.pid, self.delay_s = trigger, pid, delay_s
        self.fired = threading.Event()
        self.thread: threading.Thread | None = None

    def write(self, s: str) -> int:
        if self.trigger in s and not self.fired.is_set():
            self.fired.set()
            self.thread = threading.Thread(target=self._stop, daemon=True)
            self.thread.start()
        return super().write(s)

    def _stop(self) -> None:
        threading.Event().wait(self.delay_s)
        os.kill(self.pid(), signal.SIGSTOP)
        try:
            threading.Event().wait(STOP_S)
        finally:
            os.kill(self.pid(), signal.SIGCONT)


def launcher() -> tuple[Callable[..., Any], Callable[[], int]]:
    started: list[Any] = []

    def launch(profile: str, params: dict[str, Any]) -> Any:
        sim = start_sim(profile, params)
        started.append(sim)
        return sim

    return launch, lambda: int(started[0].pid)


def test_bench_measures_a_disturbed_run_again_and_says_why() -> None:
    launch, pid = launcher()
    err = StopOnce("running parallel (repeat 1/1)", pid)
    out = io.StringIO()
    opts = BenchOptions(questions=QUESTIONS, mode="one-after-another", json_path="-", max_tokens=60)
    code = run_bench(opts, out=out, err=err, launch=launch)
    assert err.thread is not None
    err.thread.join(5)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    par = next(r for r in doc["runs"] if r["mode"] == "parallel")
    assert par["remeasured"] is not None, err.getvalue()
    assert par["remeasured"].startswith("the built-in endpoint ran ")
    assert "behind its schedule" in par["remeasured"]
    # (a loaded machine may have starved the combined run too: it is named beside it)
    note = doc["summary"]["remeasured_note"]
    assert note.startswith("measured again: ") and "parallel run 1 (the first " in note
    if par["disturbed"] is not None:  # a loaded machine starved the second one too: named
        assert "parallel run 1 (" in doc["summary"]["disturbed_note"]
    assert "measuring parallel again: the built-in endpoint ran" in err.getvalue()


def test_sweep_measures_a_disturbed_step_again_and_its_row_says_so() -> None:
    launch, pid = launcher()
    err = StopOnce("N=3: parallel (repeat 1/1)", pid)
    out = io.StringIO()
    opts = BenchOptions(questions=QUESTIONS, json_path="-", max_tokens=60)
    code = run_sweep(opts, 3, out=out, err=err, launch=launch)
    assert err.thread is not None
    err.thread.join(5)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    row = doc["rows"][2]
    assert row["n"] == 3 and row["remeasured"], row
    # the stopped endpoint's run measured again for that reason; a loaded machine may have
    # starved the combined run too, named beside it
    stopped = [r for r in row["remeasured"] if r.startswith("parallel run 1: ")]
    assert len(stopped) == 1, row["remeasured"]
    assert stopped[0].startswith("parallel run 1: the built-in endpoint ran "), stopped
    for reason in row["remeasured"]:
        assert reason.startswith(("parallel run 1: ", "combined run 1: ")), reason
    for reason in row["disturbed"]:  # a loaded machine starved the second one too: named
        assert reason.startswith(("parallel run 1: ", "combined run 1: ")), reason
    assert "measuring parallel again" in err.getvalue()


def _run(wall: float, slip: float | None, lag: float | None = None) -> BenchRun:
    from splitdesk.core.run.events import (
        RequestEnded,
        RequestPlanned,
        RequestSent,
        RunEnded,
        RunStarted,
        TextReceived,
    )

    state = RunState()
    state.apply(RunStarted(0.0, "parallel", ("q",), {"url": "u"}, 0))
    state.apply(RequestPlanned(0.0, 0, "parallel", (0,), "p"))
    state.apply(RequestSent(0.0, 0))
    state.apply(TextReceived(wall, 0, "a"))
    state.apply(RequestEnded(wall, 0, "done", "stop"))
    state.apply(RunEnded(wall))
    return BenchRun("parallel", 0, state, endpoint_slip_s=slip, client_lag_s=lag)


def test_still_disturbed_runs_are_left_out_of_the_medians_with_the_reason() -> None:
    def pair(k: int, c: float, p: float, slip: float = 0.0) -> list[BenchRun]:
        comb = _run(c, 0.0)
        comb.mode, comb.repeat = "combined", k
        par = _run(p, slip)
        par.repeat = k
        return [comb, par]

    # the 18.97x: a parallel run whose endpoint fell 9.46 s behind (a bogus time)
    runs = pair(0, 4.0, 1.0) + pair(1, 4.0, 0.2, slip=9.46) + pair(2, 4.0, 1.1)
    s = summary_json(runs)
    assert s["speedup"] == pytest.approx(3.82, abs=0.01)  # median of 4.0 and 3.64, not 20
    assert s["repeats"] == 3 and s["repeats_counted"] == 2
    assert s["disturbed_note"] == (
        "left out of the medians: parallel run 2 (the built-in endpoint ran 9.46 s behind "
        "its schedule in 0.20 s)"
    )
    # every repeat disturbed: nothing is hidden, the medians are over all and say so
    bad = pair(0, 4.0, 1.0, slip=0.5)
    s = summary_json(bad)
    assert s["disturbed_all"] and s["speedup"] == pytest.approx(4.0)


def test_what_counts_as_disturbed() -> None:
    assert disturbed_reason(10.0, 0.2) is None  # 2 % of the wall: noise
    assert (
        disturbed_reason(10.0, 0.5)
        == "the built-in endpoint ran 500 ms behind its schedule in 10.00 s"
    )
    assert disturbed_reason(1.0, 0.015) is None  # under 20 ms: noise on any machine
    assert disturbed_reason(4.0, None, 0.3) is None  # the client 7.5 % late: kernel stamps hold
    assert disturbed_reason(4.0, None, 0.6) == (
        "the machine was busy: the measuring client ran 600 ms late in 4.00 s"
    )


def test_the_bench_table_says_which_runs_were_measured_again_or_left_out() -> None:
    from splitdesk.core.bench.table import format_table
    from splitdesk.core.files.report import bench_document

    comb = _run(4.0, 0.0)
    comb.mode = "combined"
    par = _run(1.0, 0.0)
    par.remeasured = "the built-in endpoint ran 410 ms behind its schedule in 2.10 s"
    comb2, par2 = _run(4.0, 0.0), _run(0.2, 9.46)
    comb2.mode, comb2.repeat, par2.repeat = "combined", 1, 1
    runs = [comb, par, comb2, par2]
    doc = bench_document({"url": "u", "api": "a", "model": "m"}, ["q"], runs)
    table = format_table(doc, runs)
    assert (
        "Measured again:       parallel run 1 (the first the built-in endpoint ran 410 ms "
        "behind its schedule in 2.10 s)"
    ) in table
    assert "Disturbed:            left out of the medians: parallel run 2 (" in table
