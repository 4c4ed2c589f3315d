"""Metric definitions on hand-built event sequences (DESIGN.md "Metrics")."""

from __future__ import annotations

import pytest

from splitdesk.core.analyse.metrics import (
    group_metrics,
    request_figures,
    request_metrics,
    speedup,
    spread,
    summarize,
)
from splitdesk.core.run.events import (
    HeadersReceived,
    RequestEnded,
    RequestPlanned,
    RequestRetrying,
    RequestSent,
    RunStarted,
    SectionEnded,
    SectionStarted,
    TextReceived,
    ToolCallReceived,
    UsageReported,
    event_from_json,
    event_to_json,
)
from splitdesk.core.run.run_state import RunState
from splitdesk.providers.base import ErrorKind, RequestError


def state_with(*events: object) -> RunState:
    s = RunState()
    s.apply(
        RunStarted(
            0.0, "side-by-side", ("a", "b"), {"url": "u", "api": "openai-chat", "model": "m"}, 0
        )
    )
    s.apply(RequestPlanned(0.0, 0, "combined", (0, 1), "p"))
    s.apply(RequestPlanned(0.0, 1, "parallel", (0,), "a"))
    s.apply(RequestPlanned(0.0, 2, "parallel", (1,), "b"))
    for e in events:
        s.apply(e)  # type: ignore[arg-type]
    return s


def test_request_metrics_from_send() -> None:
    s = state_with(
        RequestSent(1.0, 1),
        HeadersReceived(1.1, 1, 200),
        TextReceived(1.5, 1, "Hel"),
        TextReceived(1.7, 1, "lo"),
        TextReceived(2.0, 1, "!"),
        UsageReported(2.05, 1, 6),
        RequestEnded(2.1, 1, "done", "stop"),
    )
    m = request_metrics(s.requests[1])
    assert m.ttfb_s == pytest.approx(0.1)
    assert m.ttft_s == pytest.approx(0.5)
    assert m.e2e_s == pytest.approx(1.0)
    assert m.stream_end_s == pytest.approx(1.1)
    assert m.itl_s == pytest.approx((0.2, 0.3))
    assert m.output_tokens == 6 and m.tokens_source == "usage"
    assert m.tpot_s == pytest.approx((1.0 - 0.5) / 5)


def test_reasoning_counts_for_ttft_but_not_for_answer_ttft() -> None:
    s = state_with(
        RequestSent(0.0, 1),
        TextReceived(0.2, 1, "thinking", reasoning=True),
        TextReceived(0.6, 1, "Answer"),
        RequestEnded(0.7, 1, "done"),
    )
    m = request_metrics(s.requests[1])
    assert m.ttft_s == pytest.approx(0.2)
    assert m.ttft_answer_s == pytest.approx(0.6)
    assert m.output_tokens == 2 and m.tokens_source == "events"


def test_tool_calls_have_their_own_time_and_no_ttft() -> None:
    s = state_with(
        RequestSent(0.0, 1),
        ToolCallReceived(0.3, 1, "read_file"),
        ToolCallReceived(0.4, 1, "", '{"p"'),
        UsageReported(0.5, 1, 21),
        RequestEnded(0.5, 1, "done", "tool_calls"),
    )
    m = request_metrics(s.requests[1])
    assert m.ttft_s is None
    assert m.first_tool_call_s == pytest.approx(0.3)
    assert m.e2e_s == pytest.approx(0.4)
    assert m.tpot_s is None


def test_failed_request_keeps_partial_text_and_timings() -> None:
    err = RequestError(ErrorKind.SERVER, "Overloaded")
    s = state_with(
        RequestSent(0.0, 1),
        TextReceived(0.3, 1, "Here is"),
        RequestEnded(0.4, 1, "failed", None, err),
    )
    r = s.requests[1]
    assert r.text == "Here is" and r.error == err and r.state == "failed"
    assert request_metrics(r).ttft_s == pytest.approx(0.3)


def test_group_makespan_speedup_and_answer_starts() -> None:
    s = state_with(
        RequestSent(0.0, 0),
        RequestSent(0.0, 1),
        RequestSent(0.01, 2),
        TextReceived(0.2, 0, "Answer 1: x"),
        SectionStarted(0.2, 0, 0, 0, 10),
        TextReceived(0.25, 1, "x"),
        TextReceived(0.3, 2, "y"),
        TextReceived(1.0, 1, "x"),
        TextReceived(1.2, 2, "y"),
        SectionEnded(2.0, 0, 0, 12),
        SectionStarted(2.5, 0, 1, 12, 22),
        TextReceived(2.5, 0, "Answer 2: y"),
        TextReceived(4.0, 0, " y"),
        SectionEnded(4.0, 0, 1, 24),
    )
    summary = summarize(s)
    c, p = summary.groups["combined"], summary.groups["parallel"]
    assert c.makespan_s == pytest.approx(4.0)
    assert p.makespan_s == pytest.approx(1.2)
    assert summary.speedup == pytest.approx(4.0 / 1.2)
    assert c.answer_start_s == {0: pytest.approx(0.2), 1: pytest.approx(2.5)}
    assert p.answer_start_s == {0: pytest.approx(0.25), 1: pytest.approx(0.3)}
    assert c.all_started_s == pytest.approx(2.5) and p.all_started_s == pytest.approx(0.3)
    sections = request_metrics(s.requests[0]).sections
    assert [(x.question, x.start_s, x.end_s) for x in sections] == [(0, 0.2, 2.0), (1, 2.5, 4.0)]


def test_speedup_unknown_without_both_sides() -> None:
    s = state_with(RequestSent(0.0, 1), TextReceived(0.5, 1, "x"))
    assert speedup(None, group_metrics(s.group("parallel"), "parallel", 2)) is None


def test_spread_over_repeats() -> None:
    sp = spread([3.0, None, 1.0, 2.0])
    assert sp is not None and (sp.median, sp.min, sp.max, sp.n) == (2.0, 1.0, 3.0, 3)
    assert spread([None]) is None


def test_events_round_trip_through_json() -> None:
    err = RequestError(ErrorKind.HTTP, "HTTP 429", 429, 2.0)
    for ev in (
        RunStarted(0.0, "parallel", ("a",), {"url": "u", "api": "x", "model": "m"}, 123),
        RequestPlanned(0.0, 0, "parallel", (0,), "a", 0, 64),
        TextReceived(0.5, 0, "hé"),
        RequestEnded(1.0, 0, "failed", None, err),
    ):
        assert event_from_json(event_to_json(ev)) == ev  # type: ignore[arg-type]


def test_retried_request_has_both_ttfts_and_its_backoff() -> None:
    refusal = RequestError(ErrorKind.HTTP, "HTTP 429", 429, 2.0)
    s = state_with(
        RequestSent(0.0, 1),
        HeadersReceived(0.05, 1, 429),
        RequestRetrying(0.06, 1, 1, 2.0, refusal),
    )
    f = request_figures(s.requests[1])
    assert f.state == "retrying" and f.retries == 1
    (b,) = f.backoffs
    assert (b.start, b.end, b.retry_after_s, b.label) == (0.06, None, 2.0, "Retry-After 2 s")
    s.apply(RequestSent(2.06, 1, 1))
    s.apply(TextReceived(2.3, 1, "Hi"))
    s.apply(TextReceived(2.5, 1, " there"))
    s.apply(RequestEnded(2.6, 1, "done", "stop"))
    f = request_figures(s.requests[1])
    assert f.attempts == 2 and f.backoffs[0].end == pytest.approx(2.06)
    assert f.ttft_s == pytest.approx(2.3)  # from the first send: what the user waited
    assert f.attempt_ttft_s == pytest.approx(0.24)  # from the answered attempt's send
    assert f.e2e_s == pytest.approx(2.5)
    # the makespan keeps the wait
    assert summarize(s).groups["parallel"].makespan_s == pytest.approx(2.5)


def test_figures_follow_the_events_and_are_cached_between_them() -> None:
    s = state_with(RequestSent(0.0, 1), TextReceived(0.2, 1, "a"))
    first = request_figures(s.requests[1])
    assert request_figures(s.requests[1]) is first  # no event since: the same object
    assert first.state == "streaming" and first.output_tokens == 1 and first.e2e_s == 0.2
    s.apply(TextReceived(0.4, 1, "b"))
    later = request_figures(s.requests[1])
    assert later is not first and later.output_tokens == 2 and later.e2e_s == 0.4
    assert summarize(s) is summarize(s)


def test_a_failed_request_without_usage_does_not_make_its_side_estimated() -> None:
    s = state_with(
        RequestSent(0.0, 1),
        RequestSent(0.0, 2),
        TextReceived(0.2, 1, "x"),
        UsageReported(0.3, 1, 9),
        RequestEnded(0.3, 1, "done"),
        RequestEnded(0.1, 2, "failed", None, RequestError(ErrorKind.HTTP, "HTTP 500", 500)),
    )
    g = summarize(s).groups["parallel"]
    assert not request_figures(s.requests[2]).tokens_estimated
    assert g.output_tokens == 9 and not g.tokens_estimated and g.estimated_note == ""
    s2 = state_with(
        RequestSent(0.0, 1),
        RequestSent(0.0, 2),
        TextReceived(0.2, 1, "x"),
        UsageReported(0.3, 1, 9),
        TextReceived(0.2, 2, "partial"),
        RequestEnded(0.3, 2, "failed", None, RequestError(ErrorKind.SERVER, "Overloaded")),
    )
    g2 = summarize(s2).groups["parallel"]
    assert g2.estimated_requests == (2,) and g2.estimated_note == "1 of 2 estimated"
