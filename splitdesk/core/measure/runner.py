"""The runner: sends a plan's requests, timestamps every streamed event where its bytes
arrive, and emits the run's events (:mod:`splitdesk.core.run.events`).

Per run, a fresh ``httpx.AsyncClient`` on HTTP/1.1 with a connection pool large enough for
every request at once and explicit timeouts: connect, and a read timeout *between reads*
that defaults to minutes (httpx's default of 5 s would kill a slow prefill). The client is
closed at the end of the run and never reused after a Stop (cancelled streams can leave
pool slots behind).

The runner never waits on its observer: ``emit`` is called synchronously and must return
at once (``RunState.apply`` in ``splitdesk bench``; a thread-safe deque append in the GUI,
see :mod:`splitdesk.core.measure.engine`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import anyio._backends._asyncio  # noqa: F401 - see below
import httpx

from splitdesk.core.measure import arrivals, responses
from splitdesk.core.measure.errors import classify_transport_error as classify_transport_error
from splitdesk.core.measure.netenv import client_settings
from splitdesk.core.measure.urls import base_url_problem
from splitdesk.core.measure.urls import check_url as check_url
from splitdesk.core.run.events import (
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
)
from splitdesk.core.run.plans import RequestSpec, RunPlan, chain_prompt
from splitdesk.core.run.redaction import redact as redact
from splitdesk.core.run.sections import SectionParser, SectionStart
from splitdesk.logs import register_secret
from splitdesk.providers import get_provider
from splitdesk.providers.base import (
    EndpointConfig,
    ErrorDelta,
    ErrorKind,
    FinishDelta,
    GenParams,
    Provider,
    RequestError,
    ServerTimingDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from splitdesk.providers.retry_after import MAX_RETRY_AFTER_S
from splitdesk.providers.stream import iter_deltas, read_capped

#: After a stream's finish reason, how long splitdesk waits for its usage and its end
#: before it takes a stream the server keeps open as ended (s; :meth:`Runner._consume`).
FINISH_TAIL_S = 2.0

# httpcore imports anyio lazily, on the first request of the process: ~70 ms that would be
# charged to the first request's TTFB and TTFT. Importing it here moves that cost out of
# every measurement.

Emit = Callable[[RunEvent], None]
Clock = Callable[[], int]


@dataclass(frozen=True)
class Timeouts:
    """HTTP timeouts in seconds. ``read`` is the longest silence allowed between two reads
    of a stream (a long prefill or a slow model needs minutes, not httpx's 5 s)."""

    connect: float = 10.0
    read: float = 300.0
    write: float = 30.0
    pool: float = 60.0

    def httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.write, pool=self.pool)


@dataclass(frozen=True)
class RunConfig:
    """How a run talks to its endpoint.

    ``retry_429``: automatic retries of a request answered 429 (0: none), waiting the
    server's ``Retry-After`` or an exponential backoff from ``backoff_s``.

    ``warm_connections``: before each phase, open as many keep-alive connections as the
    phase sends requests, with cheap concurrent GETs of the dialect's model list. TCP and
    TLS setup (and the first-use costs of the HTTP stack, ~2 ms per connection on loopback
    and far more with TLS) then stay out of TTFT, which measures the server, as warm-up
    runs do in vLLM's and AIPerf's benchmarks. Off: every request opens its own connection
    inside its measured time (its ``connect_s`` says how long that took).

    ``release``: ``"barrier"`` builds every request of a phase, then sends them together;
    ``"as-scheduled"`` lets each send as soon as the event loop runs its task, as a plain
    script does (:mod:`splitdesk.core.measure.client_pattern`).
    """

    endpoint: EndpointConfig
    temperature: float | None = None
    seed: int | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    marker: str = "Answer {k}:"
    retry_429: int = 0
    backoff_s: float = 1.0
    warm_connections: bool = True
    release: str = "barrier"
    #: keep every response's raw reads with their arrival times in ``Runner.raw`` (the
    #: stream inspector, :mod:`splitdesk.core.analyse.stream_inspector`); off by default
    capture_raw: bool = False


class _RawTap(httpx.AsyncByteStream):
    """A response body stream that also appends each read, stamped by ``clock``, to
    ``sink`` (``RunConfig.capture_raw``)."""

    def __init__(self, inner: Any, sink: list[tuple[int, bytes]], clock: Clock) -> None:
        self.inner = inner
        self.sink = sink
        self.clock = clock

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.sink.append((self.clock(), bytes(chunk)))
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _tapped(
    body: AsyncGenerator[bytes, None], sink: list[tuple[int, bytes]], clock: Clock
) -> AsyncGenerator[bytes, None]:
    """``body``'s reads, each also appended to ``sink`` stamped by ``clock`` (the
    :class:`_RawTap` of a body read directly: ``arrivals.direct_body``); closing it
    closes ``body``."""
    async with contextlib.aclosing(body):
        async for chunk in body:
            sink.append((clock(), bytes(chunk)))
            yield chunk


def _transports(client: httpx.AsyncClient) -> list[httpx.AsyncHTTPTransport]:
    """The client's transports (its default one and the proxy mounts from the environment)."""
    found = [client._transport, *client._mounts.values()]
    return [t for t in found if isinstance(t, httpx.AsyncHTTPTransport)]


class _HttpTrace:
    """httpcore's ``trace`` extension hook: connect and response-header times."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.connect_started: int | None = None
        self.connected: int | None = None
        self.headers: int | None = None

    async def __call__(self, name: str, info: dict[str, Any]) -> None:
        if name == "connection.connect_tcp.started":
            self.connect_started = self.clock()
        elif name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self.connected = self.clock()
        elif name == "http11.receive_response_headers.complete":
            self.headers = self.clock()


class Runner:
    """Executes :class:`~splitdesk.core.run.plans.RunPlan` s against one endpoint.

    ``emit`` receives every event (module docstring). :meth:`run` returns when the run is
    over, however it ends; :meth:`cancel` (call it on the runner's own event loop) stops
    every stream at once, keeping what arrived.
    """

    def __init__(
        self,
        config: RunConfig,
        emit: Emit,
        clock: Clock = time.perf_counter_ns,
        start_gate: asyncio.Event | None = None,
    ) -> None:
        self.config = config
        self.emit = emit
        self.clock = clock
        self.provider: Provider = get_provider(config.endpoint.api)
        #: When set, the first request waits for this event (after the planned events and
        #: the connection warm-up): a window builds its panes first, so that work does not
        #: compete with the measurement.
        self.start_gate = start_gate
        self._t0 = 0
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False
        #: True when this run's responses are stamped where the event loop received them
        #: (:mod:`splitdesk.core.measure.arrivals`), not after parsing.
        self.arrival_stamps = False
        #: ``capture_raw``: request index → its answered attempt's ``(arrival_ns, bytes)``
        self.raw: dict[int, list[tuple[int, bytes]]] = {}
        self._ended: set[int] = set()
        self._models_lock = asyncio.Lock()
        self._models_note: str | None = None
        #: Answer text received per request index, for chained phases (core/plans.py).
        self._answers: dict[int, list[str]] = {}

    def _s(self, ns: int) -> float:
        return (ns - self._t0) / 1e9

    def now(self) -> float:
        """Seconds since the run origin."""
        return self._s(self.clock())

    def cancel(self) -> None:
        """Stop the run: every stream ends now as ``stopped`` with its partial trace. Before
        :meth:`run` starts, it makes the run stop at once."""
        self._cancel_requested = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def run(self, questions: list[str], plan: RunPlan) -> None:
        """Send ``plan`` (built for ``questions``) and emit its events. Never raises for
        request failures: they become ``RequestEnded(outcome="failed")`` events."""
        self._task = asyncio.current_task()
        ep = self.config.endpoint
        for secret in ep.secrets:  # never in a log record of this process either
            register_secret(secret)
        specs = plan.requests
        self._t0 = self.clock()
        self.emit(
            RunStarted(
                0.0,
                plan.mode,
                tuple(questions),
                {"url": redact(ep.base_url, ep.secrets), "api": ep.api, "model": ep.model},
                self._t0,
                len(plan.phases),
                self.config.marker,
            )
        )
        index = 0
        phase_of: list[tuple[int, RequestSpec]] = []
        for p, phase in enumerate(plan.phases):
            for spec in phase.requests:
                self.emit(
                    RequestPlanned(
                        0.0,
                        index,
                        spec.group,
                        spec.questions,
                        spec.prompt,
                        p,
                        spec.max_tokens,
                        spec.system,
                        spec.context_chars,
                    )
                )
                phase_of.append((p, spec))
                index += 1
        stopped = False
        if self._cancel_requested:  # stopped before it began
            for i in range(len(specs)):
                self._end(i, self.now(), "stopped")
            self.emit(RunEnded(self.now(), True))
            return
        # One client (one connection pool) per request: httpcore's pool bookkeeping is
        # quadratic in its connections (measured: 1.9 s of CPU at 64 streams, enough to
        # fall behind the streams). The clients share one SSL context.
        try:  # the base URL (core/urls.py), the environment's proxy and CA settings
            try:
                check_url(ep.base_url)
            except ValueError as exc:
                raise ValueError(f"invalid base URL {ep.base_url!r}: {exc}") from None
            wrong_path = base_url_problem(ep.base_url, ep.api)
            if wrong_path is not None:
                raise ValueError(wrong_path)
            net = client_settings(ep.base_url, ep.verify)
        except ValueError as exc:
            problem = RequestError(ErrorKind.CONNECT, redact(str(exc), ep.secrets))
            for i in range(len(specs)):  # failed before any byte left
                self.emit(RequestSent(self.now(), i, 0))
                self._end(i, self.now(), "failed", None, problem)
            self.emit(RunEnded(self.now(), False))
            return
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
        try:
            async with contextlib.AsyncExitStack() as stack:
                clients = [
                    await stack.enter_async_context(
                        httpx.AsyncClient(
                            http1=True,
                            http2=False,
                            timeout=self.config.timeouts.httpx(),
                            limits=limits,
                            verify=net.verify,
                            trust_env=net.trust_env,
                            proxy=net.proxy,
                            follow_redirects=False,
                        )
                    )
                    for _ in specs
                ]
                self.arrival_stamps = all(
                    arrivals.install(t) for client in clients for t in _transports(client)
                )
                first = 0
                for p, phase in enumerate(plan.phases):
                    ids = range(first, first + len(phase.requests))
                    first += len(phase.requests)
                    if self.config.warm_connections:
                        await asyncio.gather(*(self._warm(clients[i], i) for i in ids))
                    if p == 0 and self.start_gate is not None:
                        await self.start_gate.wait()
                    self.emit(PhaseStarted(self.now(), p, phase.name))
                    if phase.sequential:
                        for i in ids:
                            spec = phase_of[i][1]
                            if phase.chain and i > ids[0]:  # the previous request's answer
                                answer = "".join(self._answers.get(i - 1, ()))
                                spec = replace(
                                    spec,
                                    prompt=chain_prompt(spec.prompt, answer, spec.shared_chars),
                                )
                            await self._request(clients[i], i, spec, None)
                    else:
                        barrier = asyncio.Event() if self.config.release == "barrier" else None
                        tasks = [
                            asyncio.create_task(
                                self._request(clients[i], i, phase_of[i][1], barrier)
                            )
                            for i in ids
                        ]
                        if barrier is not None:
                            await asyncio.sleep(0)  # let every task build its request first
                            barrier.set()
                        try:
                            await asyncio.gather(*tasks)
                        finally:
                            for task in tasks:
                                task.cancel()
                            await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            stopped = True
        finally:
            t = self.now()
            for i in range(len(specs)):
                if i not in self._ended:
                    self._end(i, t, "stopped")
            self.emit(RunEnded(self.now(), stopped))

    async def _warm(self, client: httpx.AsyncClient, i: int) -> None:
        """Open ``client``'s keep-alive connection for request ``i`` (see
        :class:`RunConfig`) and emit :class:`~splitdesk.core.run.events.ConnectionOpened`
        when the server answered on it: when the warm-up began, when the answer's headers
        came, and the TCP(+TLS) connect time. Failures are left for the real request to
        report."""
        call = self.provider.models_request(self.config.endpoint)
        hook = _HttpTrace(self.clock)
        started = self.now()
        try:
            request = client.build_request(
                call.method,
                call.url,
                headers=call.headers,
                params=call.params or None,
                extensions={"trace": hook},
            )
            response = await client.send(request, stream=True)
            answered = self._s(hook.headers) if hook.headers else self.now()
            try:
                await read_capped(response, 256 * 1024)
            finally:
                await responses.aclose(response)
        except (httpx.HTTPError, httpx.InvalidURL):
            return
        connect = (
            (hook.connected - hook.connect_started) / 1e9
            if hook.connected and hook.connect_started
            else None
        )
        self.emit(ConnectionOpened(answered, i, started, connect))

    async def _explain_404(self, client: httpx.AsyncClient, error: RequestError) -> RequestError:
        """``error`` (an HTTP 404) with what the endpoint's model list says: the models it
        serves when the requested one is not among them, or that the list is missing too
        (a wrong base URL). Asked once per run; a failing list adds nothing."""
        async with self._models_lock:
            if self._models_note is None:
                self._models_note = await self._models_note_for_404(client)
        if not self._models_note:
            return error
        return RequestError(
            error.kind, f"{error.message}; {self._models_note}", error.status, error.retry_after_s
        )

    async def _models_note_for_404(self, client: httpx.AsyncClient) -> str:
        ep = self.config.endpoint
        if not self.provider.lists_models:
            return ""
        call = self.provider.models_request(ep)
        try:
            response = await client.request(
                call.method,
                call.url,
                headers=call.headers,
                params=call.params or None,
                timeout=min(5.0, self.config.timeouts.read),
            )
            if response.status_code == 404:
                return "its model list is not found either: check the base URL"
            if response.status_code >= 400:
                return ""
            models = self.provider.parse_models(response.json())
        except (httpx.HTTPError, ValueError):
            return ""
        if not models or ep.model in models:
            return ""
        shown = ", ".join(models[:5]) + (f" and {len(models) - 5} more" if len(models) > 5 else "")
        return f"the endpoint serves: {shown}"

    def _end(
        self,
        i: int,
        t: float,
        outcome: str,
        finish: str | None = None,
        error: RequestError | None = None,
    ) -> None:
        if i in self._ended:
            return
        self._ended.add(i)
        self.emit(RequestEnded(t, i, outcome, finish, error))  # type: ignore[arg-type]

    async def _request(
        self, client: httpx.AsyncClient, i: int, spec: RequestSpec, barrier: asyncio.Event | None
    ) -> None:
        ep = self.config.endpoint
        params = GenParams(
            max_tokens=spec.max_tokens, temperature=self.config.temperature, seed=self.config.seed
        )
        call = self.provider.build_request(ep, spec.as_prompt(), params)
        parser = (
            SectionParser(len(spec.questions), self.config.marker)
            if spec.group == "combined"
            else None
        )
        last_text_t: float | None = None

        def build() -> tuple[httpx.Request, _HttpTrace]:
            hook = _HttpTrace(self.clock)
            request = client.build_request(
                call.method,
                call.url,
                headers=call.headers,
                json=call.json,
                params=call.params or None,
                extensions={"trace": hook},
            )
            return request, hook

        try:
            try:
                request, hook = build()  # before the barrier: all N are sent within microseconds
                check_url(call.url)
            except (httpx.InvalidURL, ValueError) as exc:
                self.emit(RequestSent(self.now(), i, 0))
                message = redact(f"invalid base URL {ep.base_url!r}: {exc}", ep.secrets)
                self._end(i, self.now(), "failed", None, RequestError(ErrorKind.CONNECT, message))
                return
            if barrier is not None:
                await barrier.wait()
            attempt = 0
            while True:
                if attempt:
                    request, hook = build()
                self.emit(RequestSent(self.now(), i, attempt))
                finish: str | None = None
                error: RequestError | None = None
                answered = False
                try:
                    response = await client.send(request, stream=True)
                    answered = True
                    clock = arrivals.arrival_clock(response, self.clock)
                    try:
                        self.emit(
                            HeadersReceived(
                                self._s(
                                    clock()
                                    if clock is not self.clock
                                    else hook.headers or self.clock()
                                ),
                                i,
                                response.status_code,
                                response.headers.get("x-request-id"),
                                (hook.connected - hook.connect_started) / 1e9
                                if hook.connected and hook.connect_started
                                else None,
                            )
                        )
                        finish, error, last_text_t, tail_end = await self._consume(
                            response, i, parser, last_text_t, clock
                        )
                        # the stream's end, before closing the response (or, from a server
                        # that kept it open after its finish reason, its last bytes)
                        t_end = tail_end if tail_end is not None else self.now()
                    finally:
                        await responses.aclose(response)
                except httpx.HTTPError as exc:
                    error = classify_transport_error(exc, ep, self.config.timeouts.read, answered)
                    t_end = self.now()
                if error is not None and error.kind == ErrorKind.HTTP and error.status == 404:
                    error = await self._explain_404(client, error)
                if error is not None:
                    error = RequestError(
                        error.kind,
                        redact(error.message, ep.secrets),
                        error.status,
                        error.retry_after_s,
                    )
                if (
                    error is not None
                    and error.status == 429
                    and attempt < self.config.retry_429
                    and last_text_t is None
                ):
                    delay = (
                        error.retry_after_s  # already capped (providers/retry_after.py)
                        if error.retry_after_s is not None
                        else min(MAX_RETRY_AFTER_S, self.config.backoff_s * 2.0 ** min(attempt, 30))
                    )
                    attempt += 1
                    self.emit(RequestRetrying(t_end, i, attempt, delay, error))
                    await asyncio.sleep(delay)
                    continue
                if parser is not None:
                    self._sections(
                        i, parser.finish(last_text_t if last_text_t is not None else t_end)
                    )
                self._end(i, t_end, "failed" if error else "done", finish, error)
                return
        except asyncio.CancelledError:
            t = self.now()
            if parser is not None:
                with contextlib.suppress(Exception):
                    self._sections(i, parser.finish(last_text_t if last_text_t is not None else t))
            self._end(i, t, "stopped")
            raise

    async def _consume(
        self,
        response: httpx.Response,
        i: int,
        parser: SectionParser | None,
        last_text_t: float | None,
        clock: Clock,
    ) -> tuple[str | None, RequestError | None, float | None, float | None]:
        """Emit the events of one response's stream, stamped by ``clock`` (the arrival of
        the bytes read last); returns (finish reason, error, time of the last answer text,
        and when the stream was taken as ended without its end: ``None`` when it ended).

        After the finish reason only usage, server timings and the stream's end are left.
        A server that then keeps the stream open — no ``[DONE]``, no close — has answered:
        the request is done when nothing more comes for :data:`FINISH_TAIL_S` (or the read
        timeout, if shorter), ended at its last bytes, instead of failing on the read
        timeout (or waiting the default 300 s for it) with the whole answer received."""
        finish: str | None = None
        error: RequestError | None = None
        # a chunked stream read straight off the socket (arrivals.direct_body: the per-read
        # layers of httpx, httpcore and h11 were ~40 % of the engine's CPU at 64 streams)
        body = arrivals.direct_body(response)
        if self.config.capture_raw:  # the reads as they arrive, for the stream inspector
            sink = self.raw.setdefault(i, [])
            sink.clear()  # a retried request keeps its answered attempt's reads
            response.stream = _RawTap(response.stream, sink, clock)
            if body is not None:
                body = _tapped(body, sink, clock)
        deltas = iter_deltas(response, self.provider.decoder(), self.provider.framing, clock, body)
        # the per-event path: names bound once (thousands of events a second)
        emit, t0, answer = self.emit, self._t0, self._answers.setdefault(i, [])
        async with contextlib.aclosing(deltas):
            async for delta in deltas:
                if type(delta) is TextDelta:
                    t = (delta.t_ns - t0) / 1e9  # self._s
                    text = delta.text
                    emit(TextReceived(t, i, text, delta.reasoning))
                    if not delta.reasoning:
                        answer.append(text)
                        last_text_t = t
                        if parser is not None:
                            self._sections(i, parser.feed(text, t))
                elif isinstance(delta, UsageDelta):
                    self.emit(
                        UsageReported(
                            self._s(delta.t_ns),
                            i,
                            delta.output_tokens,
                            delta.prompt_tokens,
                            delta.cached_prompt_tokens,
                        )
                    )
                elif isinstance(delta, FinishDelta):
                    finish = delta.reason
                    break  # the tail, below
                elif isinstance(delta, ToolCallDelta):
                    self.emit(ToolCallReceived(self._s(delta.t_ns), i, delta.name, delta.arguments))
                elif isinstance(delta, ServerTimingDelta):
                    self.emit(ServerTimings(self._s(delta.t_ns), i, delta.timings))
                elif isinstance(delta, ErrorDelta):
                    error = delta.error
            else:
                return finish, error, last_text_t, None
            last_ns = clock()
            tail = min(FINISH_TAIL_S, self.config.timeouts.read)
            while True:
                # asyncio.timeout, not wait_for: no task per read, whose stored exception
                # would leave the response's objects in a reference cycle
                try:
                    async with asyncio.timeout(tail):
                        delta = await anext(deltas)
                except StopAsyncIteration:
                    return finish, error, last_text_t, None
                except TimeoutError:
                    return finish, error, last_text_t, (last_ns - t0) / 1e9
                last_ns = clock()
                if isinstance(delta, UsageDelta):
                    self.emit(
                        UsageReported(
                            self._s(delta.t_ns),
                            i,
                            delta.output_tokens,
                            delta.prompt_tokens,
                            delta.cached_prompt_tokens,
                        )
                    )
                elif isinstance(delta, ServerTimingDelta):
                    self.emit(ServerTimings(self._s(delta.t_ns), i, delta.timings))
                elif isinstance(delta, ErrorDelta):
                    error = delta.error
                elif isinstance(delta, FinishDelta):
                    finish = delta.reason
                elif isinstance(delta, TextDelta | ToolCallDelta):  # after its finish: odd, kept
                    t = self._s(delta.t_ns)
                    if isinstance(delta, TextDelta):
                        emit(TextReceived(t, i, delta.text, delta.reasoning))
                        if not delta.reasoning:
                            answer.append(delta.text)
                            last_text_t = t
                    else:
                        emit(ToolCallReceived(t, i, delta.name, delta.arguments))

    def _sections(self, i: int, events: list[Any]) -> None:
        for ev in events:
            if isinstance(ev, SectionStart):
                self.emit(SectionStarted(ev.t, i, ev.question, ev.offset, ev.body_offset))
            else:
                self.emit(SectionEnded(ev.t, i, ev.question, ev.offset))
