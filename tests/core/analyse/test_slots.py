"""Slot-limited batching read from the trace: k streams at once, each further one starting
as another ends (core/analyse/slots.py and its diagnosis rule), on synthetic traces built
from the events a live run emits, and the lone vs batched decode rate named apart."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from splitdesk.core.analyse.diagnosis import (
    configured_limit_json,
    diagnose,
    diagnose_state,
    no_verdict_reason,
    with_configured_limit,
)
from splitdesk.core.analyse.slots import read_slots, slot_speedup
from splitdesk.core.run.events import (
    Group,
    HeadersReceived,
    RequestEnded,
    RequestPlanned,
    RequestSent,
    RunEnded,
    RunStarted,
    TextReceived,
    UsageReported,
)
from splitdesk.core.run.run_state import RunState


@dataclass
class Stream:
    """A request sent at ``send`` whose ``tokens`` tokens arrive ``step`` s apart from
    ``first`` on (run-origin seconds); ``tail``: more tokens ``tail_step`` apart after."""

    group: Group
    first: float
    tokens: int = 100
    step: float = 0.02
    send: float = 0.0
    phase: int = 0
    tail: int = 0
    tail_step: float = 0.02

    def times(self) -> list[float]:
        out = [self.first + j * self.step for j in range(self.tokens)]
        return out + [out[-1] + (j + 1) * self.tail_step for j in range(self.tail)]


def run(streams: list[Stream], mode: str = "one-after-another") -> RunState:
    """A finished run holding ``streams`` (a combined one asks every question)."""
    n = sum(1 for s in streams if s.group != "combined")
    state = RunState()
    state.apply(RunStarted(0.0, mode, tuple(f"q{i}" for i in range(n)), {"url": "x"}, 0, 2))
    k = 0
    for i, s in enumerate(streams):
        qs = tuple(range(n)) if s.group == "combined" else (k,)
        k += s.group != "combined"
        state.apply(RequestPlanned(0.0, i, s.group, qs, "p", s.phase))
    for i, s in enumerate(streams):
        state.apply(RequestSent(s.send, i))
        state.apply(HeadersReceived(s.send + 0.002, i, 200))
        times = s.times()
        for t in times:
            state.apply(TextReceived(t, i, "tok "))
        state.apply(UsageReported(times[-1], i, len(times)))
        state.apply(RequestEnded(times[-1], i, "done", "stop"))
    state.apply(RunEnded(max(t for s in streams for t in s.times()) + 0.01))
    return state


def staircase(n: int = 8, slots: int = 4, gen: float = 2.0, handover: float = 0.02) -> list[Stream]:
    """``n`` parallel requests sent at once on a server with ``slots`` slots: the first
    ``slots`` stream from 0.05 s, each further one starts ``handover`` after a slot frees."""
    step = gen / 99
    out = []
    for i in range(n):
        wave = i // slots
        out.append(Stream("parallel", 0.05 + wave * (gen + handover), step=step, phase=1))
    return out


def combined_first(streams: list[Stream]) -> list[Stream]:
    return [Stream("combined", 0.01, tokens=800, step=0.02), *streams]


def test_a_slot_staircase_is_slot_limited_with_k_waves_and_the_queue_wait() -> None:
    d = diagnose_state(run(combined_first(staircase())))
    assert d.code == "slot-limited", d.to_json()
    e = d.evidence
    assert e["slots"] == 4 and e["queued"] == 4 and e["requests"] == 8
    assert e["waves"] == "4+4"
    # the queued four were sent at 0 and got their slot when the first four ended at 2.05 s
    assert e["queue_wait_s"] == pytest.approx(2.05, abs=0.001)
    assert e["slot_handover_s"] == pytest.approx(0.02, abs=0.001)
    assert "at most 4 streams ran at once (first tokens in waves of 4 + 4)" in d.text
    assert "the server batches up to 4 sequences and queues the rest" in d.text
    assert "waited 2.05 s for a slot" in d.text
    # 8 questions on 4 slots: 2 rounds at the full per-stream rate: 4x from concurrency
    assert e["slot_speedup"] == pytest.approx(4.0, abs=0.05)
    assert "8 questions on 4 slots take 2 rounds: about 4.0× from concurrency expected" in d.text


def test_side_by_side_the_combined_request_holds_a_slot_3_3_2() -> None:
    # llama.cpp with 4 slots, 8 questions side by side: the combined request takes one slot
    # for the whole run, the parallel ones come in waves of 3 + 3 + 2
    par = []
    for i in range(8):
        wave = i // 3
        par.append(Stream("parallel", 0.05 + wave * 2.02, step=2.0 / 99))
    streams = [Stream("combined", 0.05, tokens=400, step=0.02), *par]
    d = diagnose_state(run(streams, mode="side-by-side"))
    assert d.code == "slot-limited", d.to_json()
    assert d.evidence["slots"] == 4 and d.evidence["waves"] == "3+3+2"
    assert "first tokens in waves of 3 + 3 + 2" in d.text
    assert "the combined request held one of the slots" in d.text
    assert no_verdict_reason(d, True) == "both ways shared the server's 4 slots"


def test_streams_together_or_staggered_without_hand_overs_are_not_slot_limited() -> None:
    together = [Stream("parallel", 0.05, phase=1) for _ in range(8)]
    assert read_slots(run(together).requests) is None
    assert diagnose_state(run(combined_first(together))).code == "batching"
    # staggered starts that do not follow ends (0.7 s after a slot would have freed)
    staggered = [Stream("parallel", 0.05 + 0.9 * i, phase=1) for i in range(5)]
    assert read_slots(run(staggered).requests) is None
    # one slot is one at a time, said by its own rule
    one = staircase(n=4, slots=1)
    assert read_slots(run(one).requests) is None
    assert diagnose_state(run(combined_first(one))).code == "one-at-a-time"


def test_answers_of_unequal_length_refill_slots_one_by_one() -> None:
    # continuous batching with 3 slots: each queued request starts as the next stream ends
    lengths = [60, 100, 80]
    streams = [Stream("parallel", 0.05, tokens=t, phase=1) for t in lengths]
    ends = sorted(0.05 + (t - 1) * 0.02 for t in lengths)
    streams += [Stream("parallel", e + 0.01, tokens=50, phase=1) for e in ends]
    reading = read_slots(run(streams).requests)
    assert reading is not None
    assert reading.slots == 3 and len(reading.queued) == 3
    assert reading.slot_handover_s == pytest.approx(0.01, abs=0.001)
    assert not reading.clean_waves  # refilled one by one: no "waves of" in the text
    d = diagnose_state(run(combined_first(streams)))
    assert d.code == "slot-limited" and "waves of" not in d.text


def test_slot_speedup_is_n_over_rounds_times_the_rate_ratio() -> None:
    assert slot_speedup(8, 4) == 4.0
    assert slot_speedup(5, 4) == 2.5
    assert slot_speedup(8, 4, 0.52) == pytest.approx(2.08)
    assert slot_speedup(3, 8) == 3.0
    with pytest.raises(ValueError, match="n and slots must be >= 1"):
        slot_speedup(0, 4)


def test_the_configured_limit_is_named_beside_what_was_measured() -> None:
    d = diagnose_state(run(combined_first(staircase())))
    named = with_configured_limit(d, 4, "llama.cpp server /props total_slots")
    assert named.text.endswith(
        "; the server is configured for 4 (llama.cpp server /props total_slots), as measured."
    )
    assert named.evidence["configured_slots"] == 4
    other = with_configured_limit(d, 8, "x /props total_slots")
    assert "configured for 8 (x /props total_slots), while at most 4 ran at once here" in (
        other.text
    )
    # only the codes that are about a limit name one; the JSON form says the same
    batching = diagnose_state(run(combined_first([Stream("parallel", 0.05, phase=1)] * 5)))
    assert with_configured_limit(batching, 4, "x") is batching
    assert configured_limit_json(d.to_json(), 4, "w")["evidence"]["configured_from"] == "w"


def test_the_lone_rate_is_a_separate_stream_alone_not_the_combined_request() -> None:
    # the combined request alone is slow (a long context: 0.04 s a token); the parallel
    # streams together run at 0.021 s a token and the longest then runs alone at 0.02: the
    # lone rate is that tail's (50 tok/s), so each batched stream is at 95 %, not 190 %
    par = [Stream("parallel", 20.01, step=0.021, phase=1) for _ in range(4)]
    par.append(Stream("parallel", 20.01, step=0.021, phase=1, tail=60, tail_step=0.02))
    streams = [Stream("combined", 0.01, tokens=500, step=0.04), *par]
    d = diagnose_state(run(streams))
    assert d.code == "batching", d.to_json()
    assert d.evidence["lone_from"] == "separate"
    assert d.evidence["lone_tok_s"] == pytest.approx(50.0, abs=0.5)
    assert d.evidence["rate_ratio"] == pytest.approx(0.952, abs=0.01)
    assert "each batched stream at 95% of its lone rate (47.6 vs 50 tok/s)" in d.text
    assert d.evidence["streams"] == 5  # the batched rate: per stream with 5 at once


def test_bench_phases_on_their_own_clocks_read_the_same() -> None:
    streams = staircase()
    comb = run([Stream("combined", 0.01, tokens=800)]).requests
    par = run([Stream(s.group, s.first, s.tokens, s.step) for s in streams]).requests
    d = diagnose([comb, par])
    assert d.code == "slot-limited" and d.evidence["slots"] == 4


def test_a_stream_the_machine_started_late_is_not_a_slot_queue() -> None:
    # 32 short answers on a batching server under load: one stream's first token came late,
    # just after the shortest other stream ended; its wait was a scheduling hiccup (a few
    # tens of ms), not a slot: no "at most 31 streams at once"
    streams = [Stream("parallel", 0.01, tokens=6 + (i % 5), step=0.004, phase=1) for i in range(31)]
    shortest_end = 0.01 + 5 * 0.004
    streams.append(Stream("parallel", shortest_end + 0.004, tokens=8, step=0.004, phase=1))
    assert read_slots(run(streams).requests) is None
    assert diagnose_state(run(combined_first(streams))).code != "slot-limited"
