"""Why a run came out the way it did: a diagnosis read from the trace alone.

The diagnosis never looks at a profile's name or the endpoint's URL, so the same rules
explain the built-in endpoint and a real server (vLLM, llama.cpp, a hosted API). It reads
the requests' own timestamps (:class:`~splitdesk.core.run.run_state.RequestTrace`, seconds
from the run's origin) and names the numbers each finding rests on. When no rule fits
clearly, it says "no clear pattern" rather than guess.

Rules, in the order they are tried (the first that holds is the headline's ``code``):

* ``rate-limited`` — some request was answered HTTP 429 (refused, or retried after a
  back-off): a rate limit capped concurrency.
* ``one-at-a-time`` — the parallel requests' generation intervals (first token → last
  token) hardly overlap (mean overlap ≤ :data:`ONE_AT_A_TIME_OVERLAP` streams) and their
  first tokens arrive staggered about one request's generation apart: the server ran one
  request at a time (no batching, e.g. ``max_num_seqs`` 1 or one llama.cpp slot).
* ``network-bound`` — every parallel request waited at least :data:`NETWORK_MIN_S` for its
  response headers (TTFB) and the median TTFB is at least :data:`NETWORK_SHARE` of the
  median generation time (TTFT → E2E): network latency dominates.
* ``prefill-bound`` — the parallel requests' prompts cost the server much more than the
  combined prompt (they computed at least :data:`PREFILL_READ_RATIO` × its computed prompt
  tokens, and at least :data:`PREFILL_MIN_TOKENS`: each read a shared document the
  combined request reads once, and no prefix cache served it) and the wait for the first
  token weighs on the run (median parallel TTFT ≥ :data:`PREFILL_TTFT_SHARE` of the
  parallel makespan): where the server reports prefill time, its queue and prefill make
  at least :data:`PREFILL_SERVER_SHARE` of that TTFT; where it does not, the parallel
  TTFT is at least :data:`PREFILL_TTFT_RATIO` × the combined request's.
* ``compute-bound`` — a stream decodes fewer tokens per second when others decode beside
  it: the per-stream decode rate measured while *k* ≥ 2 streams were generating is below
  :data:`COMPUTE_RATE_RATIO` of the rate while one stream was alone, and the k streams
  together decode less than :data:`COMPUTE_MAX_GAIN` × a lone stream's tokens per second.
* ``batching`` — the parallel streams started together (first tokens within
  :data:`BATCH_START_SHARE` of a request's generation time) and kept most of a lone
  stream's decode rate: the server decodes them in the same steps.
* ``shortened-answers`` — the combined reply's output tokens are below
  :data:`SHORTENED_RATIO` of the parallel replies' sum: the model shortened its answers
  (reported as a note beside another finding, or as the headline when nothing else fits).
* ``failed`` — every request failed (tried before the rules above, after ``rate-limited``):
  the text names the common cause, or each cause with its count.
* ``chained`` — dependent questions (``dependent`` mode): the combined request was measured
  against the chain of requests one after another, each waiting for the answer before it
  (group ``sequential``, no parallel requests); the text compares the two makespans.
* ``unclear`` — none of the above holds, or too little finished to tell.

Side by side (``shared``), both ways run on one server at once, so the combined request
competes with the parallel ones and the ratio of their makespans is inflated unless the
server batches: :func:`no_verdict_reason` says when a side-by-side speed-up is no verdict
(every diagnosis but ``batching``), for the window's headline and any other view.

Extra findings are kept as ``notes`` (``shortened-answers``, ``no-markers``: the combined
reply has text but none of the answer markers the template asks for).

The **decomposition** with the sequential baseline (:func:`decompose`): speed-up =
makespan(combined) / makespan(parallel) = prompt-shape factor × concurrency factor, where
prompt-shape factor = makespan(combined) / makespan(sequential) (shorter contexts and
answers when each question is asked alone) and concurrency factor = makespan(sequential) /
makespan(parallel) (what running the requests at once bought: batching).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from splitdesk.core.analyse.decode_rates import MIN_GAPS as MIN_GAPS
from splitdesk.core.analyse.decode_rates import DecodeRates, decode_rates
from splitdesk.core.analyse.decode_rates import (
    decode_rates_by_concurrency as decode_rates_by_concurrency,
)
from splitdesk.core.analyse.metrics import (
    GroupMetrics,
    group_metrics,
    prompt_tokens,
    request_figures,
)
from splitdesk.core.analyse.slots import read_slots, slot_speedup
from splitdesk.core.run.run_state import RequestTrace, RunState
from splitdesk.providers.base import RequestError

DiagnosisCode = Literal[
    "batching",
    "one-at-a-time",
    "slot-limited",
    "rate-limited",
    "network-bound",
    "compute-bound",
    "prefill-bound",
    "shortened-answers",
    "no-markers",
    "connection-wait",
    "failed",
    "chained",
    "unclear",
]
Evidence = dict[str, float | int | str | None]

#: mean number of streams generating at once at or below which requests ran one at a time
ONE_AT_A_TIME_OVERLAP = 1.25
#: first-token stagger, as a share of a request's generation time, that counts as queued
STAGGER_SHARE = 0.5
#: the smallest TTFB (seconds) that can be a network wait rather than server overhead
NETWORK_MIN_S = 0.1
#: median TTFB as a share of median generation time at which the network dominates
NETWORK_SHARE = 0.5
#: busy/lone per-stream decode rate below which a server is compute-bound …
COMPUTE_RATE_RATIO = 0.6
#: … when k streams together also decode less than this many times one stream's tokens/s
#: (a server whose streams slow down but still multiply its throughput is batching)
COMPUTE_MAX_GAIN = 2.0
#: spread of parallel first tokens, as a share of generation time, that counts as together
BATCH_START_SHARE = 0.25
#: combined/parallel output tokens below which the model shortened its answers
SHORTENED_RATIO = 0.7
#: prompt tokens the parallel side computed, as a multiple of the combined request's, from
#: which the parallel side read its prompts' shared part more than once
PREFILL_READ_RATIO = 1.5
#: … and at least this many computed prompt tokens in all (short prompts cost nothing)
PREFILL_MIN_TOKENS = 1000
#: median parallel TTFT as a share of the parallel makespan from which the wait counts
PREFILL_TTFT_SHARE = 0.2
#: the server's queue + prefill as a share of TTFT (median) that makes the wait prefill's
PREFILL_SERVER_SHARE = 0.5
#: without a server report: parallel median TTFT over the combined TTFT that points there
PREFILL_TTFT_RATIO = 2.0


@dataclass(frozen=True)
class Finding:
    """One finding: ``code``, a sentence naming the numbers it rests on, and those numbers
    (``evidence``: seconds, tokens, tokens per second, counts, ratios)."""

    code: DiagnosisCode
    text: str
    evidence: Evidence = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """``{"code", "text", "evidence"}`` as in the bench JSON's ``summary.diagnosis``."""
        return {"code": self.code, "text": self.text, "evidence": dict(self.evidence)}


@dataclass(frozen=True)
class Diagnosis(Finding):
    """The headline finding plus ``notes`` (further findings that also hold)."""

    notes: tuple[Finding, ...] = ()

    def to_json(self) -> dict[str, object]:
        """The ``summary.diagnosis`` object; ``notes`` only when there are some."""
        out = super().to_json()
        if self.notes:
            out["notes"] = [n.to_json() for n in self.notes]
        return out

    @property
    def one_at_a_time(self) -> bool:
        """True when the server ran the requests one at a time (no concurrency to measure)."""
        return self.code == "one-at-a-time"


@dataclass(frozen=True)
class Decomposition:
    """Speed-up = ``prompt_shape_factor`` × ``concurrency_factor`` (module docstring).

    ``prompt_shape_factor`` = makespan(combined) / makespan(sequential);
    ``concurrency_factor`` = makespan(sequential) / makespan(parallel); both unitless.
    """

    prompt_shape_factor: float
    concurrency_factor: float

    @property
    def speedup(self) -> float:
        """Their product: makespan(combined) / makespan(parallel)."""
        return self.prompt_shape_factor * self.concurrency_factor


def decompose(
    combined_s: float | None, parallel_s: float | None, sequential_s: float | None
) -> Decomposition | None:
    """The decomposition of the speed-up from three makespans (seconds); ``None`` when any is
    unknown or not positive."""
    if not combined_s or not parallel_s or not sequential_s:
        return None
    if min(combined_s, parallel_s, sequential_s) <= 0:
        return None
    return Decomposition(combined_s / sequential_s, sequential_s / parallel_s)


def decompose_groups(groups: dict[str, GroupMetrics]) -> Decomposition | None:
    """:func:`decompose` over a run's group metrics; ``None`` unless combined, parallel and
    sequential all finished with no failed or stopped request."""
    parts = [groups.get(g) for g in ("combined", "parallel", "sequential")]
    if any(g is None or g.failed or g.stopped or g.makespan_s is None for g in parts):
        return None
    c, p, s = (g.makespan_s if g else None for g in parts)
    return decompose(c, p, s)


# -- measurements over traces ------------------------------------------------------------------


def _ok(t: RequestTrace) -> bool:
    return t.outcome == "done" and t.first_text_t is not None and t.last_token_t is not None


def _interval(t: RequestTrace) -> tuple[float, float]:
    assert t.first_text_t is not None and t.last_token_t is not None
    return t.first_text_t, t.last_token_t


def _tokens(t: RequestTrace) -> int:
    return t.usage_output_tokens if t.usage_output_tokens is not None else len(t.event_times)


def mean_overlap(traces: Sequence[RequestTrace]) -> float | None:
    """Mean number of streams generating at once: the sum of the streams' generation times
    (first token → last token, seconds) over the length of their union. 1.0 when they ran
    one after another, ~N when N ran together. ``None`` for fewer than two finished
    streams or no generation time."""
    spans = sorted(_interval(t) for t in traces if _ok(t))
    if len(spans) < 2:
        return None
    total = sum(b - a for a, b in spans)
    union = 0.0
    cur_a, cur_b = spans[0]
    for a, b in spans[1:]:
        if a > cur_b:
            union += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    union += cur_b - cur_a
    return total / union if union > 0 else None


def _median(values: Iterable[float]) -> float | None:
    v = list(values)
    return statistics.median(v) if v else None


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# -- the rules -----------------------------------------------------------------------------------


def _rate_limited(traces: Sequence[RequestTrace]) -> Finding | None:
    refused = [t for t in traces if t.error is not None and t.error.status == 429]
    retried = [t for t in traces if t.retries]
    if not refused and not retried:
        return None
    par = [t for t in traces if t.group == "parallel"]
    par_refused = sum(1 for t in par if t in refused)
    backoff = sum(_waited_in_backoff(t) for t in traces)
    # only the parallel requests, on their own clock: the combined and sequential ones ran
    # in other phases (bench: other runs, each timed from its own origin)
    ran = _max_concurrent([t for t in par if _ok(t)])
    parts = []
    if refused:
        if par:
            parts.append(f"{par_refused} of {len(par)} parallel requests refused with HTTP 429")
            other = len(refused) - par_refused
            if other:
                parts.append(f"{other} other {'request' if other == 1 else 'requests'} too")
        else:
            parts.append(f"{_plural(len(refused), 'request')} refused with HTTP 429")
    if retried:
        parts.append(
            f"{_plural(len(retried), 'request')} retried after HTTP 429 "
            f"({backoff:.1f} s of back-off in all)"
        )
    cap = f" at about {ran} parallel {'request' if ran == 1 else 'requests'} at once" if ran else ""
    text = "; ".join(parts) + f": a rate limit capped concurrency{cap}."
    return Finding(
        "rate-limited",
        text,
        {
            "refused": len(refused),
            "parallel_refused": par_refused,
            "parallel_requests": len(par),
            "retried": len(retried),
            "backoff_s": _r(backoff),
            "max_concurrent": ran,
        },
    )


def _waited_in_backoff(trace: RequestTrace) -> float:
    """Seconds ``trace`` waited between a 429 and its next attempt, summed: each back-off
    up to the next send, or to the request's end when it ended waiting (a stopped run: a
    600 s ``Retry-After`` cut short after 5 s counts 5 s, not the 600 asked)."""
    total = 0.0
    for b in request_figures(trace).backoffs:
        end = b.end if b.end is not None else trace.t_end
        if end is not None:
            total += max(0.0, min(end - b.start, b.delay_s) if b.end is None else end - b.start)
    return total


def _max_concurrent(traces: Sequence[RequestTrace]) -> int:
    marks: list[tuple[float, int]] = []
    for t in traces:
        a, b = _interval(t)
        marks += [(a, 1), (b, -1)]
    best = cur = 0
    for _, d in sorted(marks, key=lambda m: (m[0], -m[1])):
        cur += d
        best = max(best, cur)
    return best


def _generation(t: RequestTrace) -> float:
    a, b = _interval(t)
    return b - a


def _one_at_a_time(
    phase: Sequence[RequestTrace],
    shared: bool,
    speedup: float | None,
    split: Decomposition | None = None,
) -> Finding | None:
    ok = [t for t in phase if _ok(t)]
    overlap = mean_overlap(ok)
    if overlap is None or overlap > ONE_AT_A_TIME_OVERLAP:
        return None
    firsts = sorted(t.first_text_t for t in ok if t.first_text_t is not None)
    gap = _median(b - a for a, b in itertools.pairwise(firsts))
    gen = _median(_generation(t) for t in ok)
    if gap is None or not gen or gap < STAGGER_SHARE * gen:
        return None
    who = "all requests" if shared else "the parallel requests"
    text = (
        f"first tokens arrived {gap:.2f} s apart, about one request's generation "
        f"({gen:.2f} s), and {overlap:.2f} streams ran at once on average: the server ran "
        f"{who} one at a time (no batching)"
    )
    if shared:
        text += "; both ways queued for the same slot, so side by side compares nothing."
    elif split is not None:  # the sequential baseline ran: say what the split says
        text += "; " + _split_words(split)
    elif speedup is not None and speedup >= 1.1:
        text += (
            f"; the {speedup:.1f}× speed-up came from the prompt's shape (shorter contexts "
            "and answers when asked one by one), not from running at once."
        )
    else:
        text += "."
    return Finding(
        "one-at-a-time",
        text,
        {
            "first_token_gap_s": _r(gap),
            "generation_s": _r(gen),
            "mean_overlap": _r(overlap, 2),
            "streams": len(ok),
        },
    )


def _split_words(split: Decomposition) -> str:
    """The one-at-a-time text's account of a speed-up the sequential baseline split: the
    same two factors the split line prints (two decimals), so the text never credits the
    prompt's shape with what the split gives to concurrency."""
    shape, conc = split.prompt_shape_factor, split.concurrency_factor
    text = (
        f"the {split.speedup:.2f}× speed-up is {shape:.2f}× from the prompt's shape "
        f"(combined → sequential) × {conc:.2f}× from concurrency (sequential → parallel)"
    )
    if conc >= 1.05:
        text += (
            ": with one request at a time, sending them at once only saved the time "
            "between requests sent one by one"
        )
    return text + "."


def _network_bound(par: Sequence[RequestTrace]) -> Finding | None:
    ok = [t for t in par if _ok(t) and t.t_headers is not None and t.t_send is not None]
    if not ok:
        return None
    ttfb = []
    for t in ok:
        assert t.t_headers is not None and t.t_send is not None
        ttfb.append(t.t_headers - t.t_send)
    gen = _median(_generation(t) for t in ok)
    lo, med = min(ttfb), statistics.median(ttfb)
    if lo < NETWORK_MIN_S or gen is None or med < NETWORK_SHARE * gen:
        return None
    return Finding(
        "network-bound",
        f"every request waited {lo:.2f} s or more for its response headers (median "
        f"{med:.2f} s) against {gen:.2f} s of generation: network latency dominates, so "
        "sending requests at once saves less.",
        {"ttfb_min_s": _r(lo), "ttfb_median_s": _r(med), "generation_s": _r(gen)},
    )


def _rates(phases: Sequence[Sequence[RequestTrace]]) -> DecodeRates | None:
    """The lone and batched decode rates (:mod:`splitdesk.core.analyse.decode_rates`)."""
    return decode_rates(phases)


def _rate_evidence(r: DecodeRates) -> Evidence:
    return {
        "lone_tok_s": _r(r.lone_tok_s, 1),
        "lone_from": r.lone_from,
        "busy_tok_s": _r(r.batched_tok_s, 1),
        "streams": r.streams,
        "rate_ratio": _r(r.ratio),
    }


def _rate_words(r: DecodeRates) -> str:
    """ "each batched stream at 52% of its lone rate (10.4 vs 20.0 tok/s)": the two rates
    named by their definitions (the batched per-stream rate, the lone one), never "a lone
    stream's speed" for the combined request's rate alone."""
    return (
        f"each batched stream at {r.ratio:.0%} of {r.lone_words} "
        f"({r.batched_tok_s:.3g} vs {r.lone_tok_s:.3g} tok/s)"
    )


def _thousands(n: int) -> str:
    return f"{n:,}"


def _prefill_bound(combined: Sequence[RequestTrace], par: Sequence[RequestTrace]) -> Finding | None:
    """The ``prefill-bound`` rule (module docstring), from usage and server timings."""
    ok = [t for t in par if _ok(t)]
    if len(ok) < 2 or len(ok) != len(par):
        return None
    figures = [request_figures(t) for t in ok]
    side = prompt_tokens(figures)
    if side is None or not side.complete or side.computed < PREFILL_MIN_TOKENS:
        return None
    comb = prompt_tokens([request_figures(t) for t in combined if _ok(t)])
    if comb is not None and side.computed < PREFILL_READ_RATIO * comb.computed:
        return None
    ttfts = [f.ttft_s for f in figures if f.ttft_s is not None]
    metrics = group_metrics(ok, "parallel", 0)
    if len(ttfts) != len(ok) or not metrics.makespan_s:
        return None
    med_ttft = statistics.median(ttfts)
    if med_ttft < PREFILL_TTFT_SHARE * metrics.makespan_s:
        return None
    n = len(ok)
    cached = side.cached or 0
    what = "the document" if side.context_chars else "their prompts"
    read = (
        f"the {n} parallel requests read {what} {n} times: "
        f"{_thousands(side.prompt)} prompt tokens, {_thousands(cached)} from cache"
    )
    if comb is not None:
        read += f" (the combined request: {_thousands(comb.prompt)}, once)"
    evidence: Evidence = {
        "parallel_requests": n,
        "parallel_prompt_tokens": side.prompt,
        "parallel_cached_tokens": side.cached,
        "parallel_computed_tokens": side.computed,
        "combined_prompt_tokens": comb.prompt if comb else None,
        "median_ttft_s": _r(med_ttft),
        "parallel_makespan_s": _r(metrics.makespan_s),
    }
    splits = [f.split for f in figures]
    if all(s is not None and s.server_s is not None for s in splits):
        prefill = statistics.median(s.prefill_s or 0.0 for s in splits if s is not None)
        server = statistics.median(s.server_s or 0.0 for s in splits if s is not None)
        share = statistics.median(
            (s.server_s or 0.0) / s.ttft_s for s in splits if s is not None and s.ttft_s > 0
        )
        if share < PREFILL_SERVER_SHARE:
            return None
        text = f"{read}; of each TTFT (median {med_ttft:.2f} s) prefill took {prefill:.2f} s"
        if server > prefill * 1.2:
            text += f" and the wait for the other requests' prefill {server - prefill:.2f} s"
        text += ": the run is prefill-bound."
        evidence.update(
            median_prefill_s=_r(prefill), median_server_s=_r(server), server_share=_r(share, 2)
        )
        return Finding("prefill-bound", text, evidence)
    comb_ttft = _median(
        f.ttft_s for f in (request_figures(t) for t in combined) if f.ttft_s is not None
    )
    if comb_ttft is None or med_ttft < PREFILL_TTFT_RATIO * comb_ttft:
        return None
    evidence["combined_ttft_s"] = _r(comb_ttft)
    return Finding(
        "prefill-bound",
        f"{read}; their TTFT (median {med_ttft:.2f} s) is {med_ttft / comb_ttft:.1f}× the "
        f"combined request's ({comb_ttft:.2f} s), and the server reports no prefill time: "
        "the run looks prefill-bound.",
        evidence,
    )


def _compute_bound(phases: Sequence[Sequence[RequestTrace]]) -> Finding | None:
    r = _rates(phases)
    if r is None:
        return None
    if r.ratio >= COMPUTE_RATE_RATIO or r.throughput_gain >= COMPUTE_MAX_GAIN:
        return None
    alone = "alone" if r.lone_from == "separate" else "(the combined request alone)"
    evidence = _rate_evidence(r)
    evidence["throughput_gain"] = _r(r.throughput_gain, 2)
    return Finding(
        "compute-bound",
        f"per-stream decode rate fell from {r.lone_tok_s:.3g} tok/s {alone} to "
        f"{r.batched_tok_s:.3g} tok/s with {r.streams} streams ({r.ratio:.0%}): the server "
        "is compute-bound, so running the requests at once adds only "
        f"{r.throughput_gain:.1f}× the throughput of one stream.",
        evidence,
    )


def _slot_limited(
    phase: Sequence[RequestTrace],
    phases: Sequence[Sequence[RequestTrace]],
    shared: bool,
    speedup: float | None,
    split: Decomposition | None = None,
) -> Finding | None:
    """``slot-limited``: the server ran at most k ≥ 2 streams at once and started each
    further one as another ended (:func:`splitdesk.core.analyse.slots.read_slots`). The
    text names k, how the first tokens came, the queue wait and, with the lone and batched
    decode rates, the speed-up k slots allow (:func:`~splitdesk.core.analyse.slots.
    slot_speedup`) beside the measured one."""
    reading = read_slots(phase)
    if reading is None:
        return None
    k, queued = reading.slots, len(reading.queued)
    par = sum(1 for t in phase if t.group == "parallel")
    text = f"at most {k} streams ran at once"
    if reading.clean_waves:
        text += f" (first tokens in waves of {' + '.join(map(str, reading.waves))})"
    who = "the other one" if queued == 1 else f"the other {queued} each"
    median = "" if queued == 1 else " (median)"
    text += (
        f"; {who} began {_short_span(reading.slot_handover_s)} after another ended, having "
        f"waited {reading.queue_wait_s:.2f} s for a slot{median}: the server batches up to "
        f"{k} sequences and queues the rest"
    )
    if reading.combined_in_slot:
        text += "; the combined request held one of the slots"
    evidence: Evidence = {
        "slots": k,
        "requests": reading.streams,
        "queued": queued,
        "queue_wait_s": _r(reading.queue_wait_s),
        "slot_handover_s": _r(reading.slot_handover_s),
        "waves": "+".join(map(str, reading.waves)),
    }
    r = _rates(phases)
    if r is not None:
        evidence.update(_rate_evidence(r))
        text += "; " + _rate_words(r)
    if not shared:
        # what k slots allow concurrency to buy (sequential → parallel); the rate ratio
        # only when it compares like with like (a separate request alone)
        known = r is not None and r.lone_from == "separate"
        expect = slot_speedup(par, k, r.ratio if r is not None and known else 1.0)
        evidence["slot_speedup"] = _r(expect, 2)
        rounds = -(-par // k)
        text += (
            f"; {par} questions on {k} slots take {_plural(rounds, 'round')}: about "
            f"{expect:.1f}× from concurrency expected"
        )
        if split is not None:
            text += f" (measured {split.concurrency_factor:.2f}× sequential → parallel)"
        elif speedup is not None:
            text += f" (the measured {speedup:.2f}× also holds the prompt's shape)"
    return Finding("slot-limited", text + ".", evidence)


#: the codes whose finding can name the server's configured limit (one slot or k)
LIMIT_CODES = ("slot-limited", "one-at-a-time")


def with_configured_limit(d: Diagnosis, slots: int, where: str) -> Diagnosis:
    """``d`` naming the concurrency limit the server says it was configured with
    (``slots``, read at ``where``: "llama.cpp server /props total_slots",
    :mod:`splitdesk.core.measure.server_limits`) beside what the trace showed; ``d``
    unchanged unless its code is one of :data:`LIMIT_CODES`. Evidence gains
    ``configured_slots`` and ``configured_from``."""
    if d.code not in LIMIT_CODES:
        return d
    seen = d.evidence.get("slots", 1)
    agree = "as measured" if seen == slots else f"while at most {seen} ran at once here"
    text = d.text.rstrip(".") + f"; the server is configured for {slots} ({where}), {agree}."
    evidence = dict(d.evidence, configured_slots=slots, configured_from=where)
    return Diagnosis(d.code, text, evidence, d.notes)


def configured_limit_json(d: dict[str, Any], slots: int, where: str) -> dict[str, Any]:
    """:func:`with_configured_limit` of a diagnosis' JSON (``summary.diagnosis``)."""
    notes = tuple(
        Finding(n["code"], n["text"], n.get("evidence") or {}) for n in d.get("notes") or ()
    )
    found = Diagnosis(d["code"], d["text"], d.get("evidence") or {}, notes)
    return with_configured_limit(found, slots, where).to_json()


def _short_span(seconds: float) -> str:
    """A short time apart as read aloud: ``"< 1 ms"``, ``"12 ms"`` under 0.1 s (``"0.00 s"``
    read as no gap at all), else ``"0.25 s"``."""
    if seconds < 0.0005:
        return "< 1 ms"
    if seconds < 0.1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def _batching(
    phases: Sequence[Sequence[RequestTrace]], par: Sequence[RequestTrace]
) -> Finding | None:
    ok = [t for t in par if _ok(t)]
    if len(ok) < 2:
        return None
    firsts = [t.first_text_t for t in ok if t.first_text_t is not None]
    spread = max(firsts) - min(firsts)
    gen = _median(_generation(t) for t in ok)
    if not gen or spread > BATCH_START_SHARE * gen:
        return None
    r = _rates(phases)
    evidence: Evidence = {"first_token_spread_s": _r(spread), "generation_s": _r(gen)}
    text = (
        f"the {len(ok)} parallel requests streamed together (first tokens within "
        f"{_short_span(spread)} of each other)"
    )
    if r is not None:
        evidence.update(_rate_evidence(r))
        text += ", " + _rate_words(r)
    return Finding("batching", text + ": the server batches them.", evidence)


def _speedup(combined: Sequence[RequestTrace], par: Sequence[RequestTrace]) -> float | None:
    """makespan(combined) / makespan(parallel) when every request of both finished."""
    if not combined or not par or not all(_ok(t) for t in (*combined, *par)):
        return None
    c = group_metrics(combined, "combined", len(combined[0].questions))
    p = group_metrics(par, "parallel", len(par))
    if not c.makespan_s or not p.makespan_s:
        return None
    return c.makespan_s / p.makespan_s


def _split_of(traces: Sequence[RequestTrace]) -> Decomposition | None:
    """:func:`decompose_groups` of one run's traces (combined, parallel and sequential all
    present and finished), else ``None``."""
    n = max((len(t.questions) for t in traces), default=0)
    groups = {
        g: group_metrics(mine, g, n)
        for g in ("combined", "parallel", "sequential")
        if (mine := [t for t in traces if t.group == g])
    }
    return decompose_groups(groups)


def _shortened(combined: Sequence[RequestTrace], par: Sequence[RequestTrace]) -> Finding | None:
    if not combined or not par or not all(_ok(t) for t in (*combined, *par)):
        return None
    c = sum(_tokens(t) for t in combined)
    p = sum(_tokens(t) for t in par)
    if p <= 0 or c >= SHORTENED_RATIO * p:
        return None
    return Finding(
        "shortened-answers",
        f"the combined reply has {c} output tokens against {p} in the parallel replies "
        f"({c / p:.0%}): the model shortened its answers when asked everything at once.",
        {"combined_tokens": c, "parallel_tokens": p, "ratio": _r(c / p)},
    )


def _no_markers(combined: Sequence[RequestTrace]) -> Finding | None:
    for t in combined:
        if no_markers(t):
            return Finding(
                "no-markers",
                f"the combined reply has no answer markers ({t.text_len} characters, none "
                "of the template's headings): when each answer started cannot be told.",
                {"characters": t.text_len, "questions": len(t.questions)},
            )
    return None


#: a connection's warm-up this much longer than the fastest one's (seconds) …
ACCEPT_EXTRA_S = 0.5
#: … and this many times as long waited for the server to take it up
ACCEPT_RATIO = 5.0


def _connection_wait(phases: Sequence[Sequence[RequestTrace]]) -> Finding | None:
    """``connection-wait``: some connections' warm-ups took far longer than the fastest
    one's (at least :data:`ACCEPT_EXTRA_S` more and :data:`ACCEPT_RATIO` times as long):
    the server answered on them only when it took them up (a server with a fixed pool of
    connection handlers, each held by an idle keep-alive connection until it times out,
    as llama.cpp's HTTP threads are), and their phase waited for them before sending."""
    waits: list[tuple[RequestTrace, float]] = []
    for phase in phases:
        for t in phase:
            if t.t_conn_start is not None and t.t_conn_ready is not None:
                waits.append((t, t.t_conn_ready - t.t_conn_start))
    if len(waits) < 2:
        return None
    fastest = min(w for _, w in waits)
    slow = [
        (t, w)
        for t, w in waits
        if w - fastest >= ACCEPT_EXTRA_S and w >= ACCEPT_RATIO * max(fastest, 1e-3)
    ]
    if not slow:
        return None
    med = statistics.median(w for _, w in slow)
    others = max(w for t, w in waits if all(t is not s for s, _ in slow))
    who = ", ".join(_who(t) for t, _ in slow[:4]) + (" …" if len(slow) > 4 else "")
    return Finding(
        "connection-wait",
        f"{len(slow)} of {len(waits)} connections waited {med:.2f} s (median) before the "
        f"server answered on them ({who}), the others within {_short_span(others)}: the "
        "server took them up late (all its connection handlers busy, e.g. held by idle "
        "keep-alive connections), so their requests went out that much later.",
        {
            "waited": len(slow),
            "connections": len(waits),
            "connection_wait_s": _r(med),
            "others_within_s": _r(others),
        },
    )


def _who(t: RequestTrace) -> str:
    """A request as the diagnosis names it: "combined", "parallel Q3", "sequential Q1"."""
    return "combined" if t.group == "combined" else f"{t.group} Q{t.questions[0] + 1}"


def _chained(
    combined: Sequence[RequestTrace], chain: Sequence[RequestTrace], failed: int
) -> Finding:
    """Dependent questions: the combined request's makespan against the chain's (the
    requests one after another, each sent once the one before it had answered)."""
    if not all(_ok(t) for t in (*combined, *chain)):
        return Finding(
            "unclear",
            "no comparison: the combined request or the chain did not finish"
            + (f" ({_plural(failed, 'request')} failed)." if failed else "."),
            {"failed": failed},
        )
    c = group_metrics(combined, "combined", len(combined[0].questions)).makespan_s
    q = group_metrics(chain, "sequential", len(chain)).makespan_s
    if c is None or q is None:
        return Finding("unclear", "no comparison: nothing was generated.", {"failed": failed})
    faster = "sooner" if c < q else "later"
    return Finding(
        "chained",
        f"the combined request finished in {c:.1f} s, the chain of "
        f"{_plural(len(chain), 'request')} in {q:.1f} s — combining finished "
        f"{abs(q - c):.1f} s {faster}.",
        {"combined_s": _r(c), "chain_s": _r(q), "chain_requests": len(chain)},
    )


def diagnose(
    phases: Sequence[Sequence[RequestTrace]],
    shared: bool = False,
    *,
    split: Decomposition | None = None,
) -> Diagnosis:
    """The diagnosis of a run (module docstring).

    ``phases``: the run's requests, grouped into phases that each ran on the server at
    their own time (traces within a phase share one clock; a window run's phases, or
    ``splitdesk bench``'s separate runs). ``shared``: combined and parallel ran at the same
    time (side by side). ``split``: the speed-up's decomposition the caller prints beside
    the diagnosis (bench: over the repeats' medians), so the text uses the same factors;
    by default the one of these traces when they hold a sequential baseline. Never raises
    on partial or odd traces: too little data gives ``unclear``.
    """
    traces = [t for ph in phases for t in ph]
    combined = [t for t in traces if t.group == "combined"]
    par = [t for t in traces if t.group == "parallel"]
    par_phase = next((ph for ph in phases if any(t.group == "parallel" for t in ph)), ())

    notes = [
        f
        for f in (_shortened(combined, par), _no_markers(combined), _connection_wait(phases))
        if f is not None
    ]

    def result(f: Finding) -> Diagnosis:
        rest = tuple(n for n in notes if n.code != f.code)
        return Diagnosis(f.code, f.text, f.evidence, rest)

    if any(t.outcome is None for t in traces):
        return Diagnosis("unclear", "no diagnosis yet: requests are still running.", {})
    limited = _rate_limited(traces)
    if limited is not None:
        return result(limited)
    stopped = sum(1 for t in traces if t.outcome == "stopped")
    if stopped:
        return Diagnosis(
            "unclear",
            f"no diagnosis: the run was stopped ({_plural(stopped, 'request')} cut short).",
            {"stopped": stopped},
        )
    failed = [t for t in traces if t.outcome == "failed"]
    if failed and len(failed) == len(traces):
        causes = failure_causes(failed)
        if len(causes) == 1:
            text = f"every request failed ({len(failed)} of {len(traces)}): {causes[0][0]}"
        else:
            text = f"every request failed ({len(failed)} of {len(traces)}): " + "; ".join(
                f"{_plural(n, 'request')}: {message}" for message, n in causes
            )
        return result(
            Finding(
                "failed",
                text if text.endswith((".", "?", "!")) else text + ".",
                {"failed": len(failed), "causes": len(causes)},
            )
        )
    chain = [t for t in traces if t.group == "sequential"]
    if combined and chain and not par:  # dependent questions: no parallel side to read
        return result(_chained(combined, chain, len(failed)))
    if len([t for t in par if _ok(t)]) < 2:
        text = "no clear pattern: fewer than two parallel requests finished"
        if failed:
            text += f" ({_plural(len(failed), 'request')} failed)"
        return result(Finding("unclear", text + ".", {"failed": len(failed)}))
    for finding in (
        _one_at_a_time(par_phase, shared, _speedup(combined, par), split or _split_of(traces)),
        _network_bound(par),
        # the server's own prefill and queue figures, when it reports them, decide first: a
        # chunked prefill of one document N times also staggers first tokens
        _prefill_bound(combined, par),
        _slot_limited(
            par_phase, phases, shared, _speedup(combined, par), split or _split_of(traces)
        ),
        _compute_bound(phases),
        _batching(phases, par),
    ):
        if finding is not None:
            return result(finding)
    if notes and notes[0].code == "shortened-answers":
        return result(notes[0])
    overlap = mean_overlap(par_phase)
    firsts = [t.first_text_t for t in par if t.first_text_t is not None]
    spread = max(firsts) - min(firsts) if firsts else None
    return result(
        Finding(
            "unclear",
            "no clear pattern: "
            + (f"{overlap:.1f} streams ran at once on average, " if overlap else "")
            + (f"first tokens spread over {spread:.2f} s." if spread is not None else ""),
            {"mean_overlap": _r(overlap, 2), "first_token_spread_s": _r(spread)},
        )
    )


def diagnose_state(state: RunState) -> Diagnosis:
    """:func:`diagnose` of a window run: its phases from the traces, ``shared`` when the run
    was side by side."""
    phases: dict[int, list[RequestTrace]] = {}
    for t in state.requests:
        phases.setdefault(t.phase, []).append(t)
    shared = state.info is not None and state.info.mode == "side-by-side"
    return diagnose([phases[k] for k in sorted(phases)], shared)


def diagnose_repeats(
    repeats: Sequence[Sequence[Sequence[RequestTrace]]],
    whole: Sequence[RunState | None] | None = None,
    split: Decomposition | None = None,
) -> Diagnosis:
    """The diagnosis over ``splitdesk bench``'s repeats: each repeat's runs are phases
    (each with its own clock); the most common code wins and its first diagnosis is
    returned, with ``repeats_agreeing`` ("2 of 3") added to its evidence when there were
    several repeats. ``whole``: per repeat, the window run its sides were split from
    (``None``: a bench repeat), diagnosed as the window diagnoses it
    (:func:`diagnose_state`: its own phases, shared when side by side), so an exported
    recording says what the window showing it says. ``split``: the decomposition printed
    beside a bench's diagnosis (:func:`diagnose`)."""
    states = list(whole) if whole is not None else [None] * len(repeats)
    found = [
        diagnose_state(state) if state is not None else diagnose(phases, split=split)
        for phases, state in zip(repeats, states, strict=True)
        if phases
    ]
    if not found:
        return Diagnosis("unclear", "no clear pattern: nothing ran.", {})
    codes = [d.code for d in found]
    best = max(codes, key=codes.count)
    d = next(d for d in found if d.code == best)
    if len(found) > 1:
        evidence = dict(d.evidence)
        evidence["repeats_agreeing"] = f"{codes.count(best)} of {len(found)}"
        d = Diagnosis(d.code, d.text, evidence, d.notes)
    return d


def bench_summary(
    repeats: Sequence[Sequence[Sequence[RequestTrace]]],
    whole: Sequence[RunState | None] | None = None,
) -> dict[str, object]:
    """The bench JSON's ``summary`` additions: ``diagnosis`` (:meth:`Diagnosis.to_json`) and,
    when a repeat ran combined, parallel and sequential with every request done,
    ``prompt_shape_factor`` and ``concurrency_factor``: :func:`decompose` of the median
    makespans over those repeats, so they are the ratios of the medians the table prints
    (their product is median(combined) / median(parallel), which with several repeats may
    differ from ``speedup``, the median of each repeat's ratio). When some repeats had to be
    left out, ``split_note`` says over how many the factors were taken."""
    out: dict[str, object] = {}
    complete: list[dict[str, GroupMetrics]] = []
    ran = 0
    for phases in repeats:
        groups: dict[str, GroupMetrics] = {}
        for phase in phases:
            if phase:
                name = phase[0].group
                n = len({q for t in phase for q in t.questions})
                groups[name] = group_metrics(phase, name, n)
        ran += bool(groups)
        if decompose_groups(groups) is not None:
            complete.append(groups)
    dec = None
    if complete:
        c, p, s = (
            statistics.median(g[name].makespan_s or 0.0 for g in complete)
            for name in ("combined", "parallel", "sequential")
        )
        dec = decompose(c, p, s)
        if dec is not None:
            out["prompt_shape_factor"] = round(dec.prompt_shape_factor, 4)
            out["concurrency_factor"] = round(dec.concurrency_factor, 4)
            if len(complete) < ran:
                out["split_note"] = (
                    f"over the {len(complete)} of {ran} repeats where every request succeeded"
                )
    # the text's account of the speed-up uses the factors printed beside it
    return {"diagnosis": diagnose_repeats(repeats, whole, dec).to_json(), **out}


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The bench table's diagnosis lines, read from the JSON ``summary`` (so the printed
    line and ``summary.diagnosis`` are one text): the diagnosis, its notes and, with the
    sequential baseline, the decomposition."""
    lines = []
    d = summary.get("diagnosis")
    if isinstance(d, dict):
        lines.append(f"{'Diagnosis:':22}{d.get('text', '')}")
        for note in d.get("notes") or ():
            lines.append(f"{'':22}also: {note.get('text', '')}")
    shape, conc = summary.get("prompt_shape_factor"), summary.get("concurrency_factor")
    if shape is not None and conc is not None:
        line = (
            f"{'Speed-up split:':22}{shape:.2f}× prompt shape (combined → sequential) × "
            f"{conc:.2f}× concurrency (sequential → parallel) = {shape * conc:.2f}×"
        )
        if int(summary.get("repeats") or 1) > 1:  # bench_summary: ratios of the medians
            line += " (ratios of the median latencies"
            note = summary.get("split_note")
            line += f", {note})" if note else ")"
        lines.append(line)
    return lines


# -- what the window says about failures and waits -----------------------------------------------


def failure_summary(traces: Sequence[RequestTrace]) -> str | None:
    """How many of ``traces`` failed and how, for a headline in place of a time:
    ``"4 of 5 refused (HTTP 429)"``, ``"5 of 5 failed (HTTP 401)"``, ``"2 of 5 failed
    (timeout)"``, ``"3 of 5 failed"`` (mixed causes); ``None`` when none failed."""
    failed = [t for t in traces if t.outcome == "failed"]
    if not failed:
        return None
    errors = [t.error for t in failed]
    statuses = {e.status if e else None for e in errors}
    kinds = {str(e.kind) if e else None for e in errors}
    head = f"{len(failed)} of {len(traces)}"
    if statuses == {429}:
        return f"{head} refused (HTTP 429)"
    if None not in statuses:
        return f"{head} failed ({', '.join(f'HTTP {x}' for x in sorted(s for s in statuses if s))})"
    if len(kinds) == 1 and (kind := kinds.pop()) in _FAILURE_WORDS:
        return f"{head} failed ({_FAILURE_WORDS[kind]})"
    return f"{head} failed"


def failure_causes(traces: Sequence[RequestTrace]) -> list[tuple[str, int]]:
    """The failed requests' error messages, each once with how many requests failed with
    it, in the order first seen: ``[("cannot connect to 127.0.0.1:9 …", 5)]``."""
    counts: dict[str, int] = {}
    for t in traces:
        if t.outcome == "failed":
            message = t.error.message if t.error else "unknown error"
            counts[message] = counts.get(message, 0) + 1
    return list(counts.items())


def failure_word(error: RequestError | None) -> str:
    """A failed request's state in a few words, for a pane header: "refused (HTTP 429)",
    "HTTP 401", "cannot connect", "timed out", "broken stream", "server error", "failed"."""
    if error is None:
        return "failed"
    if error.status == 429:
        return "refused (HTTP 429)"
    if error.status:
        return f"HTTP {error.status}"
    return _FAILURE_WORDS.get(str(error.kind), "failed")


_FAILURE_WORDS = {
    "timeout": "timed out",
    "connect": "cannot connect",
    "protocol": "broken stream",
    "server": "server error",
}


def no_verdict_reason(d: Diagnosis | None, shared: bool) -> str | None:
    """Why a side-by-side speed-up is no verdict on parallel requests, or ``None`` when it
    is one (module docstring): ``shared`` (side by side) and the diagnosis is not
    ``batching``. Side by side, the combined request and the parallel ones share the
    server, so unless the server batches them, the makespan ratio mostly measures that
    competition (a compute-bound server showed 2.1× side by side, 1.21× one after
    another). Runs measured apart (``shared`` False, as in ``splitdesk bench``) always
    give a verdict. Before the run is diagnosed (``d`` None) there is nothing to judge."""
    if not shared or d is None or d.code in ("batching", "network-bound"):
        # network-bound: the network set both ways' times, not the shared server (both
        # modes gave the same 2.4× on the slow-network profile)
        return None
    if d.code == "one-at-a-time":
        return "the server ran one request at a time"
    if d.code == "compute-bound":
        return "both ways shared a compute-bound server"
    if d.code == "slot-limited":
        return f"both ways shared the server's {d.evidence.get('slots')} slots"
    return "both ways shared the server"


def common_failure(traces: Sequence[RequestTrace]) -> RequestError | None:
    """The one error every request of a finished run failed with (same kind and status:
    connection refused, HTTP 401 …), so the window shows it once instead of once per pane;
    ``None`` when fewer than two requests, any request did not fail, or causes differ."""
    if len(traces) < 2 or any(t.outcome != "failed" or t.error is None for t in traces):
        return None
    first = traces[0].error
    assert first is not None
    if any(
        t.error is None or (t.error.kind, t.error.status) != (first.kind, first.status)
        for t in traces
    ):
        return None
    return first


WaitKind = Literal["queued", "network", "backoff", "prefill", "stalled"]


@dataclass(frozen=True)
class Waiting:
    """Why a live request shows nothing new, and for how long (seconds, up to ``now``).

    ``kind``: ``backoff`` (waiting out a 429's Retry-After), ``network`` (sent, no response
    headers yet: the round trip and the server's first reply), ``queued`` (headers in, no
    token, while ``ahead`` other requests of its phase stream: the server is serving them
    first), ``prefill`` (headers in, no token, nobody else streaming: the server is reading
    the prompt), ``stalled`` (streaming, but no event for far longer than its usual gap).
    """

    kind: WaitKind
    seconds: float
    ahead: int = 0

    @property
    def label(self) -> str:
        """The pane's wording: "queued behind 2 requests · waiting 1.8 s", "stalled 3.2 s"."""
        s = f"{self.seconds:.1f} s"
        if self.kind == "stalled":
            return f"stalled {s}"
        cause = {
            "backoff": "rate-limit back-off",
            "network": "network round trip",
            "prefill": "prefill",
            "queued": f"queued behind {_plural(self.ahead, 'request')}",
        }[self.kind]
        return f"{cause} · waiting {s}"


#: the shortest wait for a first token, after others' began, that counts as queueing
QUEUE_MIN_S = 0.05
#: a streaming request is stalled after this many seconds without an event …
STALL_MIN_S = 1.0
#: … and at least this many times its usual gap between events
STALL_GAPS = 10.0


def waiting_state(trace: RequestTrace, peers: Sequence[RequestTrace], now: float) -> Waiting | None:
    """What ``trace`` is waiting for at ``now`` (seconds from the run origin), or ``None``
    when it is not waiting (not sent, streaming steadily, or over). ``peers``: the requests
    of the same run (its phase is picked from them)."""
    if trace.outcome is not None or trace.t_send is None:
        return None
    retries = trace.retries
    if retries and trace.attempts <= retries[-1].attempt:
        return Waiting("backoff", max(0.0, now - retries[-1].t))
    if trace.first_text_t is None and trace.first_tool_t is None:
        sent = trace.t_send
        for r in retries:  # the attempt in flight was sent after the last back-off
            sent = max(sent, r.t + r.delay_s)
        if trace.t_headers is None or trace.t_headers < sent:
            return Waiting("network", max(0.0, now - sent))
        ahead = sum(
            1
            for p in peers
            if p is not trace
            and p.phase == trace.phase
            and p.outcome is None
            and (p.first_text_t is not None or p.first_tool_t is not None)
        )
        waited = max(0.0, now - trace.t_headers)
        kind: WaitKind = "queued" if ahead and waited >= QUEUE_MIN_S else "prefill"
        return Waiting(kind, waited, ahead if kind == "queued" else 0)
    last = trace.last_token_t
    if last is None:
        return None
    times = trace.event_times
    usual = (times[-1] - times[0]) / (len(times) - 1) if len(times) >= 2 else 0.0
    quiet = now - last
    if quiet >= max(STALL_MIN_S, STALL_GAPS * usual):
        return Waiting("stalled", quiet)
    return None


def explain_wait(trace: RequestTrace, peers: Sequence[RequestTrace]) -> str | None:
    """What a request's wait before its first token was made of, after the fact, for the
    timeline's wait bar: the response headers' arrival (network round trip and the server's
    first reply) and the rest until the first token, named ``queued behind N requests`` when
    N other requests of its phase were generating in that time, else ``prefill``. Seconds
    from the answered attempt's send (a refused attempt's wait is its own bar). ``None``
    before the first token or without response headers."""
    first = trace.first_text_t if trace.first_text_t is not None else trace.first_tool_t
    sent = trace.t_send
    if first is None or sent is None or trace.t_headers is None:
        return None
    for r in trace.retries:  # the answered attempt was sent after the last back-off
        sent = max(sent, r.t + r.delay_s)
    headers = trace.t_headers
    if headers < sent or headers > first:
        return None
    parts = [f"headers after {headers - sent:.2f} s (network round trip)"]
    rest = first - headers
    # a peer was served first when its first token came clearly before this one's (a
    # batching server starts them all within a step or two) and it still ran after the
    # headers came
    lead = max(QUEUE_MIN_S, 0.1 * (first - headers))
    ahead = sum(
        1
        for p in peers
        if p is not trace
        and p.phase == trace.phase
        and p.first_text_t is not None
        and p.last_token_t is not None
        and p.first_text_t < first - lead
        and p.last_token_t > headers
    )
    if ahead and rest > 0:
        parts.append(f"then {rest:.2f} s queued behind {_plural(ahead, 'request')}")
    else:
        parts.append(f"then {rest:.2f} s prefill")
    return " · ".join(parts)


def no_markers(trace: RequestTrace) -> bool:
    """A finished combined reply with text but none of the template's answer markers: when
    each answer started cannot be told (the timeline's lane says so)."""
    return (
        trace.group == "combined"
        and len(trace.questions) > 1
        and trace.outcome == "done"
        and trace.text_len > 0
        and not trace.sections
    )
