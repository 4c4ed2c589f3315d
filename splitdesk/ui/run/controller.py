"""The run controller: the one object between the window and the engine.

It owns the :class:`~splitdesk.core.measure.engine.EngineProcess` (network work in its own
process, so painting cannot delay an arrival stamp)
thread), the built-in endpoint's child process (started when chosen, restarted when its
profile or speed changes, stopped on exit) and the current run. It drains the run's
events on a frame timer into a :class:`~splitdesk.core.run.run_state.RunState`, which the
views observe. The controller never measures anything.

Nothing goes wrong silently, and the window is never left busy: whatever stops a run from
starting (no model, a key that is missing, the engine not starting, any unexpected error)
ends that run at once with every planned request *failed* with the reason — the panes, the
summary and the status bar say it — and ``busyChanged(False)`` brings Run back. If the
engine process dies during a run, the requests still open end *failed* ("the measuring
engine stopped"), the engine is started again and the status bar says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
from PySide6.QtCore import QObject, Qt, QTimer, Signal

from splitdesk import cpus
from splitdesk.core.analyse.predict import PredictedRequest, predict_plan
from splitdesk.core.bench.repeats import RepeatRun, new_nonce, with_nonce
from splitdesk.core.measure.client_cpu import (
    BUSY_MACHINE,
    ClientCpu,
    CpuReading,
    is_loopback_url,
)
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.measure.engine import EngineProcess, ProcessRun
from splitdesk.core.measure.netenv import ca_bundle_problem
from splitdesk.core.measure.runner import RunConfig, Timeouts
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.events import RequestEnded, RequestPlanned, RunEnded, RunEvent, RunStarted
from splitdesk.core.run.limits import questions_problem
from splitdesk.core.run.plans import Mode, RunPlan, make_plan
from splitdesk.core.run.redaction import redact
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import PROVIDERS, get_provider
from splitdesk.providers.base import EndpointConfig, ErrorKind, RequestError, header_problem
from splitdesk.sim.launcher import SimProcess, SimStartError, start_sim
from splitdesk.ui.common.priority import Spawner
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.common.throttle import BUSY_PACE, LIVE_FRAME_MS, live_pace, set_live_pace

log = logging.getLogger(__name__)

#: How often the GUI takes the engine's events while a run streams (ms): once per frame of
#: the views (``ui/panes.py`` PANE_MS, ``ui/timeline.py`` LIVE_MS), :data:`DRAIN_LEAD_MS`
#: before their slot on the shared frame grid (:class:`~splitdesk.ui.common.throttle.Throttle`),
#: so what a drain brings is painted in the same frame. The timestamps are taken in the
#: engine process where the bytes arrive; this only decides when the window shows them.
DRAIN_MS = LIVE_FRAME_MS
#: How long before the views' frame the drain runs (ms).
DRAIN_LEAD_MS = 3
#: Until the views are built and the run is released, the drain looks this often (ms):
#: the first request waits for it (Run → first request sent, issue 13).
START_DRAIN_MS = 16
#: After Stop, until the run is over, the drain looks this often (ms), not on the views'
#: frame: a stop answers the user, and each stopped request's end shows as it comes (at
#: a busy machine's pace the frame is 400 ms, ``throttle.BUSY_PACE``).
STOPPING_DRAIN_MS = 16
#: Time the views get to lay out and paint new panes before the first request (s); the
#: engine opens its connections meanwhile. At 0.15 s, Run → first request took ~0.2 s
#: (issue 25's goal: ≤ 0.1 s); a live run's panes are built 10 ms of work per turn and
#: five are built in ~30 ms.
VIEWS_SETTLE_S = 0.05
#: Longest wait for the built-in endpoint's prediction before a run starts without it (s).
PREDICT_WAIT_S = 5.0
#: How often a streaming run reads its processes' CPU (s): the live figures, the pace.
CPU_EVERY_S = 1.0


class ControllerError(Exception):
    """A run could not start; the message is for the user."""


#: What the panes say when the engine process died under a run.
ENGINE_DIED = "the measuring engine stopped unexpectedly during the run (it has been restarted)"


@dataclass(frozen=True)
class RunRequest:
    """Everything a run needs from the window."""

    endpoint: EndpointSettings
    api_key: str | None
    questions: list[str]
    template: CombinedTemplate
    mode: Mode
    with_sequential: bool = False
    #: Why the key this endpoint needs is missing (the run then fails before sending).
    key_problem: str | None = None
    #: How the client sends (cold connections, release): the Engineer menu's choice.
    client: ClientPattern = field(default_factory=ClientPattern)
    #: keep each response's raw reads for the stream inspector (Engineer menu)
    capture_raw: bool = False
    #: a repeated comparison's run (Engineer ▸ Repeat): its phase order and nonce
    #: (:meth:`splitdesk.core.bench.repeats.RepeatRun.arrange`); ``None``: the plan as made
    repeat: RepeatRun | None = None
    #: the question set's shared context (``""``: none), first in every prompt
    context: str = ""

    def plan(self) -> RunPlan:
        """The plan this run sends (``ValueError`` as :func:`make_plan`). With a shared
        context every run's sides open with their own nonce line
        (:func:`splitdesk.core.bench.repeats.with_nonce`: one side never reads the
        document the other side left in the server's prefix cache)."""
        s = self.endpoint
        plan = make_plan(
            self.mode,
            self.questions,
            self.template,
            s.max_tokens,
            self.with_sequential,
            context=self.context,
        )
        if self.repeat is not None:
            return self.repeat.arrange(plan)
        return with_nonce(plan, new_nonce()) if plan.has_context else plan


class RunController(QObject):
    """Starts, stops and feeds runs.

    Signals:
        runPlanned(object, list): the :class:`RunPlan` and questions of the run about to
            start (views build their panes; the engine waits ``VIEWS_SETTLE_S``).
        runStarted(object): a new run's :class:`RunState` (views bind to it).
        runFinished(object): the run's :class:`RunState` once its last event is applied.
        predictionsReady(object): ``list[PredictedRequest]`` for the current run (built-in
            endpoint only), seconds from each request's send.
        status(str): one line about the endpoint for the status bar.
        busyChanged(bool): a run is starting or running.
        clientCpu(object): the run's :class:`~splitdesk.core.measure.client_cpu.ClientCpu`
            so far (window, engine, built-in endpoint, machine), about once a second while
            it streams and once more, final, just before ``runFinished``.
    """

    runPlanned = Signal(object, list)
    runStarted = Signal(object)
    runFinished = Signal(object)
    predictionsReady = Signal(object)
    status = Signal(str)
    busyChanged = Signal(bool)
    clientCpu = Signal(object)
    #: A run's future completed (emitted on the engine's reader thread, received queued on
    #: the GUI thread): its last event is queued, so it is drained now, not a frame later.
    _runOver = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = EngineProcess()
        #: Children are started from these threads, made now: they keep the priority the
        #: window has before it lowers its GUI thread's (splitdesk/ui/priority.py).
        self._spawner = Spawner()
        #: The built-in endpoint started ahead (:meth:`prestart_builtin`), not yet taken.
        self._prestarted: tuple[tuple[str, float, str], Future[SimProcess]] | None = None
        self._engine_ready: asyncio.Future[None] | None = None
        self.sim: SimProcess | None = None
        self._sim_key: tuple[str, float, str] | None = None
        #: Built-in endpoint parameter overrides besides profile and speed (a scenario's
        #: ``[endpoint] params``, core/scenarios.py); the endpoint restarts when they change.
        self.sim_overrides: dict[str, Any] = {}
        self.state: RunState | None = None
        self.live: ProcessRun | None = None
        self._busy = False
        self._stop_requested = False
        self._prediction: asyncio.Task[list[PredictedRequest] | None] | None = None
        self._planned = 0
        #: The run's first request is held back: the views are settling, the prediction
        #: is not in yet.
        self._held = False
        #: The plan the views were told about (``runPlanned``) and the request of the
        #: current run.
        self._announced: RunPlan | None = None
        self._live_request: RunRequest | None = None
        #: The next run's place in a repeated comparison (order, nonce), set by
        #: ``ui/repeat_session.py`` just before it starts the window's run; taken by
        #: :meth:`start` for a request that names none.
        self.next_repeat: RepeatRun | None = None
        #: The current (or last) run's CPU figures so far (:attr:`clientCpu`), and whether
        #: its endpoint runs on this machine (loopback or built-in: ``observer_effect``).
        self.client_cpu: ClientCpu | None = None
        self.local_endpoint = False
        self._cpu_start: CpuReading | None = None
        self._cpu_last: CpuReading | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)  # ahead of the views' frame
        self._timer.timeout.connect(self._drain)
        self._runOver.connect(self._on_run_over, Qt.ConnectionType.QueuedConnection)
        #: Stop was sent to the live run: the drain looks every :data:`STOPPING_DRAIN_MS`.
        self._stopping = False

    @property
    def busy(self) -> bool:
        """A run is starting or running."""
        return self._busy

    @property
    def request(self) -> RunRequest | None:
        """The request of the run now (or last) started: its endpoint, questions,
        template, mode and client pattern, as sent (never shown: it holds the key)."""
        return self._live_request

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)

    # -- built-in endpoint ---------------------------------------------------------------------
    async def ensure_builtin(self, profile: str, speed: float) -> SimProcess:
        """The built-in endpoint with ``profile`` at ``speed``, started (in a worker thread)
        if needed. Raises :class:`ControllerError` when it cannot start."""
        key = (profile, speed, repr(sorted(self.sim_overrides.items())))
        if self.sim is not None and self.sim.alive() and self._sim_key == key:
            return self.sim
        old, self.sim = self.sim, None
        if old is not None:
            await asyncio.to_thread(old.stop)
        self.status.emit(f"Starting the built-in endpoint ({profile}, speed {speed:g}×)…")
        try:
            started, self._prestarted = self._prestarted, None
            if started is not None and started[0] != key:  # started for other settings
                self._spawner.submit(_stop_started, started[1])
                started = None
            if started is None:
                overrides = {**self.sim_overrides, "speed": speed}
                started = (key, self._spawner.submit(start_sim, profile, overrides))
            sim = await asyncio.wrap_future(started[1])
        except (SimStartError, ValueError) as exc:
            self.status.emit(f"The built-in endpoint did not start: {exc}")
            raise ControllerError(f"the built-in endpoint did not start: {exc}") from None
        self.sim, self._sim_key = sim, key
        self.status.emit(f"Built-in endpoint · {profile} · {speed:g}× · {sim.openai_base_url}")
        return sim

    def prestart_builtin(self, profile: str, speed: float) -> None:
        """Start the built-in endpoint with ``profile`` at ``speed`` now in a spawner
        thread, returning at once (callable before the event loop runs): the app calls it
        before the window builds, so the endpoint is up when Run is first pressed;
        :meth:`ensure_builtin` takes it then, and reports a failure to start."""
        if self._prestarted is None and self.sim is None:
            key = (profile, speed, repr(sorted(self.sim_overrides.items())))
            overrides = {**self.sim_overrides, "speed": speed}
            self._prestarted = (key, self._spawner.submit(start_sim, profile, overrides))

    async def endpoint_config(
        self, settings: EndpointSettings, api_key: str | None
    ) -> EndpointConfig:
        """The :class:`EndpointConfig` for ``settings`` (starting the built-in endpoint when
        it is chosen)."""
        if settings.api not in PROVIDERS:  # a settings object that skipped validation
            raise ControllerError(
                f"unknown API dialect {settings.api!r} (known: {', '.join(PROVIDERS)}) — "
                "choose one in the Endpoint panel"
            )
        if settings.is_builtin:
            sim = await self.ensure_builtin(settings.profile, settings.speed)
            base = get_provider(settings.api).base_url_for_root(sim.url)
            return EndpointConfig(base, settings.api, settings.model or "splitdesk-sim")
        # A base URL that is not a usable URL is not refused here: the run's requests fail
        # with "invalid base URL …" in their panes (core/urls.py), like any failed request.
        if not settings.model:
            raise ControllerError(
                "choose a model (use “List models” to see what the endpoint serves)"
            )
        return EndpointConfig(
            settings.base_url,
            settings.api,
            settings.model,
            api_key,
            dict(settings.headers),
            settings.verify,
        )

    # -- the engine ------------------------------------------------------------------------------
    def start_engine(self) -> asyncio.Future[None]:
        """Start the engine process in a worker thread (once); await it to know it is up.
        Raises ``RuntimeError`` (when awaited) if it cannot start."""
        if self._engine_ready is None or (self._engine_ready.done() and not self.engine.alive):
            # not asyncio.to_thread: this may be called before the loop runs (at start-up)
            ready = asyncio.get_event_loop().run_in_executor(self._spawner, self.engine.start)
            ready.add_done_callback(self._engine_started)
            self._engine_ready = ready
        return self._engine_ready

    def _engine_started(self, ready: asyncio.Future[None]) -> None:
        if not ready.cancelled() and ready.exception() is not None:
            log.error("the engine process did not start: %s", ready.exception())
            self.status.emit(f"The measuring engine did not start: {ready.exception()}")

    def _restart_engine(self) -> None:
        """Start a new engine process after the old one died (its runs are already ended)."""
        log.error(
            "the engine process died (last stderr: %s); restarting it",
            " | ".join(list(self.engine.stderr_tail)[-3:]) or "none",
        )
        with contextlib.suppress(Exception):  # reap what is left of the old one
            self.engine.stop(0.5)
        ready = self.start_engine()

        def said(f: asyncio.Future[None]) -> None:
            if not f.cancelled() and f.exception() is None:
                self.status.emit(
                    "The measuring engine stopped unexpectedly during the run and was "
                    "restarted; the run's open requests are marked failed. Run again to measure."
                )

        ready.add_done_callback(said)

    # -- runs ----------------------------------------------------------------------------------
    async def start(self, request: RunRequest) -> RunState:
        """Start a run; returns its state (also sent with ``runStarted``). Raises
        :class:`ControllerError` when it cannot start (message for the user); the run's
        requests are then shown *failed* with that message and the controller is idle."""
        if self._busy:
            raise ControllerError("a run is already in progress")
        if request.repeat is None and self.next_repeat is not None:
            request = replace(request, repeat=self.next_repeat)
        self.next_repeat = None
        self._stop_requested = False
        self._set_busy(True)
        self._announced = None
        self._live_request = request
        try:
            return await self._start(request)
        except Exception as exc:  # nothing that goes wrong here may leave the window busy
            if isinstance(exc, ControllerError):
                message = str(exc)
                log.warning("a run could not start: %s", message)
            else:
                message = f"the run could not start ({type(exc).__name__}: {exc})"
                log.exception("a run could not start")
            self._fail_run(request, message)
            self._set_busy(False)
            raise ControllerError(message) from None

    async def _start(self, request: RunRequest) -> RunState:
        if request.key_problem:
            raise ControllerError(request.key_problem)
        if not request.endpoint.is_builtin and (
            problem := header_problem(request.api_key, request.endpoint.headers)
        ):  # said before anything is sent (the engine's first request raised it)
            raise ControllerError(problem)
        # a CA bundle that is not PEM was found by each request, once per request
        bundle = request.endpoint.verify
        if (
            not request.endpoint.is_builtin
            and isinstance(bundle, str)
            and (problem := await asyncio.to_thread(ca_bundle_problem, bundle))
        ):
            raise ControllerError(f"CA bundle {bundle}: {problem}")
        if problem := questions_problem(list(request.questions)):  # core/run/limits.py
            raise ControllerError(problem)
        plan = request.plan()
        state = RunState()
        self.state = state
        # Views build their panes from the plan now, and get a few frames to lay them out
        # and paint, before the engine sends anything (this machine's CPU is shared). The
        # built-in endpoint, when still starting, comes up meanwhile: the two waits overlap
        # (Run pressed as the window shows → first request sent, issue 13).
        settled = time.monotonic() + VIEWS_SETTLE_S
        self.runPlanned.emit(plan, list(request.questions))
        self._announced = plan
        endpoint = await self.endpoint_config(request.endpoint, request.api_key)
        s = request.endpoint
        config = RunConfig(
            endpoint,
            temperature=s.temperature,
            timeouts=Timeouts(connect=s.connect_timeout, read=s.read_timeout),
            marker=request.template.marker,
            retry_429=s.retry_429,
            warm_connections=not request.client.cold,
            release=request.client.release,
            capture_raw=request.capture_raw,
        )
        # The built-in endpoint's prediction is asked now, while the views settle, and the
        # first request waits until it is in: the endpoint computes it on the loop that
        # schedules its token steps, which a run's streams must have to themselves. The
        # engine gets the run meanwhile, gated: it opens its connections (warm-up) while
        # the views settle and the prediction is worked out (Run → first request, issue 25).
        prediction: asyncio.Task[list[PredictedRequest] | None] | None = None
        if s.is_builtin and self.sim is not None:
            prediction = self._prediction = spawn(
                self._predict(self.sim.url, endpoint, plan, s.temperature)
            )
        self._held = True  # no release until the views settled and the prediction is in
        try:
            await self.start_engine()
            self._place_engine(
                s.is_builtin, max((len(ph.requests) for ph in plan.phases), default=0)
            )
            self.live = self.engine.run(config, request.questions, plan, gated=True)
            self._stopping = False
            self.live.future.add_done_callback(self._notify_run_over)
            self.local_endpoint = s.is_builtin or is_loopback_url(s.base_url)
            self.client_cpu = None
            self._cpu_start = self._cpu_last = CpuReading.now(self._cpu_pids())
        except RuntimeError as exc:
            raise ControllerError(f"the measuring engine is not running: {exc}") from None
        if self._stop_requested:  # Stop was pressed while the run was starting
            self.live.cancel()
            self._stopping = True
        self._planned = len(plan.requests)
        self._timer.start(0)
        self.runStarted.emit(state)
        await asyncio.sleep(max(0.0, settled - time.monotonic()))
        preds = await self._prediction_before_run(prediction)
        if preds is not None:  # the views bound to this run take them, before it sends
            self.predictionsReady.emit(preds)
        self._held = False
        if self.live is not None and not self.live.done:
            self._drain()  # release now if every planned request is in (not a drain later)
        return state

    def _cpu_pids(self) -> dict[str, int | None]:
        """The processes whose CPU a run reads: this one (the window), the engine and,
        when it runs, the built-in endpoint."""
        pids: dict[str, int | None] = {"window": None, "engine": self.engine.pid}
        builtin = self._live_request is not None and self._live_request.endpoint.is_builtin
        if builtin and self.sim is not None and self.sim.alive():
            pids["endpoint"] = self.sim.pid
        return pids

    def _read_cpu(self, final: bool = False) -> None:
        """Read the run's processes and the machine (at most every :data:`CPU_EVERY_S`
        unless ``final``): the figures since the run's start go out as :attr:`clientCpu`;
        the last interval's machine load sets the live views' pace — fewer frames while
        the machine's CPUs are busy (``throttle.set_live_pace``), so a CPU-bound local
        server keeps what the window would have taken."""
        start, last = self._cpu_start, self._cpu_last
        if start is None or last is None:
            return
        now = time.monotonic()
        if not final and now - last.wall_s < CPU_EVERY_S:
            return
        read = CpuReading.now(self._cpu_pids())
        # the processes read at the start (one gone since, the endpoint stopped: unknown)
        reading = CpuReading(
            read.wall_s, {name: read.processes.get(name) for name in start.processes}, read.machine
        )
        self._cpu_last = reading
        recent = ClientCpu.between(last, reading)
        busy = recent.machine_busy is not None and recent.machine_busy >= BUSY_MACHINE
        if final:
            set_live_pace(1.0)
        elif busy != (live_pace() > 1.0):
            set_live_pace(BUSY_PACE if busy else 1.0)
        self.client_cpu = ClientCpu.between(start, reading)
        self.clientCpu.emit(self.client_cpu)

    def _place_engine(self, builtin: bool, streams: int) -> None:
        """A run of ``streams`` concurrent requests (:data:`~splitdesk.cpus.MANY_STREAMS`
        or more) on the built-in endpoint: its event loop on a CPU of its own and the
        engine off it (a socket wake-up put the engine on the endpoint's CPU, which then
        waited a scheduler tick mid-step: :mod:`splitdesk.cpus`). Any other run: both may
        run anywhere again."""
        engine = self.engine.pid
        if engine is None:
            return
        sim = self.sim.pid if self.sim is not None and self.sim.alive() else None
        if builtin and sim is not None and streams >= cpus.MANY_STREAMS:
            cpus.separate(sim, [engine])
        else:
            cpus.rejoin([engine] if sim is None else [engine, sim])

    async def _predict(
        self,
        root: str,
        endpoint: EndpointConfig,
        plan: RunPlan,
        temperature: float | None,
    ) -> list[PredictedRequest] | None:
        """The cost model's prediction of ``plan``, or None when the endpoint gives none."""
        try:
            return await predict_plan(root, endpoint, plan, temperature)
        except (httpx.HTTPError, ValueError) as exc:
            log.info("no prediction: %s", exc)
            return None

    @staticmethod
    async def _prediction_before_run(
        task: asyncio.Task[list[PredictedRequest] | None] | None,
    ) -> list[PredictedRequest] | None:
        """Wait (at most ``PREDICT_WAIT_S``) for the prediction asked before the run; a
        prediction that has not come by then is dropped, never computed during the run."""
        if task is None:
            return None
        done, _ = await asyncio.wait([task], timeout=PREDICT_WAIT_S)
        if not done:
            task.cancel()
            log.info("no prediction: the built-in endpoint took over %g s", PREDICT_WAIT_S)
            return None
        if task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    def _fail_run(
        self, request: RunRequest, message: str, kind: ErrorKind = ErrorKind.CONNECT
    ) -> None:
        """End a run that never reached the engine: every planned request *failed* with
        ``message`` (before any byte left, as the runner does for an invalid URL), so the
        panes, timeline and summary say why. Emits the run's signals as a real run does."""
        plan = self._announced
        if plan is None:
            try:
                plan = request.plan()
            except Exception:  # no plan, no panes: the status bar still says it
                log.exception("no plan for the failed run")
                return
            self.runPlanned.emit(plan, list(request.questions))
        state = RunState()
        self.state = state
        self.runStarted.emit(state)
        self._fill_failed(state, plan, request, message, kind)
        self.runFinished.emit(state)

    @staticmethod
    def _fill_failed(
        state: RunState, plan: RunPlan, request: RunRequest, message: str, kind: ErrorKind
    ) -> None:
        """Apply to ``state`` a run whose every request failed with ``message`` before any
        event of its own arrived."""
        s = request.endpoint
        # what the runner's RunStarted says, redacted as it does: a run that never reached
        # the engine had written the URL's password and key-like query values in clear
        # into the recording saved after it
        secrets = EndpointConfig(s.base_url, s.api, s.model, request.api_key, dict(s.headers))
        url = redact(s.base_url, secrets.secrets) if s.base_url else "builtin"
        where = {"url": url, "api": s.api, "model": s.model}
        error = RequestError(kind, redact(message, secrets.secrets))
        events: list[RunEvent] = [
            RunStarted(0.0, plan.mode, tuple(request.questions), where, 0, len(plan.phases))
        ]
        for index, (p, spec) in enumerate(
            (p, spec) for p, phase in enumerate(plan.phases) for spec in phase.requests
        ):
            events.append(
                RequestPlanned(
                    0.0, index, spec.group, spec.questions, spec.prompt, p, spec.max_tokens
                )
            )
        n = len(events) - 1
        events += [RequestEnded(0.0, i, "failed", None, error) for i in range(n)]
        events.append(RunEnded(0.0, False))
        for event in events:
            state.apply(event)

    def _end_open_requests(self, state: RunState, message: str, kind: ErrorKind) -> None:
        """The engine is gone: requests still open end *failed* with ``message`` (their
        text and times so far are kept), then the run ends."""
        t = state.now() or 0.0
        error = RequestError(kind, message)
        for r in state.requests:
            if r.outcome is None:
                state.apply(RequestEnded(t, r.req, "failed", None, error))
        if state.ended is None:
            state.apply(RunEnded(t, False))

    def stop(self) -> None:
        """Stop the current run, also while it is still starting (no-op when idle)."""
        if self.live is not None and not self.live.done:
            self.live.cancel()
            self._stopping = True
            if self.live.released:
                self._arm(True)  # look again soon, not at the views' next frame
        elif self._busy:
            self._stop_requested = True

    def _drain(self, defer_end: bool = True) -> None:
        """Apply the engine's queued events to the run's state. When the run is over: the
        controller is idle and :attr:`runFinished` is emitted — in a turn of its own when
        ``defer_end`` (the views' work at a run's end then does not add to this drain's),
        at once on shutdown."""
        live, state = self.live, self.state
        if live is None or state is None:
            self._timer.stop()
            return
        finished = live.done  # read before draining: every event is queued once done
        state.apply_all(live.drain())  # one batch: the views hear of it once
        released = len(state.requests) == self._planned and not self._held
        if released:  # the views are built: send
            live.release()
            self._read_cpu()
        self._arm(released)
        if finished and not live.events:
            self._timer.stop()
            self.live = None
            #: the finished run's raw reads (RunRequest.capture_raw), for the stream inspector
            self.last_raw = live.raw
            exc = live.future.exception()
            died = exc is not None and not self.engine.alive
            if exc is not None:
                log.error("run failed unexpectedly: %s", exc)
                message = ENGINE_DIED if died else f"the run failed unexpectedly: {exc}"
                if state.info is None and self._live_request is not None and self._announced:
                    # nothing of the run arrived: its planned requests fail with the reason
                    self._fill_failed(
                        state, self._announced, self._live_request, message, ErrorKind.PROTOCOL
                    )
                else:
                    self._end_open_requests(state, message, ErrorKind.PROTOCOL)
                self.status.emit(message[:1].upper() + message[1:])
            if defer_end:
                QTimer.singleShot(0, self, lambda: self._end_run(state))
            else:
                self._end_run(state)
            if died:
                self._restart_engine()

    def _notify_run_over(self, future: Future[None]) -> None:
        """On the engine's reader thread (a done callback of the run's future): wake the
        GUI thread's drain. Nothing is done when the controller is gone (window closed)."""
        with contextlib.suppress(RuntimeError):  # its C++ object deleted with the window
            self._runOver.emit(future)

    def _on_run_over(self, future: Future[None]) -> None:
        """The run whose future is ``future`` is over: drain it now (a stale run's news,
        one already drained, is ignored)."""
        live = self.live
        if live is not None and live.future is future:
            self._timer.start(0)

    def _end_run(self, state: RunState) -> None:
        self._read_cpu(final=True)  # the whole run's figures, before its end is shown
        self._cpu_start = self._cpu_last = None
        self._set_busy(False)
        self.runFinished.emit(state)

    def _arm(self, released: bool) -> None:
        """Schedule the next drain: :data:`DRAIN_LEAD_MS` before the views' next frame on
        the shared grid (:data:`DRAIN_MS`); in :data:`START_DRAIN_MS` before release, in
        :data:`STOPPING_DRAIN_MS` after Stop. (A run that is over is drained at once:
        :meth:`_on_run_over`.)"""
        if not released:
            self._timer.start(START_DRAIN_MS)
            return
        if self._stopping:
            self._timer.start(STOPPING_DRAIN_MS)
            return
        now_ms = time.monotonic() * 1000
        frame = DRAIN_MS * live_pace()  # the views' frame, longer while the CPUs are busy
        delay = frame - now_ms % frame - DRAIN_LEAD_MS
        if delay < 1:
            delay += frame
        self._timer.start(round(delay))

    # -- shutdown ------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Stop the run, the engine process and the built-in endpoint (≈ ≤ 1 s)."""
        self.stop()
        if self._prediction is not None and not self._prediction.done():
            self._prediction.cancel()  # its connection goes before the endpoint does
            await asyncio.wait([self._prediction], timeout=1.0)
        if self.live is not None:
            with contextlib.suppress(Exception):  # closing anyway: a timeout or a failed run
                await asyncio.wait_for(asyncio.wrap_future(self.live.future), 1.0)
            self._drain(defer_end=False)
        self._timer.stop()
        # on a spawner thread: it kept the normal priority the GUI thread gave up
        await asyncio.get_running_loop().run_in_executor(self._spawner, self.close_sync)

    def close_sync(self) -> None:
        """Blocking part of :meth:`shutdown`: the engine and endpoint processes, stopped
        together (≤ ~1 s, each killed after 1 s): the engine's stop (its stdin closed) runs
        on a helper thread while the endpoint is sent SIGTERM here, then both are waited
        for. One after the other took ~2 s under load, each waiting out its own exit."""
        stoppers = [
            threading.Thread(target=self.engine.stop, args=(1.0,), name="engine-stop", daemon=True)
        ]
        started, self._prestarted = self._prestarted, None
        if started is not None:  # started ahead, never used: stopped once it is up
            stoppers.append(threading.Thread(target=_stop_started, args=(started[1],), daemon=True))
        for thread in stoppers:
            thread.start()
        if self.sim is not None:
            self.sim.stop(1.0)
            self.sim = None
        for thread in stoppers:
            thread.join()
        self._spawner.shutdown(wait=False)


def _stop_started(started: Future[SimProcess]) -> None:
    """Stop a built-in endpoint started ahead, once its start is over."""
    with contextlib.suppress(Exception):  # one that failed to start has nothing to stop
        started.result(30).stop(1.0)
