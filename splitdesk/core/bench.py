"""``splitdesk bench``: the measuring engine without a window.

Runs each mode (combined, parallel, sequential) once per repeat, on an idle endpoint, one
after another; prints a table like the seed article's script (combined latency, parallel
latency, speed-up) plus TTFT and tokens per side; writes the JSON document of
:mod:`splitdesk.core.report`. On the built-in endpoint it also asks the cost model for the
predicted makespans.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

from splitdesk.builtin_endpoint import BUILTIN_MODEL, Launcher
from splitdesk.core.bench_table import format_table
from splitdesk.core.client_pattern import ClientPattern
from splitdesk.core.cost import Prices, cost_document
from splitdesk.core.diagnosis import summary_lines
from splitdesk.core.netenv import NetworkSetupError, client_settings, environment_problems
from splitdesk.core.plans import make_plan
from splitdesk.core.predict import (
    RATE_LIMIT_NOTE,
    PredictedRequest,
    predict_plan,
    predicted_makespan,
    prediction_ignores_rate_limit,
    schedule_slip_s,
)
from splitdesk.core.recording import (
    RecordingError,
    bench_recording,
    keep_events,
    save_recording,
)
from splitdesk.core.repeats import mode_order, new_nonce, repeats_line, with_nonce
from splitdesk.core.report import BenchRun, bench_document
from splitdesk.core.run_state import RunState
from splitdesk.core.runner import RunConfig, Runner, Timeouts, classify_transport_error, redact
from splitdesk.core.template import CombinedTemplate
from splitdesk.logs import register_secret
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig

BUILTIN = "builtin"


class BenchError(Exception):
    """A problem the user must fix (bad endpoint, no model …); one line, exit status 2."""


class EndpointUnreachableError(Exception):
    """The endpoint could not be reached to list its models (connection refused, DNS, a
    proxy or CA setting that cannot work). Not a bad argument: the bench still sends its
    requests, so the JSON records each one's error, and exits 1 (DESIGN.md, "The headless
    contract")."""


@dataclass
class BenchOptions:
    """What ``splitdesk bench`` was asked to do (see ``splitdesk bench --help``)."""

    questions: list[str]
    endpoint: str = BUILTIN
    api: str = "openai-chat"
    model: str | None = None
    profile: str = "batching"
    sim_params: dict[str, Any] = field(default_factory=dict)
    max_tokens: int | None = 512
    mode: str = "all"
    repeat: int = 1
    json_path: str | None = None
    record_path: str | None = None  #: ``--record FILE``: save every run as a recording
    api_key_env: str | None = None
    temperature: float | None = None
    seed: int | None = None
    timeouts: Timeouts = field(default_factory=Timeouts)
    retry_429: int = 0
    verify: bool | str = True
    template: CombinedTemplate = field(default_factory=CombinedTemplate)
    #: ``--cold`` / ``--release``: the client's pattern (:mod:`splitdesk.core.client_pattern`)
    client: ClientPattern = field(default_factory=ClientPattern)
    #: ``--price-in``/``--price-out``: per million tokens (no default: no cost without them)
    prices: Prices | None = None
    #: ``--warmup``/``--pause``/``--nonce`` (:mod:`splitdesk.core.repeats`); ``nonce``
    #: ``None``: on when ``repeat`` > 1
    warmup: int = 0
    pause_s: float = 0.0
    nonce: bool | None = None

    @property
    def nonce_on(self) -> bool:
        """Whether every run's prompts open with a nonce."""
        return self.repeat > 1 if self.nonce is None else self.nonce


def modes_of(mode: str) -> list[str]:
    """The single-group modes a ``--mode`` value runs, in order (``dependent``: the
    combined request, then the chain of :mod:`splitdesk.core.plans`)."""
    if mode == "dependent":
        return ["combined", "chain"]
    if mode == "one-after-another":
        return ["combined", "parallel"]
    return ["combined", "parallel", "sequential"] if mode == "all" else [mode]


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
    return key


async def discover_model(endpoint: EndpointConfig) -> str:
    """The endpoint's only model, for when ``--model`` was not given: the one its base URL
    names (an Azure deployment), else the only one it lists. Raises :class:`BenchError`
    when there are several or none, or the list is unavailable, and
    :class:`EndpointUnreachableError` when the endpoint cannot be reached at all."""
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
            response.raise_for_status()
            models = provider.parse_models(response.json())
    except httpx.TransportError as exc:
        problem = classify_transport_error(exc, endpoint, 10.0)
        raise EndpointUnreachableError(redact(problem.message, endpoint.api_key)) from None
    except NetworkSetupError as exc:
        raise EndpointUnreachableError(redact(str(exc), endpoint.api_key)) from None
    except (httpx.HTTPError, ValueError) as exc:
        raise BenchError(
            "pass --model NAME: could not list the models at "
            f"{redact(endpoint.base_url, endpoint.api_key)} "
            f"({redact(str(exc), endpoint.api_key)[:200]})"
        ) from None
    if len(models) != 1:
        listed = ", ".join(models[:10]) or "none"
        raise BenchError(f"pass --model NAME: the endpoint serves {listed}")
    return models[0]


async def _bench(
    opts: BenchOptions,
    endpoint: EndpointConfig,
    sim_root: str | None,
    err: TextIO,
    runs: list[BenchRun],
) -> list[BenchRun]:
    config = RunConfig(
        endpoint,
        temperature=opts.temperature,
        seed=opts.seed,
        timeouts=opts.timeouts,
        marker=opts.template.marker,
        retry_429=opts.retry_429,
        warm_connections=not opts.client.cold,
        release=opts.client.release,
    )
    first = True
    for k in range(-opts.warmup, opts.repeat):  # k < 0: warm-up rounds, discarded
        for mode in mode_order(modes_of(opts.mode), k):
            plan = make_plan(mode, opts.questions, opts.template, opts.max_tokens)  # type: ignore[arg-type]
            if opts.nonce_on:
                plan = with_nonce(plan, new_nonce())
            if opts.pause_s and not first:
                await asyncio.sleep(opts.pause_s)  # --pause: the server settles between runs
            first = False
            predicted = None
            preds: list[PredictedRequest] | None = None
            if sim_root is not None:
                try:
                    preds = await predict_plan(
                        sim_root, endpoint, plan, opts.temperature, opts.seed
                    )
                    predicted = predicted_makespan(preds)
                except httpx.HTTPError:
                    predicted = None
            state = RunState()
            if opts.record_path:
                keep_events(state)  # every event with its time, for --record
            which = "warm-up, discarded" if k < 0 else f"repeat {k + 1}/{opts.repeat}"
            print(f"  running {mode} ({which}) …", file=err, flush=True)
            slip0 = await schedule_slip_s(sim_root) if sim_root is not None else None
            await Runner(config, state.apply).run(opts.questions, plan)
            slip1 = await schedule_slip_s(sim_root) if sim_root is not None else None
            slip = slip1 - slip0 if slip0 is not None and slip1 is not None else None
            if k < 0:
                if state.ended is not None and state.ended.stopped:
                    return runs
                continue
            note = None
            if predicted is not None and prediction_ignores_rate_limit(preds, state.requests):
                predicted, note = None, RATE_LIMIT_NOTE  # an idle server's figure, no 429s
            runs.append(BenchRun(mode, k, state, predicted, note, slip))
            if state.ended is not None and state.ended.stopped:
                return runs
    return runs


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
        endpoint = EndpointConfig(base_url, opts.api, opts.model or "", key, verify=opts.verify)
        if sim is not None and not opts.model:
            endpoint = EndpointConfig(base_url, opts.api, BUILTIN_MODEL, None)

        runs: list[BenchRun] = []  # filled as runs finish: an interrupted bench keeps them
        resolved = [endpoint]

        if sim is None:  # the environment's proxy/CA problems, said before anything is sent
            for problem in environment_problems(base_url, opts.verify):
                print(f"splitdesk bench: {redact(problem, key)}", file=err, flush=True)

        async def main() -> None:
            ep = endpoint
            if not ep.model:
                try:
                    model = await discover_model(ep)
                except EndpointUnreachableError as exc:
                    # a failed run, not a bad argument: send anyway, each request's error
                    # goes into the JSON, exit status 1
                    print(f"splitdesk bench: cannot list the models: {exc}", file=err)
                    model = ""
                ep = EndpointConfig(ep.base_url, ep.api, model, ep.api_key, verify=ep.verify)
                resolved[0] = ep
            await _bench(opts, ep, sim.url if sim else None, err or sys.stderr, runs)

        interrupted = False
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            interrupted = True
        interrupted = interrupted or any(r.state.ended and r.state.ended.stopped for r in runs)
        endpoint = resolved[0]
        info = {"url": redact(endpoint.base_url, key), "api": endpoint.api, "model": endpoint.model}
        if sim is not None:
            info["url"] = f"builtin:{opts.profile} ({base_url})"
            info["profile"] = opts.profile
        doc = bench_document(info, opts.questions, runs)
        doc["client"] = opts.client.to_json()
        doc["repeats"] = {
            "repeat": opts.repeat,
            "warmup": opts.warmup,
            "pause_s": opts.pause_s,
            "nonce": opts.nonce_on,
            "order": [mode_order(modes_of(opts.mode), k) for k in range(opts.repeat)],
        }
        doc["cost"], cost_lines = cost_document(
            [r.state.requests for r in runs if r.repeat == 0], opts.prices, doc["summary"]
        )
        table = "\n".join(
            [
                format_table(doc, runs),
                *summary_lines(doc["summary"]),
                *cost_lines,
                opts.client.describe(),
                repeats_line(opts.repeat, opts.warmup, opts.pause_s, opts.nonce_on),
            ]
        )
        text = json.dumps(doc, indent=2, ensure_ascii=False)
        if opts.json_path == "-":
            print(table, file=err)
            print(text, file=out)
        else:
            print(table, file=out)
            if opts.json_path:
                try:
                    Path(opts.json_path).write_text(text + "\n", encoding="utf-8")
                except OSError as exc:
                    print(f"splitdesk bench: cannot write {opts.json_path}: {exc}", file=err)
                    return 1
        if opts.record_path:
            try:
                recording = bench_recording(info, opts, runs)
                save_recording(recording, Path(opts.record_path), secrets=[key])
            except RecordingError as exc:
                print(f"splitdesk bench: --record: {exc}", file=err)
                return 1
        if interrupted:
            print("splitdesk bench: interrupted", file=err)
            return 130
        failed = any(t.outcome != "done" for r in runs for t in r.state.requests)
        return 1 if failed else 0
    finally:
        if sim is not None:
            sim.stop()
