"""The human table ``splitdesk bench`` prints: medians and ranges in their own columns.

Every figure is read from the bench JSON document (:mod:`splitdesk.core.files.report`) or from
the same figure sets it is built from (:func:`splitdesk.core.analyse.metrics.group_metrics`,
:func:`~splitdesk.core.analyse.metrics.request_figures`); this module only chooses which to show
and formats them. Per mode, over the repeats:

* **median** columns: the makespan (``latency``), every request's TTFT pooled over the
  repeats, the output tokens of a run, the cost model's predicted makespan;
* **range** columns: the lowest and highest makespan and TTFT, ``lo–hi``.

A ``~`` marks token counts that include estimates; the notes under the table say which
requests' counts are estimated (a failed request with nothing counted is not one).
"""

from __future__ import annotations

import statistics
from typing import Any

from splitdesk.core.analyse.metrics import Spread, request_figures, spread
from splitdesk.core.files.report import BenchRun
from splitdesk.core.run.run_state import RequestTrace

LABELS = {
    "combined": "Combined request",
    "parallel": "Parallel requests",
    "sequential": "Sequential requests",
    "chain": "Chained requests",  #: dependent questions, one after another (core/plans.py)
}


def _fmt(x: float | None, unit: str = " s", nd: int = 2) -> str:
    return "—" if x is None else f"{x:.{nd}f}{unit}"


def _rng(s: Spread | None, unit: str = " s", nd: int = 2) -> str:
    """``lo–hi`` of a spread (one value when all are equal to the shown precision)."""
    if s is None:
        return "—"
    lo, hi = f"{s.min:.{nd}f}", f"{s.max:.{nd}f}"
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def _who(t: RequestTrace) -> str:
    """A request as the table names it: "combined", "parallel Q3" (questions from 1)."""
    return "combined" if t.group == "combined" else f"{t.group} Q{t.questions[0] + 1}"


def _questions(qs: list[int]) -> str:
    """ "Q1–Q5", "Q1, Q3" (questions from 0, shown from 1; runs of 3+ as a range)."""
    out, qs = [], sorted(set(qs))
    i = 0
    while i < len(qs):
        j = i
        while j + 1 < len(qs) and qs[j + 1] == qs[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"Q{qs[i] + 1}–Q{qs[j] + 1}")
        else:
            out += [f"Q{q + 1}" for q in qs[i : j + 1]]
        i = j + 1
    return ", ".join(out)


def failure_lines(traces: list[RequestTrace], limit: int = 5) -> list[str]:
    """The failed requests, one line per distinct error message with how many requests
    failed with it and which (named as in the per-request lines: "combined", "parallel
    Q1–Q5"): ``"  ! 11 requests (combined; parallel Q1–Q5; sequential Q1–Q5): cannot
    connect …"``. At most ``limit`` lines, then how many other messages were left out."""
    groups: dict[str, list[RequestTrace]] = {}
    for t in traces:
        if t.outcome == "failed":
            groups.setdefault(t.error.message if t.error else "unknown error", []).append(t)
    lines = []
    for message, failed in list(groups.items())[:limit]:
        if len(failed) == 1:
            lines.append(f"  ! 1 request ({_who(failed[0])}): {message}")
            continue
        who: dict[str, list[int]] = {}
        for t in failed:
            who.setdefault(t.group, []).extend(() if t.group == "combined" else t.questions)
        names = "; ".join(g if g == "combined" else f"{g} {_questions(q)}" for g, q in who.items())
        lines.append(f"  ! {len(failed)} requests ({names}): {message}")
    if len(groups) > limit:
        lines.append(f"  ! … and {len(groups) - limit} other errors (see the JSON)")
    return lines


def format_table(doc: dict[str, Any], runs: list[BenchRun]) -> str:
    """The human summary of a bench (module docstring): one line per mode, the speed-up,
    when the last answer starts, failures, which token counts are estimates, and with few
    runs one line per request."""
    lines = []
    ep = doc["endpoint"]
    repeats = int(doc["summary"].get("repeats", 1))
    n = len(doc["questions"])
    lines.append(
        f"splitdesk bench · {ep['url']} · {ep['api']} · {ep['model']} · "
        f"{n} question{'s' if n != 1 else ''} · {repeats} repeat{'s' if repeats != 1 else ''}"
    )
    head_median = f"median over {repeats} repeat{'s' if repeats != 1 else ''}"
    lines.append(f"{'':22}{head_median:^38}  {'range (min–max)':^28}")
    lines.append(
        f"{'':22}{'latency':>9} {'TTFT':>8} {'tokens':>8} {'predicted':>10}  "
        f"{'latency':>14} {'TTFT':>13}"
    )
    for mode in LABELS:
        mine = [r for r in runs if r.mode == mode]
        if not mine:
            continue
        metrics = [r.metrics for r in mine]
        wall = spread([m.makespan_s for m in metrics])
        ttft = spread([t for m in metrics for t in m.ttft_s])
        toks = spread([float(m.output_tokens) for m in metrics])
        pred = spread([r.predicted_wall_s for r in mine])
        est = "~" if any(m.tokens_estimated for m in metrics) else ""
        tokens = est + str(round(toks.median)) if toks else "—"
        lines.append(
            f"{LABELS[mode] + ':':22}{_fmt(wall.median if wall else None):>9} "
            f"{_fmt(ttft.median if ttft else None):>8} {tokens:>8} "
            f"{_fmt(pred.median if pred else None):>10}  {_rng(wall):>14} {_rng(ttft):>13}"
        )
    s = doc["summary"]
    if s.get("speedup") is not None:
        predicted = f"{s['predicted_speedup']:.2f}×" if s.get("predicted_speedup") else "—"
        if s.get("predicted_note") and not s.get("predicted_speedup"):
            predicted = "n/a"
        rng = s.get("speedup_range")
        spread_text = "—"
        if rng:
            lo, hi = f"{rng[0]:.2f}", f"{rng[1]:.2f}"
            spread_text = f"{lo}×" if lo == hi else f"{lo}–{hi}×"
        lines.append(
            f"{'Speed-up factor:':22}{s['speedup']:>8.2f}× {'':8} {'':8} {predicted:>10}  "
            f"{spread_text:>14}"
        )
    # runs the machine disturbed (core/analyse/disturbance.py): measured again, or left out
    if s.get("remeasured_note"):
        lines.append(
            f"{'Measured again:':22}{s['remeasured_note'].removeprefix('measured again: ')}"
        )
    if s.get("disturbed_note"):
        lines.append(f"{'Disturbed:':22}{s['disturbed_note']}")
    if s.get("predicted_note"):  # predict.RATE_LIMIT_NOTE: why a prediction is missing
        lines.append(f"{'Predicted:':22}not shown: the {s['predicted_note']} (HTTP 429)")
    comb = [r for r in runs if r.mode == "combined"]
    par = [r for r in runs if r.mode == "parallel"]
    if comb and par:
        n = len(doc["questions"])

        def start(of: list[BenchRun]) -> float | None:  # median over repeats, as above
            seen = [x for r in of if (x := r.metrics.answer_start_s.get(n - 1)) is not None]
            return statistics.median(seen) if seen else None

        c, p = start(comb), start(par)
        lines.append(
            f"{f'Answer {n} starts at:':22}{_fmt(c):>9} combined vs {_fmt(p)} parallel (medians)"
        )
    lines += failure_lines([t for r in runs for t in r.state.requests])
    notes = [
        f"{r.mode} (repeat {r.repeat + 1}): {r.metrics.estimated_note}"
        for r in runs
        if r.metrics.estimated_note
    ]
    if notes and all(r.metrics.estimated_note in ("", "all estimated") for r in runs):
        lines.append(
            "  ~ token counts are estimates (events counted; the server reported no usage)"
        )
    elif notes:
        lines.append("  ~ token counts estimated (no usage reported): " + "; ".join(notes[:6]))
    if len(runs) <= 3:
        for r in runs:
            for t in r.state.requests:
                f = request_figures(t)
                if f.t_send is None:
                    continue
                who = _who(t)
                waited = ""
                if f.retries:
                    waited = (
                        f"  attempt TTFT {_fmt(f.attempt_ttft_s, ' s', 3)} after "
                        f"{f.retries} retr{'y' if f.retries == 1 else 'ies'}"
                    )
                count = f"{'~' if f.tokens_estimated else ''}{f.output_tokens}"
                lines.append(
                    f"    {who:14} TTFT {_fmt(f.ttft_s, ' s', 3):>8}  E2E {_fmt(f.e2e_s):>8}  "
                    f"{count:>5} tok  {f.outcome}{waited}"
                )
    return "\n".join(lines)
