"""Prompt and cached tokens per side, the TTFT split and the prefill-bound diagnosis, on
traces built from the events a live run emits (the live runs: ``tests/cli``)."""

from __future__ import annotations

import pytest

from splitdesk.core.analyse.cost import Prices, side_tokens
from splitdesk.core.analyse.diagnosis import diagnose
from splitdesk.core.analyse.metrics import request_figures, summarize
from splitdesk.core.run.events import (
    Group,
    RequestEnded,
    RequestPlanned,
    RequestSent,
    RunEnded,
    RunStarted,
    ServerTimings,
    TextReceived,
    UsageReported,
)
from splitdesk.core.run.run_state import RunState

N = 5
DOC_CHARS = 24_000  # ~6,000 tokens


def build(
    first_token: list[float],
    prompt: list[int | None],
    cached: list[int | None],
    timings: list[dict[str, float] | None],
    group: Group = "parallel",
    tokens: int = 60,
    step: float = 0.02,
) -> RunState:
    """A finished run of one phase: request i's first token at ``first_token[i]``, then
    ``tokens`` tokens ``step`` apart; usage and server timings as given."""
    state = RunState()
    state.apply(RunStarted(0.0, "parallel", tuple(f"q{i}" for i in range(N)), {}, 0))
    for i in range(len(first_token)):
        qs = tuple(range(N)) if group == "combined" else (i,)
        state.apply(RequestPlanned(0.0, i, group, qs, "p", 0, 64, None, DOC_CHARS))
    for i, first in enumerate(first_token):
        state.apply(RequestSent(0.0, i, 0))
        for k in range(tokens):
            state.apply(TextReceived(first + k * step, i, " w"))
        end = first + (tokens - 1) * step
        state.apply(UsageReported(end, i, tokens, prompt[i], cached[i]))
        if timings[i] is not None:
            state.apply(ServerTimings(end, i, timings[i]))
        state.apply(RequestEnded(end, i, "done", "stop"))
    state.apply(RunEnded(max(first_token) + tokens * step))
    return state


def test_each_side_sums_its_prompt_and_cached_tokens() -> None:
    state = build(
        [0.5] * N, [6020, 6018, 6022, 6019, 6021], [0, 5984, 5984, 5984, 5984], [None] * N
    )
    p = summarize(state).groups["parallel"].prompt
    assert p is not None and p.complete
    assert (p.prompt, p.cached, p.computed) == (30100, 4 * 5984, 30100 - 4 * 5984)
    assert p.context_chars == DOC_CHARS and p.cached_reported == N
    unreported = build([0.5] * N, [6020] * N, [None] * N, [None] * N)
    q = summarize(unreported).groups["parallel"].prompt
    # no cached count reported: None, not 0, and the whole prompt counts as computed
    assert q is not None and q.cached is None and q.computed == 5 * 6020


def test_ttft_splits_into_queue_prefill_and_the_rest() -> None:
    state = build(
        [1.2, 0.3],
        [6000, 6000],
        [0, 0],
        [{"queue_s": 0.6, "prompt_eval_s": 0.55}, {"prompt_eval_s": 0.29}],
    )
    a, b = (request_figures(t) for t in state.requests)
    assert a.split is not None and b.split is not None
    assert (a.split.queue_s, a.split.prefill_s) == (0.6, 0.55)
    assert a.split.rest_s == pytest.approx(0.05)
    assert b.split.queue_s is None and b.split.rest_s == pytest.approx(0.01)
    assert a.prefill_span == pytest.approx((1.2 - 0.55, 1.2))  # ends at the first token


def test_five_prefills_of_one_document_are_named_with_their_numbers() -> None:
    firsts = [0.6, 1.2, 1.8, 2.4, 3.0]  # each waited for the ones before: chunked prefill
    timings = [{"queue_s": f - 0.6, "prompt_eval_s": 0.58} for f in firsts]
    par = build(firsts, [6200] * N, [0] * N, timings)  # type: ignore[arg-type]
    comb = build([0.6], [6300], [0], [{"queue_s": 0.0, "prompt_eval_s": 0.59}], "combined", 300)
    d = diagnose([comb.requests, par.requests])
    assert d.code == "prefill-bound"
    assert d.text.startswith(
        "the 5 parallel requests read the document 5 times: 31,000 prompt tokens, 0 from cache "
        "(the combined request: 6,300, once); of each TTFT (median 1.80 s) prefill took "
        "0.58 s and the wait for the other requests' prefill 1.20 s"
    )
    assert d.evidence["parallel_prompt_tokens"] == 31000
    assert d.evidence["median_prefill_s"] == pytest.approx(0.58)


def test_a_server_without_prefill_timings_gets_the_ttft_reading() -> None:
    firsts = [0.6, 1.2, 1.8, 2.4, 3.0]
    par = build(firsts, [6200] * N, [None] * N, [None] * N)
    comb = build([0.62], [6300], [None], [None], "combined", 300)
    d = diagnose([comb.requests, par.requests])
    assert d.code == "prefill-bound"
    assert "their TTFT (median 1.80 s) is 2.9× the combined request's (0.62 s)" in d.text
    assert "the server reports no prefill time" in d.text


def test_served_from_cache_or_short_prompts_is_not_prefill_bound() -> None:
    comb = build([0.6], [6300], [0], [{"prompt_eval_s": 0.59}], "combined", 300)
    cached = build(
        [0.6] + [0.62] * 4,
        [6200] * N,
        [0, 6176, 6176, 6176, 6176],
        [{"prompt_eval_s": 0.58}] + [{"prompt_eval_s": 0.01}] * 4,
    )
    assert diagnose([comb.requests, cached.requests]).code != "prefill-bound"
    short_comb = build([0.02], [120], [0], [{"prompt_eval_s": 0.005}], "combined", 300)
    short = build([0.02] * N, [24] * N, [0] * N, [{"prompt_eval_s": 0.001}] * N)
    assert diagnose([short_comb.requests, short.requests]).code != "prefill-bound"


def test_cost_takes_the_cached_price_for_the_cached_tokens() -> None:
    state = build([0.5] * N, [6000] * N, [0, 5984, 5984, 5984, 5984], [None] * N)
    side = side_tokens(state.requests, "parallel")
    assert (side.prompt, side.cached, side.output) == (30000, 4 * 5984, 5 * 60)
    prices = Prices(input_per_m=3.0, output_per_m=15.0, cached_input_per_m=0.3)
    fresh = 30000 - 4 * 5984
    assert side.cost(prices) == pytest.approx(
        fresh * 3.0 / 1e6 + 4 * 5984 * 0.3 / 1e6 + 300 * 15.0 / 1e6
    )
    no_cached_price = Prices(input_per_m=3.0, output_per_m=15.0)
    assert side.cost(no_cached_price) == pytest.approx(30000 * 3.0 / 1e6 + 300 * 15.0 / 1e6)
