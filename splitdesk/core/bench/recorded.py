"""``splitdesk bench --record FILE``: the runs of a bench session as a recording in the
window's format (:mod:`splitdesk.core.files.recording`).

Bench sends each mode of a repeat as a run of its own, each on an idle endpoint (the
window's *one after another*). The recording keeps one :class:`RunRecord` per repeat that
holds them all as the phases of one run — combined, then parallel, then the sequential
baseline (or the chain) — on one clock (the first run's origin; each later run's events
shifted by how much later it started, request indices renumbered), with the cost model's
predicted requests and the server's own ``/metrics`` samples taken meanwhile. Its replay
is then the whole comparison the bench measured, with the set's titles, not one mode at a
time: the same panes, timeline, server lane, summary and diagnosis as the window shows for
a run of the same mode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.bench.options import BenchOptions
from splitdesk.core.files.recording import (
    EventLog,
    Recording,
    RecordingError,
    RunRecord,
    RunSettingsRecord,
    endpoint_record,
    events_of,
    new_recording,
    run_record,
)
from splitdesk.core.files.report import BenchRun
from splitdesk.core.measure.server_metrics import LoadSample, load_series, series_record
from splitdesk.core.run.events import (
    ConnectionOpened,
    PhaseStarted,
    RequestPlanned,
    RunEnded,
    RunEvent,
    RunStarted,
)
from splitdesk.core.run.run_state import RunState

#: The window's mode a bench ``--mode`` replays as (one run, its modes as phases).
WINDOW_MODES = {"all": "one-after-another", "dependent": "dependent"}


def merged_events(parts: Sequence[tuple[RunState, EventLog]], mode: str) -> list[RunEvent]:
    """The events of ``parts`` (separate runs, in the order they ran) as one run of
    ``mode`` whose phases they are: one origin (the first run's ``t0_ns``), each later
    run's times shifted by how much later its origin was, its requests renumbered after
    the runs before it, each run's phase index its place. Raises :class:`RecordingError`
    when a part has no ``run_started`` event."""
    starts: list[RunStarted] = []
    for _state, log in parts:
        first = log.events[0] if log.events else None
        if not isinstance(first, RunStarted):
            raise RecordingError("a bench run's events do not begin with run_started")
        starts.append(first)
    origin = starts[0]
    out: list[RunEvent] = [
        dataclasses.replace(origin, t=0.0, mode=mode, phases=len(parts)),
    ]
    base = 0
    end = 0.0
    stopped = False
    for phase, ((state, log), start) in enumerate(zip(parts, starts, strict=True)):
        shift = (start.t0_ns - origin.t0_ns) / 1e9
        for ev in log.events[1:]:
            if isinstance(ev, RunEnded):
                end = max(end, ev.t + shift)
                stopped = stopped or ev.stopped
                continue
            if isinstance(ev, RunStarted):
                continue
            changes: dict[str, object] = {"t": ev.t + shift}
            if isinstance(ev, ConnectionOpened):  # its other moment on the run's clock
                changes["started"] = ev.started + shift
            req = getattr(ev, "req", None)
            if isinstance(req, int):
                changes["req"] = req + base
            if isinstance(ev, RequestPlanned | PhaseStarted):
                changes["phase"] = phase
            out.append(dataclasses.replace(ev, **changes))  # type: ignore[arg-type]
        base += len(state.requests)
        if stopped:
            break
    out.append(RunEnded(end, stopped))
    return out


def _rebuilt(events: Sequence[RunEvent]) -> RunState:
    state = RunState()
    for ev in events:
        state.apply(ev)
    return state


def _record(
    parts: Sequence[BenchRun],
    mode: str,
    label: str,
    repeat: int,
    samples: Sequence[LoadSample],
) -> RunRecord | None:
    logs = [(r.state, events_of(r.state)) for r in parts]
    kept = [(s, log) for s, log in logs if log is not None and log.events]
    if not kept:
        return None
    events = merged_events(kept, mode) if len(kept) > 1 else list(kept[0][1].events)
    state = _rebuilt(events)
    predictions: list[PredictedRequest] | None = []
    for r in parts:  # the built-in endpoint's, per request (none on other endpoints)
        if not r.predicted or predictions is None:
            predictions = None
        else:
            predictions.extend(r.predicted)
    if predictions is not None and len(predictions) != len(state.requests):
        predictions = None
    first = events[0]
    server = None
    if samples and isinstance(first, RunStarted):
        series = load_series(list(samples), first.t0_ns)
        if state.ended is not None:
            series = series.until(state.ended.t)
        server = series_record(series)
    return run_record(
        state,
        label=label,
        mode=mode,
        repeat=repeat,
        started_at=kept[0][1].started_at,
        events=events,
        predictions=predictions,
        server=server,
    )


def bench_recording(
    endpoint: dict[str, str],
    opts: BenchOptions,
    runs: Sequence[BenchRun],
    samples: Sequence[LoadSample] = (),
) -> Recording:
    """The recording of a ``splitdesk bench`` session (``--record FILE``): per repeat, one
    :class:`RunRecord` holding every mode it ran (module docstring) — a single mode is a
    run of that mode. ``endpoint``: the bench document's endpoint object (URL already
    redacted); ``samples``: the server's ``/metrics`` samples taken during the session
    (each record keeps those of its own time). Runs whose events were not kept
    (:func:`~splitdesk.core.files.recording.keep_events`) are left out. Raises
    :class:`RecordingError` when none was."""
    mode = WINDOW_MODES.get(opts.mode, opts.mode)
    records = []
    for k in sorted({r.repeat for r in runs}):
        parts = [r for r in runs if r.repeat == k]
        label = f"{mode.replace('-', ' ')} · repeat {k + 1}" if opts.repeat > 1 else mode
        record = _record(parts, mode, label.replace("-", " "), k, samples)
        if record is not None:
            records.append(record)
    if not records:
        raise RecordingError("nothing to record: no run produced events")
    builtin = "profile" in endpoint
    return new_recording(
        "bench",
        endpoint_record(
            endpoint["url"],
            endpoint["api"],
            endpoint["model"],
            preset="builtin" if builtin else "custom",
            profile=endpoint.get("profile"),
            speed=float(opts.sim_params.get("speed", 1.0)) if builtin else None,
        ),
        opts.questions,
        opts.titles,
        opts.template,
        RunSettingsRecord(
            mode=mode,
            with_sequential=opts.mode == "all",
            max_tokens=opts.max_tokens,
            temperature=opts.temperature,
            seed=opts.seed,
            retry_429=opts.retry_429,
            connect_timeout=opts.timeouts.connect,
            read_timeout=opts.timeouts.read,
            repeat=opts.repeat,
            cold_connections=opts.client.cold,
            release=opts.client.release,
        ),
        records,
    )
