"""The incremental answer-section parser: every marker style, and any chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from splitdesk.core.sections import SectionEnd, SectionParser, SectionStart, marker_words


def parse(
    text: str, n: int, chunks: list[int] | None = None, marker: str = "Answer {k}:"
) -> SectionParser:
    """Feed ``text`` cut at ``chunks`` (sizes; default: one char at a time), t = chunk index."""
    p = SectionParser(n, marker)
    sizes = chunks or [1] * len(text)
    pos, t = 0, 0
    for size in sizes:
        p.feed(text[pos : pos + size], float(t))
        pos += size
        t += 1
    if pos < len(text):
        p.feed(text[pos:], float(t))
        t += 1
    p.finish(float(t))
    return p


def bodies(p: SectionParser, text: str) -> dict[int, str]:
    return {q: text[s.body_offset : s.end_offset].strip() for q, s in sorted(p.sections.items())}


@pytest.mark.parametrize(
    "text",
    [
        "Answer 1: red\n\nAnswer 2: green\n\nAnswer 3: blue",
        "Answer 1:\nred\nAnswer 2:\ngreen\nAnswer 3:\nblue",
        "**Answer 1:** red\n**Answer 2:** green\n**Answer 3:** blue",
        "### Answer 1\nred\n\n### Answer 2\ngreen\n\n### Answer 3\nblue",
        "## Answer 1:\nred\n## Answer 2:\ngreen\n## Answer 3:\nblue",
        "answer 1 - red\nANSWER 2 - green\nAnswer 3 - blue",
        "Q1: red\nQ2: green\nQ3: blue",
        "Question 1: red\nQuestion 2: green\nQuestion 3: blue",
        "1. red\n\n2. green\n\n3. blue",
        "1) red\n\n2) green\n\n3) blue",
        "**1.** red\n**2.** green\n**3.** blue",
        "Sure! Here are the answers.\n\nAnswer 1: red\n\nAnswer 2: green\n\nAnswer 3: blue",
    ],
    ids=lambda t: t.split("\n")[0][:24],
)
def test_marker_styles(text: str) -> None:
    p = parse(text, 3)
    assert bodies(p, text) == {0: "red", 1: "green", 2: "blue"}


def test_template_marker_word_is_used() -> None:
    text = "Reply 1 => red\nReply 2 => green"
    assert bodies(parse(text, 2, marker="Reply {k} =>"), text) == {0: "red", 1: "green"}
    assert marker_words("### Reply {k}:")[0] == "reply"


def test_stray_numbers_inside_text_are_not_sections() -> None:
    text = (
        "Answer 1: There are 2. kinds of cells and 3) more.\nAnswer 12 is not a question here.\n"
        "Answer 2: 1. first step\n2. second step\n3. third step\n"
    )
    p = parse(text, 3)
    assert sorted(p.sections) == [0, 1]
    assert "second step" in bodies(p, text)[1]


def test_inner_numbered_list_does_not_split_answers_after_strong_markers() -> None:
    text = "Answer 1:\n1. a\n\n2. b\n\nAnswer 2:\n1. c\n\n2. d"
    p = parse(text, 2)
    assert bodies(p, text) == {0: "1. a\n\n2. b", 1: "1. c\n\n2. d"}


def test_missing_and_out_of_order_answers_are_reported_as_found() -> None:
    text = "Answer 3: c\nAnswer 1: a\nAnswer 3: again\nAnswer 7: out of range"
    p = parse(text, 4)
    assert sorted(p.sections) == [0, 2]  # never invents 2 or 4; ignores the repeat and 7
    assert bodies(p, text)[2] == "c"
    assert "again" in bodies(p, text)[0]


def test_weak_markers_need_the_next_number_and_a_paragraph_start() -> None:
    text = "1. a\nsome text 2. not a marker\n3. skipped (2 never came)\n\n2. b"
    p = parse(text, 3)
    assert sorted(p.sections) == [0, 1]


def test_times_start_at_the_completing_chunk_and_end_at_last_text() -> None:
    p = SectionParser(2)
    events = []
    events += p.feed("Ans", 1.0)
    events += p.feed("wer 1", 2.0)  # "Answer 1" could still be "Answer 12"
    assert events == []
    events += p.feed(": hi", 3.0)
    assert events == [SectionStart(0, 3.0, 0, 10)]
    events += p.feed(" there", 4.0)
    events += p.feed("\n\n", 5.0)
    events += p.feed("Answer 2:", 6.0)
    assert events[-2:] == [SectionEnd(0, 4.0, 20), SectionStart(1, 6.0, 20, 29)]
    events += p.feed(" yo", 7.0)
    events += p.finish(9.0)
    assert events[-1] == SectionEnd(1, 7.0, 32)


def test_a_decimal_split_after_its_point_is_not_a_weak_marker() -> None:
    # "1." then "5 litres": found by hypothesis; a chunk ending in "1." must wait
    assert parse("1.5 litres of water", 3, [2, 17]).sections == {}
    assert parse("1.5 litres of water", 3).sections == {}  # one character at a time
    assert list(parse("1. Water", 3, [2, 6]).sections) == [0]


def test_marker_at_the_very_end_of_the_stream() -> None:
    p = SectionParser(2)
    p.feed("Answer 1: a\nAnswer 2", 1.0)
    p.finish(2.0)
    assert sorted(p.sections) == [0, 1]


# -- properties ---------------------------------------------------------------------------------

STYLES = ["Answer {k}:", "**Answer {k}:**", "### Answer {k}", "{k}.", "Q{k}:"]
WORDS = st.text(alphabet="abc xyz.,!?2345()*#-\u00e9\u4e2d", min_size=1, max_size=40)


@st.composite
def combined_replies(draw: st.DrawFn) -> tuple[str, int, list[int]]:
    n = draw(st.integers(1, 6))
    style = draw(st.sampled_from(STYLES))
    preamble = draw(st.sampled_from(["", "Sure, here you go.\n\n"]))
    text = preamble
    starts = []
    for k in range(1, n + 1):
        body = draw(WORDS).replace("\n", " ")
        if k > 1:
            text += "\n\n"
        starts.append(len(text))
        text += style.replace("{k}", str(k)) + " " + ("x" + body if style == "{k}." else body)
    return text, n, starts


@settings(max_examples=300, deadline=None)
@given(reply=combined_replies(), data=st.data())
def test_any_chunking_finds_the_same_sections(
    reply: tuple[str, int, list[int]], data: st.DataObject
) -> None:
    text, n, starts = reply
    sizes = data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=len(text)))
    one_by_one = parse(text, n)
    chunked = parse(text, n, sizes)
    assert sorted(chunked.sections) == list(range(n))
    assert [chunked.sections[q].start_offset for q in range(n)] == starts
    for q in range(n):
        a, b = one_by_one.sections[q], chunked.sections[q]
        assert (a.start_offset, a.body_offset, a.end_offset) == (
            b.start_offset,
            b.body_offset,
            b.end_offset,
        )
        assert b.end_t is not None and b.end_t >= b.start_t
    starts_t = [chunked.sections[q].start_t for q in range(n)]
    assert starts_t == sorted(starts_t)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="Answer 0123456789:.)*#\n qQ-", max_size=120), data=st.data())
def test_never_invents_sections_and_ignores_chunking(text: str, data: st.DataObject) -> None:
    sizes = data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=max(1, len(text))))
    a = parse(text, 5)
    b = parse(text, 5, sizes)
    assert {q: s.start_offset for q, s in a.sections.items()} == {
        q: s.start_offset for q, s in b.sections.items()
    }
    for s in b.sections.values():
        assert 0 <= s.question < 5
        assert s.start_offset == 0 or text[s.start_offset - 1] == "\n"
        assert str(s.question + 1) in text[s.start_offset : s.body_offset]
