"""Continuous-batching cost model: pure functions and a pure step engine, no I/O.

The model (DESIGN.md, "The built-in endpoint"): the server runs *steps*. In each step every
decoding sequence emits ``tokens_per_step`` tokens (one event). A step takes::

    step_time = t_base + t_seq * emitting + t_ctx * Σ context_tokens + t_prefill * Σ prefill_tokens

where ``emitting`` is the number of sequences that emit a token at the step's end,
``Σ context_tokens`` the prompt plus generated tokens they hold (KV cache read by
attention), and ``Σ prefill_tokens`` the prompt tokens the step computes.

**Prefill** (chunked, as vLLM and SGLang schedule it): a step processes at most
``max_num_batched_tokens`` tokens. The running sequences that decode come first (one token
each), then the prefills under way, then waiting sequences (FIFO, up to ``max_num_seqs``
running), each taking what is left of the budget. A prompt longer than what is left is
prefilled over several steps; the step that computes its last prompt token also emits its
first token (as vLLM does). A long prefill therefore lengthens the steps of every running
sequence (their inter-token gaps) chunk by chunk, instead of stalling them for the whole
prompt at once. With no budget (``max_num_batched_tokens`` 0) a sequence's whole prompt is
prefilled in the step it joins.

**Prefix cache** (``prefix_cache``, :mod:`splitdesk.sim.prefix_cache`): a joining
sequence's leading prompt blocks already held are not prefilled (``cached_tokens``); the
blocks a step computes are held from that step on, so a sequence admitted later in the
same step finds them (N identical prefixes in one step are prefilled once).

At most ``max_num_seqs`` sequences run; the rest wait in a FIFO queue and join at the next
step boundary (continuous batching: Yu et al., "Orca", OSDI '22; vLLM's scheduler). All
durations are divided by ``speed``.

:class:`BatchEngine` is the single implementation of these rules. The live scheduler
(:mod:`splitdesk.sim.scheduler`) drives it with the wall clock; :func:`predict` drives it
with a virtual clock, so a prediction and a measurement come from the same rules.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

from splitdesk.sim.params import SimParams
from splitdesk.sim.prefix_cache import BLOCK_TOKENS, PrefixCache


def step_time(params: SimParams, batch: int, context_tokens: int, prefill_tokens: int) -> float:
    """Duration of one step in wall-clock seconds (before jitter).

    ``batch``: sequences that emit a token at the step's end; ``context_tokens``: Σ prompt +
    generated tokens they hold at the step's start; ``prefill_tokens``: Σ prompt tokens the
    step computes (prefill chunks). Raises ``ValueError`` for negative counts.
    """
    if batch < 0 or context_tokens < 0 or prefill_tokens < 0:
        raise ValueError("token and sequence counts must be >= 0")
    seconds = (
        params.t_base
        + params.t_seq * batch
        + params.t_ctx * context_tokens
        + params.t_prefill * prefill_tokens
    )
    return params.scaled(seconds)


@dataclass(eq=False)
class Sequence:
    """One request inside the engine: ``prompt_tokens`` in, ``output_tokens`` to emit.

    ``blocks``: the names of its cacheable full prompt blocks
    (:func:`splitdesk.sim.prefix_cache.block_hashes`; empty: nothing to cache);
    ``computed``: prompt tokens prefilled or found in the cache so far; ``cached_tokens``:
    found in the prefix cache when it joined; ``prefill_steps``: steps that computed part of
    its prompt."""

    key: int
    prompt_tokens: int
    output_tokens: int
    generated: int = 0
    admitted_step: int | None = None
    blocks: tuple[bytes, ...] = ()
    computed: int = 0
    cached_tokens: int = 0
    prefill_steps: int = 0

    @property
    def prefilled(self) -> bool:
        """Every prompt token is computed: the sequence decodes."""
        return self.computed >= self.prompt_tokens

    @property
    def remaining(self) -> int:
        return self.output_tokens - self.generated

    @property
    def context(self) -> int:
        return self.prompt_tokens + self.generated


@dataclass
class Step:
    """A planned step: its duration (s), the sequences that emit at its end (``running``),
    those that joined the batch in it (``admitted``) and the prompt tokens it computes."""

    index: int
    duration: float
    running: list[Sequence]
    admitted: list[Sequence]
    prefill_tokens: int = 0


@dataclass
class Emission:
    """What a sequence emitted at the end of a step: ``tokens`` (≥ 1) and whether it is done."""

    seq: Sequence
    tokens: int
    done: bool


@dataclass
class BatchEngine:
    """The step engine of the cost model, with no notion of real time.

    Use: :meth:`add` sequences; :meth:`plan_step` admits waiting ones (FIFO, up to
    ``max_num_seqs``) and returns the step with its duration (jitter applied when
    ``with_jitter``); after that duration elapses, :meth:`finish_step` returns one
    :class:`Emission` per running sequence and retires the finished ones.
    """

    params: SimParams
    with_jitter: bool = True
    waiting: deque[Sequence] = field(default_factory=deque)
    running: list[Sequence] = field(default_factory=list)
    steps: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.params.seed)
        #: the prefix cache (``None`` when ``prefix_cache`` is off)
        self.cache = (
            PrefixCache(self.params.prefix_cache_tokens) if self.params.prefix_cache else None
        )

    def add(self, seq: Sequence) -> None:
        """Queue ``seq``; it joins the batch at the next step boundary with a free slot."""
        if seq.output_tokens < 1:
            raise ValueError("a sequence must emit at least one token")
        self.waiting.append(seq)

    def cancel(self, seq: Sequence) -> None:
        """Drop ``seq`` wherever it is (client went away): its slot is free for the next step."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)

    @property
    def idle(self) -> bool:
        return not self.running and not self.waiting

    @property
    def queued(self) -> int:
        """Waiting sequences beyond the batch's free slots: those queued for a slot
        (``max_num_seqs``), not those that arrived during a step and join the batch at its
        end (a real server's scheduler admits those within the step they arrive in, so its
        waiting gauge, read between steps, shows them as running)."""
        free = max(0, self.params.max_num_seqs - len(self.running))
        return max(0, len(self.waiting) - free)

    def plan_step(self) -> Step:
        """Give the step its tokens (module docstring: decodes, prefills under way, then
        waiting sequences, within ``max_num_batched_tokens``) and return it. Raises
        ``RuntimeError`` if idle."""
        if self.idle:
            raise RuntimeError("no sequence to run")
        params = self.params
        budget = params.max_num_batched_tokens or 1 << 62
        emitting: list[Sequence] = []
        for seq in self.running:
            if seq.prefilled:
                emitting.append(seq)
                budget -= 1
        prefill = 0
        for seq in self.running:
            if not seq.prefilled and budget > 0:
                n = min(seq.prompt_tokens - seq.computed, budget)
                budget -= n
                prefill += self._compute(seq, n, emitting)
        admitted: list[Sequence] = []
        while self.waiting and len(self.running) < params.max_num_seqs and budget > 0:
            seq = self.waiting.popleft()
            seq.admitted_step = self.steps
            if self.cache is not None and seq.blocks:
                seq.cached_tokens = self.cache.lookup(seq.blocks, seq.prompt_tokens)
            seq.computed = seq.cached_tokens
            self.running.append(seq)
            admitted.append(seq)
            n = min(seq.prompt_tokens - seq.computed, budget)
            budget -= n
            prefill += self._compute(seq, n, emitting)
        duration = step_time(
            params,
            batch=len(emitting),
            context_tokens=sum(s.context for s in emitting),
            prefill_tokens=prefill,
        )
        if self.with_jitter and params.jitter > 0:
            duration *= max(0.5, 1.0 + self._rng.gauss(0.0, params.jitter))
        step = Step(self.steps, duration, emitting, admitted, prefill)
        self.steps += 1
        return step

    def _compute(self, seq: Sequence, n: int, emitting: list[Sequence]) -> int:
        """Give ``seq`` ``n`` prompt tokens of this step: the blocks they fill enter the
        cache now (a sequence admitted later in the step finds them), and ``seq`` emits at
        the step's end when its prompt is then complete. Returns ``n``."""
        seq.computed += n
        seq.prefill_steps += 1
        if self.cache is not None and seq.blocks:
            self.cache.insert(seq.blocks[: seq.computed // BLOCK_TOKENS])
        if seq.prefilled:
            emitting.append(seq)
        return n

    def finish_step(self, step: Step) -> list[Emission]:
        """Emit for every sequence of ``step`` still running; retire the finished ones."""
        emissions: list[Emission] = []
        per_step = self.params.tokens_per_step
        running = set(self.running)  # by identity; a list would cost O(batch²) per step
        for seq in step.running:
            if seq not in running:  # cancelled during the step
                continue
            n = min(per_step, seq.remaining)
            seq.generated += n
            emissions.append(Emission(seq, n, seq.remaining == 0))
        self.running = [s for s in self.running if s.remaining > 0]
        return emissions


@dataclass(frozen=True)
class PlannedRequest:
    """One request of a plan: sent at ``send_s`` (s from the plan's start) with these
    lengths; ``blocks``: its cacheable prompt blocks' names (for the prefix cache)."""

    send_s: float
    prompt_tokens: int
    output_tokens: int
    blocks: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Prediction:
    """Expected timing of one request, seconds from its own send (DESIGN.md metrics).

    ``ttft_s``: first token arrives; ``e2e_s``: last token arrives; ``events``: token events
    the stream carries; ``cached_tokens``: prompt tokens found in the prefix cache;
    ``prefill_s``: from joining the batch to the end of the step that emitted its first
    token; ``queue_s``: from reaching the engine to joining the batch. ``rejected`` is True
    when the rate limit answers 429 instead (then ``ttft_s`` is None and ``e2e_s`` is the
    round trip of the refusal).
    """

    ttft_s: float | None
    e2e_s: float
    events: int
    rejected: bool = False
    cached_tokens: int = 0
    prefill_s: float = 0.0
    queue_s: float = 0.0
    send_s: float = 0.0


def predict(
    params: SimParams, plan: list[PlannedRequest], chained: bool = False
) -> list[Prediction]:
    """Expected TTFT and E2E of every request in ``plan`` on an otherwise idle server with
    an empty prefix cache.

    Runs :class:`BatchEngine` without jitter on a virtual clock. A request reaches the engine
    ``rtt / 2`` after it is sent and each event reaches the client ``rtt / 2`` after it is
    emitted; requests beyond ``rate_limit_concurrency`` concurrent ones are rejected.
    ``chained``: the requests go one after another, each sent when the one before it has
    its last token (its ``send_s`` ignored; the prefix cache carries over, as on the
    server), their :attr:`Prediction.send_s` saying when. Loopback HTTP overhead (~1 ms)
    is not modelled. Returns one :class:`Prediction` per request, in plan order.
    """
    engine = BatchEngine(params, with_jitter=False)
    if not chained:
        return _simulate(params, engine, plan, 0.0)
    out: list[Prediction] = []
    start = 0.0
    for req in plan:
        (p,) = _simulate(params, engine, [PlannedRequest(0.0, *_lengths(req))], start)
        out.append(p)
        start += p.e2e_s
    return out


def _lengths(req: PlannedRequest) -> tuple[int, int, tuple[bytes, ...]]:
    return req.prompt_tokens, req.output_tokens, req.blocks


def _simulate(
    params: SimParams, engine: BatchEngine, plan: list[PlannedRequest], offset: float
) -> list[Prediction]:
    """:func:`predict`'s loop on ``engine`` (idle, its cache as it is), the plan's times
    counted from ``offset`` on the engine's clock (reported from the plan's own start)."""
    half_rtt = params.scaled(params.rtt) / 2
    arrivals = sorted(range(len(plan)), key=lambda i: (plan[i].send_s, i))
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    events: dict[int, int] = {}
    reached: dict[int, float] = {}
    joined: dict[int, float] = {}
    rejected: set[int] = set()
    # Accepted requests' end times, to apply the concurrency limit at each arrival.
    active_until: dict[int, float] = {}
    seqs: dict[int, Sequence] = {}

    pending = deque(arrivals)
    now = 0.0
    step: Step | None = None
    step_end = math.inf

    def arrive(i: int, at: float) -> None:
        limit = params.rate_limit_concurrency
        if limit and sum(1 for end in active_until.values() if end > at) >= limit:
            rejected.add(i)
            return
        active_until[i] = math.inf
        reached[i] = at
        seq = Sequence(i, plan[i].prompt_tokens, plan[i].output_tokens, blocks=plan[i].blocks)
        seqs[i] = seq
        engine.add(seq)

    while pending or not engine.idle or step is not None:
        next_arrival = plan[pending[0]].send_s + half_rtt if pending else math.inf
        if step is None:
            if engine.idle:
                now = max(now, next_arrival)
                arrive(pending.popleft(), now)
                continue
            step = engine.plan_step()
            for seq in step.admitted:
                joined[seq.key] = now
            step_end = now + step.duration
        if next_arrival <= step_end:
            arrive(pending.popleft(), next_arrival)
            continue
        now = step_end
        for em in engine.finish_step(step):
            i = em.seq.key
            first.setdefault(i, now)
            last[i] = now
            events[i] = events.get(i, 0) + 1
            if em.done:
                active_until[i] = now + half_rtt
        step = None

    out: list[Prediction] = []
    for i, req in enumerate(plan):
        if i in rejected:
            out.append(Prediction(None, 2 * half_rtt, 0, rejected=True, send_s=offset))
            continue
        out.append(
            Prediction(
                ttft_s=first[i] + half_rtt - req.send_s,
                e2e_s=last[i] + half_rtt - req.send_s,
                events=events[i],
                cached_tokens=seqs[i].cached_tokens,
                prefill_s=first[i] - joined[i],
                queue_s=joined[i] - reached[i],
                send_s=offset + req.send_s,
            )
        )
    return out
