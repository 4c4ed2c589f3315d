"""OpenAI chat completions and completions, as OpenAI and vLLM stream them.

Wire format: https://platform.openai.com/docs/api-reference/chat-streaming and
https://platform.openai.com/docs/api-reference/completions — SSE ``data:`` events of
``chat.completion.chunk`` / ``text_completion`` objects, ended by ``data: [DONE]``; with
``stream_options.include_usage`` every chunk carries ``"usage": null`` and a last chunk
with empty ``choices`` carries the usage.
"""

from __future__ import annotations

from typing import Any

from splitdesk.sim.prefix_cache import PromptPart
from splitdesk.sim.textgen import count_prompt_tokens
from splitdesk.sim.wire.base import (
    Dialect,
    GenRequest,
    Reply,
    WireError,
    opt_bool,
    opt_int,
    read_messages,
    req_str,
    require_object,
    sse,
)


def _usage(reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.prompt_tokens + reply.output_tokens,
    }
    if reply.report_cache:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    return usage


def _stream_flags(body: dict[str, Any]) -> tuple[bool, bool]:
    stream = opt_bool(body, "stream")
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        if not isinstance(options, dict):
            raise WireError(400, "'stream_options' must be an object", param="stream_options")
        include_usage = opt_bool(options, "include_usage")
    return stream, include_usage


def _max_tokens(body: dict[str, Any]) -> int | None:
    a = opt_int(body, "max_completion_tokens", 1)
    b = opt_int(body, "max_tokens", 1)
    return a if a is not None else b


def openai_error(err: WireError) -> dict[str, Any]:
    """OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {
        "error": {"message": err.message, "type": err.kind, "param": err.param, "code": err.code}
    }


class OpenAIChat(Dialect):
    """``POST /v1/chat/completions``."""

    text_only_events = True

    name = "openai-chat"

    def parse(self, body: Any) -> GenRequest:
        body = require_object(body)
        model = req_str(body, "model")
        prompt, prompt_tokens, parts = read_messages(body.get("messages"))
        stream, include_usage = _stream_flags(body)
        return GenRequest(
            model=model,
            prompt=prompt,
            prompt_tokens=prompt_tokens,
            parts=parts,
            max_tokens=_max_tokens(body),
            stream=stream,
            include_usage=include_usage,
            seed=opt_int(body, "seed", -(2**63), 0) or 0,
        )

    def _chunk(self, reply: Reply, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": reply.id,
            "object": "chat.completion.chunk",
            "created": reply.created,
            "model": reply.model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if reply.include_usage:
            chunk["usage"] = None
        return chunk

    def stream_start(self, reply: Reply) -> list[bytes]:
        return [sse(self._chunk(reply, {"role": "assistant", "content": ""}, None))]

    def stream_tokens(self, reply: Reply, text: str, tokens: int) -> bytes:
        return sse(self._chunk(reply, {"content": text}, None))

    def stream_end(self, reply: Reply, finish_reason: str) -> list[bytes]:
        out = [sse(self._chunk(reply, {}, finish_reason))]
        if reply.include_usage:
            out.append(
                sse(
                    {
                        "id": reply.id,
                        "object": "chat.completion.chunk",
                        "created": reply.created,
                        "model": reply.model,
                        "system_fingerprint": None,
                        "choices": [],
                        "usage": _usage(reply),
                        "timings": reply.timings(),
                    }
                )
            )
        out.append(sse("[DONE]"))
        return out

    def body(self, reply: Reply, text: str, finish_reason: str) -> dict[str, Any]:
        return {
            "id": reply.id,
            "object": "chat.completion",
            "created": reply.created,
            "model": reply.model,
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": _usage(reply),
            "timings": reply.timings(),
        }

    def error(self, err: WireError) -> dict[str, Any]:
        return openai_error(err)


class OpenAICompletions(Dialect):
    """``POST /v1/completions`` (legacy text completions)."""

    text_only_events = True

    name = "openai-completions"

    def parse(self, body: Any) -> GenRequest:
        body = require_object(body)
        model = req_str(body, "model")
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str) or not prompt:
            raise WireError(
                400, "'prompt' is required and must be a non-empty string", param="prompt"
            )
        stream, include_usage = _stream_flags(body)
        return GenRequest(
            model=model,
            prompt=prompt,
            prompt_tokens=count_prompt_tokens(prompt),
            parts=(PromptPart(prompt),),
            max_tokens=opt_int(body, "max_tokens", 1, 16),
            stream=stream,
            include_usage=include_usage,
            seed=opt_int(body, "seed", -(2**63), 0) or 0,
        )

    def _chunk(self, reply: Reply, text: str, finish: str | None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": reply.id,
            "object": "text_completion",
            "created": reply.created,
            "model": reply.model,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
        }
        if reply.include_usage:
            chunk["usage"] = None
        return chunk

    def stream_tokens(self, reply: Reply, text: str, tokens: int) -> bytes:
        return sse(self._chunk(reply, text, None))

    def stream_end(self, reply: Reply, finish_reason: str) -> list[bytes]:
        out = [sse(self._chunk(reply, "", finish_reason))]
        if reply.include_usage:
            out.append(
                sse(
                    {
                        "id": reply.id,
                        "object": "text_completion",
                        "created": reply.created,
                        "model": reply.model,
                        "choices": [],
                        "usage": _usage(reply),
                        "timings": reply.timings(),
                    }
                )
            )
        out.append(sse("[DONE]"))
        return out

    def body(self, reply: Reply, text: str, finish_reason: str) -> dict[str, Any]:
        return {
            "id": reply.id,
            "object": "text_completion",
            "created": reply.created,
            "model": reply.model,
            "choices": [
                {"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": _usage(reply),
            "timings": reply.timings(),
        }

    def error(self, err: WireError) -> dict[str, Any]:
        return openai_error(err)
