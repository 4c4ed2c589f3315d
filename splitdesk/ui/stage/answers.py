"""Answers side by side: per question, its section of the combined reply next to its own
parallel request's answer, with their lengths in tokens (:mod:`splitdesk.core.analyse.answers`),
so a stakeholder can read whether splitting changed the answers.

On the built-in endpoint the text is synthetic (the same for a question both ways) and the
view says so: alike columns there say nothing about a model.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.answers import AnswerPair, answer_pairs, synthetic_text
from splitdesk.core.run.labels import question_label
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import Theme, ui_font

#: What the view says when the built-in endpoint wrote the answers.
SYNTHETIC_NOTE = (
    "The built-in endpoint writes synthetic text from a phrase list, the same for a question "
    "both ways: alike columns here say nothing about a model. Run the questions on a real "
    "model to read what splitting changes."
)


def tokens_text(tokens: float | None, estimated: bool) -> str:
    """``"~118 tokens"`` (``~``: an estimate), ``"no answer"`` for ``None``."""
    if tokens is None:
        return "no answer"
    return f"{'~' if estimated else ''}{round(tokens)} tokens"


class AnswersView(QWidget):
    """The answers of ``state``'s questions in two columns (module docstring); ``labels``:
    the questions' short labels (default: derived from the texts)."""

    def __init__(
        self,
        state: RunState,
        theme: Theme,
        scale: float = 1.0,
        labels: list[str] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.theme = theme
        self.pairs: list[AnswerPair] = answer_pairs(state)
        questions = list(state.info.questions) if state.info is not None else []
        if labels is None or len(labels) != len(questions):
            labels = [question_label(q) for q in questions]
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        #: Said when the answers are synthetic (the built-in endpoint), else hidden.
        self.note = QLabel(SYNTHETIC_NOTE)
        self.note.setWordWrap(True)
        self.note.setFont(ui_font(scale, 0))
        self.note.setStyleSheet(f"color: {theme.muted};")
        self.note.setVisible(synthetic_text(state))
        lay.addWidget(self.note)
        body = QWidget()
        grid = QGridLayout(body)
        grid.setHorizontalSpacing(int(16 * scale))
        grid.setVerticalSpacing(int(10 * scale))
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(2, 1)
        for col, text in enumerate(("", "IN THE COMBINED REPLY", "ITS OWN REQUEST")):
            head = QLabel(text)
            head.setObjectName("sectionTitle")
            head.setFont(ui_font(scale, 0, bold=True))
            grid.addWidget(head, 0, col)
        #: Per question: (its label, the combined answer, the parallel answer) and the two
        #: answers' lengths in tokens above them.
        self.rows: list[tuple[QLabel, QLabel, QLabel]] = []
        self.lengths: list[tuple[QLabel, QLabel]] = []
        for row, pair in enumerate(self.pairs, start=1):
            k = pair.question
            name = QLabel(f"Q{k + 1} {labels[k] if k < len(labels) else ''}".strip())
            name.setFont(ui_font(scale, 0, bold=True))
            name.setStyleSheet(f"color: {theme.lane_text(k)};")
            name.setWordWrap(True)
            name.setToolTip(questions[k] if k < len(questions) else "")
            cells, lengths = [], []
            sides: tuple[tuple[str | None, float | None, bool], ...] = (
                (pair.combined_text, pair.combined_tokens, True),
                (pair.parallel_text, pair.parallel_tokens, pair.parallel_estimated),
            )
            for col, (answer, tokens, estimated) in enumerate(sides, start=1):
                length = QLabel(tokens_text(tokens, estimated))
                length.setFont(ui_font(scale, -1, bold=True))
                length.setStyleSheet(f"color: {theme.muted};")
                cell = QLabel(answer or "")
                cell.setWordWrap(True)
                cell.setTextFormat(Qt.TextFormat.PlainText)
                cell.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                cell.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
                cell.setFont(ui_font(scale, 0))
                box = QVBoxLayout()
                box.setSpacing(2)
                box.addWidget(length)
                box.addWidget(cell, 1)
                grid.addLayout(box, row, col)
                cells.append(cell)
                lengths.append(length)
            grid.addWidget(name, row, 0, Qt.AlignmentFlag.AlignTop)
            self.rows.append((name, cells[0], cells[1]))
            self.lengths.append((lengths[0], lengths[1]))
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)
        lay.addWidget(scroll, 1)


class AnswersDialog(QDialog):
    """A non-modal window holding an :class:`AnswersView` of ``state``."""

    def __init__(
        self,
        state: RunState,
        theme: Theme,
        scale: float = 1.0,
        labels: list[str] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Answers side by side — splitdesk")
        self.setModal(False)
        self.view = AnswersView(state, theme, scale, labels, self)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        lay = QVBoxLayout(self)
        lay.addWidget(self.view, 1)
        lay.addWidget(buttons)
        if parent is not None:
            self.resize(int(parent.width() * 0.85), int(parent.height() * 0.85))
