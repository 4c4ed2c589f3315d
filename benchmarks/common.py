"""Shared helpers of the benchmark scripts (not a benchmark itself)."""

from __future__ import annotations

import os
import statistics
from typing import Any

import httpx


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0–100) of ``values``, linear interpolation."""
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[
        min(998, max(0, round(q * 10) - 1))
    ]


def describe(name: str, values: list[float], unit: str = "ms", scale: float = 1.0) -> str:
    """``name: n=… p50=… p99=… max=…`` for a list of values (multiplied by ``scale``)."""
    v = [x * scale for x in values]
    if not v:
        return f"{name}: no samples"
    return (
        f"{name}: n={len(v)} p50={pct(v, 50):.3f}{unit} p90={pct(v, 90):.3f}{unit} "
        f"p99={pct(v, 99):.3f}{unit} max={max(v):.3f}{unit}"
    )


async def emission_logs(
    client: httpx.AsyncClient, root: str, request_ids: list[str]
) -> list[dict[str, Any]]:
    """The built-in endpoint's emission log of each request (``/_splitdesk/trace/{id}``)."""
    out = []
    for rid in request_ids:
        response = await client.get(f"{root}/_splitdesk/trace/{rid}")
        response.raise_for_status()
        out.append(response.json())
    return out


def rss_mb() -> float:
    """Resident set size of this process now, MB (Linux /proc)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system CPU seconds a process has used so far (Linux /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
