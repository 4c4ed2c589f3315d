"""A TOML file nested deeper than Python's parser follows — ``x = [[[[…`` 5000 deep, or a
deep inline table inside an otherwise valid set or scenario — is one line and exit 2 from
every command that reads question sets or scenarios, as a deeply nested JSON recording
already was. Before, ``tomllib`` raised ``RecursionError`` out of core/run/questions.py and
core/files/scenarios.py as a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from splitdesk.core.files.scenarios import ScenarioError, parse_scenario
from splitdesk.core.run.questions import QuestionFileError, parse_question_set

DEEP = "TOML nested too deeply"
VALID_SET = 'version = 1\n[[questions]]\ntext = "Why is the sky blue?"\n'

SHAPES = {
    "arrays": "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "inline-table-in-a-set": VALID_SET + "extra = " + "{a=" * 990 + "1" + "}" * 990 + "\n",
    "array-in-a-table": VALID_SET + "[endpoint]\nx = " + "[" * 600 + "]" * 600 + "\n",
}


def splitdesk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "splitdesk", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )


SET, SCENARIO = "{n}: not a question set: ", "{n}: not a scenario: "
COMMANDS = {
    "bench --questions": (["bench", "--questions", "{f}"], "splitdesk bench: error: " + SET),
    "sweep --questions": (
        ["sweep", "--max-n", "2", "--questions", "{f}"],
        "splitdesk sweep: error: " + SET,
    ),
    "window --questions": (
        ["--run", "--quit", "--questions", "{f}"],
        "splitdesk: error: --questions: " + SET,
    ),
    "window --scenario": (
        ["--run", "--quit", "--scenario", "{f}"],
        "splitdesk: error: --scenario: " + SCENARIO,
    ),
    "scenarios --check": (
        ["scenarios", "--check", "{f}"],
        "splitdesk scenarios: error: " + SCENARIO,
    ),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("command", COMMANDS)
def test_deeply_nested_toml_is_one_line_and_exit_2(
    tmp_path: Path, command: str, shape: str
) -> None:
    path = tmp_path / f"{shape}.toml"
    path.write_text(SHAPES[shape], encoding="utf-8")
    args, start = COMMANDS[command]
    proc = splitdesk(*(a.replace("{f}", str(path)) for a in args))
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(start.replace("{n}", path.name)) and DEEP in lines[0], lines[0]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_parsers_refuse_it_in_words(shape: str) -> None:
    with pytest.raises(QuestionFileError, match=f"^not a question set: {DEEP}"):
        parse_question_set(SHAPES[shape], toml=True)
    with pytest.raises(ScenarioError, match=f"^not a scenario: {DEEP}"):
        parse_scenario(SHAPES[shape], "deep")


def test_a_nested_value_a_parser_can_follow_is_still_named_as_the_wrong_field() -> None:
    text = VALID_SET + "extra = " + "{a=" * 50 + "1" + "}" * 50 + "\n"
    with pytest.raises(QuestionFileError, match="question 1: `extra` is not a field"):
        parse_question_set(text, toml=True)
