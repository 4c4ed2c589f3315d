"""Metrics of a run, one definition everywhere (DESIGN.md "Metrics"); seconds throughout.

Per request, every time is measured from the request's own ``t_send`` (monotonic clock,
taken just before the request is handed to the HTTP client):

* **TTFB** — response headers received.
* **TTFT** — first event carrying *visible* output: non-empty answer or reasoning text.
  A role-only or empty first chunk does not count; tool-call deltas do not count either
  (their first time is kept apart); a reply with no visible text has no TTFT (``None``).
  This is the first-token definition of vLLM's benchmark (``benchmark_serving.py``) and
  NVIDIA AIPerf/GenAI-Perf ("time to first token: time between sending the request and
  receiving the first response with non-empty content").
* **TTFT (answer)** — first non-empty *answer* text, reasoning excluded.
* **E2E latency** — the last token-carrying event (AIPerf "request latency" ends at the
  final response; we end at the last token so a slow ``[DONE]`` does not count). The
  stream's end (terminal event or close) is reported apart as ``stream_end``.
* **ITL** — gaps between successive output-carrying events (vLLM ``itl``: "inter-token
  latency"; one event may carry several tokens).
* **TPOT** — ``(E2E − TTFT) / (output_tokens − 1)`` (vLLM ``tpot``: time per output token
  excluding the first). GenAI-Perf and AIPerf call this "inter token latency": compare
  measurement points, not names.
* **output_tokens** — the server's usage figure when it reports one (last cumulative value,
  ``tokens_source = "usage"``), else the number of output-carrying events
  (``tokens_source = "events"``, an estimate).

Per group of requests (combined / parallel / sequential):

* **makespan** — last token of any request minus the earliest ``t_send`` (AIPerf
  "benchmark duration").
* **speed-up** — makespan(combined) / makespan(parallel).
* **all answers started** — when the last of the N answers had started: in a combined
  reply, the latest section start; for separate requests, the latest TTFT.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from splitdesk.core.events import Group
from splitdesk.core.run_state import RequestTrace, RunState

TokensSource = Literal["usage", "events"]


@dataclass(frozen=True)
class SectionTiming:
    """Answer ``question`` inside a combined reply: seconds from the request's ``t_send``."""

    question: int
    start_s: float
    end_s: float | None


@dataclass(frozen=True)
class RequestMetrics:
    """Metrics of one request (see module docstring); ``None`` when not observed."""

    ttfb_s: float | None
    ttft_s: float | None
    ttft_answer_s: float | None
    first_tool_call_s: float | None
    e2e_s: float | None
    stream_end_s: float | None
    connect_s: float | None
    itl_s: tuple[float, ...]
    tpot_s: float | None
    output_tokens: int
    tokens_source: TokensSource
    decode_tok_s: float | None
    sections: tuple[SectionTiming, ...] = ()


def _since(t: float | None, origin: float) -> float | None:
    return None if t is None else t - origin


def request_metrics(trace: RequestTrace) -> RequestMetrics:
    """Metrics of ``trace`` (module docstring). Raises ``ValueError`` if it was never sent."""
    if trace.t_send is None:
        raise ValueError(f"request {trace.req} was never sent")
    t0 = trace.t_send
    times = trace.event_times
    itl = tuple(b - a for a, b in itertools.pairwise(times))
    source: TokensSource
    if trace.usage_output_tokens is not None:
        tokens, source = trace.usage_output_tokens, "usage"
    else:
        tokens, source = len(times), "events"
    ttft = _since(trace.first_text_t, t0)
    e2e = _since(trace.last_token_t, t0)
    tpot = None
    decode_rate = None
    if ttft is not None and e2e is not None and tokens > 1 and e2e > ttft:
        tpot = (e2e - ttft) / (tokens - 1)
        decode_rate = (tokens - 1) / (e2e - ttft)
    sections = tuple(
        SectionTiming(s.question, s.start_t - t0, _since(s.end_t, t0))
        for s in sorted(trace.sections.values(), key=lambda s: s.question)
    )
    return RequestMetrics(
        ttfb_s=_since(trace.t_headers, t0),
        ttft_s=ttft,
        ttft_answer_s=_since(trace.first_answer_t, t0),
        first_tool_call_s=_since(trace.first_tool_t, t0),
        e2e_s=e2e,
        stream_end_s=_since(trace.t_end, t0),
        connect_s=trace.connect_s,
        itl_s=itl,
        tpot_s=tpot,
        output_tokens=tokens,
        tokens_source=source,
        decode_tok_s=decode_rate,
        sections=sections,
    )


@dataclass(frozen=True)
class GroupMetrics:
    """Metrics of the requests of one group (one phase of a plan).

    ``origin``: earliest ``t_send`` (seconds from the run origin); ``makespan_s``: last token
    minus origin (``None`` when no token arrived); ``answer_start_s[q]``: when
    answer ``q`` started, seconds from ``origin``; ``all_started_s``: the latest of those
    when every answer started; ``output_tokens``: sum over requests, ``tokens_estimated``
    when any count is an event count.
    """

    group: str
    requests: int
    failed: int
    stopped: int
    origin: float | None
    makespan_s: float | None
    ttft_s: tuple[float, ...]
    answer_start_s: dict[int, float] = field(default_factory=dict)
    all_started_s: float | None = None
    output_tokens: int = 0
    tokens_estimated: bool = False
    throughput_tok_s: float | None = None


def group_metrics(traces: Sequence[RequestTrace], group: str, n_questions: int) -> GroupMetrics:
    """Metrics of ``traces`` (the requests of one group; see :class:`GroupMetrics`)."""
    sent = [t for t in traces if t.t_send is not None]
    if not sent:
        return GroupMetrics(group, len(traces), 0, 0, None, None, ())
    origin = min(t.t_send for t in sent if t.t_send is not None)
    lasts = [t.last_token_t for t in sent if t.last_token_t is not None]
    makespan = max(lasts) - origin if lasts else None
    per = [request_metrics(t) for t in sent]
    starts: dict[int, float] = {}
    for trace in sent:
        if len(trace.questions) == 1 and trace.first_answer_t is not None:
            starts[trace.questions[0]] = trace.first_answer_t - origin
        for span in trace.sections.values():
            starts.setdefault(span.question, span.start_t - origin)
    all_started = max(starts.values()) if len(starts) == n_questions and starts else None
    tokens = sum(m.output_tokens for m in per)
    return GroupMetrics(
        group=group,
        requests=len(traces),
        failed=sum(1 for t in traces if t.outcome == "failed"),
        stopped=sum(1 for t in traces if t.outcome == "stopped"),
        origin=origin,
        makespan_s=makespan,
        ttft_s=tuple(m.ttft_s for m in per if m.ttft_s is not None),
        answer_start_s=starts,
        all_started_s=all_started,
        output_tokens=tokens,
        tokens_estimated=any(m.tokens_source == "events" for m in per),
        throughput_tok_s=tokens / makespan if makespan else None,
    )


def speedup(combined: GroupMetrics | None, parallel: GroupMetrics | None) -> float | None:
    """makespan(combined) / makespan(parallel), or ``None`` when either is unknown."""
    if combined is None or parallel is None:
        return None
    if not combined.makespan_s or not parallel.makespan_s:
        return None
    return combined.makespan_s / parallel.makespan_s


@dataclass(frozen=True)
class RunSummary:
    """The run's headline figures: one :class:`GroupMetrics` per group present."""

    groups: dict[str, GroupMetrics]
    speedup: float | None


def summarize(state: RunState) -> RunSummary:
    """Group metrics and speed-up of a run (groups present in ``state`` only)."""
    n = len(state.info.questions) if state.info else 0
    groups: dict[str, GroupMetrics] = {}
    names: tuple[Group, ...] = ("combined", "parallel", "sequential")
    for name in names:
        traces = state.group(name)
        if traces:
            groups[name] = group_metrics(traces, name, n)
    return RunSummary(groups, speedup(groups.get("combined"), groups.get("parallel")))


@dataclass(frozen=True)
class Spread:
    """Median and range of one metric over repeats."""

    median: float
    min: float
    max: float
    n: int


def spread(values: Sequence[float | None]) -> Spread | None:
    """:class:`Spread` of the known ``values``; ``None`` when none is known."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    return Spread(statistics.median(known), min(known), max(known), len(known))
