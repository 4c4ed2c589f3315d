"""OpenAI Responses API (``POST {base}/responses``), streamed.

Wire format: https://platform.openai.com/docs/api-reference/responses-streaming — SSE
events named by ``event:`` and by the JSON ``type``: ``response.created``,
``response.output_text.delta`` (``delta``: answer text),
``response.reasoning_summary_text.delta`` / ``response.reasoning_text.delta``
(reasoning), ``response.function_call_arguments.delta`` (tool-call arguments),
``response.completed`` / ``response.incomplete`` (the final ``response`` object with
``status`` and ``usage.output_tokens``), ``response.failed`` and ``error`` events. There is
no terminator line: a stream without ``response.completed`` / ``response.incomplete`` is
``truncated``. Every other event type is ignored.

``response.incomplete`` is a finish, not a failure: it is how the API says that
``max_output_tokens`` cut the answer (chat's ``finish_reason: "length"``), and the text
stays valid. Its ``incomplete_details.reason`` becomes the finish reason.
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
    StreamDecoder,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
    as_prompt,
    error_message,
    parse_event_json,
)
from splitdesk.providers.content import (
    ReasoningChannels,
    missing_tail,
    parts_text,
    reasoning_text,
)
from splitdesk.providers.openai_chat import cached_tokens

_REASONING = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def responses_error(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """An ``error`` event (``{"type": "error", "code", "message"}``, or with a nested
    ``error`` object), a ``response.failed`` event or an error body, as an
    :class:`ErrorDelta` naming the message and the code
    (https://platform.openai.com/docs/api-reference/responses-streaming/error)."""
    inner: Any = obj
    if isinstance(obj.get("response"), dict):  # response.failed: response.error
        inner = obj["response"].get("error") or {"message": "the response failed"}
    elif isinstance(obj.get("error"), dict | str):
        inner = obj["error"]
    if isinstance(inner, dict):
        message = str(inner.get("message") or "").strip()
        code = inner.get("code") or (inner.get("type") if inner.get("type") != "error" else None)
        text = f"{message} ({code})" if message and code and str(code) not in message else message
        text = text or error_message(inner)
    else:
        text = error_message(inner)
    return [ErrorDelta(t_ns, RequestError(ErrorKind.SERVER, text[:300]))]


def _usage_of(usage: Any, t_ns: int) -> list[Delta]:
    if not isinstance(usage, dict):
        return []
    out, prompt = _int(usage.get("output_tokens")), _int(usage.get("input_tokens"))
    if out is None:
        out, prompt = _int(usage.get("completion_tokens")), _int(usage.get("prompt_tokens"))
    if out is None or out <= 0:
        return []
    # input_tokens_details.cached_tokens (https://platform.openai.com/docs/api-reference/responses/object)
    return [UsageDelta(t_ns, out, prompt if prompt else None, cached_tokens(usage))]


def _usage(response: Any, t_ns: int, event: dict[str, Any] | None = None) -> list[Delta]:
    """Usage of a final ``response`` object (``response.usage``), else wherever a server put
    it: the event's own ``usage``, or a vendor's object beside it (``{"<vendor>": {"usage":
    …}}``) in the event or the response. The first report in that order, or nothing."""
    candidates: list[Any] = []
    for holder in (response, event):
        if isinstance(holder, dict):
            candidates.append(holder.get("usage"))
    for holder in (event, response):
        if isinstance(holder, dict):
            candidates += [
                v.get("usage")
                for k, v in holder.items()
                if k not in ("response", "usage", "error", "item", "part") and isinstance(v, dict)
            ]
    for usage in candidates:
        found = _usage_of(usage, t_ns)
        if found:
            return found
    return []


def _finish(response: Any, t_ns: int) -> list[Delta]:
    if not isinstance(response, dict):
        return []
    details = response.get("incomplete_details")
    if isinstance(details, dict) and details.get("reason"):
        return [FinishDelta(t_ns, str(details["reason"]))]
    status = response.get("status")
    return [FinishDelta(t_ns, str(status))] if status else []


def _output_items(response: dict[str, Any], t_ns: int) -> list[Delta]:
    """Deltas of a whole response object's ``output`` list (non-streamed body)."""
    out: list[Delta] = []
    for item in response.get("output") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "reasoning":
            for part in item.get("summary") or []:
                if isinstance(part, dict) and _text(part.get("text")):
                    out.append(TextDelta(t_ns, part["text"], reasoning=True))
        elif kind == "message":
            for part in item.get("content") or []:
                if not isinstance(part, dict):
                    continue
                text = _text(part.get("text")) or _text(part.get("refusal"))
                if text:
                    out.append(TextDelta(t_ns, text))
        elif kind == "function_call":
            out.append(ToolCallDelta(t_ns, _text(item.get("name")), _text(item.get("arguments"))))
    return out


class ResponsesDecoder(StreamDecoder):
    """Decoder of Responses API events
    (https://platform.openai.com/docs/api-reference/responses-streaming). Raises
    ``ValueError`` for an event that is not a JSON object.

    Completion signal: the terminal ``response.completed`` or ``response.incomplete`` event
    (``response.failed`` and ``error`` are errors). The API sends no ``[DONE]``; one that a
    gateway appends does not complete the stream, so a stream without a terminal event is
    ``truncated``. Reasoning summaries and raw reasoning text mirrored on both channels
    count once; an event with a top-level ``error`` is an error whatever its ``type``. The
    whole text a part ends with (``response.output_text.done``, ``content_part.done``,
    ``output_item.done``) adds only what its deltas did not give: all of it from a server
    that sends no deltas, nothing from one that sent them all.
    """

    completion_signal = "a response.completed or response.incomplete event"

    def reads_event(self, event: str) -> bool:
        """Every ``response.*`` type, ``error`` and the unnamed type; any other is skipped
        when its data is not JSON (:meth:`StreamDecoder.reads_event`)."""
        return event.startswith("response.") or event in ("", "message", "error")

    def __init__(self) -> None:
        self.reasoning = ReasoningChannels()
        #: answer text the deltas gave, per (item id, content index)
        self._answer: dict[tuple[str | None, int], str] = {}

    def _delivered(self, obj: dict[str, Any], index: int | None = None) -> tuple[str | None, int]:
        """The key of an event's content part; an event with an item id falls back to deltas
        that carried none (servers differ in which events name the item)."""
        item = obj.get("item_id")
        part = index if index is not None else _int(obj.get("content_index")) or 0
        key = (item if isinstance(item, str) else None, part)
        return key if key in self._answer or (None, part) not in self._answer else (None, part)

    def _whole(self, key: tuple[str | None, int], text: str, t_ns: int) -> list[Delta]:
        """The rest of a whole part's ``text`` that its deltas did not give (none of it from
        a server that sends only the ``.done`` events)."""
        rest = missing_tail(self._answer.get(key, ""), text)
        if not rest:
            return []
        self._answer[key] = self._answer.get(key, "") + rest
        return [TextDelta(t_ns, rest)]

    def on_event(self, data: str, event: str, t_ns: int) -> list[Delta]:
        obj = parse_event_json(data)
        if not isinstance(obj, dict):
            raise ValueError("event is not a JSON object")
        kind = obj.get("type") or event
        if kind in ("response.failed", "error"):
            return responses_error(obj, t_ns)
        out = self._deltas(obj, kind, t_ns)
        if obj.get("error"):  # an error beside anything else: after the text it carries
            return out + responses_error(obj, t_ns)
        return out

    def _deltas(self, obj: dict[str, Any], kind: str, t_ns: int) -> list[Delta]:
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            answer, thinking = parts_text(obj.get("delta"))
            out: list[Delta] = []
            thinking = self.reasoning.take("parts", thinking)
            if thinking:
                out.append(TextDelta(t_ns, thinking, reasoning=True))
            if answer:
                key = self._delivered(obj)
                self._answer[key] = self._answer.get(key, "") + answer
                out.append(TextDelta(t_ns, answer))
            return out
        if kind in ("response.output_text.done", "response.refusal.done"):
            text = _text(obj.get("text")) or _text(obj.get("refusal"))
            return self._whole(self._delivered(obj), text, t_ns)
        if kind == "response.content_part.done":
            part = obj.get("part")
            text = parts_text(part)[0] if isinstance(part, dict) else ""
            return self._whole(self._delivered(obj), text, t_ns)
        if kind == "response.output_item.done":
            item = obj.get("item")
            if not isinstance(item, dict) or item.get("type") != "message":
                return []
            out = []
            for index, part in enumerate(item.get("content") or []):
                key = self._delivered({"item_id": item.get("id")}, index)
                out += self._whole(key, parts_text(part)[0], t_ns)
            return out
        if kind in _REASONING:
            delta = self.reasoning.take(kind, reasoning_text(obj.get("delta")))
            return [TextDelta(t_ns, delta, reasoning=True)] if delta else []
        if kind == "response.function_call_arguments.delta":
            delta = _text(obj.get("delta"))
            return [ToolCallDelta(t_ns, arguments=delta)] if delta else []
        if kind == "response.output_item.added":
            item = obj.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                return [ToolCallDelta(t_ns, name=_text(item.get("name")))]
            return []
        if kind in ("response.completed", "response.incomplete"):
            self.complete = self.final = True
            response = obj.get("response")
            return _usage(response, t_ns, obj) + _finish(response, t_ns)
        return []

    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        """A whole ``response`` object, or an ``{"error": …}`` body."""
        if not isinstance(body, dict):
            raise ValueError("body is not a JSON object")
        if body.get("error"):
            return responses_error(body, t_ns)
        if body.get("status") == "failed":
            return responses_error({"response": body}, t_ns)
        self.complete = True
        return _output_items(body, t_ns) + _usage(body, t_ns) + _finish(body, t_ns)


class OpenAIResponses(Provider):
    """``openai-responses``: the prompt as ``input`` to ``POST {base}/responses``, streamed
    (https://platform.openai.com/docs/api-reference/responses-streaming).

    ``max_output_tokens`` carries the cap; the Responses API has no ``seed``, so none is
    sent. Usage always arrives in ``response.completed``; no option is needed.
    """

    api = "openai-responses"

    def build_request(
        self, endpoint: EndpointConfig, prompt: str | Prompt, params: GenParams
    ) -> HttpCall:
        asked = as_prompt(prompt)
        body: dict[str, Any] = {
            "model": endpoint.model,
            "input": asked.user,
            "stream": params.stream,
        }
        if asked.system is not None:  # the Responses API's system message
            body["instructions"] = asked.system
        if params.max_tokens is not None:
            body["max_output_tokens"] = params.max_tokens
        if params.temperature is not None:
            body["temperature"] = params.temperature
        headers = self.auth_headers(endpoint)
        headers["Accept"] = "text/event-stream" if params.stream else "application/json"
        return HttpCall("POST", endpoint.url("responses"), headers, body, dict(endpoint.query))

    def decoder(self) -> StreamDecoder:
        return ResponsesDecoder()
