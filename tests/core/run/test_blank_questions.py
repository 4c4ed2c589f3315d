"""A blank question — empty, spaces, or only characters that show nothing (zero-width
space, byte-order mark) — is never asked: ``-q`` refuses it in one line (exit 2), files
skip it like an empty line (core/questions.py's one rule, ``question_text``)."""

from __future__ import annotations

import pytest

from splitdesk.cli.main import main
from splitdesk.core.run.questions import parse_question_set, question_text

BLANKS = ["", "   ", "\t\n", "\u200b", "\ufeff \u200b", "\u3000", "\u2060\u00a0"]


@pytest.mark.parametrize("blank", BLANKS, ids=[ascii(b) for b in BLANKS])
def test_a_blank_question_is_refused_by_bench_in_one_line(
    blank: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "-q", "What is 2+2?", "-q", blank, "--json", "-"]) == 2
    out, err = capsys.readouterr()
    shown = f" ({blank!a} shows nothing)" if blank.strip() else ""
    assert out == ""
    assert err == f"splitdesk bench: error: -q/--question needs a non-empty question{shown}\n"


def test_files_skip_blank_questions_as_they_skip_empty_lines() -> None:
    plain = "Why is the sky blue?\n\u200b\n \ufeff \nName a colour.\n"
    assert parse_question_set(plain).texts == ["Why is the sky blue?", "Name a colour."]
    toml = 'version = 1\n[[questions]]\ntext = "\\u200b"\n[[questions]]\ntext = " Sky? "\n'
    assert parse_question_set(toml).texts == ["Sky?"]


def test_visible_text_is_kept_whole() -> None:
    assert question_text("  \u200bWhy?\u200b ") == "\u200bWhy?\u200b"
    assert question_text(" 2+2 ") == "2+2"
    assert question_text("\u2014") == "\u2014"  # an em dash shows
