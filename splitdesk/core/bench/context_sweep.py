"""``splitdesk sweep --context-tokens 0,1000,4000,16000``: the speed-up against the length of
a shared context, at a fixed number of questions.

For each context length L the sweep sends the same N questions combined, then in parallel
(each on an idle endpoint, ``repeat`` times, a fresh nonce per run: each side prefills its
own document), with a context of about L tokens first in every prompt
(:func:`context_of_length`: the question set's context, the ``--context`` file or the
shipped document, cut — or repeated — to L × :data:`CHARS_PER_TOKEN` characters). Every
figure of a row is the bench's own (:func:`splitdesk.core.files.report.summary_json`), and
each side's prompt and cached tokens are the servers' usage
(:class:`~splitdesk.core.analyse.metrics.PromptTokens`). The row where the speed-up first
drops below 1 is where combining starts to win (:func:`crossover`).

JSON document (keys may be added, never removed)::

    {"version": str, "endpoint": {...}, "n": int, "repeat": int, "questions": [str, ...],
     "context_tokens": [int, ...], "client": {...},
     "rows": [{"context_tokens", "context_chars", "speedup", "speedup_range",
               "predicted_speedup", "combined_wall_s", "parallel_wall_s",
               "combined_prompt": {…} | null, "parallel_prompt": {…} | null,
               "failed", "stopped", "endpoint_slip_s"}, ...],
     "crossover": {"from_context_tokens", "text"} | null}
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any, Literal, TextIO

import httpx

from splitdesk import __version__
from splitdesk.builtin_endpoint import Launcher
from splitdesk.core.analyse.predict import predict_plan, predicted_makespan
from splitdesk.core.bench.compare import open_target, run_on_schedule, with_model, write_document
from splitdesk.core.bench.options import BenchOptions
from splitdesk.core.bench.repeats import new_nonce, with_nonce
from splitdesk.core.files.report import BenchRun, prompt_json, summary_json
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CHARS_PER_TOKEN
from splitdesk.providers.base import EndpointConfig

#: the document shipped for demos (``resources/questions``), used when no context is given
SHIPPED_DOCUMENT = "harbour-library-agreement.txt"
#: the most context tokens a sweep asks for
MAX_CONTEXT_TOKENS = 250_000


def shipped_document() -> str:
    """The text of the document shipped with splitdesk (written for the project)."""
    return files("splitdesk.resources").joinpath("questions", SHIPPED_DOCUMENT).read_text("utf-8")


def context_of_length(base: str, tokens: int) -> str:
    """About ``tokens`` tokens of ``base`` (``tokens`` × :data:`CHARS_PER_TOKEN` characters,
    cut at a word boundary; ``base`` repeated, a blank line between copies, when it is
    shorter). ``""`` for 0. Raises ``ValueError`` for a negative length or an empty
    ``base``."""
    if tokens < 0:
        raise ValueError("a context length must be >= 0 tokens")
    if tokens == 0:
        return ""
    text = base.strip()
    if not text:
        raise ValueError("the context to cut is empty")
    want = tokens * CHARS_PER_TOKEN
    while len(text) < want:
        text = f"{text}\n\n{base.strip()}"
    cut = text[:want]
    space = cut.rfind(" ", want // 2)
    return cut[:space] if space > 0 and want - space < 40 else cut


def parse_lengths(text: str) -> list[int]:
    """``"0,1000,4000,16000"`` as token counts, ascending and distinct. Raises
    ``ValueError`` with a one-line reason."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part:
            continue
        if not part.isdigit():
            raise ValueError(f"{part!r} is not a whole number of tokens")
        value = int(part)
        if value > MAX_CONTEXT_TOKENS:
            raise ValueError(f"{value} tokens is more than {MAX_CONTEXT_TOKENS:,}")
        out.add(value)
    if not out:
        raise ValueError("give context lengths in tokens, e.g. 0,1000,4000,16000")
    return sorted(out)


Side = Literal["combined", "parallel"]


@dataclass
class ContextRow:
    """One context length of the sweep: its runs (combined and parallel per repeat)."""

    context_tokens: int
    context_chars: int
    runs: list[BenchRun] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The row of the JSON document (module docstring)."""
        s = summary_json(self.runs)
        first: dict[str, BenchRun] = {}
        for r in self.runs:
            first.setdefault(r.mode, r)
        slips = [r.endpoint_slip_s for r in self.runs if r.endpoint_slip_s is not None]
        return {
            "context_tokens": self.context_tokens,
            "context_chars": self.context_chars,
            "speedup": s.get("speedup"),
            "speedup_range": s.get("speedup_range"),
            "predicted_speedup": s.get("predicted_speedup"),
            "combined_wall_s": s.get("combined_wall_s"),
            "parallel_wall_s": s.get("parallel_wall_s"),
            "combined_prompt": (
                prompt_json(first["combined"].metrics.prompt) if "combined" in first else None
            ),
            "parallel_prompt": (
                prompt_json(first["parallel"].metrics.prompt) if "parallel" in first else None
            ),
            "failed": any(t.outcome != "done" for r in self.runs for t in r.state.requests),
            "stopped": any(bool(r.state.ended and r.state.ended.stopped) for r in self.runs),
            "endpoint_slip_s": max(slips) if slips else None,
        }


def crossover(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Where combining starts to win: the first row (by context length) whose speed-up is
    below 1, after one at 1 or more; ``{"from_context_tokens", "text"}``, or a sentence
    that one side won everywhere (``from_context_tokens`` ``None``); ``None`` without any
    measured speed-up."""
    measured = [r for r in rows if r.get("speedup") is not None]
    if not measured:
        return None
    for before, row in itertools.pairwise(measured):
        if before["speedup"] >= 1 > row["speedup"]:
            return {
                "from_context_tokens": row["context_tokens"],
                "text": (
                    f"combining starts to win between {before['context_tokens']:,} and "
                    f"{row['context_tokens']:,} context tokens (speed-up "
                    f"{before['speedup']:.2f}× → {row['speedup']:.2f}×)"
                ),
            }
    if all(r["speedup"] >= 1 for r in measured):
        text = (
            f"parallel wins at every context length measured (lowest speed-up "
            f"{min(r['speedup'] for r in measured):.2f}×)"
        )
    elif all(r["speedup"] < 1 for r in measured):
        text = "combining wins at every context length measured"
    else:
        text = "no single crossover: the winner changes more than once"
    return {"from_context_tokens": None, "text": text}


def format_context_table(doc: dict[str, Any]) -> str:
    """The human table of a context sweep document."""

    def f(x: float | None, unit: str) -> str:
        return "—" if x is None else f"{x:.2f}{unit}"

    def tokens(p: dict[str, Any] | None) -> str:
        if p is None:
            return "—"
        cached = p.get("cached_prompt_tokens")
        return f"{p['prompt_tokens']:,}" + (f" ({cached:,} cached)" if cached else "")

    ep = doc["endpoint"]
    k = doc["repeat"]
    lines = [
        f"splitdesk sweep · {ep['url']} · {ep['api']} · {ep['model']} · N = {doc['n']} · "
        f"context {doc['context_tokens'][0]:,}…{doc['context_tokens'][-1]:,} tokens · "
        f"{k} repeat{'s (medians)' if k != 1 else ''}",
        f"{'context':>8} {'combined':>10} {'parallel':>10} {'speed-up':>9} {'predicted':>10}  "
        "prompt tokens combined / parallel",
    ]
    for row in doc["rows"]:
        note = "  (requests failed)" if row["failed"] else ""
        lines.append(
            f"{row['context_tokens']:>8,} {f(row['combined_wall_s'], ' s'):>10} "
            f"{f(row['parallel_wall_s'], ' s'):>10} {f(row['speedup'], '×'):>9} "
            f"{f(row['predicted_speedup'], '×'):>10}  "
            f"{tokens(row['combined_prompt'])} / {tokens(row['parallel_prompt'])}{note}"
        )
    if doc.get("crossover"):
        lines.append(doc["crossover"]["text"][:1].upper() + doc["crossover"]["text"][1:] + ".")
    lines.append(
        f"Context lengths are estimates ({CHARS_PER_TOKEN} characters a token); the prompt "
        "tokens are the server's own count."
    )
    return "\n".join(lines)


async def _sweep(
    opts: BenchOptions,
    endpoint: EndpointConfig,
    sim_root: str | None,
    contexts: list[tuple[int, str]],
    err: TextIO,
    rows: list[ContextRow],
) -> None:
    config = opts.run_config(endpoint)
    sides: tuple[Side, ...] = ("combined", "parallel")
    for tokens, context in contexts:
        row = ContextRow(tokens, len(context))
        rows.append(row)
        for k in range(opts.repeat):
            for mode in sides:
                plan = make_plan(
                    mode, opts.questions, opts.template, opts.max_tokens, context=context
                )
                if opts.nonce is not False:  # each run, each side, prefills its own document
                    plan = with_nonce(plan, new_nonce())
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
                print(
                    f"  context {tokens:,} tokens: {mode} (repeat {k + 1}/{opts.repeat}) …",
                    file=err,
                    flush=True,
                )
                late = await run_on_schedule(config, state, opts.questions, plan, sim_root)
                row.runs.append(
                    BenchRun(
                        mode,
                        k,
                        state,
                        predicted,
                        endpoint_slip_s=late.endpoint_slip_s,
                        client_lag_s=late.client_lag_s,
                    )
                )
                if state.ended is not None and state.ended.stopped:
                    return


def run_context_sweep(
    opts: BenchOptions,
    lengths: list[int],
    out: TextIO | None = None,
    err: TextIO | None = None,
    launch: Launcher | None = None,
) -> int:
    """Run a context-length sweep of ``opts.questions`` (all of them: N is fixed) for each
    length of ``lengths`` (tokens); the context is ``opts.context`` or the shipped document
    (:func:`context_of_length`). Returns the exit status (0 all succeeded, 1 some failed,
    130 interrupted); ``json_path`` ``"-"`` writes the JSON to ``out`` and the table to
    ``err``. Raises :class:`~splitdesk.core.bench.compare.BenchError` for problems the user
    must fix first."""
    out = out or sys.stdout
    err = err or sys.stderr
    base = opts.context.strip() or shipped_document()
    contexts = [(n, context_of_length(base, n)) for n in lengths]
    with open_target(opts, launch) as target:
        rows: list[ContextRow] = []
        resolved = [target.endpoint]
        sim_root = target.sim.url if target.sim is not None else None

        async def main() -> None:
            ep = resolved[0] = await with_model(target.endpoint, err, "sweep")
            await _sweep(opts, ep, sim_root, contexts, err, rows)

        interrupted = False
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            interrupted = True
        info = target.info(resolved[0], opts.profile)
        row_docs = [r.to_json() for r in rows]
        doc: dict[str, Any] = {
            "version": __version__,
            "endpoint": info,
            "n": len(opts.questions),
            "repeat": opts.repeat,
            "questions": opts.questions,
            "context_tokens": lengths,
            "client": opts.client.to_json(),
            "rows": row_docs,
            "crossover": crossover(row_docs),
        }
        text = json.dumps(doc, indent=2, ensure_ascii=False)
        if not write_document(format_context_table(doc), text, opts.json_path, out, err, "sweep"):
            return 1
        if interrupted or any(r["stopped"] for r in row_docs):
            print("splitdesk sweep: interrupted", file=err)
            return 130
        return 1 if any(r["failed"] for r in row_docs) else 0
