"""Question files that are wrong say where and what, in words about questions: a TOML
syntax error names its line and column (never read as plain text), a wrong type or unknown
field names the question and the field, a newer version says so; ``splitdesk bench`` exits
2 for each, with that message on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from paths import ROOT
from splitdesk.cli.main import main
from splitdesk.core.run.questions import QuestionFileError, load_question_set, parse_question_set

BAD = {
    # an unclosed string on line 2: TOML, not two plain questions
    "unclosed.toml": (
        '[[questions]]\ntext = "Why is the sky blue?\n',
        "unclosed.toml: not valid TOML at line 2, column 29: illegal character",
    ),
    # a .txt file that is clearly a TOML question set, with a bare word as value
    "bare-word.txt": (
        "version = 1\n[[questions]]\ntext = Why\n",
        "bare-word.txt: not valid TOML at line 3, column 8: invalid value",
    ),
    "number.toml": (
        '[[questions]]\ntext = "a"\n[[questions]]\ntext = 42\n',
        "number.toml: question 2: `text` must be text in quotes, got 42",
    ),
    "typo.toml": (
        '[[questions]]\ntxt = "a"\n',
        "typo.toml: question 1: `txt` is not a field splitdesk knows "
        "(a question has `text` and an optional `title`)",
    ),
    "future.toml": (
        'version = 2\n[[questions]]\ntext = "a"\n',
        "future.toml: question-set format version 2 is newer than this splitdesk understands (1)",
    ),
    "version-text.toml": (
        'version = "1"\n[[questions]]\ntext = "a"\n',
        "version-text.toml: `version` must be a whole number (this splitdesk writes 1), got '1'",
    ),
    "marker.toml": (
        '[[questions]]\ntext = "a"\n[template]\nmarker = "Answer:"\n',
        "marker.toml: the template's `marker`: the marker must contain {k}",
    ),
    "no-questions.toml": (
        'title = "Mine"\n',
        "no-questions.toml: no questions: add one [[questions]] table per question, "
        'each with text = "…"',
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_file_says_where_and_what(tmp_path: Path, name: str) -> None:
    content, message = BAD[name]
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(QuestionFileError) as caught:
        load_question_set(path)
    text = str(caught.value)
    assert text.startswith(message), text
    for jargon in ("pydantic", "validation error", "Input should", "loc", "model_type"):
        assert jargon not in text


@pytest.mark.parametrize("name", sorted(BAD))
def test_bench_exits_2_with_the_message(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    content, message = BAD[name]
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    code = main(["bench", "--questions", str(path), "--mode", "parallel"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("splitdesk bench: error: " + message), err
    assert "Traceback" not in err


def test_plain_text_stays_plain_text_even_with_equals_signs(tmp_path: Path) -> None:
    path = tmp_path / "maths.txt"
    path.write_text("What is 2 + 2 = ?\nIs x = 3 a solution of x² = 9?\n", encoding="utf-8")
    assert load_question_set(path).texts == ["What is 2 + 2 = ?", "Is x = 3 a solution of x² = 9?"]


def test_the_readme_example_is_a_valid_question_set() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```toml\n# splitdesk question set") + len("```toml\n")
    example = readme[start : readme.index("```", start)]
    qs = parse_question_set(example)
    assert qs.title == "Everyday questions"
    assert qs.texts == ["Why is the sky blue?", "How do vaccines work?", "What is a black hole?"]
    assert [q.title for q in qs.questions] == ["Sky", "", ""]
    assert qs.template is not None and qs.template.marker == "Answer {k}:"
