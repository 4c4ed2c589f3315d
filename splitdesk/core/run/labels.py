"""A question's short label: the 2–3 words that name it in pane headers and timeline lanes.

One definition for every view (panes, timeline, editor tooltips) and for exports: the
question's ``title`` from its set when it has one, else a label derived from its text.

Derivation (a heuristic over English questions, written here because no library names a
question in three words): cut the text at its first clause break (``,;:?!.`` or a dash),
drop the leading question and auxiliary words ("What is the", "How do", "Explain how"),
keep the next three words, and drop trailing small words ("of", "the", "during") so the
label never ends mid-phrase. Text without spaces (Chinese, Japanese) drops its leading
question words ("为什么", "如何", "什么是") and keeps what fits in :data:`MAX_CJK_COLUMNS`
display columns (a wide character takes two), cut at its first clause break, full-width
punctuation included.

>>> question_label("Why is the sky blue during the day and red at sunset?")
'Sky blue'
>>> question_label("What is the capital of Australia?")
'Capital of Australia'
>>> question_label("How do vaccines work?", title="Vaccines")
'Vaccines'
>>> question_label("为什么天空是蓝色的而不是其他颜色呢？")
'天空是蓝色的'
"""

from __future__ import annotations

import re
import unicodedata

#: Longest derived label in characters (a title from the set is kept as written).
MAX_LABEL_CHARS = 24
#: Derived labels keep at most this many words.
MAX_LABEL_WORDS = 3

#: Display columns of a label derived from text without spaces (a wide CJK character
#: takes two): about as wide on screen as three English words.
MAX_CJK_COLUMNS = 12

_CLAUSE = re.compile(r"[,;:?!.()\[\]，；：？！。、（）「」『』]|\s[-–—]\s")
#: Leading question words of Chinese and Japanese questions, longest first.
_CJK_LEADING = (
    "为什么",
    "為什麼",
    "什么是",
    "什麼是",
    "请问",
    "請問",
    "如何",
    "怎样",
    "怎麼",
    "怎么",
    "为何",
    "なぜ",
    "どうして",
)
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
    if len(words) == 1 and any(_wide(ch) for ch in words[0]):  # no spaces: CJK
        return _cjk_label(words[0])
    if len(words) == 1 and len(words[0]) > MAX_LABEL_CHARS:  # one long token
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


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def _cjk_label(text: str) -> str:
    """``text`` (no spaces) without its leading question word, its first
    :data:`MAX_CJK_COLUMNS` display columns (as an English label keeps its first words, with
    no "…")."""
    for lead in _CJK_LEADING:
        if text.startswith(lead) and len(text) > len(lead):
            text = text[len(lead) :]
            break
    out, columns = "", 0
    for ch in text:
        width = 2 if _wide(ch) else 1
        if columns + width > MAX_CJK_COLUMNS:
            return out
        out, columns = out + ch, columns + width
    return out


def _cap(word: str) -> str:
    return word[:1].upper() + word[1:]
