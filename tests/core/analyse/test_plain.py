"""The verdict once, in words and one number, and why in plain words (core/analyse/plain.py),
read from the diagnosis of synthetic traces of each kind of run."""

from __future__ import annotations

from dataclasses import replace

import pytest
from core.analyse.test_diagnosis import N, Req, batching, build

from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.analyse.metrics import summarize
from splitdesk.core.analyse.plain import (
    fair_mode_applies,
    headline_verdict,
    measured_line,
    plain_words,
)
from splitdesk.core.run.events import RunEnded


def words(reqs: list[Req], mode: str = "one-after-another") -> str:
    state = build(reqs, mode)
    return plain_words(state, summarize(state), diagnose_state(state))


def test_batching_says_tokens_in_a_row_against_the_longest_parallel_reply() -> None:
    reqs = batching()
    reqs[3] = replace(reqs[3], tokens=130)  # the longest of the parallel replies
    text = words(reqs)
    assert text == (
        "The model writes one token per request per step. One combined reply: 500 tokens in a "
        f"row. {N} parallel replies, written side by side: the longest 130."
    )


def test_each_other_kind_has_its_own_plain_sentence() -> None:
    one_at_a_time = [Req("combined", 0.0, first=0.01, tokens=500)] + [
        Req("parallel", 20.0, first=20.01 + 2.0 * i, tokens=100, phase=1) for i in range(N)
    ]
    assert "one request at a time" in words(one_at_a_time)
    assert "waited in line" in words(one_at_a_time)
    limited = [Req("combined", 0.0, first=0.01, tokens=500)]
    limited += [Req("parallel", 20.0, first=20.01, phase=1) for _ in range(2)]
    limited += [Req("parallel", 20.0, phase=1, status=429) for _ in range(3)]
    assert words(limited).startswith(f"The provider refused 3 of the {N} parallel requests")
    network = [Req("combined", 0.0, ttfb=1.2, first=1.21, tokens=200)] + [
        Req("parallel", 10.0, ttfb=1.2, first=11.21, tokens=40, phase=1) for _ in range(N)
    ]
    assert "trip over the network (1.20 s)" in words(network)
    assert "writing the answer (0.78 s)" in words(network)
    compute = batching(per_stream_step=0.08)
    assert "each was written about 4.0× slower" in words(compute)


@pytest.mark.parametrize(
    ("speedup", "text"),
    [
        (4.47, "Parallel finished 4.5× sooner"),
        (1.07, "no speed-up (1.07×)"),
        (0.7, "Combined finished 1.4× sooner"),
    ],
)
def test_the_verdict_is_said_once_in_words_and_one_number(speedup: float, text: str) -> None:
    d = diagnose_state(build(batching()))
    assert headline_verdict(speedup, d, shared=False).text == text


def test_side_by_side_on_a_server_that_does_not_batch_gives_no_verdict() -> None:
    d = diagnose_state(build(batching(per_stream_step=0.08)))
    v = headline_verdict(2.1, d, shared=True)
    assert v.kind == "no-verdict" and v.text == (
        "2.1× side by side, no verdict: both ways shared a compute-bound server"
    )


def test_the_fair_mode_offer_only_where_it_is_true() -> None:
    # one slot, side by side: the combined request got it first, the parallel ones queued
    compute = [Req("combined", 0.0, first=0.01, tokens=500)] + [
        Req("parallel", 0.0, first=10.01 + 2.0 * i, tokens=100) for i in range(N)
    ]
    shared = build(compute, mode="side-by-side")
    d = diagnose_state(shared)
    assert d.code == "one-at-a-time" and fair_mode_applies(shared, d)
    apart = build(compute, mode="one-after-another")  # already measured apart
    assert not fair_mode_applies(apart, diagnose_state(apart))
    stopped = build(compute, mode="side-by-side")
    stopped.ended = RunEnded(stopped.ended.t if stopped.ended else 0.0, stopped=True)
    assert not fair_mode_applies(stopped, d)  # nothing measured to compare
    failed = build([*compute[:-1], Req("parallel", 0.0, status=500)], mode="side-by-side")
    assert not fair_mode_applies(failed, diagnose_state(failed))
    network = [Req("combined", 0.0, ttfb=1.2, first=1.21, tokens=200)] + [
        Req("parallel", 0.0, ttfb=1.2, first=1.21, tokens=40) for _ in range(N)
    ]
    slow = build(network, mode="side-by-side")
    assert diagnose_state(slow).code == "network-bound"
    assert not fair_mode_applies(slow, diagnose_state(slow))  # both modes, one ratio


def test_the_measured_line_is_the_verdict_with_its_numbers() -> None:
    state = build(batching())
    line = measured_line(state, diagnose_state(state))
    s = summarize(state)
    c, p = s.groups["combined"].makespan_s, s.groups["parallel"].makespan_s
    assert c is not None and p is not None and s.speedup is not None
    assert line == f"Parallel finished {s.speedup:.1f}× sooner: {c:.1f} s against {p:.1f} s"


def test_a_rate_limit_counts_the_requests_that_waited_and_asked_again() -> None:
    """A parallel request answered after a 429 and its Retry-After was refused too: the
    plain words count it (the rate-limit scenario said "refused 0 of the 5" beside four
    back-offs on its timeline)."""
    base = [Req("combined", 0.0, first=0.01, tokens=500)]
    retried = base + [Req("parallel", 20.0, first=20.01, phase=1) for _ in range(2)]
    retried += [Req("parallel", 20.0, first=24.01, phase=1, retry_delays=(4.0,)) for _ in range(2)]
    retried += [Req("parallel", 20.0, first=28.01, phase=1, retry_delays=(4.0, 4.0))]
    assert words(retried) == (
        f"The provider refused 3 of the {N} parallel requests (too many at once, 4 refusals "
        "in all); they waited 16.0 s in all and asked again, so finished later."
    )
    both = base + [Req("parallel", 20.0, first=20.01, phase=1) for _ in range(3)]
    both += [Req("parallel", 20.0, first=24.01, phase=1, retry_delays=(4.0,))]
    both += [Req("parallel", 20.0, phase=1, status=429)]
    assert words(both) == (
        f"The provider refused 2 of the {N} parallel requests (too many at once): 1 waited "
        "4.0 s in all and asked again, 1 never got an answer."
    )
    lost = base + [Req("parallel", 20.0, first=20.01, phase=1) for _ in range(4)]
    lost += [Req("parallel", 20.0, phase=1, status=429)]
    assert words(lost) == (
        f"The provider refused 1 of the {N} parallel requests (too many at once); it never "
        "got an answer."
    )
