"""Recordings: a run saved as a file, to show again later with no network.

A recording holds a run's event list (:mod:`splitdesk.core.run.events`, every event with its
arrival time ``t`` in seconds since the run's origin and its text) plus what is needed to
show it again: the app version, the endpoint (URL, dialect, model — **never** a key, an
auth header or a custom header's value; header *names* only), the questions with their
titles, the combined-prompt template, the run settings, the cost model's predictions when
there were any, and the figures (:func:`figures_of`, informational: a replay recomputes them
from the events with :mod:`splitdesk.core.analyse.metrics`, the one definition).

One format for the window, ``splitdesk bench --record FILE`` and the demo recordings.
A window run is one :class:`RunRecord`; a bench run holds one per mode and repeat.

File format (version :data:`FORMAT_VERSION`): one JSON object, UTF-8, validated with
pydantic (:class:`Recording`)::

    {"format": "splitdesk-recording", "version": 1, "app_version": "0.1.0",
     "created_at": "2026-12-01T04:00:00Z", "source": "window|bench|demo", "title": "...",
     "endpoint": {"url": "...", "api": "openai-chat", "model": "...", "preset": "builtin",
                  "profile": "batching", "speed": 1.0, "header_names": []},
     "questions": [{"text": "...", "title": ""}],
     "template": {"text": "...{questions}...", "marker": "Answer {k}:"},
     "settings": {"mode": "side-by-side", "with_sequential": false, "max_tokens": 512, ...},
     "runs": [{"label": "...", "mode": "side-by-side", "repeat": 0,
               "started_at": "...", "events": [{"kind": "run_started", "t": 0.0, ...}, ...],
               "predictions": null | [{"t_send_s": 0, "ttft_s": 0.1, "e2e_s": 2.0, ...}],
               "server": null | {"family": "vllm", "kv_unit": "fraction", "t_s": [..],
                                 "running": [..], "waiting": [..], "kv": null | [..]},
               "figures": {...}}]}

``server`` (optional; older files have none) is the server lane's samples of the run's
endpoint ``/metrics`` (:class:`~splitdesk.core.measure.server_metrics.ServerSeriesRecord`).

Files larger than :data:`GZIP_ABOVE` bytes are written gzip-compressed (suffix
``.splitdesk.json.gz``); :func:`load_recording` recognises gzip by its magic bytes, whatever
the name. Writes are atomic (temporary file in the same folder, then ``os.replace``).
Older versions load through :data:`MIGRATIONS` (one step per version; a fixture per
version in ``tests/fixtures/recordings/``). Every problem with a file is a
:class:`RecordingError` whose message names the file and the field path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import json
import math
import os
import weakref
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import platformdirs
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
)

from splitdesk import __version__
from splitdesk.core.analyse.metrics import request_metrics, summarize
from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.measure.client_cpu import ClientCpu, ProcessCpu
from splitdesk.core.measure.runner import redact
from splitdesk.core.measure.server_metrics import ServerSeriesRecord
from splitdesk.core.run.bounded_read import FileTooLargeError, read_bounded
from splitdesk.core.run.events import (
    EVENT_TYPES,
    PhaseStarted,
    RequestPlanned,
    RunEvent,
    RunStarted,
    SectionStarted,
    event_to_json,
)
from splitdesk.core.run.file_words import json_kind, json_shown
from splitdesk.core.run.limits import (
    MAX_TOKENS,
    REPEAT,
    RETRY_429,
    SEED,
    SPEED,
    TEMPERATURE,
    TIMEOUT_S,
)
from splitdesk.core.run.plans import MODES, Phase, RequestSpec, RunPlan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import ErrorKind, RequestError

if TYPE_CHECKING:
    pass

FORMAT = "splitdesk-recording"
#: The version this code writes. It changes whenever a field does (added, removed, its
#: type or bounds changed): bump it, add the step to :data:`MIGRATIONS` and a fixture of
#: the old version to ``tests/fixtures/recordings/``; ``tests/core/files/
#: test_recording_version.py`` fails until the fingerprint of the new shape is recorded.
#: Version 2 = version 1 plus ``runs[].server``, ``settings.cold_connections``,
#: ``settings.release`` (files that have them but still say 1 exist: they load as 1), the
#: predictions' prompt and cached tokens, queue and prefill times, and the bounds of
#: core/run/limits.py. Version 3 = version 2 plus ``connection`` events (a warm
#: connection's set-up: :class:`~splitdesk.core.run.events.ConnectionOpened`), which a
#: version-2 reader refused as an unknown event kind (a newer reader drops them), and
#: ``runs[].client_cpu`` (splitdesk's own CPU over a window run: :class:`ClientCpuRecord`).
FORMAT_VERSION = 3
SUFFIX = ".splitdesk.json"
GZ_SUFFIX = ".splitdesk.json.gz"
#: Encoded size (bytes) above which :func:`suggested_name` picks the gzip suffix.
GZIP_ABOVE = 1_000_000
#: Largest file :func:`load_recording` reads, and largest JSON text a gzip file may expand
#: to (a hand-made gzip bomb is refused, not unpacked).
MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_JSON_BYTES = 1024 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


class RecordingError(Exception):
    """A recording could not be read or written. ``str()`` is one line for the user that
    names the file and, for a bad field, its path (``runs[0].events[12].text``)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


# -- the model ---------------------------------------------------------------------------------


class _Strict(BaseModel):
    # every number finite: NaN or 1e999 (read as inf) would hang a replay's clock
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class EndpointRecord(_Strict):
    """The endpoint a run went to, without secrets: ``url`` with passwords and
    credential-looking query values masked (:func:`splitdesk.core.measure.runner.redact`),
    ``header_names``: the names of custom headers, never their values."""

    url: str
    api: str
    model: str
    preset: str | None = None
    profile: str | None = None  #: the built-in endpoint's profile
    speed: float | None = Field(None, ge=SPEED.low, le=SPEED.high)  #: its speed factor
    header_names: list[str] = Field(default_factory=list)


class QuestionRecord(_Strict):
    """One question and its optional short title."""

    text: str
    title: str = ""


class RunSettingsRecord(_Strict):
    """The run's settings: the window's mode (or bench's ``--mode``), caps and timeouts
    (seconds)."""

    mode: str = Field(max_length=100)
    with_sequential: bool = False
    max_tokens: int | None = Field(None, ge=MAX_TOKENS.low, le=MAX_TOKENS.high)
    temperature: float | None = Field(None, ge=TEMPERATURE.low, le=TEMPERATURE.high)
    seed: int | None = Field(None, ge=SEED.low, le=SEED.high)
    retry_429: int = Field(0, ge=RETRY_429.low, le=RETRY_429.high)
    connect_timeout: float | None = Field(None, ge=TIMEOUT_S.low, le=TIMEOUT_S.high)
    read_timeout: float | None = Field(None, ge=TIMEOUT_S.low, le=TIMEOUT_S.high)
    repeat: int = Field(1, ge=REPEAT.low, le=REPEAT.high)
    #: the client's pattern (:mod:`splitdesk.core.measure.client_pattern`); older files: the default
    cold_connections: bool = False
    release: Literal["barrier", "as-scheduled"] = "barrier"


class PredictionRecord(_Strict):
    """The cost model's expected timing of one request (index order), seconds from the
    request's own send (``t_send_s`` from its phase's start); see
    :class:`splitdesk.core.analyse.predict.PredictedRequest`."""

    t_send_s: float = Field(ge=0)
    ttft_s: float | None = Field(ge=0)
    e2e_s: float = Field(ge=0)
    output_tokens: int = Field(ge=0)
    rejected: bool
    #: from endpoints that model prefill (optional: older files have none)
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    queue_s: float | None = None
    prefill_s: float | None = None


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


class _ErrorRecord(_Strict):
    kind: ErrorKind
    message: str
    status: int | None = None
    retry_after_s: float | None = None


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _parse_event(raw: Any) -> RunEvent:
    """One event from its JSON form (:func:`splitdesk.core.run.events.event_to_json`), typed
    by its dataclass; raises ``ValueError`` naming the bad field."""
    if isinstance(raw, tuple(EVENT_TYPES.values())):
        return raw  # type: ignore[return-value]  # already an event (model_construct, copies)
    if not isinstance(raw, dict):
        raise ValueError(f"an event must be a JSON object, not {json_kind(raw)}")
    kind = raw.get("kind")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"kind: unknown event kind {kind!r}")
    data = {k: v for k, v in raw.items() if k != "kind"}
    if data.get("error") is not None:
        try:
            e = _ErrorRecord.model_validate(data["error"])
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"error.{_loc(first['loc'])}: {first['msg']}") from None
        data["error"] = RequestError(e.kind, e.message, e.status, e.retry_after_s)
    adapter = _ADAPTERS.get(kind)  # type: ignore[arg-type]
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(cls)  # type: ignore[index]
    try:
        parsed: RunEvent = adapter.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _loc(first["loc"]) or "event"
        raise ValueError(f"{where}: {first['msg']} ({kind} event)") from None
    # JSON from Python may hold NaN/Infinity (and 1e999 parses as inf): a time that is not
    # finite would hang a replay's clock and break the exports, so it is refused here.
    for f in dataclasses.fields(parsed):
        value = getattr(parsed, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{f.name}: must be a finite number, got {value!r} ({kind} event)")
        # a time since the run's origin, or a duration: never before it, never negative
        # (negated times replayed as "Combined -12.0 s" and exported negative durations)
        if f.name in _NOT_NEGATIVE and isinstance(value, int | float) and value < 0:
            raise ValueError(f"{f.name}: must be 0 or more seconds, got {value!r} ({kind} event)")
    return parsed


#: Event fields that are seconds since the run's origin (``t``) or durations (s).
_NOT_NEGATIVE = frozenset({"t", "connect_s", "delay_s"})


Event = Annotated[
    RunEvent,
    PlainValidator(_parse_event),
    PlainSerializer(event_to_json, return_type=dict),
]


class ProcessCpuRecord(_Strict):
    """One process's CPU over a run (:class:`~splitdesk.core.measure.client_cpu.ProcessCpu`)."""

    cpu_s: float = Field(ge=0)
    share: float = Field(ge=0)


class ClientCpuRecord(_Strict):
    """splitdesk's own CPU over a run (:class:`~splitdesk.core.measure.client_cpu.ClientCpu`,
    its ``to_json``) and whether the endpoint ran on this machine: a replay says what the
    live run said about its observer effect."""

    wall_s: float = Field(ge=0)
    cpus: int = Field(ge=1)
    machine_busy: float | None = Field(None, ge=0, le=1)
    processes: dict[str, ProcessCpuRecord | None] = Field(default_factory=dict)
    local_endpoint: bool = False

    @classmethod
    def of(cls, cpu: ClientCpu, local_endpoint: bool) -> ClientCpuRecord:
        """The record of ``cpu`` (rounded as the bench JSON rounds it)."""
        return cls.model_validate(cpu.to_json() | {"local_endpoint": local_endpoint})

    def figures(self) -> ClientCpu:
        """The figures again."""
        return ClientCpu(
            self.wall_s,
            {
                name: None if p is None else ProcessCpu(p.cpu_s, p.share)
                for name, p in self.processes.items()
            },
            self.cpus,
            self.machine_busy,
        )


class RunRecord(_Strict):
    """One run: its events in arrival order and what goes with them.

    ``events``: the run's events (:mod:`splitdesk.core.run.events`), ``t`` in seconds since
    the run's origin; ``started_at``: wall-clock time the run started (UTC);
    ``predictions``: the cost model's, one per request, or ``None``; ``figures``: the
    figures at save time (:func:`figures_of`), for readers of the file; ``server``: the
    server's own ``/metrics`` samples while the run went (running, waiting, KV use), or
    ``None`` (not polled, nothing published, or a file older than the field);
    ``client_cpu``: splitdesk's own CPU over the run (window runs; ``None`` in older files).
    """

    label: str
    mode: str
    repeat: int = 0
    started_at: datetime
    events: list[Event] = Field(min_length=1)
    predictions: list[PredictionRecord] | None = None
    figures: dict[str, Any] = Field(default_factory=dict)
    server: ServerSeriesRecord | None = None
    client_cpu: ClientCpuRecord | None = None

    @property
    def duration_s(self) -> float:
        """Seconds from the origin to the last event."""
        return max((e.t for e in self.events), default=0.0)


class Recording(_Strict):
    """A whole recording file (see the module docstring)."""

    format: Literal["splitdesk-recording"] = "splitdesk-recording"
    version: Literal[3] = 3
    app_version: str = Field(__version__, max_length=100)
    created_at: datetime
    source: Literal["window", "bench", "demo"]
    title: str = ""
    endpoint: EndpointRecord
    questions: list[QuestionRecord]
    template: CombinedTemplate = Field(default_factory=CombinedTemplate)
    settings: RunSettingsRecord
    runs: list[RunRecord] = Field(min_length=1)

    #: the format version of the file this came from when newer than :data:`FORMAT_VERSION`
    #: (read as far as this version knows it: :func:`known_only`)
    _newer: int | None = PrivateAttr(None)

    @property
    def read_only_note(self) -> str | None:
        """The one line to show when this came from a newer splitdesk's file (it is shown
        read-only, without what this version does not know), else ``None``."""
        return newer_note(self._newer) if self._newer is not None else None

    @property
    def question_texts(self) -> list[str]:
        return [q.text for q in self.questions]

    def describe(self) -> str:
        """``<endpoint>, <date>`` for a replay banner and window titles."""
        ep = self.endpoint
        where = f"built-in · {ep.profile}" if ep.preset == "builtin" and ep.profile else ep.url
        when = self.runs[0].started_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return f"{where} · {ep.model}, {when}"


# -- building ----------------------------------------------------------------------------------


def endpoint_record(
    url: str,
    api: str,
    model: str,
    *,
    preset: str | None = None,
    profile: str | None = None,
    speed: float | None = None,
    headers: Iterable[str] = (),
    secret: str | None = None,
) -> EndpointRecord:
    """An :class:`EndpointRecord` with ``url`` redacted (passwords, key-like query values
    and ``secret`` masked) and only the *names* of ``headers``."""
    return EndpointRecord(
        url=redact(url, secret),
        api=api,
        model=model,
        preset=preset,
        profile=profile,
        speed=speed,
        header_names=sorted(headers),
    )


def new_recording(
    source: Literal["window", "bench", "demo"],
    endpoint: EndpointRecord,
    questions: Sequence[str],
    titles: Sequence[str],
    template: CombinedTemplate,
    settings: RunSettingsRecord,
    runs: list[RunRecord],
    title: str | None = None,
) -> Recording:
    """The one way a :class:`Recording` is put together (the window's runs, ``splitdesk
    bench --record``, the demos): ``questions`` with their ``titles`` (the set's short
    labels; ``""`` or missing: derived from the text when shown), ``settings`` of the
    runs, and a ``title`` that by default names the mode and the number of questions
    ("one after another · 5 questions")."""
    named = list(titles) + [""] * max(0, len(questions) - len(titles))
    return Recording(
        created_at=datetime.now(UTC),
        source=source,
        title=title or f"{settings.mode.replace('-', ' ')} · {len(questions)} questions",
        endpoint=endpoint,
        questions=[QuestionRecord(text=q, title=t) for q, t in zip(questions, named, strict=False)],
        template=template,
        settings=settings,
        runs=runs,
    )


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _jsonable(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")  # caches, not figures
        }
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


def figures_of(state: RunState) -> dict[str, Any]:
    """The run's figures as JSON (seconds, tokens), from :mod:`splitdesk.core.analyse.metrics`:
    ``{"speedup": x|None, "groups": {group: GroupMetrics fields}, "requests": [{"req": i,
    "group": g, "questions": [..], "outcome": o, RequestMetrics fields except itl_s}]}``.
    Requests never sent have only their identity and outcome."""
    summary = summarize(state)
    requests = []
    for trace in state.requests:
        entry: dict[str, Any] = {
            "req": trace.req,
            "group": trace.group,
            "questions": list(trace.questions),
            "outcome": trace.outcome,
        }
        if trace.t_send is not None:
            m = _jsonable(request_metrics(trace))
            m.pop("itl_s", None)  # derivable from the events; would double the file
            entry.update(m)
        requests.append(entry)
    return {
        "speedup": None if summary.speedup is None else round(summary.speedup, 6),
        "groups": {name: _jsonable(g) for name, g in summary.groups.items()},
        "requests": requests,
    }


def run_record(
    state: RunState,
    *,
    label: str,
    mode: str,
    started_at: datetime,
    events: Sequence[RunEvent],
    repeat: int = 0,
    predictions: Sequence[Any] | None = None,
    server: ServerSeriesRecord | None = None,
    client_cpu: ClientCpuRecord | None = None,
) -> RunRecord:
    """A :class:`RunRecord` of ``events`` (the run's whole event list, in the order they
    were applied to ``state``). ``predictions``: objects with the fields of
    :class:`PredictionRecord` (e.g. :class:`splitdesk.core.analyse.predict.PredictedRequest`);
    ``server``: the server lane's samples
    (:func:`~splitdesk.core.measure.server_metrics.series_record`)."""
    preds = (
        None
        if predictions is None
        else [PredictionRecord.model_validate(dataclasses.asdict(p)) for p in predictions]
    )
    return RunRecord.model_construct(
        label=label,
        mode=mode,
        repeat=repeat,
        started_at=started_at,
        events=list(events),
        predictions=preds,
        figures=figures_of(state),
        server=server,
        client_cpu=client_cpu,
    )


class EventLog:
    """Keeps every event a :class:`RunState` applies, for a recording: subscribe
    :meth:`extend` (``state.subscribe_batch(log.extend)``) before the first event."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []
        self.started_at = datetime.now(UTC)

    def append(self, event: RunEvent) -> None:
        if not self.events:
            self.started_at = datetime.now(UTC)
        self.events.append(event)

    def extend(self, events: Sequence[RunEvent]) -> None:
        """Keep ``events`` (a batch :meth:`RunState.apply_all` applied), in order."""
        if events and not self.events:
            self.started_at = datetime.now(UTC)
        self.events.extend(events)


_LOGS: weakref.WeakKeyDictionary[RunState, EventLog] = weakref.WeakKeyDictionary()


def keep_events(state: RunState) -> EventLog:
    """Keep every event ``state`` applies from now on (call it before the first); the log
    is found again with :func:`events_of` for as long as the state lives."""
    log = EventLog()
    state.subscribe_batch(log.extend)
    _LOGS[state] = log
    return log


def events_of(state: RunState) -> EventLog | None:
    """The :class:`EventLog` :func:`keep_events` attached to ``state``, if any."""
    return _LOGS.get(state)


# -- state from a recording -----------------------------------------------------------------------


def schedule(run: RunRecord) -> list[float]:
    """When each event of ``run`` is due in a replay: its ``t``, never earlier than the
    event before it (events of different requests may carry slightly out-of-order arrival
    stamps; a replay keeps the recorded order). Seconds since the origin."""
    out: list[float] = []
    latest = 0.0
    for ev in run.events:
        latest = max(latest, ev.t)
        out.append(latest)
    return out


def predictions_of(run: RunRecord) -> list[PredictedRequest] | None:
    """The cost model's predictions recorded with ``run`` (index order), as the timeline,
    the summary and the figure exports take them; ``None`` when none were recorded."""
    if run.predictions is None:
        return None
    return [
        PredictedRequest(
            p.t_send_s,
            p.ttft_s,
            p.e2e_s,
            p.output_tokens,
            p.rejected,
            p.prompt_tokens,
            p.cached_prompt_tokens,
            p.queue_s,
            p.prefill_s,
        )
        for p in run.predictions
    ]


def plan_of(run: RunRecord) -> RunPlan:
    """The plan a recorded run followed, rebuilt from its ``request_planned`` events (one
    phase per phase index), so a replay builds its views as a live run does."""
    phases: dict[int, list[RequestSpec]] = {}
    for ev in run.events:
        if isinstance(ev, RequestPlanned):
            spec = RequestSpec(
                ev.group,
                ev.questions,
                ev.prompt,
                ev.max_tokens,
                system=ev.system,
                context_chars=ev.context_chars,
            )
            phases.setdefault(ev.phase, []).append(spec)
    mode = run.mode if run.mode in MODES else "side-by-side"
    return RunPlan(
        mode,
        tuple(
            Phase(
                str(k),
                tuple(specs),
                sequential=bool(specs) and specs[0].group == "sequential",
            )
            for k, specs in sorted(phases.items())
        ),
    )


def rebuild_state(run: RunRecord, until: float | None = None) -> RunState:
    """A fresh :class:`RunState` with the events of ``run`` applied, all of them or those
    due at or before ``until`` seconds (:func:`schedule`). Raises :class:`RecordingError`
    when the events are not a consistent run (e.g. an event about a request never planned)."""
    state = RunState()
    for i, (ev, due) in enumerate(zip(run.events, schedule(run), strict=True)):
        if until is not None and due > until:
            break
        try:
            state.apply(ev)
        except (IndexError, KeyError, ValueError, TypeError) as exc:
            raise RecordingError(f"events[{i}]: {exc}", f"events[{i}]") from None
    return state


def check_references(recording: Recording, name: str = "recording") -> None:
    """Check every cross-reference inside ``recording``, the one place they are checked
    (called when a file is read, before anything shows it): each run's
    events replay as a consistent run (:func:`rebuild_state`: every event about a request
    names a planned one, every plan and section a question the run asks); each question
    index a run's plan or sections name (``request_planned.questions``,
    ``section_started.question``) is one of the file's ``questions`` (what the panes show);
    each phase index (``request_planned.phase``, ``phase_started.phase``) is below its
    run's ``run_started.phases``. Raises
    :class:`RecordingError` naming ``name``, the field and the index: a hand-edited or
    damaged file is one line, never an ``IndexError`` in a view."""
    n = len(recording.questions)
    listed = f"0–{n - 1}" if n else "none"
    for k, run in enumerate(recording.runs):
        try:
            rebuild_state(run)
        except RecordingError as exc:
            raise RecordingError(f"{name}: runs[{k}].{exc}", f"runs[{k}].{exc.field}") from None
        phases: int | None = None
        for i, ev in enumerate(run.events):
            where = f"runs[{k}].events[{i}]"
            if isinstance(ev, RunStarted):
                phases = ev.phases
            named: tuple[int, ...] = ()
            if isinstance(ev, RequestPlanned):
                named = tuple(ev.questions)
            elif isinstance(ev, SectionStarted):
                named = (ev.question,)
            for q in named:
                if not 0 <= q < n:
                    raise RecordingError(
                        f"{name}: questions: the file lists {n} question(s) ({listed}), but "
                        f"{where} ({ev.kind}) names question {q}",
                        "questions",
                    )
            in_range = phases is None or 0 <= getattr(ev, "phase", 0) < phases
            if isinstance(ev, (RequestPlanned, PhaseStarted)) and not in_range:
                raise RecordingError(
                    f"{name}: {where}: {ev.kind} event about phase {ev.phase}, but the "
                    f"run has {phases} phase(s) (run_started.phases)",
                    f"{where}.phase",
                )


# -- migrations ------------------------------------------------------------------------------------


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 only added optional fields (:data:`FORMAT_VERSION`): nothing to change."""
    return data


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 only added an event kind (``connection``) and ``runs[].client_cpu``
    (optional, ``None`` when absent): nothing to change."""
    return data


#: ``MIGRATIONS[v]`` turns a version-``v`` document into a version ``v + 1`` one.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` brought up to :data:`FORMAT_VERSION`. A newer version is read as far as
    this one knows it (:func:`known_only`; the caller says so: :func:`newer_note`).
    Raises :class:`RecordingError` for a missing or unknown version."""
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise RecordingError(f"version: expected a whole number, got {version!r}", "version")
    if version > FORMAT_VERSION:
        data = known_only(Recording, data)
        data["version"] = FORMAT_VERSION
        return data
    if version < 1:
        raise RecordingError(f"version: {version} is not a recording version", "version")
    while version < FORMAT_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
        data["version"] = version
    return data


def newer_note(version: int) -> str:
    """The one line said when a recording of format ``version`` (newer than this
    splitdesk's) is opened: read-only, what it shows, how to see all of it."""
    return (
        f"recording format {version} is newer than this splitdesk ({__version__}) reads "
        f"(format {FORMAT_VERSION}): shown read-only, without what this version does not "
        "know; update splitdesk to see all of it"
    )


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (itself, in a list, or optional), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def known_only(model: type[BaseModel], data: Any) -> Any:
    """``data`` (a document of ``model``'s shape from a newer splitdesk) without the keys
    ``model`` does not know, at every depth, and without events of kinds this version does
    not know: what a newer file holds that this version can show."""
    if not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        if key == "events" and isinstance(value, list):
            out[key] = [e for e in value if isinstance(e, dict) and e.get("kind") in EVENT_TYPES]
            continue
        inner = _model_of(field.annotation)
        if inner is not None and isinstance(value, list):
            out[key] = [known_only(inner, v) for v in value]
        elif inner is not None:
            out[key] = known_only(inner, value)
        else:
            out[key] = value
    return out


# -- reading and writing -----------------------------------------------------------------------


def encode_recording(recording: Recording, secrets: Iterable[str | None] = ()) -> bytes:
    """The recording as UTF-8 JSON bytes (not compressed). Any of ``secrets`` (API keys)
    that shows up anywhere in the text — a server echoing a key into an answer — is masked
    as ``***``: a recording never holds a key."""
    text = json.dumps(recording.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
    for secret in secrets:
        if secret and secret.strip():
            for form in {secret, secret.strip()}:
                text = text.replace(json.dumps(form, ensure_ascii=False)[1:-1], "***")
    return text.encode("utf-8")


def suggested_name(recording: Recording, size: int | None = None) -> str:
    """A file name for ``recording``: ``splitdesk-<UTC time>-<title>`` (its title as a
    slug of at most 48 characters: a scenario's run is named after the scenario, "single-
    slot-server"; else its mode and size, "one-after-another-5-questions"), plus
    :data:`GZ_SUFFIX` when ``size`` (encoded bytes) is above :data:`GZIP_ABOVE`, else
    :data:`SUFFIX`."""
    when = recording.runs[0].started_at.astimezone(UTC).strftime("%Y%m%d-%H%M%S")
    words = "".join(c.lower() if c.isalnum() else " " for c in recording.title).split()
    slug = "-".join(words)[:48].rstrip("-") or "".join(
        c if c.isalnum() else "-" for c in recording.settings.mode
    )
    suffix = GZ_SUFFIX if size is not None and size > GZIP_ABOVE else SUFFIX
    return f"splitdesk-{when}-{slug}{suffix}"


def save_recording(
    recording: Recording,
    path: Path,
    *,
    compress: bool | None = None,
    secrets: Iterable[str | None] = (),
) -> int:
    """Write ``recording`` to ``path`` atomically (a temporary file in the same folder,
    flushed to disk, then ``os.replace``: a crash mid-save leaves the old file or none,
    never half a file). ``compress``: gzip; by default when ``path`` ends in ``.gz``.
    ``secrets``: see :func:`encode_recording`. Returns the bytes written. Blocks: call it off
    the GUI thread. Raises :class:`RecordingError` (message names the path) on OSError."""
    data = encode_recording(recording, secrets)
    if compress is None:
        compress = path.name.endswith(".gz")
    return _write_atomic(path, gzip.compress(data, compresslevel=6, mtime=0) if compress else data)


def _write_atomic(path: Path, data: bytes) -> int:
    try:
        return write_atomic(path, data)
    except OSError as exc:
        raise RecordingError(f"{path}: could not save: {exc.strerror or exc}") from None


# -- the auto-save folder ----------------------------------------------------------------------

#: The auto-save folder keeps at most this many recordings and this many bytes (the oldest
#: go first).
AUTOSAVE_MAX_FILES = 100
AUTOSAVE_MAX_BYTES = 200 * 1024 * 1024


def data_dir() -> Path:
    """The user's data folder for splitdesk (``platformdirs``; override with the
    ``SPLITDESK_DATA_DIR`` environment variable)."""
    override = os.environ.get("SPLITDESK_DATA_DIR")
    return Path(override) if override else platformdirs.user_data_path("splitdesk")


def autosave_dir() -> Path:
    """Where every run is saved automatically: ``<data folder>/recordings``."""
    return data_dir() / "recordings"


def is_recording_name(name: str) -> bool:
    """Whether a file name has a recording's suffix."""
    return name.endswith((SUFFIX, GZ_SUFFIX))


def autosave(
    recording: Recording,
    folder: Path | None = None,
    *,
    secrets: Iterable[str | None] = (),
    max_files: int = AUTOSAVE_MAX_FILES,
    max_bytes: int = AUTOSAVE_MAX_BYTES,
) -> Path:
    """Save ``recording`` into ``folder`` (default :func:`autosave_dir`), gzip-compressed
    when large (:func:`suggested_name`), then delete the oldest recordings there beyond
    ``max_files`` files or ``max_bytes`` bytes (the new one always stays). Returns the new
    file's path. Blocks (call it off the GUI thread); raises :class:`RecordingError`."""
    folder = folder or autosave_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RecordingError(f"{folder}: could not create: {exc.strerror or exc}") from None
    data = encode_recording(recording, secrets)
    name = suggested_name(recording, len(data))
    path = folder / name
    stem = name.removesuffix(GZ_SUFFIX).removesuffix(SUFFIX)
    suffix = name[len(stem) :]
    k = 2
    while path.exists():
        path = folder / f"{stem}-{k}{suffix}"
        k += 1
    if suffix == GZ_SUFFIX:
        data = gzip.compress(data, compresslevel=6, mtime=0)
    _write_atomic(path, data)
    prune(folder, max_files, max_bytes, keep=path)
    return path


def prune(folder: Path, max_files: int, max_bytes: int, keep: Path | None = None) -> list[Path]:
    """Delete the oldest recordings in ``folder`` (by modification time) until at most
    ``max_files`` remain and they hold at most ``max_bytes`` bytes; ``keep`` is never
    deleted. Returns the deleted paths. Files that vanish meanwhile are skipped."""
    entries: list[tuple[float, int, Path]] = []
    for p in folder.iterdir():
        if not is_recording_name(p.name):
            continue
        with contextlib.suppress(OSError):
            st = p.stat()
            entries.append((st.st_mtime, st.st_size, p))
    entries.sort(key=lambda e: (e[2] != keep, -e[0]))  # keep first, then newest first
    removed: list[Path] = []
    count = total = 0
    for _, size, p in entries:
        if p == keep or (count < max_files and total + size <= max_bytes):
            count += 1
            total += size
            continue
        with contextlib.suppress(OSError):
            p.unlink()
            removed.append(p)
    return removed


def _read_bytes(path: Path) -> bytes:
    name = str(path)
    try:
        if path.is_dir():
            raise RecordingError(f"{name}: is a folder, not a recording file")
        raw = read_bounded(path, MAX_FILE_BYTES, "a recording", name)
    except FileTooLargeError as exc:
        raise RecordingError(str(exc)) from None
    except FileNotFoundError:
        raise RecordingError(f"{name}: no such file") from None
    except PermissionError:
        raise RecordingError(f"{name}: no permission to read it") from None
    except OSError as exc:
        raise RecordingError(f"{name}: could not read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise RecordingError(f"{name}: the file is empty")
    if raw[:2] == _GZIP_MAGIC:
        d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            out = d.decompress(raw, MAX_JSON_BYTES)
            if d.unconsumed_tail:
                raise RecordingError(
                    f"{name}: unpacks to more than {MAX_JSON_BYTES // (1024 * 1024)} MB"
                )
            if not d.eof:
                raise RecordingError(f"{name}: the compressed file is truncated (cut short)")
        except zlib.error as exc:
            raise RecordingError(f"{name}: the compressed data is damaged ({exc})") from None
        raw = out
        if not raw.strip():
            raise RecordingError(f"{name}: the file is empty")
    return raw


def parse_recording(raw: bytes, name: str = "recording") -> Recording:
    """A :class:`Recording` from the (uncompressed) bytes of a file; ``name`` prefixes
    messages. Raises :class:`RecordingError` naming what is wrong and where."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordingError(
            f"{name}: not a recording: not UTF-8 text (byte {exc.start}); "
            "expected a .splitdesk.json file"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            raise RecordingError(
                f"{name}: the file is truncated: the JSON ends early "
                f"(line {exc.lineno}, column {exc.colno})"
            ) from None
        raise RecordingError(
            f"{name}: not a recording: not valid JSON at line {exc.lineno}, "
            f"column {exc.colno} ({exc.msg})"
        ) from None
    except RecursionError:
        raise RecordingError(f"{name}: not a recording: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise RecordingError(f"{name}: the file holds {json_kind(data)}, not a recording object")
    if data.get("format") != FORMAT:
        raise RecordingError(
            f'{name}: format: not a splitdesk recording (expected "format": "{FORMAT}", '
            f"got {data.get('format')!r})",
            "format",
        )
    given = data.get("version")
    try:
        data = migrate(data)
    except RecordingError as exc:
        raise RecordingError(f"{name}: {exc}", exc.field) from None
    newer = isinstance(given, int) and not isinstance(given, bool) and given > FORMAT_VERSION
    try:
        recording = Recording.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        where = _loc(first["loc"])
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        value = ""
        if first["type"] not in ("missing", "value_error") and "input" in first:
            value = f", got {json_shown(first['input'])}"  # as the file spells it: null, true
        msg = first["msg"].removeprefix("Value error, ")
        if newer:  # say the versions first: the field may be new rather than wrong
            raise RecordingError(
                f"{name}: version: recording format {given} is newer than this splitdesk "
                f"({__version__}) reads (format {FORMAT_VERSION}), and the part it knows "
                f"cannot be shown ({where}: {msg}{value}{more}); update splitdesk to open it",
                "version",
            ) from None
        raise RecordingError(f"{name}: {where}: {msg}{value}{more}", where) from None
    check_references(recording, name)
    if newer and isinstance(given, int):
        recording._newer = given
    return recording


def load_recording(path: Path) -> Recording:
    """Read, unpack (gzip by magic bytes), migrate and validate the recording at ``path``.
    Blocks: call it off the GUI thread. Raises :class:`RecordingError`, whose message
    names the file and what is wrong (field path for a bad field)."""
    return parse_recording(_read_bytes(path), str(path))


def recording_from_bytes(data: bytes, name: str = "recording") -> Recording:
    """:func:`parse_recording` for bytes that may be gzip-compressed."""
    if data[:2] == _GZIP_MAGIC:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                data = f.read(MAX_JSON_BYTES + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise RecordingError(f"{name}: the compressed data is damaged ({exc})") from None
    return parse_recording(data, name)
