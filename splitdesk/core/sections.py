"""Incremental answer-section parser for the combined stream.

Fed the combined reply chunk by chunk, :class:`SectionParser` reports when answer k starts
and ends, so the timeline can show that answer 5 starts late in the combined request.

What counts as the start of answer k — always at the start of a line, after optional
markdown decoration (``#`` headings, ``>``, ``**``/``__``/``*``/``_``, spaces):

* a **strong marker**: the template's marker word (``Answer`` for ``Answer {k}:``) or one
  of ``Answer``/``Question``/``Q``, case-insensitive, then the number: ``Answer 2:``,
  ``**Answer 2:**``, ``### Answer 2``, ``Q2.``. Found in any order.
* a **weak marker**, used only while no strong marker has been seen (a model ignoring the
  template): ``2.`` or ``2)`` followed by a space, for the next expected number only, at the
  start of the text, after a blank line, or decorated (``**2.**``, ``### 2.``).

Numbers outside 1…N, repeats of a number already found, and numbers inside a line are
ignored: the parser reports what it found and never invents a section. A marker split
across chunks is decided only once enough characters have arrived (``Answer 1`` could
still become ``Answer 12``). ``body_offset`` (where the marker's punctuation ends) is
settled once a character after it arrives. A section ends where the next found section's line begins
(its end time is the last chunk that carried non-blank text before that line) or, for the
last one, at :meth:`SectionParser.finish`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DECOR_RE = re.compile(r"[ \t]*(?:#{1,6}[ \t]*|>[ \t]*)?(?:\*\*|__|\*|_)?[ \t]*")
_STRONG_TAIL_RE = re.compile(r"[ \t]*#?[ \t]*(\d{1,3})(\D|$)")
_STRONG_PARTIAL_RE = re.compile(r"[ \t]*#?[ \t]*\d{0,3}")
_WEAK_RE = re.compile(r"(\d{1,3})[.)](\s|\*|_|$)")
_WEAK_PARTIAL_RE = re.compile(r"\d{1,3}[.)]?")
_WORD_RE = re.compile(r"[^\W\d_]+")

DEFAULT_WORDS = ("answer", "question", "q")


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


def marker_words(marker: str) -> tuple[str, ...]:
    """Lower-case words that introduce a strong marker, from a template marker like
    ``"Answer {k}:"`` plus the defaults."""
    head = marker.split("{k}")[0]
    words = [w.lower() for w in _WORD_RE.findall(head)]
    extra = (words[-1],) if words else ()
    return tuple(dict.fromkeys(extra + DEFAULT_WORDS))


class SectionParser:
    """Finds where each of ``n_questions`` answers starts and ends in a streamed text.

    Call :meth:`feed` with each chunk and its arrival time, :meth:`finish` at the end; both
    return the :class:`SectionStart`/:class:`SectionEnd` events they discovered.
    ``sections`` maps the 0-based question index to its :class:`Section`.
    """

    def __init__(self, n_questions: int, marker: str = "Answer {k}:") -> None:
        if n_questions < 1:
            raise ValueError("n_questions must be >= 1")
        self.n = n_questions
        self.words = marker_words(marker)
        # Characters that may follow the number before the answer's body: the template
        # marker's own suffix ("=>" in "Reply {k} =>") and the usual punctuation.
        self._header_chars = set(":.)-–—*_# \t") | set(marker.split("{k}", 1)[-1])
        self.sections: dict[int, Section] = {}
        self.current: int | None = None
        self._strong_seen = False
        self._offset = 0  # characters consumed
        self._line = ""  # current line so far
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
                self._line += piece
                self._offset += len(piece)
                if piece.strip():
                    self._line_content_t = t
                if not self._decided:
                    self._classify(final=False, t=t, events=events)
                elif self._open_header is not None:
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
        self._blank_before = not self._line.strip()
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
        decor = _DECOR_RE.match(self._line)
        assert decor is not None  # the pattern matches the empty string
        rest = self._line[decor.end() :]
        decorated = bool(decor.group().strip())
        if not rest:
            self._decided = final
            return
        verdict = self._strong(rest, final)
        if verdict is None:
            return  # wait for more characters
        if verdict[0] > 0:
            self._start(verdict[0], True, self._header_end(decor.end() + verdict[1]), t, events)
            return
        if not self._strong_seen and (self._blank_before or decorated or self._line_start == 0):
            weak = self._weak(rest, final)
            if weak is None:
                return
            if weak[0] > 0:
                self._start(weak[0], False, self._header_end(decor.end() + weak[1]), t, events)
                return
        self._decided = True

    def _header_end(self, index: int) -> int:
        """Offset in the line just past the marker and its punctuation (``:``, ``**`` …)."""
        while index < len(self._line) and self._line[index] in self._header_chars:
            index += 1
        return index

    def _strong(self, rest: str, final: bool) -> tuple[int, int] | None:
        """(number, end of the number in ``rest``) of a strong marker; (0, 0): not one;
        None: undecided yet."""
        low = rest.lower()
        undecided = False
        for word in self.words:
            if low.startswith(word):
                after = rest[len(word) :]
                m = _STRONG_TAIL_RE.match(after)
                if m and (m.group(2) or final):
                    return int(m.group(1)), len(word) + m.end(1)
                if not final and _STRONG_PARTIAL_RE.fullmatch(after):
                    undecided = True
            elif not final and word.startswith(low):
                undecided = True
        return None if undecided else (0, 0)

    def _weak(self, rest: str, final: bool) -> tuple[int, int] | None:
        m = _WEAK_RE.match(rest)
        if m and (m.group(2) or final):  # "1." at a chunk's end may still become "1.0"
            return int(m.group(1)), m.end(1) + 1
        if m:
            return None
        if not final and _WEAK_PARTIAL_RE.fullmatch(rest):
            return None
        return 0, 0

    def _start(
        self, k: int, strong: bool, header: int, t: float, events: list[SectionEvent]
    ) -> None:
        """Open section ``k`` (1-based) whose marker ends ``header`` characters into the line."""
        self._decided = True
        q = k - 1
        if not 0 <= q < self.n or q in self.sections:
            return
        if not strong:
            expected = max(self.sections) + 1 if self.sections else 0
            if q != expected:
                return
        if strong:
            self._strong_seen = True
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
