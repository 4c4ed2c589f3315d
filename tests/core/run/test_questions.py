"""Question sets and the combined-prompt template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from splitdesk.core.files.question_sets import save_question_set
from splitdesk.core.run import questions as questions_module
from splitdesk.core.run.questions import (
    DEFAULT_SET,
    Question,
    QuestionFileError,
    QuestionSet,
    builtin_sets,
    dump_question_set,
    load_question_set,
    parse_question_set,
)
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.sim.prompts import read_prompt


def test_builtin_sets_are_there() -> None:
    sets = builtin_sets()
    assert {k: len(v.texts) for k, v in sets.items()} == {
        "document-five": 5,
        "everyday-five": 5,
        "three-short": 3,
        "eight-technical": 8,
    }


def test_toml_round_trip(tmp_path: Path) -> None:
    qs = QuestionSet(
        title="Mine",
        questions=[Question(text="Why?\nReally why?", title="W"), Question(text="How — 中文 🌍?")],
        template=CombinedTemplate(marker="### Q{k}"),
    )
    path = tmp_path / "mine.toml"
    save_question_set(qs, path)
    assert load_question_set(path) == qs
    assert dump_question_set(qs).startswith("# splitdesk question set")


def test_plain_text_one_per_line(tmp_path: Path) -> None:
    path = tmp_path / "my-questions.txt"
    path.write_text(
        "# comment\nWhy is the sky blue?\n\n  How do magnets work?  \n", encoding="utf-8"
    )
    qs = load_question_set(path)
    assert qs.texts == ["Why is the sky blue?", "How do magnets work?"]
    assert qs.title == "My questions"


def test_a_byte_order_mark_is_not_part_of_the_first_question(tmp_path: Path) -> None:
    path = tmp_path / "from-notepad.txt"
    path.write_bytes("\ufeffWhy is the sky blue?\r\nHow do magnets work?\r\n".encode())
    assert load_question_set(path).texts == ["Why is the sky blue?", "How do magnets work?"]


def test_bad_files_say_what_is_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[questions]]\ntext = 3\n", encoding="utf-8")
    with pytest.raises(QuestionFileError, match=r"bad.toml: question 1: `text` must be text"):
        load_question_set(bad)
    future = tmp_path / "future.toml"
    future.write_text('version = 9\n[[questions]]\ntext = "x"\n', encoding="utf-8")
    with pytest.raises(QuestionFileError, match="version 9"):
        load_question_set(future)
    with pytest.raises(QuestionFileError, match="cannot read"):
        load_question_set(tmp_path / "missing.toml")
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(QuestionFileError, match="cannot read"):
        load_question_set(binary)


def test_empty_rows_are_skipped() -> None:
    qs = parse_question_set('[[questions]]\ntext = "  "\n[[questions]]\ntext = "x"\n')
    assert qs.texts == ["x"]


def test_template_renders_numbered_list_the_simulator_reads() -> None:
    t = CombinedTemplate()
    prompt = t.render(["Why is the sky\nblue?", "What is 2+2?"])
    assert "1. Why is the sky blue?\n2. What is 2+2?" in prompt
    assert '"Answer k:"' in prompt
    reading = read_prompt(prompt)
    assert reading.questions == ["Why is the sky blue?", "What is 2+2?"]
    assert reading.marker == "Answer {k}:"
    custom = CombinedTemplate(text='Use "{marker}" headings.\n{questions}', marker="### Reply {k}")
    assert read_prompt(custom.render(["a", "b"])).marker == "### Reply {k}"


def test_template_validation() -> None:
    with pytest.raises(ValidationError, match="questions"):
        CombinedTemplate(text="no list here")
    with pytest.raises(ValidationError, match="k"):
        CombinedTemplate(marker="Answer:")


def test_the_builtin_sets_are_parsed_once_and_each_call_gets_its_own_dict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The window asks for the shipped sets ten times as it is built: they are read and
    parsed once, and a caller changing the dict it got changes no other caller's."""
    module = questions_module
    module._builtin_sets.cache_clear()
    parsed: list[str] = []
    real = module.parse_question_set

    def counting(text: str, *args: Any, **kwargs: Any) -> QuestionSet:
        parsed.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(module, "parse_question_set", counting)
    first = builtin_sets()
    n = len(parsed)
    assert n == len(first) >= 1 and DEFAULT_SET in first
    first.pop(DEFAULT_SET)
    again = builtin_sets()
    assert len(parsed) == n, "parsed again"
    assert DEFAULT_SET in again and again is not first
    module._builtin_sets.cache_clear()


def test_a_caller_changing_a_builtin_set_changes_no_other_callers() -> None:
    first = builtin_sets()[DEFAULT_SET]
    before = list(builtin_sets()[DEFAULT_SET].questions)
    first.questions.append(Question(text="a question added by one caller"))
    first.questions[0] = Question(text="and one replaced")
    assert builtin_sets()[DEFAULT_SET].questions == before
