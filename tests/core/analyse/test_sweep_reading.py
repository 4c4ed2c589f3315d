"""Where a sweep's curve leaves the ideal and why (core/analyse/sweep_reading.py), on rows
shaped as ``splitdesk sweep --json`` writes them and on a real llama-server sweep."""

from __future__ import annotations

import json
from typing import Any

import pytest

from paths import FIXTURES
from splitdesk.core.analyse.sweep_reading import read_sweep


def row(
    n: int,
    speedup: float | None,
    code: str | None = "batching",
    per_stream: float | None = 50.0,
    streams: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A sweep row: its median speed-up, the diagnosis code (and figures) and the parallel
    runs' per-stream decode rate while ``streams`` (default n) ran at once."""
    d: dict[str, Any] | None = {"code": code, **extra} if code else None
    return {
        "n": n,
        "speedup": speedup,
        "diagnosis": d,
        "per_stream_tok_s": per_stream,
        "streams_at_once": streams if streams is not None else n,
        "disturbed": [],
        "disturbed_all": False,
    }


def slot_rows(k: int = 4, ratio: float = 0.52) -> list[dict[str, Any]]:
    rows = [row(1, 1.0, "unclear", 100.0, 1)]
    for n in range(2, 9):
        rounds = -(-n // k)
        code = "slot-limited" if n > k else "compute-bound"
        extra = {"slots": k} if n > k else {}
        rows.append(row(n, n / rounds * ratio, code, 100.0 * ratio, min(n, k), **extra))
    return rows


def test_flat_past_k_slots_and_each_batched_stream_at_its_share() -> None:
    r = read_sweep(slot_rows())
    assert r is not None
    assert r.leaves_at == 2 and r.cause == "slots"
    assert r.evidence["slots"] == 4 and r.evidence["rate_ratio"] == pytest.approx(0.52)
    assert "flat past N = 4" in r.text
    assert "the server runs 4 sequences at once" in r.text
    assert "each batched stream at 52% of its lone rate" in r.text


def test_the_servers_configured_limit_is_named_and_alone_finds_the_slots() -> None:
    rows = slot_rows()
    limit = {"slots": 4, "names": "slots (-np)"}
    assert "(its configured slots (-np): 4)" in read_sweep(rows, limit).text  # type: ignore[union-attr]
    for r in rows:  # no N diagnosed slot-limited: the published limit still says k
        r["diagnosis"] = {"code": "compute-bound"}
    named = read_sweep(rows, limit)
    assert named is not None and named.cause == "slots" and "flat past N = 4" in named.text


def test_a_curve_that_keeps_growing_past_k_grows_slower() -> None:
    rows = slot_rows(ratio=1.0)
    rows[-1]["speedup"] = 5.2  # 8 questions beat 4 slots by more than the flat margin
    r = read_sweep(rows)
    assert r is not None and "grows slower past N = 4" in r.text


def test_following_the_ideal_is_said_with_the_last_n() -> None:
    rows = [row(n, 0.95 * n) for n in range(1, 9)]
    r = read_sweep(rows)
    assert r is not None and r.leaves_at is None and r.cause is None
    assert r.text.startswith("follows the ideal up to N = 8 (within 20% of N at every N")


def test_each_cause_is_named() -> None:
    # batched streams slowing down with no slot limit (llama.cpp -np 8 on one CPU thread)
    rates = [row(1, 1.0, "unclear", 100.0, 1)] + [
        row(n, n * 0.5, "compute-bound", 50.0) for n in range(2, 9)
    ]
    r = read_sweep(rates)
    assert r is not None and r.cause == "per-stream-rate"
    assert "each batched stream at 50% of its lone rate (N = 2)" in r.text
    one = [row(1, 1.0, "unclear", 100.0, 1)] + [row(n, 1.05, "one-at-a-time") for n in range(2, 7)]
    assert read_sweep(one).cause == "one-at-a-time"  # type: ignore[union-attr]
    limited = [row(n, float(n), "batching") for n in range(1, 4)]
    limited += [row(n, 2.0, "rate-limited") for n in range(4, 7)]
    r = read_sweep(limited)
    assert r is not None and r.cause == "rate-limited" and "from N = 4" in r.text


def test_a_row_the_machine_disturbed_is_not_read_and_the_text_says_why() -> None:
    # the 18.97x at N = 5: every run of the row disturbed (endpoint 9.46 s late)
    rows = [row(n, 0.95 * n) for n in range(1, 9)]
    rows[4].update(
        speedup=18.97,
        disturbed=["parallel run 1: the built-in endpoint ran 9.46 s behind its schedule in 1.2 s"],
        disturbed_all=True,
    )
    r = read_sweep(rows)
    assert r is not None and r.leaves_at is None
    assert r.evidence["left_out"] == [5]
    assert "not read: N = 5, parallel run 1: the built-in endpoint ran 9.46 s behind" in r.text


def test_too_few_rows_read_nothing() -> None:
    assert read_sweep([row(1, 1.0), row(2, 1.9)]) is None


def test_a_real_llama_server_sweep_with_4_slots() -> None:
    # llama-server b1-0c1e570 -np 4, N = 1…8 (tests/fixtures/llamacpp/README.md)
    doc = json.loads((FIXTURES / "llamacpp" / "sweep-np4.json").read_text("utf-8"))
    r = read_sweep(doc["rows"], doc["server_limit"])
    assert r is not None and r.cause == "slots", r
    assert r.evidence["slots"] == 4
    assert "the server runs 4 sequences at once (its configured slots (-np): 4)" in r.text
    # one CPU thread shared by the batch: each stream below its lone rate, and said so
    assert r.evidence["rate_ratio"] < 0.9
    assert f"each batched stream at {r.evidence['rate_ratio']:.0%} of its lone rate" in r.text
    assert doc["reading"]["text"] == r.text  # the document holds the same reading
