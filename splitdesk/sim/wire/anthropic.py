"""Anthropic Messages, as the Anthropic API streams it.

Wire format: https://docs.anthropic.com/en/api/messages-streaming — ``POST /v1/messages``
with ``model``, ``max_tokens`` (required), ``messages`` and optional ``system``. A stream is
``message_start`` (usage with a *provisional* ``output_tokens: 1``), ``content_block_start``,
``ping``, one ``content_block_delta`` (``text_delta``) per token event,
``content_block_stop``, ``message_delta`` (``stop_reason``; cumulative ``usage``) and
``message_stop``, each an SSE event with ``event:`` naming its ``type``. Caching is
asked for with ``cache_control`` on a text block of ``system`` or of a message
(https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching): only the prefix up to
the last marked block is cached or read, and usage splits the prompt into
``input_tokens`` (neither), ``cache_read_input_tokens`` and ``cache_creation_input_tokens``.
``message_start`` carries the prompt as ``input_tokens`` with both cache counts 0
(provisional: the sequence has not joined the batch yet); ``message_delta`` carries the
final split with the output count. Errors are
``{"type": "error", "error": {"type", "message"}}``, in a 4xx/5xx body or as an ``error``
event inside a 200 stream. No key is checked.
"""

from __future__ import annotations

from typing import Any

from splitdesk.sim.wire.base import (
    Dialect,
    GenRequest,
    Reply,
    WireError,
    content_text,
    opt_bool,
    opt_int,
    read_messages,
    req_str,
    require_object,
    sse,
)

#: generic finish reason → Anthropic ``stop_reason``
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens"}
#: HTTP status → Anthropic error ``type`` (https://docs.anthropic.com/en/api/errors)
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error object for HTTP ``status``."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _usage(reply: Reply) -> dict[str, int]:
    """Anthropic's usage: ``input_tokens`` counts only the prompt tokens neither read from
    nor written to the cache."""
    read, created = reply.cached_tokens, reply.cache_created_tokens
    return {
        "input_tokens": reply.prompt_tokens - read - created,
        "cache_creation_input_tokens": created,
        "cache_read_input_tokens": read,
        "output_tokens": reply.output_tokens,
    }


def _event(data: dict[str, Any]) -> bytes:
    return sse(data, event=str(data["type"]))


class AnthropicMessages(Dialect):
    """``POST /v1/messages``."""

    text_only_events = True

    name = "anthropic"

    def parse(self, body: Any) -> GenRequest:
        body = require_object(body)
        model = req_str(body, "model")
        max_tokens = opt_int(body, "max_tokens", 1)
        if max_tokens is None:
            raise WireError(400, "max_tokens: Field required", param="max_tokens")
        system = body.get("system")
        if system is not None:
            content_text(system, "system")  # a string or text parts, else 400
        prompt, prompt_tokens, parts = read_messages(body.get("messages"), system, marks=True)
        return GenRequest(
            model=model,
            prompt=prompt,
            prompt_tokens=prompt_tokens,
            max_tokens=max_tokens,
            stream=opt_bool(body, "stream"),
            include_usage=True,
            parts=parts,
            cache_marks_only=True,
        )

    def model_not_found(self, asked: str, served: str) -> WireError:
        return WireError(404, f"model: {asked} (this server serves {served})", param="model")

    def _message(self, reply: Reply, content: list[Any], stop: str | None) -> dict[str, Any]:
        return {
            "id": f"msg_{reply.id}",
            "type": "message",
            "role": "assistant",
            "model": reply.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": _usage(reply),
        }

    def stream_start(self, reply: Reply) -> list[bytes]:
        start = self._message(reply, [], None)
        # provisional, as the real API sends output_tokens; the cache split is not known yet
        start["usage"] = {
            "input_tokens": reply.prompt_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        }
        return [
            _event({"type": "message_start", "message": start}),
            _event(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                }
            ),
            _event({"type": "ping"}),
        ]

    def stream_tokens(self, reply: Reply, text: str, tokens: int) -> bytes:
        return _event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            }
        )

    def stream_end(self, reply: Reply, finish_reason: str) -> list[bytes]:
        return [
            _event({"type": "content_block_stop", "index": 0}),
            _event(
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": STOP_REASONS.get(finish_reason, finish_reason),
                        "stop_sequence": None,
                    },
                    "usage": _usage(reply),
                }
            ),
            _event({"type": "message_stop"}),
        ]

    def body(self, reply: Reply, text: str, finish_reason: str) -> dict[str, Any]:
        stop = STOP_REASONS.get(finish_reason, finish_reason)
        return self._message(reply, [{"type": "text", "text": text}], stop)

    def error(self, err: WireError) -> dict[str, Any]:
        return anthropic_error(err.status, err.message)

    def stream_error(self, reply: Reply, message: str) -> bytes:
        return _event(anthropic_error(500, message))
