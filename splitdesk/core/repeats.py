"""Repeated comparisons: which side goes first, warm-up runs, pauses and per-run nonces.

``splitdesk bench --repeat K`` runs every mode K times. So that neither side always
profits from (or pays for) going first — a server warming up, a cache filled by the other
side — the order of combined and parallel alternates: even repeats combined first, odd
repeats parallel first (the sequential baseline stays last). ``--warmup W`` runs W
discarded rounds first; ``--pause S`` waits S seconds between runs (a server's queues and
clocks settle). Identical prompts repeated can hit the server's prefix cache, so by
default for repeats every run's prompts start with a nonce line (:func:`with_nonce`),
different in every run, and the output says so.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace

from splitdesk.core.metrics import Spread, spread, summarize
from splitdesk.core.plans import RunPlan
from splitdesk.core.run_state import RunState


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
    """``plan`` with every prompt prefixed by ``"[run <nonce>]\\n"`` — a different first
    line in every run, so no request of it can reuse a previous run's cached prefix."""
    phases = tuple(
        replace(
            phase,
            requests=tuple(replace(r, prompt=f"[run {nonce}]\n{r.prompt}") for r in phase.requests),
        )
        for phase in plan.phases
    )
    return replace(plan, phases=phases)


def repeats_line(repeat: int, warmup: int, pause_s: float, nonce: bool) -> str:
    """The table's line about how the repeats ran."""
    parts = [f"{repeat} repeat{'s' if repeat != 1 else ''}"]
    if repeat > 1:
        parts.append("combined and parallel alternate which goes first")
    if warmup:
        parts.append(f"{warmup} warm-up round{'s' if warmup != 1 else ''} discarded")
    if pause_s:
        parts.append(f"{pause_s:g} s pause between runs")
    parts.append(
        "a per-run nonce opens every prompt (no prefix-cache reuse across runs)"
        if nonce
        else "no nonce: repeated prompts may hit the server's prefix cache"
    )
    return "repeats: " + "; ".join(parts)


@dataclass(frozen=True)
class RepeatFigures:
    """Median and spread over repeated runs (:func:`~splitdesk.core.metrics.spread`):
    per side (``"combined"``, ``"parallel"``, …) its makespans and every request's TTFT
    pooled (seconds), and the speed-up of each run (:class:`~splitdesk.core.metrics.
    RunSummary.speedup`)."""

    runs: int
    makespan: dict[str, Spread]
    ttft: dict[str, Spread]
    speedup: Spread | None


def repeat_figures(states: Sequence[RunState]) -> RepeatFigures:
    """The :class:`RepeatFigures` of finished runs ``states`` (one per repeat)."""
    summaries = [summarize(s) for s in states]
    sides = sorted({g for s in summaries for g in s.groups})
    makespan: dict[str, Spread] = {}
    ttft: dict[str, Spread] = {}
    for g in sides:
        m = spread([s.groups[g].makespan_s for s in summaries if g in s.groups])
        t = spread([x for s in summaries if g in s.groups for x in s.groups[g].ttft_s])
        if m is not None:
            makespan[g] = m
        if t is not None:
            ttft[g] = t
    return RepeatFigures(len(states), makespan, ttft, spread([s.speedup for s in summaries]))


def eta_s(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds left after ``done`` of ``total`` runs took ``elapsed_s`` (the mean so far
    times the runs left); ``None`` before the first run ends."""
    if done <= 0:
        return None
    return elapsed_s / done * (total - done)
