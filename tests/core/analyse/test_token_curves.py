"""The cumulative-tokens curve: one definition, summed over streams, ending at usage."""

from __future__ import annotations

from splitdesk.core.analyse.metrics import tokens_per_event
from splitdesk.core.analyse.token_curves import token_curve
from splitdesk.core.run.run_state import RequestTrace


def trace(req: int, sent: float, events: list[float], usage: int | None) -> RequestTrace:
    t = RequestTrace(req, "parallel", (req,), f"q{req}")
    t.t_send = sent
    t.event_times = events
    t.usage_output_tokens = usage
    return t


def test_streams_sum_in_time_order_from_the_first_send() -> None:
    a = trace(0, 1.0, [1.5, 2.0], usage=4)  # 2 tokens per event
    b = trace(1, 1.2, [1.8], usage=None)  # no usage yet: 1 per event
    assert tokens_per_event(a) == 2.0 and tokens_per_event(b) == 1.0
    curve = token_curve([a, b])
    assert [(round(t, 9), n) for t, n in curve] == [(0.0, 0.0), (0.5, 2.0), (0.8, 3.0), (1.0, 5.0)]


def test_nothing_sent_is_no_curve_and_unsent_requests_are_left_out() -> None:
    assert token_curve([]) == []
    unsent = RequestTrace(0, "parallel", (0,), "q")
    assert token_curve([unsent]) == []
    sent = trace(1, 2.0, [2.5], usage=3)
    assert token_curve([unsent, sent]) == [(0.0, 0.0), (0.5, 3.0)]
