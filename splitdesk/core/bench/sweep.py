"""``splitdesk sweep``: the speed-up against N, headless.

For N = 1 … ``max_n`` the sweep runs the first N questions of the set (more are generated
when the set is shorter, :func:`sweep_questions`) combined, then in parallel, each phase on
an idle endpoint, ``repeat`` times, exactly as ``splitdesk bench --mode combined`` /
``--mode parallel`` would. Every figure of a row is the bench's own (:func:`splitdesk.core
.report.summary_json` over that N's runs): ``speedup`` is the median over the repeats of
combined makespan / parallel makespan, ``predicted_speedup`` the same ratio of the built-in
endpoint's predicted makespans (``None`` elsewhere), the walls are the median makespans in
seconds. The ideal line is ``speedup = n``.

JSON document (keys may be added, never removed)::

    {"version": str, "endpoint": {...}, "max_n": int, "repeat": int,
     "questions": [str, ...],            # the max_n questions; row n used the first n
     "generated_questions": int,         # how many of them were generated
     "client": {"connections": "warm"|"cold", "release": "barrier"|"as-scheduled"},
     "rows": [{"n", "speedup", "speedup_range", "predicted_speedup",
               "combined_wall_s", "parallel_wall_s", "combined_wall_s_range",
               "parallel_wall_s_range", "failed", "stopped", "endpoint_slip_s",
               "combined_prompt", "parallel_prompt"}, ...]}
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import httpx

from splitdesk import __version__
from splitdesk.builtin_endpoint import Launcher
from splitdesk.core.analyse.predict import predict_plan, predicted_makespan
from splitdesk.core.bench.compare import (
    open_target,
    run_on_schedule,
    with_model,
    write_document,
)
from splitdesk.core.bench.interrupt import Interrupt
from splitdesk.core.bench.options import BenchOptions
from splitdesk.core.bench.repeats import new_nonce, with_nonce
from splitdesk.core.files.report import BenchRun, prompt_json, summary_json
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.run.plans import RunPlan, make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig

#: Subjects of generated questions: everyday, independent, answerable in a paragraph.
_SUBJECTS = (
    "how a refrigerator keeps food cold",
    "why the sky is blue",
    "how vaccines train the immune system",
    "what causes the seasons",
    "how a bicycle stays upright",
    "why bread rises",
    "how noise-cancelling headphones work",
    "what a credit score measures",
    "how tides form",
    "why leaves change colour in autumn",
    "how a compass finds north",
    "what makes a rainbow",
    "how solar panels make electricity",
    "why cats purr",
    "how a microwave oven heats food",
    "what causes thunder",
    "how GPS finds a position",
    "why onions make people cry",
    "how a lock and key work",
    "what a black hole is",
)


def sweep_questions(questions: list[str], max_n: int) -> tuple[list[str], int]:
    """The ``max_n`` questions of a sweep and how many of them were generated.

    The first ``max_n`` of ``questions``; when there are fewer, generated everyday
    questions ("In a short paragraph, explain …") follow, each different from the others.
    Raises ``ValueError`` when ``max_n`` < 1.
    """
    if max_n < 1:
        raise ValueError("max_n must be >= 1")
    out = list(questions[:max_n])
    generated = 0
    k = 0
    while len(out) < max_n:
        subject = _SUBJECTS[k % len(_SUBJECTS)]
        round_ = k // len(_SUBJECTS)
        text = f"In a short paragraph, explain {subject}."
        if round_:
            text = f"In a short paragraph, explain {subject} (take {round_ + 1})."
        k += 1
        if text not in out:
            out.append(text)
            generated += 1
    return out, generated


SweepMode = Literal["combined", "parallel"]


@dataclass(frozen=True)
class SweepStep:
    """One run of a sweep: ``n`` questions (the sweep's first ``n``), repeat ``repeat``
    (0-based), sent ``mode`` (combined or parallel)."""

    n: int
    repeat: int
    mode: SweepMode

    def questions(self, questions: Sequence[str]) -> list[str]:
        """The questions this run sends: the first ``n`` of the sweep's."""
        return list(questions[: self.n])

    def plan(
        self,
        questions: Sequence[str],
        template: CombinedTemplate,
        max_tokens: int | None,
        context: str = "",
    ) -> RunPlan:
        """This run's plan (:func:`~splitdesk.core.run.plans.make_plan` of its questions,
        each prompt opened by the shared ``context`` when there is one)."""
        return make_plan(
            self.mode, self.questions(questions), template, max_tokens, context=context
        )


def sweep_steps(max_n: int, repeat: int) -> list[SweepStep]:
    """Every run of a sweep in the order they are sent: for N = 1 … ``max_n``, for each of
    ``repeat`` repeats, combined then parallel (each on an idle endpoint). Raises
    ``ValueError`` when ``max_n`` or ``repeat`` is < 1."""
    if max_n < 1 or repeat < 1:
        raise ValueError("max_n and repeat must be >= 1")
    modes: tuple[SweepMode, ...] = ("combined", "parallel")
    return [
        SweepStep(n, k, mode) for n in range(1, max_n + 1) for k in range(repeat) for mode in modes
    ]


@dataclass(frozen=True)
class SweepRun:
    """A finished run of a sweep: its step, its :class:`RunState`, the built-in endpoint's
    predicted makespan (seconds, ``None`` elsewhere) and how late that endpoint ran during
    it (``endpoint_slip_s``, seconds, ``None`` elsewhere)."""

    step: SweepStep
    state: RunState
    predicted_wall_s: float | None = None
    endpoint_slip_s: float | None = None

    @property
    def stopped(self) -> bool:
        """The run was stopped before its end (Cancel, Ctrl+C)."""
        return bool(self.state.ended is None or self.state.ended.stopped)


def sweep_rows(runs: Sequence[SweepRun], complete_only: bool = False) -> list[SweepRow]:
    """The sweep's rows (one per N, in order of N) from its finished runs. With
    ``complete_only`` a row keeps only the repeats whose combined and parallel runs both
    ended unstopped, and an N with none has no row (the window after Cancel); otherwise
    every run counts (a stopped one marks its row ``stopped``, as ``splitdesk sweep``
    interrupted does)."""
    kept = list(runs)
    if complete_only:
        done = {(r.step.n, r.step.repeat, r.step.mode) for r in runs if not r.stopped}
        kept = [
            r
            for r in runs
            if not r.stopped
            and {(r.step.n, r.step.repeat, m) for m in ("combined", "parallel")} <= done
        ]
    rows: dict[int, SweepRow] = {}
    for r in kept:
        row = rows.setdefault(r.step.n, SweepRow(r.step.n, []))
        row.runs.append(
            BenchRun(
                r.step.mode,
                r.step.repeat,
                r.state,
                r.predicted_wall_s,
                endpoint_slip_s=r.endpoint_slip_s,
            )
        )
    return [rows[n] for n in sorted(rows)]


def sweep_eta_s(done: Sequence[tuple[SweepStep, float]], left: Sequence[SweepStep]) -> float | None:
    """Seconds the runs ``left`` should take, from the runs ``done`` (each with its wall
    time in seconds). A run's time is taken as linear in N per side — a combined reply
    grows with N, the parallel side's grows with N only where the server does not batch —
    fitted by least squares over that side's finished runs (proportional to N while they
    have a single N; the other side's fit while a side has none). ``None`` before any run
    has finished; never negative."""
    if not done:
        return None
    if not left:
        return 0.0

    def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
        ns = {n for n, _ in points}
        if len(ns) < 2:  # one N: time proportional to N
            per = sum(t for _, t in points) / sum(n for n, _ in points)
            return 0.0, per
        mn = sum(n for n, _ in points) / len(points)
        mt = sum(t for _, t in points) / len(points)
        sxx = sum((n - mn) ** 2 for n, _ in points)
        b = max(sum((n - mn) * (t - mt) for n, t in points) / sxx, 0.0)
        return max(mt - b * mn, 0.0), b

    fits = {}
    for mode in ("combined", "parallel"):
        points = [(s.n, t) for s, t in done if s.mode == mode]
        if points:
            fits[mode] = fit(points)
    fallback = next(iter(fits.values()))
    total = 0.0
    for step in left:
        a, b = fits.get(step.mode, fallback)
        total += a + b * step.n
    return max(total, 0.0)


@dataclass
class SweepRow:
    """One N of a sweep: its runs (combined and parallel per repeat)."""

    n: int
    runs: list[BenchRun]

    def to_json(self) -> dict[str, Any]:
        """The row of the JSON document (module docstring); figures from
        :func:`~splitdesk.core.files.report.summary_json`."""
        s = summary_json(self.runs)
        slips = [r.endpoint_slip_s for r in self.runs if r.endpoint_slip_s is not None]
        first: dict[str, BenchRun] = {}
        for r in self.runs:
            first.setdefault(r.mode, r)
        prompts = {
            f"{mode}_prompt": prompt_json(first[mode].metrics.prompt) if mode in first else None
            for mode in ("combined", "parallel")
        }
        return {
            "n": self.n,
            "speedup": s.get("speedup"),
            "speedup_range": s.get("speedup_range"),
            "predicted_speedup": s.get("predicted_speedup"),
            "combined_wall_s": s.get("combined_wall_s"),
            "parallel_wall_s": s.get("parallel_wall_s"),
            "combined_wall_s_range": s.get("combined_wall_s_range"),
            "parallel_wall_s_range": s.get("parallel_wall_s_range"),
            "failed": any(t.outcome != "done" for r in self.runs for t in r.state.requests),
            "stopped": any(bool(r.state.ended and r.state.ended.stopped) for r in self.runs),
            # the longest a run of this row had the built-in endpoint behind its schedule
            "endpoint_slip_s": max(slips) if slips else None,
            # each side's prompt and cached tokens (first repeat; the servers' usage)
            **prompts,
        }


def format_sweep_table(doc: dict[str, Any]) -> str:
    """The human table of a sweep document: one line per N (ideal speed-up = N)."""

    def f(x: float | None, unit: str) -> str:
        return "—" if x is None else f"{x:.2f}{unit}"

    ep = doc["endpoint"]
    k = doc["repeat"]
    lines = [
        f"splitdesk sweep · {ep['url']} · {ep['api']} · {ep['model']} · N = 1…{doc['max_n']}"
        f" · {k} repeat{'s (medians)' if k != 1 else ''}",
        f"{'N':>3} {'combined':>10} {'parallel':>10} {'speed-up':>9} {'predicted':>10} "
        f"{'ideal':>6}",
    ]
    for row in doc["rows"]:
        note = "  (requests failed)" if row["failed"] else ""
        lines.append(
            f"{row['n']:>3} {f(row['combined_wall_s'], ' s'):>10} "
            f"{f(row['parallel_wall_s'], ' s'):>10} {f(row['speedup'], '×'):>9} "
            f"{f(row['predicted_speedup'], '×'):>10} {row['n']:>5}×{note}"
        )
    client = doc.get("client")
    if client:
        lines.append(ClientPattern(client["connections"] == "cold", client["release"]).describe())
    generated = generated_note(doc)
    if generated:
        lines.append(generated)
    return "\n".join(lines)


def generated_note(doc: dict[str, Any]) -> str | None:
    """How many of a sweep document's questions were generated (the set was shorter than
    ``max_n``), as a sentence; ``None`` when none was."""
    n = doc.get("generated_questions") or 0
    if not n:
        return None
    verb = "was" if n == 1 else "were"
    return f"{n} of the {doc['max_n']} questions {verb} generated (the set was shorter)."


async def _sweep(
    opts: BenchOptions,
    endpoint: EndpointConfig,
    sim_root: str | None,
    questions: list[str],
    max_n: int,
    err: TextIO,
    runs: list[SweepRun],
    interrupt: Interrupt | None = None,
) -> None:
    interrupt = interrupt or Interrupt()
    config = opts.run_config(endpoint)
    for step in sweep_steps(max_n, opts.repeat):
        if interrupt.requested():  # Ctrl-C: no further run (core/bench/interrupt.py)
            return
        plan = step.plan(questions, opts.template, opts.max_tokens, opts.context)
        if plan.has_context and opts.nonce is not False:  # each side prefills its document
            plan = with_nonce(plan, new_nonce())
        predicted = None
        if sim_root is not None:  # asked before the run, never during it
            try:
                preds = await interrupt.wait(
                    predict_plan(sim_root, endpoint, plan, opts.temperature, opts.seed)
                )
                predicted = predicted_makespan(preds) if preds is not None else None
            except (httpx.HTTPError, ValueError):
                predicted = None
        if interrupt.requested():
            return
        state = RunState()
        print(
            f"  N={step.n}: {step.mode} (repeat {step.repeat + 1}/{opts.repeat}) …",
            file=err,
            flush=True,
        )
        slip = await run_on_schedule(
            config, state, step.questions(questions), plan, sim_root, interrupt
        )
        runs.append(SweepRun(step, state, predicted, slip))
        if state.ended is not None and state.ended.stopped:
            return


def run_sweep(
    opts: BenchOptions,
    max_n: int,
    out: TextIO | None = None,
    err: TextIO | None = None,
    launch: Launcher | None = None,
) -> int:
    """Run a sweep; returns the exit status (0 all succeeded, 1 some failed, 130
    interrupted). ``opts`` are bench options (``mode`` and ``record_path`` are ignored;
    ``json_path`` ``"-"`` writes the JSON to ``out`` and the table to ``err``). ``launch``
    starts the built-in endpoint (handed in: the core never imports the simulator). Raises
    :class:`~splitdesk.core.bench.compare.BenchError` for problems the user must fix first.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    questions, generated = sweep_questions(opts.questions, max_n)
    with open_target(opts, launch) as target:
        runs: list[SweepRun] = []  # filled as runs finish: an interrupted sweep keeps them
        resolved = [target.endpoint]
        sim_root = target.sim.url if target.sim is not None else None

        interrupt = Interrupt()

        async def main() -> None:
            interrupt.install()  # Ctrl-C stops at once, keeping what finished
            try:
                ep = resolved[0] = await with_model(target.endpoint, err, "sweep")
                await _sweep(opts, ep, sim_root, questions, max_n, err, runs, interrupt)
            finally:
                interrupt.uninstall()

        interrupted = False
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            interrupted = True
        interrupted = interrupted or interrupt.requested()
        info = target.info(resolved[0], opts.profile)
        doc = sweep_document(
            info, questions, generated, max_n, opts.repeat, sweep_rows(runs), opts.client
        )
        text = json.dumps(doc, indent=2, ensure_ascii=False)
        if not write_document(format_sweep_table(doc), text, opts.json_path, out, err, "sweep"):
            return 1
        if interrupted or any(r["stopped"] for r in doc["rows"]):
            print("splitdesk sweep: interrupted", file=err)
            return 130
        return 1 if any(r["failed"] for r in doc["rows"]) else 0


def sweep_document(
    endpoint: dict[str, str],
    questions: list[str],
    generated: int,
    max_n: int,
    repeat: int,
    rows: list[SweepRow],
    client: ClientPattern | None = None,
) -> dict[str, Any]:
    """The sweep's JSON document (module docstring): what ``splitdesk sweep --json``
    writes and the window's sweep view shows, saves and exports. ``client`` is the
    pattern the runs were sent with (``client`` key; left out when ``None``)."""
    doc: dict[str, Any] = {
        "version": __version__,
        "endpoint": endpoint,
        "max_n": max_n,
        "repeat": repeat,
        "questions": questions,
        "generated_questions": generated,
        "rows": [r.to_json() for r in rows],
    }
    if client is not None:
        doc["client"] = client.to_json()
    return doc
