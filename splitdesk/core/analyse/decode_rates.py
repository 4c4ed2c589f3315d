"""Decode rates by concurrency: the **lone** and the **batched** decode rate, one meaning each.

Two per-stream rates (tokens per second) the diagnosis and the sweep compare, kept apart
from the per-request ``decode_tok_s`` of :mod:`splitdesk.core.analyse.metrics` (a
request's tokens after its first over its own first → last token time, whatever ran
beside it):

* **lone decode rate** — tokens per second of a stream while it was the only one of its
  phase generating. Read from the separate requests (parallel, sequential) when they give
  :data:`MIN_GAPS` gaps alone (the tail of a parallel phase, a sequential baseline);
  otherwise from the combined request alone, which reads a much longer context and is
  often slower, so the source is named (``lone_from``: ``"separate"`` or ``"combined"``)
  and no view calls the combined request's rate "a lone stream's".
* **batched decode rate** — tokens per second *per stream* while the largest number *k* ≥ 2
  of streams of a phase generated at once (every stream's gaps, the combined request's
  too when it shared the phase).

Each gap between two successive output events of a stream is filed under the number of
streams of its phase generating at the gap's midpoint (:func:`decode_rates_by_concurrency`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from splitdesk.core.analyse.metrics import tokens_per_event
from splitdesk.core.run.run_state import RequestTrace

#: fewest inter-event gaps at one concurrency level before its decode rate is trusted
MIN_GAPS = 20

LoneFrom = Literal["separate", "combined"]


def _ok(t: RequestTrace) -> bool:
    return t.outcome == "done" and t.first_text_t is not None and t.last_token_t is not None


def decode_rates_by_concurrency(
    phases: Iterable[Sequence[RequestTrace]], exclude_combined: bool = False
) -> dict[int, float]:
    """Per-stream decode rate (tokens/s) at each concurrency level *k*.

    Each gap between two successive output events of a stream is filed under the number of
    streams of its phase generating at the gap's midpoint; the rate at *k* is the tokens
    those gaps carried over their summed length (tokens per event = the stream's output
    tokens / its events). Only levels with at least :data:`MIN_GAPS` gaps are returned.
    ``phases``: groups of traces that share one clock and ran on the server together.
    ``exclude_combined``: count only the separate requests' gaps (the combined request
    still counts as a stream generating beside them).
    """
    time_at = np.zeros(1)
    tokens_at = np.zeros(1)
    gaps_at = np.zeros(1, dtype=np.int64)
    for phase in phases:
        done = [t for t in phase if _ok(t) and len(t.event_times) >= 2]
        spans = [(t.first_text_t or 0.0, t.last_token_t or 0.0) for t in done]
        starts = np.sort(np.array([s for s, _ in spans]))
        ends = np.sort(np.array([e for _, e in spans]))
        for t in done:
            if exclude_combined and t.group == "combined":
                continue
            times = np.asarray(t.event_times, dtype=float)
            per_event = tokens_per_event(t)
            a, b = times[:-1], times[1:]
            keep = b > a
            a, b = a[keep], b[keep]
            mid = (a + b) / 2
            # streams with start <= mid <= end, by binary search (numpy: 128k gaps in ms)
            k = np.searchsorted(starts, mid, "right") - np.searchsorted(ends, mid, "left")
            size = int(k.max(initial=0)) + 1
            if size > len(time_at):
                time_at = np.pad(time_at, (0, size - len(time_at)))
                tokens_at = np.pad(tokens_at, (0, size - len(tokens_at)))
                gaps_at = np.pad(gaps_at, (0, size - len(gaps_at)))
            time_at += np.bincount(k, weights=b - a, minlength=len(time_at))
            tokens_at += np.bincount(k, minlength=len(time_at)) * per_event
            gaps_at += np.bincount(k, minlength=len(time_at))
    return {
        k: float(tokens_at[k] / time_at[k])
        for k in range(len(time_at))
        if gaps_at[k] >= MIN_GAPS and time_at[k] > 0
    }


@dataclass(frozen=True)
class DecodeRates:
    """The lone and batched decode rates of a run (module docstring), tokens per second.

    ``lone_tok_s`` and where it was read (``lone_from``); ``batched_tok_s`` per stream
    while ``streams`` streams generated at once."""

    lone_tok_s: float
    lone_from: LoneFrom
    batched_tok_s: float
    streams: int

    @property
    def ratio(self) -> float:
        """Batched over lone decode rate (1.0: batching cost a stream nothing)."""
        return self.batched_tok_s / self.lone_tok_s

    @property
    def throughput_gain(self) -> float:
        """The k streams' tokens per second together over one lone stream's (×)."""
        return self.ratio * self.streams

    @property
    def lone_words(self) -> str:
        """What the lone rate is, for a sentence: "its lone rate" (a separate stream alone)
        or "the combined request's rate alone" (longer context)."""
        if self.lone_from == "separate":
            return "its lone rate"
        return "the combined request's rate alone"


def decode_rates(phases: Sequence[Sequence[RequestTrace]]) -> DecodeRates | None:
    """The :class:`DecodeRates` of a run's phases, or ``None`` when no concurrency level
    ≥ 2 or no lone level has :data:`MIN_GAPS` gaps."""
    everyone = decode_rates_by_concurrency(phases)
    busy = [k for k in everyone if k >= 2]
    if not busy:
        return None
    k = max(busy)
    separate = decode_rates_by_concurrency(phases, exclude_combined=True)
    if 1 in separate:
        return DecodeRates(separate[1], "separate", everyone[k], k)
    if 1 in everyone:
        return DecodeRates(everyone[1], "combined", everyone[k], k)
    return None
