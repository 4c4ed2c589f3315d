"""Wording for one run and one generated question: the repeats line says nothing about a
nonce when nothing is repeated, and the sweep table's counts agree in number."""

from __future__ import annotations

from typing import Any

from splitdesk.core.bench.repeats import RepeatOptions, repeats_line
from splitdesk.core.bench.sweep import format_sweep_table


def test_one_run_says_nothing_about_the_nonce() -> None:
    for nonce in (True, False):
        line = RepeatOptions(1, nonce=nonce).line()
        assert line == "repeats: 1 repeat"
    # a warm-up run before it, or a second repeat, is repeated: the nonce matters again
    assert "no nonce: repeated prompts" in repeats_line(1, 1, 0, False)
    assert "a per-run nonce opens every prompt" in repeats_line(2, 0, 0, True)


def _doc(repeat: int, generated: int) -> dict[str, Any]:
    ep = {"url": "builtin:batching", "api": "openai-chat", "model": "m"}
    return {
        "endpoint": ep,
        "max_n": 6,
        "repeat": repeat,
        "rows": [],
        "generated_questions": generated,
    }


def test_sweep_table_grammar_for_one() -> None:
    one = format_sweep_table(_doc(1, 1)).splitlines()
    assert one[0].endswith("· 1 repeat")
    assert "1 of the 6 questions was generated (the set was shorter)." in one
    two = format_sweep_table(_doc(3, 2)).splitlines()
    assert two[0].endswith("· 3 repeats (medians)")
    assert "2 of the 6 questions were generated (the set was shorter)." in two
