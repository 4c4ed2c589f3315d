"""The ``splitdesk bench --json`` document (DESIGN.md, "The headless contract").

Keys may be added, never removed. Every figure is read from
:func:`splitdesk.core.analyse.metrics.request_figures` /
:func:`~splitdesk.core.analyse.metrics.group_metrics`
(the same objects the window shows). Every time in a request is seconds from its own
(first) ``t_send`` except ``attempt_ttft_s`` (from ``attempt_t_send_s``, the send of the
attempt that was answered); ``t_send_s`` is seconds from the run's start; ``wall_s``
and the summary's ``*_wall_s`` are makespans (:mod:`splitdesk.core.analyse.metrics`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from splitdesk import __version__
from splitdesk.core.analyse.diagnosis import bench_summary
from splitdesk.core.analyse.disturbance import disturbed_reason
from splitdesk.core.analyse.metrics import (
    GroupMetrics,
    PromptTokens,
    group_metrics,
    request_metrics,
    spread,
)
from splitdesk.core.analyse.predict import (
    RATE_LIMIT_NOTE,
    PredictedRequest,
    predicted_makespan,
    prediction_ignores_rate_limit,
)
from splitdesk.core.measure.client_cpu import ClientCpu
from splitdesk.core.run.run_state import RequestTrace, RunState


@dataclass
class BenchRun:
    """One executed mode of one repeat: its state and, on the built-in endpoint, the cost
    model's predicted makespan (``None`` with ``prediction_note`` when it does not apply,
    e.g. requests were refused with HTTP 429)."""

    mode: str
    repeat: int
    state: RunState
    predicted_wall_s: float | None = None
    #: Why there is no prediction although one was made (``predict.RATE_LIMIT_NOTE``).
    prediction_note: str | None = None
    #: Seconds the built-in endpoint fell behind its cost-model schedule during this run
    #: (``predict.schedule_slip_s``; CPU starvation): the part of ``wall_s`` the prediction
    #: cannot contain. ``None`` on other endpoints.
    endpoint_slip_s: float | None = None
    #: The window run this side was split from (:func:`split_run`), diagnosed whole as the
    #: window diagnoses it; ``None`` for a bench run.
    whole: RunState | None = None
    #: The cost model's figures per request, request order (``predict.PredictedRequest``:
    #: TTFT, E2E, prompt and cached tokens); empty on other endpoints.
    predicted: tuple[PredictedRequest, ...] = ()
    #: Seconds the measuring client's event loop woke late during this run
    #: (:mod:`splitdesk.core.measure.loop_lag`): a busy machine. ``None`` when not measured.
    client_lag_s: float | None = None
    #: Why an earlier measurement of this mode and repeat was dropped and this one taken
    #: instead (:func:`~splitdesk.core.analyse.disturbance.disturbed_reason`), or ``None``.
    remeasured: str | None = None

    #: splitdesk's own CPU over this run (:mod:`splitdesk.core.measure.client_cpu`): the
    #: engine (bench's own process), the built-in endpoint, the machine's load; ``None``
    #: when not measured (a window recording).
    client_cpu: ClientCpu | None = None

    @property
    def disturbed(self) -> str | None:
        """Why this run's wall time says more about the machine than the endpoint
        (:func:`~splitdesk.core.analyse.disturbance.disturbed_reason`), or ``None``."""
        return disturbed_reason(self.metrics.makespan_s, self.endpoint_slip_s, self.client_lag_s)

    @property
    def label(self) -> str:
        """ "parallel run 2": the mode and the repeat from 1, as notes name a run."""
        return f"{self.mode} run {self.repeat + 1}"

    @property
    def metrics(self) -> GroupMetrics:
        n = len(self.state.info.questions) if self.state.info else 0
        return group_metrics(self.state.requests, self.mode, n)


SIDES = ("combined", "parallel", "sequential")


def split_run(
    state: RunState, repeat: int, predictions: Sequence[PredictedRequest] | None = None
) -> list[BenchRun]:
    """A window run (side by side, one after another) as the bench document takes it: one
    :class:`BenchRun` per side it sent (``combined``, ``parallel``, ``sequential``), each
    holding only that side's requests (same info and end), so a makespan is one side's.
    ``predictions``: the run's predicted requests (index order), each side's predicted
    makespan taken from them as the window's summary takes it (none, with the note, when
    :func:`~splitdesk.core.analyse.predict.prediction_ignores_rate_limit`)."""
    runs: list[BenchRun] = []
    ignored = predictions is not None and prediction_ignores_rate_limit(predictions, state.requests)
    for group in SIDES:
        traces = [t for t in state.requests if t.group == group]
        if not traces:
            continue
        part = copy.copy(state)
        part.requests = traces
        predicted = None
        if predictions is not None and not ignored:
            mine = [
                p for t, p in zip(state.requests, predictions, strict=False) if t.group == group
            ]
            predicted = predicted_makespan(mine) if mine else None
        note = RATE_LIMIT_NOTE if ignored else None
        runs.append(BenchRun(group, repeat, part, predicted, note, whole=state))
    return runs


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(x, nd)


def _predicted_json(p: PredictedRequest | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "ttft_s": _r(p.ttft_s),
        "e2e_s": _r(p.e2e_s),
        "prompt_tokens": p.prompt_tokens,
        "cached_prompt_tokens": p.cached_prompt_tokens,
        "queue_s": _r(p.queue_s),
        "prefill_s": _r(p.prefill_s),
    }


def request_json(trace: RequestTrace, predicted: PredictedRequest | None = None) -> dict[str, Any]:
    """One entry of ``runs[].requests`` (contract keys first, then additions)."""
    sent = trace.t_send is not None
    m = request_metrics(trace) if sent else None
    t0 = trace.t_send or 0.0
    split = m.split if m else None
    return {
        "questions": list(trace.questions),
        "t_send_s": _r(trace.t_send),
        "ttfb_s": _r(m.ttfb_s) if m else None,
        "ttft_s": _r(m.ttft_s) if m else None,
        "e2e_s": _r(m.e2e_s) if m else None,
        "output_tokens": m.output_tokens if m else 0,
        "tokens_source": m.tokens_source if m else "events",
        "text": trace.text,
        "reasoning_text": trace.reasoning_text,
        "event_times_s": [round(t - t0, 6) for t in trace.event_times],
        "sections": [
            {"question": s.question, "start_s": _r(s.start_s), "end_s": _r(s.end_s)}
            for s in (m.sections if m else ())
        ],
        "error": trace.error.to_json() if trace.error else None,
        # additions
        "ttft_answer_s": _r(m.ttft_answer_s) if m else None,
        "first_tool_call_s": _r(m.first_tool_call_s) if m else None,
        "stream_end_s": _r(m.stream_end_s) if m else None,
        "connect_s": _r(m.connect_s) if m else None,
        # warm connections: when the connection's warm-up began and the server answered
        # on it (seconds from the run's start, like t_send_s), and the time between
        "connection_started_s": _r(trace.t_conn_start),
        "connection_ready_s": _r(trace.t_conn_ready),
        "connection_wait_s": _r(m.connection_wait_s) if m else None,
        "connection_connect_s": _r(m.connection_connect_s) if m else None,
        "tpot_s": _r(m.tpot_s) if m else None,
        "decode_tok_s": _r(m.decode_tok_s, 3) if m else None,
        "finish_reason": trace.finish_reason,
        "outcome": trace.outcome,
        "status": trace.status,
        "request_id": trace.request_id,
        "attempts": trace.attempts,
        "server_timings": trace.server_timings or None,
        "tokens_estimated": m.tokens_estimated if m else False,
        "attempt_t_send_s": _r(m.t_attempt_send) if m else None,
        "attempt_ttft_s": _r(m.attempt_ttft_s) if m else None,
        "backoffs": [
            {
                "attempt": b.attempt,
                "start_s": _r(b.start - t0),
                "end_s": _r(b.end - t0) if b.end is not None else None,
                "retry_after_s": b.retry_after_s,
                "delay_s": _r(b.delay_s),
                "status": b.status,
            }
            for b in (m.backoffs if m else ())
        ],
        "prompt_tokens": m.prompt_tokens if m else None,
        "cached_prompt_tokens": m.cached_prompt_tokens if m else None,
        "context_chars": trace.context_chars,
        "ttft_split": (
            {
                "queue_s": _r(split.queue_s),
                "prefill_s": _r(split.prefill_s),
                "rest_s": _r(split.rest_s),
            }
            if split is not None
            else None
        ),
        "predicted": _predicted_json(predicted),
    }


def prompt_json(p: PromptTokens | None) -> dict[str, Any] | None:
    """A side's ``prompt`` object: ``{"prompt_tokens", "cached_prompt_tokens",
    "computed_prompt_tokens", "requests", "reported", "cached_reported", "context_chars"}``
    (:class:`~splitdesk.core.analyse.metrics.PromptTokens`); ``None`` when no request
    reported its prompt tokens."""
    if p is None:
        return None
    return {
        "prompt_tokens": p.prompt,
        "cached_prompt_tokens": p.cached,
        "computed_prompt_tokens": p.computed,
        "requests": p.requests,
        "reported": p.reported,
        "cached_reported": p.cached_reported,
        "context_chars": p.context_chars,
    }


def run_json(run: BenchRun) -> dict[str, Any]:
    """One entry of ``runs``."""
    g = run.metrics
    return {
        "mode": run.mode,
        "repeat": run.repeat,
        "wall_s": _r(g.makespan_s),
        "requests": [
            request_json(
                t, run.predicted[i] if len(run.predicted) == len(run.state.requests) else None
            )
            for i, t in enumerate(run.state.requests)
        ],
        # additions
        "all_answers_started_s": _r(g.all_started_s),
        "answer_start_s": {str(k): _r(v) for k, v in sorted(g.answer_start_s.items())},
        "output_tokens": g.output_tokens,
        "tokens_estimated": g.tokens_estimated,
        "tokens_estimated_requests": list(g.estimated_requests),
        "tokens_estimated_note": g.estimated_note or None,
        "throughput_tok_s": _r(g.throughput_tok_s, 3),
        "predicted_wall_s": _r(run.predicted_wall_s),
        "prompt": prompt_json(g.prompt),
        "endpoint_slip_s": _r(run.endpoint_slip_s),
        "client_lag_s": _r(run.client_lag_s),
        # why this run's time is the machine's more than the endpoint's (left out of the
        # summary's medians), and why an earlier measurement of it was dropped
        "disturbed": run.disturbed,
        "remeasured": run.remeasured,
        "stopped": bool(run.state.ended and run.state.ended.stopped),
        # splitdesk's own CPU meanwhile, per process, and the machine's load: an observer
        # effect can be checked after the fact (core/measure/client_cpu.py)
        "client_cpu": run.client_cpu.to_json() if run.client_cpu is not None else None,
    }


def _undisturbed(runs: list[BenchRun]) -> tuple[list[BenchRun], list[BenchRun]]:
    """(the runs the medians are taken over, the disturbed runs left out): a repeat with a
    disturbed run is left out whole (its speed-up pairs the two), unless that would leave
    no repeat, when every run counts and the note says so."""
    bad = {r.repeat for r in runs if r.disturbed}
    kept = [r for r in runs if r.repeat not in bad]
    if not kept:
        return runs, []
    return kept, [r for r in runs if r.disturbed]


def summary_json(runs: list[BenchRun]) -> dict[str, Any]:
    """The ``summary``: medians over repeats of each mode's makespan and of the speed-up.

    A disturbed run (:attr:`BenchRun.disturbed`) takes its repeat out of the medians;
    ``disturbed_note`` names each with its reason (``disturbed_all`` when every repeat was
    disturbed and the medians are over them all), ``remeasured_note`` the runs measured
    again because the first measurement was disturbed."""
    counted, left_out = _undisturbed(runs)
    out: dict[str, Any] = {"repeats": len({r.repeat for r in runs})}
    if left_out:
        out["repeats_counted"] = len({r.repeat for r in counted})
        out["disturbed_note"] = "left out of the medians: " + "; ".join(
            f"{r.label} ({r.disturbed})" for r in left_out
        )
    elif any(r.disturbed for r in runs):
        out["disturbed_note"] = "every repeat was disturbed: medians over them all: " + (
            "; ".join(f"{r.label} ({r.disturbed})" for r in runs if r.disturbed)
        )
        out["disturbed_all"] = True
    again = [r for r in runs if r.remeasured]
    if again:
        out["remeasured_note"] = "measured again: " + "; ".join(
            f"{r.label} (the first {r.remeasured})" for r in again
        )
    out.update(_medians(counted))
    # diagnosis, prompt_shape_factor, concurrency_factor (splitdesk.core.analyse.diagnosis)
    repeats = sorted({r.repeat for r in counted})
    whole = [next((r.whole for r in counted if r.repeat == k), None) for k in repeats]
    out.update(
        bench_summary(
            [[r.state.requests for r in counted if r.repeat == k] for k in repeats], whole
        )
    )
    return out


def _medians(runs: list[BenchRun]) -> dict[str, Any]:
    repeats = sorted({r.repeat for r in runs})
    by: dict[tuple[str, int], BenchRun] = {(r.mode, r.repeat): r for r in runs}
    out: dict[str, Any] = {}
    for mode in ("combined", "parallel", "sequential"):
        s = spread([by[(mode, k)].metrics.makespan_s for k in repeats if (mode, k) in by])
        if s is not None:
            out[f"{mode}_wall_s"] = round(s.median, 6)
            out[f"{mode}_wall_s_range"] = [round(s.min, 6), round(s.max, 6)]
    ratios: list[float | None] = []
    predicted: list[float | None] = []
    failed = False
    for k in repeats:
        c, p = by.get(("combined", k)), by.get(("parallel", k))
        if c and p and (c.metrics.failed or p.metrics.failed):
            failed = True  # a makespan over the requests that succeeded compares nothing
            continue
        if c and p and c.metrics.makespan_s and p.metrics.makespan_s:
            ratios.append(c.metrics.makespan_s / p.metrics.makespan_s)
            if c.predicted_wall_s and p.predicted_wall_s:
                predicted.append(c.predicted_wall_s / p.predicted_wall_s)
    s = spread(ratios)
    out["speedup"] = round(s.median, 4) if s else None
    if failed:
        out["speedup_note"] = (
            "requests failed: speed-up only over repeats where every request succeeded"
        )
    if s is not None:
        out["speedup_range"] = [round(s.min, 4), round(s.max, 4)]
    sp = spread(predicted)
    out["predicted_speedup"] = round(sp.median, 4) if sp else None
    notes = sorted({r.prediction_note for r in runs if r.prediction_note})
    if notes:  # a prediction was dropped: say why rather than show a bare "—"
        out["predicted_note"] = "; ".join(notes)
    return out


def bench_document(
    endpoint: dict[str, str], questions: list[str], runs: list[BenchRun]
) -> dict[str, Any]:
    """The whole JSON document of the bench contract."""
    return {
        "version": __version__,
        "endpoint": endpoint,
        "questions": questions,
        "runs": [run_json(r) for r in runs],
        "summary": summary_json(runs),
    }


def builtin_url(profile: str, url: str) -> str:
    """The ``url`` of a built-in endpoint in the documents: ``builtin:<profile> (<url>)``.
    A ``url`` already in that form (a bench recording stores it so) is returned as it is,
    never wrapped twice."""
    prefix = f"builtin:{profile} ("
    return url if url.startswith(prefix) and url.endswith(")") else f"{prefix}{url})"


def endpoint_info(url: str, api: str, model: str, profile: str | None = None) -> dict[str, str]:
    """The ``endpoint`` object of bench and sweep documents: ``url`` (given with any key
    already redacted), ``api``, ``model``; on the built-in endpoint (``profile`` given)
    ``url`` reads ``builtin:<profile> (<url>)`` (:func:`builtin_url`) and ``profile`` is
    added."""
    if profile is None:
        return {"url": url, "api": api, "model": model}
    return {"url": builtin_url(profile, url), "api": api, "model": model, "profile": profile}
