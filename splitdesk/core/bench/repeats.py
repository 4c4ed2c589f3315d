"""Repeated comparisons: which side goes first, warm-up runs, pauses and per-run nonces,
and the figures of the repeats (per run, and median and range over runs).

``splitdesk bench --repeat K`` runs every mode K times. So that neither side always
profits from (or pays for) going first — a server warming up, a cache filled by the other
side — the order of combined and parallel alternates: even repeats combined first, odd
repeats parallel first (the sequential baseline stays last). ``--warmup W`` runs W
discarded rounds first; ``--pause S`` waits S seconds between runs (a server's queues and
clocks settle). Identical prompts repeated can hit the server's prefix cache, so by
default for repeats every run's prompts start with a nonce line (:func:`with_nonce`),
different in every run, and the output says so.

The window's Engineer ▸ Repeat the comparison… uses the same choices
(:class:`RepeatOptions`; each run's plan arranged by :meth:`RepeatRun.arrange`), the same
per-run figures (:class:`RepeatRow`, read from the figure set) for its strip plots, table
and text, and the same JSON ``repeats`` object (:func:`repeats_json`) in its export.
"""

from __future__ import annotations

import csv
import io
import secrets
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from splitdesk.builtin_endpoint import nonce_line, split_nonce_line
from splitdesk.core.analyse.metrics import GroupMetrics, Spread, speedup, spread, summarize
from splitdesk.core.files.report import SIDES, BenchRun, bench_document, split_run
from splitdesk.core.run.plans import RunPlan
from splitdesk.core.run.run_state import RunState


def mode_order(modes: list[str], repeat: int, alternate: bool = True) -> list[str]:
    """``modes`` in the order of repeat ``repeat`` (0-based): combined and parallel swap
    places on odd repeats when ``alternate``."""
    if not alternate or repeat % 2 == 0 or not {"combined", "parallel"} <= set(modes):
        return list(modes)
    swap = {"combined": "parallel", "parallel": "combined"}
    return [swap.get(m, m) for m in modes]


def new_nonce() -> str:
    """A fresh 8-hex-digit nonce."""
    return secrets.token_hex(4)


def with_nonce(plan: RunPlan, nonce: str) -> RunPlan:
    """``plan`` with every prompt opened by ``"[run <nonce>]\\n"`` — a different first
    line in every run, so no request of it can reuse a previous run's cached prefix (the
    line's shape: :func:`splitdesk.builtin_endpoint.nonce_line`).

    A plan with a shared context gets one line per side, ``"[run <nonce>/<group>]"``, first
    of all (before the context: in the system message when the context is there): the
    requests of one side share the line and the document, so the server's prefix cache can
    serve the document to all but the first of them, while one side never reads the
    document the other side's requests left in the cache (a combined request sent first
    would otherwise pre-fill the parallel side's prompts, and the comparison would credit
    parallel with the combined request's prefill)."""
    phases = tuple(
        replace(
            phase,
            requests=tuple(
                r.opened_with(nonce_line(f"{nonce}/{r.group}" if r.context_chars else nonce))
                for r in phase.requests
            ),
        )
        for phase in plan.phases
    )
    return replace(plan, phases=phases)


def nonce_of(state: RunState) -> str | None:
    """The nonce opening the prompts of ``state``'s requests (:func:`with_nonce`'s line,
    without a side's ``/<group>``), or ``None`` when its first request's prompt has
    none."""
    if not state.requests:
        return None
    first = state.requests[0]
    found = split_nonce_line(first.system if first.system is not None else first.prompt)[0]
    return None if found is None else found.split("/", 1)[0]


def order_plan(plan: RunPlan, repeat: int, alternate: bool = True) -> RunPlan:
    """``plan`` with its phases in the order of repeat ``repeat`` (:func:`mode_order` over
    the phase names): a one-after-another plan sends parallel first on odd repeats when
    ``alternate``; a one-phase plan (side by side: both sides released together) is
    returned as it is. Request indices follow the new phase order."""
    names = [p.name for p in plan.phases]
    order = mode_order(names, repeat, alternate)
    if order == names:
        return plan
    by_name = {p.name: p for p in plan.phases}
    return replace(plan, phases=tuple(by_name[n] for n in order))


@dataclass(frozen=True)
class RepeatOptions:
    """How a repeated comparison runs (the window's repeat dialog; ``splitdesk bench``'s
    ``--repeat``, ``--warmup``, ``--pause``, ``--no-nonce``).

    ``repeat``: counted runs (K ≥ 1); ``alternate``: combined and parallel swap which goes
    first on odd repeats (:func:`mode_order`); ``warmup``: discarded runs before them;
    ``pause_s``: seconds between runs (≥ 0); ``nonce``: every run's prompts open with their
    own nonce line (:func:`with_nonce`)."""

    repeat: int = 5
    alternate: bool = True
    warmup: int = 0
    pause_s: float = 0.0
    nonce: bool = True

    def schedule(self) -> list[RepeatRun]:
        """The runs in the order they are sent: the warm-up ones (negative ``repeat``),
        then repeats 0 … K−1, each with a fresh nonce when :attr:`nonce` is on."""
        return [
            RepeatRun(k, self.alternate, new_nonce() if self.nonce else None)
            for k in range(-self.warmup, self.repeat)
        ]

    def line(self, together: bool = False, per_side: bool = False) -> str:
        """:func:`repeats_line` for these options (``together``: the plan releases both
        sides at once, so there is no order to alternate; ``per_side``: the prompts carry
        a shared context, so the nonce is one per side)."""
        return repeats_line(
            self.repeat,
            self.warmup,
            self.pause_s,
            self.nonce,
            "together" if together else ("alternate" if self.alternate else "fixed"),
            per_side,
        )


@dataclass(frozen=True)
class RepeatRun:
    """One run of a repeated comparison: ``repeat`` (0-based; negative: a warm-up run,
    discarded), whether sides alternate, and the run's ``nonce`` (``None``: prompts as
    typed)."""

    repeat: int
    alternate: bool
    nonce: str | None

    @property
    def warmup(self) -> bool:
        """A discarded warm-up run."""
        return self.repeat < 0

    def arrange(self, plan: RunPlan) -> RunPlan:
        """``plan`` as this run sends it: phases in this repeat's order (:func:`order_plan`),
        every prompt opened by the nonce line (:func:`with_nonce`) when there is one."""
        plan = order_plan(plan, self.repeat, self.alternate)
        return with_nonce(plan, self.nonce) if self.nonce else plan


def repeats_line(
    repeat: int,
    warmup: int,
    pause_s: float,
    nonce: bool,
    order: str = "alternate",
    per_side: bool = False,
) -> str:
    """The table's line about how the repeats ran. ``order``: ``"alternate"`` (combined and
    parallel swap which goes first), ``"fixed"`` (the mode's order every time) or
    ``"together"`` (side by side: both sent at once, no order to alternate); ``per_side``:
    the prompts carry a shared context, so the nonce (:func:`with_nonce`) is one per side
    and is said even for one run."""
    parts = [f"{repeat} repeat{'s' if repeat != 1 else ''}"]
    if repeat > 1:
        parts.append(
            {
                "alternate": "combined and parallel alternate which goes first",
                "fixed": "the mode's order every run (no alternation)",
                "together": "combined and parallel sent together (side by side)",
            }[order]
        )
    if warmup:
        parts.append(f"{warmup} warm-up round{'s' if warmup != 1 else ''} discarded")
    if pause_s:
        parts.append(f"{pause_s:g} s pause between runs")
    if per_side:
        parts.append(
            "a nonce per side opens every prompt, before the shared context (no side reads "
            "the document from the other side's or an earlier run's cache)"
            if nonce
            else "no nonce: one side may read the shared context from the server's cache "
            "where the other side or an earlier run left it"
        )
    elif repeat > 1 or warmup:  # one run repeats nothing: the nonce would change nothing
        parts.append(
            "a per-run nonce opens every prompt (no prefix-cache reuse across runs)"
            if nonce
            else "no nonce: repeated prompts may hit the server's prefix cache"
        )
    return "repeats: " + "; ".join(parts)


@dataclass(frozen=True)
class RepeatRow:
    """The figures of one counted run (repeat ``repeat``, 0-based), read from its groups'
    :class:`~splitdesk.core.analyse.metrics.GroupMetrics`.

    ``order``: the sides in the order they were sent (a phase that sent several joined by
    ``+``: ``"combined+parallel"`` side by side); ``nonce``: the run's nonce (``None``:
    prompts as typed, or unknown); per side (``"combined"``, ``"parallel"``, …)
    ``makespan_s`` (the side's makespan, E2E of its phase, s) and ``ttft_s`` (the median of
    its requests' TTFT, s); ``speedup``: combined ÷ parallel makespan (×), ``None`` when
    either side is missing or had a failed request (as the bench summary)."""

    repeat: int
    order: tuple[str, ...]
    nonce: str | None
    makespan_s: dict[str, float]
    ttft_s: dict[str, float]
    speedup: float | None
    #: why the machine disturbed this run (:func:`~splitdesk.core.analyse.disturbance.
    #: disturbed_reason` of one of its sides), ``None`` when it did not: left out of the
    #: medians (:func:`repeat_figures`)
    disturbed: str | None = None

    def to_json(self) -> dict[str, Any]:
        """One entry of the JSON ``repeats.runs`` (seconds, ×; rounded like the bench's)."""
        return {
            "repeat": self.repeat,
            "order": list(self.order),
            "nonce": self.nonce,
            "makespan_s": {k: round(v, 6) for k, v in self.makespan_s.items()},
            "ttft_s": {k: round(v, 6) for k, v in self.ttft_s.items()},
            "speedup": None if self.speedup is None else round(self.speedup, 4),
            "disturbed": self.disturbed,
        }


def repeat_row(
    repeat: int,
    groups: Mapping[str, GroupMetrics],
    order: Sequence[str],
    nonce: str | None,
    disturbed: str | None = None,
) -> RepeatRow:
    """The :class:`RepeatRow` of one run from its sides' figures (``disturbed``: why the
    machine disturbed it, if it did)."""
    makespan = {g: m.makespan_s for g, m in groups.items() if m.makespan_s is not None}
    ttft = {g: statistics.median(m.ttft_s) for g, m in groups.items() if m.ttft_s}
    c, p = groups.get("combined"), groups.get("parallel")
    failed = (c is not None and c.failed > 0) or (p is not None and p.failed > 0)
    ratio = None if failed else speedup(c, p)
    return RepeatRow(repeat, tuple(order), nonce, makespan, ttft, ratio, disturbed)


def sent_order(state: RunState) -> tuple[str, ...]:
    """The sides of ``state`` in the order its phases sent them (sides of one phase
    joined by ``+``)."""
    phases: dict[int, list[str]] = {}
    for r in state.requests:
        names = phases.setdefault(r.phase, [])
        if r.group not in names:
            names.append(r.group)
    return tuple("+".join(phases[p]) for p in sorted(phases))


def _slip(slips: Sequence[float | None], k: int) -> float | None:
    return slips[k] if k < len(slips) else None


def _parts(state: RunState, k: int, slips: Sequence[float | None]) -> list[BenchRun]:
    """A window run split into its sides (:func:`split_run`), each carrying the run's
    endpoint slip: which side the lateness hit is not known, so each is judged by it."""
    parts = split_run(state, k)
    for part in parts:
        part.endpoint_slip_s = _slip(slips, k)
    return parts


def window_rows(
    states: Sequence[RunState],
    nonces: Sequence[str | None],
    slips: Sequence[float | None] = (),
) -> list[RepeatRow]:
    """The rows of a window's counted runs ``states`` (repeat k = position), each run's
    ``nonces[k]`` and the built-in endpoint's slip during it (``slips[k]``, seconds;
    ``None`` or missing: not measured), from which :attr:`RepeatRow.disturbed`."""
    rows = []
    for k, s in enumerate(states):
        disturbed = next((r.disturbed for r in _parts(s, k, slips) if r.disturbed), None)
        nonce = nonces[k] if k < len(nonces) else None
        rows.append(repeat_row(k, summarize(s).groups, sent_order(s), nonce, disturbed))
    return rows


def bench_rows(
    runs: Sequence[BenchRun], nonces: Mapping[int, str] | None = None
) -> list[RepeatRow]:
    """The rows of a bench's runs (one :class:`~splitdesk.core.files.report.BenchRun` per mode
    and repeat, in the order they ran); ``nonces``: repeat → its nonce; by default the
    nonces read from the runs' prompts (:func:`nonce_of`; bench draws one per mode run,
    joined by spaces in the order they ran)."""
    rows = []
    for k in sorted({r.repeat for r in runs}):
        mine = [r for r in runs if r.repeat == k]
        groups = {r.mode: r.metrics for r in mine if r.mode in SIDES}
        nonce = (nonces or {}).get(k) or " ".join(n for r in mine if (n := nonce_of(r.state)))
        disturbed = next((r.disturbed for r in mine if r.disturbed), None)
        rows.append(repeat_row(k, groups, [r.mode for r in mine], nonce or None, disturbed))
    return rows


@dataclass(frozen=True)
class RepeatFigures:
    """Median and spread over repeated runs (:func:`~splitdesk.core.analyse.metrics.spread`):
    per side (``"combined"``, ``"parallel"``, …) of its makespans and of its runs' TTFT
    (each run's median TTFT, seconds), and of each run's speed-up (×): the medians and
    ranges of the points in :class:`RepeatRow`, over the runs not disturbed. ``runs``:
    the counted runs shown (disturbed ones included)."""

    runs: int
    makespan: dict[str, Spread]
    ttft: dict[str, Spread]
    speedup: Spread | None
    #: the runs (0-based repeats) the machine disturbed, left out of these medians
    left_out: tuple[int, ...] = ()
    #: every run was disturbed: the medians are over them all
    all_disturbed: bool = False

    def left_out_line(self, rows: Sequence[RepeatRow]) -> str | None:
        """ "Left out of the medians: run 2 (the built-in endpoint ran …)", or the note
        that every run was disturbed; ``None`` when none was."""
        bad = [r for r in rows if r.disturbed]
        if not bad:
            return None
        reasons = "; ".join(f"run {r.repeat + 1} ({r.disturbed})" for r in bad)
        if self.all_disturbed:
            return f"Every run was disturbed, so the medians are over them all: {reasons}"
        return f"Left out of the medians: {reasons}"


def repeat_figures(rows: Sequence[RepeatRow]) -> RepeatFigures:
    """The :class:`RepeatFigures` of counted runs ``rows`` (one per repeat): a run the
    machine disturbed (:attr:`RepeatRow.disturbed`) is left out of the medians and ranges,
    unless every run was."""
    runs = len(rows)
    clean = [r for r in rows if not r.disturbed]
    left_out = tuple(r.repeat for r in rows if r.disturbed) if clean else ()
    every = bool(rows) and not clean
    if clean:
        rows = clean
    sides = [g for g in SIDES if any(g in r.makespan_s or g in r.ttft_s for r in rows)]
    makespan: dict[str, Spread] = {}
    ttft: dict[str, Spread] = {}
    for g in sides:
        m = spread([r.makespan_s.get(g) for r in rows])
        t = spread([r.ttft_s.get(g) for r in rows])
        if m is not None:
            makespan[g] = m
        if t is not None:
            ttft[g] = t
    return RepeatFigures(runs, makespan, ttft, spread([r.speedup for r in rows]), left_out, every)


def row_columns(rows: Sequence[RepeatRow]) -> list[str]:
    """The per-run table's columns (CSV header and the window's table): ``run`` (1-based),
    ``order``, then ``<side>_makespan_s`` and ``<side>_ttft_s`` per side present,
    ``speedup``, ``nonce``."""
    sides = [g for g in SIDES if any(g in r.makespan_s or g in r.ttft_s for r in rows)]
    return [
        "run",
        "order",
        *[f"{g}_makespan_s" for g in sides],
        *[f"{g}_ttft_s" for g in sides],
        "speedup",
        "nonce",
        "disturbed",
    ]


def row_values(row: RepeatRow, columns: Sequence[str]) -> list[Any]:
    """``row``'s value in each of ``columns`` (:func:`row_columns`); ``None``: unknown."""
    out: list[Any] = []
    for c in columns:
        if c == "run":
            out.append(row.repeat + 1)
        elif c == "order":
            out.append(" then ".join(row.order))
        elif c == "speedup":
            out.append(row.speedup)
        elif c == "nonce":
            out.append(row.nonce)
        elif c == "disturbed":
            out.append(row.disturbed)
        elif c.endswith("_makespan_s"):
            out.append(row.makespan_s.get(c.removesuffix("_makespan_s")))
        else:
            out.append(row.ttft_s.get(c.removesuffix("_ttft_s")))
    return out


def repeat_csv(rows: Sequence[RepeatRow]) -> str:
    """The per-run table as CSV: header :func:`row_columns`, one line per counted run
    (seconds and × with 6 decimals; empty = unknown)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = row_columns(rows)
    writer.writerow(columns)
    for row in rows:
        writer.writerow(
            [
                "" if v is None else f"{v:.6f}" if isinstance(v, float) else v
                for v in row_values(row, columns)
            ]
        )
    return out.getvalue()


def repeats_json(
    options: RepeatOptions, order: list[list[str]], rows: Sequence[RepeatRow]
) -> dict[str, Any]:
    """The JSON ``repeats`` object (``splitdesk bench --json`` and the window's export):
    ``repeat``, ``warmup``, ``pause_s``, ``nonce``, ``order`` (each repeat's sides in the
    order sent), ``alternate`` and ``runs`` (:meth:`RepeatRow.to_json`)."""
    return {
        "repeat": options.repeat,
        "warmup": options.warmup,
        "pause_s": options.pause_s,
        "nonce": options.nonce,
        "order": order,
        "alternate": options.alternate,
        "runs": [r.to_json() for r in rows],
    }


def window_document(
    states: Sequence[RunState],
    options: RepeatOptions,
    nonces: Sequence[str | None],
    slips: Sequence[float | None] = (),
) -> dict[str, Any]:
    """The window's repeat results as the ``splitdesk bench --json`` document
    (:func:`~splitdesk.core.files.report.bench_document`): each counted run split into one entry
    per side (its ``repeat`` = the run's), the summary's medians and ranges over them, and
    ``repeats`` (:func:`repeats_json`); ``slips``: the built-in endpoint's slip during each
    run (a disturbed run is flagged and left out of the medians, as in the bench). Raises
    ``ValueError`` when ``states`` is empty."""
    if not states or states[0].info is None:
        raise ValueError("no finished run to export")
    info = states[0].info
    runs = [part for k, s in enumerate(states) for part in _parts(s, k, slips)]
    doc = bench_document(dict(info.endpoint), list(info.questions), runs)
    rows = window_rows(states, nonces, slips)
    doc["repeats"] = repeats_json(options, [list(r.order) for r in rows], rows)
    return doc


def eta_s(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds left after ``done`` of ``total`` runs took ``elapsed_s`` (the mean so far
    times the runs left); ``None`` before the first run ends."""
    if done <= 0:
        return None
    return elapsed_s / done * (total - done)
