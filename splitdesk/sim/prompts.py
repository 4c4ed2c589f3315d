"""How the built-in endpoint reads a prompt: one question, or a numbered list of them.

A real model asked "answer each of these separately: 1. … 2. …" writes one answer per
question, each after the marker the prompt asks for. The simulated model does the same:
a prompt holding a numbered list of two or more questions (``1.`` or ``1)`` at line
start, numbered 1, 2, 3 …) is answered question by question; anything else is one question.

The marker is read from the prompt: the first quoted or back-quoted phrase containing a
standalone ``k`` (``"Answer k:"``, ``"### Question k"``); ``{k}`` marks the number. When
the prompt names none, ``Answer {k}:`` is used.

A repeated comparison's per-run nonce line (``splitdesk.builtin_endpoint.nonce_line``),
when it opens the prompt, is read past: it is there to defeat a prefix cache, and the
answer must not depend on it (it still counts in the prompt's tokens: the server got it).
A shared context the template put at the start of the user message (a ``<document>`` …
``</document>`` block, :data:`splitdesk.core.run.template.CONTEXT_OPEN`) is read past the
same way: its lines are the document, not questions (a numbered list in it is not a
combined prompt).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from splitdesk.builtin_endpoint import split_nonce_line

DEFAULT_MARKER = "Answer {k}:"

_ITEM_RE = re.compile(r"^[ \t]*(\d{1,3})[.)][ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_MARKER_RE = re.compile(r"[\"“`]([^\"”`\n]{0,40}?)\{?\bk\b\}?([^\"”`\n]{0,12})[\"”`]")


@dataclass(frozen=True)
class PromptReading:
    """What the simulated model understood: the questions to answer, and the marker
    (``{k}`` = number) for a combined reply, or ``None`` for a single answer."""

    questions: list[str]
    marker: str | None


#: the block a shared context is wrapped in at the start of a user message
_DOCUMENT_OPEN, _DOCUMENT_CLOSE = "<document>", "</document>"


def without_document(text: str) -> str:
    """``text`` without a leading ``<document>`` … ``</document>`` block (and the blank
    line after it); unchanged when it does not open with one."""
    stripped = text.lstrip()
    if not stripped.startswith(_DOCUMENT_OPEN):
        return text
    end = stripped.find(_DOCUMENT_CLOSE)
    if end < 0:
        return text
    return stripped[end + len(_DOCUMENT_CLOSE) :].lstrip("\n")


def read_prompt(text: str) -> PromptReading:
    """Questions in ``text`` and the answer marker; see the module docstring for the rules."""
    text = without_document(split_nonce_line(text)[1])
    items: list[str] = []
    for m in _ITEM_RE.finditer(text):
        number = int(m.group(1))
        if number == len(items) + 1:
            items.append(m.group(2))
        elif number == 1:  # a new list starts: keep the longer run only
            if len(items) >= 2:
                break
            items = [m.group(2)]
    if len(items) < 2:
        return PromptReading([text.strip()], None)
    marker = DEFAULT_MARKER
    head = text[: text.find(items[0])]
    found = _MARKER_RE.search(head) or _MARKER_RE.search(text)
    if found:
        marker = f"{found.group(1)}{{k}}{found.group(2)}"
    return PromptReading(items, marker)
