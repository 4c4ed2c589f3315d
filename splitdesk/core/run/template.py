"""The combined-prompt template: how N questions become one request, and where a shared
context goes.

``text`` may use three placeholders: ``{n}`` (number of questions), ``{marker}`` (the
marker with a literal ``k``, e.g. ``Answer k:``) and ``{questions}`` (required: the
numbered list ``1. …\\n2. …``). ``marker`` is the line each answer must begin with, ``{k}``
standing for the question's number; the answer-section parser looks for it
(:mod:`splitdesk.core.run.sections`).

A question set's shared context (one document the questions are about) goes first in
every prompt — once in the combined prompt, in each parallel request — because a prefix
cache can only share what is the same from the first token on. ``context_as`` chooses how:

* ``"user"`` (default): at the start of the user message, wrapped in
  ``<document>`` … ``</document>`` (:meth:`CombinedTemplate.context_block`); every dialect;
* ``"system"``: as a system message. Dialects with a system role send it there
  (openai-chat and azure-openai: a ``system`` message; anthropic: ``system``;
  openai-responses: ``instructions``; ollama-chat: a ``system`` message; ollama-generate:
  its ``system`` field); openai-completions and tgi have none, so the system text opens
  their one prompt, a blank line before the rest (:meth:`splitdesk.providers.base.Prompt.flat`).

``cache_control``: mark the context as a cache breakpoint in dialects that cache only what
is marked (Anthropic's ``cache_control``); the others cache on their own and ignore it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

from splitdesk.core.run.sections import MarkerPattern

DEFAULT_TEXT = (
    "Answer each of the following {n} questions separately and independently. "
    'Begin each answer on a new line with "{marker}" where k is the question\'s number, '
    "then give the answer. Do not repeat the questions.\n\n{questions}"
)
DEFAULT_MARKER = "Answer {k}:"
#: what opens and closes a shared context at the start of a user message
CONTEXT_OPEN = "<document>\n"
CONTEXT_CLOSE = "\n</document>\n\n"

ContextPlace = Literal["user", "system"]

#: characters per token of an estimate (the usual rule of thumb for English prose)
CHARS_PER_TOKEN = 4


def estimated_tokens(text: str) -> int:
    """About how many tokens ``text`` is, before a server counts it:
    ``len / CHARS_PER_TOKEN`` rounded up (0 for no text). An estimate only: a tokenizer's
    own count differs by language and text (a server's usage says the real one)."""
    stripped = text.strip()
    return 0 if not stripped else -(-len(stripped) // CHARS_PER_TOKEN)


class CombinedTemplate(BaseModel):
    """Template of the combined request (see module docstring). Raises
    ``pydantic.ValidationError`` when ``text`` lacks ``{questions}`` or ``marker`` lacks ``{k}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = DEFAULT_TEXT
    marker: str = DEFAULT_MARKER
    context_as: ContextPlace = "user"
    cache_control: bool = False

    @field_validator("text")
    @classmethod
    def _needs_questions(cls, v: str) -> str:
        if "{questions}" not in v:
            raise ValueError("the template must contain {questions}")
        return v

    @field_validator("marker")
    @classmethod
    def _needs_k(cls, v: str) -> str:
        if "{k}" not in v or not v.replace("{k}", "").strip():
            raise ValueError("the marker must contain {k} and some text, e.g. 'Answer {k}:'")
        if v.count("{k}") > 1:
            raise ValueError("the marker must contain {k} once, e.g. 'Answer {k}:'")
        if "\n" in v:
            raise ValueError("the marker must be one line, e.g. 'Answer {k}:'")
        return v

    def pattern(self) -> MarkerPattern:
        """What the answer-section parser looks for (derived from :attr:`marker`)."""
        return MarkerPattern.from_marker(self.marker)

    def render(self, questions: list[str]) -> str:
        """The combined prompt for ``questions`` (in order, numbered from 1)."""
        listing = "\n".join(f"{i}. {' '.join(q.split())}" for i, q in enumerate(questions, start=1))
        return (
            self.text.replace("{n}", str(len(questions)))
            .replace("{marker}", self.marker.replace("{k}", "k"))
            .replace("{questions}", listing)
        )

    def context_block(self, context: str) -> str:
        """The opening of a user message that carries ``context`` (``context_as`` user):
        the text between :data:`CONTEXT_OPEN` and :data:`CONTEXT_CLOSE`."""
        return f"{CONTEXT_OPEN}{context.strip()}{CONTEXT_CLOSE}"

    def marker_for(self, k: int) -> str:
        """The marker of answer ``k`` (1-based)."""
        return self.marker.replace("{k}", str(k))
