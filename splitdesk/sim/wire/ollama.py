"""Ollama's native API, as ``ollama serve`` streams it.

Wire format: https://github.com/ollama/ollama/blob/main/docs/api.md — ``POST /api/chat``
(``messages``) and ``POST /api/generate`` (``prompt``, optional ``system``); ``stream``
defaults to **true**; the cap is ``options.num_predict`` (negative: no cap) and the seed
``options.seed``. The stream is newline-delimited JSON (``application/x-ndjson``): one
line per token event (``message.content`` or ``response``), then a ``"done": true`` line
with ``done_reason`` (``stop``/``length``), ``eval_count``, ``prompt_eval_count`` and
durations in nanoseconds computed from the engine's real timings:

* ``load_duration``: request received → sequence handed to the engine (Ollama: model
  load; here the simulated network half-RTT and queueing in front of the engine);
* ``prompt_eval_duration``: handed to the engine → first token scheduled (prefill, and any
  wait for a slot);
* ``eval_duration``: first → last token scheduled;
* ``total_duration``: request received → the ``done`` line.

Errors are ``{"error": "…"}`` (a 4xx body, or a line inside a 200 stream). Model names
may carry Ollama's default tag: ``splitdesk-sim:latest`` reaches ``splitdesk-sim``.
"""

from __future__ import annotations

import time
from typing import Any

from splitdesk.sim.prefix_cache import PromptPart, prompt_tokens
from splitdesk.sim.wire.base import (
    Dialect,
    GenRequest,
    Reply,
    WireError,
    ndjson,
    opt_bool,
    opt_int,
    read_messages,
    req_str,
    require_object,
)

#: generic finish reason → Ollama ``done_reason``
DONE_REASONS = {"stop": "stop", "length": "length"}


def created_at() -> str:
    """The current UTC time as Ollama writes it (RFC 3339, nanoseconds)."""
    ns = time.time_ns()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + f".{ns % 10**9:09d}Z"


def durations(reply: Reply, now_ns: int) -> dict[str, int]:
    """Ollama's ``*_duration`` fields (nanoseconds) of ``reply`` (see the module docstring)."""
    submitted = reply.submitted_ns or reply.received_ns
    first = reply.first_token_ns or now_ns
    last = reply.last_token_ns or first
    # prefill: from joining the batch (after any queue) to the first token
    joined = reply.admitted_ns or submitted
    return {
        "total_duration": max(0, now_ns - reply.received_ns),
        "load_duration": max(0, submitted - reply.received_ns),
        "prompt_eval_count": reply.prompt_tokens,
        "prompt_eval_duration": max(0, first - joined),
        "eval_count": reply.output_tokens,
        "eval_duration": max(0, last - first),
    }


def _options(body: dict[str, Any]) -> tuple[int | None, int]:
    options = body.get("options")
    if options is None:
        return None, 0
    if not isinstance(options, dict):
        raise WireError(400, "'options' must be an object", param="options")
    cap = opt_int(options, "num_predict", -2)
    seed = opt_int(options, "seed", -(2**63), 0) or 0
    return (cap if cap is not None and cap > 0 else None), seed


class _Ollama(Dialect):
    stream_media_type = "application/x-ndjson"
    chat: bool

    def serves(self, asked: str, served: str) -> bool:
        return asked in (served, f"{served}:latest") or f"{asked}:latest" == served

    def model_not_found(self, asked: str, served: str) -> WireError:
        return WireError(404, f"model '{asked}' not found, try pulling it first", param="model")

    def _text(self, text: str) -> dict[str, Any]:
        return (
            {"message": {"role": "assistant", "content": text}} if self.chat else {"response": text}
        )

    def _line(self, reply: Reply, text: str) -> dict[str, Any]:
        return {"model": reply.model, "created_at": created_at(), **self._text(text)}

    def stream_tokens(self, reply: Reply, text: str, tokens: int) -> bytes:
        return ndjson({**self._line(reply, text), "done": False})

    def _done(self, reply: Reply, text: str, finish_reason: str) -> dict[str, Any]:
        return {
            **self._line(reply, text),
            "done_reason": DONE_REASONS.get(finish_reason, finish_reason),
            "done": True,
            **durations(reply, time.perf_counter_ns()),
        }

    def stream_end(self, reply: Reply, finish_reason: str) -> list[bytes]:
        return [ndjson(self._done(reply, "", finish_reason))]

    def body(self, reply: Reply, text: str, finish_reason: str) -> dict[str, Any]:
        return self._done(reply, text, finish_reason)

    def error(self, err: WireError) -> dict[str, Any]:
        return {"error": err.message}

    def stream_error(self, reply: Reply, message: str) -> bytes:
        return ndjson({"error": message})


class OllamaChat(_Ollama):
    """``POST /api/chat``."""

    name = "ollama-chat"
    chat = True

    def parse(self, body: Any) -> GenRequest:
        body = require_object(body)
        model = req_str(body, "model")
        prompt, prompt_tokens, parts = read_messages(body.get("messages"))
        cap, seed = _options(body)
        stream = opt_bool(body, "stream", True)
        return GenRequest(model, prompt, prompt_tokens, cap, stream, True, seed, parts)


class OllamaGenerate(_Ollama):
    """``POST /api/generate``."""

    name = "ollama-generate"
    chat = False

    def parse(self, body: Any) -> GenRequest:
        body = require_object(body)
        model = req_str(body, "model")
        prompt = req_str(body, "prompt")
        system = body.get("system")
        parts = (
            (PromptPart(system), PromptPart(prompt))
            if isinstance(system, str) and system
            else (PromptPart(prompt),)
        )
        cap, seed = _options(body)
        stream = opt_bool(body, "stream", True)
        return GenRequest(model, prompt, prompt_tokens(parts), cap, stream, True, seed, parts)
