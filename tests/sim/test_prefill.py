"""The built-in endpoint's prefill: chunked over steps within ``max_num_batched_tokens``,
stalling the running sequences' decode steps chunk by chunk, and its prefix cache (blocks
named by chained hashes, shared in the step they are computed)."""

from __future__ import annotations

import pytest

from splitdesk.sim.costmodel import BatchEngine, PlannedRequest, Sequence, predict, step_time
from splitdesk.sim.params import SimParams
from splitdesk.sim.prefix_cache import (
    BLOCK_TOKENS,
    PrefixCache,
    PromptPart,
    block_hashes,
    cacheable_tokens,
    prompt_tokens,
)

DOC = "The library lends tools to its members for seven days. " * 200  # ~2,750 tokens


def _blocks(question: str, doc: str = DOC) -> tuple[tuple[bytes, ...], int]:
    parts = (PromptPart(doc, "system"), PromptPart(question, "user"))
    return block_hashes(parts), prompt_tokens(parts)


def _run(engine: BatchEngine) -> list[tuple[int, float, int, list[int]]]:
    """Every step until idle: (index, duration, prefill tokens, keys that emitted)."""
    out = []
    while not engine.idle:
        step = engine.plan_step()
        emitted = [em.seq.key for em in engine.finish_step(step)]
        out.append((step.index, step.duration, step.prefill_tokens, emitted))
    return out


def test_blocks_name_the_whole_prefix_so_a_different_start_shares_nothing() -> None:
    a, n = _blocks("Question one?")
    b, _ = _blocks("Question two?")
    shared = sum(1 for x, y in zip(a, b, strict=False) if x == y)
    # the document and the system role markers fill the same leading blocks
    assert shared == (len(DOC) // 4 + 4) // BLOCK_TOKENS
    assert len(a) == n // BLOCK_TOKENS  # full blocks only
    other, _ = _blocks("Question one?", doc="[run 1a2b/parallel]\n" + DOC)
    assert not set(other) & set(a)  # a different first block: no later block matches either


def test_cache_lookup_finds_leading_blocks_never_the_whole_prompt() -> None:
    cache = PrefixCache(1 << 20)
    blocks, n = _blocks("Question one?")
    assert cache.lookup(blocks, n) == 0
    cache.insert(blocks)
    # the same prompt again: every full block found, but the last token is always computed
    assert cache.lookup(blocks, len(blocks) * BLOCK_TOKENS) == len(blocks) * BLOCK_TOKENS - 1
    other, m = _blocks("Question two?")
    shared = sum(1 for x, y in zip(blocks, other, strict=False) if x == y)
    assert cache.lookup(other, m) == shared * BLOCK_TOKENS
    assert cache.queries == n + len(blocks) * BLOCK_TOKENS + m
    assert cache.hits == len(blocks) * BLOCK_TOKENS - 1 + shared * BLOCK_TOKENS


def test_cache_evicts_least_recently_used_blocks_beyond_its_capacity() -> None:
    cache = PrefixCache(capacity=4 * BLOCK_TOKENS)
    first, n = _blocks("Question one?")
    cache.insert(first[:4])
    cache.lookup(first[:1], n)  # block 0 used again: block 1 is now the oldest
    cache.insert([b"x" * 16])
    assert len(cache) == 4
    assert cache.lookup(first[:1], n) == BLOCK_TOKENS
    assert cache.lookup(first[1:2], n) == 0


def test_anthropic_caches_only_up_to_its_last_breakpoint() -> None:
    parts = (
        PromptPart(DOC, None, cache_mark=True),
        PromptPart("Question one?", "user"),
    )
    assert cacheable_tokens(parts, marks_only=True) == parts[0].tokens
    assert cacheable_tokens(parts, marks_only=False) == prompt_tokens(parts)
    unmarked = (PromptPart(DOC), PromptPart("Question one?", "user"))
    assert cacheable_tokens(unmarked, marks_only=True) == 0


def test_a_long_prompt_is_prefilled_in_chunks_and_its_first_token_ends_the_last() -> None:
    params = SimParams(jitter=0, max_num_batched_tokens=1000)
    engine = BatchEngine(params)
    engine.add(Sequence(0, 2500, 3))
    steps = _run(engine)
    assert [s[2] for s in steps[:3]] == [1000, 1000, 500]
    assert [s[3] for s in steps[:3]] == [[], [], [0]]  # the step finishing the prompt emits
    assert len(steps) == 5  # then two more decode steps
    assert steps[0][1] == pytest.approx(params.t_base + params.t_prefill * 1000)


def test_a_long_prefill_stalls_the_running_sequence_chunk_by_chunk() -> None:
    params = SimParams(jitter=0, max_num_batched_tokens=2048)
    engine = BatchEngine(params)
    engine.add(Sequence(0, 20, 12))
    engine.finish_step(engine.plan_step())  # sequence 0 joins and emits its first token
    lone = engine.plan_step()
    engine.finish_step(lone)
    engine.add(Sequence(1, 6000, 2))  # a long prompt arrives while 0 decodes
    stalled = []
    for _ in range(3):
        step = engine.plan_step()
        stalled.append(step)
        emitted = [em.seq.key for em in engine.finish_step(step)]
        assert 0 in emitted  # the running sequence still gets a token every step …
    chunk = 2048 - 1  # … but each step also computes a prefill chunk (budget minus its decode)
    assert [s.prefill_tokens for s in stalled] == [chunk, chunk, 6000 - 2 * chunk]
    assert stalled[0].duration == pytest.approx(lone.duration + params.t_prefill * chunk, abs=1e-6)
    # without a budget the whole prompt lands in one step: one long stall instead
    whole = BatchEngine(params.model_copy(update={"max_num_batched_tokens": 0}))
    whole.add(Sequence(0, 20, 12))
    whole.finish_step(whole.plan_step())
    whole.add(Sequence(1, 6000, 2))
    assert whole.plan_step().prefill_tokens == 6000


def test_identical_prefixes_in_one_step_are_prefilled_once_with_the_cache_on() -> None:
    on = SimParams(jitter=0, prefix_cache=True, max_num_batched_tokens=8192)
    off = on.model_copy(update={"prefix_cache": False})
    questions = [f"Question {k} about the document?" for k in range(5)]
    for params, expect_once in ((on, True), (off, False)):
        engine = BatchEngine(params)
        seqs = []
        for k, q in enumerate(questions):
            blocks, n = _blocks(q)
            seq = Sequence(k, n, 4, blocks=blocks if params.prefix_cache else ())
            seqs.append(seq)
            engine.add(seq)
        total = sum(s.prompt_tokens for s in seqs)
        step = engine.plan_step()
        if expect_once:
            assert len(step.admitted) == 5 and len(step.running) == 5  # all emit this step
            shared = seqs[1].cached_tokens
            assert shared > 2500 and all(s.cached_tokens == shared for s in seqs[1:])
            assert seqs[0].cached_tokens == 0  # the first one admitted computes the document
            assert step.prefill_tokens == total - 4 * shared
        else:  # five documents to compute: the budget of 8,192 tokens is spent at once
            assert step.prefill_tokens == 8192 and len(step.running) < 5
            computed = step.prefill_tokens
            engine.finish_step(step)
            while not engine.idle:
                step = engine.plan_step()
                computed += step.prefill_tokens
                engine.finish_step(step)
            assert computed == total and all(s.cached_tokens == 0 for s in seqs)


def test_short_prompts_cost_what_they_did_before_chunking_and_the_cache() -> None:
    """No regression for prompts without a context: every step of five short requests
    takes the old formula's time (t_base + t_seq·batch + t_ctx·Σcontext + t_prefill·Σnew
    prompts), cache on or off."""
    for cache in (False, True):
        params = SimParams(jitter=0, prefix_cache=cache)
        engine = BatchEngine(params)
        lengths = [(18, 30), (22, 40), (15, 35), (20, 30), (25, 45)]
        for k, (p, o) in enumerate(lengths):
            engine.add(Sequence(k, p, o))
        t = 0
        while not engine.idle:
            running_before = list(engine.running)
            step = engine.plan_step()
            new = sum(s.prompt_tokens for s in step.admitted)
            batch = running_before + step.admitted
            ctx = sum(s.prompt_tokens + s.generated for s in batch)
            assert step.duration == pytest.approx(step_time(params, len(batch), ctx, new))
            engine.finish_step(step)
            t += 1
        assert t == 45


def test_prediction_carries_the_cache_through_a_sequential_phase() -> None:
    params = SimParams(jitter=0, prefix_cache=True)
    plan = []
    for k in range(3):
        blocks, n = _blocks(f"Question {k}?")
        plan.append(PlannedRequest(0.0, n, 10, blocks))
    chained = predict(params, plan, chained=True)
    assert chained[0].cached_tokens == 0
    assert chained[1].cached_tokens > 2500 and chained[2].cached_tokens > 2500
    assert chained[1].ttft_s is not None and chained[0].ttft_s is not None
    assert chained[1].ttft_s < chained[0].ttft_s / 5  # the document was not prefilled again
    assert chained[1].send_s == pytest.approx(chained[0].e2e_s)
    alone = predict(params, plan[1:2])
    assert alone[0].cached_tokens == 0  # each prediction starts from an empty cache
