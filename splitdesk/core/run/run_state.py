"""A run's state as plain Python: the traces built from its events, observable.

:class:`RunState` is the one place where events become traces. Live runs and replays feed
it the same events; the window's panes, timeline and summary subscribe and only render
(napari's model/view split). Listeners are called synchronously on the thread that calls
:meth:`RunState.apply`; views mark themselves dirty there and repaint on their own
throttle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from splitdesk.core.run.events import (
    ConnectionOpened,
    Group,
    HeadersReceived,
    Outcome,
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
)
from splitdesk.providers.base import RequestError

#: A request's live state (pane headers, :class:`~splitdesk.core.analyse.metrics.RequestFigures`).
RequestStateName = Literal[
    "planned", "waiting", "retrying", "streaming", "done", "failed", "stopped"
]


@dataclass
class SectionSpan:
    """Where answer ``question`` sits in a combined reply: seconds from the run origin
    (``end_t`` None while open) and character offsets into the reply's text."""

    question: int
    start_t: float
    offset: int
    body_offset: int
    end_t: float | None = None
    end_offset: int | None = None


@dataclass
class RequestTrace:
    """Everything observed about one request; times are seconds from the run origin.

    ``t_send``: the first send; ``send_times``: every attempt's send (one more per retry
    after a 429); ``event_times``: arrival of each event that carried visible text (answer
    or reasoning); ``last_token_t``: the last token-carrying event, tool calls included;
    ``t_end``: the stream's end (terminal event or close), recorded apart.
    """

    req: int
    group: Group
    questions: tuple[int, ...]
    prompt: str
    phase: int = 0
    max_tokens: int | None = None
    system: str | None = None
    context_chars: int = 0
    t_send: float | None = None
    attempts: int = 0
    send_times: list[float] = field(default_factory=list)
    t_headers: float | None = None
    status: int | None = None
    request_id: str | None = None
    connect_s: float | None = None
    #: the warm-up of its connection (``ConnectionOpened``): began, the server answered,
    #: and the TCP(+TLS) connect time within it (``connect_s`` is the request's own)
    t_conn_start: float | None = None
    t_conn_ready: float | None = None
    conn_connect_s: float | None = None
    text_parts: list[str] = field(default_factory=list)
    reasoning_parts: list[str] = field(default_factory=list)
    event_times: list[float] = field(default_factory=list)
    first_text_t: float | None = None
    first_answer_t: float | None = None
    first_tool_t: float | None = None
    last_token_t: float | None = None
    text_len: int = 0
    usage_output_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    usage_cached_prompt_tokens: int | None = None
    server_timings: dict[str, float] = field(default_factory=dict)
    sections: dict[int, SectionSpan] = field(default_factory=dict)
    retries: list[RequestRetrying] = field(default_factory=list)
    finish_reason: str | None = None
    error: RequestError | None = None
    outcome: Outcome | None = None
    t_end: float | None = None
    #: Bumped by :meth:`RunState.apply` for every event about this request: a cache of
    #: figures derived from the trace (:func:`splitdesk.core.analyse.metrics.request_figures`)
    #: is valid while the version it was computed at is current.
    version: int = 0

    @property
    def t_attempt_send(self) -> float | None:
        """When the latest attempt was sent (seconds from the run origin): ``t_send``
        unless a 429 made the runner send the request again."""
        return self.send_times[-1] if self.send_times else None

    @property
    def text(self) -> str:
        """The answer text so far (views read ``text_parts`` incrementally instead)."""
        return "".join(self.text_parts)

    @property
    def reasoning_text(self) -> str:
        """The reasoning text so far."""
        return "".join(self.reasoning_parts)

    @property
    def finished(self) -> bool:
        return self.outcome is not None

    @property
    def state(self) -> RequestStateName:
        """Live state for a pane header: ``planned``, ``waiting`` (sent, no token yet),
        ``streaming``, ``retrying``, ``done``, ``failed`` or ``stopped``."""
        if self.outcome is not None:
            return self.outcome
        if self.t_send is None:
            return "planned"
        if self.retries and self.attempts <= self.retries[-1].attempt:
            return "retrying"
        if self.first_text_t is None and self.first_tool_t is None:
            return "waiting"
        return "streaming"


Listener = Callable[[RunEvent], None]
#: Called once per batch of events (:meth:`RunState.apply_all`), after all of it is applied.
BatchListener = Callable[[Sequence[RunEvent]], None]


class RunState:
    """The state of one run, built by :meth:`apply`-ing its events in order.

    ``requests[i]`` is request ``i``'s :class:`RequestTrace`. Subscribe with
    :meth:`subscribe`; listeners get every event after it has been applied. A view that
    only needs to know *that* something changed subscribes with :meth:`subscribe_batch`:
    it is called once per :meth:`apply_all` (a live run's drain: a frame's events, dozens
    to hundreds at 64 streams) with the events, after all of them are applied — not once
    per token.
    """

    def __init__(self) -> None:
        self.info: RunStarted | None = None
        self.requests: list[RequestTrace] = []
        self.phase_starts: dict[int, float] = {}
        self.ended: RunEnded | None = None
        self.events_applied = 0
        self._listeners: list[Listener] = []
        self._batch_listeners: list[BatchListener] = []
        #: Where "now" is, in seconds since the run's origin, for views that draw a run
        #: still in progress: ``None`` reads the monotonic clock (a live run); a replay
        #: sets its playback position here.
        self.clock: Callable[[], float] | None = None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` after each applied event; returns an unsubscribe function."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def subscribe_batch(self, listener: BatchListener) -> Callable[[], None]:
        """Call ``listener(events)`` after each batch of events is applied (one event for
        :meth:`apply`); returns an unsubscribe function."""
        self._batch_listeners.append(listener)
        return lambda: (
            self._batch_listeners.remove(listener) if listener in self._batch_listeners else None
        )

    def group(self, group: Group) -> list[RequestTrace]:
        """The requests of ``group``, in index order."""
        return [r for r in self.requests if r.group == group]

    @property
    def finished(self) -> bool:
        return self.ended is not None

    def now(self) -> float | None:
        """Seconds since the run's origin now (:attr:`clock`), ``None`` before it started."""
        if self.clock is not None:
            return self.clock()
        if self.info is None:
            return None
        return (time.perf_counter_ns() - self.info.t0_ns) / 1e9

    def apply(self, event: RunEvent) -> None:
        """Update the state with ``event`` and notify listeners. Raises ``IndexError``
        naming the event and the index for an event about a request that was never planned
        or a question the run does not ask (a damaged or hand-edited recording)."""
        req = getattr(event, "req", None)
        if req is not None and not isinstance(event, RequestPlanned):
            self._check_req(event, req)
        self._apply(event)
        self.events_applied += 1
        if req is not None:
            self.requests[req].version += 1
        for listener in list(self._listeners):
            listener(event)
        for batch_listener in list(self._batch_listeners):
            batch_listener((event,))

    def apply_all(self, events: Sequence[RunEvent]) -> None:
        """:meth:`apply` each of ``events`` in order (each event's listeners as it is
        applied), then tell the batch listeners once. Raises as :meth:`apply`; the events
        before the bad one stay applied and the batch listeners hear of them."""
        if not events:
            return
        done = 0
        try:
            for event in events:
                if type(event) is TextReceived:  # the hot path: a token, checked inline
                    if not 0 <= event.req < len(self.requests):
                        self._check_req(event, event.req)
                    self._apply(event)
                    self.requests[event.req].version += 1
                else:
                    req = getattr(event, "req", None)
                    if req is not None and not isinstance(event, RequestPlanned):
                        self._check_req(event, req)
                    self._apply(event)
                    if req is not None:
                        self.requests[req].version += 1
                self.events_applied += 1
                done += 1
                if self._listeners:
                    for listener in list(self._listeners):
                        listener(event)
        finally:
            if done:
                applied = events if done == len(events) else events[:done]
                for batch_listener in list(self._batch_listeners):
                    batch_listener(applied)

    def _check_req(self, ev: RunEvent, req: int) -> None:
        """Raise ``IndexError`` unless request ``req`` was planned (a negative index too:
        Python's lists would take it from the end)."""
        if not 0 <= req < len(self.requests):
            planned = f"0–{len(self.requests) - 1}" if self.requests else "none yet"
            raise IndexError(
                f"{ev.kind} event about request {req}, which was never planned "
                f"(requests planned: {planned})"
            )

    def _check_question(self, ev: RunEvent, question: int) -> None:
        """Raise ``IndexError`` unless ``question`` is one the run asks (0-based; checked
        once the run has started and says its questions)."""
        n = len(self.info.questions) if self.info is not None else None
        if question < 0 or (n is not None and question >= n):
            asked = f"0–{n - 1}" if n else "none"
            raise IndexError(
                f"{ev.kind} event about question {question}, which the run does not ask "
                f"(its questions: {asked})"
            )

    def _apply(self, ev: RunEvent) -> None:
        if isinstance(ev, TextReceived):  # the hot path first
            r = self.requests[ev.req]
            if ev.reasoning:
                r.reasoning_parts.append(ev.text)
            else:
                r.text_parts.append(ev.text)
                r.text_len += len(ev.text)
                if r.first_answer_t is None:
                    r.first_answer_t = ev.t
            if r.first_text_t is None:
                r.first_text_t = ev.t
            r.event_times.append(ev.t)
            r.last_token_t = ev.t
        elif isinstance(ev, RequestPlanned):
            if ev.req != len(self.requests):
                raise IndexError(f"request {ev.req} planned out of order")
            for q in ev.questions:
                self._check_question(ev, q)
            self.requests.append(
                RequestTrace(
                    ev.req,
                    ev.group,
                    ev.questions,
                    ev.prompt,
                    ev.phase,
                    ev.max_tokens,
                    ev.system,
                    ev.context_chars,
                )
            )
        elif isinstance(ev, RequestSent):
            r = self.requests[ev.req]
            if r.t_send is None:
                r.t_send = ev.t
            r.attempts = ev.attempt + 1
            r.send_times.append(ev.t)
        elif isinstance(ev, HeadersReceived):
            r = self.requests[ev.req]
            r.t_headers, r.status, r.request_id = ev.t, ev.status, ev.request_id
            if ev.connect_s is not None:
                r.connect_s = ev.connect_s
        elif isinstance(ev, ConnectionOpened):
            r = self.requests[ev.req]
            r.t_conn_start, r.t_conn_ready = ev.started, ev.t
            r.conn_connect_s = ev.connect_s
        elif isinstance(ev, ToolCallReceived):
            r = self.requests[ev.req]
            if r.first_tool_t is None:
                r.first_tool_t = ev.t
            r.last_token_t = ev.t
        elif isinstance(ev, UsageReported):
            r = self.requests[ev.req]
            if ev.output_tokens is not None:
                r.usage_output_tokens = ev.output_tokens
            if ev.prompt_tokens is not None:
                r.usage_prompt_tokens = ev.prompt_tokens
            if ev.cached_prompt_tokens is not None:
                r.usage_cached_prompt_tokens = ev.cached_prompt_tokens
        elif isinstance(ev, SectionStarted):
            self._check_question(ev, ev.question)
            self.requests[ev.req].sections[ev.question] = SectionSpan(
                ev.question, ev.t, ev.offset, ev.body_offset
            )
        elif isinstance(ev, SectionEnded):
            span = self.requests[ev.req].sections.get(ev.question)
            if span is not None:
                span.end_t, span.end_offset = ev.t, ev.offset
        elif isinstance(ev, ServerTimings):
            self.requests[ev.req].server_timings.update(ev.timings)
        elif isinstance(ev, RequestRetrying):
            self.requests[ev.req].retries.append(ev)
        elif isinstance(ev, RequestEnded):
            r = self.requests[ev.req]
            r.outcome, r.t_end, r.error = ev.outcome, ev.t, ev.error
            if ev.finish_reason:
                r.finish_reason = ev.finish_reason
        elif isinstance(ev, RunStarted):
            self.info = ev
        elif isinstance(ev, PhaseStarted):
            self.phase_starts[ev.phase] = ev.t
        elif isinstance(ev, RunEnded):
            self.ended = ev
