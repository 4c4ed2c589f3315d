"""OpenAI Responses API, as OpenAI streams it.

Wire format: https://platform.openai.com/docs/api-reference/responses-streaming —
``POST /v1/responses`` with ``model``, ``input`` (a string, or a list of messages whose
``content`` is a string or ``input_text`` parts), optional ``instructions`` and
``max_output_tokens``. A stream is SSE events, each with ``event:`` naming its ``type`` and
a ``sequence_number``: ``response.created``, ``response.in_progress``,
``response.output_item.added``, ``response.content_part.added``, one
``response.output_text.delta`` per token event, then ``response.output_text.done``,
``response.content_part.done``, ``response.output_item.done`` and
``response.completed`` — or ``response.incomplete`` (``incomplete_details.reason:
"max_output_tokens"``) when the cap cut the answer — with the final response object and
its ``usage``. No terminator follows. Errors are OpenAI's ``{"error": {…}}`` bodies, or an
``error`` event inside a 200 stream.
"""

from __future__ import annotations

from typing import Any

from splitdesk.sim.prefix_cache import PromptPart, prompt_tokens
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
from splitdesk.sim.wire.openai import openai_error

#: generic finish reason → Responses ``status``
STATUSES = {"stop": "completed", "length": "incomplete"}


def _read_input(body: dict[str, Any]) -> tuple[str, int, tuple[PromptPart, ...]]:
    instructions = body.get("instructions")
    system = instructions if isinstance(instructions, str) else ""
    value = body.get("input")
    if isinstance(value, str) and value:
        parts = (PromptPart(system), PromptPart(value)) if system else (PromptPart(value),)
        return value, prompt_tokens(parts), parts
    if isinstance(value, list) and value:
        messages = [
            {"role": m.get("role", "user"), "content": content_text(m.get("content", ""), "input")}
            for m in value
            if isinstance(m, dict)
        ]
        return read_messages(messages, system)
    raise WireError(400, "'input' is required: a string or a list of messages", param="input")


class OpenAIResponses(Dialect):
    """``POST /v1/responses``."""

    name = "openai-responses"

    def parse(self, body: Any) -> GenRequest:
        body = require_object(body)
        model = req_str(body, "model")
        prompt, tokens, parts = _read_input(body)
        return GenRequest(
            model=model,
            prompt=prompt,
            prompt_tokens=tokens,
            parts=parts,
            max_tokens=opt_int(body, "max_output_tokens", 1),
            stream=opt_bool(body, "stream"),
            include_usage=True,
        )

    def _event(self, reply: Reply, data: dict[str, Any]) -> bytes:
        data["sequence_number"] = reply.next_sequence()
        return sse(data, event=str(data["type"]))

    def _item_id(self, reply: Reply) -> str:
        return f"msg_{reply.id}"

    def _part(self, text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": []}

    def _item(self, reply: Reply, status: str, content: list[Any]) -> dict[str, Any]:
        return {
            "id": self._item_id(reply),
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": content,
        }

    def _response(
        self, reply: Reply, status: str, output: list[Any], usage: bool
    ) -> dict[str, Any]:
        return {
            "id": f"resp_{reply.id}",
            "object": "response",
            "created_at": reply.created,
            "status": status,
            "error": None,
            "incomplete_details": (
                {"reason": "max_output_tokens"} if status == "incomplete" else None
            ),
            "model": reply.model,
            "output": output,
            "usage": (
                {
                    "input_tokens": reply.prompt_tokens,
                    "input_tokens_details": {"cached_tokens": reply.cached_tokens},
                    "output_tokens": reply.output_tokens,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": reply.prompt_tokens + reply.output_tokens,
                }
                if usage
                else None
            ),
        }

    def stream_start(self, reply: Reply) -> list[bytes]:
        pending = self._response(reply, "in_progress", [], usage=False)
        where = {"item_id": self._item_id(reply), "output_index": 0, "content_index": 0}
        return [
            self._event(reply, {"type": "response.created", "response": pending}),
            self._event(reply, {"type": "response.in_progress", "response": pending}),
            self._event(
                reply,
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": self._item(reply, "in_progress", []),
                },
            ),
            self._event(
                reply, {"type": "response.content_part.added", **where, "part": self._part("")}
            ),
        ]

    def stream_tokens(self, reply: Reply, text: str, tokens: int) -> bytes:
        return self._event(
            reply,
            {
                "type": "response.output_text.delta",
                "item_id": self._item_id(reply),
                "output_index": 0,
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            },
        )

    def stream_end(self, reply: Reply, finish_reason: str) -> list[bytes]:
        status = STATUSES.get(finish_reason, "completed")
        text = reply.text
        where = {"item_id": self._item_id(reply), "output_index": 0, "content_index": 0}
        item = self._item(reply, status, [self._part(text)])
        final = self._response(reply, status, [item], usage=True)
        return [
            self._event(reply, {"type": "response.output_text.done", **where, "text": text}),
            self._event(
                reply, {"type": "response.content_part.done", **where, "part": self._part(text)}
            ),
            self._event(
                reply, {"type": "response.output_item.done", "output_index": 0, "item": item}
            ),
            self._event(reply, {"type": f"response.{status}", "response": final}),
        ]

    def body(self, reply: Reply, text: str, finish_reason: str) -> dict[str, Any]:
        status = STATUSES.get(finish_reason, "completed")
        item = self._item(reply, status, [self._part(text)])
        return self._response(reply, status, [item], usage=True)

    def error(self, err: WireError) -> dict[str, Any]:
        return openai_error(err)

    def stream_error(self, reply: Reply, message: str) -> bytes:
        return self._event(
            reply, {"type": "error", "code": "server_error", "message": message, "param": None}
        )
