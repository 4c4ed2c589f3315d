"""Hugging Face Text Generation Inference (TGI) native API: ``POST {base}/generate_stream``.

Wire format: https://huggingface.github.io/text-generation-inference/ (``/generate_stream``
and ``/generate``) — SSE ``data:`` events, one per token: ``{"token": {"id", "text",
"logprob", "special"}, "generated_text": null, "details": null}``. The last event also
carries ``generated_text`` and, when ``parameters.details`` was asked for, ``details``
(``finish_reason``: ``eos_token``, ``length``, ``stop_sequence``; ``generated_tokens``).
Special tokens (``</s>``, ``<|eot_id|>`` …) are not visible text. Errors inside a 200
stream are ``{"error": …, "error_type": …}`` events. A stream without its final event is
``truncated``. TGI has no model field: one server
serves one model, named by ``GET {base}/info`` (``model_id``).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

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
    UsageDelta,
    as_prompt,
    parse_event_json,
)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def tgi_error(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """A TGI ``{"error": "…", "error_type": "…"}`` object as an :class:`ErrorDelta` naming
    both (e.g. ``Request failed during generation: … (generation)``;
    https://huggingface.github.io/text-generation-inference/, ``ErrorResponse``)."""
    message = str(obj.get("error") or "").strip()
    if isinstance(obj.get("error"), dict):
        inner = obj["error"]
        message = str(inner.get("message") or json.dumps(inner)).strip()
    kind = obj.get("error_type")
    text = f"{message} ({kind})" if kind and str(kind) not in message else message
    return [ErrorDelta(t_ns, RequestError(ErrorKind.SERVER, text[:300]))]


def _details(obj: dict[str, Any], t_ns: int) -> list[Delta]:
    """Usage and finish reason of the final event's ``details`` (``generated_tokens``,
    ``finish_reason``); a proxy's OpenAI-shaped ``usage`` beside it is read when ``details``
    reports no count."""
    details = obj.get("details")
    out: list[Delta] = []
    tokens = _int(details.get("generated_tokens")) if isinstance(details, dict) else None
    usage = obj.get("usage")
    if (tokens is None or tokens <= 0) and isinstance(usage, dict):
        tokens = _int(usage.get("completion_tokens")) or _int(usage.get("output_tokens"))
    if tokens is not None and tokens > 0:
        out.append(UsageDelta(t_ns, tokens))
    if isinstance(details, dict) and details.get("finish_reason"):
        out.append(FinishDelta(t_ns, str(details["finish_reason"])))
    return out


class TGIDecoder(StreamDecoder):
    """Decoder of ``/generate_stream`` events and ``/generate`` bodies
    (https://huggingface.github.io/text-generation-inference/). Raises ``ValueError`` for an
    event that is not a JSON object.

    Completion signal: the final event, the one whose ``generated_text`` is set (a string,
    ``null`` on every other event) or that carries ``details.finish_reason``
    (``StreamResponse`` in the API page above). TGI sends no ``[DONE]`` here: a stream
    without the final event is ``truncated``. An event with an ``error`` is an error, after
    the token it carries.
    """

    completion_signal = "the final event (generated_text and details)"

    def on_event(self, data: str, event: str, t_ns: int) -> list[Delta]:
        obj = parse_event_json(data)
        if not isinstance(obj, dict):
            raise ValueError("event is not a JSON object")
        out: list[Delta] = []
        token = obj.get("token")
        if isinstance(token, dict) and not token.get("special"):
            text = token.get("text")
            if isinstance(text, str) and text:
                out.append(TextDelta(t_ns, text))
        if obj.get("error"):
            return out + tgi_error(obj, t_ns)
        details = obj.get("details")
        if isinstance(obj.get("generated_text"), str) or (
            isinstance(details, dict) and details.get("finish_reason")
        ):
            self.complete = self.final = True
        return out + _details(obj, t_ns)

    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        """``{"generated_text", "details"}`` (older servers: a one-element list of it)."""
        if isinstance(body, list) and len(body) == 1:
            body = body[0]
        if not isinstance(body, dict):
            raise ValueError("body is not a JSON object")
        if body.get("error"):
            return tgi_error(body, t_ns)
        self.complete = True
        out: list[Delta] = []
        text = body.get("generated_text")
        if isinstance(text, str) and text:
            out.append(TextDelta(t_ns, text))
        return out + _details(body, t_ns)


class TGI(Provider):
    """``tgi``: the prompt as ``inputs`` to ``POST {base}/generate_stream`` (``/generate``
    when not streaming), with ``details`` asked for so the final event reports usage.

    Wire format: https://huggingface.github.io/text-generation-inference/. TGI rejects
    ``temperature: 0``; that setting is sent as greedy decoding (``do_sample: false``).
    The key, when given, goes in ``Authorization: Bearer`` (Hugging Face Inference
    Endpoints; ``HF_TOKEN`` by default). Models: ``GET {base}/info`` → ``[model_id]``.
    """

    api = "tgi"
    key_env: ClassVar[str | None] = "HF_TOKEN"
    root_suffix = ""

    def build_request(
        self, endpoint: EndpointConfig, prompt: str | Prompt, params: GenParams
    ) -> HttpCall:
        parameters: dict[str, Any] = {"details": True}
        if params.max_tokens is not None:
            parameters["max_new_tokens"] = params.max_tokens
        if params.temperature is not None:
            if params.temperature > 0:
                parameters["temperature"] = params.temperature
            else:
                parameters["do_sample"] = False
        if params.seed is not None:
            parameters["seed"] = params.seed
        headers = self.auth_headers(endpoint)
        headers["Accept"] = "text/event-stream" if params.stream else "application/json"
        path = "generate_stream" if params.stream else "generate"
        # no system role: the system text opens the prompt
        body = {"inputs": as_prompt(prompt).flat(), "parameters": parameters}
        return HttpCall("POST", endpoint.url(path), headers, body, dict(endpoint.query))

    def models_request(self, endpoint: EndpointConfig) -> HttpCall:
        """``GET {base}/info``."""
        return HttpCall(
            "GET", endpoint.url("info"), self.auth_headers(endpoint), params=dict(endpoint.query)
        )

    def parse_models(self, body: Any) -> list[str]:
        """``[model_id]`` of an ``/info`` reply; ``ValueError`` without one."""
        model = body.get("model_id") if isinstance(body, dict) else None
        if not isinstance(model, str) or not model:
            raise ValueError("no 'model_id' in the /info response")
        return [model]

    def decoder(self) -> StreamDecoder:
        return TGIDecoder()
