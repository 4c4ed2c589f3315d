"""The questions editor keeps each question's title (its short label) and names the set
that is actually on screen."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from splitdesk.core.run.questions import builtin_sets, load_question_set
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.inputs.questions_editor import QuestionsEditor

SET_TOML = """\
version = 1
title = "My talk"
[[questions]]
text = "Why is the sky blue during the day?"
title = "Sky"
[[questions]]
text = "What is the capital of Australia?"
"""


def test_titles_from_a_set_are_kept_and_become_the_labels(qtbot: Any, tmp_path: Path) -> None:
    path = tmp_path / "talk.toml"
    path.write_text(SET_TOML, encoding="utf-8")
    editor = QuestionsEditor(DARK)
    qtbot.addWidget(editor)
    editor.set_question_set(load_question_set(path))
    assert editor.labels() == ["Sky", "Capital of Australia"]
    saved = editor.question_set()
    assert [q.title for q in saved.questions] == ["Sky", ""]
    assert "label “Sky”" in editor.list.item(0).toolTip()
    # the picker names the loaded set, not the last built-in one
    assert editor.set_combo.currentText() == "My talk"


def test_reordering_keeps_titles_and_rewriting_a_question_drops_its_title(qtbot: Any) -> None:
    editor = QuestionsEditor(DARK)
    qtbot.addWidget(editor)
    five = builtin_sets()["everyday-five"]
    editor.set_question_set(five)
    assert editor.set_combo.currentText() == five.title
    assert editor.labels() == [q.title for q in five.questions]
    editor.list.setCurrentRow(0)
    editor.move_row(1)
    assert editor.labels()[:2] == [five.questions[1].title, five.questions[0].title]
    assert editor.set_combo.currentText() == f"{five.title} (edited)"
    editor.move_row(-1)  # back as shipped: the built-in name again, no extra entry
    assert editor.set_combo.currentText() == five.title
    assert editor.set_combo.findData(None) == -1
    editor.list.item(0).setText("What is the capital of Australia?")
    assert editor.labels()[0] == "Capital of Australia"
    assert editor.question_set().questions[0].title == ""


def test_choosing_another_built_in_set_shows_its_name(qtbot: Any) -> None:
    editor = QuestionsEditor(DARK)
    qtbot.addWidget(editor)
    index = editor.set_combo.findData("three-short")
    editor.set_combo.setCurrentIndex(index)
    editor.set_combo.activated.emit(index)
    assert editor.set_combo.currentText() == builtin_sets()["three-short"].title
    assert editor.labels() == ["Capital", "Spider", "Novel"]


@pytest.mark.asyncio
async def test_saving_writes_the_titles(qtbot: Any, tmp_path: Path) -> None:
    editor = QuestionsEditor(DARK)
    qtbot.addWidget(editor)
    path = tmp_path / "out.toml"
    assert await editor.save(path)
    await asyncio.sleep(0)
    again = load_question_set(path)
    assert [q.title for q in again.questions] == [
        q.title for q in builtin_sets()["everyday-five"].questions
    ]
