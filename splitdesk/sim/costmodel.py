"""Continuous-batching cost model: pure functions and a pure step engine, no I/O.

The model (DESIGN.md, "The built-in endpoint"): the server runs *steps*. In each step every
running sequence emits ``tokens_per_step`` tokens (one event). A step takes::

    step_time = t_base + t_seq * batch + t_ctx * Σ context_tokens + t_prefill * Σ new_prompt_tokens

where ``batch`` is the number of running sequences, ``Σ context_tokens`` the prompt plus
generated tokens they hold (KV cache read by attention), and ``Σ new_prompt_tokens`` the
prompts of the sequences admitted at the start of this step (their prefill; the step that
prefills a sequence also emits its first token, as vLLM does). At most ``max_num_seqs``
sequences run; the rest wait in a FIFO queue and join at the next step boundary
(continuous batching: Yu et al., "Orca", OSDI '22; vLLM's scheduler). All durations are
divided by ``speed``.

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


def step_time(params: SimParams, batch: int, context_tokens: int, prefill_tokens: int) -> float:
    """Duration of one step in wall-clock seconds (before jitter).

    ``batch``: running sequences in the step; ``context_tokens``: Σ prompt + generated tokens
    they hold at the step's start; ``prefill_tokens``: Σ prompt tokens of sequences admitted in
    this step. Raises ``ValueError`` for negative counts.
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
    """One request inside the engine: ``prompt_tokens`` in, ``output_tokens`` to emit."""

    key: int
    prompt_tokens: int
    output_tokens: int
    generated: int = 0
    admitted_step: int | None = None

    @property
    def remaining(self) -> int:
        return self.output_tokens - self.generated

    @property
    def context(self) -> int:
        return self.prompt_tokens + self.generated


@dataclass
class Step:
    """A planned step: its duration (s) and the sequences that emit at its end."""

    index: int
    duration: float
    running: list[Sequence]
    admitted: list[Sequence]


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
        """Admit waiting sequences and return the next step. Raises ``RuntimeError`` if idle."""
        if self.idle:
            raise RuntimeError("no sequence to run")
        admitted: list[Sequence] = []
        while self.waiting and len(self.running) < self.params.max_num_seqs:
            seq = self.waiting.popleft()
            seq.admitted_step = self.steps
            self.running.append(seq)
            admitted.append(seq)
        duration = step_time(
            self.params,
            batch=len(self.running),
            context_tokens=sum(s.context for s in self.running),
            prefill_tokens=sum(s.prompt_tokens for s in admitted),
        )
        if self.with_jitter and self.params.jitter > 0:
            duration *= max(0.5, 1.0 + self._rng.gauss(0.0, self.params.jitter))
        step = Step(self.steps, duration, list(self.running), admitted)
        self.steps += 1
        return step

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
    """One request of a plan: sent at ``send_s`` (s from the plan's start) with these lengths."""

    send_s: float
    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Prediction:
    """Expected timing of one request, seconds from its own send (DESIGN.md metrics).

    ``ttft_s``: first token arrives; ``e2e_s``: last token arrives; ``events``: token events
    the stream carries. ``rejected`` is True when the rate limit answers 429 instead
    (then ``ttft_s`` is None and ``e2e_s`` is the round trip of the refusal).
    """

    ttft_s: float | None
    e2e_s: float
    events: int
    rejected: bool = False


def predict(params: SimParams, plan: list[PlannedRequest]) -> list[Prediction]:
    """Expected TTFT and E2E of every request in ``plan`` on an otherwise idle server.

    Runs :class:`BatchEngine` without jitter on a virtual clock. A request reaches the engine
    ``rtt / 2`` after it is sent and each event reaches the client ``rtt / 2`` after it is
    emitted; requests beyond ``rate_limit_concurrency`` concurrent ones are rejected. Loopback
    HTTP overhead (~1 ms) is not modelled. Returns one :class:`Prediction` per request, in
    plan order.
    """
    half_rtt = params.scaled(params.rtt) / 2
    engine = BatchEngine(params, with_jitter=False)
    arrivals = sorted(range(len(plan)), key=lambda i: (plan[i].send_s, i))
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    events: dict[int, int] = {}
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
        seq = Sequence(i, plan[i].prompt_tokens, plan[i].output_tokens)
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
            out.append(Prediction(None, 2 * half_rtt, 0, rejected=True))
            continue
        out.append(
            Prediction(
                ttft_s=first[i] + half_rtt - req.send_s,
                e2e_s=last[i] + half_rtt - req.send_s,
                events=events[i],
            )
        )
    return out
