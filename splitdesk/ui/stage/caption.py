"""The caption bar over the stage while presenting: which scenario (``3 / 7 · Rate limit
of 2``), its caption big, the measured line once the run or replay has finished, and the
keys that work now. Part of the stage, so an exported clip carries it too."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from splitdesk.core.analyse.plain import VerdictKind
from splitdesk.ui.common.theme import Theme, ui_font
from splitdesk.ui.common.wrap import WidowlessLabel


class CaptionBar(QFrame):
    """The caption area: which scenario (``3 / 7 · Rate limit of 2``), its caption big,
    the measured diagnosis line after the run, and the keys."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("captionBar")
        self.where = QLabel("")
        self.where.setObjectName("captionWhere")
        self.caption = WidowlessLabel()
        self.caption.setObjectName("caption")
        self.caption.setTextFormat(Qt.TextFormat.PlainText)
        self.measured = WidowlessLabel()  # "11.8" and "s" on one line (ui/common/wrap.py)
        self.measured.setObjectName("measured")
        self.measured.setTextFormat(Qt.TextFormat.PlainText)
        #: the measured line's verdict: only a win is drawn in the "good" colour
        self.measured_kind: VerdictKind = "no-verdict"
        self._measured_hidden = False
        self._theme: Theme | None = None
        self.keys = QLabel("Space run · R replay · T chart · ←/→ scenario · +/− size · Esc leave")
        self.keys.setObjectName("captionKeys")
        self.keys.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Preferred)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.where, 1)
        top.addWidget(self.keys, 0, Qt.AlignmentFlag.AlignRight)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(24)
        row.addWidget(self.caption, 5)  # the caption's words take the width they need
        row.addWidget(self.measured, 2)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(16, 8, 16, 8)
        lay.setSpacing(4)
        lay.addLayout(top)
        lay.addLayout(row)

    def show_measured(
        self, text: str, kind: VerdictKind = "no-verdict", hidden: bool = False
    ) -> None:
        """The measured line (``""`` clears it), green only when ``kind`` is a win
        (``"sooner"``): "no speed-up" or a failure in the colour of a win would say the
        opposite of its words. ``hidden``: laid out but not drawn (a clip keeps the room
        its end will take from its first frame, so nothing moves when the verdict
        appears)."""
        self.measured.setText(text)
        if (kind, hidden) != (self.measured_kind, self._measured_hidden):
            self.measured_kind, self._measured_hidden = kind, hidden
            if self._theme is not None:
                font = self.measured.font()  # a style sheet re-resolves the font: keep it
                self.measured.setStyleSheet(f"color: {self._measured_color(self._theme)};")
                self.measured.setFont(font)

    def _measured_color(self, theme: Theme) -> str:
        if self._measured_hidden:
            return "transparent"
        return theme.good if self.measured_kind == "sooner" else theme.text

    def restyle(self, theme: Theme, scale: float) -> None:
        """Colours and type for ``theme`` at ``scale``."""
        self._theme = theme
        self.measured.setStyleSheet("")
        self.setStyleSheet(
            f"QFrame#captionBar {{ background: {theme.panel};"
            f" border-bottom: 2px solid {theme.accent}; }}"
            f"QLabel#caption {{ color: {theme.text}; }}"
            f"QLabel#measured {{ color: {self._measured_color(theme)}; }}"
            f"QLabel#captionWhere {{ color: {theme.accent}; }}"
            f"QLabel#captionKeys {{ color: {theme.muted}; }}"
        )
        # fonts after the style sheet: setting a style sheet re-resolves the children's fonts
        self.where.setFont(ui_font(scale, 0, bold=True))
        self.keys.setFont(ui_font(scale, -1.5))
        self.caption.setFont(ui_font(scale, 6, bold=True))
        self.measured.setFont(ui_font(scale, 1.5))
