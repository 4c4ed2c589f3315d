"""What every API dialect of the built-in endpoint shares: the parsed request, errors, and
the interface a dialect implements to format replies."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from splitdesk.sim.prefix_cache import PromptPart, prompt_tokens


class WireError(Exception):
    """A request the server refuses: HTTP ``status`` with ``message``.

    ``kind`` is the error type the dialect names (OpenAI ``type``, e.g.
    ``invalid_request_error``); ``param`` the offending field when known.
    """

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param
        self.code = code
        self.headers = headers or {}


@dataclass(frozen=True)
class GenRequest:
    """A generation request, whatever the dialect.

    ``prompt``: the text the simulated model reads for questions (the last user turn);
    ``prompt_tokens``: the whole prompt's length; ``max_tokens``: output cap or ``None``.
    ``parts``: the whole prompt in order (system text, every message), what the prefix
    cache names blocks of (:mod:`splitdesk.sim.prefix_cache`; empty: ``prompt`` alone);
    ``cache_marks_only``: only the prefix up to the last ``cache_mark`` may be cached
    (Anthropic: caching is asked for with ``cache_control``).
    """

    model: str
    prompt: str
    prompt_tokens: int
    max_tokens: int | None
    stream: bool
    include_usage: bool = False
    seed: int = 0
    parts: tuple[PromptPart, ...] = ()
    cache_marks_only: bool = False

    @property
    def prompt_parts(self) -> tuple[PromptPart, ...]:
        """:attr:`parts`, or the prompt text as one part when none were given."""
        return self.parts or (PromptPart(self.prompt),)


@dataclass
class Reply:
    """Per-response state a dialect formats events with.

    ``planned_tokens`` and ``finish_reason`` (generic: ``"stop"`` or ``"length"``) are known
    before the first token, so a dialect can mark the last token event (TGI attaches its
    ``details`` to it). ``parts``: the text sent so far, event by event. Times are
    ``time.perf_counter_ns()``: ``received_ns`` when the request arrived, ``submitted_ns``
    when the sequence was handed to the engine, ``first_token_ns``
    and ``last_token_ns`` when the engine scheduled the first and latest token events.
    ``events``: how many events a dialect has numbered so far (Responses'
    ``sequence_number``). Prefill, known once the first token is scheduled
    (:meth:`splitdesk.sim.streaming.EngineStream`): ``cached_tokens`` found in the prefix
    cache, ``cache_created_tokens`` written to it (Anthropic's ``cache_creation``),
    ``admitted_ns`` when the sequence joined the batch; ``report_cache``: the server has a
    prefix cache, so usage names its cached tokens.
    """

    id: str
    model: str
    prompt_tokens: int
    include_usage: bool
    created: int = field(default_factory=lambda: int(time.time()))
    output_tokens: int = 0
    planned_tokens: int = 0
    finish_reason: str = "stop"
    parts: list[str] = field(default_factory=list)
    received_ns: int = field(default_factory=time.perf_counter_ns)
    submitted_ns: int | None = None
    first_token_ns: int | None = None
    last_token_ns: int | None = None
    events: int = 0
    template: tuple[bytes, bytes] | bool | None = None
    cached_tokens: int = 0
    cache_created_tokens: int = 0
    admitted_ns: int | None = None
    report_cache: bool = False

    @property
    def prefill_ms(self) -> float:
        """Milliseconds from joining the batch to the end of the step that emitted the first
        token (0 before it)."""
        if self.admitted_ns is None or self.first_token_ns is None:
            return 0.0
        return max(0, self.first_token_ns - self.admitted_ns) / 1e6

    @property
    def queue_ms(self) -> float:
        """Milliseconds from reaching the engine to joining the batch (0 before it)."""
        if self.admitted_ns is None or self.submitted_ns is None:
            return 0.0
        return max(0, self.admitted_ns - self.submitted_ns) / 1e6

    @property
    def generation_ms(self) -> float:
        """Milliseconds from the first token to the latest one."""
        if self.first_token_ns is None or self.last_token_ns is None:
            return 0.0
        return (self.last_token_ns - self.first_token_ns) / 1e6

    def timings(self) -> dict[str, float | int]:
        """llama.cpp's ``timings`` object (its server's final chunk: ``prompt_n`` prompt
        tokens computed, ``cache_n`` reused from the cache, ``prompt_ms``, ``predicted_n``,
        ``predicted_ms``), plus ``queue_ms``, which llama.cpp does not send: the built-in
        endpoint's own addition, so a client can split TTFT into queue and prefill."""
        return {
            "cache_n": self.cached_tokens,
            "prompt_n": self.prompt_tokens - self.cached_tokens,
            "prompt_ms": round(self.prefill_ms, 3),
            "predicted_n": self.output_tokens,
            "predicted_ms": round(self.generation_ms, 3),
            "queue_ms": round(self.queue_ms, 3),
        }

    @property
    def text(self) -> str:
        """The whole text sent so far."""
        return "".join(self.parts)

    @property
    def is_last(self) -> bool:
        """True once every planned token has been sent."""
        return self.output_tokens >= self.planned_tokens

    def next_sequence(self) -> int:
        """A new event number, counting from 0."""
        n = self.events
        self.events += 1
        return n


def sse(data: Any, event: str | None = None) -> bytes:
    """One SSE event (WHATWG HTML "server-sent events"); ``data`` is JSON-encoded unless str."""
    payload = (
        data
        if isinstance(data, str)
        else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    )
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def ndjson(obj: Any) -> bytes:
    """One newline-delimited JSON line."""
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def require_object(body: Any) -> dict[str, Any]:
    """``body`` as a JSON object, or a 400 :class:`WireError`."""
    if not isinstance(body, dict):
        raise WireError(400, "the request body must be a JSON object")
    return body


def opt_int(body: dict[str, Any], key: str, minimum: int, default: int | None = None) -> int | None:
    """Optional integer field ``key`` ≥ ``minimum``; 400 :class:`WireError` otherwise."""
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(400, f"'{key}' must be an integer", param=key)
    if value < minimum:
        raise WireError(400, f"'{key}' must be >= {minimum}, got {value}", param=key)
    return value


def opt_bool(body: dict[str, Any], key: str, default: bool = False) -> bool:
    """Optional boolean field ``key``; 400 :class:`WireError` for other types."""
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise WireError(400, f"'{key}' must be a boolean", param=key)
    return value


def req_str(body: dict[str, Any], key: str) -> str:
    """Required non-empty string field ``key``; 400 :class:`WireError` otherwise."""
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise WireError(400, f"'{key}' is required and must be a non-empty string", param=key)
    return value


def content_text(content: Any, where: str) -> str:
    """Text of a message ``content``: a string, or a list of ``{"type": "text", "text": …}``
    parts (OpenAI and Anthropic both allow both). 400 :class:`WireError` otherwise."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    raise WireError(400, f"'{where}' must be a string or a list of text parts", param=where)


def _content_parts(content: Any, where: str, role: str | None, marks: bool) -> list[PromptPart]:
    """A message's content as prompt parts: one part (the joined text), or with ``marks``
    one part per text block, each block's ``cache_control`` a cache mark (Anthropic)."""
    if not marks or not isinstance(content, list):
        return [PromptPart(content_text(content, where), role)]
    parts: list[PromptPart] = []
    for block in content:
        text = content_text([block], where)
        marked = isinstance(block, dict) and isinstance(block.get("cache_control"), dict)
        first = not parts
        parts.append(PromptPart(text if first else "\n" + text, role if first else None, marked))
    return parts or [PromptPart("", role)]


def read_messages(
    messages: Any, system: Any = "", marks: bool = False
) -> tuple[str, int, tuple[PromptPart, ...]]:
    """(last user turn's text, prompt tokens of all turns, the prompt's parts) from a chat
    ``messages`` list and an optional ``system`` text (a string or text parts). ``marks``:
    read Anthropic's ``cache_control`` on text blocks (each block then its own part)."""
    if not isinstance(messages, list) or not messages:
        raise WireError(
            400, "'messages' is required and must be a non-empty list", param="messages"
        )
    last_user = ""
    parts: list[PromptPart] = []
    if system:
        parts += _content_parts(system, "system", None, marks)
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise WireError(
                400, f"'messages[{i}]' must be an object with a 'role'", param="messages"
            )
        content = msg.get("content", "")
        text = content_text(content, f"messages[{i}].content")
        parts += _content_parts(content, f"messages[{i}].content", msg["role"], marks)
        if msg["role"] == "user":
            last_user = text
    if not last_user:
        raise WireError(400, "'messages' must contain a user message", param="messages")
    return last_user, prompt_tokens(parts), tuple(parts)


_PLACEHOLDER = "\x00splitdesk-text\x00"
# One encoder for every event: json.dumps(..., ensure_ascii=False) builds a new one per call.
_encode_text = json.JSONEncoder(ensure_ascii=False).encode


class Dialect(ABC):
    """How one API family shapes requests, streamed events, whole bodies and errors."""

    #: name used by ``--api`` and in the emission log
    name: str
    #: media type of the streamed body
    stream_media_type = "text/event-stream"

    @abstractmethod
    def parse(self, body: Any) -> GenRequest:
        """Validate a request body; raises :class:`WireError` (4xx) when it is malformed."""

    def parse_http(
        self, body: Any, path_params: Mapping[str, str], query: Mapping[str, str]
    ) -> GenRequest:
        """Validate a request from its body, path parameters and query (Azure reads its
        deployment from the path and ``api-version`` from the query). Default:
        :meth:`parse` of the body. Raises :class:`WireError` (4xx)."""
        return self.parse(body)

    def serves(self, asked: str, served: str) -> bool:
        """True when a request naming model ``asked`` reaches the model ``served``."""
        return asked == served

    def model_not_found(self, asked: str, served: str) -> WireError:
        """The 404 for a request naming a model this server does not serve."""
        return WireError(
            404,
            f"The model `{asked}` does not exist; this server serves `{served}`.",
            param="model",
            code="model_not_found",
        )

    def status(self, err: WireError) -> int:
        """The HTTP status this dialect's servers answer ``err`` with (TGI: 422 for a
        validation error)."""
        return err.status

    def stream_start(self, reply: Reply) -> list[bytes]:
        """Events sent before the first token (role chunk, ``message_start`` …)."""
        return []

    @abstractmethod
    def stream_tokens(self, reply: Reply, text: str, tokens: int) -> bytes:
        """The event carrying ``text`` (``tokens`` tokens)."""

    #: True when a token event's bytes depend on its text alone (no counters, no times),
    #: so :meth:`fast_tokens` may serialise the event once and splice each text in.
    text_only_events = False

    def fast_tokens(self, reply: Reply, text: str, tokens: int) -> bytes:
        """:meth:`stream_tokens`, faster: for ``text_only_events`` dialects the event is
        serialised once per reply around a placeholder, then each text is JSON-encoded and
        spliced in (byte for byte what :meth:`stream_tokens` gives)."""
        if not self.text_only_events:
            return self.stream_tokens(reply, text, tokens)
        template = reply.template
        if template is None:
            sample = self.stream_tokens(reply, _PLACEHOLDER, tokens)
            quoted = json.dumps(_PLACEHOLDER).encode()
            if sample.count(quoted) == 1:
                prefix, suffix = sample.split(quoted)
                template = reply.template = (prefix, suffix)
            else:
                template = reply.template = False
        if isinstance(template, bool):
            return self.stream_tokens(reply, text, tokens)
        return template[0] + _encode_text(text).encode() + template[1]

    @abstractmethod
    def stream_end(self, reply: Reply, finish_reason: str) -> list[bytes]:
        """Events after the last token (finish, usage, terminator). ``finish_reason`` is
        generic (``"stop"`` or ``"length"``); the dialect names it its own way."""

    @abstractmethod
    def body(self, reply: Reply, text: str, finish_reason: str) -> Any:
        """The whole reply of a non-streaming request (JSON-ready)."""

    @abstractmethod
    def error(self, err: WireError) -> dict[str, Any]:
        """The error body this dialect's clients expect."""

    def stream_error(self, reply: Reply, message: str) -> bytes:
        """An error reported inside a 200 stream."""
        return sse({"error": {"message": message, "type": "server_error"}})
