"""Where a sweep's measured speed-up leaves the ideal y = N, and why.

Read from a sweep document's rows (:mod:`splitdesk.core.bench.sweep`: per N the median
speed-up, the bench diagnosis' code and figures, the parallel runs' per-stream decode rate
and how many streams ran at once, the runs left out as disturbed) and the server's
published limit when there is one (``server_limit``, :mod:`splitdesk.core.measure.
server_limits`). ``splitdesk sweep`` prints :attr:`SweepReading.text` under its table and
the window's sweep view shows it under the plot.

* **leaves the ideal** at the first N ≥ 2 whose measured speed-up is below
  :data:`LEAVE_SHARE` × N;
* **why**, the first that holds: *slots* — some N was diagnosed ``slot-limited`` with k
  slots (or the server publishes k below the largest N): "flat past N = 4: the server runs
  4 sequences at once" when no N beyond k gains more than :data:`FLAT_GROWTH` × the
  speed-up at k, else "grows slower past N = 4"; *one at a time*; *rate limit* (HTTP 429
  from some N on); *network*; *per-stream rate* — each batched stream decodes at a share of
  its lone rate (the N = 1 row's per-stream rate, a stream alone): "each batched stream at
  52 % of its lone rate" (said beside the slots too, where it is measured);
* a row whose every run was disturbed is not read (:mod:`splitdesk.core.analyse.
  disturbance`), and the text says which were left out and why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: a measured speed-up below this share of N has left the ideal
LEAVE_SHARE = 0.8
#: past k slots the curve is flat when no N gains more than this factor over N = k
FLAT_GROWTH = 1.15
#: a batched stream below this share of its lone rate is named as a cause
RATE_SHARE = 0.8


@dataclass(frozen=True)
class SweepReading:
    """``text``: the sentence; ``leaves_at``: the first N off the ideal (``None``: it
    followed the ideal); ``cause``: ``"slots"``, ``"one-at-a-time"``, ``"rate-limited"``,
    ``"network-bound"``, ``"per-stream-rate"`` or ``None``; ``evidence``: the numbers the
    text names."""

    text: str
    leaves_at: int | None
    cause: str | None
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{"text", "leaves_at", "cause", "evidence"}`` (the sweep document's
        ``reading``)."""
        return {
            "text": self.text,
            "leaves_at": self.leaves_at,
            "cause": self.cause,
            "evidence": dict(self.evidence),
        }


def _code(row: Mapping[str, Any]) -> str | None:
    d = row.get("diagnosis")
    return d.get("code") if isinstance(d, dict) else None


def _slots(rows: Sequence[Mapping[str, Any]], limit: Mapping[str, Any] | None) -> int | None:
    seen = [
        int(d["slots"])
        for r in rows
        if isinstance(d := r.get("diagnosis"), dict)
        and d.get("code") == "slot-limited"
        and isinstance(d.get("slots"), int)
    ]
    if seen:
        return Counter(seen).most_common(1)[0][0]
    if limit and isinstance(limit.get("slots"), int):
        n_max = max(int(r["n"]) for r in rows)
        if 1 < limit["slots"] < n_max:
            return int(limit["slots"])
    return None


def _ratio(rows: Mapping[int, Mapping[str, Any]], n: int) -> float | None:
    """Batched over lone decode rate at ``n``: the row's per-stream rate over the N = 1
    row's (a stream alone)."""
    lone, row = rows.get(1), rows.get(n)
    if lone is None or row is None or lone.get("streams_at_once") != 1:
        return None
    a, b = lone.get("per_stream_tok_s"), row.get("per_stream_tok_s")
    if not a or not b or (row.get("streams_at_once") or 0) < 2:
        return None
    return float(b) / float(a)


def read_sweep(
    rows: Sequence[Mapping[str, Any]], server_limit: Mapping[str, Any] | None = None
) -> SweepReading | None:
    """The :class:`SweepReading` of a sweep document's ``rows`` (module docstring), or
    ``None`` when fewer than two N ≥ 2 have a measured speed-up."""
    left_out = [r for r in rows if r.get("disturbed_all")]
    usable = {
        int(r["n"]): r for r in rows if r.get("speedup") is not None and not r.get("disturbed_all")
    }
    ns = sorted(n for n in usable if n >= 2)
    if len(ns) < 2:
        return None
    evidence: dict[str, Any] = {}
    note = ""
    if left_out:
        evidence["left_out"] = [int(r["n"]) for r in left_out]
        note = (
            " (not read: "
            + "; ".join(
                f"N = {r['n']}, {'; '.join(r.get('disturbed') or ['disturbed'])}" for r in left_out
            )
            + ")"
        )
    leaves = next((n for n in ns if usable[n]["speedup"] < LEAVE_SHARE * n), None)
    if leaves is None:
        top = ns[-1]
        evidence.update(n=top, speedup=usable[top]["speedup"])
        return SweepReading(
            f"follows the ideal up to N = {top} (within {1 - LEAVE_SHARE:.0%} of N at every "
            f"N; {usable[top]['speedup']:.2f}× at N = {top}){note}.",
            None,
            None,
            evidence,
        )
    at = usable[leaves]["speedup"]
    evidence.update(leaves_at=leaves, speedup=at)
    head = f"leaves the ideal at N = {leaves} ({at:.2f}× against {leaves}×)"
    cause, why = _cause(usable, ns, leaves, server_limit, evidence)
    return SweepReading(f"{head}: {why}{note}.", leaves, cause, evidence)


def _cause(
    usable: Mapping[int, Mapping[str, Any]],
    ns: list[int],
    leaves: int,
    limit: Mapping[str, Any] | None,
    evidence: dict[str, Any],
) -> tuple[str | None, str]:
    rows = [usable[n] for n in ns]
    k = _slots(rows, limit)
    if k is not None:
        evidence["slots"] = k
        beyond = [usable[n]["speedup"] for n in ns if n > k]
        at_k = usable.get(k, {}).get("speedup")
        if beyond and at_k:
            flat = max(beyond) <= FLAT_GROWTH * at_k
            evidence.update(speedup_at_slots=at_k, best_beyond=max(beyond))
            why = (
                f"{'flat' if flat else 'grows slower'} past N = {k} (at most "
                f"{max(beyond):.2f}× beyond it, {at_k:.2f}× at N = {k}): the server runs "
                f"{k} sequences at once"
            )
        else:
            why = f"the server runs {k} sequences at once"
        if limit and limit.get("slots") == k:
            why += f" (its configured {limit.get('names') or 'limit'}: {k})"
        ratio = _ratio(usable, min(k, ns[-1]))
        if ratio is not None:
            evidence["rate_ratio"] = round(ratio, 3)
            why += f"; each batched stream at {ratio:.0%} of its lone rate"
        return "slots", why
    codes = [_code(usable[n]) for n in ns]
    if codes.count("one-at-a-time") * 2 > len(codes):
        return "one-at-a-time", "the server runs one request at a time"
    limited = [n for n in ns if _code(usable[n]) == "rate-limited"]
    if limited:
        evidence["rate_limited_from"] = limited[0]
        return (
            "rate-limited",
            f"from N = {limited[0]} parallel requests were refused with HTTP 429: a rate limit",
        )
    if _code(usable[leaves]) == "network-bound":
        return "network-bound", "network latency dominates the requests' time"
    ratio = _ratio(usable, leaves)
    if ratio is not None:
        evidence["rate_ratio"] = round(ratio, 3)
        if ratio < RATE_SHARE:
            return (
                "per-stream-rate",
                f"each batched stream at {ratio:.0%} of its lone rate (N = {leaves}): the "
                "server's steps slow down as the batch grows",
            )
        return None, (
            f"no single cause measured (each batched stream kept {ratio:.0%} of its lone rate)"
        )
    return None, "no single cause measured"
