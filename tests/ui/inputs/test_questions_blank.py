"""The questions editor counts only questions a reader can see: a row holding only a
zero-width space is an empty row (flagged, not numbered, not asked), as in core/questions.py."""

from __future__ import annotations

from typing import Any

from splitdesk.core.run.questions import QuestionSet
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.inputs.questions_editor import QuestionsEditor


def test_an_invisible_row_is_not_a_question(qtbot: Any) -> None:
    editor = QuestionsEditor(DARK)
    qtbot.addWidget(editor)
    editor.set_question_set(QuestionSet(title="t"))
    editor.list.addItem("\u200b")
    editor.list.addItem("Why is the sky blue?")
    editor.list.addItem(" \ufeff ")
    assert editor.questions() == ["Why is the sky blue?"]
    assert len(editor.labels()) == 1
    assert editor.problem() == (
        "Add at least 2 questions to compare one combined request with parallel ones (1 now)."
    )
    assert [q.text for q in editor.question_set().questions if q.text] == ["Why is the sky blue?"]
