"""Hugging Face Text Generation Inference (TGI) native API, as its router streams it.

Wire format: https://huggingface.github.io/text-generation-inference/ — ``POST
/generate_stream`` (always streamed) and ``POST /generate`` (one body) with ``inputs`` and
``parameters`` (``max_new_tokens``, ``seed``, ``details`` …). Each token event is an SSE
``data:`` line (no space after the colon, as TGI's router writes it) with a ``token``
object; the last one also carries ``generated_text`` and ``details`` (``finish_reason``:
``eos_token`` or ``length``, ``generated_tokens``). An answer the model ended itself
closes with the special end-of-sequence token ``</s>``, which is not visible text; an answer
cut by ``max_new_tokens`` carries the ``details`` on its last real token.

TGI has no model field (one server, one model: ``GET /info`` names it), so requests are
never refused for their model. Errors are ``{"error": "…", "error_type": "…"}``; request
validation errors are HTTP 422, as in TGI.
"""

from __future__ import annotations

import json
from typing import Any

from splitdesk.sim.textgen import count_prompt_tokens
from splitdesk.sim.wire.base import (
    Dialect,
    GenRequest,
    Reply,
    WireError,
    opt_bool,
    opt_int,
    req_str,
    require_object,
)

#: generic finish reason → TGI ``details.finish_reason``
FINISH_REASONS = {"stop": "eos_token", "length": "length"}
#: id and text of the simulated end-of-sequence token
EOS_ID, EOS_TEXT = 2, "</s>"
#: WireError kind → TGI ``error_type``
ERROR_TYPES = {"rate_limit_error": "overloaded", "server_error": "generation"}


def tgi_sse(data: dict[str, Any]) -> bytes:
    """One SSE event as TGI's router writes it: ``data:{json}`` and a blank line."""
    return b"data:" + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


class TGIGenerate(Dialect):
    """``POST /generate_stream`` (``streaming=True``) or ``POST /generate``."""

    name = "tgi"

    def __init__(self, streaming: bool = True) -> None:
        self.streaming = streaming

    def parse(self, body: Any) -> GenRequest:
        body = require_object(body)
        inputs = req_str(body, "inputs")
        params = body.get("parameters") or {}
        if not isinstance(params, dict):
            raise WireError(400, "'parameters' must be an object", param="parameters")
        cap = opt_int(params, "max_new_tokens", 1)
        seed = opt_int(params, "seed", 0, 0) or 0
        details = opt_bool(params, "details")
        stream = self.streaming or opt_bool(body, "stream")
        return GenRequest("", inputs, count_prompt_tokens(inputs), cap, stream, details, seed)

    def serves(self, asked: str, served: str) -> bool:
        return True

    def status(self, err: WireError) -> int:
        return 422 if err.status == 400 else err.status

    def _details(self, reply: Reply, finish_reason: str) -> dict[str, Any] | None:
        if not reply.include_usage:  # `details` was not asked for
            return None
        return {
            "finish_reason": FINISH_REASONS.get(finish_reason, finish_reason),
            "generated_tokens": reply.output_tokens,
            "seed": None,
        }

    def _event(self, reply: Reply, token_id: int, text: str, special: bool, final: bool) -> bytes:
        return tgi_sse(
            {
                "index": reply.next_sequence(),
                "token": {"id": token_id, "text": text, "logprob": -0.5, "special": special},
                "generated_text": reply.text if final else None,
                "details": self._details(reply, reply.finish_reason) if final else None,
                "top_tokens": None,
            }
        )

    def stream_tokens(self, reply: Reply, text: str, tokens: int) -> bytes:
        final = reply.is_last and reply.finish_reason == "length"
        return self._event(reply, 1000 + reply.output_tokens, text, False, final)

    def stream_end(self, reply: Reply, finish_reason: str) -> list[bytes]:
        if finish_reason == "length":
            return []  # the last token event carried the details
        return [self._event(reply, EOS_ID, EOS_TEXT, True, True)]

    def body(self, reply: Reply, text: str, finish_reason: str) -> dict[str, Any]:
        out: dict[str, Any] = {"generated_text": text}
        details = self._details(reply, finish_reason)
        if details is not None:
            out["details"] = {**details, "prefill": [], "tokens": []}
        return out

    def error(self, err: WireError) -> dict[str, Any]:
        kind = "validation" if err.status in (400, 413, 422) else "generation"
        return {"error": err.message, "error_type": ERROR_TYPES.get(err.kind, kind)}

    def stream_error(self, reply: Reply, message: str) -> bytes:
        return tgi_sse({"error": message, "error_type": "generation"})
