"""core/repeats.py's pieces the window's repeats use (issue 12): the phase order of each
repeat, the nonce in every prompt, the line saying how the runs were sent, and the per-run
CSV."""

from __future__ import annotations

import csv
import io

from splitdesk.core.bench.repeats import (
    RepeatOptions,
    RepeatRow,
    RepeatRun,
    repeat_csv,
    repeats_line,
)
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.template import CombinedTemplate

QS = ["Why?", "How?"]


def test_runs_alternate_phases_and_carry_their_nonce() -> None:
    plan = make_plan("one-after-another", QS, CombinedTemplate(), 16, with_sequential=True)
    names = [[p.name for p in RepeatRun(k, True, None).arrange(plan).phases] for k in (-1, 0, 1)]
    assert names == [
        ["parallel", "combined", "sequential"],  # a warm-up (repeat -1) counts as odd
        ["combined", "parallel", "sequential"],
        ["parallel", "combined", "sequential"],  # the baseline stays last
    ]
    fixed = RepeatRun(1, False, "ab12cd34").arrange(plan)
    assert [p.name for p in fixed.phases] == ["combined", "parallel", "sequential"]
    assert all(r.prompt.startswith("[run ab12cd34]\n") for r in fixed.requests)
    side = make_plan("side-by-side", QS, CombinedTemplate(), 16)
    assert RepeatRun(1, True, None).arrange(side) == side  # one phase: nothing to swap


def test_schedule_gives_each_run_its_own_nonce() -> None:
    runs = RepeatOptions(repeat=3, warmup=1).schedule()
    assert [r.repeat for r in runs] == [-1, 0, 1, 2] and runs[0].warmup
    assert len({r.nonce for r in runs}) == 4 and all(r.nonce for r in runs)
    assert {r.nonce for r in RepeatOptions(repeat=2, nonce=False).schedule()} == {None}


def test_repeats_line_says_how_the_sides_were_ordered() -> None:
    assert "alternate which goes first" in repeats_line(3, 0, 0, True)
    assert "the mode's order every run" in RepeatOptions(3, alternate=False).line()
    assert "sent together (side by side)" in RepeatOptions(3).line(together=True)


def test_csv_has_one_line_per_run_with_every_side() -> None:
    rows = [
        RepeatRow(
            0,
            ("combined", "parallel"),
            "n0",
            {"combined": 2.0, "parallel": 0.5},
            {"combined": 0.1, "parallel": 0.2},
            4.0,
        ),
        RepeatRow(
            1,
            ("parallel", "combined"),
            "n1",
            {"combined": 2.2, "parallel": 0.55},
            {"combined": 0.1},
            None,
        ),
    ]
    table = list(csv.DictReader(io.StringIO(repeat_csv(rows))))
    assert list(table[0]) == [
        "run",
        "order",
        "combined_makespan_s",
        "parallel_makespan_s",
        "combined_ttft_s",
        "parallel_ttft_s",
        "speedup",
        "nonce",
        "disturbed",
    ]
    assert table[1] == {
        "run": "2",
        "order": "parallel then combined",
        "combined_makespan_s": "2.200000",
        "parallel_makespan_s": "0.550000",
        "combined_ttft_s": "0.100000",
        "parallel_ttft_s": "",
        "speedup": "",
        "nonce": "n1",
        "disturbed": "",
    }
