"""Anthropic Messages (``POST {base}/v1/messages``), streamed.

Wire format: https://docs.anthropic.com/en/api/messages-streaming — SSE events named by
``event:`` and by the JSON ``type`` field: ``message_start`` (its ``usage.output_tokens``
is provisional), ``content_block_start`` / ``content_block_delta`` / ``content_block_stop``,
``message_delta`` (``usage.output_tokens`` is cumulative: the last one wins), ``message_stop``,
``ping``, and ``error`` events inside a 200 stream (``overloaded_error`` …).

Variants handled (see ``tests/fixtures/streams``): gateways that drop the ``event:`` lines
(the JSON ``type`` decides) or append OpenAI's ``data: [DONE]``; ``thinking_delta``
(reasoning), ``signature_delta`` (ignored), ``input_json_delta`` (tool-call arguments); a
``"type": "message"`` JSON body when ``stream`` is ignored; usage in a vendor's own object
(Amazon Bedrock's invocation metrics). A stream without ``stop_reason`` or
``message_stop`` is ``truncated``.
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
    Prompt,
    Provider,
    RequestError,
    StreamDecoder,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
    as_prompt,
    error_message,
    parse_event_json,
)

#: The API version header every request carries (the streaming format of this module).
ANTHROPIC_VERSION = "2023-06-01"
#: ``max_tokens`` is required by the Messages API; sent when the caller set no cap (tokens).
DEFAULT_MAX_TOKENS = 1024


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def anthropic_error(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """An ``{"type": "error", "error": {"type", "message"}}`` object as an
    :class:`ErrorDelta` whose message names both the message and the error type
    (https://docs.anthropic.com/en/api/messages-streaming#error-events)."""
    return [ErrorDelta(t_ns, RequestError(ErrorKind.SERVER, error_message(obj)))]


def _block(block: Any, t_ns: int) -> list[Delta]:
    """Deltas of a whole content block (``content_block_start`` or a JSON body's content)."""
    if not isinstance(block, dict):
        return []
    kind = block.get("type")
    if kind == "text" and _text(block.get("text")):
        return [TextDelta(t_ns, block["text"])]
    if kind == "thinking" and _text(block.get("thinking")):
        return [TextDelta(t_ns, block["thinking"], reasoning=True)]
    if kind in ("tool_use", "server_tool_use"):
        tool_input = block.get("input")
        arguments = json.dumps(tool_input) if tool_input else ""
        return [ToolCallDelta(t_ns, _text(block.get("name")), arguments)]
    return []


def _delta(delta: Any, t_ns: int) -> list[Delta]:
    """Deltas of a ``content_block_delta``'s ``delta`` object."""
    if not isinstance(delta, dict):
        raise ValueError("content_block_delta without a 'delta' object")
    kind = delta.get("type")
    if kind == "text_delta" and _text(delta.get("text")):
        return [TextDelta(t_ns, delta["text"])]
    if kind == "thinking_delta" and _text(delta.get("thinking")):
        return [TextDelta(t_ns, delta["thinking"], reasoning=True)]
    if kind == "input_json_delta" and _text(delta.get("partial_json")):
        return [ToolCallDelta(t_ns, arguments=delta["partial_json"])]
    return []  # signature_delta, citations_delta, empty deltas


#: keys of an event that are Anthropic's own, not a vendor's object
_OWN_KEYS = frozenset({"type", "index", "delta", "message", "usage", "content_block", "error"})


def _usage_of(usage: Any) -> tuple[int | None, int | None, int | None]:
    """(output, prompt, cached) tokens of a usage object: Anthropic's ``output_tokens`` and
    ``input_tokens`` or Amazon Bedrock's ``outputTokenCount`` / ``inputTokenCount``.
    Anthropic's ``input_tokens`` counts only the tokens neither read from nor written to the
    cache, so the prompt is ``input_tokens + cache_read_input_tokens +
    cache_creation_input_tokens`` and the cached part ``cache_read_input_tokens``
    (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching, "Tracking cache
    performance"); ``None`` when the usage names neither cache field."""
    if not isinstance(usage, dict):
        return None, None, None
    # an output count of 0 is a placeholder, not a report (tests/fixtures/streams README)
    out = _int(usage.get("output_tokens")) or _int(usage.get("outputTokenCount")) or None
    prompt = _int(usage.get("input_tokens"))
    if prompt is None:
        prompt = _int(usage.get("inputTokenCount"))
    read = _int(usage.get("cache_read_input_tokens"))
    created = _int(usage.get("cache_creation_input_tokens"))
    if prompt is not None and (read is not None or created is not None):
        prompt += (read or 0) + (created or 0)
    return out, prompt, read


def find_usage(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """Usage of a ``message_delta`` / ``message_stop`` event wherever it is: ``usage``
    (Anthropic), ``delta.usage`` (some gateways), or a vendor's own object beside it
    (Amazon Bedrock's ``amazon-bedrock-invocationMetrics`` on ``message_stop``,
    https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html,
    or any ``{"<vendor>": {"usage": …}}``). The first report in that order, or nothing."""
    delta = obj.get("delta")
    candidates: list[Any] = [
        obj.get("usage"),
        delta.get("usage") if isinstance(delta, dict) else None,
    ]
    for key, value in obj.items():
        if key not in _OWN_KEYS and isinstance(value, dict):
            candidates += [value.get("usage"), value]
    for usage in candidates:
        out, prompt, cached = _usage_of(usage)
        if out is not None:
            return [UsageDelta(t_ns, out, prompt, cached)]
    return []


#: The Messages stream's event types that carry its content, usage, end or errors ("Event
#: flow" in https://docs.anthropic.com/en/api/messages-streaming), and the unnamed type.
_READ_EVENTS = frozenset(
    {
        "",
        "message",
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
    }
)


class AnthropicDecoder(StreamDecoder):
    """Decoder of one Messages stream (https://docs.anthropic.com/en/api/messages-streaming).

    Usage: ``message_start``'s input tokens are reported as prompt tokens at once (with the
    cache reads and writes, :func:`_usage_of`); its output count is provisional (usually 1)
    and never reported. ``message_delta`` carries the cumulative output count (and, from
    servers that send them there, the prompt and cache counts): each one is reported, the
    last one wins.

    Completion signal: the ``message_stop`` event, or a ``message_delta`` carrying the
    ``stop_reason`` (the finish reason; "Event flow" in the page above). A gateway's
    appended ``data: [DONE]`` alone does not complete the stream: a stream with neither is
    ``truncated``. An event with a top-level ``error`` is an error whatever its ``type``.
    """

    completion_signal = "a stop_reason or a message_stop event"

    def reads_event(self, event: str) -> bool:
        """The Messages stream's content-bearing types (and ``error``); ``ping`` and any
        other type are skipped when their data is not JSON (:meth:`StreamDecoder.reads_event`)."""
        return event in _READ_EVENTS

    def on_event(self, data: str, event: str, t_ns: int) -> list[Delta]:
        obj = parse_event_json(data)
        if not isinstance(obj, dict):
            raise ValueError("event is not a JSON object")
        kind = obj.get("type") or event
        if kind == "error" or obj.get("error"):
            return anthropic_error(obj, t_ns)
        if kind == "content_block_delta":
            return _delta(obj.get("delta"), t_ns)
        if kind == "content_block_start":
            return _block(obj.get("content_block"), t_ns)
        if kind == "message_start":
            message = obj.get("message") or {}
            usage = message.get("usage") if isinstance(message, dict) else None
            _, prompt, cached = _usage_of(usage)
            return [UsageDelta(t_ns, None, prompt, cached)] if prompt else []
        if kind == "message_delta":
            out: list[Delta] = []
            delta = obj.get("delta") or {}
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self.complete = True
                out.append(FinishDelta(t_ns, str(delta["stop_reason"])))
            return out + find_usage(obj, t_ns)
        if kind == "message_stop":
            self.complete = self.final = True
            return find_usage(obj, t_ns)
        return []  # ping, content_block_stop, future event types

    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        if not isinstance(body, dict):
            raise ValueError("body is not a JSON object")
        if body.get("type") == "error" or body.get("error"):
            return anthropic_error(body, t_ns)
        self.complete = True
        out: list[Delta] = []
        for block in body.get("content") or []:
            out += _block(block, t_ns)
        if body.get("stop_reason"):
            out.append(FinishDelta(t_ns, str(body["stop_reason"])))
        return out + find_usage(body, t_ns)


#: Anthropic's cache breakpoint (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching)
CACHE_CONTROL = {"type": "ephemeral"}


def system_content(prompt: Prompt) -> str | list[dict[str, Any]]:
    """The ``system`` field: the text, or with ``cache_control`` one text block marked as a
    cache breakpoint (the system prompt is cached up to its end)."""
    text = prompt.system or ""
    if not prompt.cache_control:
        return text
    return [{"type": "text", "text": text, "cache_control": dict(CACHE_CONTROL)}]


def user_content(prompt: Prompt) -> str | list[dict[str, Any]]:
    """The user message's ``content``: the text, or with ``cache_control`` and a shared
    part two text blocks, the shared part (the run's context) marked as a breakpoint, so
    every request of the run reads it from the cache once one request wrote it."""
    shared = prompt.shared_chars
    if not prompt.cache_control or shared <= 0 or prompt.system is not None:
        return prompt.user
    head, rest = prompt.user[:shared], prompt.user[shared:]
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": head, "cache_control": dict(CACHE_CONTROL)}
    ]
    if rest:
        blocks.append({"type": "text", "text": rest})
    return blocks


class Anthropic(Provider):
    """``anthropic``: one user message to the Messages API (after a ``system`` prompt when
    the prompt has one), streamed. With ``Prompt.cache_control`` the shared part (the
    system prompt, or the user message's shared opening) carries a ``cache_control``
    breakpoint: Anthropic caches only what is marked, and only prefixes of at least 1,024
    tokens (2,048 on Haiku models; shorter ones are silently not cached).

    Wire format: https://docs.anthropic.com/en/api/messages-streaming. The key goes in
    ``x-api-key`` (never ``Authorization``); ``max_tokens`` is required by the API, so
    :data:`DEFAULT_MAX_TOKENS` is sent when :class:`GenParams` sets no cap. ``seed`` has no
    Anthropic equivalent and is not sent. Models: ``GET {base}/v1/models`` (``data[].id``).
    """

    api = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    root_suffix = ""

    def auth_headers(self, endpoint: EndpointConfig) -> dict[str, str]:
        headers = dict(endpoint.headers)
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if endpoint.api_key:
            headers["x-api-key"] = endpoint.api_key
        return headers

    def build_request(
        self, endpoint: EndpointConfig, prompt: str | Prompt, params: GenParams
    ) -> HttpCall:
        asked = as_prompt(prompt)
        body: dict[str, Any] = {
            "model": endpoint.model,
            "max_tokens": params.max_tokens
            if params.max_tokens is not None
            else DEFAULT_MAX_TOKENS,
            "messages": [{"role": "user", "content": user_content(asked)}],
            "stream": params.stream,
        }
        if asked.system is not None:
            body["system"] = system_content(asked)
        if params.temperature is not None:
            body["temperature"] = params.temperature
        headers = self.auth_headers(endpoint)
        headers["Accept"] = "text/event-stream" if params.stream else "application/json"
        return HttpCall("POST", endpoint.url("v1/messages"), headers, body, dict(endpoint.query))

    def models_request(self, endpoint: EndpointConfig) -> HttpCall:
        """``GET {base}/v1/models`` (Anthropic's list shape: ``data[].id``)."""
        return HttpCall(
            "GET",
            endpoint.url("v1/models"),
            self.auth_headers(endpoint),
            params=dict(endpoint.query),
        )

    def decoder(self) -> StreamDecoder:
        return AnthropicDecoder()
