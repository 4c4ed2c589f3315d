"""Each question's two answers (core/analyse/answers.py): the combined reply's section, cut
where the parser found the markers, and the parallel answer, with their lengths."""

from __future__ import annotations

import pytest

from splitdesk.core.analyse.answers import answer_pairs, synthetic_text
from splitdesk.core.run.events import (
    RequestEnded,
    RequestPlanned,
    RequestSent,
    RunEnded,
    RunStarted,
    SectionEnded,
    SectionStarted,
    TextReceived,
    UsageReported,
)
from splitdesk.core.run.run_state import RunState


def run(model: str = "gpt-x") -> RunState:
    state = RunState()
    events = [
        RunStarted(0.0, "side-by-side", ("q1", "q2", "q3"), {"url": "x", "model": model}, 0),
        RequestPlanned(0.0, 0, "combined", (0, 1, 2), "p"),
        RequestPlanned(0.0, 1, "parallel", (0,), "p"),
        RequestPlanned(0.0, 2, "parallel", (1,), "p"),
        RequestPlanned(0.0, 3, "parallel", (2,), "p"),
    ]
    events += [RequestSent(0.01, i) for i in range(4)]
    # combined: "Answer 1:\nred sky\nAnswer 2:\nwarm sea\n" in 6 events, no answer 3
    pieces = ["Answer 1:\n", "red ", "sky\n", "Answer 2:\n", "warm ", "sea\n"]
    for t, piece in zip((0.1, 0.2, 0.3, 0.4, 0.5, 0.6), pieces, strict=True):
        events.append(TextReceived(t, 0, piece))
    events += [
        SectionStarted(0.1, 0, 0, 0, 10),
        SectionEnded(0.3, 0, 0, 18),
        SectionStarted(0.4, 0, 1, 18, 28),
    ]
    events += [
        TextReceived(0.2, 1, "red sky"),
        TextReceived(0.2, 2, "warm "),
        TextReceived(0.3, 2, "sea"),
    ]
    events += [UsageReported(0.7, 0, 12), UsageReported(0.4, 1, 2), UsageReported(0.4, 2, 3)]
    events += [RequestEnded(0.8, i, "done") for i in range(4)]
    events.append(RunEnded(0.9))
    for ev in events:
        state.apply(ev)
    return state


def test_each_question_pairs_its_section_with_its_own_answer() -> None:
    pairs = answer_pairs(run())
    assert [p.question for p in pairs] == [0, 1, 2]
    first, second, third = pairs
    assert (first.combined_text, first.parallel_text) == ("red sky", "red sky")
    assert (second.combined_text, second.parallel_text) == ("warm sea", "warm sea")
    # the usage (12 tokens over 6 events) spread over the events inside each section's span
    assert first.combined_tokens == pytest.approx(3 * 2.0)  # events at 0.1, 0.2, 0.3
    assert second.combined_tokens == pytest.approx(3 * 2.0)  # 0.4 to the reply's end
    assert (first.parallel_tokens, second.parallel_tokens) == (2, 3)
    # no marker for answer 3, and its request answered nothing: both said as missing
    assert third.combined_text is None and third.combined_tokens is None
    assert third.parallel_text is None


def test_the_built_in_endpoints_text_is_named_synthetic() -> None:
    assert not synthetic_text(run("gpt-x"))
    assert synthetic_text(run("splitdesk-sim"))
