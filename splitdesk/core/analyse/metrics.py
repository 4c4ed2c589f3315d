"""Metrics of a run, one definition everywhere (DESIGN.md "Metrics"); seconds throughout.

:func:`request_figures` is THE per-request figure set (state, TTFT, attempt TTFT, time to
first answer token, tokens and their source, tok/s, E2E, retries and back-offs) and
:func:`group_figures` / :func:`summarize` the group's (makespan, speed-up, all answers
started, tokens). Both are computed in O(1) from the traces that
:class:`~splitdesk.core.run.run_state.RunState` builds as events arrive, and cached until the
next event: panes and the timeline read them every frame; the summary, the bench table and
the bench JSON read the same objects. Views never compute a figure.

Per request, every time is measured from the request's own ``t_send`` (monotonic clock,
taken just before the request is handed to the HTTP client):

* **TTFB** — response headers received.
* **connect time** (``connect_s``) — the TCP(+TLS) connect inside the request's own time
  (cold connections), where the transport reported one. With warm connections the
  connection is opened before the phase: its connect time is ``connection_connect_s`` and
  the **connection wait** (``connection_wait_s``) runs from the warm-up's start until the
  server answered on the new connection (connect, the wait to be taken up by a busy
  server, its model list's answer).
* **TTFT** — from the *first* send (what the user waited, 429 round trips and back-offs
  included) to the first event carrying *visible* output: non-empty answer or reasoning text.
  A role-only or empty first chunk does not count; tool-call deltas do not count either
  (their first time is kept apart); a reply with no visible text has no TTFT (``None``).
  This is the first-token definition of vLLM's benchmark (``benchmark_serving.py``) and
  NVIDIA AIPerf/GenAI-Perf ("time to first token: time between sending the request and
  receiving the first response with non-empty content").
* **Attempt TTFT** — the same first event, from the send of the attempt that was answered
  (equal to TTFT unless a 429 made the runner send the request again): the server's own
  time to first token, comparable across requests. Retries follow RFC 9110 §10.2.3
  (``Retry-After``: how long to wait before a follow-up request); the wait counts as the
  user's, as in a client that retries inside its call (the OpenAI SDK honours
  ``Retry-After`` and the caller's timer runs through it).
* **TTFT (answer)** — first non-empty *answer* text, reasoning excluded.
* **E2E latency** — the last token-carrying event (AIPerf "request latency" ends at the
  final response; we end at the last token so a slow ``[DONE]`` does not count). The
  stream's end (terminal event or close) is reported apart as ``stream_end``.
* **ITL** — gaps between successive output-carrying events (vLLM ``itl``: "inter-token
  latency"; one event may carry several tokens).
* **TPOT** — ``(E2E − TTFT) / (output_tokens − 1)`` (vLLM ``tpot``: time per output token
  excluding the first). GenAI-Perf and AIPerf call this "inter token latency": compare
  measurement points, not names.
* **prompt_tokens** / **cached_prompt_tokens** — the server's usage figures (``None`` when
  it reports none): the whole prompt, and the part it read from its prefix cache instead of
  computing (OpenAI ``prompt_tokens_details.cached_tokens``, Anthropic
  ``cache_read_input_tokens``, llama.cpp ``cache_n``; see the providers). **computed
  prompt tokens** = prompt − cached: what the server prefilled.
* **TTFT split** (:class:`TtftSplit`) — TTFT as ``queue`` (the server: reaching its engine
  → joining the batch), ``prefill`` (the server: joining → the step that emitted the first
  token) and the ``rest`` (network, HTTP, what the server does not account for), each
  where the server reports it (llama.cpp's ``timings.prompt_ms``, Ollama's
  ``prompt_eval_duration``, the built-in endpoint's ``queue_ms``); ``None`` parts are not
  reported, and ``rest`` is then what is left. The prefill is placed on the timeline
  ending at the first token's arrival (:attr:`RequestFigures.prefill_span`): the step that
  finishes the prompt emits the first token, so its arrival ends the prefill, give or take
  the network's one-way time.
* **output_tokens** — the server's usage figure when it reports one (last cumulative value,
  ``tokens_source = "usage"``), else the number of output-carrying events
  (``tokens_source = "events"``). A count is an *estimate* only when it is an event count
  of a request that carried output (``tokens_estimated``): a failed request that sent
  nothing has 0 tokens, not an estimated 0.

Per group of requests (combined / parallel / sequential):

* **makespan** — last token of any request minus the earliest ``t_send`` (AIPerf
  "benchmark duration"); a retried request's first send counts, so the wait is kept.
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

from splitdesk.core.run.events import Group, Outcome
from splitdesk.core.run.run_state import RequestStateName as RequestStateName
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.providers.base import RequestError

TokensSource = Literal["usage", "events"]


@dataclass(frozen=True)
class SectionTiming:
    """Answer ``question`` inside a combined reply: seconds from the request's ``t_send``."""

    question: int
    start_s: float
    end_s: float | None


@dataclass(frozen=True)
class Backoff:
    """One wait between a 429 and the next attempt (seconds from the run origin).

    ``attempt``: the attempt it precedes (1 = the first retry); ``start``: when the 429's
    stream ended; ``end``: when the next attempt was sent (``None`` while waiting);
    ``retry_after_s``: the server's ``Retry-After`` it obeyed (``None``: no header, an
    exponential back-off of ``delay_s``); ``status`` and ``message``: the refusal.
    """

    attempt: int
    start: float
    end: float | None
    delay_s: float
    retry_after_s: float | None
    status: int | None
    message: str

    @property
    def label(self) -> str:
        """How the wait is named on the timeline and in panes: ``Retry-After 2 s`` or
        ``back-off 1 s`` (no header)."""
        if self.retry_after_s is not None:
            return f"Retry-After {self.retry_after_s:g} s"
        return f"back-off {self.delay_s:g} s"


@dataclass(frozen=True)
class TtftSplit:
    """A request's TTFT in parts (seconds; module docstring): ``queue_s`` and ``prefill_s``
    as the server reports them (``None``: not reported), ``rest_s`` the TTFT minus the
    reported parts (never below 0)."""

    ttft_s: float
    queue_s: float | None
    prefill_s: float | None

    @property
    def rest_s(self) -> float:
        """TTFT minus the parts the server reported."""
        return max(0.0, self.ttft_s - (self.queue_s or 0.0) - (self.prefill_s or 0.0))

    @property
    def server_s(self) -> float | None:
        """Queue plus prefill: the server's time before the first token (``None`` when it
        reports no prefill)."""
        if self.prefill_s is None:
            return None
        return self.prefill_s + (self.queue_s or 0.0)


#: server-timing keys of a prefill's duration and of a wait in the server's queue
#: (:class:`~splitdesk.core.run.events.ServerTimings`)
PREFILL_KEY, QUEUE_KEY = "prompt_eval_s", "queue_s"


def ttft_split(trace: RequestTrace, ttft_s: float | None) -> TtftSplit | None:
    """The :class:`TtftSplit` of a request whose TTFT is ``ttft_s`` (``None``: no TTFT, no
    split), from the server's own timings (``prompt_eval_s``, ``queue_s``)."""
    if ttft_s is None:
        return None
    timings = trace.server_timings
    prefill = timings.get(PREFILL_KEY)
    queue = timings.get(QUEUE_KEY)
    return TtftSplit(
        ttft_s,
        None if queue is None else min(queue, ttft_s),
        None if prefill is None else min(prefill, ttft_s),
    )


@dataclass(frozen=True)
class RequestFigures:
    """The figure set of one request (module docstring), live: ``None`` until observed.

    Run-origin times (seconds since the run origin): ``t_conn_start`` / ``t_conn_ready``
    (the connection's warm-up began / the server answered on it, warm connections only;
    :attr:`connection_wait_s` is the time between), ``t_send`` (first send),
    ``t_attempt_send`` (the latest attempt's send), ``t_first_output`` (first token-carrying
    event, visible text or tool call), ``t_last_token``. Every ``*_s`` duration is from
    ``t_send`` except ``attempt_ttft_s`` (from ``t_attempt_send``).

    ``e2e_s`` is the last token so far while streaming. ``output_tokens`` /
    ``tokens_source``: usage when reported, else the event count; ``tokens_estimated``:
    that count is an estimate (an event count of a request that carried output).
    ``backoffs``: every wait after a 429, in order (``retries`` counts them).
    """

    req: int
    group: Group
    questions: tuple[int, ...]
    state: RequestStateName
    outcome: Outcome | None
    t_send: float | None
    t_attempt_send: float | None
    t_first_output: float | None
    t_last_token: float | None
    attempts: int
    backoffs: tuple[Backoff, ...]
    ttfb_s: float | None
    ttft_s: float | None
    attempt_ttft_s: float | None
    ttft_answer_s: float | None
    first_tool_call_s: float | None
    e2e_s: float | None
    stream_end_s: float | None
    connect_s: float | None
    tpot_s: float | None
    output_tokens: int
    tokens_source: TokensSource
    decode_tok_s: float | None
    events: int
    sections: tuple[SectionTiming, ...] = ()
    error: RequestError | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    context_chars: int = 0
    split: TtftSplit | None = None
    t_conn_start: float | None = None
    t_conn_ready: float | None = None
    #: the TCP(+TLS) connect time of the connection's warm-up (``connect_s``: the request's)
    connection_connect_s: float | None = None
    _times: Sequence[float] = field(default=(), repr=False, compare=False)

    @property
    def computed_prompt_tokens(self) -> int | None:
        """Prompt tokens the server computed (prefilled): prompt − cached (all of the prompt
        when the server reports no cached count); ``None`` without a prompt count."""
        if self.prompt_tokens is None:
            return None
        return max(0, self.prompt_tokens - (self.cached_prompt_tokens or 0))

    @property
    def prefill_span(self) -> tuple[float, float] | None:
        """(start, end) of the server's prefill in run-origin seconds, ending at the first
        output's arrival (module docstring); ``None`` when the server reports no prefill."""
        if self.split is None or self.split.prefill_s is None or self.t_first_output is None:
            return None
        return (self.t_first_output - self.split.prefill_s, self.t_first_output)

    @property
    def connection_wait_s(self) -> float | None:
        """How long the request's connection took before the server answered on it
        (seconds, warm connections only: the warm-up's start to its answer's headers, the
        TCP connect and the wait to be taken up by the server included); ``None`` when
        the connection was not opened ahead of the request."""
        if self.t_conn_start is None or self.t_conn_ready is None:
            return None
        return self.t_conn_ready - self.t_conn_start

    @property
    def finished(self) -> bool:
        """The request is over (done, failed or stopped)."""
        return self.outcome is not None

    @property
    def retries(self) -> int:
        """How many times a 429 made the runner send this request again."""
        return len(self.backoffs)

    @property
    def tokens_estimated(self) -> bool:
        """``output_tokens`` is an event count standing in for a usage figure."""
        return self.tokens_source == "events" and self.output_tokens > 0

    @property
    def itl_s(self) -> tuple[float, ...]:
        """Gaps between successive output-carrying events (computed on read: O(events))."""
        times = self._times[: self.events]
        return tuple(b - a for a, b in itertools.pairwise(times))


# The per-request cache: trace → (trace.version, figures). A trace's version changes with
# every event about it (RunState.apply), so a cached set is current while versions match.
_CACHE_ATTR = "_figures_cache"


def _since(t: float | None, origin: float | None) -> float | None:
    return None if t is None or origin is None else t - origin


def tokens_per_event(trace: RequestTrace) -> float:
    """Output tokens one text-carrying event of ``trace`` stands for: the server's reported
    usage spread evenly over the request's events, else 1 (each event counted as a token,
    the estimate the figure set uses without usage). The one definition the tokens chart,
    the diagnosis's per-stream decode rates and the Perfetto trace's throughput track read."""
    events = len(trace.event_times)
    if trace.usage_output_tokens is not None and events:
        return trace.usage_output_tokens / events
    return 1.0


def request_figures(trace: RequestTrace) -> RequestFigures:
    """The figure set of ``trace`` as of the events applied so far (module docstring).

    O(1) and cached until the next event about the request, so views may call it every
    frame. Works for a request that was never sent (its figures are ``None`` / 0).
    """
    cached = getattr(trace, _CACHE_ATTR, None)
    if cached is not None and cached[0] == trace.version:
        figures: RequestFigures = cached[1]
        return figures
    figures = _compute(trace)
    setattr(trace, _CACHE_ATTR, (trace.version, figures))
    return figures


def _backoffs(trace: RequestTrace) -> tuple[Backoff, ...]:
    out = []
    for r in trace.retries:
        nxt = trace.send_times[r.attempt] if r.attempt < len(trace.send_times) else None
        out.append(
            Backoff(
                r.attempt,
                r.t,
                nxt,
                r.delay_s,
                r.error.retry_after_s,
                r.error.status,
                r.error.message,
            )
        )
    return tuple(out)


def _compute(trace: RequestTrace) -> RequestFigures:
    t0 = trace.t_send
    t_attempt = trace.t_attempt_send
    times = trace.event_times
    events = len(times)
    source: TokensSource
    if trace.usage_output_tokens is not None:
        tokens, source = trace.usage_output_tokens, "usage"
    else:
        tokens, source = events, "events"
    first_text = trace.first_text_t
    firsts = [t for t in (first_text, trace.first_tool_t) if t is not None]
    ttft = _since(first_text, t0)
    e2e = _since(trace.last_token_t, t0)
    tpot = None
    decode_rate = None
    if ttft is not None and e2e is not None and tokens > 1 and e2e > ttft:
        tpot = (e2e - ttft) / (tokens - 1)
        decode_rate = (tokens - 1) / (e2e - ttft)
    sections: tuple[SectionTiming, ...] = ()
    if trace.sections and t0 is not None:
        sections = tuple(
            SectionTiming(s.question, s.start_t - t0, _since(s.end_t, t0))
            for s in sorted(trace.sections.values(), key=lambda s: s.question)
        )
    state = trace.state
    return RequestFigures(
        req=trace.req,
        group=trace.group,
        questions=trace.questions,
        state=state,
        outcome=trace.outcome,
        t_send=t0,
        t_attempt_send=t_attempt,
        t_first_output=min(firsts) if firsts else None,
        t_last_token=trace.last_token_t,
        attempts=trace.attempts,
        backoffs=_backoffs(trace) if trace.retries else (),
        ttfb_s=_since(trace.t_headers, t0),
        ttft_s=ttft,
        attempt_ttft_s=_since(first_text, t_attempt),
        ttft_answer_s=_since(trace.first_answer_t, t0),
        first_tool_call_s=_since(trace.first_tool_t, t0),
        e2e_s=e2e,
        stream_end_s=_since(trace.t_end, t0),
        connect_s=trace.connect_s,
        tpot_s=tpot,
        output_tokens=tokens,
        tokens_source=source,
        decode_tok_s=decode_rate,
        events=events,
        sections=sections,
        error=trace.error,
        finish_reason=trace.finish_reason,
        prompt_tokens=trace.usage_prompt_tokens,
        cached_prompt_tokens=trace.usage_cached_prompt_tokens,
        context_chars=trace.context_chars,
        split=ttft_split(trace, ttft),
        t_conn_start=trace.t_conn_start,
        t_conn_ready=trace.t_conn_ready,
        connection_connect_s=trace.conn_connect_s,
        _times=times,
    )


#: The figure set under its earlier name (bench JSON and tests use both).
RequestMetrics = RequestFigures


def request_metrics(trace: RequestTrace) -> RequestFigures:
    """:func:`request_figures` of a request that was sent. Raises ``ValueError`` if it was
    never sent."""
    if trace.t_send is None:
        raise ValueError(f"request {trace.req} was never sent")
    return request_figures(trace)


@dataclass(frozen=True)
class GroupMetrics:
    """Figures of the requests of one group (one phase of a plan).

    ``origin``: earliest ``t_send`` (seconds from the run origin); ``makespan_s``: last token
    minus origin (``None`` when no token arrived); ``answer_start_s[q]``: when answer ``q``
    started, seconds from ``origin``; ``all_started_s``: the latest of those when every
    answer started; ``ttft_s``: each sent request's TTFT (from its first send), request
    order; ``output_tokens``: sum over requests; ``counted_requests``: requests that
    carried output; ``estimated_requests``: the requests whose count is an estimate
    (``tokens_estimated``: any is); ``finished``: requests
    over; ``first_ttft_s``: the first-sent request's TTFT; ``retries``: 429 retries in all.
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
    estimated_requests: tuple[int, ...] = ()
    finished: int = 0
    first_ttft_s: float | None = None
    retries: int = 0
    counted_requests: int = 0
    prompt: PromptTokens | None = None

    @property
    def estimated_note(self) -> str:
        """Which counts are estimates, in words: ``""`` (none), ``"all estimated"`` or
        ``"2 of 5 estimated"`` (of the requests that carried output)."""
        k = len(self.estimated_requests)
        if not k:
            return ""
        n = self.counted_requests
        return "all estimated" if k == n else f"{k} of {n} estimated"

    @property
    def ttft_range_s(self) -> tuple[float, float] | None:
        """(lowest, highest) TTFT of the group's requests, ``None`` before any."""
        return (min(self.ttft_s), max(self.ttft_s)) if self.ttft_s else None


@dataclass(frozen=True)
class PromptTokens:
    """What one side's prompts cost the server (tokens, from usage; module docstring).

    ``prompt``: Σ prompt tokens over the ``reported`` requests (of ``requests`` sent);
    ``cached``: Σ cached prompt tokens over the ``cached_reported`` requests that said how
    many (``None`` when none did); ``computed``: Σ (prompt − cached) over the reported
    requests (a request that reported no cached count counts its whole prompt);
    ``context_chars``: the shared context's length in characters each request carried (0:
    none); ``prefill_s``: each reporting request's prefill time (server timings), request
    order."""

    requests: int
    reported: int
    prompt: int
    cached: int | None
    cached_reported: int
    computed: int
    context_chars: int = 0
    prefill_s: tuple[float, ...] = ()

    @property
    def complete(self) -> bool:
        """Every sent request reported its prompt tokens."""
        return self.requests > 0 and self.reported == self.requests


def prompt_tokens(per: Sequence[RequestFigures]) -> PromptTokens | None:
    """The :class:`PromptTokens` of a side's sent requests ``per``; ``None`` when none was
    sent or none reported a prompt count."""
    sent = [f for f in per if f.t_send is not None]
    reported = [f for f in sent if f.prompt_tokens is not None]
    if not reported:
        return None
    cached = [f.cached_prompt_tokens for f in reported if f.cached_prompt_tokens is not None]
    return PromptTokens(
        requests=len(sent),
        reported=len(reported),
        prompt=sum(f.prompt_tokens or 0 for f in reported),
        cached=sum(cached) if cached else None,
        cached_reported=len(cached),
        computed=sum(f.computed_prompt_tokens or 0 for f in reported),
        context_chars=max((f.context_chars for f in sent), default=0),
        prefill_s=tuple(
            f.split.prefill_s for f in sent if f.split is not None and f.split.prefill_s is not None
        ),
    )


#: The group figure set under its own name (:class:`GroupMetrics` is the same class).
GroupFigures = GroupMetrics


def group_metrics(traces: Sequence[RequestTrace], group: str, n_questions: int) -> GroupMetrics:
    """Figures of ``traces`` (the requests of one group; see :class:`GroupMetrics`), read
    from each request's :func:`request_figures`."""
    per = [request_figures(t) for t in traces]
    sent = [f for f in per if f.t_send is not None]
    failed = sum(1 for f in per if f.outcome == "failed")
    stopped = sum(1 for f in per if f.outcome == "stopped")
    finished = sum(1 for f in per if f.finished)
    if not sent:
        return GroupMetrics(group, len(per), failed, stopped, None, None, (), finished=finished)
    origin = min(f.t_send for f in sent if f.t_send is not None)
    lasts = [f.t_last_token for f in sent if f.t_last_token is not None]
    makespan = max(lasts) - origin if lasts else None
    starts: dict[int, float] = {}
    for trace, f in zip(traces, per, strict=True):
        if f.t_send is None:
            continue
        if len(f.questions) == 1 and trace.first_answer_t is not None:
            starts[f.questions[0]] = trace.first_answer_t - origin
        for span in trace.sections.values():
            starts.setdefault(span.question, span.start_t - origin)
    all_started = max(starts.values()) if len(starts) == n_questions and starts else None
    tokens = sum(f.output_tokens for f in sent)
    estimated = tuple(f.req for f in sent if f.tokens_estimated)
    first = min(sent, key=lambda f: (f.t_send, f.req))
    return GroupMetrics(
        group=group,
        requests=len(per),
        failed=failed,
        stopped=stopped,
        origin=origin,
        makespan_s=makespan,
        ttft_s=tuple(f.ttft_s for f in sent if f.ttft_s is not None),
        answer_start_s=starts,
        all_started_s=all_started,
        output_tokens=tokens,
        tokens_estimated=bool(estimated),
        throughput_tok_s=tokens / makespan if makespan else None,
        estimated_requests=estimated,
        finished=finished,
        first_ttft_s=first.ttft_s,
        retries=sum(f.retries for f in per),
        counted_requests=sum(1 for f in sent if f.output_tokens > 0),
        prompt=prompt_tokens(per),
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


_SUMMARY_ATTR = "_summary_cache"


def summarize(state: RunState) -> RunSummary:
    """Group figures and speed-up of a run (groups present in ``state`` only); cached
    until the next event is applied."""
    cached = getattr(state, _SUMMARY_ATTR, None)
    if cached is not None and cached[0] == state.events_applied:
        summary: RunSummary = cached[1]
        return summary
    n = len(state.info.questions) if state.info else 0
    groups: dict[str, GroupMetrics] = {}
    names: tuple[Group, ...] = ("combined", "parallel", "sequential")
    for name in names:
        traces = state.group(name)
        if traces:
            groups[name] = group_metrics(traces, name, n)
    summary = RunSummary(groups, speedup(groups.get("combined"), groups.get("parallel")))
    setattr(state, _SUMMARY_ATTR, (state.events_applied, summary))
    return summary


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


def context_prompt_tokens(state: RunState) -> int | None:
    """What a server counted for the shared context, as near as usage allows: the median
    prompt tokens of the run's single-question requests that carried the context (each
    prompt is the context plus one question and the run's opening line), from the parallel
    side, else the sequential one; ``None`` when no such request reported prompt tokens
    (the editor then keeps its estimate, :func:`splitdesk.core.run.template.estimated_tokens`)."""
    for group in ("parallel", "sequential"):
        counts = [
            t.usage_prompt_tokens
            for t in state.requests
            if t.group == group and t.context_chars and t.usage_prompt_tokens is not None
        ]
        if counts:
            return int(statistics.median(counts))
    return None
