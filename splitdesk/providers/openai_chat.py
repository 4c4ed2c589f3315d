"""OpenAI chat completions (``POST {base}/chat/completions``), as OpenAI, Azure, vLLM,
SGLang, llama.cpp, Ollama, LM Studio, DeepSeek and OpenRouter stream it.

Wire format: https://platform.openai.com/docs/api-reference/chat-streaming. Variants
handled (see ``shared/fixtures/streams``): role-only and empty first chunks;
``choices: []`` chunks (Azure prompt-filter results, the usage chunk of
``stream_options.include_usage``); reasoning in ``delta.reasoning_content`` (DeepSeek) or
``delta.reasoning`` (vLLM); ``tool_calls`` deltas with ``content: null``; ``{"error": …}``
objects inside a 200 stream; a ``chat.completion`` JSON body when ``stream`` is ignored.
"""

from __future__ import annotations

import json
from typing import Any

from splitdesk.providers.base import (
    Delta,
    EndpointConfig,
    ErrorDelta,
    ErrorKind,
    FinishDelta,
    GenParams,
    HttpCall,
    Provider,
    RequestError,
    StreamDecoder,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
    error_message,
)


def usage_delta(usage: Any, t_ns: int) -> list[Delta]:
    """A :class:`UsageDelta` from an OpenAI ``usage`` object; zeros are placeholders that some
    servers (LocalAI) send on every chunk, so they are not a report."""
    if not isinstance(usage, dict):
        return []
    out = usage.get("completion_tokens")
    prompt = usage.get("prompt_tokens")
    if not isinstance(out, int) or isinstance(out, bool) or out <= 0:
        return []
    return [UsageDelta(t_ns, out, prompt if isinstance(prompt, int) and prompt > 0 else None)]


def in_band_error(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """An ``{"error": …}`` object sent with HTTP 200, as an :class:`ErrorDelta`."""
    return [ErrorDelta(t_ns, RequestError(ErrorKind.SERVER, error_message(obj)))]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class ChatDecoder(StreamDecoder):
    """Decoder of ``chat.completion.chunk`` events (first choice only: requests ask n=1)."""

    def on_event(self, data: str, event: str, t_ns: int) -> list[Delta]:
        obj = json.loads(data)
        if not isinstance(obj, dict):
            raise ValueError("event is not a JSON object")
        if obj.get("error") and not obj.get("choices"):
            return in_band_error(obj, t_ns)
        out: list[Delta] = []
        for choice in obj.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
            if reasoning:
                out.append(TextDelta(t_ns, reasoning, reasoning=True))
            content = _text(delta.get("content")) or _text(delta.get("refusal"))
            if content:
                out.append(TextDelta(t_ns, content))
            for call in delta.get("tool_calls") or []:
                fn = call.get("function") or {} if isinstance(call, dict) else {}
                out.append(ToolCallDelta(t_ns, _text(fn.get("name")), _text(fn.get("arguments"))))
            if choice.get("finish_reason"):
                out.append(FinishDelta(t_ns, str(choice["finish_reason"])))
        out += usage_delta(obj.get("usage"), t_ns)
        return out

    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        if not isinstance(body, dict):
            raise ValueError("body is not a JSON object")
        if body.get("error") and not body.get("choices"):
            return in_band_error(body, t_ns)
        out: list[Delta] = []
        choices = body.get("choices") or []
        if choices:
            choice = choices[0]
            message = choice.get("message") or {}
            reasoning = _text(message.get("reasoning_content")) or _text(message.get("reasoning"))
            if reasoning:
                out.append(TextDelta(t_ns, reasoning, reasoning=True))
            content = _text(message.get("content")) or _text(message.get("refusal"))
            if content:
                out.append(TextDelta(t_ns, content))
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                out.append(ToolCallDelta(t_ns, _text(fn.get("name")), _text(fn.get("arguments"))))
            if choice.get("finish_reason"):
                out.append(FinishDelta(t_ns, str(choice["finish_reason"])))
        out += usage_delta(body.get("usage"), t_ns)
        return out


class OpenAIChat(Provider):
    """``openai-chat``: one user message, streamed, usage requested."""

    api = "openai-chat"

    def build_request(self, endpoint: EndpointConfig, prompt: str, params: GenParams) -> HttpCall:
        body: dict[str, Any] = {
            "model": endpoint.model,
            "messages": [{"role": "user", "content": prompt}],
            "stream": params.stream,
        }
        if params.stream:
            body["stream_options"] = {"include_usage": True}
        if params.max_tokens is not None:
            body["max_tokens"] = params.max_tokens
        if params.temperature is not None:
            body["temperature"] = params.temperature
        if params.seed is not None:
            body["seed"] = params.seed
        headers = self.auth_headers(endpoint)
        headers["Accept"] = "text/event-stream" if params.stream else "application/json"
        return HttpCall(
            "POST", endpoint.url("chat/completions"), headers, body, dict(endpoint.query)
        )

    def decoder(self) -> StreamDecoder:
        return ChatDecoder()
