"""OpenAI (legacy) completions (``POST {base}/completions``).

Wire format: https://platform.openai.com/docs/api-reference/completions — SSE events of
``text_completion`` objects with ``choices[].text``; usage as in chat. Servers that send a
zero ``usage`` on every chunk (LocalAI) report nothing.
"""

from __future__ import annotations

import json
from typing import Any

from splitdesk.providers.base import (
    Delta,
    EndpointConfig,
    FinishDelta,
    GenParams,
    HttpCall,
    Provider,
    StreamDecoder,
    TextDelta,
)
from splitdesk.providers.openai_chat import in_band_error, usage_delta


class CompletionsDecoder(StreamDecoder):
    """Decoder of ``text_completion`` events and bodies."""

    def _choices(self, obj: dict[str, Any], t_ns: int) -> list[Delta]:
        out: list[Delta] = []
        for choice in obj.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            text = choice.get("text")
            if isinstance(text, str) and text:
                out.append(TextDelta(t_ns, text))
            if choice.get("finish_reason"):
                out.append(FinishDelta(t_ns, str(choice["finish_reason"])))
        return out + usage_delta(obj.get("usage"), t_ns)

    def on_event(self, data: str, event: str, t_ns: int) -> list[Delta]:
        obj = json.loads(data)
        if not isinstance(obj, dict):
            raise ValueError("event is not a JSON object")
        if obj.get("error") and not obj.get("choices"):
            return in_band_error(obj, t_ns)
        return self._choices(obj, t_ns)

    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        if not isinstance(body, dict):
            raise ValueError("body is not a JSON object")
        if body.get("error") and not body.get("choices"):
            return in_band_error(body, t_ns)
        return self._choices(body, t_ns)


class OpenAICompletions(Provider):
    """``openai-completions``: the prompt as plain text, streamed, usage requested."""

    api = "openai-completions"

    def build_request(self, endpoint: EndpointConfig, prompt: str, params: GenParams) -> HttpCall:
        body: dict[str, Any] = {"model": endpoint.model, "prompt": prompt, "stream": params.stream}
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
        return HttpCall("POST", endpoint.url("completions"), headers, body, dict(endpoint.query))

    def decoder(self) -> StreamDecoder:
        return CompletionsDecoder()
