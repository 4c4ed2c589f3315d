"""Stream panes: one request's text arriving live, with its state and figures in the header.

Panes never measure: they read a :class:`~splitdesk.core.run.run_state.RequestTrace`'s text
and its figure set, :func:`~splitdesk.core.analyse.metrics.request_figures`. Text is inserted at
the end of the document through a cursor, only what is new since the last paint, at most
once per frame (:class:`~splitdesk.ui.common.throttle.Throttle`).
"""

from __future__ import annotations

import math
import time

from PySide6.QtCore import QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPalette,
    QPen,
    QResizeEvent,
    QTextCharFormat,
    QTextCursor,
    QTextOption,
)
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QStyleOption,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.diagnosis import failure_word, waiting_state
from splitdesk.core.analyse.metrics import RequestFigures, group_metrics, request_figures
from splitdesk.core.run.questions import shorten
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.ui.common.clamped_label import ClampedLabel
from splitdesk.ui.common.follow_end import follow_end
from splitdesk.ui.common.theme import Theme, ink_on, mono_font, opaque_fill, ui_font
from splitdesk.ui.common.throttle import LIVE_FRAME_MS, LIVE_TEXT_MS, Throttle

#: Streaming text is appended at most this often (ms): each append re-lays out the pane's
#: text in Qt (the window's main cost per token; issue 13). Every pane shares the frame
#: grid (:class:`Throttle`, :data:`~splitdesk.ui.common.throttle.LIVE_FRAME_MS`).
PANE_MS = LIVE_FRAME_MS
#: With more parallel panes than this, their frame is :data:`MANY_PANES_MS` (ms), as the
#: timeline's with as many lanes: a grid of one-line panes shows ~20 at once at
#: 1600×1000, each repainting its text every frame (64 streams: window CPU 20-21 → 22-23 %
#: and the GUI loop's lag p99 12-13 → 14-16 ms once more of them were in sight).
MANY_PANES = 16
MANY_PANES_MS = 2 * LIVE_FRAME_MS
#: While a request streams, its header's figures (TTFT, tokens, rate) are rewritten at
#: most this often (ms; each rewrite measures and elides the line). A change of state
#: (first token, the end, a failure) shows at once.
HEADER_MS = LIVE_TEXT_MS

STATE_LABELS = {
    "planned": "queued",
    "waiting": "waiting for first token",
    "retrying": "rate limited · retrying",
    "streaming": "streaming",
    "done": "done",
    "failed": "failed",
    "stopped": "stopped",
}


#: The most characters a pane lays out (about 12,000 tokens of prose). Past it the pane
#: shows one line, "… N more characters", and lays out nothing more: Qt lays out a
#: paragraph whole on every append, so one endless paragraph would cost more per frame the
#: longer it grew. The full text stays in the run (RequestTrace), recordings and exports.
PANE_TEXT_LIMIT = 50_000
#: A run of this many characters with no space (base64, a minified blob) switches the pane
#: to wrap anywhere: Qt's word-boundary wrapping rescans an unbroken run for every line it
#: breaks, quadratic in the run's length (200 KB took 4.4 s to lay out; issue 21).
LONG_RUN = 1_000


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (Qt document positions)."""
    return len(text.encode("utf-16-le")) // 2


#: The shortest wording of a pane's figures a tight row keeps room for (a stable width:
#: the grid's columns do not change as the numbers do).
FIGURES_ROOM = "TTFT 00.00 s"


class TextStream(QPlainTextEdit):
    """Read-only text fed at its end; follows the end unless the reader scrolled up."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("paneText")
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setFrameShape(QFrame.Shape.NoFrame)
        #: Scrolled to the end, show the last line with text (compact panes).
        self.last_text_line = False
        self._fitting = False  #: inside :meth:`whole_lines`
        #: Characters laid out (at most :data:`PANE_TEXT_LIMIT`) and held back past it.
        self.shown_chars = 0
        self.held_back = 0
        self._run_tail = ""  # the text's last unbroken run, up to LONG_RUN characters
        self.verticalScrollBar().valueChanged.connect(lambda _v: self.whole_lines())

    def sizeHint(self) -> QSize:
        """As wide as Qt's, as high as its minimum: the view takes the room its pane has
        and asks for none beyond it. A failed pane's layout has a height for its width
        (the error wraps), which adds its widgets' preferred heights, and the view's
        ~190 px had made each row of refused panes ~310 px (four of five shown at
        1920×1080 on the rate-limited profile, with room for all)."""
        return QSize(super().sizeHint().width(), max(self.minimumHeight(), 1))

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Keep the text area a whole number of lines high (:meth:`whole_lines`)."""
        super().resizeEvent(event)
        self.whole_lines()

    def whole_lines(self) -> None:
        """Show whole lines only: the viewport ends at the bottom of the last line that fits
        in it whole (one at least) and the spare pixels, less than a line, stay empty below
        it, so a small pane never shows the top half of a line (the view scrolls by whole
        lines; a heading's taller line counts at its own height)."""
        if self._fitting:  # margins and scrolling below call back here: once at a time
            return
        self._fitting = True
        try:
            for _ in range(2):  # scrolling to the end may move the lines: fit once more
                if not self._fit_whole_lines():
                    break
        finally:
            self._fitting = False

    def _fit_whole_lines(self) -> bool:
        """One step of :meth:`whole_lines`; whether it scrolled (lines moved)."""
        avail = self.height() - 2 * self.frameWidth()
        offset = self.contentOffset()
        block = self.firstVisibleBlock()
        fits = -1  # the bottom of the last line in sight that fits whole
        cut = False  # a line runs past the bottom (else the text ends in sight: nothing to do)
        while block.isValid() and not cut:
            top = self.blockBoundingGeometry(block).translated(offset).top()
            layout = block.layout()
            if top >= avail or layout is None:
                break
            for i in range(layout.lineCount()):
                line = layout.lineAt(i)
                bottom = math.ceil(top + line.y() + line.height())
                if bottom > avail:
                    cut = True
                    break
                if bottom > 0:
                    fits = bottom
            block = block.next()
        # nothing cut, nothing laid out yet, or one line taller than the view: no margin
        spare = max(0, avail - fits) if cut and fits > 0 else 0
        if spare != self.viewportMargins().bottom():
            bar = self.verticalScrollBar()
            at_end = bar.value() >= bar.maximum() - 4  # as append_text: following the end
            self.setViewportMargins(0, 0, 0, spare)
            if at_end:  # a pane following its answer keeps following it
                before = bar.value()
                self.scroll_to_end()
                return bar.value() != before
        return False

    def first_line_top(self) -> int:
        """Pixels from the viewport's top to the first line wholly in sight (0 when the
        text is empty): above it, only the end of a line scrolled out of sight."""
        block = self.firstVisibleBlock()
        offset = self.contentOffset()
        while block.isValid():
            layout = block.layout()
            top = self.blockBoundingGeometry(block).translated(offset).top()
            for i in range(layout.lineCount() if layout is not None else 0):
                y = top + layout.lineAt(i).y()
                if y >= 0:
                    return math.floor(y)
            block = block.next()
        return 0

    def paintEvent(self, event: QPaintEvent) -> None:
        """The text, then the background again above its first whole line: the view
        scrolls by whole lines, and the descenders of the line above ("g", "p") reached a
        pixel or two into the view, dots along its top edge on a projector."""
        super().paintEvent(event)
        top = self.first_line_top()
        if top > 0:
            view = self.viewport()
            p = QPainter(view)
            p.fillRect(0, 0, view.width(), top, view.palette().color(view.backgroundRole()))
            p.end()

    def append_text(self, text: str, fmt: QTextCharFormat | None = None) -> None:
        """Insert ``text`` at the end (one edit, however long). Past
        :data:`PANE_TEXT_LIMIT` characters, only the count of those held back shows, on
        the pane's last line (rewritten alone: the text above is not laid out again)."""
        if not text:
            return
        room = PANE_TEXT_LIMIT - self.shown_chars
        rest = max(0, len(text) - max(0, room))
        if room > 0:
            text = text[:room]
            self._check_runs(text)
            self.shown_chars += len(text)
        bar = self.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        # one edit block: moving to the end does not lay out the last block to find the
        # cursor's x, and the document is laid out once, when the block ends (issue 13)
        cursor.beginEditBlock()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        if room > 0:
            cursor.insertText(text, fmt if fmt is not None else QTextCharFormat())
        if rest:
            if self.held_back:  # the note's line: select it, to write it anew
                cursor.movePosition(
                    QTextCursor.MoveOperation.StartOfBlock, QTextCursor.MoveMode.KeepAnchor
                )
            else:
                cursor.insertBlock()
            self.held_back += rest
            note = QTextCharFormat()
            note.setFontItalic(True)
            cursor.insertText(
                f"… {self.held_back:,} more characters (the full text is in the recording "
                "and exports)",
                note,
            )
        cursor.endEditBlock()
        if follow or rest:
            self.scroll_to_end()

    def _check_runs(self, text: str) -> None:
        """Wrap anywhere once the text holds an unbroken run of :data:`LONG_RUN`
        characters (linear in ``text``: only its run joined to the last one is looked at)."""
        if self.wordWrapMode() == QTextOption.WrapMode.WrapAnywhere:
            return
        words = (self._run_tail + text).split()
        if not words:
            self._run_tail = ""
            return
        if max(map(len, words)) >= LONG_RUN:
            self.setWordWrapMode(QTextOption.WrapMode.WrapAnywhere)
        self._run_tail = "" if text[-1].isspace() else words[-1][-LONG_RUN:]

    def scroll_to_end(self) -> None:
        """Show the end: the last line that has text at the bottom of the view (not the
        empty line after a final newline, which would leave a one-line view blank)."""
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())
        block = self.document().lastBlock()
        while not block.text() and block.previous().isValid():
            block = block.previous()
        if not block.text() or block == self.document().lastBlock():
            return
        end = QTextCursor(block)
        end.movePosition(QTextCursor.MoveOperation.EndOfBlock)
        # the view scrolls by lines: step back while the last text line is above the view
        # (a one-line view at the maximum shows the empty line after a final newline)
        while bar.value() > 0 and self.cursorRect(end).top() < 0:
            bar.setValue(bar.value() - 1)
        # and on down to the bottom of the view while it stays whole there
        pitch = self.line_pitch()
        while bar.value() > 0 and self.cursorRect(end).bottom() + pitch < self.viewport().height():
            bar.setValue(bar.value() - 1)

    def line_pitch(self) -> int:
        """Pixels from one line's top to the next's, as laid out (whole pixels, rounded up)."""
        first = self.document().firstBlock().layout()
        if first is not None and first.lineCount() > 0:  # the laid-out pitch (fractional)
            return math.ceil(first.lineAt(0).height())
        return math.ceil(QFontMetricsF(self.font()).lineSpacing())

    def format_range(self, start: int, end: int, fmt: QTextCharFormat) -> None:
        """Merge ``fmt`` into characters ``start``–``end`` (document positions)."""
        cursor = QTextCursor(self.document())
        cursor.setPosition(start)
        cursor.setPosition(
            min(end, self.document().characterCount() - 1), QTextCursor.MoveMode.KeepAnchor
        )
        cursor.mergeCharFormat(fmt)


class ElidedLabel(QLabel):
    """A one-line label that ends in "…" when its text does not fit. With
    :meth:`set_variants`, it shows the longest of several wordings that fits instead (a
    narrow pane drops its least important figures rather than cutting one in half)."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._variants = [text]
        #: When even the shortest wording does not fit: show nothing (True: figures, whose
        #: full text stays on hover) rather than a cut "TT…" (False: names).
        self.drop_when_narrow = False
        #: What the label means, on hover after the longest wording when that gave way
        #: (:meth:`set_hint`; a label with variants manages its own tooltip).
        self.hint = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(30)
        self.setText(text)

    def setText(self, text: str) -> None:
        self.set_variants([text])

    def set_variants(self, variants: list[str]) -> None:
        """Show the first of ``variants`` (longest first) that fits; else the last, elided."""
        self._variants = variants or [""]
        self._elide()

    def full_text(self) -> str:
        return self._variants[0]

    def set_hint(self, hint: str) -> None:
        """On hover: ``hint``, after the longest wording when a shorter one shows."""
        self.hint = hint
        self._elide()

    def _elide(self) -> None:
        metrics = self.fontMetrics()
        width = max(10, self.width())
        fitting = (t for t in self._variants[:-1] if metrics.horizontalAdvance(t) <= width)
        shown = next(fitting, None)
        if shown is None:  # only the last wording is left: elided (or dropped) to fit
            last = self._variants[-1]
            shown = metrics.elidedText(last, Qt.TextElideMode.ElideRight, width)
            if self.drop_when_narrow and shown != last:
                shown = ""
        self._show(shown)
        if len(self._variants) > 1 or self.drop_when_narrow or self.hint:
            dropped = "" if shown == self._variants[0] else self._variants[0]  # on hover
            tip = "\n".join(t for t in (dropped, self.hint) if t)
            if tip != self.toolTip():
                self.setToolTip(tip)

    def _show(self, shown: str) -> None:
        """Put ``shown`` on screen."""
        super().setText(shown)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()


class FiguresLabel(ElidedLabel):
    """An :class:`ElidedLabel` whose text changes every frame (a pane's live figures)
    without re-laying out the window.

    ``QLabel.setText`` re-lays out the label's row, its pane and every layout up to the
    window (Qt's ``updateGeometry``), even when no size changes: with a dozen panes
    streaming, the whole window was laid out ~30 times a second (issue 13). This label is
    one line whose width the layout gives, so its size never depends on its text: a new
    text only repaints it, drawn as ``QLabel`` draws plain text (the style's
    ``drawItemText`` in the label's contents rect, alignment and palette)."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        self._shown = ""
        super().__init__(text, parent)
        QLabel.setText(self, text or "—")  # one line: the size hint's height, never changed

    def text(self) -> str:
        """The text shown (one of the variants, or an elided one)."""
        return self._shown

    def _show(self, shown: str) -> None:
        if shown != self._shown:
            self._shown = shown
            self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        self.drawFrame(p)
        opt = QStyleOption()
        opt.initFrom(self)
        flags = self.alignment() | Qt.AlignmentFlag(Qt.TextFlag.TextForceLeftToRight.value)
        self.style().drawItemText(
            p,
            self.contentsRect(),
            flags.value,
            opt.palette,
            self.isEnabled(),
            self._shown,
            self.foregroundRole(),
        )
        p.end()


def _variants(parts: list[str], drop: tuple[int, ...]) -> list[str]:
    """``parts`` joined with " · ", then again without ``drop[0]``, then also without
    ``drop[1]``…; empty parts are skipped."""
    out = [" · ".join(p for p in parts if p)]
    gone: set[int] = set()
    for index in drop:
        gone.add(index)
        out.append(" · ".join(p for i, p in enumerate(parts) if p and i not in gone))
    return out


def header_variants(f: RequestFigures) -> list[str]:
    """A pane header's figures from the figure set ``f`` (formatting only), longest first.

    A failed request shows its failure (:func:`~splitdesk.core.analyse.diagnosis.failure_word`:
    "cannot connect", "HTTP 401") and only the figures it measured: no "TTFT …" or
    "0 tok" placeholders that read as still waiting."""
    if f.outcome == "failed":
        got = [
            f"TTFT {f.ttft_s:.2f} s" if f.ttft_s is not None else "",
            f"{'~' if f.tokens_source == 'events' else ''}{f.output_tokens} tok"
            if f.events
            else "",
        ]
        return _variants([f"✕ {failure_word(f.error)}", *got], drop=(2, 1))
    if f.retries and f.attempt_ttft_s is not None and f.ttft_s is not None:
        # TTFT is the user's wait everywhere (core/analyse/metrics.py); the answered
        # attempt's own is named apart
        ttft = f"TTFT {f.ttft_s:.2f} s · attempt TTFT {f.attempt_ttft_s:.2f} s"
    else:
        ttft = f"TTFT {f.ttft_s:.2f} s" if f.ttft_s is not None else "TTFT …"
    count = f"{'~' if f.tokens_source == 'events' else ''}{f.output_tokens} tok"
    rate = f"{f.decode_tok_s:.0f} tok/s" if f.decode_tok_s is not None else ""
    end = f"end {f.e2e_s:.2f} s" if f.finished and f.e2e_s is not None else ""
    retries = ""
    if f.retries:
        n = f.retries
        retries = f"{n} retr{'y' if n == 1 else 'ies'} after 429"
    return _variants([ttft, count, rate, end, retries], drop=(1, 2, 3))


class Badge(QWidget):
    """A small rounded label in a lane colour ("Q3"), painted directly: cheaper than a
    style sheet per pane when a run opens dozens of panes at once."""

    def __init__(self, text: str, color: str, font: QFont, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = text
        self._color = QColor(color)
        self.setFont(font)
        metrics = self.fontMetrics()
        self.setFixedSize(metrics.horizontalAdvance(text) + 16, metrics.height() + 4)

    def text(self) -> str:
        return self._text

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(self._color)
        p.drawRoundedRect(self.rect(), 6, 6)
        p.setPen(QColor(ink_on(self._color.name())))
        p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self._text)
        p.end()


class RequestPane(QFrame):
    """One request: header (badge, question, live state, TTFT · tokens · tok/s), optional
    dimmed reasoning, the answer, and the error if it failed.

    Signals:
        focusToggled(): the user asked to expand this pane (or to go back to all panes).
        needChanged(): the height it needs changed (:attr:`needChanged`).
    """

    focusToggled = Signal()
    #: The height the pane needs changed: its message shown, hidden or rewritten, or its
    #: empty text view hidden (the grid picks its layout again).
    needChanged = Signal()

    def __init__(
        self,
        badge: str,
        title: str,
        color: str,
        theme: Theme,
        scale: float = 1.0,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.theme = theme
        self.color = color
        self._qcolor = QColor(color)
        self._soft = QColor(color)
        self._soft.setAlpha(90)
        self._panel = QColor(theme.panel)
        self.trace: RequestTrace | None = None
        #: Many panes: header and the last lines only (:meth:`set_compact`).
        self.compact = False
        self.tight = False
        self.one_line = False  #: compact with the last line only (tight is one line too)
        #: failed with no text: the text view is hidden (:meth:`_fit_text_view`)
        self.no_text = False
        self._parts = 0
        self._reasoning_parts = 0
        self._header = ""
        self._header_state = ""  # the state the header's figures were last written for
        self._header_t = 0.0  # when (time.monotonic(), s)
        self._stale = False
        self.throttle = Throttle(self.refresh, PANE_MS, parent=self, paced=True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

        self.badge = Badge(badge, color, ui_font(scale, 0, bold=True))
        self.title = ElidedLabel(title)
        self.title.setObjectName("paneTitle")
        self.title.setFont(ui_font(scale, 0.5, bold=True))
        self.title.setToolTip(title)
        self.focus_button = QToolButton()
        self.focus_button.setText("⤢")
        self.focus_button.setToolTip("Expand this pane (again to show all)")
        self.focus_button.setAutoRaise(True)
        self.focus_button.setObjectName("paneFocus")
        self.focus_button.clicked.connect(self.focusToggled)
        head = self._head = QHBoxLayout()
        head.setSpacing(8)
        head.addWidget(self.badge)
        head.addWidget(self.title, 1)
        head.addWidget(self.focus_button)

        self.state = QLabel("")
        self.state.setFont(ui_font(scale, -0.5, bold=True))
        self.stats = FiguresLabel("—")
        self.stats.setObjectName("paneStats")
        opaque_fill(self.stats, theme.panel)  # new figures repaint the label alone
        self.stats.drop_when_narrow = True
        # the figures drop out of a row too narrow for them, so they ask no width of
        # their own (a tight row of two panes fits where one with figures would not)
        self.stats.setMinimumWidth(1)
        self.stats.setFont(ui_font(scale, -0.5))
        stats_row = self._stats_row = QHBoxLayout()
        stats_row.setSpacing(10)
        stats_row.addWidget(self.state)
        stats_row.addWidget(self.stats, 1)

        #: The reasoning toggle and view, made when the first reasoning text arrives
        #: (:attr:`reasoning`): most replies have none, and a run of 64 panes built both
        #: for each pane (a third of its cost, on the GUI thread as Run is pressed).
        self._reasoning_toggle: QToolButton | None = None
        self._reasoning: TextStream | None = None
        self._scale = scale

        self.text = TextStream()
        self.text.setFont(mono_font(scale))
        # the card's panel behind the text: a new line repaints the text alone, not the
        # card and every widget behind it up to the window (issue 25)
        opaque_fill(self.text.viewport(), theme.panel)
        opaque_fill(self.text.verticalScrollBar(), theme.panel)  # it moves as text comes
        self.text.setMinimumHeight(self._lines_height(1))  # a short window: one line, not cut
        #: The failure, wrapped and whole under the header; cut to the lines that fit
        #: only where the grid is shorter than the pane would need (:meth:`fit_error`).
        self.error = ClampedLabel()
        self.error.setObjectName("error")
        # the server's words as they came (ClampedLabel is plain text): an HTML error
        # page is text here, never laid out as rich text (on the GUI thread) or markup
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.error.hide()
        #: The run this pane's request belongs to (:meth:`set_run`): its clock and the
        #: other requests name what a waiting request waits for.
        self.run: RunState | None = None
        #: The failure is shown once in the summary's banner (every request had it).
        self.error_in_banner = False
        self._clock = QTimer(self)  # counts "waiting 1.8 s" / "stalled 3.2 s" between events
        self._tick_due = False  #: the clock ticked: the next refresh rewrites the state
        self._clock.setInterval(200)
        self._clock.timeout.connect(self._tick)

        lay = self._box = QVBoxLayout(self)
        lay.setContentsMargins(10, 8, 10, 8)
        lay.setSpacing(4)
        lay.addLayout(head)
        lay.addLayout(stats_row)
        # (the reasoning toggle and view go here, made on demand: :attr:`reasoning`)
        lay.addWidget(self.error)  # under the header: a failure reads first, top-aligned
        lay.addWidget(self.text, 1)
        lay.addStretch(0)  # a compact pane taller than its lines: the space goes below them
        self._update_header()

    # -- reasoning, made on demand ----------------------------------------------------------
    @property
    def reasoning_toggle(self) -> QToolButton:
        """The "▾ reasoning · N characters" toggle (made, hidden, on first use)."""
        self._make_reasoning()
        assert self._reasoning_toggle is not None
        return self._reasoning_toggle

    @property
    def reasoning(self) -> TextStream:
        """The dimmed reasoning view (made, hidden, on first use)."""
        self._make_reasoning()
        assert self._reasoning is not None
        return self._reasoning

    def _make_reasoning(self) -> None:
        """Make the reasoning toggle and view, hidden, in their place under the figures
        row (where a pane made them up front until issue 13: same widgets, same order)."""
        if self._reasoning is not None:
            return
        scale = self._scale
        toggle = self._reasoning_toggle = QToolButton()
        toggle.setAutoRaise(True)
        toggle.setCheckable(True)
        toggle.setChecked(True)
        toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toggle.toggled.connect(self._show_reasoning)
        toggle.hide()
        view = self._reasoning = TextStream()
        view.setFont(mono_font(scale))
        dim = view.palette()
        dim.setColor(QPalette.ColorRole.Text, QColor(self.theme.muted))
        view.setPalette(dim)
        italic = view.font()
        italic.setItalic(True)
        view.setFont(italic)
        view.setMaximumHeight(int(90 * scale))
        opaque_fill(view.viewport(), self.theme.panel)  # as the answer's view
        opaque_fill(view.verticalScrollBar(), self.theme.panel)
        view.hide()
        self._box.insertWidget(2, toggle)  # after the header and the figures rows
        self._box.insertWidget(3, view)
        follow_end(view, view.scroll_to_end)  # at its end through size/layout changes

    # -- layout ---------------------------------------------------------------------------------
    def header_min_width(self) -> int:
        """Pixels the header row needs to show the badge, the whole label and the expand
        button (the grid never makes a pane narrower: figures drop, the label stays)."""
        margins = self._box.contentsMargins()
        label = self.title.fontMetrics().horizontalAdvance(self.title.full_text())
        return (
            margins.left()
            + margins.right()
            + self.badge.width()
            + label
            + self.focus_button.sizeHint().width()
            + 2 * 8  # the row's spacing
            + 4
        )

    def set_compact(self, compact: bool, tight: bool = False, one_line: bool = False) -> None:
        """Compact (many panes): header, state and figures, and the last two lines of the
        answer, which follows the end; reasoning stays behind its toggle. ``one_line``
        (a row more of panes in sight): the same with the last line only. ``tight``
        (still more panes than room): state and figures move into the header row, after
        the whole label, and one last line shows."""
        tight = tight and compact
        one_line = (one_line or tight) and compact
        if compact == self.compact and tight == self.tight and one_line == self.one_line:
            return
        self.compact = compact
        self.one_line = one_line
        if tight != self.tight:
            self.tight = tight
            for w in (self.state, self.stats):  # a widget lives in one layout at a time
                self._head.removeWidget(w)
                self._stats_row.removeWidget(w)
            if tight:  # badge, label, state, figures (dropped first), expand
                self._head.insertWidget(2, self.state)
                self._head.insertWidget(3, self.stats, 1)
                self._head.setStretchFactor(self.title, 0)
                label = self.title.fontMetrics().horizontalAdvance(self.title.full_text())
                self.title.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
                self.title.setFixedWidth(label + 2)  # the label whole; figures give way
            else:
                self._stats_row.addWidget(self.state)
                self._stats_row.addWidget(self.stats, 1)
                self._head.setStretchFactor(self.title, 1)
                self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
                self.title.setMinimumWidth(30)
                self.title.setMaximumWidth(16777215)
        policy = (
            Qt.ScrollBarPolicy.ScrollBarAlwaysOff
            if compact
            else Qt.ScrollBarPolicy.ScrollBarAsNeeded
        )
        self.text.setVerticalScrollBarPolicy(policy)
        lines = self._lines_height(1 if one_line else 2)
        self.text.setMaximumHeight(lines if compact else 16777215)
        self.text.setMinimumHeight(lines if compact else self._lines_height(1))
        if compact and self._reasoning is not None:
            self._reasoning.hide()
        self.text.last_text_line = compact
        self.text.scroll_to_end()

    def _lines_height(self, n: int) -> int:
        margin = 2 * self.text.document().documentMargin()  # above and below the text
        return int(
            self.text.fontMetrics().lineSpacing() * n + 2 * self.text.frameWidth() + margin + 4
        )

    def tight_height(self) -> int:
        """Height of a tight pane: one header row (state and figures in it) and one line."""
        return self.compact_height(1) - self._stats_height() - self._box.spacing()

    def _stats_height(self) -> int:
        return max(self.state.sizeHint().height(), self.stats.sizeHint().height())

    def tight_min_width(self, figures: bool = True) -> int:
        """Pixels a tight header row needs: the whole label and the state beside it, and
        with ``figures`` room for the shortest wording of them ("TTFT 0.05 s"); without,
        the figures drop out of the row (their tooltip keeps them), which lets two panes
        sit side by side where one with figures would leave the other out of sight."""
        spacing = self._head.spacing()
        if figures:
            room = self.stats.fontMetrics().horizontalAdvance(FIGURES_ROOM)
        else:
            room = self.stats.minimumWidth()  # 1 px: they drop when the row is narrow
        # the state and the figures each add a widget, and a gap, to the row
        return self.header_min_width() + self.state.sizeHint().width() + room + 2 * spacing

    def compact_height(self, lines: int = 2) -> int:
        """Height of a compact pane: header, state row, ``lines`` lines of text (2, or 1
        with ``one_line``) and its error."""
        return self._compact_base(lines) + self._error_px()

    def _compact_base(self, lines: int = 2) -> int:
        """:meth:`compact_height` without the error message."""
        lay = self._box
        m = lay.contentsMargins()
        head = max(self.badge.height(), self.title.sizeHint().height())
        stats = max(self.state.sizeHint().height(), self.stats.sizeHint().height())
        # the text and its spacing; nothing for a failed pane with no text (view hidden)
        text = 0 if self.no_text else self._lines_height(lines) + lay.spacing()
        return m.top() + m.bottom() + head + stats + text + lay.spacing() + 2

    def _error_px(self) -> int:
        """Pixels the error message takes, with its spacing (0 when there is none): a
        failure's message wraps and is never cut mid-line (:meth:`fit_error`)."""
        if self.error.isHidden():
            return 0
        m = self._box.contentsMargins()
        width = max(self.width() - m.left() - m.right(), 50)
        return self.error.heightForWidth(width) + self._box.spacing()

    def fit_error(self, height: int | None) -> None:
        """The pane gets at most ``height`` pixels (a row of the grid's view; None: as
        many as it needs): its error message shows the lines that fit beside a compact
        pane's header, figures and two lines, its last line ending in "…" and the whole
        message on hover, rather than a pane taller than the view, cut at the bottom."""
        if height is None:
            self.error.set_max_lines(None)
            return
        base = self._compact_base() + self._box.spacing()
        pitch = max(1, self.error.fontMetrics().lineSpacing())
        self.error.set_max_lines(max(1, (height - base) // pitch))

    # -- binding --------------------------------------------------------------------------------
    def set_run(self, run: RunState) -> None:
        """Follow ``run``'s clock: while the request waits or stalls, the state line names
        the cause and counts the seconds (:func:`splitdesk.core.analyse.diagnosis.waiting_state`)."""
        self.run = run
        self._clock.start()

    def set_error_in_banner(self, shown: bool) -> None:
        """The summary shows this pane's failure once for every request: keep a short mark
        here instead of the same message N times."""
        self.error_in_banner = shown
        f = request_figures(self.trace) if self.trace is not None else None
        if f is not None and f.error is not None:
            before = self._need()
            self.error.setText(self._error_text(f.error.message))
            self.error.show()
            if self._need() != before:
                self.needChanged.emit()

    def _error_text(self, message: str) -> str:
        return (
            "✕ failed — the cause is shown once, in the summary"
            if self.error_in_banner
            else f"✕ {message}"
        )

    def _tick(self) -> None:
        trace, run = self.trace, self.run
        if trace is None or run is None or run.ended is not None or trace.finished:
            if (run is not None and run.ended is not None) or self._waits_no_more():
                self._clock.stop()  # its requests ended: none of them waits any more
            return
        if self.visibleRegion().isEmpty():  # out of sight: caught up when painted again
            self._stale = True
            return
        # in the views' next frame (:meth:`refresh`), painted with them in one pass
        self._tick_due = True
        self.throttle.request()

    def _waits_no_more(self) -> bool:
        """Whether every request this pane shows has ended (its clock can stop)."""
        return self.trace is not None and self.trace.finished

    def waiting_label(self) -> str | None:
        """What the request waits for and for how long, or ``None`` when it is not waiting."""
        trace, run = self.trace, self.run
        if trace is None or run is None or run.ended is not None:
            return None
        now = run.now()
        w = waiting_state(trace, run.requests, now) if now is not None else None
        return w.label if w is not None else None

    def pane_state(self) -> str:
        """The state the header shows (:func:`~splitdesk.core.analyse.metrics.request_figures`'s
        ``state`` of the pane's request)."""
        trace = self.trace
        return request_figures(trace).state if trace is not None else "planned"

    def _update_state_label(self) -> None:
        state = self.pane_state()
        color = {
            "done": self.theme.good,
            "failed": self.theme.error,
            "stopped": self.theme.muted,
            "streaming": self.color,
        }.get(state, self.theme.muted)
        words = STATE_LABELS.get(state, state)
        if state in ("waiting", "retrying", "streaming"):
            words = self.waiting_label() or words
        label = f"<span style='color:{color}'>● {words}</span>"
        if label != self._header:  # setText re-lays out the row: only when it changed
            self._header = label
            self.state.setText(label)

    def bind(self, trace: RequestTrace) -> None:
        """Show ``trace`` (the pane reads it on every refresh)."""
        self.trace = trace
        self.throttle.request()

    def changed(self, final: bool = False) -> None:
        """The trace changed: repaint within a frame (at once when ``final``). A pane out
        of sight does nothing but note it (no timer, no refresh: a grid of 64 panes shows
        a dozen); it catches up when it is painted again (:meth:`paintEvent`)."""
        if not final and self.visibleRegion().isEmpty():
            self._stale = True
            return
        self.throttle.request()
        if final:
            self.throttle.flush()

    def _show_reasoning(self, shown: bool) -> None:
        self.reasoning.setVisible(shown)
        self._update_reasoning_toggle()

    def _update_reasoning_toggle(self) -> None:
        trace = self.trace
        n = sum(len(p) for p in trace.reasoning_parts) if trace else 0
        arrow = "▾" if self.reasoning_toggle.isChecked() else "▸"
        self.reasoning_toggle.setText(f"{arrow} reasoning · {n} characters")

    # -- painting --------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Paint what changed since the last refresh (later, when the pane is scrolled out
        of sight: a grid of 64 panes shows a dozen)."""
        trace = self.trace
        if trace is None:
            return
        if self.visibleRegion().isEmpty() and not trace.finished:
            self._stale = True
            return
        self._stale = False
        if len(trace.reasoning_parts) > self._reasoning_parts:
            new = "".join(trace.reasoning_parts[self._reasoning_parts :])
            self._reasoning_parts = len(trace.reasoning_parts)
            if self.reasoning_toggle.isHidden():
                self.reasoning_toggle.show()
                self.reasoning.setVisible(self.reasoning_toggle.isChecked())
            self.reasoning.append_text(new)
            self._update_reasoning_toggle()
        if len(trace.text_parts) > self._parts:
            new = "".join(trace.text_parts[self._parts :])
            self._parts = len(trace.text_parts)
            self.append_answer(new)
        if not self._header_if_due() and self._tick_due:
            # figures held back by HEADER_MS catch up where seen; "waiting 1.8 s" counts on
            self._update_state_label()
        self._tick_due = False

    def _header_if_due(self) -> bool:
        """Rewrite the header now if its state changed or its figures are
        :data:`HEADER_MS` old; whether it did."""
        trace = self.trace
        state = request_figures(trace).state if trace is not None else "planned"
        if state != self._header_state or time.monotonic() - self._header_t >= HEADER_MS / 1000:
            self._update_header()
            return True
        return False

    def append_answer(self, text: str) -> None:
        """Add answer text (subclasses decorate it)."""
        self.text.append_text(text)

    def paintEvent(self, event: QPaintEvent) -> None:
        """A rounded card: panel background, a soft border and a top bar in the lane colour."""
        if self._stale:  # scrolled into sight: catch up
            self.throttle.request()
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = QRectF(self.rect()).adjusted(1, 1, -1, -1)
        p.setPen(QPen(self._soft, 2))
        p.setBrush(self._panel)
        p.drawRoundedRect(r, 10, 10)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(self._qcolor)
        top = QPainterPath()
        top.addRoundedRect(r.adjusted(0, 0, 0, -(r.height() - 10)), 10, 10)
        clip = QPainterPath()
        clip.addRect(r.adjusted(0, 0, 0, -(r.height() - 5)))
        p.drawPath(top.intersected(clip))
        p.end()

    def stats_variants(self) -> list[str]:
        """The header figures, longest wording first: TTFT, output tokens, decode rate,
        E2E ("end"), retries; narrower wordings drop the token count, then the rate.
        A retried request shows its attempt's TTFT and the wait since its first send.
        Every figure is :func:`splitdesk.core.analyse.metrics.request_figures`' (O(1), cached)."""
        trace = self.trace
        assert trace is not None and trace.t_send is not None
        return header_variants(request_figures(trace))

    def _need(self) -> tuple[bool, str, bool]:
        """What the pane's height depends on beyond its mode: the message and the view."""
        return self.error.isHidden(), self.error.full_text(), self.no_text

    def _update_header(self) -> None:
        before = self._need()
        self._write_header()
        if self._need() != before:
            self.needChanged.emit()

    def _write_header(self) -> None:
        trace = self.trace
        f = request_figures(trace) if trace is not None else None
        state = self.pane_state()
        self._header_state, self._header_t = state, time.monotonic()
        self._update_state_label()
        if f is None or f.t_send is None:
            self.stats.setText("not sent yet")
            return
        self.stats.set_variants(self.stats_variants())
        if f.error is not None and self.error.isHidden():
            self.error.setText(self._error_text(f.error.message))
            self.error.show()
        elif f.backoffs and state == "retrying":
            b = f.backoffs[-1]
            self.error.setText(f"⟳ {b.message} — retrying in {b.delay_s:g} s")
            self.error.show()
        elif state == "streaming" and f.error is None:
            self.error.hide()
        self._fit_text_view(f.error is not None and self.text.document().isEmpty())

    def _fit_text_view(self, none: bool) -> None:
        """A failed pane with no text hides its empty text view: its message is all it
        has to show (the view's lines had stayed empty under it, a scroll bar's stub in
        them where the view was squeezed); shown again when text comes."""
        if none == self.no_text:
            return
        self.no_text = none
        self.text.setVisible(not none)


class CombinedPane(RequestPane):
    """The combined request: each answer's marker is painted as a heading in that
    question's colour as soon as the section parser finds it."""

    def __init__(
        self, n_questions: int, theme: Theme, scale: float = 1.0, parent: QWidget | None = None
    ) -> None:
        super().__init__(
            "ALL",
            f"{n_questions} questions in one prompt",
            theme.combined,
            theme,
            scale,
            parent,
        )
        self.scale = scale
        n = n_questions  # a narrow column shortens the title before cutting it
        self.title.set_variants([f"{n} questions in one prompt", f"{n} questions", f"{n} in 1"])
        self._headed: set[int] = set()
        self._utf16 = 0  # document length in UTF-16 units
        self._text_len = 0  # the same text's length in code points
        self._prefix = ""  # text so far, kept only to convert offsets when needed

    def append_answer(self, text: str) -> None:
        super().append_answer(text)
        if len(self._prefix) < PANE_TEXT_LIMIT:  # only the text laid out maps to the document
            self._prefix += text[: PANE_TEXT_LIMIT - len(self._prefix)]
        self._paint_headings()

    def _to_doc(self, offset: int) -> int:
        return utf16_len(self._prefix[:offset])

    def _paint_headings(self) -> None:
        trace = self.trace
        if trace is None:
            return
        for q, span in trace.sections.items():
            if q in self._headed or span.body_offset > len(self._prefix):
                continue
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(self.theme.lane_text(q)))
            fmt.setFontWeight(QFont.Weight.Bold)
            fmt.setFontPointSize(self.text.font().pointSizeF() + 2)
            self.text.format_range(self._to_doc(span.offset), self._to_doc(span.body_offset), fmt)
            self._headed.add(q)


class SequentialPane(RequestPane):
    """The sequential baseline: N requests one after another, shown as one text with a
    coloured heading per question."""

    def __init__(
        self, questions: list[str], theme: Theme, scale: float = 1.0, parent: QWidget | None = None
    ) -> None:
        super().__init__(
            "SEQ",
            f"Sequential · {len(questions)} requests, one after another",
            theme.muted,
            theme,
            scale,
            parent,
        )
        self.questions = questions
        self.traces: list[RequestTrace] = []
        self._progress: dict[int, int] = {}

    def pane_state(self) -> str:
        """The baseline's state: the request under way's while it runs; once every request
        is over, "failed" when any failed, "stopped" when any was stopped, else "done"."""
        states = [request_figures(t).state for t in getattr(self, "traces", ())]
        if (
            states
            and len(states) == len(self.questions)
            and all(st in ("done", "failed", "stopped") for st in states)
        ):
            for worst in ("failed", "stopped"):
                if worst in states:
                    return worst
            return "done"
        return super().pane_state()

    def _waits_no_more(self) -> bool:
        return bool(self.traces) and all(t.finished for t in self.traces)

    def add(self, trace: RequestTrace) -> None:
        """Follow one more of the sequential requests."""
        self.traces.append(trace)
        self.trace = trace
        self.throttle.request()

    def refresh(self) -> None:
        for trace in self.traces:
            done = self._progress.get(trace.req)
            if done is None and trace.t_send is None:
                continue
            if done is None:
                q = trace.questions[0]
                fmt = QTextCharFormat()
                fmt.setForeground(QColor(self.theme.lane_text(q)))
                fmt.setFontWeight(QFont.Weight.Bold)
                lead = "\n\n" if self._progress else ""
                self.text.append_text(f"{lead}Q{q + 1} · {shorten(self.questions[q], 70)}\n", fmt)
                done = 0
            if len(trace.text_parts) > done:
                self.text.append_text("".join(trace.text_parts[done:]))
                done = len(trace.text_parts)
            self._progress[trace.req] = done
        current = [t for t in self.traces if t.t_send is not None]
        self.trace = current[-1] if current else (self.traces[0] if self.traces else None)
        self._update_header()

    def stats_variants(self) -> list[str]:
        """Figures of the whole baseline: requests done, the first request's TTFT, output
        tokens of all, and the end of the last answer since the first send (the group's
        figures, :func:`splitdesk.core.analyse.metrics.group_metrics`)."""
        g = group_metrics(self.traces, "sequential", len(self.questions))
        answered = g.finished - g.failed - g.stopped
        done = f"{answered}/{g.requests} answered"
        if g.failed or g.stopped:  # as the summary counts them: never "5/5" over failures
            done += "".join(
                f" · {n} {word}" for n, word in ((g.failed, "failed"), (g.stopped, "stopped")) if n
            )
        ttft = f"TTFT {g.first_ttft_s:.2f} s" if g.first_ttft_s is not None else "TTFT …"
        count = f"{'~' if g.tokens_estimated else ''}{g.output_tokens} tok"
        all_done = g.finished == g.requests
        end = f"end {g.makespan_s:.2f} s" if all_done and g.makespan_s is not None else ""
        return _variants([done, ttft, count, end], drop=(2, 0))
