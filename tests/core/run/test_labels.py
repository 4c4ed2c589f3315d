"""Question labels: the set's title, else 1–3 words derived from the text."""

from __future__ import annotations

import pytest

from splitdesk.core.run.labels import MAX_LABEL_CHARS, derive_label, question_label
from splitdesk.core.run.questions import Question, builtin_sets


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Why is the sky blue during the day and red at sunset?", "Sky blue"),
        ("What is the capital of Australia?", "Capital of Australia"),
        (
            "How does a refrigerator keep food cold without making the kitchen colder?",
            "Refrigerator keep food",
        ),
        ("Why do we need sleep, and what happens in the brain while we sleep?", "Need sleep"),
        (
            "Explain how continuous batching in an LLM inference server schedules steps",
            "Continuous batching",
        ),
        ("Compare TCP congestion control algorithms CUBIC and BBR", "TCP congestion control"),
        ("What causes inflation, and why do central banks raise rates?", "Causes inflation"),
        ("  is   water\nwet?  ", "Water wet"),
        ("hello", "Hello"),
    ],
)
def test_a_label_is_the_first_words_that_name_the_question(text: str, label: str) -> None:
    assert derive_label(text) == label


def test_a_label_never_ends_on_a_small_word_and_stays_short() -> None:
    label = derive_label("Describe the internationalisation infrastructure of the applications")
    assert label == "Internationalisation"
    assert len(label) <= MAX_LABEL_CHARS
    for word in ("of", "the", "during", "and"):
        assert not derive_label(f"Why is blue {word} red?").lower().endswith(f" {word}")


def test_text_without_spaces_keeps_its_first_few_characters() -> None:
    text = "日本の首都はどこですか日本の首都はどこですか日本の首都はどこですか"
    label = derive_label(text)
    # 12 display columns (6 wide characters), its start, no "…" (a label is a name, whole)
    assert label == "日本の首都は" and text.startswith(label) and len(label) <= MAX_LABEL_CHARS


def test_empty_text_has_an_empty_label() -> None:
    assert derive_label("   ") == ""
    assert question_label("", "") == ""


def test_the_sets_title_wins_and_is_one_line() -> None:
    assert question_label("Why is the sky blue?", "Sky\n colour ") == "Sky colour"
    assert question_label("Why is the sky blue?", "  ") == "Sky blue"


def test_every_built_in_question_has_a_title_used_as_its_label() -> None:
    for qs in builtin_sets().values():
        for q in qs.questions:
            assert q.title and q.label == q.title
    assert Question(text="What is the capital of Australia?").label == "Capital of Australia"


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("为什么天空是蓝色的而不是其他颜色呢？", "天空是蓝色的"),
        ("疫苗是如何训练人体免疫系统的？", "疫苗是如何训"),
        ("冰箱，怎样保持低温？", "冰箱"),  # a full-width comma ends the clause
        ("什么是通货膨胀？", "通货膨胀"),
        ("なぜ空は青いのですか？", "空は青いので"),
    ],
)
def test_questions_without_spaces_get_a_few_characters(text: str, label: str) -> None:
    """Chinese and Japanese questions: no leading question word, about as wide on screen
    as three English words (12 display columns), cut at a full-width clause break."""
    assert question_label(text) == label
