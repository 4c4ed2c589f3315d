"""Incremental answer-section parser for the combined stream.

Fed the combined reply chunk by chunk, :class:`SectionParser` reports when answer k starts
and ends, so the timeline can show that answer 5 starts late in the combined request.

What it looks for comes from the user-editable template marker (:class:`MarkerPattern`):
``Answer {k}:`` → the word ``Answer``, the number, ``:``; ``[{k}]`` → ``[``, the number,
``]``; ``Q{k}.``, ``#{k}``, ``### Reply {k} =>`` likewise (the marker's own decoration is
not part of it). A marker counts only at the start of a line, after any markdown decoration
(spaces, ``>`` quotes, ``#`` headings, ``-``/``*``/``+`` bullets, ``1.`` list numbers,
``*``/``_`` emphasis of one to three characters, so bold, italic and bold-italic), with
emphasis also allowed between the number and the suffix (``**Answer 1**:``). Letters match
case-insensitively; spaces in the marker are optional. Three levels, most trusted first:

* **template**: the marker exactly (its suffix present): ``Answer 2:``, ``**[2]**``.
* **loose**: the marker without its suffix (``### Answer 2``), or another usual word
  (``Answer``/``Question``/``Q``) with the number.
* **bare** numbering (``2.`` / ``2)``), the fall-back for a model that ignored the
  template: only while no template or loose marker has appeared at all, and only at a
  paragraph's start (the text's start, after a blank line, or decorated: ``**2.**``).

Order: a marker never opens an answer that is already open or found, one outside 1…N, or
one before the last found (backwards). It may skip ahead (a model that left an answer
out) only at the template level and only when the marker holds a word of three or more
letters (``Answer 3:``); every other marker must open the next number. Once a template
marker has appeared, loose markers with another word (a line of an answer that starts with
"Q3 …") open nothing. So a line of an answer's own text that starts with a number or "Q3"
never opens a section out of order, and numbers inside a line never count.

A marker split across chunks is decided only once enough characters have arrived (``Answer
1`` could still become ``Answer 12`` or gain its ``:``), so any chunking gives the same
sections. ``body_offset`` (where the marker's punctuation ends) is settled once a character
after it arrives. A section ends where the next found section's line begins (its end time
is the last chunk that carried non-blank text before that line) or, for the last one, at
:meth:`SectionParser.finish`. Hand-written rather than a regular expression: Python's
``re`` cannot tell "no match" from "not enough characters yet", which streaming needs.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

_WORD_RE = re.compile(r"[^\W\d_]+")
#: decoration a marker may carry in the template itself (stripped to find its core)
_TEMPLATE_DECOR_RE = re.compile(r"^[ \t>#*_+-]*")
_TEMPLATE_TAIL_RE = re.compile(r"[ \t*_]*$")

DEFAULT_WORDS = ("answer", "question", "q")
#: characters that may follow the number before the answer's body (plus the marker's own)
HEADER_CHARS = frozenset(":.)]-–—*_# \t")


class Level(enum.IntEnum):
    """How sure a marker is, least to most: bare numbering, another usual word
    (``Q3`` under an ``Answer {k}:`` template), the template's marker without its suffix,
    the template's marker exactly."""

    BARE = 0
    OTHER = 1
    LOOSE = 2
    TEMPLATE = 3


#: a prefix token: ("word", lower-case letters) | ("space", "") | ("lit", one character)
Token = tuple[str, str]
#: (level, number, index just past the number) | "no" | None (undecided: wait)
Match = tuple[Level, int, int] | str | None


def _tokens(prefix: str) -> tuple[Token, ...]:
    out: list[Token] = []
    i = 0
    while i < len(prefix):
        c = prefix[i]
        if c in " \t":
            while i < len(prefix) and prefix[i] in " \t":
                i += 1
            out.append(("space", ""))
            continue
        m = _WORD_RE.match(prefix, i)
        if m:
            out.append(("word", m.group().lower()))
            i = m.end()
            continue
        out.append(("lit", c))
        i += 1
    return tuple(out)


@dataclass(frozen=True)
class MarkerPattern:
    """What a template marker (``{k}`` standing for the number) asks the model to write.

    ``prefix``: tokens before the number (words match case-insensitively, spaces are
    optional); ``suffix``: the punctuation after it (``":"``, ``"]"``, ``""`` for none);
    ``distinctive``: the prefix holds a word of three or more letters, so the marker is
    unlikely inside an answer's text and may skip ahead. Raises ``ValueError`` when
    ``marker`` lacks ``{k}``.
    """

    prefix: tuple[Token, ...]
    suffix: str
    distinctive: bool

    @classmethod
    def from_marker(cls, marker: str) -> MarkerPattern:
        """The pattern of a template marker such as ``"**Answer {k}:**"`` or ``"[{k}]"``."""
        if "{k}" not in marker:
            raise ValueError(f"the marker {marker!r} has no {{k}}")
        head, tail = marker.split("{k}", 1)
        core = _TEMPLATE_DECOR_RE.sub("", head, count=1)
        if not core.strip() and head.strip():  # the decoration *is* the marker: "#{k}"
            core = head.strip(" \t*_") or head.strip(" \t")
        suffix = _TEMPLATE_TAIL_RE.sub("", tail).strip(" \t")
        words: list[str] = _WORD_RE.findall(core)
        return cls(_tokens(core), suffix, any(len(w) >= 3 for w in words))


def marker_words(marker: str) -> tuple[str, ...]:
    """Lower-case words that introduce a loose marker: the template marker's last word
    (``"Answer {k}:"`` → ``answer``) plus the usual ones (:data:`DEFAULT_WORDS`)."""
    head = marker.split("{k}")[0]
    words = [w.lower() for w in _WORD_RE.findall(head)]
    extra = (words[-1],) if words else ()
    return tuple(dict.fromkeys(extra + DEFAULT_WORDS))


def _match_prefix(tokens: tuple[Token, ...], line: str, i: int, final: bool) -> int | str | None:
    """Index past ``tokens`` matched at ``line[i:]``; "no"; None when more text is needed."""
    for kind, value in tokens:
        if kind == "space":
            while i < len(line) and line[i] in " \t":
                i += 1
            continue
        piece = line[i : i + len(value)]
        want = value if kind == "lit" else value.lower()
        got = piece if kind == "lit" else piece.lower()
        if got != want[: len(got)]:
            return "no"
        if len(got) < len(want):
            return "no" if final else None
        i += len(value)
    return i


def _match_number(
    line: str, i: int, suffix: str, final: bool, spaced: bool = True
) -> tuple[int, int, bool] | str | None:
    """(number, index past it, suffix present) of up to three digits at ``line[i:]`` (after
    optional spaces and ``#`` when ``spaced``), then an optional emphasis and the ``suffix``;
    "no"; None when more text is needed."""
    if spaced:  # "Answer 1", "Answer #1", "Q 3"
        while i < len(line) and line[i] in " \t":
            i += 1
        if i < len(line) and line[i] == "#":
            i += 1
            while i < len(line) and line[i] in " \t":
                i += 1
    start = i
    while i < len(line) and line[i].isdigit() and line[i].isascii():
        i += 1
    if i == start:
        return "no" if i < len(line) or final else None
    if i - start > 3:
        return "no"
    if i == len(line):
        return (int(line[start:i]), i, not suffix) if final else None
    number, end = int(line[start:i]), i
    if line[i].isalnum():
        return "no"  # "1st", "3x", "12a": not a marker
    j = i
    while j < len(line) and line[j] in "*_" and j - i < 3:
        j += 1
    while j < len(line) and line[j] in " \t":
        j += 1
    if not suffix:
        return number, end, True
    rest = line[j : j + len(suffix)]
    if rest == suffix:
        return number, end, True
    if not final and j + len(rest) == len(line) and suffix.startswith(rest):
        return None  # the suffix may still be arriving
    return number, end, False


@dataclass
class Section:
    """Answer ``question`` (0-based) inside the combined text.

    ``start_t``/``end_t``: seconds (the caller's clock) of the chunk that completed the
    marker and of the section's last non-blank chunk; ``start_offset``: character offset of
    the marker line; ``body_offset``: first character after the marker; ``end_offset``:
    where the next section's line begins (or the text's end). ``end_t`` is ``None`` while
    the section is still open.
    """

    question: int
    start_t: float
    start_offset: int
    body_offset: int
    end_t: float | None = None
    end_offset: int | None = None


@dataclass(frozen=True)
class SectionStart:
    """Answer ``question`` (0-based) started at ``t``; its marker line begins at ``offset``."""

    question: int
    t: float
    offset: int
    body_offset: int


@dataclass(frozen=True)
class SectionEnd:
    """Answer ``question`` ended: last text at ``t``; the section's text ends at ``offset``."""

    question: int
    t: float
    offset: int


SectionEvent = SectionStart | SectionEnd


_DECOR_TOKEN_RE = re.compile(
    r"[ \t]+|>|#{1,6}(?=[ \t]|[^\W\d_])|[-+*](?=[ \t])|\d{1,3}[.)](?=[ \t])|\*{1,3}|_{1,3}"
)
_DECOR_CHARS = frozenset(" \t>#*_+-")
_BARE_RE = re.compile(r"(\d{1,3})[.)](\s|\*|_|$)")
_BARE_PARTIAL_RE = re.compile(r"\d{1,3}[.)]?")


#: Characters of a line after which it is decided whether it opens a section: a marker
#: and its decoration (``### 1. **Answer 1:**``) come well within them, and a line of
#: decoration that went on for ever would be re-read on every piece.
UNDECIDED_CHARS = 256


class SectionParser:
    """Finds where each of ``n_questions`` answers starts and ends in a streamed text, by
    the template ``marker`` (module docstring; ``{k}`` stands for the number).

    Call :meth:`feed` with each chunk and its arrival time, :meth:`finish` at the end; both
    return the :class:`SectionStart`/:class:`SectionEnd` events they discovered.
    ``sections`` maps the 0-based question index to its :class:`Section`. Raises
    ``ValueError`` for ``n_questions < 1`` or a marker without ``{k}``.
    """

    def __init__(self, n_questions: int, marker: str = "Answer {k}:") -> None:
        if n_questions < 1:
            raise ValueError("n_questions must be >= 1")
        self.n = n_questions
        self.pattern = MarkerPattern.from_marker(marker)
        own = {v for kind, v in self.pattern.prefix if kind == "word"}
        #: usual words other than the template's own (loose markers of level OTHER)
        self._other_words: tuple[tuple[Token, ...], ...] = tuple(
            (("word", w), ("space", "")) for w in DEFAULT_WORDS if w not in own
        )
        self._header_chars = set(HEADER_CHARS) | set(self.pattern.suffix)
        self.sections: dict[int, Section] = {}
        self.current: int | None = None
        self._best_seen: Level | None = None  # most trusted marker level that opened one
        self._offset = 0  # characters consumed
        self._line = ""  # current line so far, while it may still open a section
        self._line_blank = True  # the current line has only spaces so far
        self._line_start = 0
        self._decided = False
        self._blank_before = True  # the previous line was blank (or this is the first)
        self._last_content_t: float | None = None  # last non-blank chunk before this line
        self._line_content_t: float | None = None  # last non-blank chunk within this line
        self._open_header: Section | None = None  # marker punctuation may still be arriving

    # -- public ----------------------------------------------------------------------------
    def feed(self, text: str, t: float) -> list[SectionEvent]:
        """Consume ``text`` that arrived at ``t``; returns the events it completed."""
        events: list[SectionEvent] = []
        pieces = text.split("\n")
        for i, piece in enumerate(pieces):
            if i > 0:  # a newline ended the previous line
                self._end_line(t, events)
                self._offset += 1
            if piece:
                self._offset += len(piece)
                if piece.strip():
                    self._line_content_t = t
                    self._line_blank = False
                # a decided line is kept only while its marker's punctuation may go on:
                # copying the whole line per piece was quadratic in a long line (one
                # 800 KB line in 4-character pieces took 35 s; issue 21)
                if not self._decided:
                    self._line += piece
                    # a marker comes within a line's first characters: past them, decide
                    final = len(self._line) > UNDECIDED_CHARS
                    self._classify(final=final, t=t, events=events)
                elif self._open_header is not None:
                    self._line += piece
                    self._extend_header()
        return events

    def finish(self, t: float) -> list[SectionEvent]:
        """End of stream at ``t``: decide the last line and close the open section."""
        events: list[SectionEvent] = []
        if not self._decided and self._line:
            self._classify(final=True, t=t, events=events)
        last = self._line_content_t if self._line_content_t is not None else self._last_content_t
        if self.current is not None:
            self._close(self.current, last if last is not None else t, self._offset, events)
            self.current = None
        return events

    # -- internals ---------------------------------------------------------------------------
    def _end_line(self, t: float, events: list[SectionEvent]) -> None:
        if not self._decided:
            self._classify(final=True, t=t, events=events)
        self._blank_before = self._line_blank
        self._line_blank = True
        if self._line_content_t is not None:
            self._last_content_t = self._line_content_t
        self._line = ""
        self._line_content_t = None
        self._line_start = self._offset + 1
        self._decided = False
        self._open_header = None

    def _extend_header(self) -> None:
        section = self._open_header
        assert section is not None
        end = self._header_end(section.body_offset - self._line_start)
        section.body_offset = self._line_start + end
        if end < len(self._line):
            self._open_header = None  # the body has begun

    def _classify(self, final: bool, t: float, events: list[SectionEvent]) -> None:
        """Decide whether the current line opens a section (or wait for more of it): a
        worded or template marker after any decoration first (``1. **Answer 1:**`` is answer
        1 by its marker, not by its list number), bare numbering only when there is none."""
        line = self._line
        positions: list[int] = []  # where each run of decoration ends
        pos = 0
        verdict: Match = "no"
        while True:
            if pos >= len(line) and not final:
                return  # decoration so far: the marker may follow
            positions.append(pos)
            found = self._worded_at(line, pos, final)
            if found is None:
                return  # wait for more characters
            if not isinstance(found, str):
                verdict = found
                break
            m = _DECOR_TOKEN_RE.match(line, pos)
            if m is None or m.end() == pos:
                rest = line[pos:]
                if not final and (
                    all(c in _DECOR_CHARS for c in rest) or _BARE_PARTIAL_RE.fullmatch(rest)
                ):
                    return  # "##", "-" or "1." at a chunk's end may still become decoration
                break
            pos = m.end()
        if isinstance(verdict, str):
            for pos in positions:
                bare = self._bare_at(line, pos, final)
                if bare is None:
                    return
                if not isinstance(bare, str):
                    verdict = bare
                    break
        self._decided = True
        if verdict is not None and not isinstance(verdict, str):
            level, k, end = verdict
            self._start(k, level, self._header_end(end), t, events)

    def _worded_at(self, line: str, pos: int, final: bool) -> Match:
        """The template's marker (exact or without its suffix) or another usual word's at
        ``line[pos:]`` (after ``pos`` characters of decoration)."""
        own = self._marker(self.pattern.prefix, self.pattern.suffix, line, pos, final)
        if own is None or not isinstance(own, str):
            return own
        undecided = False
        for tokens in self._other_words:
            other = self._marker(tokens, "", line, pos, final)
            if other is None:
                undecided = True
            elif not isinstance(other, str):
                return Level.OTHER, other[1], other[2]
        return None if undecided else "no"

    def _bare_at(self, line: str, pos: int, final: bool) -> Match:
        """Bare numbering (``2.``, ``2)``) at ``line[pos:]``, where it is allowed: while no
        other marker has opened a section, at a paragraph's start or decorated."""
        decorated = bool(line[:pos].strip())
        bare_allowed = self._best_seen in (None, Level.BARE)
        if bare_allowed and (self._blank_before or decorated or self._line_start == 0):
            rest = line[pos:]
            m = _BARE_RE.match(rest)
            if m and (m.group(2) or final):  # "1." at a chunk's end may still become "1.0"
                return Level.BARE, int(m.group(1)), pos + m.end(1) + 1
            if m or (not final and _BARE_PARTIAL_RE.fullmatch(rest)):
                return None
        return "no"

    @staticmethod
    def _marker(tokens: tuple[Token, ...], suffix: str, line: str, pos: int, final: bool) -> Match:
        i = _match_prefix(tokens, line, pos, final)
        if i is None or isinstance(i, str):
            return i
        # "Answer 1" / "Answer1" / "Q 3", but "#{k}" is never "# 3 things" (a heading)
        spaced = not tokens or tokens[-1][0] != "lit"
        found = _match_number(line, i, suffix, final, spaced)
        if found is None or isinstance(found, str):
            return found
        number, end, exact = found
        return (Level.TEMPLATE if exact else Level.LOOSE), number, end

    def _header_end(self, index: int) -> int:
        """Offset in the line just past the marker and its punctuation (``:``, ``**`` …)."""
        while index < len(self._line) and self._line[index] in self._header_chars:
            index += 1
        return index

    def _start(
        self, k: int, level: Level, header: int, t: float, events: list[SectionEvent]
    ) -> None:
        """Open section ``k`` (1-based) whose marker ends ``header`` characters into the line,
        unless the order rules (module docstring) forbid it."""
        q = k - 1
        if not 0 <= q < self.n or q in self.sections:
            return
        best = self._best_seen
        if best is not None and (
            (best >= Level.LOOSE and level == Level.BARE)
            or (best == Level.TEMPLATE and level == Level.OTHER)
        ):
            return
        expected = max(self.sections) + 1 if self.sections else 0
        if q < expected:
            return  # backwards
        if q > expected and not (level == Level.TEMPLATE and self.pattern.distinctive):
            return  # a skip only for a distinctive template marker
        self._best_seen = level if best is None else max(best, level)
        if self.current is not None:
            end_t = self._last_content_t if self._last_content_t is not None else t
            self._close(self.current, end_t, self._line_start, events)
        section = Section(q, t, self._line_start, self._line_start + header)
        self.sections[q] = section
        self.current = q
        self._open_header = section if header >= len(self._line) else None
        events.append(SectionStart(q, t, section.start_offset, section.body_offset))

    def _close(self, q: int, t: float, offset: int, events: list[SectionEvent]) -> None:
        section = self.sections[q]
        section.end_t = max(t, section.start_t)
        section.end_offset = offset
        events.append(SectionEnd(q, section.end_t, offset))
