"""The run event model: everything that happens in a run, as a flat list of events.

A live run (:class:`splitdesk.core.measure.runner.Runner`) emits these; a recording stores them and
a replay re-emits them on their own timestamps. :class:`splitdesk.core.run.run_state.RunState`
applies them and the views observe the state, so a replay drives the same views as a live
run. Nothing downstream needs the network.

Times: ``t`` is seconds since the run's origin (``RunStarted.t0_ns``, a
``time.perf_counter_ns()`` value taken just before the first request is handed to the HTTP
client); every event carries the time its bytes arrived, never a paint time. ``req`` is
the request's index in the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from splitdesk.providers.base import ErrorKind, RequestError

Group = Literal["combined", "parallel", "sequential"]
Outcome = Literal["done", "failed", "stopped"]


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run begins. ``mode``: the plan's mode; ``questions``: texts in order;
    ``endpoint``: url, api, model (never a key); ``t0_ns``: the origin of every ``t``."""

    kind: ClassVar[str] = "run_started"
    t: float
    mode: str
    questions: tuple[str, ...]
    endpoint: dict[str, str]
    t0_ns: int
    phases: int = 1
    marker: str = "Answer {k}:"


@dataclass(frozen=True, slots=True)
class RequestPlanned:
    """A request of the run, before it is sent. ``questions``: 0-based indices it asks;
    ``phase``: which phase of the plan (phases run one after another, each from its own t=0
    on the timeline); ``prompt``: the user message; ``system``: the system message the
    shared context went into (``None``: none); ``context_chars``: characters of the
    shared context the request carries (0: no shared context)."""

    kind: ClassVar[str] = "request_planned"
    t: float
    req: int
    group: Group
    questions: tuple[int, ...]
    prompt: str
    phase: int = 0
    max_tokens: int | None = None
    system: str | None = None
    context_chars: int = 0


@dataclass(frozen=True, slots=True)
class RequestSent:
    """The request was handed to the HTTP client (``t_send``)."""

    kind: ClassVar[str] = "request_sent"
    t: float
    req: int
    attempt: int = 0


@dataclass(frozen=True, slots=True)
class HeadersReceived:
    """Response headers arrived (TTFB). ``connect_s``: TCP(+TLS) connect time, when a new
    connection was made; ``request_id``: the server's ``x-request-id``."""

    kind: ClassVar[str] = "headers"
    t: float
    req: int
    status: int
    request_id: str | None = None
    connect_s: float | None = None


@dataclass(frozen=True, slots=True)
class ConnectionOpened:
    """The request's connection was opened before its phase (warm connections,
    ``RunConfig.warm_connections``): the warm-up began at ``started`` and the server
    answered on the new connection at ``t`` (seconds from the run origin); ``connect_s``:
    the TCP(+TLS) connect time within it, when the transport told. Between the two the
    connection also waited for the server to take it up (a server whose connection
    handlers are all busy accepts it late)."""

    kind: ClassVar[str] = "connection"
    t: float
    req: int
    started: float
    connect_s: float | None = None


@dataclass(frozen=True, slots=True)
class TextReceived:
    """Visible output arrived: answer text, or reasoning text when ``reasoning``."""

    kind: ClassVar[str] = "text"
    t: float
    req: int
    text: str
    reasoning: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallReceived:
    """Tool-call activity arrived (no visible text)."""

    kind: ClassVar[str] = "tool_call"
    t: float
    req: int
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class UsageReported:
    """The server reported token usage (cumulative: the last report of each count wins;
    ``None``: not in this report). ``cached_prompt_tokens``: the part of the prompt the
    server read from its prefix cache."""

    kind: ClassVar[str] = "usage"
    t: float
    req: int
    output_tokens: int | None
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ServerTimings:
    """The server's own timing report, seconds and token counts (Ollama's durations;
    llama.cpp's ``timings``: ``prompt_eval_s``, ``eval_s``, ``prompt_n``, ``cache_n``,
    ``predicted_n``; the built-in endpoint's ``queue_s``)."""

    kind: ClassVar[str] = "server_timings"
    t: float
    req: int
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SectionStarted:
    """Answer ``question`` (0-based) began in request ``req``'s text at char ``offset``."""

    kind: ClassVar[str] = "section_started"
    t: float
    req: int
    question: int
    offset: int
    body_offset: int


@dataclass(frozen=True, slots=True)
class SectionEnded:
    """Answer ``question`` ended (``t``: its last non-blank text) at char ``offset``."""

    kind: ClassVar[str] = "section_ended"
    t: float
    req: int
    question: int
    offset: int


@dataclass(frozen=True, slots=True)
class RequestRetrying:
    """A 429 answered the request; it is sent again after ``delay_s`` (backoff)."""

    kind: ClassVar[str] = "retrying"
    t: float
    req: int
    attempt: int
    delay_s: float
    error: RequestError


@dataclass(frozen=True, slots=True)
class RequestEnded:
    """The request is over (``t``: the stream's end, apart from the last token's time).

    ``outcome``: ``done``, ``failed`` (``error`` says why) or ``stopped`` by the user.
    Text received before stays valid in every case.
    """

    kind: ClassVar[str] = "request_ended"
    t: float
    req: int
    outcome: Outcome
    finish_reason: str | None = None
    error: RequestError | None = None


@dataclass(frozen=True, slots=True)
class PhaseStarted:
    """Phase ``phase`` of the plan begins (its requests are about to be sent)."""

    kind: ClassVar[str] = "phase_started"
    t: float
    phase: int
    group: str


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The run is over; ``stopped`` when the user stopped it."""

    kind: ClassVar[str] = "run_ended"
    t: float
    stopped: bool = False


RunEvent = (
    RunStarted
    | RequestPlanned
    | RequestSent
    | HeadersReceived
    | ConnectionOpened
    | TextReceived
    | ToolCallReceived
    | UsageReported
    | ServerTimings
    | SectionStarted
    | SectionEnded
    | RequestRetrying
    | RequestEnded
    | PhaseStarted
    | RunEnded
)

EVENT_TYPES: dict[str, type[Any]] = {
    cls.kind: cls
    for cls in (
        RunStarted,
        RequestPlanned,
        RequestSent,
        HeadersReceived,
        ConnectionOpened,
        TextReceived,
        ToolCallReceived,
        UsageReported,
        ServerTimings,
        SectionStarted,
        SectionEnded,
        RequestRetrying,
        RequestEnded,
        PhaseStarted,
        RunEnded,
    )
}


_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def event_to_json(event: RunEvent) -> dict[str, Any]:
    """A JSON-ready dict of ``event`` with its ``kind`` (for recordings, logs and the
    engine process's pipe). Built field by field: ``dataclasses.asdict`` deep-copies and
    costs several times more, thousands of times a second."""
    cls = type(event)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(cls.__dataclass_fields__)
    data = {name: getattr(event, name) for name in names}
    data["kind"] = event.kind
    err = data.get("error")
    if isinstance(err, RequestError):
        data["error"] = err.to_json()
    timings = data.get("timings")
    if isinstance(timings, dict):
        data["timings"] = dict(timings)
    return data


def event_from_json(data: dict[str, Any]) -> RunEvent:
    """Inverse of :func:`event_to_json`. Raises ``KeyError``/``TypeError`` for bad data."""
    data = dict(data)
    cls = EVENT_TYPES[data.pop("kind")]
    if isinstance(data.get("error"), dict):
        e = data["error"]
        data["error"] = RequestError(
            ErrorKind(e["kind"]), e["message"], e.get("status"), e.get("retry_after_s")
        )
    for key in ("questions",):
        if isinstance(data.get(key), list):
            data[key] = tuple(data[key])
    event: RunEvent = cls(**data)
    return event
