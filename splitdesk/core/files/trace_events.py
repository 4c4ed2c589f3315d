"""A recording as a Chrome / Perfetto trace (the Trace Event Format, JSON).

Wire format: Google's "Trace Event Format" document
(https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU), which
ui.perfetto.dev and chrome://tracing open as they are (Perfetto: "Other formats",
https://perfetto.dev/docs/getting-started/other-formats). A file is one JSON object
``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``; every event has
the format's required keys ``name``, ``ph`` (phase), ``ts`` (microseconds), ``pid`` and
``tid``. This module uses four phases:

* ``M`` metadata: ``process_name`` (one process per recorded run, ``pid`` = run index + 1)
  and ``thread_name`` / ``thread_sort_index`` (one thread — one *track* — per request,
  ``tid`` = request index + 1, named like the window's lanes: "combined", "Q3" …);
* ``X`` complete events (``ts`` + ``dur``) on a request's track, nested: **wait** (send →
  first output, or → end when nothing came) with the server's **prefill** nested in it
  where the server reports one, **streaming** (first output → last token),
  one **answer k** span per answer (a combined reply's answer sections; a one-question
  request's streaming), and **back-off** spans (a 429's wait before the next attempt);
* ``i`` instant events: a request's end when it failed or was stopped (``args`` name why);
* ``C`` counter: a ``tokens/s`` track per run (:func:`token_rate`), one series per group;
  and, when the recording holds the server's own ``/metrics`` samples (``RunRecord.server``),
  a ``server batch`` track (series ``running`` and ``waiting``: requests) and a
  ``server KV cache`` track (``kv %`` for a 0–1 fraction, as percent; ``kv tokens`` for a
  token count) at each sample's time — nothing for a server that publishes no KV figure
  (:func:`server_counter_events`).

Times: seconds from the run's origin in the figure set (:mod:`splitdesk.core.analyse.metrics`),
written as microseconds (the format's unit). Nothing here measures anything new: spans
are the figure set's times; the rate is :func:`token_rate`, defined here once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from splitdesk.core.analyse.metrics import RequestFigures, request_figures, tokens_per_event
from splitdesk.core.files.recording import Recording, rebuild_state
from splitdesk.core.measure.server_metrics import LoadSeries, series_of
from splitdesk.core.run.run_state import RequestTrace, RunState

#: Width of one bin of the tokens/s counter (seconds).
RATE_BIN_S = 0.25
#: Keys every event carries (the format's required ones; ``dur`` as well on ``X``).
REQUIRED_KEYS = ("name", "ph", "ts", "pid", "tid")


def _us(t: float) -> float:
    """Seconds → the format's microseconds (three decimals: nanoseconds)."""
    return round(t * 1e6, 3)


def lane_name(trace: RequestTrace) -> str:
    """The track's name: the group, then the 1-based question numbers it asks
    (``combined · Q1–Q5``, ``parallel · Q3``)."""
    qs = [q + 1 for q in trace.questions]
    if not qs:
        return f"{trace.group} · request {trace.req + 1}"
    which = f"Q{qs[0]}" if len(qs) == 1 else f"Q{qs[0]}–Q{qs[-1]}"
    return f"{trace.group} · {which}"


def token_rate(
    traces: Sequence[RequestTrace], bin_s: float = RATE_BIN_S
) -> dict[str, list[tuple[float, float]]]:
    """Output tokens per second over the run, per group: ``{group: [(t_start_s, tok_s),
    ...]}`` with one entry per ``bin_s``-second bin from 0 to the last token (seconds from
    the run origin). Each request's ``output_tokens`` (the figure set's: usage when the
    server reported it, else its event count) is spread evenly over its output-carrying
    events, so the sum over all bins × ``bin_s`` is the group's output tokens; with no usage
    figure the rate is events per second (the figure set's estimate). Raises
    ``ValueError`` for a ``bin_s`` that is not positive."""
    if not (bin_s > 0 and math.isfinite(bin_s)):
        raise ValueError(f"bin_s must be a positive number of seconds, got {bin_s}")
    bins: dict[str, dict[int, float]] = {}
    last = 0.0
    for trace in traces:
        if trace.t_send is None or not trace.event_times:
            continue
        per_event = tokens_per_event(trace)
        group = bins.setdefault(trace.group, {})
        for t in trace.event_times:
            k = int(t // bin_s)
            group[k] = group.get(k, 0.0) + per_event
            last = max(last, t)
    n = int(last // bin_s) + 1
    return {
        g: [(round(k * bin_s, 6), round(counts.get(k, 0.0) / bin_s, 3)) for k in range(n)]
        for g, counts in sorted(bins.items())
    }


def _span(name: str, start: float, end: float, pid: int, tid: int, **args: Any) -> dict[str, Any]:
    return {
        "name": name,
        "cat": "request",
        "ph": "X",
        "ts": _us(start),
        "dur": _us(max(0.0, end - start)),
        "pid": pid,
        "tid": tid,
        "args": args,
    }


def _request_events(trace: RequestTrace, f: RequestFigures, pid: int) -> list[dict[str, Any]]:
    tid = trace.req + 1
    out: list[dict[str, Any]] = []
    t0 = f.t_send
    if t0 is None:
        return out
    first, last = f.t_first_output, f.t_last_token
    end = trace.t_end if trace.t_end is not None else (last if last is not None else t0)
    wait_end = first if first is not None else end
    out.append(
        _span(
            "wait",
            t0,
            wait_end,
            pid,
            tid,
            ttfb_s=f.ttfb_s,
            ttft_s=f.ttft_s,
            attempts=f.attempts,
            status=trace.status,
        )
    )
    span = f.prefill_span  # the server's prefill, nested in the wait it ends
    if span is not None and span[1] > t0:
        out.append(
            _span(
                "prefill",
                max(span[0], t0),
                span[1],
                pid,
                tid,
                prompt_tokens=f.prompt_tokens,
                cached_prompt_tokens=f.cached_prompt_tokens,
                queue_s=f.split.queue_s if f.split else None,
            )
        )
    for b in f.backoffs:
        b_end = b.end if b.end is not None else wait_end
        out.append(
            _span(
                "back-off",
                b.start,
                b_end,
                pid,
                tid,
                attempt=b.attempt,
                status=b.status,
                retry_after_s=b.retry_after_s,
            )
        )
    if first is not None and last is not None:
        out.append(
            _span(
                "streaming",
                first,
                last,
                pid,
                tid,
                output_tokens=f.output_tokens,
                tokens_source=f.tokens_source,
                tpot_s=f.tpot_s,
                e2e_s=f.e2e_s,
            )
        )
        if f.sections:
            for s in f.sections:
                a = min(max(t0 + s.start_s, first), last)
                z = last if s.end_s is None else min(max(t0 + s.end_s, a), last)
                out.append(_span(f"answer {s.question + 1}", a, z, pid, tid))
        elif len(trace.questions) == 1:
            out.append(_span(f"answer {trace.questions[0] + 1}", first, last, pid, tid))
    if f.outcome in ("failed", "stopped"):
        args: dict[str, Any] = {"outcome": f.outcome}
        if f.error is not None:
            args["error"] = f"{f.error.kind}: {f.error.message}"
        out.append(
            {
                "name": f.outcome,
                "cat": "request",
                "ph": "i",
                "s": "t",
                "ts": _us(end),
                "pid": pid,
                "tid": tid,
                "args": args,
            }
        )
    return out


def run_trace_events(state: RunState, pid: int, label: str) -> list[dict[str, Any]]:
    """The trace events of one run (``state``, rebuilt from a recording or live) as
    process ``pid`` named ``label``: metadata, each request's spans, the tokens/s counter."""
    out: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": label}},
        {"name": "process_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
         "args": {"sort_index": pid}},
    ]  # fmt: skip
    for trace in state.requests:
        tid = trace.req + 1
        out.append(
            {"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
             "args": {"name": lane_name(trace)}}
        )  # fmt: skip
        out.append(
            {"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
             "args": {"sort_index": tid}}
        )  # fmt: skip
        if trace.t_send is not None:
            out.extend(_request_events(trace, request_figures(trace), pid))
    for group, series in token_rate(state.requests).items():
        for t, rate in series:
            out.append(
                {
                    "name": "tokens/s",
                    "cat": "rate",
                    "ph": "C",
                    "ts": _us(t),
                    "pid": pid,
                    "tid": 0,
                    "args": {group: rate},
                }
            )
    return out


def server_counter_events(series: LoadSeries, pid: int) -> list[dict[str, Any]]:
    """Counter (``C``) events of the server's own samples for process ``pid``: per sample a
    ``server batch`` event (``args``: ``running``, ``waiting`` requests) and, where the
    sample has a KV figure, a ``server KV cache`` event (``kv %``: the fraction × 100,
    or ``kv tokens``). Times: the samples' seconds since the run origin, as microseconds."""
    out: list[dict[str, Any]] = []
    kv = series.kv if series.kv else [None] * len(series.t_s)
    key = "kv tokens" if series.kv_unit == "tokens" else "kv %"
    for t, running, waiting, k in zip(series.t_s, series.running, series.waiting, kv, strict=True):
        out.append(
            {"name": "server batch", "cat": "server", "ph": "C", "ts": _us(t), "pid": pid,
             "tid": 0, "args": {"running": running, "waiting": waiting}}
        )  # fmt: skip
        if k is not None:
            value = k if series.kv_unit == "tokens" else round(k * 100, 4)
            out.append(
                {"name": "server KV cache", "cat": "server", "ph": "C", "ts": _us(t),
                 "pid": pid, "tid": 0, "args": {key: value}}
            )  # fmt: skip
    return out


def trace_document(recording: Recording) -> dict[str, Any]:
    """The whole trace of ``recording``: one process per run, one track per request.
    Raises :class:`~splitdesk.core.files.recording.RecordingError` for a run whose events are
    not consistent."""
    events: list[dict[str, Any]] = []
    for i, run in enumerate(recording.runs):
        label = run.label if len(recording.runs) == 1 else f"run {i + 1}: {run.label}"
        events.extend(run_trace_events(rebuild_state(run), i + 1, label))
        series = series_of(run.server)
        if series is not None:
            events.extend(server_counter_events(series, i + 1))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "source": "splitdesk",
            "app_version": recording.app_version,
            "recording": recording.describe(),
            "title": recording.title,
            "time_origin": "each run's own start (ts 0)",
        },
    }
