"""The run's verdict and its reason in plain words, for a stakeholder in the back row.

Two readings of one diagnosis (:mod:`splitdesk.core.analyse.diagnosis`): the engineer's
line names its measurements ("each at 95 % of a lone stream's speed"); the plain line
below says the same in everyday words, with the figures a listener can follow — token
counts, seconds, how many at once. Presentation mode shows the plain line; the window
shows both. Nothing here measures: every number is the diagnosis's evidence or the figure
set's (:func:`splitdesk.core.analyse.metrics.summarize`).

:func:`headline_verdict` is the headline's one verdict, in words and one number
("Parallel finished 4.5× sooner"), or why there is none ("no verdict: the server ran one
request at a time"); :func:`fair_mode_applies` says when offering *one after another*
is true (both ways shared a working server, and sharing changes the ratio).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from splitdesk.core.analyse.diagnosis import Diagnosis, common_failure, no_verdict_reason
from splitdesk.core.analyse.metrics import RunSummary, request_figures, summarize
from splitdesk.core.run.run_state import RequestTrace, RunState

#: Within this factor of 1 the two ways took the same time: "no speed-up".
SAME = 1.1

VerdictKind = Literal["sooner", "same", "later", "no-verdict"]


@dataclass(frozen=True)
class Verdict:
    """The headline's verdict: ``kind``, its ``text`` ("Parallel finished 4.5× sooner")
    and the speed-up it rests on (combined makespan / parallel makespan)."""

    kind: VerdictKind
    text: str
    speedup: float


def headline_verdict(speedup: float, diagnosis: Diagnosis | None, shared: bool) -> Verdict:
    """The verdict on ``speedup`` (module docstring): "Parallel finished 4.5× sooner",
    "no speed-up (1.07×)", "Combined finished 1.4× sooner", or — side by side on a server
    that did not batch (:func:`~splitdesk.core.analyse.diagnosis.no_verdict_reason`) — "4.5×
    side by side, no verdict: …" (the ratio left out where the server ran one request at
    a time: it measured the queue)."""
    reason = no_verdict_reason(diagnosis, shared)
    if reason is not None:
        queue = diagnosis is not None and diagnosis.one_at_a_time
        ratio = "" if queue else f"{speedup:.1f}× side by side, "
        return Verdict("no-verdict", f"{ratio}no verdict: {reason}", speedup)
    if speedup >= SAME:
        return Verdict("sooner", f"Parallel finished {speedup:.1f}× sooner", speedup)
    if speedup > 1 / SAME:
        return Verdict("same", f"no speed-up ({speedup:.2f}×)", speedup)
    return Verdict("later", f"Combined finished {1 / speedup:.1f}× sooner", speedup)


def fair_mode_applies(state: RunState, diagnosis: Diagnosis | None) -> bool:
    """Whether offering to run the two ways *one after another* is true: the run was side
    by side, finished (not stopped), every request answered, and the server was shared in
    a way that changes the ratio (no verdict: one at a time, compute-bound, or another
    shared bottleneck). Not after a failure banner, a stopped run, or a network-bound run
    (the network, not the server, set both times: both modes give the same ratio)."""
    if state.info is None or state.info.mode != "side-by-side" or diagnosis is None:
        return False
    if state.ended is None or state.ended.stopped:
        return False
    if any(r.outcome != "done" for r in state.requests) or common_failure(state.requests):
        return False
    return no_verdict_reason(diagnosis, True) is not None


def _n(x: float) -> str:
    return f"{round(x):,}"


def plain_words(state: RunState, summary: RunSummary, diagnosis: Diagnosis) -> str:
    """Why the run came out so, in everyday words (module docstring), from ``diagnosis``'s
    evidence and ``summary``'s figures; the diagnosis's own text when no plain reading is
    written for its code."""
    ev = diagnosis.evidence
    c, p = summary.groups.get("combined"), summary.groups.get("parallel")
    parallel = [r for r in state.requests if r.group == "parallel"]
    n = len(parallel)
    code = diagnosis.code
    if code == "batching" and c is not None and parallel:
        longest = max(request_figures(r).output_tokens for r in parallel)
        return (
            "The model writes one token per request per step. "
            f"One combined reply: {_n(c.output_tokens)} tokens in a row. "
            f"{n} parallel replies, written side by side: the longest {_n(longest)}."
        )
    if code == "one-at-a-time":
        return (
            "This server answers one request at a time: the "
            f"{n} parallel requests waited in line, one after another, so splitting saved "
            "no time."
        )
    if code == "rate-limited":
        return _rate_limited_words(parallel)
    if code == "network-bound":
        wait = float(ev.get("ttfb_median_s", 0.0) or 0.0)
        gen = float(ev.get("generation_s", 0.0) or 0.0)
        return (
            f"Most of each request's time was the trip over the network ({wait:.2f} s) "
            f"rather than writing the answer ({gen:.2f} s): sending at once overlaps the "
            "trips, but each answer still waits for its own."
        )
    if code == "compute-bound":
        ratio = float(ev.get("rate_ratio", 0.0) or 0.0)
        slower = 1 / ratio if ratio else 0.0
        return (
            f"This server has no spare capacity: with {ev.get('streams', n)} requests at "
            f"once each was written about {slower:.1f}× slower, so running them together "
            "saved little time."
        )
    if code == "prefill-bound":
        return (
            "Each parallel request had to read the whole shared document again before "
            "answering; reading it took longer than the answers saved."
        )
    if code == "chained":
        return (
            "These questions build on each other, so each request of the chain waited for "
            "the answer before it; one combined request answered them in one go."
        )
    if code == "failed":
        failure = common_failure(state.requests)
        cause = failure.message if failure is not None else "see each pane"
        return f"No request got an answer: {cause}"
    if code == "shortened-answers" and c is not None and p is not None:
        return (
            f"The combined reply was shorter ({_n(c.output_tokens)} tokens against "
            f"{_n(p.output_tokens)} for the parallel replies together): it finished sooner "
            "partly by saying less."
        )
    return diagnosis.text[:1].upper() + diagnosis.text[1:]


def _rate_limited_words(parallel: list[RequestTrace]) -> str:
    """The rate limit in plain words, counting every HTTP 429 a parallel request got: the
    ones refused in the end and the ones that waited (Retry-After) and asked again — a
    request answered after a refusal was refused too (the timeline shows its back-off)."""
    n = len(parallel)
    lost = [r for r in parallel if r.error is not None and r.error.status == 429]
    waited = [r for r in parallel if r.retries and r not in lost]
    hit = len(lost) + len(waited)
    refusals = len(lost) + sum(len(r.retries) for r in parallel)
    if not hit:  # the 429s went to the combined side only
        return "The provider refused requests (too many at once), but no parallel one."
    times = f", {refusals} refusals in all" if refusals > hit else ""
    head = f"The provider refused {hit} of the {n} parallel requests (too many at once{times})"
    backoff = sum(a.delay_s for r in waited for a in r.retries)
    if waited and lost:
        return (
            f"{head}: {len(waited)} waited {backoff:.1f} s in all and asked again, "
            f"{len(lost)} never got an answer."
        )
    if waited:
        they = "it" if len(waited) == 1 else "they"
        return f"{head}; {they} waited {backoff:.1f} s in all and asked again, so finished later."
    they = "it" if len(lost) == 1 else "they"
    return f"{head}; {they} never got an answer."


def measured_line(state: RunState, diagnosis: Diagnosis) -> str:
    """What presentation mode says beside a scenario's caption once its run has ended:
    the verdict with the numbers it rests on ("Parallel finished 4.5× sooner: 12.0 s
    against 2.7 s"), or why there is none; dependent questions: the chain's own finding.
    Never the engineer's Why line (the stage's summary says the plain reason under it).
    The text of :func:`measured_verdict`."""
    return measured_verdict(state, diagnosis).text


def measured_verdict(state: RunState, diagnosis: Diagnosis) -> Verdict:
    """:func:`measured_line` with its kind, so the caption colours a win as a win and
    nothing else ("no-verdict" for a chain, a failure or a run with no speed-up figure)."""
    if diagnosis.code in ("chained", "failed"):
        return Verdict("no-verdict", diagnosis.text[:1].upper() + diagnosis.text[1:], 1.0)
    summary = summarize(state)
    c, p = summary.groups.get("combined"), summary.groups.get("parallel")
    if summary.speedup is None or c is None or p is None:
        return Verdict("no-verdict", diagnosis.text[:1].upper() + diagnosis.text[1:], 1.0)
    shared = state.info is not None and state.info.mode == "side-by-side"
    v = headline_verdict(summary.speedup, diagnosis, shared)
    if v.kind == "no-verdict":
        return Verdict(v.kind, v.text[:1].upper() + v.text[1:], v.speedup)
    text = f"{v.text}: {c.makespan_s:.1f} s against {p.makespan_s:.1f} s"
    return Verdict(v.kind, text, v.speedup)
