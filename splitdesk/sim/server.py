"""The built-in endpoint's HTTP server: a Starlette app served by uvicorn.

Routes (each dialect's wire format is documented in its module under ``sim/wire``):

* ``GET /v1/models`` — the served model (Anthropic's list shape when the request carries
  ``anthropic-version``, OpenAI's otherwise)
* ``POST /v1/chat/completions``, ``POST /v1/completions`` — OpenAI, streaming or not
* ``POST /v1/responses`` — OpenAI Responses
* ``POST /openai/deployments/{deployment}/chat/completions`` and ``GET /openai/models`` —
  Azure OpenAI (``api-version`` query required on the former)
* ``POST /v1/messages`` — Anthropic Messages
* ``POST /api/chat``, ``POST /api/generate``, ``GET /api/tags``, ``GET /api/version`` —
  Ollama (NDJSON)
* ``POST /generate_stream``, ``POST /generate``, ``GET /info`` — TGI
* ``GET /_splitdesk/trace/{id}`` — the emission log of one request (``x-request-id``)
* ``GET|POST /_splitdesk/faults`` — the fault rules in force / replace them
  (:mod:`splitdesk.sim.faults`)
* ``GET /_splitdesk/info`` — parameters and load
* ``POST /_splitdesk/predict`` — the cost model's TTFT/E2E for a plan of requests

Every generation request goes through :meth:`SimServer.generate`: validate, wait half the
simulated round trip, apply the rate limit, pick the answer's tokens, submit the sequence
to the :class:`~splitdesk.sim.scheduler.Scheduler` and stream its token events, each
delayed by the other half of the round trip. A client that disconnects frees its engine
slot at once (Starlette cancels the stream; the response's ``finally`` cancels the
sequence). A fault chosen by :class:`~splitdesk.sim.faults.FaultSchedule` (the ``--fault``
rules, the ``x-splitdesk-fault`` header) changes what happens after the first half round
trip: the connection is cut, the answer is an error, or the stream is written with the
fault injected (:class:`~splitdesk.sim.streaming.EngineStream`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import json
import logging
import math
import os
import secrets
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from http import HTTPStatus
from typing import Any

import anyio._backends._asyncio  # noqa: F401 - warm-up, see SimServer.warm_up
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from splitdesk import __version__
from splitdesk.sim import faults, textgen
from splitdesk.sim.connection import RawSendMiddleware
from splitdesk.sim.costmodel import PlannedRequest, predict
from splitdesk.sim.emission_log import PROMPT_HEAD_CHARS, EmissionLog, RequestRecord
from splitdesk.sim.faults import Fault, FaultSchedule
from splitdesk.sim.metrics import metrics_registry, render
from splitdesk.sim.params import SimParams
from splitdesk.sim.prefix_cache import block_hashes, cacheable_tokens
from splitdesk.sim.prompts import read_prompt
from splitdesk.sim.scheduler import LiveSequence, Scheduler
from splitdesk.sim.streaming import EngineStream, prefilled
from splitdesk.sim.wire.anthropic import AnthropicMessages
from splitdesk.sim.wire.azure import AzureChat
from splitdesk.sim.wire.base import Dialect, GenRequest, Reply, WireError
from splitdesk.sim.wire.ollama import OllamaChat, OllamaGenerate
from splitdesk.sim.wire.openai import OpenAIChat, OpenAICompletions, openai_error
from splitdesk.sim.wire.openai_responses import OpenAIResponses
from splitdesk.sim.wire.tgi import TGIGenerate

log = logging.getLogger(__name__)

#: Deepest nesting of lists and objects accepted in a request body; deeper ones get 400 in
#: the dialect's error shape (an API request nests a handful of levels; Python's parser
#: would run out of stack near 1,000 and answer a plain-text 500).
MAX_JSON_DEPTH = 64

#: Largest request body accepted (bytes); bigger ones get 413.
MAX_BODY_BYTES = 2 * 1024 * 1024

#: Every dialect by its ``--api`` name (TGI's entry is ``/generate_stream``; ``/generate``
#: is the same dialect, not streamed).
DIALECTS: dict[str, Dialect] = {
    d.name: d
    for d in (
        OpenAIChat(),
        OpenAICompletions(),
        OpenAIResponses(),
        AzureChat(),
        AnthropicMessages(),
        OllamaChat(),
        OllamaGenerate(),
        TGIGenerate(streaming=True),
    )
}


async def read_json(request: Request) -> Any:
    """The request's JSON body; 413 above :data:`MAX_BODY_BYTES`, 400 when not JSON."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise WireError(413, f"request body too large (limit {MAX_BODY_BYTES} bytes)")
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise WireError(413, f"request body too large (limit {MAX_BODY_BYTES} bytes)")
        parts.append(chunk)
    try:
        value = json.loads(b"".join(parts), parse_constant=_reject_constant)
    except RecursionError:  # deeper than the parser's stack: the same answer as below
        raise _too_deep() from None
    except (ValueError, UnicodeError) as exc:
        raise WireError(400, f"We could not parse the JSON body of your request ({exc}).") from None
    if _depth_exceeds(value, MAX_JSON_DEPTH):
        raise _too_deep()
    try:
        # "\udcff" escapes decode to lone surrogates, which no text can hold (RFC 8259 §8.2)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeError) as exc:
        raise WireError(400, f"We could not parse the JSON body of your request ({exc}).") from None
    return value


def _too_deep() -> WireError:
    return WireError(
        400,
        f"The JSON body of your request is nested deeper than {MAX_JSON_DEPTH} levels; "
        "no API request needs that many.",
    )


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True when ``value`` (parsed JSON) nests lists and objects deeper than ``limit``;
    iterative, so no depth can exhaust the stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _reject_constant(name: str) -> Any:
    """``json.loads`` hook: NaN and Infinity are not JSON (RFC 8259 §6)."""
    raise ValueError(f"{name} is not a JSON number")


class SimServer:
    """State of one built-in endpoint: parameters, engine, emission log, load counters."""

    def __init__(
        self,
        params: SimParams,
        profile: str = "custom",
        fault_schedule: FaultSchedule | None = None,
    ) -> None:
        self.params = params
        self.profile = profile
        #: which request gets which injected fault (none by default)
        self.faults = fault_schedule or FaultSchedule()
        self.scheduler = Scheduler(params)
        self.log = EmissionLog()
        self.active = 0
        #: Set when the server is stopping: open streams end at once.
        self.closing = asyncio.Event()
        self._ids = itertools.count(1)
        self._id_salt = secrets.token_hex(3)

    def warm_up(self) -> None:
        """Do once, before serving, the work a first request would otherwise pay for (phrase
        bank, regexes; anyio, which Starlette's streaming imports lazily, is imported at the
        top of this module): ~40 ms that would land on the first measured TTFT."""
        self.reply_tokens(GenRequest(self.params.model, "1. warm\n2. up", 4, 8, True))
        self.reply_tokens(GenRequest(self.params.model, "warm up", 2, 8, True))

    # -- helpers ------------------------------------------------------------------------------
    def new_id(self) -> str:
        return f"sim-{self._id_salt}-{next(self._ids):06d}"

    def reply_tokens(self, gen: GenRequest) -> tuple[list[str], str]:
        """The tokens the simulated model answers ``gen`` with, and the finish reason
        (``"stop"``, or ``"length"`` when ``max_tokens`` cut the answer)."""
        p = self.params
        reading = read_prompt(gen.prompt)
        if reading.marker is None:
            tokens = textgen.answer_tokens(
                reading.questions[0], gen.seed, p.answer_tokens, p.answer_spread
            )
        else:
            tokens = textgen.combined_tokens(
                reading.questions,
                gen.seed,
                p.answer_tokens,
                p.answer_spread,
                p.combined_compression,
                reading.marker,
            )
        if gen.max_tokens is not None and len(tokens) > gen.max_tokens:
            return tokens[: gen.max_tokens], "length"
        return tokens, "stop"

    def cache_blocks(self, gen: GenRequest) -> tuple[tuple[bytes, ...], int]:
        """The names of ``gen``'s cacheable prompt blocks and how many leading tokens may be
        cached (:mod:`splitdesk.sim.prefix_cache`); nothing when the prefix cache is off."""
        if not self.params.prefix_cache:
            return (), 0
        parts = gen.prompt_parts
        limit = cacheable_tokens(parts, gen.cache_marks_only)
        return block_hashes(parts, limit), limit

    def _error(
        self, dialect: Dialect | None, err: WireError, request_id: str | None = None
    ) -> Response:
        headers = dict(err.headers)
        if request_id:
            headers["x-request-id"] = request_id
        body = dialect.error(err) if dialect else openai_error(err)
        status = dialect.status(err) if dialect else err.status
        return JSONResponse(body, status_code=status, headers=headers)

    def _half_rtt(self) -> float:
        return self.params.scaled(self.params.rtt) / 2

    # -- generation ---------------------------------------------------------------------------
    async def generate(self, request: Request, dialect: Dialect) -> Response:
        """Serve one generation request in ``dialect``'s wire format."""
        rid = self.new_id()
        record = self.log.open(RequestRecord(rid, dialect.name, time.perf_counter_ns()))
        try:
            gen = dialect.parse_http(
                await read_json(request), request.path_params, request.query_params
            )
            record.prompt_head = gen.prompt[:PROMPT_HEAD_CHARS]
            if not dialect.serves(gen.model, self.params.model):
                raise dialect.model_not_found(gen.model, self.params.model)
            try:
                fault = self.faults.pick(request.headers, gen.prompt)
            except ValueError as exc:
                raise WireError(400, f"{faults.HEADER}: {exc}") from None
        except WireError as err:
            record.status = err.status
            return self._error(dialect, err, rid)
        record.fault = fault.label if fault else None

        half = self._half_rtt()
        if half:
            await asyncio.sleep(half)
        if fault is not None and fault.kind.before_headers:
            answer = await self._fault_before_headers(request, dialect, gen, fault, record)
            if answer is not None:
                return answer
            fault = None  # a hang that ran out: answer normally
        limit = self.params.rate_limit_concurrency
        if limit and self.active >= limit:
            if half:
                await asyncio.sleep(half)
            record.status = 429
            wait = self.params.scaled(self.params.retry_after)
            whole = max(1, math.ceil(wait))  # Retry-After holds whole seconds (RFC 9110 §10.2.3)
            return self._error(
                dialect,
                WireError(
                    429,
                    f"Rate limit reached: at most {limit} concurrent requests. "
                    f"Please retry after {whole} s.",
                    kind="rate_limit_error",
                    code="rate_limit_exceeded",
                    # retry-after-ms: the precise wait, as Azure OpenAI sends it
                    headers={"retry-after": str(whole), "retry-after-ms": str(round(wait * 1000))},
                ),
                rid,
            )

        tokens, finish = self.reply_tokens(gen)
        if fault is not None and fault.name == "split-utf8":
            tokens = [faults.widen(t, i) for i, t in enumerate(tokens)]
        record.prompt_tokens = gen.prompt_tokens
        blocks, cacheable = self.cache_blocks(gen)
        reply = Reply(
            rid,
            gen.model or self.params.model,
            gen.prompt_tokens,
            gen.include_usage,
            # no-end: no token event may carry the end signal either (TGI's final details)
            planned_tokens=len(tokens) + (1 if fault is not None and fault.name == "no-end" else 0),
            finish_reason=finish,
            received_ns=record.received_ns,
            report_cache=self.params.prefix_cache,
        )
        self.active += 1
        reply.submitted_ns = time.perf_counter_ns()
        live = self.scheduler.submit(gen.prompt_tokens, len(tokens), blocks)
        live.cacheable = cacheable

        def close() -> None:
            self.scheduler.cancel(live)
            self.active -= 1
            if record.finish_reason is None:
                record.disconnected = True

        if not gen.stream:
            try:
                text = await self._collect(live, tokens, record, reply, half)
            finally:
                close()
            record.finish_reason = finish
            record.delivered(text, 0)
            return JSONResponse(dialect.body(reply, text, finish), headers={"x-request-id": rid})

        try:
            if half:
                await asyncio.sleep(half)
        except BaseException:
            close()
            raise
        return EngineStream(  # type: ignore[return-value]
            dialect,
            reply,
            tokens,
            finish,
            live,
            record,
            half,
            close,
            {"x-request-id": rid, "cache-control": "no-cache"},
            self.closing,
            fault,
        )

    async def _fault_before_headers(
        self,
        request: Request,
        dialect: Dialect,
        gen: GenRequest,
        fault: Fault,
        record: RequestRecord,
    ) -> Response | None:
        """The response for a fault that strikes before the headers (``refuse``, ``reset``,
        ``hang``, ``status``, ``html``); ``None`` when a ``hang`` ran out and the request is
        to be answered normally."""
        name = fault.name
        if name in ("refuse", "reset"):
            record.status = 0
            record.disconnected = True
            return faults.CutConnection(fault)  # type: ignore[return-value]
        if name == "hang":
            if await faults.wait_for_disconnect(request.receive, fault.value, self.closing):
                return None
            record.disconnected = True
            record.status = 0
            return Response(status_code=503)  # nobody is there to read it
        code = fault.int_value
        record.status = code
        if name == "html":
            phrase = HTTPStatus(code).phrase
            return HTMLResponse(
                faults.html_page(code, phrase),
                status_code=code,
                headers={"x-request-id": record.id},
            )
        retry = {"retry-after": str(faults.RETRY_AFTER_S)} if code in (429, 503) else {}
        err = {
            401: WireError(
                401,
                "Incorrect API key provided (injected fault).",
                kind="authentication_error",
                code="invalid_api_key",
            ),
            404: WireError(
                404,
                f"The model `{gen.model or self.params.model}` does not exist or you do not "
                "have access to it "
                "(injected fault).",
                param="model",
                code="model_not_found",
            ),
            429: WireError(
                429,
                "Rate limit reached (injected fault). "
                f"Please retry after {faults.RETRY_AFTER_S} s.",
                kind="rate_limit_error",
                code="rate_limit_exceeded",
                headers=retry,
            ),
            503: WireError(
                503,
                "The server is overloaded; please try again later (injected fault).",
                kind="overloaded_error",
                headers=retry,
            ),
        }.get(
            code,
            WireError(
                code,
                "The server had an error while processing your request (injected fault).",
                kind="server_error",
            ),
        )
        return self._error(dialect, err, record.id)

    async def _next_event_text(
        self, live: LiveSequence, tokens: list[str], reply: Reply, half: float
    ) -> tuple[str, int, int, bool]:
        ev = await live.queue.get()
        if reply.first_token_ns is None:
            prefilled(reply, live)
        start = reply.output_tokens
        reply.output_tokens += ev.tokens
        if reply.first_token_ns is None:
            reply.first_token_ns = ev.scheduled_ns
        reply.last_token_ns = ev.scheduled_ns
        text = "".join(tokens[start : reply.output_tokens])
        reply.parts.append(text)
        if half:
            wait = (ev.scheduled_ns - time.perf_counter_ns()) / 1e9 + half
            if wait > 0:
                await asyncio.sleep(wait)
        return text, ev.tokens, ev.scheduled_ns, ev.done

    async def _collect(
        self,
        live: LiveSequence,
        tokens: list[str],
        record: RequestRecord,
        reply: Reply,
        half: float,
    ) -> str:
        parts: list[str] = []
        done = False
        while not done:
            text, n, scheduled, done = await self._next_event_text(live, tokens, reply, half)
            record.events.append([scheduled, time.perf_counter_ns(), n])
            parts.append(text)
        record.output_tokens = reply.output_tokens
        return "".join(parts)

    # -- other routes ---------------------------------------------------------------------------
    async def models(self, request: Request) -> Response:
        """``GET /v1/models``: Anthropic's list shape when asked with ``anthropic-version``
        (https://docs.anthropic.com/en/api/models-list), OpenAI's otherwise."""
        if "anthropic-version" in request.headers:
            model = self.params.model
            return JSONResponse(
                {
                    "data": [
                        {
                            "type": "model",
                            "id": model,
                            "display_name": model,
                            "created_at": "2025-01-01T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "first_id": model,
                    "last_id": model,
                }
            )
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.params.model,
                        "object": "model",
                        "created": 0,
                        "owned_by": "splitdesk",
                    }
                ],
            }
        )

    async def ollama_tags(self, request: Request) -> Response:
        """``GET /api/tags`` (Ollama's local models): the served model, ``:latest`` tagged."""
        model = self.params.model
        name = model if ":" in model else f"{model}:latest"
        return JSONResponse(
            {
                "models": [
                    {
                        "name": name,
                        "model": name,
                        "modified_at": "2025-01-01T00:00:00Z",
                        "size": 0,
                        "digest": "0" * 64,
                        "details": {
                            "format": "gguf",
                            "family": "splitdesk",
                            "parameter_size": "0B",
                            "quantization_level": "none",
                        },
                    }
                ]
            }
        )

    async def ollama_version(self, request: Request) -> Response:
        """``GET /api/version``."""
        return JSONResponse({"version": f"splitdesk-sim-{__version__}"})

    async def tgi_info(self, request: Request) -> Response:
        """``GET /info`` (TGI's server description; ``model_id`` names the model)."""
        return JSONResponse(
            {
                "model_id": self.params.model,
                "model_sha": None,
                "model_pipeline_tag": "text-generation",
                "max_concurrent_requests": 128,
                "max_best_of": 2,
                "max_stop_sequences": 4,
                "max_input_tokens": 8191,
                "max_total_tokens": 8192,
                "max_batch_total_tokens": None,
                "max_client_batch_size": 4,
                "validation_workers": 2,
                "router": "text-generation-router",
                "version": f"splitdesk-sim-{__version__}",
                "sha": None,
                "docker_label": None,
            }
        )

    async def trace(self, request: Request) -> Response:
        record = self.log.get(request.path_params["request_id"])
        if record is None:
            return self._error(None, WireError(404, "unknown request id (or dropped from the log)"))
        return JSONResponse(record.to_json())

    async def fault_rules(self, request: Request) -> Response:
        """``GET /_splitdesk/faults``: the rules in force and the catalogue; ``POST``: replace
        them (body: :meth:`FaultSchedule.from_json`), 400 with the reason when malformed."""
        if request.method == "POST":
            try:
                self.faults = FaultSchedule.from_json(await read_json(request))
            except WireError as err:
                return self._error(None, err)
            except ValueError as exc:
                return self._error(None, WireError(400, str(exc)))
        return JSONResponse(self.faults.to_json())

    async def info(self, request: Request) -> Response:
        return JSONResponse(
            {
                "server": "splitdesk-sim",
                "version": __version__,
                "profile": self.profile,
                "params": self.params.model_dump(),
                "running": self.scheduler.running,
                "waiting": self.scheduler.waiting,
                "schedule_slip_s": self.scheduler.slipped_ns / 1e9,
                "active_requests": self.active,
                "pid": os.getpid(),
            }
        )

    async def predict(self, request: Request) -> Response:
        """``{"requests": [{"send_s": 0.0, "api": "openai-chat", "body": {…}}, …],
        "sequential": false}`` → ``{"predictions": [{"ttft_s", "e2e_s", "events",
        "output_tokens", "rejected", "send_s", "prompt_tokens", "cached_prompt_tokens",
        "queue_s", "prefill_s"}, …]}`` on an idle server with an empty prefix cache;
        ``sequential``: each request sent when the one before it has its last token (the
        cache carries over; ``send_s`` says when)."""
        try:
            payload = await read_json(request)
            items = payload.get("requests") if isinstance(payload, dict) else None
            if not isinstance(items, list):
                raise WireError(400, "'requests' must be a list")
            plan: list[PlannedRequest] = []
            lengths: list[int] = []
            prompts: list[int] = []
            for i, item in enumerate(items):
                if not isinstance(item, dict) or item.get("api") not in DIALECTS:
                    raise WireError(
                        400, f"requests[{i}] needs 'api' (one of {', '.join(DIALECTS)})"
                    )
                gen = DIALECTS[item["api"]].parse(item.get("body"))
                send_s = item.get("send_s", 0.0)
                if isinstance(send_s, bool) or not isinstance(send_s, int | float) or send_s < 0:
                    raise WireError(400, f"requests[{i}].send_s must be a number >= 0")
                tokens, _ = self.reply_tokens(gen)
                lengths.append(len(tokens))
                blocks, _limit = self.cache_blocks(gen)
                plan.append(PlannedRequest(float(send_s), gen.prompt_tokens, len(tokens), blocks))
                prompts.append(gen.prompt_tokens)
            chained = payload.get("sequential", False)
            if not isinstance(chained, bool):
                raise WireError(400, "'sequential' must be a boolean")
        except WireError as err:
            return self._error(None, err)
        out = [
            {
                "ttft_s": p.ttft_s,
                "e2e_s": p.e2e_s,
                "events": p.events,
                "output_tokens": n,
                "rejected": p.rejected,
                "send_s": p.send_s,
                "prompt_tokens": prompt,
                "cached_prompt_tokens": p.cached_tokens if self.params.prefix_cache else None,
                "queue_s": p.queue_s,
                "prefill_s": p.prefill_s,
            }
            for p, n, prompt in zip(
                predict(self.params, plan, chained), lengths, prompts, strict=True
            )
        ]
        return JSONResponse({"predictions": out})


def metrics_route(scheduler: Scheduler) -> Callable[[Request], Awaitable[Response]]:
    """``GET /metrics``: Prometheus text from the scheduler (:mod:`splitdesk.sim.metrics`)."""
    registry = metrics_registry(scheduler)

    async def handler(request: Request) -> Response:
        body, content_type = render(registry)
        return Response(body, media_type=content_type)

    return handler


def create_app(
    params: SimParams, profile: str = "custom", fault_schedule: FaultSchedule | None = None
) -> Starlette:
    """The Starlette app of a built-in endpoint with ``params`` and injected faults (see
    module docstring)."""
    sim = SimServer(params, profile, fault_schedule)

    def route(dialect: Dialect) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            try:
                return await sim.generate(request, dialect)
            except Exception:  # a bug, never a plain-text 500: the dialect's error shape
                log.exception("the built-in endpoint failed a %s request", dialect.name)
                err = WireError(500, "The built-in endpoint failed this request (see its log).")
                return JSONResponse(dialect.error(err), status_code=500)

        return handler

    async def internal_error(request: Request, exc: Exception) -> Response:
        log.exception("the built-in endpoint failed %s %s", request.method, request.url.path)
        err = WireError(500, "The built-in endpoint failed this request (see its log).")
        return JSONResponse(openai_error(err), status_code=500)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = (
            f"Unknown route {request.method} {request.url.path}"
            if status in (404, 405)
            else (exc.detail if isinstance(exc, HTTPException) else "internal error")
        )
        headers = exc.headers if isinstance(exc, HTTPException) else None  # 405: Allow
        return JSONResponse(
            openai_error(WireError(status, message)), status_code=status, headers=headers
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        sim.warm_up()
        # Objects alive now (modules, the app) never become garbage: keep them out of the
        # collector's scans, so its pauses stay short while tokens are due.
        gc.collect()
        gc.freeze()
        sim.scheduler.start()
        try:
            yield
        finally:
            await sim.scheduler.stop()

    routes = [
        Route("/v1/models", sim.models, methods=["GET"]),
        Route("/v1/chat/completions", route(DIALECTS["openai-chat"]), methods=["POST"]),
        Route("/v1/completions", route(DIALECTS["openai-completions"]), methods=["POST"]),
        Route("/v1/responses", route(DIALECTS["openai-responses"]), methods=["POST"]),
        Route(
            "/openai/deployments/{deployment}/chat/completions",
            route(DIALECTS["azure-openai"]),
            methods=["POST"],
        ),
        Route("/openai/models", sim.models, methods=["GET"]),
        Route("/v1/messages", route(DIALECTS["anthropic"]), methods=["POST"]),
        Route("/api/chat", route(DIALECTS["ollama-chat"]), methods=["POST"]),
        Route("/api/generate", route(DIALECTS["ollama-generate"]), methods=["POST"]),
        Route("/api/tags", sim.ollama_tags, methods=["GET"]),
        Route("/api/version", sim.ollama_version, methods=["GET"]),
        Route("/generate_stream", route(DIALECTS["tgi"]), methods=["POST"]),
        Route("/generate", route(TGIGenerate(streaming=False)), methods=["POST"]),
        Route("/info", sim.tgi_info, methods=["GET"]),
        Route("/_splitdesk/trace/{request_id}", sim.trace, methods=["GET"]),
        Route("/_splitdesk/info", sim.info, methods=["GET"]),
        Route("/_splitdesk/faults", sim.fault_rules, methods=["GET", "POST"]),
        Route("/_splitdesk/predict", sim.predict, methods=["POST"]),
        Route("/metrics", metrics_route(sim.scheduler), methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: not_found, 405: not_found, Exception: internal_error},
    )
    app.state.sim = sim
    return app


def is_loopback(host: str) -> bool:
    """True when ``host`` names only this machine."""
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


async def serve(
    params: SimParams,
    host: str = "127.0.0.1",
    port: int = 0,
    profile: str = "custom",
    on_ready: Callable[[str], None] | None = None,
    fault_schedule: FaultSchedule | None = None,
) -> None:
    """Serve a built-in endpoint until SIGINT/SIGTERM (uvicorn handles both).

    Binds ``host:port`` (0 = a free port) before starting, then calls ``on_ready(url)``
    once the server accepts connections. Raises ``OSError`` when the address is taken.
    """
    if not is_loopback(host):
        print(
            f"warning: serving on {host}: the simulator is reachable from the network",
            file=sys.stderr,
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP: asyncio only sets TCP_NODELAY on transports whose socket says so,
    # and accepted sockets inherit it; with proto 0, token events sit in Nagle's buffer.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(1024)
    bound_port = sock.getsockname()[1]
    url_host = f"[{host}]" if family == socket.AF_INET6 else host
    app = create_app(params, profile, fault_schedule)
    sim: SimServer = app.state.sim
    config = uvicorn.Config(
        RawSendMiddleware(app),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
        lifespan="on",
        http="httptools",  # the protocol whose transport the short path writes to
        loop="asyncio",
        backlog=1024,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            break
        await asyncio.sleep(0.005)
    if server.started and on_ready is not None:
        on_ready(f"http://{url_host}:{bound_port}")
    while not task.done():  # on SIGINT/SIGTERM, end open streams instead of having them cancelled
        if server.should_exit:
            sim.closing.set()
        await asyncio.wait({task}, timeout=0.05)
    await task
