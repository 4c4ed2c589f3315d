"""OpenAI (legacy) completions (``POST {base}/completions``).

Wire format: https://platform.openai.com/docs/api-reference/completions — SSE events of
``text_completion`` objects with ``choices[].text``; usage as in chat. Servers that send a
zero ``usage`` on every chunk (LocalAI) report nothing. A stream without a finish reason or
``[DONE]`` is ``truncated``.
"""

from __future__ import annotations

from typing import Any

from splitdesk.providers.base import (
    Delta,
    EndpointConfig,
    GenParams,
    HttpCall,
    Prompt,
    Provider,
    StreamDecoder,
    as_prompt,
    parse_event_json,
)
from splitdesk.providers.openai_chat import DONE_SIGNAL, ChoiceReader, in_band_error


class CompletionsDecoder(StreamDecoder):
    """Decoder of ``text_completion`` events and bodies, read like chat's
    (:class:`~splitdesk.providers.openai_chat.ChoiceReader`: an error beside ``choices``,
    usage in a vendor's place, typed parts and mirrored reasoning).

    Completion signal: a ``finish_reason`` on the first choice or the ``data: [DONE]`` line
    (https://platform.openai.com/docs/api-reference/completions/object); a stream with
    neither is ``truncated``.
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
        out = self.choices.read(obj, "", "text", t_ns)
        self.complete = self.choices.finished
        return out

    def on_json_body(self, body: Any, t_ns: int) -> list[Delta]:
        if not isinstance(body, dict):
            raise ValueError("body is not a JSON object")
        self.complete = True
        return self.choices.read(body, "", "text", t_ns)


class OpenAICompletions(Provider):
    """``openai-completions``: the prompt as plain text, streamed, usage requested."""

    api = "openai-completions"

    def build_request(
        self, endpoint: EndpointConfig, prompt: str | Prompt, params: GenParams
    ) -> HttpCall:
        text = as_prompt(prompt).flat()  # no system role: the system text opens the prompt
        body: dict[str, Any] = {"model": endpoint.model, "prompt": text, "stream": params.stream}
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
