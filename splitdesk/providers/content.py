"""Shapes of text that several dialects share: content sent as a list of typed parts, and
reasoning mirrored on more than one channel.

Typed parts: OpenAI-compatible servers may send ``content`` as a list of parts instead of a
string — ``{"type": "text", "text": …}`` (OpenAI's content-part shape,
https://platform.openai.com/docs/api-reference/chat/create), ``output_text`` (Responses
API), ``refusal``, and thinking parts — ``{"type": "thinking", "thinking": …}`` where
``thinking`` may itself be a list of text parts (Mistral's Magistral,
https://docs.mistral.ai/capabilities/reasoning/), ``reasoning`` / ``reasoning_text`` /
``summary_text`` parts; a part's text may itself be ``{"value": …}`` (the Assistants
API's shape). :func:`parts_text` splits any of these into answer and reasoning
text; parts it does not know (images, audio, tool use) carry no visible text.

Mirrored reasoning: some servers send the same reasoning delta on two channels at once
(vLLM's ``reasoning_content`` and ``reasoning``; OpenRouter's ``reasoning`` and
``reasoning_details``; a thinking part beside ``reasoning_content``).
:class:`ReasoningChannels` emits each piece of reasoning once.
"""

from __future__ import annotations

from typing import Any

#: part types whose text is the visible answer
ANSWER_PARTS = frozenset({"text", "output_text", "refusal", "text_delta"})
#: part types whose text is reasoning ("thinking")
REASONING_PARTS = frozenset(
    {
        "thinking",
        "reasoning",
        "reasoning_text",
        "reasoning.text",
        "summary_text",
        "reasoning.summary",
        "thinking_delta",
    }
)
#: the keys a part may hold its text in, tried in order
_TEXT_KEYS = ("text", "thinking", "reasoning", "refusal", "summary", "content", "value")


def _all_text(value: Any) -> str:
    """Every piece of text inside ``value`` (a string, a part, or a list of them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_all_text(v) for v in value)
    if isinstance(value, dict):
        if value.get("type") in ("redacted_thinking", "reasoning.encrypted"):
            return ""  # encrypted: no readable text
        for key in _TEXT_KEYS:
            if key in value and value[key] is not None:
                return _all_text(value[key])
    return ""


def parts_text(value: Any) -> tuple[str, str]:
    """(answer text, reasoning text) of a ``content`` value: a string (all answer), one typed
    part, or a list of strings and typed parts (module docstring). ``None`` and unknown part
    types give ``""``."""
    if value is None:
        return "", ""
    if isinstance(value, str):
        return value, ""
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return "", ""
    answer: list[str] = []
    reasoning: list[str] = []
    for part in value:
        if isinstance(part, str):
            answer.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            if kind in REASONING_PARTS:
                reasoning.append(_all_text(part))
            elif kind in ANSWER_PARTS or (kind is None and isinstance(part.get("text"), str)):
                answer.append(_all_text(part))
    return "".join(answer), "".join(reasoning)


def reasoning_text(value: Any) -> str:
    """The text of a reasoning field: a string, or typed parts / a list of them (every text
    in it is reasoning, e.g. OpenRouter's ``reasoning_details``)."""
    return _all_text(value)


class ReasoningChannels:
    """Counts reasoning mirrored on several channels once, over one response.

    :meth:`take` is given each channel's new text as it arrives and returns what is new to
    the response's reasoning. A channel whose text so far repeats (is a prefix of) what was
    already emitted is a mirror and adds nothing; one that runs ahead of it adds only the
    excess. A channel whose text departs from what was emitted is a separate stream of
    reasoning: from then on each of its deltas counts in full. (Only text it sent while it
    still matched the emitted text, character for character, is counted once.)
    """

    def __init__(self) -> None:
        self.emitted = ""
        self._text: dict[str, str] = {}
        self._independent: set[str] = set()

    def take(self, channel: str, text: str) -> str:
        """New reasoning from ``text`` arriving on ``channel`` (``""`` for a mirror)."""
        if not text:
            return ""
        if channel not in self._independent:
            so_far = self._text.get(channel, "") + text
            self._text[channel] = so_far
            if self.emitted.startswith(so_far):
                return ""  # a mirror, behind or level
            if so_far.startswith(self.emitted):
                new = so_far[len(self.emitted) :]
                self.emitted = so_far
                return new
            self._independent.add(channel)
            del self._text[channel]
        self.emitted += text
        return text


def missing_tail(delivered: str, whole: str) -> str:
    """The part of ``whole`` (a complete text a server sends at the end, e.g. the Responses
    API's ``response.output_text.done``) that ``delivered`` (the text its deltas already
    gave) does not end with: ``""`` when the deltas gave it all, all of ``whole`` when they
    gave none of it, the rest when they gave a beginning. Linear time (the KMP failure
    function of ``whole`` run over the end of ``delivered``)."""
    if not whole or delivered.endswith(whole):
        return ""
    fail = [0] * len(whole)
    k = 0
    for i in range(1, len(whole)):
        while k and whole[i] != whole[k]:
            k = fail[k - 1]
        if whole[i] == whole[k]:
            k += 1
        fail[i] = k
    k = 0
    for c in delivered[-len(whole) :]:
        while k and c != whole[k]:
            k = fail[k - 1]
        if c == whole[k]:
            k += 1
            if k == len(whole):
                return ""
    return whole[k:]
