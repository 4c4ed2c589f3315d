"""``splitdesk bench --record FILE``: the runs of a bench session as a recording in the
window's format (:mod:`splitdesk.core.files.recording`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from splitdesk.core.bench.options import BenchOptions
from splitdesk.core.files.recording import (
    QuestionRecord,
    Recording,
    RecordingError,
    RunSettingsRecord,
    endpoint_record,
    events_of,
    run_record,
)
from splitdesk.core.files.report import BenchRun


def bench_recording(
    endpoint: dict[str, str], opts: BenchOptions, runs: Sequence[BenchRun]
) -> Recording:
    """The recording of a ``splitdesk bench`` run (``--record FILE``): one
    :class:`RunRecord` per mode and repeat, in the order they ran; ``endpoint``: the bench
    document's endpoint object (URL already redacted). Runs whose events were not kept
    (:func:`keep_events`) are left out. Raises :class:`RecordingError` when none was."""
    records = []
    for run in runs:
        log = events_of(run.state)
        if log is None or not log.events:
            continue
        records.append(
            run_record(
                run.state,
                label=f"{run.mode} · repeat {run.repeat + 1}",
                mode=run.mode,
                repeat=run.repeat,
                started_at=log.started_at,
                events=log.events,
                predictions=list(run.predicted) or None,  # the built-in endpoint's, per request
            )
        )
    if not records:
        raise RecordingError("nothing to record: no run produced events")
    builtin = "profile" in endpoint
    return Recording(
        created_at=datetime.now(UTC),
        source="bench",
        title=f"splitdesk bench --mode {opts.mode} · {len(opts.questions)} questions",
        endpoint=endpoint_record(
            endpoint["url"],
            endpoint["api"],
            endpoint["model"],
            preset="builtin" if builtin else "custom",
            profile=endpoint.get("profile"),
            speed=float(opts.sim_params.get("speed", 1.0)) if builtin else None,
        ),
        questions=[QuestionRecord(text=q) for q in opts.questions],
        template=opts.template,
        settings=RunSettingsRecord(
            mode=opts.mode,
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
        runs=records,
    )
