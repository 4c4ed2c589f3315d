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
from dataclasses import replace

from splitdesk.core.plans import RunPlan


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
