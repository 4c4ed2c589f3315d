"""The engine process's pipe protocol as typed, validated messages (pydantic).

The window (:class:`splitdesk.core.measure.engine.EngineProcess`) and the engine process
(:mod:`splitdesk.core.measure.engine_worker`) exchange one JSON document per line:

* commands, window → engine (stdin): :class:`RunCommand` (``{"cmd": "run", "run": 1,
  "config": …, "questions": […], "plan": …, "gated": true}``), :class:`ReleaseCommand`
  and :class:`CancelCommand` (``{"cmd": "release"|"cancel", "run": 1}``);
* lines, engine → window (stdout): :class:`Ready` once (``{"ready": true}``), then per
  run :class:`EventLine` (``{"run": 1, "event": {"kind": "request_sent", …}}``, one run
  event of :mod:`splitdesk.core.run.events`), :class:`TextsLine` (``{"run": 1, "texts":
  [[t, req, "text", reasoning], …]}``: the text events of a few milliseconds, in order, as
  rows — the event of every token, thousands a second, in one line and one validation)
  and :class:`EndLine` (``{"run": 1, "end": true, "error": null}``) when it is over.

Both directions go through :data:`COMMAND` / :data:`LINE` (pydantic ``TypeAdapter`` s):
``dump`` on one side, ``validate_json`` on the other, so a field renamed on one side fails
loudly instead of reading as a missing key. Events are validated straight into their
frozen dataclasses; a run event's ``kind`` picks its class. Measured cost: a few
microseconds per event line each way (``benchmarks/ui_load.py`` exercises it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Tag,
    TypeAdapter,
    ValidationError,
    field_serializer,
)

from splitdesk.core.measure.runner import RunConfig
from splitdesk.core.run.events import (
    EVENT_TYPES,
    ConnectionOpened,
    HeadersReceived,
    PhaseStarted,
    RequestEnded,
    RequestPlanned,
    RequestRetrying,
    RequestSent,
    RunEnded,
    RunEvent,
    RunStarted,
    SectionEnded,
    SectionStarted,
    ServerTimings,
    TextReceived,
    ToolCallReceived,
    UsageReported,
    event_to_json,
)
from splitdesk.core.run.plans import RunPlan

__all__ = [
    "COMMAND",
    "LINE",
    "CancelCommand",
    "Command",
    "EndLine",
    "EventLine",
    "Line",
    "ProtocolError",
    "Ready",
    "ReleaseCommand",
    "RunCommand",
    "TextsLine",
    "decode_command",
    "decode_line",
    "encode",
    "encode_event",
    "encode_text_row",
    "texts_line",
]


class ProtocolError(ValueError):
    """A line that is not a message of this protocol (the text says which field)."""


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunCommand(_Message):
    """Start run ``run``: send ``plan`` (built for ``questions``) with ``config``. With
    ``gated``, the first request waits for a :class:`ReleaseCommand`. ``config`` holds the
    API key: this pipe is the only place it travels."""

    cmd: Literal["run"] = "run"
    run: int
    config: RunConfig
    questions: list[str]
    plan: RunPlan
    gated: bool = False


class ReleaseCommand(_Message):
    """Let gated run ``run`` send its first requests."""

    cmd: Literal["release"] = "release"
    run: int


class CancelCommand(_Message):
    """Stop run ``run`` (its streams end as ``stopped``)."""

    cmd: Literal["cancel"] = "cancel"
    run: int


Command = Annotated[RunCommand | ReleaseCommand | CancelCommand, Discriminator("cmd")]
COMMAND: TypeAdapter[Command] = TypeAdapter(Command)


def _event_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        kind = value.get("kind")
        return kind if isinstance(kind, str) else None
    return getattr(value, "kind", None)


#: Any run event, its class chosen by ``kind`` (the dataclasses of :mod:`.events`).
AnyEvent = Annotated[
    Annotated[RunStarted, Tag("run_started")]
    | Annotated[RequestPlanned, Tag("request_planned")]
    | Annotated[RequestSent, Tag("request_sent")]
    | Annotated[HeadersReceived, Tag("headers")]
    | Annotated[ConnectionOpened, Tag("connection")]
    | Annotated[TextReceived, Tag("text")]
    | Annotated[ToolCallReceived, Tag("tool_call")]
    | Annotated[UsageReported, Tag("usage")]
    | Annotated[ServerTimings, Tag("server_timings")]
    | Annotated[SectionStarted, Tag("section_started")]
    | Annotated[SectionEnded, Tag("section_ended")]
    | Annotated[RequestRetrying, Tag("retrying")]
    | Annotated[RequestEnded, Tag("request_ended")]
    | Annotated[PhaseStarted, Tag("phase_started")]
    | Annotated[RunEnded, Tag("run_ended")],
    Discriminator(_event_kind),
]


class Ready(_Message):
    """The engine process is up and reads commands."""

    ready: Literal[True] = True


class EventLine(_Message):
    """One event of run ``run``; ``event`` serialises with its ``kind``. (The event
    dataclasses inherit this model's config: ``extra="ignore"`` lets their ``kind`` key,
    which chose the class, through; every field is still checked.)"""

    model_config = ConfigDict(frozen=True, extra="ignore")

    run: int
    event: AnyEvent

    @field_serializer("event")
    def _event_with_kind(self, event: RunEvent) -> dict[str, Any]:
        # the dataclasses keep `kind` as a ClassVar, which pydantic does not dump
        return event_to_json(event)


class TextsLine(_Message):
    """Text events of run ``run`` in arrival order, one row each: ``(t, req, text,
    reasoning)`` — the fields of :class:`~splitdesk.core.run.events.TextReceived`. The
    engine sends the text events of a few milliseconds as one line (:func:`texts_line`):
    one pipe write, one read and one validation for dozens of token events, and no
    per-event object but the event itself on the window's side (:meth:`events`). Events
    of other kinds travel as :class:`EventLine` between batches, so a run's order holds."""

    run: int
    texts: list[tuple[float, int, str, bool]]

    def events(self) -> list[TextReceived]:
        """The rows as :class:`~splitdesk.core.run.events.TextReceived` events, in order."""
        return [TextReceived(t, req, text, reasoning) for t, req, text, reasoning in self.texts]


class EndLine(_Message):
    """Run ``run`` is over; ``error``: why it broke, when it did (shown to the user)."""

    run: int
    end: Literal[True] = True
    error: str | None = None
    #: ``RunConfig.capture_raw``: each request's reads, ``(arrival_ns, base64)``
    #: (:func:`splitdesk.core.analyse.stream_inspector.encode_raw`)
    raw: dict[int, list[tuple[int, str]]] | None = None


def _line_kind(value: Any) -> str:
    if isinstance(value, dict):
        if "ready" in value:
            return "ready"
        if "texts" in value:
            return "texts"
        return "end" if "end" in value else "event"
    if isinstance(value, Ready):
        return "ready"
    if isinstance(value, TextsLine):
        return "texts"
    return "end" if isinstance(value, EndLine) else "event"


Line = Annotated[
    Annotated[Ready, Tag("ready")]
    | Annotated[EventLine, Tag("event")]
    | Annotated[TextsLine, Tag("texts")]
    | Annotated[EndLine, Tag("end")],
    Discriminator(_line_kind),
]
LINE: TypeAdapter[Line] = TypeAdapter(Line)

assert set(EVENT_TYPES) == {
    "run_started", "request_planned", "request_sent", "headers", "text", "tool_call", "usage",
    "server_timings", "section_started", "section_ended", "retrying", "request_ended",
    "phase_started", "run_ended", "connection",
}  # fmt: skip  # every event kind has its tag above


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "message"
    return f"{where}: {first['msg']}"


def decode_command(data: bytes | str) -> Command:
    """The command on one line. Raises :class:`ProtocolError` naming the bad field."""
    try:
        return COMMAND.validate_json(data)
    except ValidationError as exc:
        raise ProtocolError(_problem(exc)) from None


def decode_line(data: bytes | str) -> Line:
    """The message on one output line. Raises :class:`ProtocolError` naming the bad field."""
    try:
        return LINE.validate_json(data)
    except ValidationError as exc:
        raise ProtocolError(_problem(exc)) from None


def encode(
    message: RunCommand | ReleaseCommand | CancelCommand | Ready | EventLine | TextsLine | EndLine,
) -> bytes:
    """One message as a JSON line body (no newline)."""
    return message.__pydantic_serializer__.to_json(message)


#: the JSON string of a str, non-ASCII kept (what ``json.dumps(..., ensure_ascii=False)``
#: does for a str, without its Python-level layers)
_json_text: Callable[[str], str] = json.encoder.encode_basestring
_TEXT_LINE = '{"run":%d,"event":{"kind":"text","t":%r,"req":%d,"text":%s,"reasoning":%s}}'


def encode_event(run: int, event: RunEvent) -> bytes:
    """``encode(EventLine(run=run, event=event))``, faster for the event of every token.

    A :class:`~splitdesk.core.run.events.TextReceived` line is formatted directly (a fraction
    of the cost of building and serialising the model, thousands of times a second): the
    same keys in the same order, its text JSON-escaped as pydantic escapes it, its time in
    Python's shortest round-trip form (a time under 10⁻⁴ s may read ``1.2e-05`` where
    pydantic writes ``0.000012``: the same float). :func:`decode_line` reads both alike.
    Every other event, and a text that is not valid Unicode (a lone surrogate: it fails
    there as it does in pydantic), goes through :func:`encode`.
    """
    if type(event) is TextReceived and type(event.req) is int and math.isfinite(event.t):
        try:
            return (
                _TEXT_LINE
                % (
                    run,
                    event.t,
                    event.req,
                    _json_text(event.text),
                    "true" if event.reasoning else "false",
                )
            ).encode()
        except (UnicodeEncodeError, TypeError):
            pass
    return encode(EventLine(run=run, event=event))


_TEXT_ROW = "[%r,%d,%s,%s]"


def encode_text_row(event: RunEvent) -> bytes | None:
    """One row of a :class:`TextsLine` for ``event`` (``[t,req,"text",reasoning]``, the
    text JSON-escaped as :func:`encode_event` escapes it), or ``None`` when it cannot be
    one: another kind of event, a time that is not finite, or a text that is not valid
    Unicode (a lone surrogate) — send those with :func:`encode_event`, which fails on a
    lone surrogate as pydantic does."""
    if type(event) is TextReceived and type(event.req) is int and math.isfinite(event.t):
        try:
            return (
                _TEXT_ROW
                % (
                    event.t,
                    event.req,
                    _json_text(event.text),
                    "true" if event.reasoning else "false",
                )
            ).encode()
        except (UnicodeEncodeError, TypeError):
            return None
    return None


def texts_line(run: int, rows: list[bytes]) -> bytes:
    """The :class:`TextsLine` of run ``run`` holding ``rows`` (from
    :func:`encode_text_row`, in order), as a line body (no newline); it decodes as
    ``TextsLine(run=run, texts=…)``."""
    return b'{"run":%d,"texts":[%s]}' % (run, b",".join(rows))
