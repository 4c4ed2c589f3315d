"""Cumulative output tokens over time: one combined stream against the sum of the parallel
streams (the live chart of a talk, issue #11). Two slopes make the argument: the parallel
sum climbs N times faster on a batching server.

Definition (the one every view reads): each request's output tokens arrive with its
text-carrying events (``RequestTrace.event_times``). When the server reported ``usage``,
each event counts ``usage_output_tokens / events`` tokens, so the curve ends at the
reported total (as :func:`splitdesk.core.analyse.metrics.request_figures` counts them); while a
stream runs, or without usage, each event counts one token (the same estimate the figure
set uses). Times are seconds from the group's origin: its first request's send, as
makespans are measured (:func:`splitdesk.core.analyse.metrics.group_metrics`), so one after
another each way starts at its own t = 0.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from splitdesk.core.analyse.metrics import tokens_per_event
from splitdesk.core.run.run_state import RequestTrace


def token_curve(traces: Sequence[RequestTrace]) -> list[tuple[float, float]]:
    """The summed cumulative output tokens of ``traces`` as steps: ``(t, tokens)`` pairs,
    ``t`` in seconds from the group's origin (the earliest send), ``tokens`` received by
    ``t``; starts at ``(0, 0)``; empty when nothing was sent."""
    sent = [t for t in traces if t.t_send is not None]
    if not sent:
        return []
    origin = min(t.t_send for t in sent if t.t_send is not None)
    streams = [[(e - origin, tokens_per_event(t)) for e in t.event_times] for t in sent]
    out: list[tuple[float, float]] = [(0.0, 0.0)]
    total = 0.0
    for t, weight in heapq.merge(*streams):
        total += weight
        out.append((t, total))
    return out
