"""A question's short label: the 2–3 words that name it in pane headers and timeline lanes.

One definition for every view (panes, timeline, editor tooltips) and for exports: the
question's ``title`` from its set when it has one, else a label derived from its text.

Derivation (a heuristic over English questions, written here because no library names a
question in three words): cut the text at its first clause break (``,;:?!.`` or a dash),
drop the leading question and auxiliary words ("What is the", "How do", "Explain how"),
keep the next three words, and drop trailing small words ("of", "the", "during") so the
label never ends mid-phrase. Text without spaces (CJK) is cut to a few characters.

>>> question_label("Why is the sky blue during the day and red at sunset?")
'Sky blue'
>>> question_label("What is the capital of Australia?")
'Capital of Australia'
>>> question_label("How do vaccines work?", title="Vaccines")
'Vaccines'
"""

from __future__ import annotations

import re

#: Longest derived label in characters (a title from the set is kept as written).
MAX_LABEL_CHARS = 24
#: Derived labels keep at most this many words.
MAX_LABEL_WORDS = 3

_CLAUSE = re.compile(r"[,;:?!.()\[\]]|\s[-–—]\s")
_LEADING = frozenset(
    [
        "what",
        "whats",
        "what's",
        "why",
        "how",
        "who",
        "whom",
        "whose",
        "which",
        "where",
        "when",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "has",
        "have",
        "had",
        "please",
        "explain",
        "describe",
        "compare",
        "tell",
        "me",
        "us",
        "give",
        "list",
        "name",
        "define",
        "many",
        "much",
        "summarise",
        "summarize",
        "outline",
        "discuss",
        "in",
        "a",
        "an",
        "the",
        "of",
        "we",
        "you",
        "i",
        "it",
        "its",
        "there",
        "this",
        "that",
        "these",
        "those",
        "some",
        "one",
        "briefly",
        "simply",
    ]
)
_TRAILING = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "but",
        "during",
        "while",
        "about",
        "into",
        "over",
        "under",
        "between",
        "than",
        "as",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "be",
        "been",
        "being",
        "its",
        "their",
        "his",
        "her",
        "our",
        "your",
        "my",
        "what",
        "which",
        "who",
        "how",
        "why",
        "when",
        "where",
        "that",
        "this",
        "these",
        "those",
        "vs",
        "versus",
        "work",
        "works",
        "happen",
        "happens",
        "mean",
        "means",
        "make",
        "makes",
    ]
)


def derive_label(text: str) -> str:
    """A 1–3 word label derived from question ``text`` (see the module docstring); ``""``
    for empty text. The first letter is capitalised; the result has at most
    :data:`MAX_LABEL_CHARS` characters (a longer single word is cut with "…")."""
    line = " ".join(text.split())
    if not line:
        return ""
    clause = _CLAUSE.split(line, maxsplit=1)[0].strip() or line
    words = clause.split()
    if len(words) == 1 and len(words[0]) > MAX_LABEL_CHARS:  # no spaces: CJK or one token
        return _cap(words[0][: MAX_LABEL_CHARS // 2].rstrip() + "…")
    while len(words) > 1 and words[0].lower().strip("'\"") in _LEADING:
        words = words[1:]
    words = words[:MAX_LABEL_WORDS]
    while len(words) > 1 and words[-1].lower() in _TRAILING:
        words = words[:-1]
    while len(words) > 1 and len(" ".join(words)) > MAX_LABEL_CHARS:
        words = words[:-1]
        while len(words) > 1 and words[-1].lower() in _TRAILING:
            words = words[:-1]
    label = " ".join(words).strip("'\"")
    if len(label) > MAX_LABEL_CHARS:
        label = label[: MAX_LABEL_CHARS - 1].rstrip() + "…"
    return _cap(label)


def question_label(text: str, title: str = "") -> str:
    """The label of a question: its set's ``title`` (trimmed to one line) when it has one,
    else :func:`derive_label` of ``text``."""
    title = " ".join(title.split())
    return title or derive_label(text)


def _cap(word: str) -> str:
    return word[:1].upper() + word[1:]
