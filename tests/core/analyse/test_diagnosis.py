"""The diagnosis over synthetic traces: one trace shape per pattern, built from the same
events a live run emits, so every rule is checked on the numbers it names."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from splitdesk.core.analyse.diagnosis import (
    common_failure,
    decode_rates_by_concurrency,
    decompose,
    decompose_groups,
    diagnose,
    diagnose_state,
    explain_wait,
    failure_summary,
    mean_overlap,
    no_markers,
    waiting_state,
)
from splitdesk.core.analyse.metrics import summarize
from splitdesk.core.run.events import (
    Group,
    HeadersReceived,
    RequestEnded,
    RequestPlanned,
    RequestRetrying,
    RequestSent,
    RunEnded,
    RunStarted,
    SectionStarted,
    TextReceived,
    UsageReported,
)
from splitdesk.core.run.run_state import RunState
from splitdesk.providers.base import ErrorKind, RequestError

N = 5


@dataclass
class Req:
    """One synthetic request: sent at ``send``, headers after ``ttfb``, first token at
    ``first`` (run-origin seconds), then ``tokens`` tokens ``step`` seconds apart."""

    group: Group
    send: float = 0.0
    ttfb: float = 0.002
    first: float = 0.01
    tokens: int = 100
    step: float = 0.02
    phase: int = 0
    status: int = 200
    retry_delays: tuple[float, ...] = ()
    markers: bool = True


def build(reqs: list[Req], mode: str = "one-after-another") -> RunState:
    """A finished :class:`RunState` holding ``reqs`` (combined requests ask all N)."""
    state = RunState()
    state.apply(RunStarted(0.0, mode, tuple(f"q{i}" for i in range(N)), {"url": "x"}, 0, phases=3))
    k = 0
    for i, r in enumerate(reqs):
        qs = tuple(range(N)) if r.group == "combined" else (k % N,)
        if r.group != "combined":
            k += 1
        state.apply(RequestPlanned(0.0, i, r.group, qs, "p", r.phase))
    for i, r in enumerate(reqs):
        t = r.send
        state.apply(RequestSent(t, i, 0))
        for a, delay in enumerate(r.retry_delays):
            err = RequestError(ErrorKind.HTTP, "HTTP 429: slow down", 429, delay)
            state.apply(HeadersReceived(t + r.ttfb, i, 429))
            state.apply(RequestRetrying(t + r.ttfb, i, a + 1, delay, err))
            t = t + r.ttfb + delay
            state.apply(RequestSent(t, i, a + 1))
        if r.status != 200:
            err = RequestError(ErrorKind.HTTP, f"HTTP {r.status}: refused", r.status)
            state.apply(HeadersReceived(t + r.ttfb, i, r.status))
            state.apply(RequestEnded(t + r.ttfb, i, "failed", error=err))
            continue
        state.apply(HeadersReceived(t + r.ttfb, i, 200))
        offset = 0
        for j in range(r.tokens):
            at = r.first + j * r.step
            if r.group == "combined" and r.markers and j % (r.tokens // N) == 0:
                q = j // (r.tokens // N)
                if q < N:
                    state.apply(SectionStarted(at, i, q, offset, offset + 10))
            state.apply(TextReceived(at, i, "tok "))
            offset += 4
        state.apply(UsageReported(r.first + r.tokens * r.step, i, r.tokens))
        state.apply(RequestEnded(r.first + r.tokens * r.step, i, "done", "stop"))
    state.apply(RunEnded(max(x.first + x.tokens * x.step for x in reqs) + 0.01))
    return state


def batching(phase0: float = 0.0, per_stream_step: float = 0.021) -> list[Req]:
    return [Req("combined", phase0, first=phase0 + 0.01, tokens=500, step=0.02)] + [
        Req("parallel", 20.0, first=20.01, tokens=100, step=per_stream_step, phase=1)
        for _ in range(N)
    ]


def test_batching_names_concurrent_first_tokens_and_kept_speed() -> None:
    d = diagnose_state(build(batching()))
    assert d.code == "batching"
    assert d.evidence["first_token_spread_s"] == 0.0
    assert d.evidence["streams"] == N
    # 1/0.021 vs 1/0.02 tok/s: 95 % of a lone stream's speed
    assert d.evidence["busy_tok_s"] == pytest.approx(47.6, abs=0.1)
    assert d.evidence["lone_tok_s"] == pytest.approx(50.0, abs=0.1)
    assert "95%" in d.text and "batches" in d.text
    assert "first tokens within < 1 ms of each other" in d.text  # not "0.00 s"


@pytest.mark.parametrize(("gap", "said"), [(0.012, "within 12 ms of"), (0.25, "within 0.25 s of")])
def test_batching_says_how_far_apart_first_tokens_came_in_readable_units(
    gap: float, said: str
) -> None:
    reqs = batching()
    last = reqs[-1]
    reqs[-1] = Req("parallel", 20.0, first=20.01 + gap, tokens=last.tokens, step=last.step, phase=1)
    d = diagnose_state(build(reqs))
    assert d.code == "batching"
    assert said in d.text


def test_one_at_a_time_from_staggered_first_tokens() -> None:
    reqs = [Req("combined", 0.0, first=0.01, tokens=500)] + [
        Req("parallel", 20.0, first=20.01 + 2.0 * i, tokens=100, phase=1) for i in range(N)
    ]
    d = diagnose_state(build(reqs))
    assert d.code == "one-at-a-time"
    assert d.evidence["first_token_gap_s"] == pytest.approx(2.0)
    assert d.evidence["generation_s"] == pytest.approx(1.98)
    assert d.evidence["mean_overlap"] == pytest.approx(1.0, abs=0.01)
    assert "2.00 s apart" in d.text
    assert "same slot" not in d.text  # one after another: nothing was shared


def test_one_at_a_time_side_by_side_says_both_ways_shared_the_slot() -> None:
    # the combined request got the slot first; the parallel ones queued behind it
    reqs = [Req("combined", 0.0, first=0.01, tokens=500)] + [
        Req("parallel", 0.0, first=10.01 + 2.0 * i, tokens=100) for i in range(N)
    ]
    d = diagnose_state(build(reqs, mode="side-by-side"))
    assert d.code == "one-at-a-time"
    assert "same slot" in d.text
    assert d.evidence["streams"] == N + 1


def test_rate_limit_counts_refusals() -> None:
    reqs = [Req("combined", 0.0, first=0.01, tokens=500)]
    reqs += [Req("parallel", 20.0, first=20.01, phase=1) for _ in range(2)]
    reqs += [Req("parallel", 20.0, phase=1, status=429) for _ in range(3)]
    d = diagnose_state(build(reqs))
    assert d.code == "rate-limited"
    assert d.evidence["parallel_refused"] == 3
    assert d.evidence["max_concurrent"] == 2
    assert d.text.startswith("3 of 5 parallel requests refused with HTTP 429")


def test_rate_limit_from_retries_names_the_back_off() -> None:
    reqs = [Req("combined", 0.0, first=0.01, tokens=500)]
    reqs += [Req("parallel", 20.0, first=20.01, phase=1) for _ in range(2)]
    reqs += [Req("parallel", 20.0, first=22.02, phase=1, retry_delays=(2.0,)) for _ in range(3)]
    d = diagnose_state(build(reqs))
    assert d.code == "rate-limited"
    assert d.evidence["retried"] == 3 and d.evidence["refused"] == 0
    assert d.evidence["backoff_s"] == pytest.approx(6.0)
    assert "6.0 s of back-off" in d.text


def test_a_back_off_cut_short_counts_the_time_waited_not_the_time_asked() -> None:
    """Stopped 5 s into a 600 s ``Retry-After``: the Why line and the evidence say 5 s of
    back-off per retried request, not the 600 the server asked (it said 1800 s for three
    requests stopped after 5 s)."""
    state = RunState()
    state.apply(RunStarted(0.0, "parallel", tuple(f"q{i}" for i in range(N)), {"url": "x"}, 0))
    for i in range(N):
        state.apply(RequestPlanned(0.0, i, "parallel", (i,), "p", 0))
    for i in range(N):
        state.apply(RequestSent(0.0, i, 0))
        if i < 2:  # answered
            state.apply(HeadersReceived(0.002, i, 200))
            for j in range(50):
                state.apply(TextReceived(0.01 + j * 0.02, i, "tok "))
            state.apply(RequestEnded(1.01, i, "done", "stop"))
        else:  # refused, told to wait 600 s, stopped after 5
            err = RequestError(ErrorKind.HTTP, "HTTP 429: slow down", 429, 600.0)
            state.apply(HeadersReceived(0.002, i, 429))
            state.apply(RequestRetrying(0.002, i, 1, 600.0, err))
            state.apply(RequestEnded(5.002, i, "stopped"))
    state.apply(RunEnded(5.01, stopped=True))
    d = diagnose_state(state)
    finding = (
        d if d.code == "rate-limited" else next(n for n in d.notes if n.code == "rate-limited")
    )
    assert finding.evidence["backoff_s"] == pytest.approx(3 * 5.0)
    assert "15.0 s of back-off in all" in finding.text


def test_network_bound_when_headers_take_longer_than_generation() -> None:
    reqs = [Req("combined", 0.0, ttfb=1.2, first=1.21, tokens=200)] + [
        Req("parallel", 10.0, ttfb=1.2, first=11.21, tokens=40, phase=1) for _ in range(N)
    ]
    d = diagnose_state(build(reqs))
    assert d.code == "network-bound"
    assert d.evidence["ttfb_min_s"] == pytest.approx(1.2)
    assert d.evidence["generation_s"] == pytest.approx(0.78)
    assert "1.20 s" in d.text


def test_compute_bound_when_per_stream_speed_falls() -> None:
    d = diagnose_state(build(batching(per_stream_step=0.08)))
    assert d.code == "compute-bound"
    assert d.evidence["rate_ratio"] == pytest.approx(0.25)
    assert d.evidence["streams"] == N
    # the parallel streams were never alone: the lone rate is the combined request's, named so
    assert d.evidence["lone_from"] == "combined"
    assert "50 tok/s (the combined request alone) to 12.5 tok/s with 5 streams" in d.text


def test_compute_bound_side_by_side_from_the_combined_streams_own_gaps() -> None:
    # all six stream together at 1/0.08 tok/s; the combined reply then runs alone at 1/0.02
    reqs = [Req("parallel", 0.0, first=0.01, tokens=100, step=0.08) for _ in range(N)]
    combined = Req("combined", 0.0, first=0.01, tokens=600, step=0.02)
    state = build([combined, *reqs], mode="side-by-side")
    # the combined stream's real gaps: 0.08 s while the parallel ones ran, then 0.02 s
    c = state.requests[0]
    end_par = 0.01 + 99 * 0.08
    c.event_times[:] = [0.01 + j * 0.08 for j in range(100)] + [
        end_par + 0.02 * j for j in range(1, 501)
    ]
    c.last_token_t = c.event_times[-1]
    rates = decode_rates_by_concurrency([state.requests])
    assert rates[1] == pytest.approx(50.0, rel=0.01)
    assert rates[N + 1] == pytest.approx(12.5, rel=0.01)
    d = diagnose_state(state)
    assert d.code == "compute-bound"


def test_shortened_answers_is_a_note_beside_batching_and_the_headline_alone() -> None:
    reqs = batching()
    reqs[0].tokens = 250  # half the parallel sum (500)
    d = diagnose_state(build(reqs))
    assert d.code == "batching"
    (note,) = d.notes
    assert note.code == "shortened-answers"
    assert note.evidence == {"combined_tokens": 250, "parallel_tokens": 500, "ratio": 0.5}
    # when nothing else is clear (first tokens staggered, streams overlapping), it leads
    reqs = [Req("combined", 0.0, first=0.01, tokens=250)] + [
        Req("parallel", 20.0, first=20.01 + 0.6 * i, tokens=100, phase=1) for i in range(N)
    ]
    d = diagnose_state(build(reqs))
    assert d.code == "shortened-answers"
    assert "250 output tokens against 500" in d.text


def test_no_markers_is_noted() -> None:
    reqs = batching()
    reqs[0].markers = False
    d = diagnose_state(build(reqs))
    assert [n.code for n in d.notes] == ["no-markers"]
    assert "no answer markers" in d.notes[0].text


def test_unclear_says_no_clear_pattern_with_its_numbers() -> None:
    # first tokens spread but streams overlapping ~2 at a time at full speed: no rule fits
    reqs = [Req("combined", 0.0, first=0.01, tokens=500)] + [
        Req("parallel", 20.0, first=20.01 + 0.9 * i, tokens=100, phase=1) for i in range(N)
    ]
    d = diagnose_state(build(reqs))
    assert d.code == "unclear"
    assert d.text.startswith("no clear pattern")
    assert d.evidence["first_token_spread_s"] == pytest.approx(3.6)


def test_every_request_failed_is_a_failure_diagnosis_naming_the_cause() -> None:
    # every request failing is a clear pattern, not "no clear pattern"
    reqs = [Req("combined", status=401)] + [Req("parallel", status=401) for _ in range(N)]
    d = diagnose_state(build(reqs))
    assert d.code == "failed"
    assert d.text == f"every request failed ({N + 1} of {N + 1}): HTTP 401: refused."
    assert "no clear pattern" not in d.text
    assert d.evidence["failed"] == N + 1 and d.evidence["causes"] == 1


def test_every_request_failed_in_different_ways_counts_each_cause() -> None:
    reqs = [Req("combined", status=500)] + [Req("parallel", status=401) for _ in range(N)]
    d = diagnose_state(build(reqs))
    assert d.code == "failed"
    assert d.text == (
        f"every request failed ({N + 1} of {N + 1}): 1 request: HTTP 500: refused; "
        f"{N} requests: HTTP 401: refused."
    )


def test_running_requests_get_no_diagnosis() -> None:
    state = build(batching())
    state.requests[1].outcome = None
    assert diagnose_state(state).text.startswith("no diagnosis yet")


def test_a_stopped_run_gets_no_diagnosis() -> None:
    state = build(batching())
    state.requests[2].outcome = "stopped"
    d = diagnose_state(state)
    assert (
        d.code == "unclear" and d.text == "no diagnosis: the run was stopped (1 request cut short)."
    )


def test_bench_style_phases_on_separate_clocks() -> None:
    # splitdesk bench runs each mode as its own run with its own origin: phases overlap in
    # time numerically but must not count as concurrent
    comb = build([Req("combined", 0.0, first=0.01, tokens=500)]).requests
    par = build([Req("parallel", 0.0, first=0.01, tokens=100) for _ in range(N)]).requests
    d = diagnose([comb, par])
    assert d.code == "batching"
    assert d.evidence["lone_tok_s"] == pytest.approx(50.0, abs=0.1)


def test_mean_overlap() -> None:
    seq = build([Req("parallel", first=0.01 + 2.0 * i, tokens=100) for i in range(3)])
    assert mean_overlap(seq.requests) == pytest.approx(1.0, abs=0.01)
    together = build([Req("parallel", first=0.01, tokens=100) for _ in range(3)])
    assert mean_overlap(together.requests) == pytest.approx(3.0)


def test_decomposition_product_is_the_speed_up() -> None:
    dec = decompose(12.0, 3.0, 10.0)
    assert dec is not None
    assert dec.prompt_shape_factor == pytest.approx(1.2)
    assert dec.concurrency_factor == pytest.approx(10.0 / 3.0)
    assert dec.speedup == pytest.approx(4.0)
    assert decompose(12.0, None, 10.0) is None


def test_to_json_shape() -> None:
    reqs = batching()
    reqs[0].markers = False
    j = diagnose_state(build(reqs)).to_json()
    assert set(j) == {"code", "text", "evidence", "notes"}
    assert j["code"] == "batching"
    assert isinstance(j["notes"], list) and j["notes"][0]["code"] == "no-markers"


def test_one_at_a_time_one_after_another_says_where_a_speed_up_came_from() -> None:
    # llama.cpp with one slot: the combined reply is longer (bigger contexts), parallel
    # requests queue; the 1.8x gain is the prompt's shape, not concurrency
    reqs = [Req("combined", 0.0, first=0.01, tokens=900)] + [
        Req("parallel", 20.0, first=20.01 + 2.0 * i, tokens=100, phase=1) for i in range(N)
    ]
    d = diagnose_state(build(reqs))
    assert d.code == "one-at-a-time"
    assert "the 1.8× speed-up came from the prompt's shape" in d.text


def test_failure_summary_counts_and_names_the_cause() -> None:
    reqs = [Req("parallel", first=0.01)] + [Req("parallel", status=429) for _ in range(4)]
    assert failure_summary(build(reqs).requests) == "4 of 5 refused (HTTP 429)"
    reqs = [Req("parallel", status=401) for _ in range(3)]
    assert failure_summary(build(reqs).requests) == "3 of 3 failed (HTTP 401)"
    reqs = [Req("parallel", status=401), Req("parallel", status=500), Req("parallel")]
    assert failure_summary(build(reqs).requests) == "2 of 3 failed (HTTP 401, HTTP 500)"
    assert failure_summary(build([Req("parallel")]).requests) is None


def test_common_failure_only_when_every_request_failed_the_same_way() -> None:
    same = build([Req("combined", status=401)] + [Req("parallel", status=401)] * 3)
    err = common_failure(same.requests)
    assert err is not None and err.status == 401
    mixed = build([Req("combined", status=401), Req("parallel", status=500)])
    assert common_failure(mixed.requests) is None
    partly = build([Req("combined", status=401), Req("parallel")])
    assert common_failure(partly.requests) is None


def live(events: list[object]) -> RunState:
    state = RunState()
    state.apply(RunStarted(0.0, "side-by-side", ("a", "b"), {"url": "x"}, 0))
    state.apply(RequestPlanned(0.0, 0, "parallel", (0,), "a"))
    state.apply(RequestPlanned(0.0, 1, "parallel", (1,), "b"))
    for ev in events:
        state.apply(ev)  # type: ignore[arg-type]
    return state


def test_waiting_names_its_cause_and_keeps_counting() -> None:
    # sent, no headers yet: the network round trip
    s = live([RequestSent(0.0, 0), RequestSent(0.0, 1)])
    w = waiting_state(s.requests[0], s.requests, now=0.6)
    assert w is not None and w.kind == "network" and w.label == "network round trip · waiting 0.6 s"
    w = waiting_state(s.requests[0], s.requests, now=1.8)
    assert w is not None and w.label.endswith("waiting 1.8 s")  # the clock keeps counting
    # headers in, nobody streams: prefill; once request 1 streams, request 0 is queued
    s = live([RequestSent(0.0, 0), RequestSent(0.0, 1), HeadersReceived(0.01, 0, 200)])
    w = waiting_state(s.requests[0], s.requests, now=0.2)
    assert w is not None and w.kind == "prefill"
    s.apply(HeadersReceived(0.01, 1, 200))
    s.apply(TextReceived(0.05, 1, "hi"))
    w = waiting_state(s.requests[0], s.requests, now=1.81)
    assert w is not None and w.label == "queued behind 1 request · waiting 1.8 s"
    assert waiting_state(s.requests[1], s.requests, now=0.06) is None  # streaming steadily


def test_waiting_for_a_retry_is_a_rate_limit_back_off() -> None:
    err = RequestError(ErrorKind.HTTP, "HTTP 429: slow down", 429, 2.0)
    s = live(
        [
            RequestSent(0.0, 0),
            HeadersReceived(0.01, 0, 429),
            RequestRetrying(0.01, 0, 1, 2.0, err),
        ]
    )
    w = waiting_state(s.requests[0], s.requests, now=1.21)
    assert w is not None and w.label == "rate-limit back-off · waiting 1.2 s"
    s.apply(RequestSent(2.01, 0, 1))
    w = waiting_state(s.requests[0], s.requests, now=2.31)
    assert w is not None and w.kind == "network" and w.seconds == pytest.approx(0.3)


def test_a_quiet_stream_is_stalled_not_stuck() -> None:
    events: list[object] = [RequestSent(0.0, 0), HeadersReceived(0.01, 0, 200)]
    events += [TextReceived(0.1 + 0.02 * i, 0, "x") for i in range(20)]
    s = live(events)
    last = 0.1 + 0.02 * 19
    assert waiting_state(s.requests[0], s.requests, now=last + 0.5) is None
    w = waiting_state(s.requests[0], s.requests, now=last + 3.2)
    assert w is not None and w.label == "stalled 3.2 s"


def test_explain_wait_after_the_fact() -> None:
    # one slot: request k's first token waits for the k before it
    queued = build([Req("parallel", first=0.01 + 2.0 * i, tokens=100) for i in range(3)])
    r = queued.requests
    assert (
        explain_wait(r[0], r) == "headers after 0.00 s (network round trip) · then 0.01 s prefill"
    )
    assert explain_wait(r[2], r) == (
        "headers after 0.00 s (network round trip) · then 4.01 s queued behind 2 requests"
    )
    # batching: first tokens a step apart are not queueing
    together = build([Req("parallel", first=0.01 + 0.002 * i) for i in range(5)])
    assert "queued" not in (explain_wait(together.requests[4], together.requests) or "")
    # a far endpoint: the headers take the round trip
    far = build([Req("parallel", ttfb=1.2, first=1.21)])
    assert explain_wait(far.requests[0], far.requests) == (
        "headers after 1.20 s (network round trip) · then 0.01 s prefill"
    )


def test_no_markers_flags_only_a_finished_combined_reply_without_sections() -> None:
    reqs = batching()
    reqs[0].markers = False
    state = build(reqs)
    assert no_markers(state.requests[0])
    assert not any(no_markers(t) for t in state.requests[1:])
    assert not no_markers(build(batching()).requests[0])


def test_side_by_side_speed_up_is_a_verdict_only_when_the_server_batches() -> None:
    from splitdesk.core.analyse.diagnosis import Diagnosis, no_verdict_reason

    def d(code: str) -> Diagnosis:
        return Diagnosis(code, "", {})  # type: ignore[arg-type]

    assert no_verdict_reason(d("batching"), shared=True) is None
    assert no_verdict_reason(d("compute-bound"), True) == "both ways shared a compute-bound server"
    assert no_verdict_reason(d("one-at-a-time"), True) == "the server ran one request at a time"
    for code in ("unclear", "shortened-answers"):
        assert no_verdict_reason(d(code), True) == "both ways shared the server"
    # network-bound: the network set both ways' times, not the shared server (both modes
    # gave the same 2.4× on the slow-network profile): the ratio is a verdict
    assert no_verdict_reason(d("network-bound"), True) is None
    # measured apart (one after another, bench): every diagnosis leaves the verdict
    assert no_verdict_reason(d("compute-bound"), shared=False) is None
    assert no_verdict_reason(None, shared=True) is None


def test_failure_word_names_the_failure_without_figures() -> None:
    from splitdesk.core.analyse.diagnosis import failure_word

    assert failure_word(RequestError(ErrorKind.HTTP, "HTTP 429", 429)) == "refused (HTTP 429)"
    assert failure_word(RequestError(ErrorKind.HTTP, "HTTP 401", 401)) == "HTTP 401"
    assert failure_word(RequestError(ErrorKind.CONNECT, "refused")) == "cannot connect"
    assert failure_word(None) == "failed"


def test_rate_limit_concurrency_counts_only_the_parallel_requests_on_their_own_clock() -> None:
    # bench: each mode its own run, each timed from its own origin; the combined and the
    # sequential requests overlap the parallel ones in numbers only
    comb = build([Req("combined", 0.0, first=0.01, tokens=500)]).requests
    par = build(
        [Req("parallel", 0.0, first=0.01) for _ in range(2)]
        + [Req("parallel", 0.0, status=429) for _ in range(3)]
    ).requests
    seq = build([Req("sequential", 0.0, first=0.01 + 2.0 * i) for i in range(5)]).requests
    d = diagnose([comb, par, seq])
    assert d.code == "rate-limited"
    assert d.evidence["max_concurrent"] == 2
    assert d.text.endswith("a rate limit capped concurrency at about 2 parallel requests at once.")


def test_one_at_a_time_text_uses_the_split_it_prints_beside_it() -> None:
    # one slot; the sequential baseline is slower than the parallel side only by the gaps
    # between one-by-one requests: the split gives concurrency the gain, so must the text
    reqs = [Req("combined", 0.0, first=0.01, tokens=500)]
    reqs += [Req("parallel", 20.0, first=20.01 + 2.0 * i, tokens=100, phase=1) for i in range(N)]
    reqs += [
        Req("sequential", 40.0 + 2.2 * i, first=40.01 + 2.2 * i, tokens=100, phase=2)
        for i in range(N)
    ]
    state = build(reqs)
    dec = decompose_groups(summarize(state).groups)
    assert dec is not None
    d = diagnose_state(state)
    assert d.code == "one-at-a-time"
    assert "came from the prompt's shape" not in d.text
    assert (
        f"the {dec.speedup:.2f}× speed-up is {dec.prompt_shape_factor:.2f}× from the prompt's "
        f"shape (combined → sequential) × {dec.concurrency_factor:.2f}× from concurrency"
    ) in d.text
    # bench passes the split over the repeats' medians: the text takes those factors
    other = diagnose([state.requests], split=decompose(12.0, 10.0, 11.0))
    assert "1.20× speed-up is 1.09× from the prompt's shape" in other.text
