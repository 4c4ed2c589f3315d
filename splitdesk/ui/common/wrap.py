"""Where a line of big type may break: never between a number and its unit, never
leaving one short word alone on a line.

A projector's headline wraps at a word boundary Qt picks; left alone it leaves a widow
("… one request at a" / "time", "(predicted" / "4.5×)") or splits "11.8" from "s". These
helpers put no-break spaces where a break would mislead or look broken; breaks stay at
the separators a reader expects (after " · " and " — ") and inside long phrases, so a
line never grows wider than its label. HTML and plain-text forms, for Qt's rich-text and
plain-text labels (a ``&nbsp;`` and U+00A0 are the same no-break space to Qt)."""

from __future__ import annotations

import re

from PySide6 import QtGui
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

#: a number and the unit after it: "11.8 s", "57 tok/s", "676 tokens", "3 ms"
_UNIT = re.compile(r"(\d) (?=(?:s|ms|tok/s|tokens?|MB|%)(?![\w/]))")
#: the separators after which a line may break
_SEP = re.compile(r" ([·—]) ")
_TAG = re.compile(r"(<[^>]*>)")
#: the last words of a phrase kept on one line (a phrase of up to this many + 1 words
#: is kept whole)
_TAIL_WORDS = 3


def keep_units(text: str) -> str:
    """``text`` with a no-break space (U+00A0) between each number and its unit."""
    return _UNIT.sub("\\1\u00a0", text)


def _phrase(words: list[str], space: str) -> str:
    if len(words) <= _TAIL_WORDS + 1:
        return space.join(words)
    head, tail = words[:-_TAIL_WORDS], words[-_TAIL_WORDS:]
    return " ".join(head) + " " + space.join(tail)


def no_orphans_text(text: str) -> str:
    """Plain text: :func:`keep_units`, and each phrase between separators ends on a line
    with at least its last three words (a phrase of up to four words is kept whole)."""
    pieces = _SEP.split(keep_units(text))
    out = []
    for i, piece in enumerate(pieces):
        if i % 2:
            out.append(f"\u00a0{piece} ")
        else:
            out.append(_phrase(piece.split(" "), "\u00a0"))
    return "".join(out)


def no_orphans_html(html: str) -> str:
    """Rich text (Qt's HTML subset): as :func:`no_orphans_text` inside each run of text
    between tags (a tag's attributes are left as they are); a space alone between two
    tags stays a place to break (between the verdict and its prediction)."""
    out = []
    for part in _TAG.split(html):
        if not part or part.startswith("<"):
            out.append(part)
            continue
        pieces = _SEP.split(_UNIT.sub("\\1&nbsp;", part))
        for i, piece in enumerate(pieces):
            if i % 2:
                out.append(f"&nbsp;{piece} ")
            elif not piece.strip():
                out.append(piece)
            else:
                lead = " " if piece.startswith(" ") else ""
                trail = piece.endswith(" ")
                words = piece.strip(" ").split(" ")
                glued = _phrase(words, "&nbsp;")
                # "Combined " before its <b>time</b>: the label stays with its number
                trail_text = (
                    "&nbsp;" if trail and len(words) <= _TAIL_WORDS else (" " if trail else "")
                )
                out.append(lead + glued + trail_text)
    return "".join(out)


class WidowlessLabel(QLabel):
    """A word-wrapped :class:`QLabel` that shows its text through :func:`no_orphans_html`
    (rich text) or :func:`no_orphans_text` (plain text); :meth:`text` returns the text as
    it was given, so callers and tests read the words, not the no-break spaces."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._given = ""
        self.setWordWrap(True)
        self.setText(text)

    def setText(self, text: str) -> None:
        """Show ``text`` with its breaks placed (module docstring)."""
        self._given = text
        rich = self.textFormat() == Qt.TextFormat.RichText or (
            self.textFormat() == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text)
        )
        super().setText(no_orphans_html(text) if rich else no_orphans_text(text))

    def text(self) -> str:
        """The text as given to :meth:`setText`."""
        return self._given
