"""OpenAI chat completions (``POST {base}/chat/completions``), as OpenAI, Azure, vLLM,
SGLang, llama.cpp, Ollama, LM Studio, DeepSeek and OpenRouter stream it.

Wire format: https://platform.openai.com/docs/api-reference/chat-streaming. Variants
handled (see ``shared/fixtures/streams``): role-only and empty first chunks;
``choices: []`` chunks (Azure prompt-filter results, the usage chunk of
``stream_options.include_usage``); reasoning in ``delta.reasoning_content`` (DeepSeek) or
``delta.reasoning`` (vLLM) or both at once (counted once); ``content`` as a list of typed
parts (text and thinking parts); ``tool_calls`` deltas with ``content: null``;
``{"error": …}`` objects inside a 200 stream, also beside ``choices``; usage at the top
level, inside a choice or in a vendor's own object (``x_groq``); a ``chat.completion``
JSON body when ``stream`` is ignored. A stream without a finish reason or ``[DONE]`` is
``truncated``.
"""

from __future__ import annotations

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

#: fields a message or delta may carry reasoning in, each a channel of its own: DeepSeek's
#: ``reasoning_content``, vLLM's and OpenRouter's ``reasoning``, OpenRouter's
#: ``reasoning_details`` (typed parts), ``thinking`` (some llama.cpp / Ollama builds)
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details", "thinking")

#: OpenAI's end-of-stream line (https://platform.openai.com/docs/api-reference/chat-streaming)
DONE_SIGNAL = "a finish_reason or a 'data: [DONE]' line"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _tally(value: Any) -> int | None:
    """A token count that may be 0 (a reported zero is a report: nothing was cached)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def cached_tokens(usage: dict[str, Any]) -> int | None:
    """Prompt tokens the server read from its prefix cache, as a ``usage`` object says:
    OpenAI's ``prompt_tokens_details.cached_tokens``
    (https://platform.openai.com/docs/guides/prompt-caching; vLLM sends it with
    ``--enable-prompt-tokens-details``, llama.cpp's server in recent builds), the Responses
    shape ``input_tokens_details.cached_tokens``, or DeepSeek's
    ``prompt_cache_hit_tokens`` (https://api-docs.deepseek.com/guides/kv_cache). ``None``
    when none is there."""
    for key in ("prompt_tokens_details", "input_tokens_details"):
        details = usage.get(key)
        if isinstance(details, dict):
            found = _tally(details.get("cached_tokens"))
            if found is not None:
                return found
    return _tally(usage.get("prompt_cache_hit_tokens"))


def usage_delta(usage: Any, t_ns: int) -> list[Delta]:
    """A :class:`UsageDelta` from a ``usage`` object: OpenAI's ``completion_tokens`` /
    ``prompt_tokens`` (or ``output_tokens`` / ``input_tokens``, as some gateways name them),
    and the cached part of the prompt (:func:`cached_tokens`). Zero counts of output are
    placeholders that some servers (LocalAI) send on every chunk, so they are not a
    report."""
    if not isinstance(usage, dict):
        return []
    out = _count(usage.get("completion_tokens"))
    if out is None:
        out = _count(usage.get("output_tokens"))
    if out is None:
        return []
    prompt = _count(usage.get("prompt_tokens")) or _count(usage.get("input_tokens"))
    return [UsageDelta(t_ns, out, prompt, cached_tokens(usage))]


#: llama.cpp's ``timings`` fields (milliseconds) → :class:`ServerTimingDelta` keys (seconds)
LLAMA_DURATIONS = {"prompt_ms": "prompt_eval_s", "predicted_ms": "eval_s", "queue_ms": "queue_s"}
#: llama.cpp's ``timings`` counts (tokens) kept as they are
LLAMA_COUNTS = ("prompt_n", "cache_n", "predicted_n")


def server_timings(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """llama.cpp's own report of a request, on the last chunk of its OpenAI-compatible
    stream (``tools/server`` README, "timings"): ``prompt_n`` prompt tokens computed,
    ``cache_n`` taken from its per-slot prompt cache, ``prompt_ms`` the prefill's time,
    ``predicted_n`` / ``predicted_ms`` the decode's; the built-in endpoint adds
    ``queue_ms``. Returns a :class:`ServerTimingDelta` (seconds: ``prompt_eval_s``,
    ``eval_s``, ``queue_s``; counts as they are) and, when ``cache_n`` (or the native
    endpoint's ``tokens_cached``) is there, a :class:`UsageDelta` of the cached prompt
    tokens; nothing for a chunk without them."""
    timings = obj.get("timings")
    out: list[Delta] = []
    cached = _tally(obj.get("tokens_cached"))
    if isinstance(timings, dict):
        found: dict[str, float] = {}
        for field, key in LLAMA_DURATIONS.items():
            ms = timings.get(field)
            if isinstance(ms, int | float) and not isinstance(ms, bool) and ms >= 0:
                found[key] = ms / 1e3
        for field in LLAMA_COUNTS:
            n = _tally(timings.get(field))
            if n is not None:
                found[field] = float(n)
        if found:
            out.append(ServerTimingDelta(t_ns, found))
        if _tally(timings.get("cache_n")) is not None:
            cached = _tally(timings.get("cache_n"))
    if cached is not None:
        out.append(UsageDelta(t_ns, None, None, cached))
    return out


def find_usage(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """The usage a chunk or body reports, wherever the server put it: the top-level ``usage``
    (OpenAI), inside a choice (``choices[i].usage``), or in a vendor's own object beside
    ``choices`` (Groq's ``x_groq.usage``, https://console.groq.com/docs/api-reference, any
    other ``{"<vendor>": {"usage": …}}``, or counts one level inside a vendor object). At
    most one :class:`UsageDelta`: the first real report (a positive ``completion_tokens`` or
    ``output_tokens``) in that order."""
    candidates: list[Any] = [obj.get("usage")]
    choices = obj.get("choices")
    if isinstance(choices, list):
        candidates += [c.get("usage") for c in choices if isinstance(c, dict)]
    for key, vendor in obj.items():
        if key in ("usage", "choices", "error") or not isinstance(vendor, dict):
            continue
        # {"x_groq": {"usage": …}}, {"stats": {"completion_tokens": …}}, or counts one level
        # deeper ({"meta": {"billed_units": …}})
        candidates += [
            vendor.get("usage"),
            vendor,
            *(v for v in vendor.values() if isinstance(v, dict)),
        ]
    for usage in candidates:
        found = usage_delta(usage, t_ns)
        if found:
            return found
    return []


def has_error(obj: dict[str, Any]) -> bool:
    """A top-level ``error`` that says something (an object or a non-empty string), with or
    without ``choices`` beside it (OpenRouter sends both in one mid-stream chunk:
    https://openrouter.ai/docs/api-reference/streaming)."""
    return bool(obj.get("error"))


def in_band_error(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """An ``{"error": …}`` object sent with HTTP 200, as an :class:`ErrorDelta`."""
    return [ErrorDelta(t_ns, RequestError(ErrorKind.SERVER, error_message(obj)))]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class ChoiceReader:
    """Reads the first choice's text, reasoning, tool calls and finish reason from chunks or
    bodies of the OpenAI shapes (``source_key``: ``delta`` in chunks, ``message`` in a chat
    body, ``""`` when the choice itself holds ``text``, as in completions).

    ``content`` may be a string or typed parts (:func:`~splitdesk.providers.content.parts_text`);
    reasoning mirrored across :data:`REASONING_FIELDS` and thinking parts counts once
    (:class:`~splitdesk.providers.content.ReasoningChannels`). ``finished`` is set when the
    first choice carries a ``finish_reason``.
    """

    def __init__(self) -> None:
        self.reasoning = ReasoningChannels()
        self.finished = False

    def read(self, obj: dict[str, Any], source_key: str, text_key: str, t_ns: int) -> list[Delta]:
        """Deltas of one chunk or body ``obj`` (its ``choices``), then its usage, then its
        error (last: the stream stops at an error, after keeping the text before it)."""
        out: list[Delta] = []
        finish: str | None = None
        for choice in obj.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            source = choice.get(source_key) if source_key else choice
            if isinstance(source, dict):
                out += self._source(source, text_key, t_ns)
            if choice.get("finish_reason"):
                finish = str(choice["finish_reason"])
        if "timings" in obj or "tokens_cached" in obj:  # llama.cpp (before usage: it wins)
            out += server_timings(obj, t_ns)
        out += find_usage(obj, t_ns)
        if has_error(obj):
            return out + in_band_error(obj, t_ns)
        if finish == "error":  # OpenRouter's finish reason of a failed generation
            message = "the server ended the answer with finish_reason 'error'"
            return [*out, ErrorDelta(t_ns, RequestError(ErrorKind.SERVER, message))]
        if finish is not None:
            self.finished = True
            out.append(FinishDelta(t_ns, finish))
        return out

    def _source(self, source: dict[str, Any], text_key: str, t_ns: int) -> list[Delta]:
        out: list[Delta] = []
        answer, part_reasoning = parts_text(source.get(text_key))
        reasoning = ""
        for name in REASONING_FIELDS:
            reasoning += self.reasoning.take(name, reasoning_text(source.get(name)))
        reasoning += self.reasoning.take("content-parts", part_reasoning)
        if reasoning:
            out.append(TextDelta(t_ns, reasoning, reasoning=True))
        answer = answer or parts_text(source.get("refusal"))[0]
        if answer:
            out.append(TextDelta(t_ns, answer))
        for call in source.get("tool_calls") or []:
            fn = (call.get("function") or {}) if isinstance(call, dict) else {}
            if isinstance(fn, dict):
                out.append(ToolCallDelta(t_ns, _text(fn.get("name")), _text(fn.get("arguments"))))
        return out


#: fields of a chunk's ``delta`` that carry something besides the answer's text
_SIDE_FIELDS = (*REASONING_FIELDS, "refusal", "tool_calls")
#: ``delta`` keys of a plain text chunk (``role`` says nothing :class:`ChoiceReader` reads)
_PLAIN_KEYS = frozenset({"content", "role"})


def plain_text(obj: dict[str, Any]) -> str | None:
    """The answer text of a chunk that carries nothing else (``""`` for none), or ``None``
    when the chunk needs :meth:`ChoiceReader.read`.

    The fast path of nearly every chunk of a stream (``{"choices": [{"index": 0, "delta":
    {"content": "…"}, "finish_reason": null}], …}``): same result as ``read`` for such a
    chunk, without looking for usage, reasoning, tool calls, refusals and errors one field
    at a time. A chunk qualifies when it has exactly one choice, of index 0, without a
    finish reason or usage; its ``delta`` holds text as a string (or nothing) and no field
    of :data:`_SIDE_FIELDS` that is not ``null``; and no value of the chunk is an object
    (where usage, a vendor's usage and errors live) nor an ``error`` that says something.
    ``obj`` comes from ``json.loads``: its objects are plain ``dict`` s, its arrays ``list`` s.
    """
    choices = obj.get("choices")
    if type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("finish_reason") or choice.get("index", 0) != 0:
        return None
    delta = choice.get("delta")
    if type(delta) is not dict or dict in map(type, obj.values()) or obj.get("error"):
        return None  # not a delta; usage, a vendor's object or an error beside the choices
    if "usage" in choice and type(choice["usage"]) is dict:
        return None
    text = delta.get("content")
    if text is None:
        text = ""
    elif type(text) is not str:
        return None
    if not _PLAIN_KEYS.issuperset(delta):
        for name in _SIDE_FIELDS:
            if delta.get(name) is not None:
                return None
    return text


class ChatDecoder(StreamDecoder):
    """Decoder of ``chat.completion.chunk`` events (first choice only: requests ask n=1).

    Completion signal: a ``finish_reason`` on the first choice, or the ``data: [DONE]`` line
    (https://platform.openai.com/docs/api-reference/chat-streaming: the last chunk carries
    the finish reason, then ``[DONE]``; servers that skip one of the two still say the answer
    is over). A stream with neither is ``truncated``; a whole ``chat.completion`` body is
    complete.
    """

    completion_signal = DONE_SIGNAL
    done_sentinel_completes = True

    def __init__(self) -> None:
        self.choices = ChoiceReader()

    def on_event(self, data: str, event: str, t_ns: int) -> list[Delta]:
        obj = parse_event_json(data)
        if not isinstance(obj, dict):
            raise ValueError("event is not a JSON object")
        if event == "error":  # an SSE event named error, whatever its data holds
            return in_band_error(obj, t_ns)
        text = plain_text(obj)
        if text is not None:  # the common chunk (plain_text says when)
            return [TextDelta(t_ns, text)] if text else []
        out = self.choices.read(obj, "delta", "content", t_ns)
        self.complete = self.choices.finished
        return out

    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        if not isinstance(body, dict):
            raise ValueError("body is not a JSON object")
        self.complete = True
        return self.choices.read(body, "message", "content", t_ns)


class OpenAIChat(Provider):
    """``openai-chat``: one user message (after a ``system`` message when the prompt has
    one), streamed, usage requested."""

    api = "openai-chat"

    def build_request(
        self, endpoint: EndpointConfig, prompt: str | Prompt, params: GenParams
    ) -> HttpCall:
        body: dict[str, Any] = {
            "model": endpoint.model,
            "messages": as_prompt(prompt).messages(),
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
