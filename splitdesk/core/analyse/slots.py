"""Slot-limited batching, read from a phase's trace: at most *k* streams decoded at once.

Most real servers batch up to a configured number of sequences and queue the rest: vLLM's
``max_num_seqs``, SGLang's ``max_running_requests``, TGI's ``max_batch_size``, llama.cpp's
``-np`` slots, ``OLLAMA_NUM_PARALLEL``. Sent N > k requests at once, such a server starts
k streams together and each further stream only when one ends, so the first tokens arrive
in waves (llama.cpp with 4 slots and 8 questions side by side: 3 + 3 + 2, the combined
request holding the fourth slot). :func:`read_slots` finds that pattern from the traces
alone (seconds from the run's origin, one clock per phase):

* **slots** *k*: the most streams generating at once (first token → last token), an end
  and a start at the same instant counted as a hand-over, not an overlap;
* **queued** streams: those whose first token came after another stream of the phase had
  ended, though they were sent before that end: they waited for a slot;
* each queued stream must begin *as a slot frees*: the i-th queued stream (by first
  token) takes the slot the i-th end freed (first come, first served), and its first token
  comes within :func:`start_tolerance_s` after that end, having waited at least
  :data:`MIN_WAIT_SHARE` of that stream's generation, itself at least
  :data:`MIN_SLOT_GENERATION_S` (shorter, scheduling hiccups look like queueing), for at least
  :data:`QUEUED_SHARE` of the queued streams; when the first slot freed, k streams were
  generating (the server was full);
* **queue wait** of a queued stream: from its send to the end that freed its slot
  (seconds), the median over the queued ones is reported;
* **waves**: the parallel requests' first tokens grouped where they come within the start
  tolerance of each other (sizes, in order), for the text when they are clean.

With one slot the server runs one request at a time: the diagnosis' ``one-at-a-time``
rule says so first, so :func:`read_slots` needs *k* ≥ 2 and *k* below the number of
streams. :func:`slot_speedup` is the speed-up *k* slots allow, which the diagnosis and the
sweep (:mod:`splitdesk.core.analyse.sweep_reading`) set beside the measured one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from splitdesk.core.run.run_state import RequestTrace

#: the share of queued streams that must begin as a slot frees
QUEUED_SHARE = 0.75
#: the shortest tolerance (seconds) between a slot freeing and the next stream's first token
MIN_START_TOLERANCE_S = 0.05
#: the tolerance as a share of the median generation time (first → last token) …
START_SHARE_OF_GENERATION = 0.15
#: … or as a multiple of the shortest attempt TTFT (a queued stream's own prefill)
START_TTFT_MULTIPLE = 3.0
#: the shortest generation (seconds) of a stream whose end can be told to have freed a slot:
#: shorter, a stream started late by the client's or the machine's scheduling looks queued
MIN_SLOT_GENERATION_S = 0.1
#: a queued stream waited at least this share of the generation of the stream whose slot
#: it took (it was sent before that stream began, or soon after)
MIN_WAIT_SHARE = 0.5


@dataclass(frozen=True)
class SlotReading:
    """A phase that ran at most ``slots`` streams at once (module docstring).

    ``streams``: finished streams of the phase; ``queued``: the request indices that waited
    for a slot; ``queue_wait_s``: the median of their waits (send → the slot freeing,
    seconds); ``slot_handover_s``: the median time from a slot freeing to the queued
    stream's first token (its prefill, seconds); ``waves``: first-token wave sizes in
    order (``(3, 3, 2)``); ``combined_in_slot``: a combined request of the same phase held
    one of the slots (side by side)."""

    slots: int
    streams: int
    queued: tuple[int, ...]
    queue_wait_s: float
    slot_handover_s: float
    waves: tuple[int, ...]
    combined_in_slot: bool

    @property
    def clean_waves(self) -> bool:
        """The first tokens came in waves of about ``slots`` each (every wave but the last
        holds at least two streams), so "waves of 4 + 4" describes them."""
        return len(self.waves) >= 2 and all(w >= 2 for w in self.waves[:-1])


def _ok(t: RequestTrace) -> bool:
    return t.outcome == "done" and t.first_text_t is not None and t.last_token_t is not None


def _span(t: RequestTrace) -> tuple[float, float]:
    assert t.first_text_t is not None and t.last_token_t is not None
    return t.first_text_t, t.last_token_t


def max_streams_at_once(traces: Sequence[RequestTrace]) -> int:
    """The most of ``traces`` generating at once (first token → last token); an end and a
    start at the same instant are a hand-over (the end is counted first)."""
    marks: list[tuple[float, int]] = []
    for t in traces:
        if _ok(t):
            a, b = _span(t)
            marks += [(a, 1), (b, -1)]
    best = cur = 0
    for _, d in sorted(marks):  # (t, -1) sorts before (t, +1): ends first
        cur += d
        best = max(best, cur)
    return best


def start_tolerance_s(traces: Sequence[RequestTrace]) -> float:
    """How soon after a slot frees a queued stream's first token must come to count as
    taking that slot (seconds): the largest of :data:`MIN_START_TOLERANCE_S`,
    :data:`START_SHARE_OF_GENERATION` × the median generation time and
    :data:`START_TTFT_MULTIPLE` × the shortest attempt TTFT (a queued stream still has
    its own prompt to read once it has a slot)."""
    ok = [t for t in traces if _ok(t)]
    if not ok:
        return MIN_START_TOLERANCE_S
    gen = statistics.median(b - a for a, b in map(_span, ok))
    ttfts = [
        t.first_text_t - t.t_attempt_send
        for t in ok
        if t.first_text_t is not None and t.t_attempt_send is not None
    ]
    ttft = min(ttfts) if ttfts else 0.0
    return max(MIN_START_TOLERANCE_S, START_SHARE_OF_GENERATION * gen, START_TTFT_MULTIPLE * ttft)


def _waves(firsts: list[float], tol: float) -> tuple[int, ...]:
    sizes: list[int] = []
    prev: float | None = None
    for f in sorted(firsts):
        if prev is None or f - prev > tol:
            sizes.append(0)
        sizes[-1] += 1
        prev = f
    return tuple(sizes)


def read_slots(phase: Sequence[RequestTrace]) -> SlotReading | None:
    """The :class:`SlotReading` of one phase's traces (one clock), or ``None`` when they do
    not show a slot limit (module docstring): fewer than three finished streams, at most
    one or all of them at once, no stream that waited for another's end, or queued streams
    that did not begin as slots freed."""
    ok = [t for t in phase if _ok(t)]
    if len(ok) < 3 or not any(t.group == "parallel" for t in ok):
        return None
    k = max_streams_at_once(ok)
    if k < 2 or k >= len(ok):
        return None
    tol = start_tolerance_s(ok)
    spans = {t.req: _span(t) for t in ok}
    gen_of_end = {b: b - a for a, b in spans.values()}
    ends = sorted(b for _, b in spans.values())
    first_end = ends[0]
    # a stream whose first token came after some stream of its phase ended waited for a
    # slot; the i-th of them (by first token) took the slot the i-th end freed (FIFO)
    queued = sorted((t for t in ok if spans[t.req][0] > first_end), key=lambda t: spans[t.req][0])
    waits: list[float] = []
    handovers: list[float] = []
    for t, freed in zip(queued, ends, strict=False):
        first = spans[t.req][0]
        sent = t.t_attempt_send if t.t_attempt_send is not None else t.t_send
        handover = first - freed
        gen = gen_of_end[freed]  # the generation of the stream whose slot it took
        waited = freed - sent if sent is not None else gen
        if 0 <= handover <= tol and gen >= MIN_SLOT_GENERATION_S and waited >= MIN_WAIT_SHARE * gen:
            handovers.append(handover)
            if sent is not None:
                waits.append(freed - sent)
    # when the first slot freed the server was full: k streams generating, the rest waiting
    full = sum(1 for a, b in spans.values() if a < first_end <= b) >= k
    if not full or not queued or len(handovers) < QUEUED_SHARE * len(queued):
        return None
    # the waves the parallel requests' first tokens came in (a combined request beside
    # them holds its slot throughout and is said apart)
    firsts = [spans[t.req][0] for t in ok if t.group == "parallel"]
    return SlotReading(
        slots=k,
        streams=len(ok),
        queued=tuple(t.req for t in queued),
        queue_wait_s=statistics.median(waits) if waits else 0.0,
        slot_handover_s=statistics.median(handovers),
        waves=_waves(firsts, tol),
        combined_in_slot=any(t.group == "combined" for t in ok),
    )


def slot_speedup(n: int, slots: int, rate_ratio: float = 1.0) -> float:
    """The speed-up ``slots`` slots allow ``n`` equal answers against one combined reply
    of all ``n`` (×): the combined reply decodes the n answers' tokens one after another
    at the lone decode rate; the parallel side runs ⌈n / slots⌉ rounds, each stream at
    ``rate_ratio`` × the lone rate (the batched over the lone decode rate,
    :mod:`splitdesk.core.analyse.decode_rates`): n / ⌈n / slots⌉ × ``rate_ratio``.
    Prefill, the combined reply's longer context and answers of unequal length are left
    out, so it is an expectation to compare with, not a bound. Raises ``ValueError`` for
    ``n`` or ``slots`` < 1 or a ``rate_ratio`` that is not positive."""
    if n < 1 or slots < 1 or rate_ratio <= 0:
        raise ValueError("n and slots must be >= 1 and rate_ratio > 0")
    return n / math.ceil(n / slots) * rate_ratio
