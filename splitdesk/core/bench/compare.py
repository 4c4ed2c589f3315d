"""``splitdesk bench``: the measuring engine without a window.

Runs each mode (combined, parallel, sequential) once per repeat, on an idle endpoint, one
after another; prints a table like the seed article's script (combined latency, parallel
latency, speed-up) plus TTFT and tokens per side; writes the JSON document of
:mod:`splitdesk.core.files.report`. On the built-in endpoint it also asks the cost model for the
predicted makespans.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx

from splitdesk.builtin_endpoint import BUILTIN_MODEL, BuiltinEndpoint, Launcher
from splitdesk.core.analyse.cost import cost_document
from splitdesk.core.analyse.diagnosis import (
    LIMIT_CODES,
    configured_limit_json,
    diagnose_repeats,
    summary_lines,
)
from splitdesk.core.analyse.predict import (
    RATE_LIMIT_NOTE,
    PredictedRequest,
    predict_plan,
    predicted_makespan,
    prediction_ignores_rate_limit,
    schedule_slip_s,
)
from splitdesk.core.bench.interrupt import Interrupt
from splitdesk.core.bench.options import BUILTIN, BenchOptions, modes_of
from splitdesk.core.bench.recorded import bench_recording
from splitdesk.core.bench.repeats import (
    RepeatOptions,
    bench_rows,
    mode_order,
    new_nonce,
    repeats_json,
    with_nonce,
)
from splitdesk.core.bench.table import failure_lines, format_table
from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.files.recording import (
    RecordingError,
    keep_events,
    save_recording,
)
from splitdesk.core.files.report import BenchRun, bench_document, endpoint_info
from splitdesk.core.measure.client_cpu import ClientCpu, CpuReading
from splitdesk.core.measure.loop_lag import LoopLag
from splitdesk.core.measure.netenv import (
    NetworkSetupError,
    client_settings,
    environment_problems,
    proxy_for,
    proxy_url_problem,
)
from splitdesk.core.measure.runner import (
    RunConfig,
    Runner,
    classify_transport_error,
    redact,
)
from splitdesk.core.measure.server_limits import ServerLimit, probe_limit
from splitdesk.core.measure.server_metrics import MetricsPoller, metrics_url
from splitdesk.core.run.events import RequestRetrying, RunEvent
from splitdesk.core.run.plans import RunPlan, make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.logs import register_secret
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig, header_problem
from splitdesk.providers.stream import response_error


class BenchError(Exception):
    """A problem the user must fix (bad endpoint, no model …); one line, exit status 2."""


class EndpointUnreachableError(Exception):
    """The endpoint could not be reached to list its models (connection refused, DNS, a
    proxy or CA setting that cannot work), or refused the key or failed (HTTP 401, 403,
    5xx: its words and what to do, as a request's error says them). Not a bad argument:
    the bench still sends its requests, so the JSON records each one's error, and exits 1
    (DESIGN.md, "The headless contract")."""


def resolve_key(opts: BenchOptions) -> str | None:
    """The API key from ``--api-key-env`` or the dialect's usual variable (never printed)."""
    if opts.endpoint == BUILTIN:
        return None
    name = opts.api_key_env or get_provider(opts.api).key_env
    if opts.api_key_env and opts.api_key_env not in os.environ:
        raise BenchError(f"--api-key-env {opts.api_key_env}: that environment variable is not set")
    value = os.environ.get(name) if name else None
    # A key pasted with its newline would be refused by h11, whose error quotes the header.
    key = value.strip() or None if value else None
    register_secret(key)  # never in a log record, whatever logs it
    if problem := header_problem(key, {}):  # before anything is sent; never the key itself
        raise BenchError(f"${name}: {problem}")
    return key


async def discover_model(endpoint: EndpointConfig) -> str:
    """The endpoint's only model, for when ``--model`` was not given: the one its base URL
    names (an Azure deployment), else the only one it lists. Raises :class:`BenchError`
    when there are several or none, or the list is unavailable, and
    :class:`EndpointUnreachableError` when the endpoint cannot be reached at all, refuses
    the key (HTTP 401, 403) or fails (5xx)."""
    provider = get_provider(endpoint.api)
    named = provider.model_from_url(endpoint)
    if named:
        return named
    call = provider.models_request(endpoint)
    try:
        net = client_settings(endpoint.base_url, endpoint.verify)
        async with httpx.AsyncClient(
            timeout=10.0, verify=net.verify, trust_env=net.trust_env, proxy=net.proxy
        ) as client:
            response = await client.request(
                call.method, call.url, headers=call.headers, params=call.params
            )
            if response.is_error:  # its own words and what to do, not httpx's
                refused = response_error(response).message
                if response.status_code in (401, 403) or response.status_code >= 500:
                    # the requests would be refused the same way: a failed run, said so
                    raise EndpointUnreachableError(redact(refused, endpoint.secrets))
                raise ValueError(refused)
            models = provider.parse_models(response.json())
    except httpx.TransportError as exc:
        problem = classify_transport_error(exc, endpoint, 10.0)
        raise EndpointUnreachableError(redact(problem.message, endpoint.secrets)) from None
    except NetworkSetupError as exc:
        raise EndpointUnreachableError(redact(str(exc), endpoint.secrets)) from None
    except (httpx.HTTPError, ValueError) as exc:
        raise BenchError(
            "pass --model NAME: could not list the models at "
            f"{redact(endpoint.base_url, endpoint.secrets)} "
            f"({redact(str(exc), endpoint.secrets)[:200]})"
        ) from None
    if len(models) != 1:
        listed = ", ".join(models[:10]) or "none"
        raise BenchError(f"pass --model NAME: the endpoint serves {listed}")
    return models[0]


@dataclass
class Target:
    """The endpoint a headless command (bench, sweep) measures, once started and its key
    resolved: ``endpoint`` (model as given, the built-in endpoint's own when none was,
    else empty until :func:`with_model`), ``key`` (never printed), ``sim`` (the built-in
    endpoint's process, or ``None``) and ``base_url`` (the dialect's base URL)."""

    endpoint: EndpointConfig
    key: str | None
    sim: BuiltinEndpoint | None
    base_url: str

    def info(self, endpoint: EndpointConfig, profile: str) -> dict[str, str]:
        """The JSON documents' ``endpoint`` object for ``endpoint`` (the resolved one):
        ``url`` (key redacted; ``builtin:<profile> (<base URL>)`` on the built-in
        endpoint, which also gets ``profile``), ``api``, ``model``."""
        if self.sim is not None:
            return endpoint_info(self.base_url, endpoint.api, endpoint.model, profile)
        return endpoint_info(redact(endpoint.base_url, self.key), endpoint.api, endpoint.model)


@contextmanager
def open_target(opts: BenchOptions, launch: Launcher | None) -> Iterator[Target]:
    """Start the built-in endpoint when ``opts.endpoint`` is ``builtin`` (with ``launch``,
    handed in: the core never imports the simulator), resolve the key (:func:`resolve_key`)
    and yield the :class:`Target`; the endpoint is stopped on leaving. Raises
    :class:`BenchError` when the endpoint cannot start, the key's variable is unset or
    cannot be sent, or the proxy variable for the endpoint is not a URL."""
    provider = get_provider(opts.api)
    sim = None
    if opts.endpoint == BUILTIN:
        try:
            if launch is None:  # core never imports sim: the caller hands the launcher in
                raise RuntimeError("no launcher was given (splitdesk.sim.launcher.start_sim)")
            sim = launch(opts.profile, opts.sim_params)
        except (RuntimeError, KeyError, ValueError) as exc:
            raise BenchError(f"cannot start the built-in endpoint: {exc}") from None
        base_url = provider.base_url_for_root(sim.url)
    else:
        base_url = opts.endpoint
    try:
        key = resolve_key(opts)
        chosen = proxy_for(base_url)  # a proxy variable that is no URL: bad input, exit 2
        if chosen is not None and (problem := proxy_url_problem(*chosen)):
            raise BenchError(problem)
        endpoint = EndpointConfig(base_url, opts.api, opts.model or "", key, verify=opts.verify)
        if sim is not None and not opts.model:
            # plain HTTP on loopback: no CA bundle to load (~50 ms per run's client)
            endpoint = EndpointConfig(base_url, opts.api, BUILTIN_MODEL, None, verify=False)
        yield Target(endpoint, key, sim, base_url)
    finally:
        if sim is not None:
            sim.stop()


async def with_model(endpoint: EndpointConfig, err: TextIO, command: str) -> EndpointConfig:
    """``endpoint`` with its model: as given, else :func:`discover_model`'s. An endpoint
    that cannot be reached is a failed run, not a bad argument: one line on ``err``
    (``splitdesk <command>: cannot list the models: …``) and an empty model, so the
    requests are sent anyway and each one's error is recorded. Raises :class:`BenchError`
    when the endpoint serves several models or none."""
    if endpoint.model:
        return endpoint
    try:
        model = await discover_model(endpoint)
    except EndpointUnreachableError as exc:
        print(f"splitdesk {command}: cannot list the models: {exc}", file=err)
        model = ""
    return dataclasses.replace(endpoint, model=model)  # its headers and query kept


def write_document(
    table: str, text: str, json_path: str | None, out: TextIO, err: TextIO, command: str
) -> bool:
    """Print ``table`` and write the JSON ``text`` where ``--json`` says: ``"-"`` puts the
    JSON on ``out`` and the table on ``err``; a path gets the JSON (the table goes to
    ``out``). Returns ``False`` (one line on ``err``) when the file cannot be written."""
    if json_path == "-":
        print(table, file=err)
        print(text, file=out)
        return True
    print(table, file=out)
    if json_path:
        try:
            write_atomic(Path(json_path), text + "\n")
        except OSError as exc:
            print(f"splitdesk {command}: cannot write {json_path}: {exc}", file=err)
            return False
    return True


@dataclass(frozen=True)
class Lateness:
    """How late things ran during one run (seconds, ``None`` when not measured): the
    built-in endpoint behind its schedule (``endpoint_slip_s``) and the measuring client's
    own event loop (``client_lag_s``), :mod:`splitdesk.core.analyse.disturbance`."""

    endpoint_slip_s: float | None
    client_lag_s: float | None


async def run_on_schedule(
    config: RunConfig,
    state: RunState,
    questions: list[str],
    plan: RunPlan,
    sim_root: str | None,
    interrupt: Interrupt | None = None,
) -> Lateness:
    """Send ``plan`` (its events into ``state``); returns how far the built-in endpoint at
    ``sim_root`` fell behind its schedule meanwhile (:func:`~splitdesk.core.analyse.
    predict.schedule_slip_s` before and after; ``None`` on other endpoints) and how late
    the client's loop woke (:class:`~splitdesk.core.measure.loop_lag.LoopLag`). Ctrl-C
    (``interrupt``) cancels the run at once: its streams end ``stopped``."""
    interrupt = interrupt or Interrupt()
    slip0 = await interrupt.wait(schedule_slip_s(sim_root)) if sim_root is not None else None
    runner = Runner(config, state.apply)
    async with LoopLag() as lag:
        await interrupt.run(runner, lambda: runner.run(questions, plan))
    slip1 = await interrupt.wait(schedule_slip_s(sim_root)) if sim_root is not None else None
    slip = slip1 - slip0 if slip0 is not None and slip1 is not None else None
    return Lateness(slip, lag.late_s)


async def configured_limit(runs: list[BenchRun], endpoint: EndpointConfig) -> ServerLimit | None:
    """The server's published concurrency limit (:func:`~splitdesk.core.measure.
    server_limits.probe_limit`), asked after the runs and only when their diagnosis is one
    that names it (slot-limited, one at a time): no traffic to other servers."""
    repeats = sorted({r.repeat for r in runs})
    d = diagnose_repeats([[r.state.requests for r in runs if r.repeat == k] for k in repeats])
    if d.code not in LIMIT_CODES:
        return None
    return await probe_limit(endpoint.base_url, endpoint.verify)


def name_limit(doc: dict[str, Any], limit: ServerLimit | None) -> None:
    """Put ``limit`` in a bench or sweep document: ``server_limit`` (``null`` when the
    server published none) and, for a bench, into ``summary.diagnosis``'s text and
    evidence (:func:`~splitdesk.core.analyse.diagnosis.configured_limit_json`)."""
    doc["server_limit"] = limit.to_json() if limit is not None else None
    summary = doc.get("summary")
    if limit is None or not isinstance(summary, dict):
        return
    d = summary.get("diagnosis")
    if isinstance(d, dict) and d.get("code") in LIMIT_CODES:
        summary["diagnosis"] = configured_limit_json(d, limit.slots, limit.where)


async def _bench(
    opts: BenchOptions,
    endpoint: EndpointConfig,
    sim_root: str | None,
    err: TextIO,
    runs: list[BenchRun],
    interrupt: Interrupt | None = None,
    sim_pid: int | None = None,
) -> list[BenchRun]:
    interrupt = interrupt or Interrupt()
    config = opts.run_config(endpoint)
    # splitdesk's own CPU per run (core/measure/client_cpu.py): the engine is this process
    pids: dict[str, int | None] = {"engine": None}
    if sim_pid is not None:
        pids["endpoint"] = sim_pid
    first = True
    for k in range(-opts.warmup, opts.repeat):  # k < 0: warm-up rounds, discarded
        for mode in mode_order(modes_of(opts.mode), k):
            if interrupt.requested():  # Ctrl-C: no further run (core/bench/interrupt.py)
                return runs
            plan = make_plan(
                mode,  # type: ignore[arg-type]
                opts.questions,
                opts.template,
                opts.max_tokens,
                context=opts.context,
            )
            if opts.nonce_on:
                plan = with_nonce(plan, new_nonce())
            if opts.pause_s and not first:
                await interrupt.sleep(opts.pause_s)  # --pause: the server settles between runs
            first = False
            predicted = None
            preds: list[PredictedRequest] | None = None
            if sim_root is not None:
                try:
                    preds = await interrupt.wait(
                        predict_plan(sim_root, endpoint, plan, opts.temperature, opts.seed)
                    )
                    predicted = predicted_makespan(preds) if preds is not None else None
                except httpx.HTTPError:
                    predicted = None
            if interrupt.requested():
                return runs
            which = "warm-up, discarded" if k < 0 else f"repeat {k + 1}/{opts.repeat}"
            print(f"  running {mode} ({which}) …", file=err, flush=True)
            run = await _measure(
                opts, config, plan, sim_root, mode, k, predicted, preds, interrupt, pids, err
            )
            if k >= 0 and run.disturbed and not _stopped(run.state) and not interrupt.requested():
                # a run the machine distorted is measured once more (a fresh nonce: no
                # prefix cached by the first); the note keeps why
                print(f"  measuring {mode} again: {run.disturbed}", file=err, flush=True)
                if opts.nonce_on:
                    fresh = make_plan(
                        mode,  # type: ignore[arg-type]
                        opts.questions,
                        opts.template,
                        opts.max_tokens,
                        context=opts.context,
                    )
                    plan = with_nonce(fresh, new_nonce())
                again = await _measure(
                    opts, config, plan, sim_root, mode, k, predicted, preds, interrupt, pids, err
                )
                again.remeasured = run.disturbed
                run = again
            if k < 0:
                if _stopped(run.state):
                    return runs
                continue
            runs.append(run)
            if _stopped(run.state):
                return runs
    return runs


def _stopped(state: RunState) -> bool:
    return state.ended is not None and state.ended.stopped


async def _measure(
    opts: BenchOptions,
    config: RunConfig,
    plan: RunPlan,
    sim_root: str | None,
    mode: str,
    repeat: int,
    predicted: float | None,
    preds: list[PredictedRequest] | None,
    interrupt: Interrupt | None = None,
    pids: dict[str, int | None] | None = None,
    err: TextIO | None = None,
) -> BenchRun:
    """One measured run of ``plan`` as a :class:`BenchRun` (lateness measured, splitdesk's
    own CPU over it for the processes ``pids`` names, the prediction dropped with its note
    when the rate limit makes it meaningless). Each retry after a 429 is said on ``err``
    as it is scheduled: how long it waits and why (a wait capped at the longest splitdesk
    waits says so), so a long back-off is never a silent pause."""
    state = RunState()
    if opts.record_path:
        keep_events(state)  # every event with its time, for --record
    if err is not None:
        stream = err

        def said(event: RunEvent) -> None:
            if isinstance(event, RequestRetrying):
                print(
                    f"    request {event.req + 1}: {event.error.message}; attempt "
                    f"{event.attempt + 1} in {event.delay_s:g} s",
                    file=stream,
                    flush=True,
                )

        state.subscribe(said)
    cpu0 = CpuReading.now(pids or {"engine": None})
    late = await run_on_schedule(config, state, opts.questions, plan, sim_root, interrupt)
    cpu = ClientCpu.between(cpu0, CpuReading.now(pids or {"engine": None}))
    note = None
    if predicted is not None and prediction_ignores_rate_limit(preds, state.requests):
        predicted, note = None, RATE_LIMIT_NOTE  # an idle server's figure, no 429s
    return BenchRun(
        mode,
        repeat,
        state,
        predicted,
        note,
        late.endpoint_slip_s,
        predicted=tuple(preds or ()),
        client_lag_s=late.client_lag_s,
        client_cpu=cpu,
    )


def _server_poller(opts: BenchOptions, sim_root: str | None, base_url: str) -> MetricsPoller | None:
    """With ``--record``: a :class:`MetricsPoller` of the endpoint's ``/metrics``, started
    (the built-in endpoint's at ``sim_root``, else the server root of ``base_url``); a
    server without one gives up by itself after a few failed polls. ``None`` without
    ``--record`` or for a URL that names no server."""
    if not opts.record_path:
        return None
    try:
        url = f"{sim_root}/metrics" if sim_root is not None else metrics_url(base_url)
    except ValueError:
        return None
    return MetricsPoller(url, verify=opts.verify).start()


def run_bench(
    opts: BenchOptions,
    out: TextIO | None = None,
    err: TextIO | None = None,
    launch: Launcher | None = None,
) -> int:
    """Run the bench; returns the exit status (0 all succeeded, 1 some failed, 2 bad input).

    ``out``/``err`` default to the current ``sys.stdout``/``sys.stderr``. ``launch`` starts
    the built-in endpoint (``splitdesk.sim.launcher.start_sim``, passed in by the CLI: the
    core never imports the simulator). Raises :class:`BenchError` for problems the user
    must fix before anything runs.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    with open_target(opts, launch) as target:
        sim, base_url, key = target.sim, target.base_url, target.key
        endpoint = target.endpoint
        runs: list[BenchRun] = []  # filled as runs finish: an interrupted bench keeps them
        resolved = [endpoint]

        if sim is None:  # the environment's proxy/CA problems, said before anything is sent
            for problem in environment_problems(base_url, opts.verify):
                print(f"splitdesk bench: {redact(problem, key)}", file=err, flush=True)

        limit: list[ServerLimit] = []
        interrupt = Interrupt()

        async def main() -> None:
            interrupt.install()  # Ctrl-C stops at once, keeping what finished
            try:
                ep = resolved[0] = await with_model(endpoint, err, "bench")
                sim_pid = getattr(sim, "pid", None) if sim is not None else None
                url = sim.url if sim else None
                await _bench(opts, ep, url, err or sys.stderr, runs, interrupt, sim_pid)
                # no further traffic after Ctrl-C: the limit is asked only of a whole bench
                found = await interrupt.wait(configured_limit(runs, ep))
                if found is not None:
                    limit.append(found)
            finally:
                interrupt.uninstall()

        # --record keeps the server's own view too: its /metrics, polled meanwhile on a
        # thread of its own (never the loop that stamps the runs' bytes)
        poller = _server_poller(opts, sim.url if sim else None, base_url)
        interrupted = False
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            interrupted = True
        finally:
            if poller is not None:
                poller.stop()
        interrupted = interrupted or interrupt.requested()
        interrupted = interrupted or any(r.state.ended and r.state.ended.stopped for r in runs)
        info = target.info(resolved[0], opts.profile)
        doc = bench_document(info, opts.questions, runs)
        name_limit(doc, limit[0] if limit else None)
        doc["client"] = opts.client.to_json()
        repeats = RepeatOptions(opts.repeat, True, opts.warmup, opts.pause_s, opts.nonce_on)
        order = [mode_order(modes_of(opts.mode), k) for k in range(opts.repeat)]
        doc["repeats"] = repeats_json(repeats, order, bench_rows(runs))
        doc["cost"], cost_lines = cost_document(
            [r.state.requests for r in runs if r.repeat == 0], opts.prices, doc["summary"]
        )
        traces = [t for r in runs for t in r.state.requests]
        if traces and all(t.outcome == "failed" and t.t_headers is None for t in traces):
            # Nothing answered (unreachable, refused, a setup problem): the cause, once per
            # distinct error, not a table of dashes (the JSON still has every request).
            table = "\n".join([format_table(doc, runs).splitlines()[0], *failure_lines(traces)])
        else:
            table = "\n".join(
                [
                    format_table(doc, runs),
                    *summary_lines(doc["summary"]),
                    *cost_lines,
                    opts.client.describe(),
                    repeats.line(per_side=bool(opts.context.strip())),
                ]
            )
        text = json.dumps(doc, indent=2, ensure_ascii=False)
        if not write_document(table, text, opts.json_path, out, err, "bench"):
            return 1
        if opts.record_path:
            try:
                samples = list(poller.samples) if poller is not None else []
                recording = bench_recording(info, opts, runs, samples)
                save_recording(recording, Path(opts.record_path), secrets=[key])
            except RecordingError as exc:
                print(f"splitdesk bench: --record: {exc}", file=err)
                return 1
            # where it went, on stderr (stdout may be the JSON document: --json -)
            print(f"recorded to {opts.record_path}", file=err, flush=True)
        if interrupted:
            print("splitdesk bench: interrupted", file=err)
            return 130
        failed = any(t.outcome != "done" for r in runs for t in r.state.requests)
        return 1 if failed else 0
