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
               "parallel_wall_s_range", "failed", "stopped", "endpoint_slip_s"}, ...]}
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import httpx

from splitdesk import __version__
from splitdesk.builtin_endpoint import BUILTIN_MODEL, Launcher
from splitdesk.core.bench import (
    BUILTIN,
    BenchError,
    BenchOptions,
    EndpointUnreachableError,
    discover_model,
    resolve_key,
)
from splitdesk.core.client_pattern import ClientPattern
from splitdesk.core.plans import make_plan
from splitdesk.core.predict import predict_plan, predicted_makespan, schedule_slip_s
from splitdesk.core.report import BenchRun, summary_json
from splitdesk.core.run_state import RunState
from splitdesk.core.runner import RunConfig, Runner, redact
from splitdesk.providers import get_provider
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


@dataclass
class SweepRow:
    """One N of a sweep: its runs (combined and parallel per repeat)."""

    n: int
    runs: list[BenchRun]

    def to_json(self) -> dict[str, Any]:
        """The row of the JSON document (module docstring); figures from
        :func:`~splitdesk.core.report.summary_json`."""
        s = summary_json(self.runs)
        slips = [r.endpoint_slip_s for r in self.runs if r.endpoint_slip_s is not None]
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
        }


def format_sweep_table(doc: dict[str, Any]) -> str:
    """The human table of a sweep document: one line per N (ideal speed-up = N)."""

    def f(x: float | None, unit: str) -> str:
        return "—" if x is None else f"{x:.2f}{unit}"

    ep = doc["endpoint"]
    k = doc["repeat"]
    lines = [
        f"splitdesk sweep · {ep['url']} · {ep['api']} · {ep['model']} · N = 1…{doc['max_n']}"
        f" · {k} repeat{'s' if k != 1 else ''} (medians)",
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
    if doc["generated_questions"]:
        lines.append(
            f"{doc['generated_questions']} of the {doc['max_n']} questions were generated "
            "(the set was shorter)."
        )
    return "\n".join(lines)


async def _sweep(
    opts: BenchOptions,
    endpoint: EndpointConfig,
    sim_root: str | None,
    questions: list[str],
    max_n: int,
    err: TextIO,
    rows: list[SweepRow],
) -> None:
    config = RunConfig(
        endpoint,
        temperature=opts.temperature,
        seed=opts.seed,
        timeouts=opts.timeouts,
        marker=opts.template.marker,
        retry_429=opts.retry_429,
        warm_connections=not opts.client.cold,
        release=opts.client.release,
    )
    for n in range(1, max_n + 1):
        qs = questions[:n]
        row = SweepRow(n, [])
        rows.append(row)
        for k in range(opts.repeat):
            for mode in ("combined", "parallel"):
                plan = make_plan(mode, qs, opts.template, opts.max_tokens)
                predicted = None
                if sim_root is not None:  # asked before the run, never during it
                    try:
                        preds = await predict_plan(
                            sim_root, endpoint, plan, opts.temperature, opts.seed
                        )
                        predicted = predicted_makespan(preds)
                    except (httpx.HTTPError, ValueError):
                        predicted = None
                state = RunState()
                print(f"  N={n}: {mode} (repeat {k + 1}/{opts.repeat}) …", file=err, flush=True)
                slip0 = await schedule_slip_s(sim_root) if sim_root is not None else None
                await Runner(config, state.apply).run(qs, plan)
                slip1 = await schedule_slip_s(sim_root) if sim_root is not None else None
                slip = slip1 - slip0 if slip0 is not None and slip1 is not None else None
                row.runs.append(BenchRun(mode, k, state, predicted, endpoint_slip_s=slip))
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
    :class:`~splitdesk.core.bench.BenchError` for problems the user must fix first.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    questions, generated = sweep_questions(opts.questions, max_n)
    provider = get_provider(opts.api)
    sim = None
    if opts.endpoint == BUILTIN:
        try:
            if launch is None:
                raise RuntimeError("no launcher was given (splitdesk.sim.launcher.start_sim)")
            sim = launch(opts.profile, opts.sim_params)
        except (RuntimeError, KeyError, ValueError) as exc:
            raise BenchError(f"cannot start the built-in endpoint: {exc}") from None
        base_url = provider.base_url_for_root(sim.url)
    else:
        base_url = opts.endpoint
    try:
        key = resolve_key(opts)
        endpoint = EndpointConfig(base_url, opts.api, opts.model or "", key, verify=opts.verify)
        if sim is not None and not opts.model:
            endpoint = EndpointConfig(base_url, opts.api, BUILTIN_MODEL, None)
        rows: list[SweepRow] = []
        resolved = [endpoint]

        async def main() -> None:
            ep = endpoint
            if not ep.model:
                try:
                    model = await discover_model(ep)
                except EndpointUnreachableError as exc:
                    print(f"splitdesk sweep: cannot list the models: {exc}", file=err)
                    model = ""
                ep = EndpointConfig(ep.base_url, ep.api, model, ep.api_key, verify=ep.verify)
                resolved[0] = ep
            await _sweep(replace(opts), ep, sim.url if sim else None, questions, max_n, err, rows)

        interrupted = False
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            interrupted = True
        ep = resolved[0]
        info = {"url": redact(ep.base_url, key), "api": ep.api, "model": ep.model}
        if sim is not None:
            info["url"] = f"builtin:{opts.profile} ({base_url})"
            info["profile"] = opts.profile
        doc = sweep_document(info, questions, generated, max_n, opts.repeat, rows)
        doc["client"] = opts.client.to_json()
        table = format_sweep_table(doc)
        text = json.dumps(doc, indent=2, ensure_ascii=False)
        if opts.json_path == "-":
            print(table, file=err)
            print(text, file=out)
        else:
            print(table, file=out)
            if opts.json_path:
                try:
                    Path(opts.json_path).write_text(text + "\n", encoding="utf-8")
                except OSError as exc:
                    print(f"splitdesk sweep: cannot write {opts.json_path}: {exc}", file=err)
                    return 1
        if interrupted or any(r["stopped"] for r in doc["rows"]):
            print("splitdesk sweep: interrupted", file=err)
            return 130
        return 1 if any(r["failed"] for r in doc["rows"]) else 0
    finally:
        if sim is not None:
            sim.stop()


def sweep_document(
    endpoint: dict[str, str],
    questions: list[str],
    generated: int,
    max_n: int,
    repeat: int,
    rows: list[SweepRow],
) -> dict[str, Any]:
    """The sweep's JSON document (module docstring)."""
    return {
        "version": __version__,
        "endpoint": endpoint,
        "max_n": max_n,
        "repeat": repeat,
        "questions": questions,
        "generated_questions": generated,
        "rows": [r.to_json() for r in rows],
    }
