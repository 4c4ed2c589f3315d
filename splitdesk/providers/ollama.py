"""Ollama's native API: ``POST {base}/api/chat`` and ``POST {base}/api/generate``.

Wire format: https://github.com/ollama/ollama/blob/main/docs/api.md — newline-delimited
JSON (``application/x-ndjson``), one object per line (framing: :mod:`splitdesk.providers.stream`,
which also handles lines split across reads or coalesced into one). Chat lines carry
``message.content`` (answer) and ``message.thinking`` (reasoning); generate lines
``response`` and ``thinking``. The last line has ``"done": true`` with ``done_reason``,
``eval_count`` (output tokens), ``prompt_eval_count`` and Ollama's own durations in
nanoseconds. An ``{"error": …}`` line can arrive inside a 200 stream. A stream that ends
without a ``done`` line is ``truncated`` (an error that keeps what arrived).
"""

from __future__ import annotations

import json
from abc import abstractmethod
from typing import Any, ClassVar

from splitdesk.providers.base import (
    Delta,
    EndpointConfig,
    ErrorDelta,
    ErrorKind,
    FinishDelta,
    Framing,
    GenParams,
    HttpCall,
    Prompt,
    Provider,
    RequestError,
    ServerTimingDelta,
    StreamDecoder,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
    as_prompt,
    error_message,
    parse_event_json,
)
from splitdesk.providers.content import ReasoningChannels, parts_text, reasoning_text

#: Ollama's duration fields (nanoseconds) → the seconds keys of :class:`ServerTimingDelta`.
DURATIONS = {
    "total_duration": "total_s",
    "load_duration": "load_s",
    "prompt_eval_duration": "prompt_eval_s",
    "eval_duration": "eval_s",
}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def server_timings(obj: dict[str, Any]) -> dict[str, float]:
    """Ollama's timing report of a ``done`` line in seconds: ``total_s``, ``load_s``,
    ``prompt_eval_s``, ``eval_s`` (from the nanosecond ``*_duration`` fields), plus
    ``eval_count`` and ``prompt_eval_count`` (tokens) — only the fields present
    (https://github.com/ollama/ollama/blob/main/docs/api.md, "Response" of a final line)."""
    out: dict[str, float] = {}
    for field, key in DURATIONS.items():
        ns = obj.get(field)
        if isinstance(ns, int | float) and not isinstance(ns, bool):
            out[key] = ns / 1e9
    for field in ("eval_count", "prompt_eval_count"):
        n = _int(obj.get(field))
        if n is not None:
            out[field] = float(n)
    return out


#: fields a line's message (chat) or the line itself (generate) may carry reasoning in, each
#: a channel of its own (Ollama's ``thinking``; ``reasoning`` / ``reasoning_content`` from
#: OpenAI-minded proxies in front of it): a mirror counts once
REASONING_FIELDS = ("thinking", "reasoning", "reasoning_content")


class OllamaDecoder(StreamDecoder):
    """Decoder of Ollama NDJSON lines (https://github.com/ollama/ollama/blob/main/docs/api.md).

    ``chat``: lines are ``/api/chat`` ones (text in ``message.content``, reasoning in
    ``message.thinking``, tool calls in ``message.tool_calls``); otherwise ``/api/generate``
    ones (``response`` and ``thinking``). Raises ``ValueError`` for a line that is not a
    JSON object.

    Completion signal: the final line with ``"done": true`` (the API page above: "the final
    response in the stream also includes additional data about the generation"). A stream
    that ends without it is ``truncated``; an ``error`` in any line is an error, after the
    text the same line carries. Content sent as typed parts is read; reasoning mirrored on
    :data:`REASONING_FIELDS` counts once.
    """

    completion_signal = 'a line with "done": true'

    def __init__(self, chat: bool) -> None:
        self.chat = chat
        self.reasoning = ReasoningChannels()

    def _line(self, obj: Any, t_ns: int) -> list[Delta]:
        if not isinstance(obj, dict):
            raise ValueError("line is not a JSON object")
        out: list[Delta] = []
        source = obj.get("message") if self.chat else obj
        if isinstance(source, dict):
            answer, part_reasoning = parts_text(source.get("content" if self.chat else "response"))
            thinking = ""
            for name in REASONING_FIELDS:
                thinking += self.reasoning.take(name, reasoning_text(source.get(name)))
            thinking += self.reasoning.take("content-parts", part_reasoning)
            if thinking:
                out.append(TextDelta(t_ns, thinking, reasoning=True))
            if answer:
                out.append(TextDelta(t_ns, answer))
            for call in source.get("tool_calls") or []:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    args = fn.get("arguments")
                    out.append(
                        ToolCallDelta(t_ns, _text(fn.get("name")), json.dumps(args) if args else "")
                    )
        if obj.get("error"):
            return [*out, ErrorDelta(t_ns, RequestError(ErrorKind.SERVER, error_message(obj)))]
        if obj.get("done") is True:
            self.complete = self.final = True
            out += self._done(obj, t_ns)
        return out

    def _done(self, obj: dict[str, Any], t_ns: int) -> list[Delta]:
        out: list[Delta] = []
        # an output count of 0 is a placeholder, not a report (tests/fixtures/streams README)
        tokens = _int(obj.get("eval_count")) or None
        prompt = _int(obj.get("prompt_eval_count"))
        if tokens is None:  # a proxy's OpenAI-shaped usage on the final line
            usage = obj.get("usage")
            if isinstance(usage, dict):
                tokens = _int(usage.get("completion_tokens")) or _int(usage.get("output_tokens"))
                prompt = prompt or _int(usage.get("prompt_tokens"))
        if tokens is not None or prompt is not None:
            out.append(UsageDelta(t_ns, tokens, prompt))
        if obj.get("done_reason"):
            out.append(FinishDelta(t_ns, str(obj["done_reason"])))
        timings = server_timings(obj)
        if timings:
            out.append(ServerTimingDelta(t_ns, timings))
        return out

    def on_event(self, data: str, event: str, t_ns: int) -> list[Delta]:
        return self._line(parse_event_json(data), t_ns)

    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        """A non-streamed reply is one line with ``done: true`` (or an error object)."""
        return self._line(body, t_ns)


class _Ollama(Provider):
    """What both Ollama endpoints share: NDJSON framing, no key by default (a ``Bearer``
    header is still sent when a key is given, for authenticating proxies), the
    ``options`` object, and ``GET {base}/api/tags`` (``models[].name``) as the model list.
    """

    framing: ClassVar[Framing] = "ndjson"
    key_env: ClassVar[str | None] = None
    root_suffix: ClassVar[str] = ""
    path: ClassVar[str]

    @abstractmethod
    def _body(self, endpoint: EndpointConfig, prompt: Prompt, params: GenParams) -> dict[str, Any]:
        """The endpoint's own part of the body: ``messages`` (chat) or ``prompt`` (generate)."""

    def build_request(
        self, endpoint: EndpointConfig, prompt: str | Prompt, params: GenParams
    ) -> HttpCall:
        body = self._body(endpoint, as_prompt(prompt), params)
        body["stream"] = params.stream
        options: dict[str, Any] = {}
        if params.max_tokens is not None:
            options["num_predict"] = params.max_tokens
        if params.temperature is not None:
            options["temperature"] = params.temperature
        if params.seed is not None:
            options["seed"] = params.seed
        if options:
            body["options"] = options
        headers = self.auth_headers(endpoint)
        headers["Accept"] = "application/x-ndjson" if params.stream else "application/json"
        return HttpCall("POST", endpoint.url(self.path), headers, body, dict(endpoint.query))

    def models_request(self, endpoint: EndpointConfig) -> HttpCall:
        """``GET {base}/api/tags``."""
        return HttpCall(
            "GET",
            endpoint.url("api/tags"),
            self.auth_headers(endpoint),
            params=dict(endpoint.query),
        )

    def parse_models(self, body: Any) -> list[str]:
        """``models[].name`` of an ``/api/tags`` reply; ``ValueError`` without a list."""
        models = body.get("models") if isinstance(body, dict) else None
        if not isinstance(models, list):
            raise ValueError("no 'models' list in the /api/tags response")
        return [str(m["name"]) for m in models if isinstance(m, dict) and "name" in m]


class OllamaChat(_Ollama):
    """``ollama-chat``: ``POST {base}/api/chat`` with one user message
    (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion)."""

    api = "ollama-chat"
    path = "api/chat"

    def _body(self, endpoint: EndpointConfig, prompt: Prompt, params: GenParams) -> dict[str, Any]:
        return {"model": endpoint.model, "messages": prompt.messages()}

    def decoder(self) -> StreamDecoder:
        return OllamaDecoder(chat=True)


class OllamaGenerate(_Ollama):
    """``ollama-generate``: ``POST {base}/api/generate`` with the prompt as plain text
    (https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-completion)."""

    api = "ollama-generate"
    path = "api/generate"

    def _body(self, endpoint: EndpointConfig, prompt: Prompt, params: GenParams) -> dict[str, Any]:
        body: dict[str, Any] = {"model": endpoint.model, "prompt": prompt.user}
        if prompt.system is not None:  # /api/generate's own system field
            body["system"] = prompt.system
        return body

    def decoder(self) -> StreamDecoder:
        return OllamaDecoder(chat=False)
