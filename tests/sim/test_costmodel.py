"""The cost model against values worked out by hand."""

from __future__ import annotations

import pytest

from splitdesk.sim.costmodel import BatchEngine, PlannedRequest, Sequence, predict, step_time
from splitdesk.sim.params import PROFILES, SimParams

HAND = SimParams(
    t_base=0.010,
    t_seq=0.002,
    t_ctx=0.0001,
    t_prefill=0.001,
    jitter=0,
    max_num_seqs=2,
    answer_tokens=10,
)
PLAN = [
    PlannedRequest(0.0, prompt_tokens=10, output_tokens=3),
    PlannedRequest(0.015, prompt_tokens=20, output_tokens=2),
]


def test_step_time_formula() -> None:
    # 0.010 + 0.002·3 + 0.0001·100 + 0.001·50 = 0.076
    assert step_time(HAND, batch=3, context_tokens=100, prefill_tokens=50) == pytest.approx(0.076)
    assert step_time(HAND.model_copy(update={"speed": 2.0}), 3, 100, 50) == pytest.approx(0.038)


def test_two_requests_batched_worked_on_paper() -> None:
    """A (prompt 10, 3 tokens) sent at 0; B (prompt 20, 2 tokens) sent at 0.015.

    step 0 [0, 0.023]: A admitted; batch 1, ctx 10, prefill 10:
        0.010 + 0.002 + 0.0010 + 0.010 = 0.0230 → A token 1 (A TTFT 0.023)
    B arrives at 0.015, mid-step: it waits for the step boundary.
    step 1 [0.023, 0.0601]: B admitted; batch 2, ctx 11 + 20 = 31, prefill 20:
        0.010 + 0.004 + 0.0031 + 0.020 = 0.0371 → A token 2, B token 1
        (B TTFT 0.0601 − 0.015 = 0.0451)
    step 2 [0.0601, 0.0774]: batch 2, ctx 12 + 21 = 33:
        0.010 + 0.004 + 0.0033 = 0.0173 → A token 3 (A E2E 0.0774), B token 2 (B E2E 0.0624)
    """
    a, b = predict(HAND, PLAN)
    assert a.ttft_s == pytest.approx(0.023)
    assert a.e2e_s == pytest.approx(0.0774)
    assert b.ttft_s == pytest.approx(0.0451)
    assert b.e2e_s == pytest.approx(0.0624)
    assert (a.events, b.events) == (3, 2)


def test_two_requests_single_slot_worked_on_paper() -> None:
    """Same plan, max_num_seqs 1: B queues until A is done.

    A: steps of 0.023, 0.0131 (ctx 11), 0.0132 (ctx 12) → tokens at 0.023, 0.0361, 0.0493.
    B admitted at 0.0493: 0.010 + 0.002 + 0.0020 + 0.020 = 0.034 → 0.0833 (TTFT 0.0683);
    then 0.010 + 0.002 + 0.0021 = 0.0141 → 0.0974 (E2E 0.0824).
    """
    a, b = predict(HAND.model_copy(update={"max_num_seqs": 1}), PLAN)
    assert a.e2e_s == pytest.approx(0.0493)
    assert b.ttft_s == pytest.approx(0.0683)
    assert b.e2e_s == pytest.approx(0.0824)


def test_round_trip_adds_half_each_way() -> None:
    (a,) = predict(HAND.model_copy(update={"rtt": 0.2}), PLAN[:1])
    assert a.ttft_s == pytest.approx(0.023 + 0.2)
    assert a.e2e_s == pytest.approx(0.0493 + 0.2)


def test_rate_limit_rejects_above_concurrency() -> None:
    params = HAND.model_copy(update={"rate_limit_concurrency": 2})
    plan = [PlannedRequest(0.0, 10, 5)] * 4
    preds = predict(params, plan)
    assert [p.rejected for p in preds] == [False, False, True, True]
    assert preds[2].ttft_s is None


def test_tokens_per_step_groups_tokens_into_events() -> None:
    params = HAND.model_copy(update={"tokens_per_step": 4})
    (p,) = predict(params, [PlannedRequest(0.0, 10, 10)])
    assert p.events == 3  # 4 + 4 + 2


def test_engine_cancel_frees_the_slot() -> None:
    engine = BatchEngine(HAND.model_copy(update={"max_num_seqs": 1}), with_jitter=False)
    a, b = Sequence(0, 10, 100), Sequence(1, 10, 5)
    engine.add(a)
    engine.add(b)
    engine.finish_step(engine.plan_step())
    engine.cancel(a)
    step = engine.plan_step()
    assert step.admitted == [b]


def test_jitter_is_seeded() -> None:
    params = HAND.model_copy(update={"jitter": 0.1, "seed": 7})
    runs = []
    for _ in range(2):
        engine = BatchEngine(params)
        engine.add(Sequence(0, 10, 20))
        durations = []
        while not engine.idle:
            step = engine.plan_step()
            durations.append(step.duration)
            engine.finish_step(step)
        runs.append(durations)
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 1


def test_profiles_tell_their_story() -> None:
    """Predicted speed-ups for 5 questions of ~120 tokens: each profile shows its point."""

    def ratio(name: str) -> float:
        p = SimParams.for_profile(name, jitter=0)
        lengths = [96, 108, 120, 132, 144]
        combined = predict(p, [PlannedRequest(0, 150, sum(lengths) + 25)])[0].e2e_s
        parallel = max(x.e2e_s for x in predict(p, [PlannedRequest(0, 12, n) for n in lengths]))
        return combined / parallel

    assert ratio("batching") > 4.0
    assert ratio("single-slot") < 1.2
    assert ratio("compute-bound") < 1.6
    assert ratio("slow-network") < ratio("batching")
    assert set(PROFILES) == {
        "batching",
        "single-slot",
        "rate-limited",
        "slow-network",
        "compute-bound",
    }


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        SimParams(t_base=-1)
    with pytest.raises(KeyError):
        SimParams.for_profile("nope")


@pytest.mark.parametrize(
    ("slots", "running", "arrived", "queued"),
    [(8, 0, 5, 0), (8, 6, 5, 3), (1, 1, 4, 4), (2, 0, 3, 1)],
)
def test_queued_counts_only_sequences_without_a_free_slot(
    slots: int, running: int, arrived: int, queued: int
) -> None:
    """The waiting gauge of ``/metrics``: sequences that arrived during a step and fit the
    batch join it at the step's end, so they are not queued; the rest wait for a slot."""
    engine = BatchEngine(HAND.model_copy(update={"max_num_seqs": slots}))
    for key in range(running):
        engine.add(Sequence(key, 10, 50))
    if running:
        engine.plan_step()
    for key in range(running, running + arrived):
        engine.add(Sequence(key, 10, 50))
    assert (len(engine.running), len(engine.waiting)) == (running, arrived)
    assert engine.queued == queued
