"""The provider interface: how one API dialect builds its HTTP request and turns the
response's events into typed deltas.

Data flows one way: bytes → frames (SSE events, NDJSON lines or one JSON body; see
:mod:`splitdesk.providers.stream`) → :class:`StreamDecoder` → deltas. Every delta carries
``t_ns``, the ``time.perf_counter_ns()`` at which the network read that *completed* its
frame arrived, so the metrics see arrival times, not parse or paint times.

Adding a dialect is one module: subclass :class:`Provider` and :class:`StreamDecoder`, then
register the provider in :mod:`splitdesk.providers`.
"""

from __future__ import annotations

import enum
import json
import os
import re
import ssl
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx


class ErrorKind(enum.StrEnum):
    """Error families of the ``splitdesk bench`` JSON contract (DESIGN.md)."""

    HTTP = "http"  #: the server answered with an HTTP error status
    TIMEOUT = "timeout"  #: connect timeout, or no bytes for longer than the read timeout
    CONNECT = "connect"  #: refused, DNS failure, TLS failure, unreachable
    PROTOCOL = "protocol"  #: malformed stream, wrong content type, connection cut mid-stream
    SERVER = "server"  #: an error object sent inside a 200 stream
    #: the body ended cleanly but without the dialect's completion signal (a finish reason,
    #: a terminal event, a ``done`` line): the answer may be cut off; what arrived is kept
    TRUNCATED = "truncated"


@dataclass(frozen=True)
class RequestError:
    """Why a request failed, as a user reads it.

    ``message`` is one line that says what to do; it never holds an API key. ``status``:
    HTTP status when there is one; ``retry_after_s``: from a 429's ``Retry-After``.
    """

    kind: ErrorKind
    message: str
    status: int | None = None
    retry_after_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``error`` object of the bench contract."""
        out: dict[str, Any] = {
            "kind": str(self.kind),
            "status": self.status,
            "message": self.message,
        }
        if self.retry_after_s is not None:
            out["retry_after_s"] = self.retry_after_s
        return out


# -- deltas ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Visible output: answer text, or reasoning ("thinking") text when ``reasoning``."""

    t_ns: int
    text: str
    reasoning: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """Tool-call activity (name or argument fragment). Not visible text: no TTFT."""

    t_ns: int
    name: str = ""
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class UsageDelta:
    """Token counts the server reported. ``output_tokens`` is cumulative (keep the last one,
    never sum); ``None`` fields were not reported. ``prompt_tokens``: the whole prompt,
    cached part included; ``cached_prompt_tokens``: the part of it the server read from its
    prefix cache instead of computing it (OpenAI's ``prompt_tokens_details.cached_tokens``,
    Anthropic's ``cache_read_input_tokens``, llama.cpp's ``cache_n``)."""

    t_ns: int
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class FinishDelta:
    """The server said why generation stopped (``stop``, ``length``, ``end_turn`` …)."""

    t_ns: int
    reason: str


@dataclass(frozen=True, slots=True)
class ErrorDelta:
    """The request failed; text received before stays valid."""

    t_ns: int
    error: RequestError


@dataclass(frozen=True, slots=True)
class ServerTimingDelta:
    """The server's own timing report (Ollama's nanosecond durations), in seconds."""

    t_ns: int
    timings: dict[str, float]


Delta = TextDelta | ToolCallDelta | UsageDelta | FinishDelta | ErrorDelta | ServerTimingDelta


# -- requests ----------------------------------------------------------------------------------


#: The shortest value :attr:`EndpointConfig.secrets` counts as a secret (characters).
MIN_SECRET_CHARS = 6


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to send requests.

    ``base_url``: what the dialect's usual client takes (OpenAI dialects
    ``http://host:port/v1``; Anthropic, Ollama and TGI ``http://host:port``). ``api_key`` is
    kept out of ``repr`` and never written anywhere. ``verify``: TLS verification (True, a
    CA bundle path, or False only when the user turned it off for this endpoint).
    """

    base_url: str
    api: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict)
    verify: bool | str = True
    query: dict[str, str] = field(default_factory=dict)

    @property
    def secrets(self) -> tuple[str, ...]:
        """What no text about this endpoint may show (error messages, URLs, recordings,
        logs: :func:`splitdesk.core.run.redaction.redact`): the API key and each custom
        header's value, any of which may be a credential (a gateway's key, a cookie, a
        bearer token), with the token after an auth scheme (``Bearer …``) on its own.
        Values shorter than :data:`MIN_SECRET_CHARS` are not secrets: scrubbing them
        would garble ordinary words ("1", "true")."""
        out = [self.api_key or ""]
        for value in self.headers.values():
            out.append(value)
            scheme, _, token = value.strip().partition(" ")
            if scheme and token:
                out.append(token)
        return tuple(v for v in out if len(v.strip()) >= MIN_SECRET_CHARS)

    def url(self, path: str) -> str:
        """``base_url`` joined with ``path`` (exactly one slash between). A query string
        in the base URL is kept after the joined path (``…/v1?x=1`` and
        ``chat/completions``: ``…/v1/chat/completions?x=1``; it had been appended to the
        query, and every request went to ``/v1``), a fragment is dropped (never sent), and
        spaces around the URL are ignored. A URL ``urlsplit`` cannot read is joined as
        text (:func:`splitdesk.core.measure.urls.check_url` names its problem)."""
        base = self.base_url.strip()
        try:
            parts = urlsplit(base)
        except ValueError:
            return base.rstrip("/") + "/" + path.lstrip("/")
        joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
        return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, ""))

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context for this endpoint's clients (httpx's ``verify``; it deprecated
        passing a path). ``verify`` True: the system's and certifi's CAs, honouring
        ``SSL_CERT_FILE``/``SSL_CERT_DIR``; a path: that CA bundle file or folder only; False:
        no verification. Reads files: call off the GUI thread. Raises ``ValueError`` naming
        the bundle when it cannot be read or holds no certificate."""
        if isinstance(self.verify, str):
            try:
                if os.path.isdir(self.verify):
                    return ssl.create_default_context(capath=self.verify)
                return ssl.create_default_context(cafile=self.verify)
            except (OSError, ssl.SSLError) as exc:
                raise ValueError(f"cannot use CA bundle {self.verify}: {exc}") from None
        return httpx.create_ssl_context(verify=self.verify, trust_env=True)


#: RFC 9110 §5.6.2 ``token``: what a field (header) name may be made of.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _value_problem(value: str) -> str | None:
    """What makes ``value`` unsendable as an HTTP field value (RFC 9110 §5.5: visible
    ASCII, spaces and tabs; httpx encodes str values as ASCII, h11 refuses line breaks),
    in words that never quote it, or ``None``."""
    for c in value:
        if c == "\t" or " " <= c <= "~":
            continue
        if ord(c) > 0x7F:
            return "holds a character outside ASCII (a typographic quote or an accented letter?)"
        return "holds a control character (a line break?)"
    return None


def header_problem(api_key: str | None, headers: Mapping[str, str]) -> str | None:
    """Why the API key or a custom header cannot go in an HTTP request, or ``None``: one
    line for the user, said before anything is sent (httpx raised ``UnicodeEncodeError``
    for a non-ASCII value deep inside the first request). Never quotes the key or a
    header's value (either may be a secret); names the header."""
    if api_key is not None and (problem := _value_problem(api_key)):
        return f"the API key {problem}: an HTTP header carries visible ASCII only"
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            return (
                f"header name {name!r} must be ASCII letters, digits or !#$%&'*+-.^_`|~ "
                "(no spaces or colons)"
            )
        if problem := _value_problem(value):
            return f"header {name}: its value {problem}: an HTTP header carries visible ASCII only"
    return None


@dataclass(frozen=True)
class GenParams:
    """Generation settings sent with every request. ``max_tokens``: output cap (tokens)."""

    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    stream: bool = True


@dataclass(frozen=True)
class Prompt:
    """What one request asks, as its dialect is to send it.

    ``user``: the user message's text; ``system``: a system message's text, or ``None``
    (a dialect without a system role puts it before the user text: :meth:`flat`);
    ``shared_chars``: how many characters at the start of ``user`` every request of the
    run shares (the shared context and the run's opening line), where a dialect that
    marks cache breakpoints ends the cached block; ``cache_control``: mark the shared part
    (the system message, or ``user[:shared_chars]``) for caching where the dialect asks for
    it explicitly (Anthropic's ``cache_control``; other dialects cache automatically and
    ignore it)."""

    user: str
    system: str | None = None
    shared_chars: int = 0
    cache_control: bool = False

    def flat(self) -> str:
        """One text for dialects with no system role (completions, TGI): the system text,
        a blank line, then the user text; the user text alone when there is no system."""
        return self.user if self.system is None else f"{self.system}\n\n{self.user}"

    def messages(self) -> list[dict[str, Any]]:
        """Chat messages: the system message (when there is one), then the user message."""
        out: list[dict[str, Any]] = []
        if self.system is not None:
            out.append({"role": "system", "content": self.system})
        out.append({"role": "user", "content": self.user})
        return out


def as_prompt(prompt: str | Prompt) -> Prompt:
    """``prompt`` as a :class:`Prompt` (a plain string is one user message)."""
    return prompt if isinstance(prompt, Prompt) else Prompt(prompt)


@dataclass(frozen=True)
class HttpCall:
    """One HTTP request to make: the provider decides, the runner sends."""

    method: str
    url: str
    headers: dict[str, str]
    json: Any = None
    params: dict[str, str] = field(default_factory=dict)


Framing = Literal["sse", "ndjson"]


def truncated(signal: str) -> RequestError:
    """The :class:`RequestError` of a stream that ended without ``signal`` (its dialect's
    completion signal, named as the user can look it up)."""
    return RequestError(
        ErrorKind.TRUNCATED,
        f"the stream ended without {signal}: the answer may be cut off "
        "(the server or a proxy closed it early); the text that arrived is kept",
    )


class StreamDecoder(ABC):
    """Turns one response's frames into deltas. One instance per response (it may keep state,
    e.g. Anthropic's cumulative usage).

    Every stream is judged at its end (:meth:`on_end`): a decoder sets :attr:`complete` when
    its dialect's completion signal arrives (each dialect documents its own, with the spec
    link); a body that ends without it is an error of kind ``truncated``.
    """

    #: the dialect's completion signal, as the truncation message names it
    completion_signal: ClassVar[str] = "its completion signal"
    #: an SSE ``data: [DONE]`` line alone completes a stream of this dialect (OpenAI's)
    done_sentinel_completes: ClassVar[bool] = False
    #: set by the decoder once the completion signal (or a whole JSON reply) has arrived
    complete: bool = False
    #: set by the decoder when its dialect's *last* event has arrived (``message_stop``,
    #: ``response.completed``, a ``done`` line, TGI's final event): nothing more is
    #: expected, so the request ends there even if the server holds the response open.
    #: OpenAI's streams end with ``data: [DONE]`` (:meth:`is_terminator`), after the usage
    #: chunk that may follow the finish reason, so their decoders never set it.
    final: bool = False

    @abstractmethod
    def on_event(self, data: str, event: str, t_ns: int) -> list[Delta]:
        """An SSE event (``data`` joined with newlines, ``event`` its type or ``""``) or an
        NDJSON line (``event`` is ``""``). Raises ``ValueError`` for a malformed payload."""

    @abstractmethod
    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        """The whole body when the server ignored ``stream`` and sent one JSON document."""

    def on_sse_error_field(self, value: str, t_ns: int) -> list[Delta]:
        """A non-standard ``error:`` SSE field (llama.cpp sends its errors this way)."""
        return [ErrorDelta(t_ns, RequestError(ErrorKind.SERVER, error_message(value)))]

    def on_end(self, t_ns: int, done_seen: bool) -> list[Delta]:
        """The body ended without an error (``done_seen``: a ``data: [DONE]`` line arrived).
        Returns one ``truncated`` :class:`ErrorDelta` unless :attr:`complete` is set, or
        ``done_seen`` and the dialect ends its streams with ``[DONE]``."""
        if self.complete or (done_seen and self.done_sentinel_completes):
            return []
        return [ErrorDelta(t_ns, truncated(self.completion_signal))]

    def reads_event(self, event: str) -> bool:
        """True when SSE events of type ``event`` carry this dialect's content or errors, so
        a malformed one is an error. Events of any other type are read when their data is
        JSON and skipped when it is not: keep-alives such as sse-starlette's ``event: ping``
        whose data is a timestamp (until 1.3.4, every 15 s: a long combined request failed
        on its first ping). This default, for dialects that name no events (OpenAI, TGI):
        the unnamed type (``""`` or ``message``, WHATWG HTML's default) and ``error``."""
        return event in ("", "message", "error")

    def is_terminator(self, data: str) -> bool:
        """True for OpenAI's end-of-stream sentinel ``[DONE]``: never decoded as JSON in any
        dialect (gateways append it to Anthropic streams too); whether it *completes* the
        stream is :attr:`done_sentinel_completes`."""
        return data == "[DONE]"


class Provider(ABC):
    """One API dialect."""

    #: name used by ``--api`` and in recordings
    api: ClassVar[str]
    #: how the streamed body is framed
    framing: ClassVar[Framing] = "sse"
    #: environment variable holding this dialect's API key by default
    key_env: ClassVar[str | None] = "OPENAI_API_KEY"
    #: path the dialect's usual client appends to a server's root (``/v1`` for OpenAI)
    root_suffix: ClassVar[str] = "/v1"
    #: :meth:`models_request` lists the models a request may name (a 404 can cite them)
    lists_models: ClassVar[bool] = True

    def base_url_for_root(self, root: str) -> str:
        """The base URL of this dialect on a server whose root is ``root``."""
        return root.rstrip("/") + self.root_suffix

    @abstractmethod
    def build_request(
        self, endpoint: EndpointConfig, prompt: str | Prompt, params: GenParams
    ) -> HttpCall:
        """The HTTP request asking ``endpoint`` to answer ``prompt``: one user turn, with a
        system message before it when the :class:`Prompt` has one."""

    @abstractmethod
    def decoder(self) -> StreamDecoder:
        """A fresh decoder for one response."""

    def model_from_url(self, endpoint: EndpointConfig) -> str | None:
        """The model the base URL itself names (Azure's deployment), or ``None`` when the
        model must be listed or given."""
        return None

    def models_request(self, endpoint: EndpointConfig) -> HttpCall:
        """The request listing the endpoint's models (``GET /v1/models`` by default)."""
        return HttpCall(
            "GET", endpoint.url("models"), self.auth_headers(endpoint), params=dict(endpoint.query)
        )

    def parse_models(self, body: Any) -> list[str]:
        """Model ids from the :meth:`models_request` response body (OpenAI's list shape)."""
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise ValueError("no 'data' list in the models response")
        return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]

    def auth_headers(self, endpoint: EndpointConfig) -> dict[str, str]:
        """Headers carrying the key plus the endpoint's custom headers."""
        headers = dict(endpoint.headers)
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        return headers


#: the C scanner behind ``json.loads`` (``json.scanner.c_make_scanner``): (value, end index)
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def parse_event_json(data: str) -> Any:
    """``json.loads(data)``, the same value or the same error, a third cheaper for the one
    JSON document of each streamed event: the standard library's C scanner is called
    directly, and the full ``json.loads`` runs only when the scanner does not take the whole
    text (surrounding whitespace, a byte-order mark, extra data, or invalid JSON, which it
    then reports as ``json.loads`` does)."""
    try:
        value, end = _scan_json(data, 0)
    except StopIteration:
        return json.loads(data)
    return value if end == len(data) else json.loads(data)


def _validation_text(items: list[Any]) -> str:
    """A list of validation errors as one line: FastAPI's 422 ``detail``
    (``[{"loc": ["body", "model"], "msg": "Field required", "type": "missing"}]``, the
    shape pydantic reports) as ``body.model: Field required``; other items as their text."""
    parts = []
    for item in items:
        if isinstance(item, dict) and item.get("msg"):
            loc = item.get("loc")
            where = ".".join(map(str, loc)) if isinstance(loc, list | tuple) else ""
            parts.append(f"{where}: {item['msg']}" if where else str(item["msg"]))
        else:
            parts.append(error_message(item))
    return "; ".join(parts)


def error_message(value: Any) -> str:
    """One-line text of an error payload in any common shape: a string, ``{"message": …}``,
    ``{"error": "…"}``, ``{"error": {"type", "message", "code"}}`` or a JSON string of those."""
    if isinstance(value, str):
        text: str = value
        try:
            value = json.loads(text)
        except ValueError:
            return text.strip()[:300]
    if isinstance(value, dict):
        inner = value.get("error", value)
        if isinstance(inner, str):
            return inner.strip()[:300]
        if isinstance(inner, dict):
            said = inner.get("message") or inner.get("msg") or inner.get("detail") or ""
            msg = (_validation_text(said) if isinstance(said, list) else str(said)).strip()
            kind = inner.get("type") or inner.get("code")
            if msg and kind and str(kind) not in msg:
                return f"{msg} ({kind})"[:300]
            return (msg or json.dumps(inner)[:300])[:300]
    return str(value)[:300]
